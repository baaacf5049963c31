"""What a FAQ run is asked to do, and how its interval is read from its increments: :class:`FAQParams` (the hybrid
policy of eqs. 9-10, the design and the interval), the standard errors of the weighted increments
(:func:`standard_errors`: the estimators of :mod:`assay.faq.engine`'s docstring) and the critical value. Used by the
engine (:mod:`assay.faq.engine`), the public core (:mod:`assay.faq.core`), the protocol and the calibration."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Mapping

import numpy as np
from scipy import stats

from .. import checks
from ..errors import AssayInputError

if TYPE_CHECKING:
    from .engine import FAQRun

__all__ = ["FAQParams", "VARIANCES", "DESIGNS", "FALLBACK_KAPPAS", "MIN_VALIDATED_QUERIES", "standard_errors",
           "critical_value", "interval"]

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
