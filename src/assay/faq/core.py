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

from dataclasses import dataclass, field, replace
from typing import Callable, Mapping, NamedTuple, Sequence

import numpy as np
from scipy import stats
from scipy.special import expit, logit

from .. import checks
from ..errors import AssayInputError
from ..stats.sampling import draw, floored, increment
from ..stats.sequences import AsymptoticCS, cs_radius, cs_rho
from ..stats.special import P_EPS, clamp_p, logsumexp

__all__ = ["estimate", "FAQEstimate", "uniform_gain", "check_stopping", "plain_words", "MIN_VALIDATED_QUERIES", "FAQParams", "FAQRun", "run_faq", "clamp_p", "P_EPS", "VARIANCES", "DESIGNS", "standard_errors",
           "critical_value", "interval", "cs_rho", "cs_radius", "laplace_step"]

VARIANCES = ("conservative", "increments", "model", "paper")
DESIGNS = ("wor", "wr", "naive-wor")
#: the tempered alternatives of the fallback test: the answers follow sigmoid(logit(p) / kappa), a working model
#: that is kappa times too confident about this model
FALLBACK_KAPPAS = (1.5, 2.0, 3.0)
#: the smallest number of queries at which the default interval's coverage was shown on models absent from the
#: history (2.5% of the 1,351-question leaderboard bank; ``assay study faq-leaderboard``). Below it a result warns.
MIN_VALIDATED_QUERIES = 33


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


def _params(params: FAQParams | Mapping | None, **kw) -> FAQParams:
    base = params if isinstance(params, FAQParams) else FAQParams(**dict(params or {}))
    given = {k: v for k, v in kw.items() if v is not None}
    return replace(base, **given) if given else base


def _check_flag(value, name: str) -> None:
    if not isinstance(value, (bool, np.bool_)):
        raise AssayInputError(f"{name} must be True or False; got {value!r}")


def _check_alpha(alpha):
    checks.level(alpha, "alpha (0.05 = a 95% interval)")


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

    Parameters
    ----------
    phi : ndarray
        (M, n) increments phi_t.
    answers : ndarray
        (M, n) observed answers z_{I_t}.
    p_chosen : ndarray
        (M, n) p_t(I_t), the working model's probability of the asked question before the answer.
    q_chosen : ndarray
        (M, n) sampling probabilities q_t(I_t).
    sum_p : ndarray
        (M, n) sum_j p_j^(t-1) over the bank, for eq. 8's B term.
    var_model : ndarray
        (M, n) conditional variance of phi_t if the factor model were true.
    N : int
        Questions in the bank.
    weights : ndarray, optional
        (n,) the c_t (default 1).
    used : ndarray, optional
        (M, n) booleans marking the rounds each model used (default all).
    design : str, default "wr"
        The sampling design; the ``paper`` estimator exists only for ``"wr"`` with every round used.

    Returns
    -------
    dict of str to ndarray
        ``increments``, ``model``, ``conservative`` (their maximum) and, when available, ``paper``; (M,) each.
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
    """z_{1-alpha/2}, or the Student t quantile with n - 1 degrees of freedom (``n`` may be an array).

    Parameters
    ----------
    alpha : float
        Miscoverage of the two-sided interval.
    n : float or array_like
        Effective sample size(s); the degrees of freedom are at least 1.
    quantile : str
        ``"t"`` for Student t; anything else gives the normal quantile.

    Returns
    -------
    float or ndarray
        The critical value (an array when ``quantile="t"`` and ``n`` is one).

    Examples
    --------
    >>> round(critical_value(0.05, 30, "normal"), 4), round(critical_value(0.05, 30, "t"), 4)
    (1.96, 2.0452)
    """
    if quantile == "t":
        df = np.maximum(np.asarray(n, dtype=float) - 1.0, 1.0)
        out = stats.t.ppf(1 - alpha / 2, df)
        return float(out) if np.ndim(out) == 0 else out
    return float(stats.norm.ppf(1 - alpha / 2))


def interval(run: "FAQRun", alpha: float, variance: str | None = None, quantile: str | None = None):
    """(lo, hi) of the fixed-budget interval of a finished run with another variance estimator / quantile.

    The run's draws are reused; the degrees of freedom come from its weights over the rounds used, and the ends are
    clipped to [0, 1].

    Parameters
    ----------
    run : FAQRun
        A finished run.
    alpha : float
        Miscoverage.
    variance : str, optional
        A variance estimator of ``run.ses`` (default: the run's own).
    quantile : str, optional
        ``"t"`` or ``"normal"`` (default: the run's own).

    Returns
    -------
    tuple of ndarray
        (lo, hi), (M,) each.

    Raises
    ------
    AssayInputError
        When the variance estimator is not available for the run's design.
    """
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
    """Estimated effective-sample-size gain over uniform sampling.

    The gain is the variance a simple random sample of ``n`` of the ``N`` questions would have at the estimated
    accuracy, theta_hat (1 - theta_hat) (1 - n/N) / n, over ``se``^2 (NaN where se = 0).

    Parameters
    ----------
    estimate : array_like
        The estimated accuracies theta_hat (clipped to [0, 1]).
    se : array_like
        Their standard errors.
    n : array_like
        Questions asked.
    N : int
        Questions in the bank.

    Returns
    -------
    ndarray
        The gain per model.

    Examples
    --------
    >>> import numpy as np
    >>> print(uniform_gain(np.array([0.7, 0.5]), np.array([0.03, 0.0]), 100, 1000).round(3))
    [2.1 nan]
    """
    th = np.clip(np.asarray(estimate, dtype=float), 0.0, 1.0)
    n = np.asarray(n, dtype=float)
    v_unif = th * (1 - th) * np.maximum(1 - n / N, 0.0) / np.maximum(n, 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        g = np.where(np.asarray(se) > 0, v_unif / np.asarray(se, dtype=float) ** 2, np.nan)
    return g


def check_stopping(until_width, min_queries) -> None:
    """Refuse a target width outside (0, 1] (the accuracy scale) and fewer than 2 rounds before stopping.

    Parameters
    ----------
    until_width : float or None
        The target width of the interval on the accuracy scale, or None for no early stopping.
    min_queries : int
        The number of rounds before stopping may happen; at least 2.

    Raises
    ------
    AssayInputError
        If ``until_width`` is not None and not a number in (0, 1], or ``min_queries`` is not an integer >= 2.
    """
    if until_width is not None and not (isinstance(until_width, (int, float, np.floating))
                                        and not isinstance(until_width, bool) and 0 < until_width <= 1):
        raise AssayInputError(f"until_width must be a width in (0, 1] on the accuracy scale; got {until_width!r}")
    if isinstance(min_queries, bool) or not isinstance(min_queries, (int, np.integer)) or min_queries < 2:
        raise AssayInputError(f"min_queries must be an integer >= 2; got {min_queries!r}")


def plain_words(*, n_queries: int, gain=None, expected: dict | None = None, model_ids: Sequence[str] | None = None,
                until_width=None, calibrated: bool | None = None, fell_back=None, design: str = "wor") -> list[str]:
    """The notes every FAQ output carries beside its numbers (evaluate, protocol, the studies, report and JSON).

    Parameters
    ----------
    n_queries : int
        The budget in questions.
    gain : float or array_like, optional
        Realised or estimated effective-sample-size gain over uniform sampling, per model (evaluate) or one number
        (protocol).
    expected : dict, optional
        :meth:`Calibration.summary` (what the history predicts before any query), or None when the history cannot
        say.
    model_ids : sequence of str, optional
        The models' ids, to name them in the notes.
    until_width : float, optional
        The target width of a run that stops early (the notes about a fixed-budget interval's validation and
        calibration are then left out).
    calibrated : bool, optional
        Whether the interval was calibrated on the history (None: not applicable).
    fell_back : array_like, optional
        Per model, the round from which it was sampled uniformly (0 = never).
    design : str, default "wor"
        The sampling design (``"naive-wor"`` gets a note that its interval is not valid).

    Returns
    -------
    list of str
        The notes, possibly none.

    Examples
    --------
    >>> for note in plain_words(n_queries=100, gain=[2.5, 0.8], model_ids=["a/x", "b/y"], calibrated=True):
    ...     print(note[:60])
    no saving for 1 of 2 models: the interval is about as wide a
    """
    notes: list[str] = []
    ids = list(model_ids) if model_ids is not None else None
    if until_width is None and n_queries < MIN_VALIDATED_QUERIES and not calibrated:
        notes.append(f"{n_queries} queries is below the {MIN_VALIDATED_QUERIES} from which FAQ's coverage was shown on "
                     "models absent from the history (assay study faq-leaderboard), and this history could not measure "
                     "it at this budget; treat the interval as approximate, or raise the budget")
    if calibrated is False and until_width is None:
        notes.append("the interval is the conservative Student t one: it could not be calibrated on the history "
                     "(that needs the history itself, not only fitted factors, with at least 20 complete models in "
                     "model-level folds), so it may be wider than it needs to be")
    if expected:
        es = expected.get("expected_saving")
        if es is not None and np.isfinite(es) and es < 1.0:
            notes.append(f"no saving expected: on {expected.get('held_out_models')} models of the history, their "
                         f"families held out, FAQ at {n_queries} queries was worth {es:.2f} uniformly sampled questions per question; a "
                         "uniform sample of the same size would do as well")
    if gain is not None:
        g = np.atleast_1d(np.asarray(gain, dtype=float))
        low = np.isfinite(g) & (g < 1.0)
        if low.any():
            who = (f"model {ids[int(np.flatnonzero(low)[0])]!r}" if ids is not None and len(ids) == 1 else
                   f"{int(low.sum())} of {len(ids)} models" if ids is not None else "these models")
            notes.append(f"no saving for {who}: the interval is about as wide as a uniform sample of the same size "
                         f"would give (gain {np.nanmin(g[low]):.2f}x). Its answers do not follow the history's pattern "
                         "(e.g. a model family the history does not contain); the interval is still valid")
    if fell_back is not None:
        fb = np.atleast_1d(np.asarray(fell_back))
        if (fb > 0).any():
            who = (f"model {ids[int(np.flatnonzero(fb > 0)[0])]!r}" if ids is not None and len(ids) == 1 else
                   f"{int((fb > 0).sum())} of {len(fb)} models")
            notes.append(f"{who} fell back to uniform sampling (from query {int(fb[fb > 0].min())} on): its answers "
                         "do not follow the history (the fallback test rejected at its level), so the rest of its "
                         "budget was spent on uniform draws")
    if design == "naive-wor":
        notes.append("design 'naive-wor' is the paper's Appendix B ablation: its interval is NOT valid")
    return notes


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
    _check_alpha(alpha)


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
