"""The FAQ engine: hybrid sampling policy, online Laplace updates and the PAI estimator, vectorised over models.

:func:`estimate` is the public core: 0/1 answers and factor arrays in, an :class:`FAQEstimate` (NamedTuple:
estimate, se, ci_low, ci_high, ... per model, and the per-round trace) out; no pandas, no I/O. It runs
:func:`run_faq`, the engine below, or asks every question once when the budget covers the bank.

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
4. alpha_t = max(0, 1 - t / (rho n_b)), beta_t = beta0 min(1, t / (gamma n_b)) (rho = 0 / gamma = 0 mean
   alpha_t = 0 / beta_t = beta0), h = ((1 - alpha_t) Norm(s_o) + alpha_t Norm(d))^beta_t (eq. 9),
   q_t = tau / |R| + (1 - tau) Norm(h) on the questions R that may be drawn (eq. 10 with R = the bank).
5. I_t ~ q_t.
6. The increment phi_t (eq. 6, or its without-replacement form below), with p at the pre-update state.
7. Online Laplace update (eqs. 3-5): s = Sigma v_I, Sigma <- Sigma - w s s' / (1 + w v_I' s),
   u_hat <- u_hat + (z_I - p_I) s / (1 + w v_I' s)   (= Sigma_new (z_I - p_I) v_I).

Designs
-------
``design="wor"`` (the default; assay's extension of PAI to sampling WITHOUT replacement). R_{t-1} is the set of
questions not yet asked; I_t is drawn from q_t restricted to R_{t-1} and

    phi_t = (1/N) [ sum_{s<t} z_{I_s} + sum_{j in R_{t-1}} p_j + (z_{I_t} - p_{I_t}) / q_t(I_t) ].

Given the past, E[phi_t] = (1/N) [sum_{asked} z + sum_{R_{t-1}} p + sum_{R_{t-1}} (z - p)] = theta exactly, so
phi_t - theta are martingale differences, as in the paper's Proposition A.4, and Theorem 3.1's martingale CLT
applies unchanged. Unlike the paper's Appendix B ablation (which draws from the restriction but keeps the
full-bank formula and is biased), every question is asked at most once, a budget of N gives the exact accuracy,
and the estimator gets the finite-population correction: Var(phi_t | past) shrinks like (|R_{t-1}| / N)^2,
so the increments are averaged with the predictable weights c_t = (N / |R_{t-1}|)^2 (theta_hat = sum c phi /
sum c), which for uniform sampling gives exactly the simple-random-sample variance (1 - n/N) sigma^2 / n.
``design="wr"`` is the paper's Algorithm 1 (with replacement, c_t = 1). ``design="naive-wor"`` is the
paper's Appendix B ablation (restricted draws, full-bank formula): NOT valid, kept to show that it under-covers.

Variance (theta_hat = sum_t W_t phi_t, W = c / sum c)
-----------------------------------------------------
* ``increments``: sum_t W_t^2 (phi_t - theta_hat)^2 / (1 - 2 sum W^3 / sum W^2 + sum W^2). E[(phi_t - theta)^2 |
  past] = Var(Delta_t | past) exactly, and the divisor makes the plug-in of theta_hat unbiased when the
  conditional variances are equal (it is (n - 1)/n for equal weights).
* ``model``: sum_t W_t^2 v_t with v_t = (1/N^2) (sum_{R} w_j / q_t(j) - sum_{R} w_j), the conditional variance of
  phi_t if the working factor model were true.
* ``conservative`` (default): max(increments, model). On real leaderboard answers the increments alone
  under-cover at small budgets: a few rare, heavily weighted surprises dominate the variance and are often
  not yet seen; the working model's variance keeps the interval from collapsing then.
* ``paper``: eq. 8 verbatim (``design="wr"`` only): A - B with B = (1 / (n N^2)) sum_t (T_hat - sum_j
  p_j^(t-1))^2 and T_hat = (1/n) sum_s z_s / q_s. T_hat is a pure inverse-propensity estimate of sum_j z_j
  without the control variate, so its own variance enters B and eq. 8 is biased down at finite n_b (the paper
  saw 0.940-0.945 coverage at 2.5-10% on MMLU-Pro; the released code on 1,351 questions 0.915 at 5%).

The CI is theta_hat +- crit * se, clipped to [0, 1]. ``crit`` is Student t with n_eff - 1 degrees of freedom,
n_eff = 1 / sum W^2 (``quantile="t"``, after the paper's footnote 11) or the normal quantile
(``quantile="normal"``, the paper). The floor of the ``conservative`` variance makes the Student t interval
over-cover (96-98% where 95% was promised, on leaderboard family splits), and the pure ``increments`` variance
under-covers at small budgets (0.941 at 33 questions of MMLU-Pro math, 0.934 at 12 of tinyBenchmarks, 0.779 at 6
of BBH: the ``faq:increments|t`` rows of docs/faq.md), because the rare heavily weighted surprises that dominate
it are usually not seen yet. So :func:`assay.faq.evaluate` and :func:`assay.faq.protocol` give models that did
not fall back se = max(se_increments, lambda se_model), the working model's floor scaled by lambda learnt on
held-out families of the history (``calibrated_floor``; :mod:`assay.faq.calibrate` says why that holds and why
the floor, not the critical value, is what is learnt); the increments' part is never shrunk.

Falling back to uniform sampling
--------------------------------
Each answer also feeds a sequential test of H0: "this model's answers follow the working factor model", i.e.
z_t ~ Bernoulli(p_t) given the past, p_t the working model's predictive probability before the answer (the
logit u_hat'v + b moderated by its posterior variance v' Sigma v, MacKay's probit approximation: the plug-in
sigmoid(u_hat'v + b) is too confident early on and rejects models drawn from the working model itself more often
than the level; moderated, 1.9% at a 5% level in ``tests/test_faq_calibrate.py``). Against the tempered
alternatives sigmoid(logit(p_t) / kappa), kappa in ``FALLBACK_KAPPAS`` (a working model kappa times too
confident about this model), the likelihood ratios are nonnegative martingales under H0, so is their mean E_t,
and by Ville's inequality P(sup_t E_t >= 1 / level) <= level: a model that follows the working model is sent to
uniform sampling with probability at most ``params.fallback``, whenever the test is looked at. Once E_t crosses
1 / level, the model's remaining rounds draw uniformly from the questions not yet asked and use a constant
predictor (its smoothed mean so far; with uniform q a constant cancels from phi_t). The switch is decided on the
past only, so q_t stays predictable and the increments remain martingale differences: the estimate stays
unbiased and the interval keeps Theorem 3.1. On the 539 7B leaderboard models (a size class absent from an 8B
history) 14% of the runs at 33 questions and 42% at 337 were sent to uniform sampling; of held-out 8B families'
models 0.6-1.4% (the ``fallback_rate`` column of ``assay study faq-leaderboard``, docs/faq.md).


Anytime-valid interval
----------------------
The same increments also give a confidence sequence, valid simultaneously at every round (so a run may stop
as soon as it is narrow enough, :func:`run_faq` ``until_width``). With S_t = sum_{s<=t} c_s (phi_s - theta)
and the variance process V_t (the ``conservative`` choice above, on the unnormalised scale), the two-sided
normal-mixture boundary of Robbins (as an asymptotic confidence sequence: Waudby-Smith, Arbour, Sinha,
Kennedy & Ramdas 2024, "Time-uniform central limit theory and asymptotic confidence sequences", Thm 2.2)

    |S_t| <= sqrt( (V_t + 1/rho^2) (log(1 + rho^2 V_t) + 2 log(1/alpha)) )

holds for all t with probability about 1 - alpha; dividing by sum c gives theta_hat_t +- radius_t, and the
running intersection over t >= ``min_queries`` (default 20) is reported. The empirical part of V_t carries the
factor t / (t - 1) (the plug-in of theta_hat_t). ``rho`` only decides where the boundary is tightest (here: at the
round the working model expects to reach the target width, or at n_b), never the validity.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, NamedTuple

import numpy as np
from scipy import stats
from scipy.special import expit, logit, logsumexp

from ..errors import AssayInputError

__all__ = ["estimate", "FAQEstimate", "uniform_gain", "check_stopping", "FAQParams", "FAQRun", "run_faq", "clamp_p", "P_EPS", "VARIANCES", "DESIGNS", "standard_errors",
           "critical_value", "interval", "cs_rho", "cs_radius"]

P_EPS = 1e-12
VARIANCES = ("conservative", "increments", "model", "paper")
DESIGNS = ("wor", "wr", "naive-wor")
#: the tempered alternatives of the fallback test: the answers follow sigmoid(logit(p) / kappa), a working model
#: that is kappa times too confident about this model
FALLBACK_KAPPAS = (1.5, 2.0, 3.0)


def clamp_p(p: np.ndarray) -> np.ndarray:
    """Clamp probabilities to [1e-12, 1 - 1e-12] (float64, where 1 - 1e-12 != 1)."""
    return np.clip(p, P_EPS, 1.0 - P_EPS)


def _is_num(v) -> bool:
    return isinstance(v, (int, float, np.floating, np.integer)) and not isinstance(v, bool) and bool(np.isfinite(v))


@dataclass(frozen=True)
class FAQParams:
    """Hyperparameters of the hybrid policy (eqs. 9-10), the design and the interval.

    beta0 : maximum tempering exponent (1 = oracle scores as they are; 0 = uniform).
    rho : the active-learning weight alpha_t decays linearly to 0 after rho * n_b rounds (0 = never used).
    gamma : the tempering exponent rises linearly to beta0 over gamma * n_b rounds (0 = beta0 from the start).
    tau : uniform mixing, q_t(j) >= tau / |R| (0 < tau <= 1; 1 = uniform sampling). Default 0.5: validated
        on families of models absent from the history (``assay study faq-leaderboard``), where a smaller tau
        buys a little efficiency on familiar models and costs coverage on unfamiliar ones.
    variance : "conservative" (default), "increments", "model" or "paper" (eq. 8, design "wr" only).
    quantile : "t" (default; Student t, n_eff - 1 df) or "normal" (the paper).
    design : "wor" (default: without replacement, valid, see the module docstring), "wr" (the paper's
        Algorithm 1) or "naive-wor" (the paper's Appendix B ablation; not valid).
    fallback : level of the test that a model's answers follow the working factor model (module docstring,
        "Falling back to uniform sampling"); a model the test rejects spends the rest of its budget on
        uniform sampling. 0 turns the test off. Default 0.05: a model whose answers do follow the working
        model is sent to uniform sampling with probability at most 5%.
    """

    beta0: float = 1.0
    rho: float = 0.0
    gamma: float = 0.0
    tau: float = 0.5
    variance: str = "conservative"
    quantile: str = "t"
    design: str = "wor"
    fallback: float = 0.05

    def __post_init__(self):
        for name in ("beta0", "rho", "gamma"):
            v = getattr(self, name)
            if not (_is_num(v) and 0 <= v <= 1):
                raise AssayInputError(f"{name} must be a number in [0, 1]; got {v!r}")
        if not (_is_num(self.tau) and 0 < self.tau <= 1):
            raise AssayInputError(f"tau must be in (0, 1] (uniform mixing keeps every q_t(j) >= tau/N); got {self.tau!r}")
        if self.variance not in VARIANCES:
            raise AssayInputError(f"variance must be one of {', '.join(VARIANCES)}; got {self.variance!r}")
        if self.quantile not in ("normal", "t"):
            raise AssayInputError(f"quantile must be 'normal' or 't'; got {self.quantile!r}")
        if self.design not in DESIGNS:
            raise AssayInputError(f"design must be one of {', '.join(DESIGNS)}; got {self.design!r}")
        if not (_is_num(self.fallback) and 0 <= self.fallback < 1):
            raise AssayInputError(f"fallback must be a test level in [0, 1) (0 = never fall back to uniform sampling); "
                                  f"got {self.fallback!r}")
        if self.variance == "paper" and self.design != "wr":
            raise AssayInputError("variance 'paper' (eq. 8) is defined for design 'wr' (sampling with replacement)")

    def to_dict(self) -> dict:
        return {"beta0": float(self.beta0), "rho": float(self.rho), "gamma": float(self.gamma),
                "tau": float(self.tau), "variance": self.variance, "quantile": self.quantile, "design": self.design,
                "fallback": float(self.fallback)}


@dataclass
class FAQRun:
    """What :func:`run_faq` returns; arrays over the M models (and the n_b rounds where 2-D).

    Rounds after a model stopped (``until_width``) hold NaN (item -1) and are not used.
    """

    estimate: np.ndarray  # (M,) PAI estimate theta_hat
    se: np.ndarray  # (M,) standard error of theta_hat (params.variance)
    lo: np.ndarray  # (M,) CI lower end, clipped to [0, 1]
    hi: np.ndarray  # (M,) CI upper end, clipped to [0, 1]
    ses: dict  # every available VARIANCES standard error, (M,) each, from the same draws
    plugin: np.ndarray  # (M,) final factor-model plug-in estimate (no guarantee)
    n_distinct: np.ndarray  # (M,) distinct questions asked
    items: np.ndarray  # (M, n_b) question asked at each round (int32; -1 after stopping)
    answers: np.ndarray  # (M, n_b) observed z_{I_t}
    q_chosen: np.ndarray  # (M, n_b) q_t(I_t)
    phi: np.ndarray  # (M, n_b) increments phi_t
    u_final: np.ndarray  # (M, k) posterior mean of the model factor after the last round
    var_model: np.ndarray  # (M, n_b) conditional variance of phi_t if the factor model were true
    p_chosen: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))  # (M, n_b) p_t(I_t) before the answer
    fell_back: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))  # (M,) round from which the model
    # was sampled uniformly (the fallback test rejected after the round before); 0 = never
    fallback_log_e: np.ndarray = field(default_factory=lambda: np.zeros(0))  # (M,) log e-value of the test at the end
    weights: np.ndarray = field(default_factory=lambda: np.ones(0))  # (n_b,) c_t
    n_used: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))  # (M,) rounds used
    cs_lo: np.ndarray = field(default_factory=lambda: np.zeros(0))  # (M,) anytime-valid interval at the end
    cs_hi: np.ndarray = field(default_factory=lambda: np.zeros(0))
    stopped: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))  # (M,) reached until_width
    params: FAQParams = field(default_factory=FAQParams)
    crit: np.ndarray | float = 1.959963984540054


def _weighted(phi: np.ndarray, c: np.ndarray, used: np.ndarray):
    """Normalised weights W (M, n) (0 where unused), theta_hat and the plug-in correction divisor."""
    cw = np.where(used, c[None, :], 0.0)
    W = cw / cw.sum(axis=1, keepdims=True)
    est = np.einsum("mt,mt->m", W, np.where(used, phi, 0.0))
    s2 = (W**2).sum(axis=1)
    s3 = (W**3).sum(axis=1)
    corr = 1.0 - 2.0 * s3 / s2 + s2
    return W, est, s2, np.maximum(corr, 1e-12)


def standard_errors(phi, answers, p_chosen, q_chosen, sum_p, var_model, N, *, weights=None, used=None,
                    design: str = "wr") -> dict[str, np.ndarray]:
    """Standard errors of theta_hat (M,) under every variance estimator (module docstring), from one run's arrays.

    ``weights`` (n,) are the c_t (default 1), ``used`` (M, n) marks the rounds each model used (default all).
    """
    M, n = phi.shape
    c = np.ones(n) if weights is None else np.asarray(weights, dtype=float)
    used = np.ones((M, n), dtype=bool) if used is None else used
    W, est, s2, corr = _weighted(phi, c, used)
    dev = np.where(used, phi - est[:, None], 0.0)
    inc = np.sqrt((W**2 * dev**2).sum(axis=1) / corr)
    model = np.sqrt(np.maximum((W**2 * np.where(used, var_model, 0.0)).sum(axis=1), 0.0))
    out = {"increments": inc, "model": model, "conservative": np.maximum(inc, model)}
    if design == "wr" and used.all():
        A = np.mean(((answers - p_chosen) / q_chosen) ** 2, axis=1) / N**2
        T_hat = np.mean(answers / q_chosen, axis=1)
        B = np.mean((T_hat[:, None] - sum_p) ** 2, axis=1) / N**2
        out["paper"] = np.sqrt(np.maximum(A - B, 0.0) / n)
    return out


def critical_value(alpha: float, n, quantile: str):
    """z_{1-alpha/2}, or the Student t quantile with n - 1 degrees of freedom (``n`` may be an array)."""
    if quantile == "t":
        df = np.maximum(np.asarray(n, dtype=float) - 1.0, 1.0)
        out = stats.t.ppf(1 - alpha / 2, df)
        return float(out) if np.ndim(out) == 0 else out
    return float(stats.norm.ppf(1 - alpha / 2))


def interval(run: "FAQRun", alpha: float, variance: str | None = None, quantile: str | None = None):
    """(lo, hi) of the fixed-budget interval of a finished run with another variance estimator / quantile
    (same draws), clipped to [0, 1]."""
    variance = variance or run.params.variance
    quantile = quantile or run.params.quantile
    if variance not in run.ses:
        raise AssayInputError(f"variance {variance!r} is not available for design {run.params.design!r}")
    n = run.phi.shape[1]
    used = np.arange(n)[None, :] < run.n_used[:, None]
    cw = np.where(used, run.weights[None, :], 0.0)
    s2 = ((cw / cw.sum(axis=1, keepdims=True)) ** 2).sum(axis=1)
    crit = critical_value(alpha, 1.0 / s2, quantile)
    se = run.ses[variance]
    return np.clip(run.estimate - crit * se, 0.0, 1.0), np.clip(run.estimate + crit * se, 0.0, 1.0)


def cs_rho(alpha: float, v_target: float) -> float:
    """Mixing scale rho of the normal-mixture boundary, tightest where the variance process equals ``v_target``
    (Waudby-Smith et al. 2024, Sec. 2: rho^2 = (2 log(1/alpha) + log(1 + 2 log(1/alpha))) / V*)."""
    a = 2.0 * np.log(1.0 / alpha)
    return float(np.sqrt((a + np.log1p(a)) / max(v_target, 1e-300)))


def cs_radius(V, rho: float, alpha: float, sum_c):
    """Half-width of the two-sided normal-mixture confidence sequence for theta (module docstring)."""
    V = np.maximum(np.asarray(V, dtype=float), 0.0)
    r2 = (V + 1.0 / rho**2) * (np.log1p(rho**2 * V) + 2.0 * np.log(1.0 / alpha))
    return np.sqrt(r2) / sum_c


def _tempering(t: int, n_b: int, p: FAQParams) -> tuple[float, float]:
    alpha = max(0.0, 1.0 - t / (p.rho * n_b)) if p.rho > 0 else 0.0
    beta = p.beta0 * min(1.0, t / (p.gamma * n_b)) if p.gamma > 0 else p.beta0
    return alpha, beta


def _draw(q: np.ndarray, u: np.ndarray) -> np.ndarray:
    """One categorical draw per row of ``q`` (rows sum to 1; zeros are never drawn) by inverse CDF."""
    cum = np.cumsum(q, axis=1)
    # the count of cumulative sums below u * total: cum is non-decreasing (q >= 0), so that is the first index at
    # or above it (argmax of a boolean stops at the first True, half the time of counting every entry)
    above = cum >= (u * cum[:, -1])[:, None]
    idx = np.argmax(above, axis=1)
    # no cumulative sum at or above it (not possible for u < 1): the last column, as the capped count of N gave
    idx[~above[:, -1]] = q.shape[1] - 1
    # guard against rounding landing on a zero-probability column at the very end of the row
    bad = q[np.arange(q.shape[0]), idx] <= 0
    if bad.any():
        last = q.shape[1] - 1 - np.argmax(q[bad, ::-1] > 0, axis=1)
        idx[bad] = last
    return idx


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
    until_width: float | None = None,
    min_queries: int = 20,
    on_round: Callable[[int, int], None] | None = None,
    calibrated_crit: float | None = None,
    calibrated_floor: float | None = None,
    on_width: Callable[[int, float], None] | None = None,
) -> FAQRun:
    """Run FAQ (Algorithm 1, or its without-replacement form) for a batch of new models; inputs validated by the caller.

    Parameters
    ----------
    V : (N, k) question factors. prior_mean : (k,), prior_cov : (k, k): the Gaussian prior of a new model's
        factor (mean and covariance of the historical model factors).
    answer : (M, N) 0/1 matrix of the new models' answers (offline), or a callable ``answer(t, items)`` that
        returns the M answers (0/1) to the questions ``items`` (M,) asked at round t (live querying). With
        ``until_width``, models that have stopped are asked nothing: their entry of ``items`` is -1 and their
        answer is ignored.
    n_b : budget (rounds; at most N for the without-replacement designs). n_models : M, with a callable ``answer``.
    rng : the generator for the draws (one uniform per model per round, in round order).
    b : optional (N,) item offsets (a factor model fitted with a per-item intercept).
    naive_al : recompute v_j' Sigma v_j from scratch each round (O(N k^2); for the speed benchmark only).
    until_width : stop a model as soon as its anytime-valid interval (module docstring) is at most this wide,
        after at least ``min_queries`` rounds; then ``lo``/``hi`` ARE that interval. Without it, ``lo``/``hi``
        are the fixed-budget interval and ``cs_lo``/``cs_hi`` the anytime-valid one (tuned to n_b).
    min_queries : the anytime-valid interval is the running intersection of the boundary's intervals from this
        round on, and a run may stop only from here (default 20). The boundary is asymptotic: its first few
        intervals rest on a handful of answers, and intersecting from round 1 let those early misses through
        (time-uniform coverage 0.92 at 33 queries on a model family absent from the history, 0.95-0.97 from
        round 20 on, at every horizon up to 600 queries).
    on_round : called as ``on_round(t, n_b)`` after each round (progress).
    calibrated_crit : the critical value of the fixed-budget interval for models that did not fall back, learnt
        on held-out families of the history (:mod:`assay.faq.calibrate`); None = ``params.quantile``.
    calibrated_floor : for ``variance="conservative"``, the multiplier lambda of the working model's standard
        error learnt on held-out families, for models that did not fall back: se = max(se_increments,
        lambda se_model) with the ``params.quantile`` critical value (:mod:`assay.faq.calibrate`).
    on_width : called as ``on_width(t, width)`` after each round from ``min_queries`` on, with the width of the
        widest current anytime-valid interval (progress displays: it is valid whenever it is read).
    """
    V = np.asarray(V, dtype=np.float64)
    N, k = V.shape
    p_ = params
    design = p_.design
    offline = not callable(answer)
    if offline:
        Z = np.asarray(answer)
        M = Z.shape[0]
    else:
        if n_models is None:
            raise AssayInputError("n_models is required when answers come from a callable")
        M = int(n_models)
    if design != "wr" and n_b > N:
        raise AssayInputError(f"without replacement the budget {n_b} cannot exceed the bank size {N}")
    rows = np.arange(M)
    u = np.tile(np.asarray(prior_mean, dtype=np.float64), (M, 1))
    Sigma = np.tile(np.asarray(prior_cov, dtype=np.float64), (M, 1, 1))
    b = np.zeros(N) if b is None else np.asarray(b, dtype=np.float64)
    use_al = p_.rho > 0
    a = None
    if use_al:
        # a_j = v_j' Sigma v_j per model; all models start from the same prior, so one N-vector is enough
        a = np.tile(np.einsum("nk,kl,nl->n", V, Sigma[0], V), (M, 1))

    items = np.full((M, n_b), -1, dtype=np.int32)
    answers = np.full((M, n_b), np.nan)
    q_chosen = np.full((M, n_b), np.nan)
    p_chosen = np.full((M, n_b), np.nan)
    sum_p = np.full((M, n_b), np.nan)
    var_model = np.full((M, n_b), np.nan)
    phi = np.full((M, n_b), np.nan)
    c = np.ones(n_b)
    if design != "wr":
        asked = np.zeros((M, N), dtype=bool)
    s_obs = np.zeros(M)
    active = np.ones(M, dtype=bool)
    n_used = np.zeros(M, dtype=int)
    stopped = np.zeros(M, dtype=bool)
    # running sums for the anytime-valid interval
    sc = np.zeros(M)
    scphi = np.zeros(M)
    sc2 = np.zeros(M)
    sc2phi = np.zeros(M)
    sc2phi2 = np.zeros(M)
    sc2v = np.zeros(M)
    cs_lo_run = np.zeros(M)
    cs_hi_run = np.ones(M)
    rho_cs = None
    # the fallback test: log likelihood ratios of the tempered alternatives (one column per kappa)
    use_fb = p_.fallback > 0
    log_lr = np.zeros((M, len(FALLBACK_KAPPAS)))
    fell_back = np.zeros(M, dtype=int)
    uniform = np.zeros(M, dtype=bool)

    for t in range(1, n_b + 1):
        # every M x N step below is done in place where it can be, with the same floating-point operations in the
        # same order as the whole-array expressions they replace (the draws and every number are unchanged)
        x = u @ V.T
        x += b
        p_fm = np.clip(expit(x, out=x), P_EPS, 1.0 - P_EPS, out=x)
        p = p_fm
        if uniform.any():
            # a model that fell back: a constant predictor (its smoothed mean so far) and, below, uniform q
            c_run = (s_obs + 0.5) / (t - 1 + 1.0)
            p = np.where(uniform[:, None], clamp_p(c_run)[:, None], p_fm)
        w = np.subtract(1.0, p)
        w *= p
        alpha_t, beta_t = _tempering(t, n_b, p_)
        avail = ~asked if design == "wor" else None
        wa = w if avail is None else np.where(avail, w, 0.0)  # w on the questions still available
        h = np.sqrt(wa)
        # normalised per row; a row that sums to 0 is all zeros (h >= 0) and stays so
        tot_h = h.sum(axis=1, keepdims=True)
        h /= np.where(tot_h > 0, tot_h, 1.0)
        if alpha_t > 0:
            if naive_al:
                a = np.einsum("nk,mkl,nl->mn", V, Sigma, V, optimize=True)
            g = np.einsum("mkl,ml->mk", Sigma, (w @ V) / N)
            cc = g @ V.T
            d = w * cc * cc / (1.0 + w * a)
            if avail is not None:
                d = np.where(avail, d, 0.0)
            tot = d.sum(axis=1, keepdims=True)
            d /= np.where(tot > 0, tot, 1.0)  # d >= 0: a row summing to 0 is all zeros
            h = (1.0 - alpha_t) * h + alpha_t * d
        if beta_t != 1.0:
            h = h**beta_t
            if avail is not None:
                h = np.where(avail, h, 0.0)
            tot_h = h.sum(axis=1, keepdims=True)
            h /= np.where(tot_h > 0, tot_h, 1.0)
        if design == "wor":
            n_r = N - (t - 1)
            q = h * (1.0 - p_.tau)
            q += p_.tau / n_r
            q *= avail  # 0 off R (q > 0 is finite: times 1 or 0 is exact)
            # a row whose h vanished on R (all w = 0 there) falls back to uniform on R
            q /= q.sum(axis=1, keepdims=True)
            c[t - 1] = (N / n_r) ** 2
        else:
            q = p_.tau / N + (1.0 - p_.tau) * h
        if uniform.any():
            q[uniform] = np.where(avail[uniform], 1.0 / (N - (t - 1)), 0.0) if design == "wor" else 1.0 / N
        if design == "naive-wor":
            qd = np.where(asked, 0.0, q)
            I = _draw(qd / qd.sum(axis=1, keepdims=True), rng.random(M))
        else:
            I = _draw(q, rng.random(M))
        I_ask = np.where(active, I, -1)
        if offline:
            z = Z[rows, I].astype(np.float64)
        else:
            z = np.asarray(answer(t, I_ask.copy()), dtype=np.float64).reshape(M)
        pI = p[rows, I]
        qI = q[rows, I]
        if design == "wor":
            A_t = s_obs + np.where(avail, p, 0.0).sum(axis=1)
            wq = np.zeros_like(w)
            np.divide(wa, q, out=wq, where=avail)
            var_t = (wq.sum(axis=1) - wa.sum(axis=1)) / N**2
        else:
            A_t = p.sum(axis=1)
            var_t = ((w / q).sum(axis=1) - w.sum(axis=1)) / N**2
        phi_t = (A_t + (z - pI) / qI) / N
        act = active
        items[act, t - 1] = I[act]
        answers[act, t - 1] = z[act]
        q_chosen[act, t - 1] = qI[act]
        p_chosen[act, t - 1] = pI[act]
        sum_p[act, t - 1] = p.sum(axis=1)[act]
        var_model[act, t - 1] = var_t[act]
        phi[act, t - 1] = phi_t[act]
        n_used[act] = t
        if design != "wr":
            asked[rows[act], I[act]] = True
        s_obs += np.where(act, z, 0.0)
        # the fallback test (module docstring): update, then send the models it rejects to uniform sampling
        pF = p_fm[rows, I]
        if use_fb:
            test = act & ~uniform
            # the working model's predictive probability: sigmoid(u_hat'v + b) moderated by the posterior variance
            # s2 = v' Sigma v of the logit (MacKay's probit approximation), not the plug-in, which is too confident
            s2 = np.einsum("mk,mkl,ml->m", V[I], Sigma, V[I])
            lp = logit(pF) / np.sqrt(1.0 + np.pi * s2 / 8.0)
            p0 = clamp_p(expit(lp))
            for i, kappa in enumerate(FALLBACK_KAPPAS):
                pa = clamp_p(expit(lp / kappa))
                log_lr[:, i] += np.where(test, np.where(z > 0.5, np.log(pa / p0), np.log((1.0 - pa) / (1.0 - p0))), 0.0)
            # rejects where log(mean(exp(log_lr))) >= log(1 / level); that mean is at most the row's maximum, so
            # only rows whose maximum reaches the threshold (less a margin for rounding) need the log-sum-exp
            bound = np.log(1.0 / p_.fallback)
            reject = test & (log_lr.max(axis=1) >= bound - 1e-9 * (1.0 + abs(bound)))
            if reject.any():
                reject[reject] = logsumexp(log_lr[reject], axis=1) - np.log(len(FALLBACK_KAPPAS)) >= bound
            if reject.any() and t < n_b:
                uniform |= reject
                fell_back[reject] = t + 1
        # online Laplace update (eqs. 3-5) by Sherman-Morrison, active models only (on the factor model's own p)
        vI = V[I]
        s = np.einsum("mkl,ml->mk", Sigma, vI)
        pI = pF
        wI = pI * (1.0 - pI) * act
        denom = 1.0 + wI * np.einsum("mk,mk->m", vI, s)
        if use_al and not naive_al and alpha_t > 0 and t < n_b:
            vs = s @ V.T
            a -= (wI / denom)[:, None] * vs * vs
        Sigma -= (wI / denom)[:, None, None] * (s[:, :, None] * s[:, None, :])
        u += (act * (z - pI) / denom)[:, None] * s

        # anytime-valid interval (running sums; models that stopped keep their last interval)
        if rho_cs is None:
            v0 = float(np.mean(var_t))
            if until_width is not None:
                t_star = v0 * (2.0 * 2.5 / until_width) ** 2  # where the boundary should be tightest
                t_star = float(np.clip(t_star, min_queries, n_b))
            else:
                t_star = float(n_b)
            rho_cs = cs_rho(alpha, max(t_star * v0, 1e-12))
        ct = c[t - 1]
        sc += act * ct
        scphi += act * ct * phi_t
        sc2 += act * ct**2
        sc2phi += act * ct**2 * phi_t
        sc2phi2 += act * ct**2 * phi_t**2
        sc2v += act * ct**2 * var_t
        est_t = scphi / np.maximum(sc, 1e-300)
        v_emp = np.maximum(sc2phi2 - 2 * est_t * sc2phi + est_t**2 * sc2, 0.0)
        rad = cs_radius(np.maximum(v_emp * (t / max(t - 1, 1)), sc2v), rho_cs, alpha, np.maximum(sc, 1e-300))
        if t >= min(min_queries, n_b):
            cs_lo_run = np.where(act, np.maximum(cs_lo_run, est_t - rad), cs_lo_run)
            cs_hi_run = np.where(act, np.minimum(cs_hi_run, est_t + rad), cs_hi_run)
        if until_width is not None and t >= min_queries:
            done_now = act & ((np.minimum(cs_hi_run, 1.0) - np.maximum(cs_lo_run, 0.0)) <= until_width)
            stopped |= done_now
            active = active & ~done_now
        if on_round is not None:
            on_round(t, n_b)
        if on_width is not None and t >= min(min_queries, n_b):
            on_width(t, float(np.max(np.minimum(cs_hi_run, 1.0) - np.maximum(cs_lo_run, 0.0))))
        if not active.any():
            break

    used = np.arange(n_b)[None, :] < n_used[:, None]
    ses = standard_errors(np.where(used, phi, 0.0), np.where(used, answers, 0.0), np.where(used, p_chosen, 0.5),
                          np.where(used, q_chosen, 1.0), np.where(used, sum_p, 0.0), np.where(used, var_model, 0.0),
                          N, weights=c, used=used, design=design)
    W, est, s2, _ = _weighted(np.where(used, phi, 0.0), c, used)
    se = ses[params.variance]
    n_eff = 1.0 / s2
    crit = critical_value(alpha, n_eff, params.quantile)
    if calibrated_floor is not None and np.isfinite(calibrated_floor) and params.variance == "conservative":
        # the working model's part of the standard error shrunk (or grown) by what held-out families of the
        # history say it should be; the model-free part (the increments) is never shrunk
        se = np.where(fell_back > 0, se, np.maximum(ses["increments"], float(calibrated_floor) * ses["model"]))
    if calibrated_crit is not None and np.isfinite(calibrated_crit):
        # a critical value learnt on held-out families of the history (assay.faq.calibrate, variance "increments" or
        # "model"; the conservative rule learns its floor instead, above); a model that fell
        # back to uniform sampling is not like them and keeps the quantile
        crit = np.where(fell_back > 0, crit, float(calibrated_crit))
    lo = np.clip(est - crit * se, 0.0, 1.0)
    hi = np.clip(est + crit * se, 0.0, 1.0)
    cs_lo = np.clip(cs_lo_run, 0.0, 1.0)
    cs_hi = np.clip(cs_hi_run, 0.0, 1.0)
    if until_width is not None:
        lo, hi = cs_lo, cs_hi
    # a model that asked every question knows its accuracy exactly
    if design == "wor":
        full = n_used >= N
        if full.any():
            exact = s_obs[full] / N
            est[full] = exact
            lo[full] = hi[full] = cs_lo[full] = cs_hi[full] = exact
            for key in ses:
                ses[key][full] = 0.0
            se = np.where(full, 0.0, se)
    plugin = clamp_p(expit(u @ V.T + b)).mean(axis=1)
    srt = np.sort(items, axis=1)  # -1 (unused rounds) sort first
    first = srt[:, :1] >= 0
    n_distinct = first[:, 0].astype(int) + ((srt[:, 1:] != srt[:, :-1]) & (srt[:, 1:] >= 0)).sum(axis=1)
    return FAQRun(estimate=est, se=se, lo=lo, hi=hi, ses=ses, plugin=plugin, n_distinct=n_distinct, items=items,
                  answers=answers, q_chosen=q_chosen, phi=phi, u_final=u, var_model=var_model, p_chosen=p_chosen, fell_back=fell_back,
                  fallback_log_e=logsumexp(log_lr, axis=1) - np.log(len(FALLBACK_KAPPAS)), weights=c,
                  n_used=n_used, cs_lo=cs_lo, cs_hi=cs_hi, stopped=stopped, params=p_, crit=crit)


# ----------------------------------------------------------------------------------------------------
# the public core on arrays


class FAQEstimate(NamedTuple):
    """What :func:`estimate` returns. Per new model (shape ``(M,)``) first, then the per-round trace (``(M, n)``,
    ``n`` = the rounds run; rounds after a model stopped hold item -1 and NaN).

    Attributes
    ----------
    estimate : theta_hat, the PAI estimate of eq. 6 (the c_t-weighted mean of the increments phi_t without
        replacement; module docstring); the exact accuracy (1/N) sum_j z_j of eq. 1 when every question was asked.
    se : its standard error (``params.variance``: eq. 8 for "paper", else the module docstring's estimators).
    ci_low, ci_high : the reported interval, clipped to [0, 1]: theta_hat -/+ crit * se (eq. 7, Theorem 3.1) for a
        fixed budget, the anytime-valid one with ``until_width``, or the exact accuracy twice.
    plugin : the factor model's own estimate (1/N) sum_j p_hat_j after the last round (eq. 2 at u_hat; no
        guarantee; NaN when every question was asked).
    n_queries : rounds used per model (n_b, or fewer when it stopped at ``until_width``).
    n_distinct : distinct questions asked.
    gain_vs_uniform : estimated effective-sample-size gain over a uniform sample of the same size: the squared
        ratio of the width a simple random sample's normal interval would have (variance theta_hat (1 - theta_hat)
        (1 - n/N) / n) to this interval's (crit * se for a fixed budget, se with ``until_width``); NaN when se = 0.
    reached_width : True where the anytime-valid interval reached ``until_width`` (all False without it).
    exact : True when every question was asked once (a budget of the whole bank): no sampling at all.
    items : (M, n) I_t, the question asked at round t (int; -1 after stopping).
    answers : (M, n) z_{I_t}.
    q : (M, n) q_t(I_t), the probability the policy of eq. 10 gave the question asked (1 when exact).
    phi : (M, n) the increments phi_t of eq. 6 (NaN when exact).
    weights : (n,) c_t, the predictable weights of the increments (1 with replacement; NaN when exact).
    se_variants : every available standard error (``VARIANCES``) from the same draws, name -> (M,); empty when
        exact.
    run : the full :class:`FAQRun` (every array of Algorithm 1's run; None when exact), e.g. for
        :func:`interval` with another variance or quantile.
    fell_back : (M,) the round from which the model was sampled uniformly because the fallback test rejected
        that its answers follow the history (0 = never; all 0 when exact).
    """

    estimate: np.ndarray
    se: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    plugin: np.ndarray
    n_queries: np.ndarray
    n_distinct: np.ndarray
    gain_vs_uniform: np.ndarray
    reached_width: np.ndarray
    exact: bool
    items: np.ndarray
    answers: np.ndarray
    q: np.ndarray
    phi: np.ndarray
    weights: np.ndarray
    se_variants: dict
    run: FAQRun | None
    fell_back: np.ndarray | None = None


def uniform_gain(estimate, se, n, N: int) -> np.ndarray:
    """Estimated effective-sample-size gain over uniform sampling: the variance a simple random sample of ``n``
    of the ``N`` questions would have at the estimated accuracy, theta_hat (1 - theta_hat) (1 - n/N) / n, over
    ``se``^2 (NaN where se = 0)."""
    th = np.clip(np.asarray(estimate, dtype=float), 0.0, 1.0)
    n = np.asarray(n, dtype=float)
    v_unif = th * (1 - th) * np.maximum(1 - n / N, 0.0) / np.maximum(n, 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        g = np.where(np.asarray(se) > 0, v_unif / np.asarray(se, dtype=float) ** 2, np.nan)
    return g


def check_stopping(until_width, min_queries) -> None:
    """Refuse a target width outside (0, 1] (the accuracy scale) and fewer than 2 rounds before stopping."""
    if until_width is not None and not (isinstance(until_width, (int, float, np.floating))
                                        and not isinstance(until_width, bool) and 0 < until_width <= 1):
        raise AssayInputError(f"until_width must be a width in (0, 1] on the accuracy scale; got {until_width!r}")
    if isinstance(min_queries, bool) or not isinstance(min_queries, (int, np.integer)) or min_queries < 2:
        raise AssayInputError(f"min_queries must be an integer >= 2; got {min_queries!r}")


def _check_core_inputs(Z, V, prior_mean, prior_cov, n_b, alpha, b, n_models, params, until_width, min_queries):
    if not isinstance(params, FAQParams):
        raise AssayInputError(f"params must be an FAQParams; got {type(params).__name__}")
    check_stopping(until_width, min_queries)
    V = np.asarray(V, dtype=np.float64)
    if V.ndim != 2 or V.shape[0] < 1 or V.shape[1] < 1 or not np.isfinite(V).all():
        raise AssayInputError(f"V must be a finite (N, k) array of question factors; got shape {V.shape}")
    N, k = V.shape
    mu = np.asarray(prior_mean, dtype=np.float64)
    S = np.asarray(prior_cov, dtype=np.float64)
    if mu.shape != (k,) or S.shape != (k, k) or not (np.isfinite(mu).all() and np.isfinite(S).all()):
        raise AssayInputError(f"prior_mean must be a finite ({k},) vector and prior_cov a finite ({k}, {k}) matrix; "
                              f"got shapes {mu.shape} and {S.shape}")
    if b is not None:
        bb = np.asarray(b, dtype=np.float64)
        if bb.shape != (N,) or not np.isfinite(bb).all():
            raise AssayInputError(f"b must be a finite ({N},) vector of item offsets; got shape {bb.shape}")
    if callable(Z):
        if isinstance(n_models, bool) or not isinstance(n_models, (int, np.integer)) or n_models < 1:
            raise AssayInputError("n_models (a positive integer) is required when answers come from a callable")
    else:
        Za = np.asarray(Z)
        if Za.ndim != 2 or Za.shape[1] != N or Za.shape[0] < 1:
            raise AssayInputError(f"Z must be an (M, N) array of 0/1 answers with N = {N} columns (the rows of V); "
                                  f"got shape {Za.shape}")
        if not ((Za == 0) | (Za == 1)).all():
            raise AssayInputError("Z must hold 0/1 answers only (no missing value: the estimand is the accuracy over "
                                  "every question)")
    if isinstance(n_b, bool) or not isinstance(n_b, (int, np.integer)) or n_b < 2:
        raise AssayInputError(f"n_b must be an integer >= 2 (the variance needs two queries); got {n_b!r}")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.floating)) or not 0 < alpha < 1:
        raise AssayInputError(f"alpha must be in (0, 1) (0.05 = a 95% interval); got {alpha!r}")


def estimate(
    Z: np.ndarray | Callable[[int, np.ndarray], np.ndarray],
    V: np.ndarray,
    prior_mean: np.ndarray,
    prior_cov: np.ndarray,
    n_b: int,
    *,
    rng,
    alpha: float = 0.05,
    params: FAQParams = FAQParams(),
    b: np.ndarray | None = None,
    until_width: float | None = None,
    min_queries: int = 20,
    n_models: int | None = None,
    on_round: Callable[[int, int], None] | None = None,
    calibrated_crit: float | None = None,
    calibrated_floor: float | None = None,
    on_width: Callable[[int, float], None] | None = None,
) -> FAQEstimate:
    """FAQ's estimate of each new model's accuracy over the whole bank, theta = (1/N) sum_j z_j (eq. 1), with its
    confidence interval: the public core on arrays (no pandas), in the notation of Wu, Nair & Candès (2026).

    Runs Algorithm 1 (:func:`run_faq`): the hybrid policy q_t of eqs. 9-10 on the logistic factor model of eq. 2,
    online Laplace updates of the new model's factor (eqs. 3-5), the PAI increments phi_t of eq. 6 (in their
    without-replacement form by default, module docstring), and the interval theta_hat +- crit * se of eq. 7
    (Theorem 3.1; variance eq. 8 with ``params.variance="paper"``). A budget of the whole bank
    (``n_b >= N``, without ``until_width`` or with design "wr") asks every question once, in bank order, and
    returns the exact accuracy without drawing anything.

    Parameters
    ----------
    Z : (M, N) 0/1 answers of the M new models on the N questions (revealed only where FAQ asks), or a callable
        ``Z(t, items) -> (M,)`` answering the questions ``items`` (M,) at round t (live; ``n_models`` = M).
    V : (N, k) question factors v_j.
    prior_mean, prior_cov : (k,), (k, k) the Gaussian prior of a new model's factor u (the historical models'
        factors' mean and covariance).
    n_b : budget, the number of rounds (at most N without replacement).
    rng : numpy Generator (or anything ``np.random.default_rng`` takes) for the draws.
    alpha : 1 - confidence level.
    params : the policy (beta0, rho, gamma, tau of eqs. 9-10), design and interval; :class:`FAQParams`.
    b : (N,) item offsets (p_j = sigmoid(u'v_j + b_j)) for a factor model with per-item intercepts.
    until_width : stop a model as soon as its anytime-valid interval is at most this wide (after
        ``min_queries`` rounds); its interval is then the anytime-valid one.
    on_round : ``on_round(t, n)`` after each round (progress).
    calibrated_crit : critical value of the fixed-budget interval learnt on held-out families of the history
        (:class:`assay.faq.calibrate.Calibration`), for models that did not fall back to uniform sampling.
    calibrated_floor : for ``variance="conservative"``, the multiplier of the working model's standard error
        learnt there instead (:func:`run_faq`).

    Returns
    -------
    FAQEstimate

    Examples
    --------
    >>> import numpy as np
    >>> from assay.faq.core import estimate
    >>> rng = np.random.default_rng(0)
    >>> V = rng.normal(size=(200, 3)); u = rng.normal(size=(4, 3))
    >>> Z = (rng.random((4, 200)) < 1 / (1 + np.exp(-u @ V.T))).astype(float)
    >>> est = estimate(Z, V, np.zeros(3), np.eye(3), 40, rng=1)
    >>> bool(np.all((est.ci_low <= est.estimate) & (est.estimate <= est.ci_high)))
    True
    """
    _check_core_inputs(Z, V, prior_mean, prior_cov, n_b, alpha, b, n_models, params, until_width, min_queries)
    N = np.asarray(V).shape[0]
    census = n_b >= N and (until_width is None or params.design == "wr")
    if census:
        if callable(Z):
            M = int(n_models)
            Zc = np.empty((M, N))
            for j in range(N):
                Zc[:, j] = np.asarray(Z(j + 1, np.full(M, j)), dtype=np.float64).reshape(M)
                if on_round is not None:
                    on_round(j + 1, N)
        else:
            Zc = np.asarray(Z)
            M = Zc.shape[0]
        exact = Zc.mean(axis=1)
        return FAQEstimate(
            estimate=exact, se=np.zeros(M), ci_low=exact, ci_high=exact, plugin=np.full(M, np.nan),
            n_queries=np.full(M, N), n_distinct=np.full(M, N), gain_vs_uniform=np.full(M, np.nan),
            reached_width=np.full(M, until_width is not None), exact=True,
            items=np.tile(np.arange(N), (M, 1)), answers=Zc, q=np.ones((M, N)), phi=np.full((M, N), np.nan),
            weights=np.full(N, np.nan), se_variants={}, run=None, fell_back=np.zeros(M, dtype=int))
    run = run_faq(V, prior_mean, prior_cov, Z, n_b, n_models=n_models, rng=np.random.default_rng(rng), params=params,
                  alpha=alpha, b=b, until_width=until_width, min_queries=min_queries, on_round=on_round,
                  calibrated_crit=calibrated_crit, calibrated_floor=calibrated_floor, on_width=on_width)
    return FAQEstimate(
        estimate=run.estimate, se=run.se, ci_low=run.lo, ci_high=run.hi, plugin=run.plugin, n_queries=run.n_used,
        n_distinct=run.n_distinct,
        # the gain in interval width (squared) over a uniform sample's normal interval of the same size
        gain_vs_uniform=uniform_gain(run.estimate, run.se if until_width is not None else
                                     run.se * np.asarray(run.crit) / stats.norm.ppf(1 - alpha / 2), run.n_used, N),
        reached_width=run.stopped, exact=False, items=run.items, answers=run.answers, q=run.q_chosen, phi=run.phi,
        weights=run.weights, se_variants=run.ses, run=run, fell_back=run.fell_back)
