"""FAQ's public core on arrays: :func:`estimate` takes 0/1 answers and factor arrays and returns an
:class:`FAQEstimate` (NamedTuple: estimate, se, ci_low, ci_high, ... per model, and the per-round trace); no pandas, no
I/O. It runs Algorithm 1 (:func:`assay.faq.engine.run_faq`, where the policy, the designs, the variance estimators,
the fallback test and the anytime-valid interval are described in the paper's notation), or asks every question once
when the budget covers the bank. :func:`plain_words` are the notes every FAQ output carries beside its numbers.

The names of the engine and the parameters (``run_faq``, ``FAQRun``, ``FAQParams``, ``standard_errors``,
``critical_value``, ``interval``, ``laplace_step``, ``VARIANCES``, ``DESIGNS``) and of the shared mathematics that
moved to :mod:`assay.stats` (``clamp_p``, ``P_EPS``, ``cs_rho``, ``cs_radius``) are importable from here too, for one
release.
"""

from __future__ import annotations

from typing import Callable, NamedTuple, Sequence

import numpy as np
from scipy import stats

from ..errors import AssayInputError
from ..stats.sequences import cs_radius, cs_rho
from ..stats.special import P_EPS, clamp_p
from .engine import FAQRun, laplace_step, run_faq
from .params import (DESIGNS, MIN_VALIDATED_QUERIES, VARIANCES, FAQParams, _check_alpha, critical_value, interval,
                     standard_errors)

__all__ = ["estimate", "FAQEstimate", "uniform_gain", "check_stopping", "plain_words", "MIN_VALIDATED_QUERIES",
           "FAQParams", "FAQRun", "run_faq", "clamp_p", "P_EPS", "VARIANCES", "DESIGNS", "standard_errors",
           "critical_value", "interval", "cs_rho", "cs_radius", "laplace_step"]

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
