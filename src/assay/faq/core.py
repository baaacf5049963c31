"""The FAQ engine: hybrid sampling policy, online Laplace updates and the PAI estimator, vectorised over models.

One call of :func:`run_faq` runs Factorized Active Querying (Wu, Nair & Candès 2026, Algorithm 1) for a
batch of ``M`` new models at once. Each model has its own Gaussian state N(u_hat, Sigma) over its latent
factor; the question factors ``V`` (N x k) and the optional item offsets ``b`` are shared and fixed.

Per round t = 1..n_b and per model (all vectorised over the M models):

1. p_j = sigmoid(u_hat . v_j + b_j), clamped to [1e-12, 1 - 1e-12] in float64; w_j = p_j (1 - p_j).
2. Oracle score s_o(j) = sqrt(w_j) (Sec. 3.3, Theorem 3.2).
3. Active-learning score (Sec. 3.4, App. A.5), only while alpha_t > 0:
   d(j) = w_j (v_j' Sigma g)^2 / (1 + w_j v_j' Sigma v_j),  g = (1/N) sum_j' w_j' v_j'.
   ``a_j = v_j' Sigma v_j`` is kept up to date by the rank-one identity that follows from eq. 4,
   a_j <- a_j - w (v_j' Sigma v_I)^2 / (1 + w a_I), so a round costs O(N k) per model, never O(N k^2).
   ``v_j' Sigma g`` is one k x k product and one N x k product per round.
4. alpha_t = max(0, 1 - t / (rho n_b)), beta_t = beta0 min(1, t / (gamma n_b)) (rho = 0 / gamma = 0 mean
   alpha_t = 0 / beta_t = beta0), h = ((1 - alpha_t) Norm(s_o) + alpha_t Norm(d))^beta_t (eq. 9),
   q_t = tau / N + (1 - tau) Norm(h) (eq. 10).
5. I_t ~ q_t WITH replacement (App. B: without replacement breaks the martingale structure).
6. phi_t = (1/N) sum_j p_j + (z_I - p_I) / (N q_t(I)) (eq. 6), with p at the pre-update state.
7. Online Laplace update (eqs. 3-5): s = Sigma v_I, Sigma <- Sigma - w s s' / (1 + w v_I' s),
   u_hat <- u_hat + (z_I - p_I) s / (1 + w v_I' s)   (= Sigma_new (z_I - p_I) v_I).

Variance. ``variance="increments"`` uses the sample variance of the martingale increments phi_t
(ddof = 1): E[(phi_t - theta)^2 | F_{t-1}] = Var(Delta_t | F_{t-1}) exactly, so
(1/n) sum_t (phi_t - theta)^2 is unbiased for the average conditional variance sigma^2 of Theorem 3.1, and
replacing theta by theta_hat costs the usual ddof = 1. ``variance="paper"`` is eq. 8 verbatim:
A - B with B = (1 / (n N^2)) sum_t (T_hat - sum_j p_j^(t-1))^2 and T_hat = (1/n) sum_s z_s / q_s. T_hat is a
pure inverse-propensity estimate of sum_j z_j, without the factor model as control variate, so its own
variance enters B: E[B] is about the true B + Var(z_I / q_I) / (n N^2), and eq. 8 is biased DOWN by the
fraction Var(z/q) / (n Var((z - p)/q)) of sigma^2. With a good factor model and small tau (q_j small where p_j
is near 0 or 1) that ratio is large, which is why eq. 8 under-covers at small budgets (the paper saw
0.940-0.945 at 2.5-10% on MMLU-Pro; the released code, run here on 1,351 questions, 0.915 at 5%). Both are
consistent (Lemma A.5), so the choice only matters at finite n_b; ``assay study faq-leaderboard`` shows it.

``variance="conservative"`` (the default) is max(increments, model-implied), see :func:`standard_errors`: on
real leaderboard answers "increments" still under-covers at small budgets (0.922 at 2.5% = 33 queries, where
the uniform sample mean itself covers 0.925), because a few rare, heavily weighted surprises dominate the
variance and are often not yet seen; the working model's variance keeps the interval from collapsing then.
Measured in ``assay study faq-leaderboard``: 0.949-0.964 coverage from 2.5% to 25%, for 12-15% of ESS.

The CI is theta_hat +- crit * se, clipped to [0, 1] (the released code's clip is inverted, a no-op).
``crit`` is the normal quantile (``quantile="normal"``, the paper) or Student t with n_b - 1 degrees of
freedom (``quantile="t"``, suggested by the paper's footnote 11 for small budgets).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from scipy import stats
from scipy.special import expit

from ..errors import AssayInputError

__all__ = ["FAQParams", "FAQRun", "run_faq", "clamp_p", "P_EPS", "VARIANCES", "standard_errors", "critical_value"]

P_EPS = 1e-12


def clamp_p(p: np.ndarray) -> np.ndarray:
    """Clamp probabilities to [1e-12, 1 - 1e-12] (float64, where 1 - 1e-12 != 1)."""
    return np.clip(p, P_EPS, 1.0 - P_EPS)


@dataclass(frozen=True)
class FAQParams:
    """Hyperparameters of the hybrid policy (eqs. 9-10) and of the interval.

    beta0 : maximum tempering exponent (1 = oracle scores as they are; 0 = uniform).
    rho : the active-learning weight alpha_t decays linearly to 0 after rho * n_b rounds (0 = never used).
    gamma : the tempering exponent rises linearly to beta0 over gamma * n_b rounds (0 = beta0 from the start).
    tau : uniform mixing, q_t(j) >= tau / N (0 < tau <= 1; 1 = uniform sampling with replacement).
    variance : "conservative" (default), "increments" or "paper" (eq. 8); see :func:`standard_errors`.
    quantile : "normal" (the paper) or "t" (Student t, n_b - 1 df).
    """

    beta0: float = 1.0
    rho: float = 0.0
    gamma: float = 0.0
    tau: float = 0.05
    variance: str = "conservative"
    quantile: str = "normal"

    def __post_init__(self):
        for name in ("beta0", "rho", "gamma"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float, np.floating, np.integer)) and np.isfinite(v) and 0 <= v <= 1):
                raise AssayInputError(f"{name} must be a number in [0, 1]; got {v!r}")
        if not (isinstance(self.tau, (int, float, np.floating, np.integer)) and 0 < self.tau <= 1):
            raise AssayInputError(f"tau must be in (0, 1] (uniform mixing keeps every q_t(j) >= tau/N); got {self.tau!r}")
        if self.variance not in VARIANCES:
            raise AssayInputError(f"variance must be one of {', '.join(VARIANCES)}; got {self.variance!r}")
        if self.quantile not in ("normal", "t"):
            raise AssayInputError(f"quantile must be 'normal' or 't'; got {self.quantile!r}")

    def to_dict(self) -> dict:
        return {"beta0": float(self.beta0), "rho": float(self.rho), "gamma": float(self.gamma),
                "tau": float(self.tau), "variance": self.variance, "quantile": self.quantile}


@dataclass
class FAQRun:
    """What :func:`run_faq` returns; arrays over the M models (and the n_b rounds where 2-D)."""

    estimate: np.ndarray  # (M,) PAI estimate theta_hat (eq. 6)
    se: np.ndarray  # (M,) standard error of theta_hat
    lo: np.ndarray  # (M,) CI lower end, clipped to [0, 1]
    hi: np.ndarray  # (M,) CI upper end, clipped to [0, 1]
    ses: dict  # every VARIANCES standard error, (M,) each, from the same draws
    plugin: np.ndarray  # (M,) final factor-model plug-in estimate mean_j p_j^(n_b) (no guarantee)
    n_distinct: np.ndarray  # (M,) distinct questions asked
    items: np.ndarray  # (M, n_b) question asked at each round (int32)
    answers: np.ndarray  # (M, n_b) observed z_{I_t}
    q_chosen: np.ndarray  # (M, n_b) q_t(I_t)
    phi: np.ndarray  # (M, n_b) increments phi_t
    u_final: np.ndarray  # (M, k) posterior mean of the model factor after n_b rounds
    var_model: np.ndarray  # (M, n_b) conditional variance of phi_t if the factor model were true
    params: FAQParams = field(default_factory=FAQParams)
    crit: float = 1.959963984540054


VARIANCES = ("increments", "conservative", "paper")


def standard_errors(phi, answers, p_chosen, q_chosen, sum_p, var_model, N) -> dict[str, np.ndarray]:
    """Standard errors of theta_hat (M,) under every variance estimator, from one run's per-round arrays.

    increments : sd(phi_t, ddof=1) / sqrt(n_b).
    conservative : sqrt(max(increments^2, model) ), where ``model`` is the average over rounds of the
        conditional variance of phi_t that the working factor model implies,
        (1/N^2) (sum_j w_j / q_t(j) - sum_j w_j), w_j = p_j (1 - p_j). When the factor model is right both
        estimate the same sigma^2 and the max costs only the noise of the empirical one; when the empirical
        increments have not yet seen a rare surprising answer (small budgets, skewed weights), the model
        term keeps the interval from collapsing.
    paper : eq. 8 (see the module docstring for its downward bias at small n_b).
    """
    n = phi.shape[1]
    inc = phi.std(axis=1, ddof=1) / np.sqrt(n)
    A = np.mean(((answers - p_chosen) / q_chosen) ** 2, axis=1) / N**2
    T_hat = np.mean(answers / q_chosen, axis=1)
    B = np.mean((T_hat[:, None] - sum_p) ** 2, axis=1) / N**2
    paper = np.sqrt(np.maximum(A - B, 0.0) / n)
    model = np.sqrt(np.maximum(var_model.mean(axis=1), 0.0) / n)
    return {"increments": inc, "conservative": np.maximum(inc, model), "paper": paper}


def critical_value(alpha: float, n: int, quantile: str) -> float:
    """z_{1-alpha/2} or the Student t quantile with n - 1 degrees of freedom."""
    if quantile == "t":
        return float(stats.t.ppf(1 - alpha / 2, max(n - 1, 1)))
    return float(stats.norm.ppf(1 - alpha / 2))


def _tempering(t: int, n_b: int, p: FAQParams) -> tuple[float, float]:
    alpha = max(0.0, 1.0 - t / (p.rho * n_b)) if p.rho > 0 else 0.0
    beta = p.beta0 * min(1.0, t / (p.gamma * n_b)) if p.gamma > 0 else p.beta0
    return alpha, beta


def _draw(q: np.ndarray, u: np.ndarray) -> np.ndarray:
    """One categorical draw per row of ``q`` (rows sum to 1) by inverse CDF with the uniforms ``u``."""
    cum = np.cumsum(q, axis=1)
    idx = (cum < (u * cum[:, -1])[:, None]).sum(axis=1)
    return np.minimum(idx, q.shape[1] - 1)


def run_faq(
    V: np.ndarray,
    prior_mean: np.ndarray,
    prior_cov: np.ndarray,
    answer: np.ndarray | Callable[[int, np.ndarray], np.ndarray],
    n_b: int,
    *,
    n_models: int | None = None,
    rng: np.random.Generator,
    params: FAQParams = FAQParams(),
    alpha: float = 0.05,
    b: np.ndarray | None = None,
    naive_al: bool = False,
    replacement: bool = True,
    on_round: Callable[[int, int], None] | None = None,
) -> FAQRun:
    """Run FAQ (Algorithm 1) for a batch of new models; inputs are assumed validated by the caller.

    Parameters
    ----------
    V : (N, k) question factors. prior_mean : (k,), prior_cov : (k, k): the Gaussian prior of a new model's
        factor (mean and covariance of the historical model factors).
    answer : (M, N) 0/1 matrix of the new models' answers (offline), or a callable ``answer(t, items)`` that
        returns the M answers (0/1) to the questions ``items`` (M,) asked at round t (live querying).
    n_b : budget (rounds). n_models : M, required with a callable ``answer``.
    rng : the generator for the draws (one uniform per model per round, in round order).
    b : optional (N,) item offsets (a factor model fitted with a per-item intercept).
    naive_al : recompute v_j' Sigma v_j from scratch each round (O(N k^2); for the speed benchmark only).
    on_round : called as ``on_round(t, n_b)`` after each round (progress).
    replacement : False runs the paper's Appendix B ablation: questions already asked get probability 0 for
        the draw (the rest renormalised) while phi_t and the variance still use q_t(I_t). It is NOT valid (no
        martingale, biased); it exists to show that it under-covers at larger budgets.
    """
    V = np.asarray(V, dtype=np.float64)
    N, k = V.shape
    offline = not callable(answer)
    if offline:
        Z = np.asarray(answer)
        M = Z.shape[0]
    else:
        if n_models is None:
            raise AssayInputError("n_models is required when answers come from a callable")
        M = int(n_models)
    p_ = params
    rows = np.arange(M)
    u = np.tile(np.asarray(prior_mean, dtype=np.float64), (M, 1))
    Sigma = np.tile(np.asarray(prior_cov, dtype=np.float64), (M, 1, 1))
    b = np.zeros(N) if b is None else np.asarray(b, dtype=np.float64)
    use_al = p_.rho > 0
    a = None
    if use_al:
        # a_j = v_j' Sigma v_j per model; all models start from the same prior, so one N-vector is enough
        a = np.tile(np.einsum("nk,kl,nl->n", V, Sigma[0], V), (M, 1))

    items = np.empty((M, n_b), dtype=np.int32)
    answers = np.empty((M, n_b))
    q_chosen = np.empty((M, n_b))
    p_chosen = np.empty((M, n_b))
    sum_p = np.empty((M, n_b))
    var_model = np.empty((M, n_b))
    if not replacement:
        if n_b > N:
            raise AssayInputError(f"without replacement the budget {n_b} cannot exceed the bank size {N}")
        asked = np.zeros((M, N), dtype=bool)
    for t in range(1, n_b + 1):
        p = clamp_p(expit(u @ V.T + b))
        w = p * (1.0 - p)
        alpha_t, beta_t = _tempering(t, n_b, p_)
        h = np.sqrt(w)
        h /= h.sum(axis=1, keepdims=True)
        if alpha_t > 0:
            if naive_al:
                a = np.einsum("nk,mkl,nl->mn", V, Sigma, V, optimize=True)
            g = np.einsum("mkl,ml->mk", Sigma, (w @ V) / N)
            c = g @ V.T
            d = w * c * c / (1.0 + w * a)
            tot = d.sum(axis=1, keepdims=True)
            ha = np.where(tot > 0, d / np.where(tot > 0, tot, 1.0), 1.0 / N)
            h = (1.0 - alpha_t) * h + alpha_t * ha
        if beta_t != 1.0:
            h = h**beta_t
            h /= h.sum(axis=1, keepdims=True)
        q = p_.tau / N + (1.0 - p_.tau) * h
        if replacement:
            I = _draw(q, rng.random(M))
        else:
            qd = np.where(asked, 0.0, q)
            I = _draw(qd / qd.sum(axis=1, keepdims=True), rng.random(M))
            asked[rows, I] = True
        if offline:
            z = Z[rows, I].astype(np.float64)
        else:
            z = np.asarray(answer(t, I), dtype=np.float64).reshape(M)
        pI = p[rows, I]
        items[:, t - 1] = I
        answers[:, t - 1] = z
        q_chosen[:, t - 1] = q[rows, I]
        p_chosen[:, t - 1] = pI
        sum_p[:, t - 1] = p.sum(axis=1)
        var_model[:, t - 1] = ((w / q).sum(axis=1) - w.sum(axis=1)) / N**2
        # online Laplace update (eqs. 3-5) by Sherman-Morrison
        vI = V[I]
        s = np.einsum("mkl,ml->mk", Sigma, vI)
        wI = pI * (1.0 - pI)
        denom = 1.0 + wI * np.einsum("mk,mk->m", vI, s)
        if use_al and not naive_al and alpha_t > 0 and t < n_b:
            vs = s @ V.T
            a -= (wI / denom)[:, None] * vs * vs
        Sigma -= (wI / denom)[:, None, None] * (s[:, :, None] * s[:, None, :])
        u += ((z - pI) / denom)[:, None] * s
        if on_round is not None:
            on_round(t, n_b)

    phi = sum_p / N + (answers - p_chosen) / (N * q_chosen)
    est = phi.mean(axis=1)
    ses = standard_errors(phi, answers, p_chosen, q_chosen, sum_p, var_model, N)
    se = ses[params.variance]
    crit = critical_value(alpha, n_b, params.quantile)
    lo = np.clip(est - crit * se, 0.0, 1.0)
    hi = np.clip(est + crit * se, 0.0, 1.0)
    plugin = clamp_p(expit(u @ V.T + b)).mean(axis=1)
    srt = np.sort(items, axis=1)
    n_distinct = 1 + (np.diff(srt, axis=1) != 0).sum(axis=1)
    return FAQRun(estimate=est, se=se, lo=lo, hi=hi, ses=ses, plugin=plugin,
                  n_distinct=n_distinct, items=items, answers=answers, q_chosen=q_chosen, phi=phi, u_final=u, var_model=var_model,
                  params=p_, crit=crit)
