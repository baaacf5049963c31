"""The FAQ engine: hybrid sampling policy, online Laplace updates and the PAI estimator, vectorised over models.

:func:`assay.faq.core.estimate`, the public core on arrays, runs :func:`run_faq`, the engine here (the draws,
the increments and the confidence sequences from :mod:`assay.stats`), or asks every question once when the budget
covers the bank. The settings and the standard errors are in :mod:`assay.faq.params`.

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
from typing import Callable

import numpy as np
from scipy.special import expit, logit

from ..errors import AssayInputError
from ..stats.sampling import draw, floored, increment
from ..stats.sequences import AsymptoticCS, cs_rho
from ..stats.special import P_EPS, clamp_p, logsumexp
from .params import FALLBACK_KAPPAS, FAQParams, _weighted, critical_value, standard_errors

__all__ = ["FAQRun", "run_faq", "laplace_step"]


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



def _tempering(t: int, n_b: int, p: FAQParams) -> tuple[float, float]:
    alpha = max(0.0, 1.0 - t / (p.rho * n_b)) if p.rho > 0 else 0.0
    beta = p.beta0 * min(1.0, t / (p.gamma * n_b)) if p.gamma > 0 else p.beta0
    return alpha, beta


# ----------------------------------------------------------------------------------------------------
# Algorithm 1, one step per function (the numbers are the module docstring's); run_faq's loop calls them in order


@dataclass(frozen=True)
class _Setup:
    """What stays fixed during a run: the bank's factors and offsets, the batch's size and the settings."""

    V: np.ndarray  # (N, k) question factors v_j, float64
    b: np.ndarray  # (N,) item offsets b_j (zeros without)
    N: int
    M: int
    rows: np.ndarray  # arange(M)
    n_b: int
    params: FAQParams
    design: str
    alpha: float
    naive_al: bool
    until_width: float | None
    min_queries: int


@dataclass(eq=False)
class _State:
    """What a run carries from round to round, per model: arrays over the M models, updated in place."""

    u: np.ndarray  # (M, k) posterior means u_hat
    Sigma: np.ndarray  # (M, k, k) posterior covariances
    a: np.ndarray | None  # (M, N) a_j = v_j' Sigma v_j, kept with active learning only (rho > 0)
    asked: np.ndarray | None  # (M, N) questions asked so far (the designs without replacement)
    s_obs: np.ndarray  # (M,) sum of the answers seen
    active: np.ndarray  # (M,) still being asked (until_width stops a model)
    n_used: np.ndarray  # (M,) rounds used
    stopped: np.ndarray  # (M,) reached until_width
    # the trace, (M, n_b) each (NaN / item -1 where unused), and the weights c_t (n_b,)
    items: np.ndarray
    answers: np.ndarray
    q_chosen: np.ndarray
    p_chosen: np.ndarray
    sum_p: np.ndarray
    var_model: np.ndarray
    phi: np.ndarray
    c: np.ndarray
    # the anytime-valid interval (its mixing scale set at the first round)
    cs: AsymptoticCS
    # the fallback test: log likelihood ratios of the tempered alternatives (one column per kappa), the round from
    # which each model was sampled uniformly (0 = never) and whether it is now
    log_lr: np.ndarray
    fell_back: np.ndarray
    uniform: np.ndarray


def _start(cfg: _Setup, prior_mean, prior_cov) -> _State:
    """Every model at the prior N(prior_mean, prior_cov), nothing asked yet."""
    M, N, n_b, V = cfg.M, cfg.N, cfg.n_b, cfg.V
    Sigma = np.tile(np.asarray(prior_cov, dtype=np.float64), (M, 1, 1))
    a = None
    if cfg.params.rho > 0:
        # a_j = v_j' Sigma v_j per model; all models start from the same prior, so one N-vector is enough
        a = np.tile(np.einsum("nk,kl,nl->n", V, Sigma[0], V), (M, 1))
    return _State(
        u=np.tile(np.asarray(prior_mean, dtype=np.float64), (M, 1)), Sigma=Sigma, a=a,
        asked=np.zeros((M, N), dtype=bool) if cfg.design != "wr" else None, s_obs=np.zeros(M),
        active=np.ones(M, dtype=bool), n_used=np.zeros(M, dtype=int), stopped=np.zeros(M, dtype=bool),
        items=np.full((M, n_b), -1, dtype=np.int32), answers=np.full((M, n_b), np.nan),
        q_chosen=np.full((M, n_b), np.nan), p_chosen=np.full((M, n_b), np.nan), sum_p=np.full((M, n_b), np.nan),
        var_model=np.full((M, n_b), np.nan), phi=np.full((M, n_b), np.nan), c=np.ones(n_b),
        cs=AsymptoticCS(np.full(M, cfg.alpha), 0.0, 1.0, horizon=n_b, burn_in=min(cfg.min_queries, n_b)),
        log_lr=np.zeros((M, len(FALLBACK_KAPPAS))), fell_back=np.zeros(M, dtype=int), uniform=np.zeros(M, dtype=bool))


class _Round:
    """The current round's M x N arrays (p, w, the scores, q, ...), kept until the next round replaces them.

    They live here rather than in the step functions' locals so that each is released at the moment the next
    round's replaces it, as the local variables of a single loop body were. Released at the end of each step
    instead, several of them are free at once at the top of the heap, the allocator hands that memory back to the
    system and the next round faults it in again."""

    __slots__ = ("p_fm", "p", "w", "avail", "wa", "h", "cc", "d", "q", "qd", "wq", "vs")

    def __init__(self):
        for name in self.__slots__:
            setattr(self, name, None)


# Every M x N step below is done in place where it can be, with the same floating-point operations in the same
# order as the whole-array expressions they replace (the draws and every number are unchanged).


def _predict(r: _Round, st: _State, cfg: _Setup, t: int) -> None:
    """Step 1: ``r.p_fm`` = sigmoid(u_hat . v_j + b_j) clamped (the factor model's), ``r.p`` (what FAQ uses: for a
    model that fell back, a constant predictor, its smoothed mean so far; uniform q follows in :func:`_policy`)
    and ``r.w`` = p (1 - p)."""
    x = st.u @ cfg.V.T
    x += cfg.b
    r.p_fm = np.clip(expit(x, out=x), P_EPS, 1.0 - P_EPS, out=x)
    r.p = r.p_fm
    if st.uniform.any():
        c_run = (st.s_obs + 0.5) / (t - 1 + 1.0)
        r.p = np.where(st.uniform[:, None], clamp_p(c_run)[:, None], r.p_fm)
    r.w = np.subtract(1.0, r.p)
    r.w *= r.p


def _restrict(r: _Round, st: _State, cfg: _Setup) -> None:
    """R_{t-1}, the questions that may be drawn (``r.avail``: the ones not asked yet, without replacement; None =
    all), and ``r.wa`` = w on R."""
    r.avail = ~st.asked if cfg.design == "wor" else None
    r.wa = r.w if r.avail is None else np.where(r.avail, r.w, 0.0)


def _norm_rows(x: np.ndarray) -> np.ndarray:
    """Norm(x) of the paper, per row and in place (x >= 0: a row that sums to 0 is all zeros and stays so)."""
    tot = x.sum(axis=1, keepdims=True)
    x /= np.where(tot > 0, tot, 1.0)
    return x


def _active_learning_scores(r: _Round, st: _State, cfg: _Setup) -> None:
    """Step 3: ``r.d`` = Norm(d) on R, d(j) = w_j (v_j' Sigma g)^2 / (1 + w_j a_j), g = (1/N) sum_j' w_j' v_j'."""
    V = cfg.V
    if cfg.naive_al:
        st.a = np.einsum("nk,mkl,nl->mn", V, st.Sigma, V, optimize=True)
    g = np.einsum("mkl,ml->mk", st.Sigma, (r.w @ V) / cfg.N)
    r.cc = g @ V.T
    r.d = r.w * r.cc * r.cc / (1.0 + r.w * st.a)
    if r.avail is not None:
        r.d = np.where(r.avail, r.d, 0.0)
    _norm_rows(r.d)


def _hybrid_scores(r: _Round, st: _State, cfg: _Setup, alpha_t: float, beta_t: float) -> None:
    """Steps 2-4, eq. 9 normalised: ``r.h`` = Norm(((1 - alpha_t) Norm(s_o) + alpha_t Norm(d))^beta_t) on R, with
    the oracle score s_o = sqrt(w)."""
    r.h = np.sqrt(r.wa)
    _norm_rows(r.h)
    if alpha_t > 0:
        _active_learning_scores(r, st, cfg)
        r.h = (1.0 - alpha_t) * r.h + alpha_t * r.d
    if beta_t != 1.0:
        r.h = r.h**beta_t
        if r.avail is not None:
            r.h = np.where(r.avail, r.h, 0.0)
        _norm_rows(r.h)


def _policy(r: _Round, st: _State, cfg: _Setup, t: int) -> None:
    """Step 4, eq. 10: ``r.q`` = tau / |R| + (1 - tau) h on R, 0 off it; uniform on R for a model that fell back."""
    tau, N = cfg.params.tau, cfg.N
    if cfg.design == "wor":
        # a row whose h vanished on R (all w = 0 there) falls back to uniform on R
        r.q = floored(r.h, r.avail, tau, n_left=N - (t - 1))
    else:
        r.q = floored(r.h, None, tau)
    if st.uniform.any():
        r.q[st.uniform] = np.where(r.avail[st.uniform], 1.0 / (N - (t - 1)), 0.0) if cfg.design == "wor" else 1.0 / N


def _draw_questions(r: _Round, st: _State, cfg: _Setup, rng: np.random.Generator) -> np.ndarray:
    """Step 5: I_t ~ q_t, one uniform per model (the naive-wor ablation: q restricted to the questions not asked)."""
    if cfg.design == "naive-wor":
        r.qd = np.where(st.asked, 0.0, r.q)
        return draw(r.qd / r.qd.sum(axis=1, keepdims=True), rng.random(cfg.M))
    return draw(r.q, rng.random(cfg.M))


def _query(st: _State, cfg: _Setup, answer, t: int, I: np.ndarray) -> np.ndarray:
    """Step 5: z_{I_t}, read from the answer matrix or asked live (a model that stopped is asked item -1)."""
    if not callable(answer):
        return answer[cfg.rows, I].astype(np.float64)
    I_ask = np.where(st.active, I, -1)
    return np.asarray(answer(t, I_ask.copy()), dtype=np.float64).reshape(cfg.M)


def _increment(r: _Round, st: _State, cfg: _Setup, z, I):
    """Step 6: phi_t at the pre-update p -> (phi_t, p_{I_t}, q_t(I_t)). Without replacement (module docstring)
    phi_t = (1/N) [sum_{asked} z + sum_{R} p + (z_I - p_I) / q_t(I)]; with it, eq. 6's sum over the bank."""
    pI = r.p[cfg.rows, I]
    qI = r.q[cfg.rows, I]
    if cfg.design == "wor":
        return increment(st.s_obs, np.where(r.avail, r.p, 0.0).sum(axis=1), z, pI, qI, cfg.N), pI, qI
    return increment(0.0, r.p.sum(axis=1), z, pI, qI, cfg.N), pI, qI


def _model_variance(r: _Round, cfg: _Setup) -> np.ndarray:
    """The conditional variance of phi_t if the working model were true: (1/N^2) (sum_R w_j / q_t(j) - sum_R w_j)."""
    if cfg.design == "wor":
        r.wq = np.zeros_like(r.w)
        np.divide(r.wa, r.q, out=r.wq, where=r.avail)
        return (r.wq.sum(axis=1) - r.wa.sum(axis=1)) / cfg.N**2
    return ((r.w / r.q).sum(axis=1) - r.w.sum(axis=1)) / cfg.N**2


def _record(r: _Round, st: _State, cfg: _Setup, t: int, I, z, pI, qI, phi_t, var_t) -> None:
    """Keep round t of the models still being asked (the trace, the questions asked, the answers' sum) and its
    weight c_t = (N / |R_{t-1}|)^2 without replacement."""
    act = st.active
    if cfg.design == "wor":
        st.c[t - 1] = (cfg.N / (cfg.N - (t - 1))) ** 2
    st.items[act, t - 1] = I[act]
    st.answers[act, t - 1] = z[act]
    st.q_chosen[act, t - 1] = qI[act]
    st.p_chosen[act, t - 1] = pI[act]
    st.sum_p[act, t - 1] = r.p.sum(axis=1)[act]
    st.var_model[act, t - 1] = var_t[act]
    st.phi[act, t - 1] = phi_t[act]
    st.n_used[act] = t
    if cfg.design != "wr":
        st.asked[cfg.rows[act], I[act]] = True
    st.s_obs += np.where(act, z, 0.0)


def _fallback_evidence(st: _State, cfg: _Setup, I, z, pF, test) -> None:
    """The fallback test's update (module docstring): each alternative's log likelihood ratio gains this answer's."""
    V = cfg.V
    # the working model's predictive probability: sigmoid(u_hat'v + b) moderated by the posterior variance
    # s2 = v' Sigma v of the logit (MacKay's probit approximation), not the plug-in, which is too confident
    s2 = np.einsum("mk,mkl,ml->m", V[I], st.Sigma, V[I])
    lp = logit(pF) / np.sqrt(1.0 + np.pi * s2 / 8.0)
    p0 = clamp_p(expit(lp))
    for i, kappa in enumerate(FALLBACK_KAPPAS):
        pa = clamp_p(expit(lp / kappa))
        st.log_lr[:, i] += np.where(test, np.where(z > 0.5, np.log(pa / p0), np.log((1.0 - pa) / (1.0 - p0))), 0.0)


def _fall_back(st: _State, cfg: _Setup, t: int, test) -> None:
    """Send the models the fallback test rejects to uniform sampling from the next round on."""
    # rejects where log(mean(exp(log_lr))) >= log(1 / level); that mean is at most the row's maximum, so
    # only rows whose maximum reaches the threshold (less a margin for rounding) need the log-sum-exp
    bound = np.log(1.0 / cfg.params.fallback)
    reject = test & (st.log_lr.max(axis=1) >= bound - 1e-9 * (1.0 + abs(bound)))
    if reject.any():
        reject[reject] = logsumexp(st.log_lr[reject], axis=1) - np.log(len(FALLBACK_KAPPAS)) >= bound
    if reject.any() and t < cfg.n_b:
        st.uniform |= reject
        st.fell_back[reject] = t + 1


def _fallback_test(st: _State, cfg: _Setup, t: int, I, z, pF, act) -> None:
    """The test that each model's answers follow the working factor model (module docstring), when it is on:
    update it with this round's answer, and send the models it rejects to uniform sampling."""
    if cfg.params.fallback > 0:
        test = act & ~st.uniform
        _fallback_evidence(st, cfg, I, z, pF, test)
        _fall_back(st, cfg, t, test)


def _laplace_update(r: _Round, st: _State, cfg: _Setup, t: int, I, z, pI, act, alpha_t: float) -> None:
    """Step 7, eqs. 3-5 by Sherman-Morrison, for the models still being asked, on the factor model's own p_I:
    s = Sigma v_I, Sigma <- Sigma - w s s' / (1 + w v_I' s), u_hat <- u_hat + (z_I - p_I) s / (1 + w v_I' s);
    the active-learning score's a_j follow by the rank-one identity (step 3) while it is still used."""
    s, wI, denom = laplace_step(st.u, st.Sigma, cfg.V[I], pI, z, act)
    if cfg.params.rho > 0 and not cfg.naive_al and alpha_t > 0 and t < cfg.n_b:
        r.vs = s @ cfg.V.T
        st.a -= (wI / denom)[:, None] * r.vs * r.vs


def laplace_step(u: np.ndarray, Sigma: np.ndarray, v: np.ndarray, p: np.ndarray, z: np.ndarray,
                 active: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One online Laplace update of each model's factor posterior N(u, Sigma), in place (eqs. 3-5 by
    Sherman-Morrison): s = Sigma v, Sigma <- Sigma - w s s' / (1 + w v's), u <- u + (z - p) s / (1 + w v's),
    w = p (1 - p), p the factor model's sigmoid(u.v + b) before the answer z.

    The one implementation of FAQ's update of a new model's factors from its answers: :func:`run_faq` and the
    adaptive comparison (:mod:`assay.compare.adaptive`) both call it.

    Parameters
    ----------
    u, Sigma : ndarray
        (M, k) posterior means and (M, k, k) covariances, updated in place.
    v : ndarray
        (M, k) the factors of the question each model answered.
    p, z : ndarray
        (M,) the predicted probabilities before the answers, and the 0/1 answers.
    active : ndarray, optional
        (M,) 1 for the models that answered, 0 for the ones left as they are (default: all answered).

    Returns
    -------
    tuple of ndarray
        (s, w, 1 + w v's), for callers that keep quantities derived from Sigma up to date.
    """
    s = np.einsum("mkl,ml->mk", Sigma, v)
    wI = p * (1.0 - p) if active is None else p * (1.0 - p) * active
    denom = 1.0 + wI * np.einsum("mk,mk->m", v, s)
    Sigma -= (wI / denom)[:, None, None] * (s[:, :, None] * s[:, None, :])
    step = (z - p) / denom if active is None else active * (z - p) / denom
    u += step[:, None] * s
    return s, wI, denom


def _cs_mixing(cfg: _Setup, var_t: np.ndarray) -> float:
    """The confidence sequence's mixing scale, tightest where the working model expects to reach ``until_width``
    (or at n_b), from the first round's model variance."""
    v0 = float(np.mean(var_t))
    if cfg.until_width is not None:
        t_star = v0 * (2.0 * 2.5 / cfg.until_width) ** 2  # where the boundary should be tightest
        t_star = float(np.clip(t_star, cfg.min_queries, cfg.n_b))
    else:
        t_star = float(cfg.n_b)
    return cs_rho(cfg.alpha, max(t_star * v0, 1e-12))


def _anytime_interval(st: _State, cfg: _Setup, t: int, phi_t, var_t, act) -> None:
    """The anytime-valid interval (module docstring) after round t, for the models still being asked: the weighted
    increments with the working model's variance as the floor, intersected from ``min_queries`` on (a model that
    stopped keeps its last interval)."""
    if t == 1:
        st.cs.rho[:] = _cs_mixing(cfg, var_t)
    rows = np.flatnonzero(act)
    st.cs.update(rows, phi_t[rows, None], c=st.c[t - 1], floor=var_t[rows, None])


def _stop_narrow(st: _State, cfg: _Setup, t: int, act) -> None:
    """With ``until_width``, from ``min_queries`` on: stop the models whose anytime-valid interval is that narrow."""
    if cfg.until_width is not None and t >= cfg.min_queries:
        done_now = act & ((np.minimum(st.cs.hi, 1.0) - np.maximum(st.cs.lo, 0.0)) <= cfg.until_width)
        st.stopped |= done_now
        st.active = st.active & ~done_now


def _report(st: _State, cfg: _Setup, t: int, on_round, on_width) -> None:
    """Progress after round t: ``on_round(t, n_b)``, and from ``min_queries`` on ``on_width(t, widest interval)``."""
    if on_round is not None:
        on_round(t, cfg.n_b)
    if on_width is not None and t >= min(cfg.min_queries, cfg.n_b):
        on_width(t, float(np.max(np.minimum(st.cs.hi, 1.0) - np.maximum(st.cs.lo, 0.0))))


def _fixed_budget_interval(st: _State, cfg: _Setup, calibrated_crit, calibrated_floor):
    """After the rounds (Algorithm 1, 9-10): theta_hat = sum_t W_t phi_t, every standard error, and theta_hat +-
    crit * se clipped to [0, 1], with what the history calibrated for the models that did not fall back
    -> (theta_hat, se, every se, crit, lo, hi)."""
    params = cfg.params
    used = np.arange(cfg.n_b)[None, :] < st.n_used[:, None]
    ses = standard_errors(np.where(used, st.phi, 0.0), np.where(used, st.answers, 0.0),
                          np.where(used, st.p_chosen, 0.5), np.where(used, st.q_chosen, 1.0),
                          np.where(used, st.sum_p, 0.0), np.where(used, st.var_model, 0.0),
                          cfg.N, weights=st.c, used=used, design=cfg.design)
    W, est, s2, _ = _weighted(np.where(used, st.phi, 0.0), st.c, used)
    se = ses[params.variance]
    n_eff = 1.0 / s2
    crit = critical_value(cfg.alpha, n_eff, params.quantile)
    if calibrated_floor is not None and np.isfinite(calibrated_floor) and params.variance == "conservative":
        # the working model's part of the standard error shrunk (or grown) by what held-out families of the
        # history say it should be; the model-free part (the increments) is never shrunk
        se = np.where(st.fell_back > 0, se, np.maximum(ses["increments"], float(calibrated_floor) * ses["model"]))
    if calibrated_crit is not None and np.isfinite(calibrated_crit):
        # a critical value learnt on held-out families of the history (assay.faq.calibrate, variance "increments" or
        # "model"; the conservative rule learns its floor instead, above); a model that fell
        # back to uniform sampling is not like them and keeps the quantile
        crit = np.where(st.fell_back > 0, crit, float(calibrated_crit))
    lo = np.clip(est - crit * se, 0.0, 1.0)
    hi = np.clip(est + crit * se, 0.0, 1.0)
    return est, se, ses, crit, lo, hi


def _exact_where_complete(st: _State, cfg: _Setup, est, se, ses, lo, hi, cs_lo, cs_hi):
    """A model that asked every question (without replacement) knows its accuracy exactly: its estimate and both
    intervals become it, its standard errors 0 (arrays updated in place) -> se."""
    if cfg.design == "wor":
        full = st.n_used >= cfg.N
        if full.any():
            exact = st.s_obs[full] / cfg.N
            est[full] = exact
            lo[full] = hi[full] = cs_lo[full] = cs_hi[full] = exact
            for key in ses:
                ses[key][full] = 0.0
            se = np.where(full, 0.0, se)
    return se


def _n_distinct(items: np.ndarray) -> np.ndarray:
    """Distinct questions asked per model (items -1 = unused rounds)."""
    srt = np.sort(items, axis=1)  # -1 (unused rounds) sort first
    first = srt[:, :1] >= 0
    return first[:, 0].astype(int) + ((srt[:, 1:] != srt[:, :-1]) & (srt[:, 1:] >= 0)).sum(axis=1)


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
    N, _ = V.shape
    if callable(answer):
        if n_models is None:
            raise AssayInputError("n_models is required when answers come from a callable")
        M = int(n_models)
    else:
        answer = np.asarray(answer)
        M = answer.shape[0]
    if params.design != "wr" and n_b > N:
        raise AssayInputError(f"without replacement the budget {n_b} cannot exceed the bank size {N}")
    cfg = _Setup(V=V, b=np.zeros(N) if b is None else np.asarray(b, dtype=np.float64), N=N, M=M, rows=np.arange(M),
                 n_b=n_b, params=params, design=params.design, alpha=alpha, naive_al=naive_al,
                 until_width=until_width, min_queries=min_queries)
    st, r = _start(cfg, prior_mean, prior_cov), _Round()
    for t in range(1, n_b + 1):
        _predict(r, st, cfg, t)  # 1. p_j and w_j at the current state
        alpha_t, beta_t = _tempering(t, n_b, params)  # 4. the schedule
        _restrict(r, st, cfg)  # R_{t-1}, the questions that may be drawn
        _hybrid_scores(r, st, cfg, alpha_t, beta_t)  # 2-4. eq. 9
        _policy(r, st, cfg, t)  # 4. q_t, eq. 10
        I = _draw_questions(r, st, cfg, rng)  # 5. I_t ~ q_t
        z = _query(st, cfg, answer, t, I)  # 5. z_{I_t}
        phi_t, pI, qI = _increment(r, st, cfg, z, I)  # 6. phi_t
        var_t = _model_variance(r, cfg)
        act = st.active
        _record(r, st, cfg, t, I, z, pI, qI, phi_t, var_t)
        pF = r.p_fm[cfg.rows, I]  # the factor model's own p_{I_t}, before the answer
        _fallback_test(st, cfg, t, I, z, pF, act)
        _laplace_update(r, st, cfg, t, I, z, pF, act, alpha_t)  # 7. eqs. 3-5
        _anytime_interval(st, cfg, t, phi_t, var_t, act)
        _stop_narrow(st, cfg, t, act)
        _report(st, cfg, t, on_round, on_width)
        if not st.active.any():
            break

    est, se, ses, crit, lo, hi = _fixed_budget_interval(st, cfg, calibrated_crit, calibrated_floor)
    cs_lo, cs_hi = np.clip(st.cs.lo, 0.0, 1.0), np.clip(st.cs.hi, 0.0, 1.0)
    if until_width is not None:
        lo, hi = cs_lo, cs_hi
    se = _exact_where_complete(st, cfg, est, se, ses, lo, hi, cs_lo, cs_hi)
    plugin = clamp_p(expit(st.u @ V.T + cfg.b)).mean(axis=1)
    return FAQRun(estimate=est, se=se, lo=lo, hi=hi, ses=ses, plugin=plugin, n_distinct=_n_distinct(st.items),
                  items=st.items, answers=st.answers, q_chosen=st.q_chosen, phi=st.phi, u_final=st.u,
                  var_model=st.var_model, p_chosen=st.p_chosen, fell_back=st.fell_back,
                  fallback_log_e=logsumexp(st.log_lr, axis=1) - np.log(len(FALLBACK_KAPPAS)), weights=st.c,
                  n_used=st.n_used, cs_lo=cs_lo, cs_hi=cs_hi, stopped=st.stopped, params=params, crit=crit)
