"""PS-DME synthetic ridge study (paper Sec. 5.2, App. G.1 Table 1, Fig. 3, Sec. 3.3 / App. E Fig. 6).

Data-generating process (paper Sec. 5.2): covariates U ~ N(0, I_10), response V = U'beta + eps with
eps ~ N(0, 1) and beta ~ N(0, I_10) drawn ONCE per study seed. K = 2000 ridge models with lambda on a
log grid over [1e-4, 1e2], each fitted in closed form, b_k = (X'X + lambda I)^{-1} X'y, on its OWN
independent training set of 600 points (also drawn once per study seed). The KPI of model k on a
calibration point is the squared error X_k,i = (V_i - U_i' b_k)^2; all K models share one calibration
sample of size n, drawn fresh in every trial (the KPIs are therefore strongly correlated across k).

The true CDFs are exact: V - U'b_k = eps + U'(beta - b_k) ~ N(0, s_k^2) with
s_k^2 = ||beta - b_k||^2 + 1, so X_k = s_k^2 chi2_1 and F_k(x) = chi2.cdf(x / s_k^2, 1). Coverage of a
band is checked on both sides of every jump (``stats.bands.band_covers``), which is exact for a
continuous F.

Selection: the M = 1000 models with the smallest empirical mean KPI on the selection data (all n
points for PS-DME / Bonferroni / naive; the selection part of the split for SS-DME), ties broken by
index as in ``assay.psdme``. delta = 0.1. Per-band levels are ``assay.psdme.levels(K, M, delta)``.

Each trial runs the method's array core, ``assay.psdme.core``, on the (K, n) KPI matrix (selection, level,
``stats.bands.dkw_band`` / ``bj_band``, guaranteed KPI); a test checks that one trial agrees with
``assay.psdme.bands`` exactly. Calling ``bands`` on a 200k-row table per trial and method would dominate the run
time. SS-DME splits the shared calibration sample with ONE random permutation per trial (the paper's "random
splits of the dataset"), the first round(split * n) points selecting; the tradeoff's splits 0.5 / 0.6 / 0.7
reuse that permutation (nested selection parts).

Rows (``kind``):

* ``fcr`` (Table 1): per n, method and band: empirical FCR (mean over trials of the false coverage
  proportion #{k in S: band misses F_k} / max(|S|, 1)) with its Monte Carlo se, ``miss_any`` (share of
  trials with at least one miss), mean band width (DKW eps or BJ critical value) over selected models
  and trials, its analytic value, and the best guaranteed KPI at gamma in 0.01 / 0.05 / 0.1 / 0.2 / 0.3
  (mean over the trials where it is finite; ``kpi_inf_*`` counts the trials where it is +inf).
* ``tradeoff`` (Fig. 3): per n and method (PS-DME; SS-DME at each split) the best guaranteed KPI
  min_{k in S} X*_k(gamma) against the reliability 1 - gamma, mean and se over trials (finite trials
  only; ``n_inf`` counts the others), next to the oracle min_k s_k^2 chi2_1^{-1}(1 - gamma).
* ``width-curve`` (Fig. 6, Lemma 2 / Corollary 2): analytic DKW widths in units of sqrt(1/(2n)),
  i.e. sqrt(ln(2/alpha)) for PS-DME (all n points) and sqrt(ln(2/delta) / rho) for SS-DME (rho =
  n_eval / n), at delta = 0.1 and delta|S|/K = 0.01 (K = 1000, |S| = 100), for tau in 0.25 / 0.5 / 0.75
  and tau*; each PS-DME row carries its crossover ratio ln(2/delta) / ln(2/alpha) (eq. 15).
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd
from scipy.special import chdtr, chdtri

from .. import psdme as ps
from ..errors import AssayInputError
from ..parallel import run_tasks
from ..seeds import resolve_seed
from ..stats import bands as bd
from ..stats import calibrate as cal
from . import StudyResult, register

DIM = 10
N_TRAIN = 600
LAMBDA_RANGE = (1e-4, 1e2)
DELTA = 0.1
FCR_GAMMAS = (0.01, 0.05, 0.1, 0.2, 0.3)
TRADEOFF_RELIABILITY = tuple(np.round(np.arange(0.50, 0.991, 0.01), 2).tolist())
ALL_METHODS = ("ps-dme", "ss-dme", "bonferroni", "naive")

# App. G.1, Table 1 (SS-DME split 0.5, 100 replications).
PAPER_FCR = {(20, "ss-dme"): 0.0401, (20, "ps-dme"): 0.0116, (100, "ss-dme"): 0.0923, (100, "ps-dme"): 0.0}
# notes/psdme.md section 3 (K = 2000, |S| = 1000, delta = 0.1; SS-DME 50/50 split).
NOTES_WIDTH = {(20, "ps-dme"): 0.4012, (100, "ps-dme"): 0.1794, (20, "ss-dme"): 0.3870, (100, "ss-dme"): 0.1731}

# Fig. 6 design: delta |S| / K = 0.01 at delta = 0.1.
CURVE_K, CURVE_S = 1000, 100
CURVE_TAUS = (0.25, 0.5, 0.75)
CURVE_RATIOS = tuple(np.round(np.arange(0.05, 0.951, 0.05), 2).tolist())

TRIALS_PER_TASK = 10


# --------------------------------------------------------------------------------------------
# Data-generating process
# --------------------------------------------------------------------------------------------


def ridge_models(rng: np.random.Generator, K: int = 2000, n_train: int = N_TRAIN, dim: int = DIM,
                 lambdas: np.ndarray | None = None, chunk: int = 250) -> dict[str, np.ndarray]:
    """beta, the K ridge coefficient vectors (each on its own training set) and s_k^2 = ||beta - b_k||^2 + 1.

    beta ~ N(0, I_dim); model k is fitted in closed form, b_k = (X'X + lambda_k I)^{-1} X'y, on its own
    independent training set of ``n_train`` points (U ~ N(0, I), V = U'beta + eps, eps ~ N(0, 1)), with lambda on a
    log grid over [1e-4, 1e2] unless ``lambdas`` is given. s_k^2 is the variance of the model's residual
    V - U'b_k ~ N(0, s_k^2), so its squared error is s_k^2 chi2_1.

    Parameters
    ----------
    rng : numpy.random.Generator
        Draws beta and the training sets.
    K : int, default 2000
        Number of ridge models.
    n_train : int, default 600
        Training points per model.
    dim : int, default 10
        Number of covariates.
    lambdas : ndarray (K,) or None, default None
        Ridge penalties; None: ``np.logspace(-4, 2, K)``.
    chunk : int, default 250
        Models fitted together in one batched solve.

    Returns
    -------
    dict
        ``beta`` (dim,), ``B`` (K, dim) the coefficients, ``s2`` (K,) and ``lambdas`` (K,).

    Examples
    --------
    >>> import numpy as np
    >>> m = ridge_models(np.random.default_rng(0), K=5)
    >>> m["B"].shape, m["lambdas"].round(4).tolist()
    ((5, 10), [0.0001, 0.0032, 0.1, 3.1623, 100.0])
    >>> m["s2"].round(4).tolist()
    [1.0191, 1.0103, 1.0155, 1.0204, 1.1475]
    """
    beta = rng.standard_normal(dim)
    lam = np.logspace(math.log10(LAMBDA_RANGE[0]), math.log10(LAMBDA_RANGE[1]), K) if lambdas is None else lambdas
    B = np.empty((K, dim))
    eye = np.eye(dim)
    for a in range(0, K, chunk):
        b = min(K, a + chunk)
        X = rng.standard_normal((b - a, n_train, dim))
        y = X @ beta + rng.standard_normal((b - a, n_train))
        XtX = np.einsum("kij,kil->kjl", X, X)
        Xty = np.einsum("kij,ki->kj", X, y)
        B[a:b] = np.linalg.solve(XtX + lam[a:b, None, None] * eye, Xty[..., None])[..., 0]
    s2 = ((B - beta) ** 2).sum(axis=1) + 1.0
    return {"beta": beta, "B": B, "s2": s2, "lambdas": lam}


def calibration_kpis(rng: np.random.Generator, beta: np.ndarray, B: np.ndarray, n: int) -> np.ndarray:
    """KPI matrix X (K, n): squared errors of every model on one shared calibration sample of size n.

    The sample is U_i ~ N(0, I), V_i = U_i'beta + eps_i with eps_i ~ N(0, 1); X_k,i = (V_i - U_i' b_k)^2, so the
    KPIs are strongly correlated across k.

    Parameters
    ----------
    rng : numpy.random.Generator
        Draws the calibration sample.
    beta : ndarray (dim,)
        The true coefficients.
    B : ndarray (K, dim)
        The models' coefficients (rows b_k).
    n : int
        Size of the calibration sample.

    Returns
    -------
    ndarray (K, n)
        X_k,i, unsorted.

    Examples
    --------
    >>> import numpy as np
    >>> m = ridge_models(np.random.default_rng(0), K=5)
    >>> X = calibration_kpis(np.random.default_rng(1), m["beta"], m["B"], 20)
    >>> X.shape, X.mean(axis=1).round(4).tolist()
    ((5, 20), [0.9002, 0.9481, 0.9066, 0.9212, 0.9797])
    """
    U = rng.standard_normal((n, beta.size))
    V = U @ beta + rng.standard_normal(n)
    return (V[None, :] - B @ U.T) ** 2


def true_cdf(s2: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """Return F_k(x) = chi2_1 CDF at x / s_k^2, for rows of an array whose rows are the models of ``s2``.

    Parameters
    ----------
    s2 : array_like of shape (K,)
        The scales s_k^2 of the K models.

    Returns
    -------
    callable
        ``F(x)``: the true CDFs at ``x`` (negative values count as 0), row k for model k; a 1-D ``x`` of length
        m gives shape (K, m).

    Examples
    --------
    >>> F = true_cdf([1.0, 4.0])
    >>> F(np.array([1.0, 3.84])).round(4).tolist()
    [[0.6827, 0.95], [0.3829, 0.6728]]
    """
    s2c = np.asarray(s2, dtype=float)[:, None]
    return lambda x: chdtr(1.0, np.maximum(x, 0.0) / s2c)


# --------------------------------------------------------------------------------------------
# One trial, one method (arrays)
# --------------------------------------------------------------------------------------------


def _fit(X: np.ndarray, method: str, M: int, *, delta: float = DELTA, band: str = "dkw", split: float = 0.5,
         perm: np.ndarray | None = None, levels: dict[str, float] | None = None,
         gammas: Sequence[float] = ps.DEFAULT_GAMMAS) -> ps.PsdmeCore:
    """``assay.psdme.core`` on a KPI matrix X (K, n) with rows SORTED ascending, top-M selection.

    SS-DME's split is the study's own (one permutation of the n shared calibration points per trial, ``perm``;
    or one per model, shape (K, n)): the first round(split * n) permuted points select, the rest build the band.
    """
    K, n = X.shape
    sel = None
    ev = X
    if method == "ss-dme":
        if perm is None:
            raise AssayInputError("ss-dme needs a permutation of the calibration points")
        m = min(max(int(round(split * n)), 1), n - 1)
        P = np.broadcast_to(perm, (K, n)) if np.ndim(perm) == 1 else perm
        Xp = np.take_along_axis(X, P, axis=1)
        sel = np.sort(Xp[:, :m], axis=1)
        ev = np.sort(Xp[:, m:], axis=1)
    return ps.core(ev, sel, delta=delta, select=f"top:{M}", method=method, band=band, gammas=gammas,
                   design_levels=levels)


def select_and_band(X: np.ndarray, method: str, M: int, *, delta: float = DELTA, band: str = "dkw",
                    split: float = 0.5, perm: np.ndarray | None = None, levels: dict[str, float] | None = None):
    """Selection and bands of one method on a KPI matrix X (K, n) with rows SORTED ascending.

    ``perm``: SS-DME's permutation of the n columns, shared (shape (n,)) or per model (shape (K, n));
    the first round(split * n) permuted points select. ``levels``: :func:`assay.psdme.levels` of the design,
    if already known. Returns (selected indices, band, alpha); :func:`assay.psdme.core` does the work.
    The selection is the M models with the smallest empirical mean KPI on the selection data.

    Parameters
    ----------
    X : ndarray (K, n)
        KPIs of the K models on the shared calibration sample, each row sorted ascending.
    method : str
        ``"ps-dme"``, ``"ss-dme"``, ``"bonferroni"`` or ``"naive"``.
    M : int
        Number of models to select.
    delta : float, default 0.1
        Target FCR.
    band : str, default "dkw"
        ``"dkw"`` or ``"berk-jones"`` (``"bj"``).
    split : float, default 0.5
        SS-DME's selection fraction.
    perm : ndarray (n,) or (K, n), or None, default None
        SS-DME's permutation of the columns (required for ``"ss-dme"``).
    levels : dict or None, default None
        The per-band levels of the design, if already known.

    Returns
    -------
    selected : ndarray
        Indices of the selected models.
    band : CDFBand
        Their bands.
    alpha : float
        The per-band miscoverage.

    Raises
    ------
    AssayInputError
        If ``method="ss-dme"`` has no ``perm`` (and on an invalid design, from :func:`assay.psdme.core`).

    Examples
    --------
    >>> import numpy as np
    >>> m = ridge_models(np.random.default_rng(0), K=5)
    >>> X = np.sort(calibration_kpis(np.random.default_rng(1), m["beta"], m["B"], 20), axis=1)
    >>> sel, b, alpha = select_and_band(X, "ps-dme", 2)
    >>> sel.tolist(), round(alpha, 4)
    ([0, 2], 0.0024)
    >>> sel, b, alpha = select_and_band(X, "ss-dme", 2, perm=np.random.default_rng(2).permutation(20))
    >>> sel.tolist(), round(alpha, 4)
    ([2, 3], 0.1)
    """
    fit = _fit(X, method, M, delta=delta, band=band, split=split, perm=perm, levels=levels)
    return fit.selected, fit.band, fit.alpha


def _trial(X: np.ndarray, s2: np.ndarray, keys: Sequence[tuple[str, float]], M: int, band: str,
           gammas: np.ndarray, perm: np.ndarray, lv: dict[str, float]) -> dict[tuple[str, float], tuple]:
    Xs = np.sort(X, axis=1)
    out = {}
    for method, split in keys:
        fit = _fit(Xs, method, M, band=band, split=split, perm=perm, levels=lv, gammas=gammas)
        covers = bd.band_covers(fit.band, true_cdf(s2[fit.selected]))
        fcp = float((~covers).sum()) / max(len(fit.selected), 1)
        out[(method, split)] = (fcp, float(fit.band.width.mean()), fit.best)
    return out


def _task(cfg: dict[str, Any], ss: np.random.SeedSequence) -> dict[str, Any]:
    rng = np.random.default_rng(ss)
    n, t = cfg["n"], cfg["trials"]
    beta, B, s2 = cfg["beta"], cfg["B"], cfg["s2"]
    keys = cfg["keys"]
    gammas = np.asarray(cfg["gammas"])
    lv = ps.levels(B.shape[0], min(cfg["M"], B.shape[0]), DELTA)
    fcp = {k: np.empty(t) for k in keys}
    width = {k: np.empty(t) for k in keys}
    best = {k: np.empty((t, gammas.size)) for k in keys}
    for i in range(t):
        X = calibration_kpis(rng, beta, B, n)
        perm = rng.permutation(n)
        res = _trial(X, s2, keys, cfg["M"], cfg["band"], gammas, perm, lv)
        for k, (f, w, b) in res.items():
            fcp[k][i], width[k][i], best[k][i] = f, w, b
    return {"n": n, "fcp": fcp, "width": width, "best": best}


# --------------------------------------------------------------------------------------------
# Analytic widths (Fig. 6, Lemma 2)
# --------------------------------------------------------------------------------------------


def analytic_width(method: str, n: int, K: int, M: int, *, delta: float = DELTA, split: float = 0.5) -> float:
    """DKW half-width of each method (eq. 11, 14) at the design (K, |S| = M, delta, n).

    sqrt(ln(2 / alpha) / (2 n)) at the method's per-band level alpha (:func:`assay.psdme.levels`); SS-DME's is at
    delta on its n_eval = n - round(split * n) evaluation points (the selection part kept in [1, n - 1]).

    Parameters
    ----------
    method : str
        ``"ps-dme"``, ``"ss-dme"``, ``"bonferroni"`` or ``"naive"``.
    n : int
        Calibration points per model.
    K : int
        Number of models.
    M : int
        Number |S| of selected models.
    delta : float, default 0.1
        Target FCR.
    split : float, default 0.5
        SS-DME's selection fraction.

    Returns
    -------
    float
        The DKW half-width eps.

    Examples
    --------
    >>> {m: round(analytic_width(m, 100, 2000, 1000), 4) for m in ("naive", "bonferroni", "ps-dme", "ss-dme")}
    {'naive': 0.1224, 'bonferroni': 0.2302, 'ps-dme': 0.1794, 'ss-dme': 0.1731}
    """
    if method == "ss-dme":
        n_eval = n - min(max(int(round(split * n)), 1), n - 1)
        return float(cal.dkw_halfwidth(n_eval, delta))
    return float(cal.dkw_halfwidth(n, ps.levels(K, M, delta)[method]))


def crossover_ratio(K: int, S: int, delta: float = DELTA, tau: float | None = None) -> float:
    """Lemma 2 / eq. (15): PS-DME is narrower than SS-DME iff n_eval / n < ln(2/delta) / ln(2/alpha).

    alpha is PS-DME's per-band level: the power calibrator at its optimal tau (eq. 17), or at ``tau``.

    Parameters
    ----------
    K : int
        Number of configurations.
    S : int
        Number |S| selected.
    delta : float, default 0.1
        Target FCR.
    tau : float or None, default None
        The power calibrator's tau; None: the optimal tau.

    Returns
    -------
    float
        The crossover ratio ln(2/delta) / ln(2/alpha).

    Examples
    --------
    >>> round(crossover_ratio(1000, 100), 4), round(crossover_ratio(1000, 100, tau=0.5), 4)
    (0.3596, 0.2653)
    """
    log_alpha = math.log(cal.optimal_power_level(K, S, delta)) if tau is None else cal.power_log_level(K, S, delta, tau)
    return math.log(2.0 / delta) / (math.log(2.0) - log_alpha)


def width_curve(ratios: Sequence[float] = CURVE_RATIOS, taus: Sequence[float] = CURVE_TAUS, *,
                K: int = CURVE_K, S: int = CURVE_S, delta: float = DELTA) -> pd.DataFrame:
    """Fig. 6: widths in units of sqrt(1/(2n)) against the evaluation ratio n_eval / n.

    SS-DME: sqrt(ln(2/delta) / ratio); PS-DME (all n points): sqrt(ln(2/alpha)), flat in the ratio, for every tau
    of ``taus`` and for the optimal tau* (``tau_label`` "tau*"), each row with its crossover ratio (eq. 15,
    :func:`crossover_ratio`).

    Parameters
    ----------
    ratios : sequence of float, default 0.05, 0.10, ..., 0.95
        Evaluation ratios n_eval / n.
    taus : sequence of float, default (0.25, 0.5, 0.75)
        Power-calibrator taus (tau* is always added).
    K : int, default 1000
        Number of configurations.
    S : int, default 100
        Number |S| selected (delta |S| / K = 0.01 at the defaults).
    delta : float, default 0.1
        Target FCR.

    Returns
    -------
    pandas.DataFrame
        ``width-curve`` rows: ``method``, ``ratio``, ``tau``, ``tau_label``, ``width_unit``, ``crossover``, ``K``,
        ``selected`` and ``delta``.

    Examples
    --------
    >>> c = width_curve(ratios=(0.5, 1.0), taus=(0.5,))
    >>> for m, r, t, w in zip(c["method"], c["ratio"], c["tau_label"], c["width_unit"]):
    ...     print(m, r, t or "-", round(w, 4))
    ss-dme 0.5 - 2.4477
    ss-dme 1.0 - 1.7308
    ps-dme 0.5 0.5 3.36
    ps-dme 1.0 0.5 3.36
    ps-dme 0.5 tau* 2.8864
    ps-dme 1.0 tau* 2.8864
    """
    rows = []
    for r in ratios:
        rows.append({"kind": "width-curve", "method": "ss-dme", "ratio": float(r), "tau": float("nan"),
                     "tau_label": "", "width_unit": math.sqrt(math.log(2.0 / delta) / r),
                     "crossover": float("nan"), "K": K, "selected": S, "delta": delta})
    for tau in (*taus, None):
        ln_alpha = math.log(cal.optimal_power_level(K, S, delta)) if tau is None else cal.power_log_level(K, S, delta, tau)
        w = math.sqrt(math.log(2.0) - ln_alpha)
        t = cal.optimal_power_tau(K, S, delta) if tau is None else float(tau)
        for r in ratios:
            rows.append({"kind": "width-curve", "method": "ps-dme", "ratio": float(r), "tau": t,
                         "tau_label": "tau*" if tau is None else f"{tau:g}", "width_unit": w,
                         "crossover": crossover_ratio(K, S, delta, tau), "K": K, "selected": S, "delta": delta})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------------
# The study
# --------------------------------------------------------------------------------------------


def _se(v: np.ndarray) -> float:
    return float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else float("nan")


def _check_positive(**kw: Any) -> None:
    for k, v in kw.items():
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise AssayInputError(f"{k} must be a positive integer, got {v!r}")


@register("psdme-ridge")
def study_ridge(
    *,
    trials: int = 100,
    ns: Sequence[int] = (20, 100),
    methods: Sequence[str] = ALL_METHODS,
    band: str = "dkw",
    split: float = 0.5,
    splits: Sequence[float] = (0.5, 0.6, 0.7),
    K: int = 2000,
    M: int = 1000,
    seed: int | None = 0,
    workers: int = 1,
    progress: Callable[[int, int], None] | None = None,
) -> StudyResult:
    """Synthetic ridge study of PS-DME (paper Sec. 5.2): FCR (Table 1), guaranteed KPI (Fig. 3), widths (Fig. 6).

    The models (:func:`ridge_models`) are drawn once per seed; every trial draws a fresh shared calibration sample
    (:func:`calibration_kpis`), selects the M models with the smallest mean KPI and builds the bands of each method
    (see the module docstring for the process and the rows ``fcr``, ``tradeoff`` and ``width-curve``).

    Parameters
    ----------
    trials : int, default 100
        Calibration samples per n.
    ns : sequence of int, default (20, 100)
        Calibration sample sizes (each >= 2).
    methods : sequence of str, default ("ps-dme", "ss-dme", "bonferroni", "naive")
        Methods of the ``fcr`` rows.
    band : str, default "dkw"
        ``"dkw"`` or ``"berk-jones"`` (``"bj"``).
    split : float, default 0.5
        SS-DME's selection fraction in the ``fcr`` rows.
    splits : sequence of float, default (0.5, 0.6, 0.7)
        SS-DME's selection fractions in the ``tradeoff`` rows (nested selection parts of one permutation).
    K : int, default 2000
        Number of ridge models.
    M : int, default 1000
        Number of selected models (at most K).
    seed : int or None, default 0
        Root seed (:mod:`assay.seeds`): the models come from one child seed, the trials from the other.
    workers : int, default 1
        Processes for the tasks (the numbers do not depend on it).
    progress : callable or None, default None
        Called as ``progress(done, total)`` as tasks finish.

    Returns
    -------
    StudyResult
        ``rows``: ``fcr``, ``tradeoff`` and ``width-curve`` rows (module docstring), with ``paper_fcr`` (App. G.1
        Table 1) and ``paper_width`` (notes/psdme.md section 3) at the paper's design; ``info`` holds the crossover
        ratios, the range of s_k^2, tau* and the per-band levels.

    Raises
    ------
    AssayInputError
        If ``trials``, ``K``, ``M`` or ``workers`` is not a positive integer, ``ns`` is empty or has a size < 2, a
        method or the band is unknown, a split is not in (0, 1), or M > K.

    Examples
    --------
    >>> res = study_ridge(trials=2, ns=(20,), K=20, M=10)
    >>> fcr = res.rows[res.rows["kind"] == "fcr"]
    >>> for m, f, w in zip(fcr["method"], fcr["fcr"], fcr["width"]):
    ...     print(m, round(f, 4), round(w, 4))
    ps-dme 0.0 0.4012
    ss-dme 0.0 0.387
    bonferroni 0.0 0.387
    naive 0.3 0.2737
    """
    ns, methods, band, split, splits = _check_ridge_args(trials, ns, methods, band, split, splits, K, M, workers)

    recorded, ss = resolve_seed(seed)
    model_ss, task_ss = ss.spawn(2)
    models = ridge_models(np.random.default_rng(model_ss), K)

    keys = [(m, split if m == "ss-dme" else 0.0) for m in methods]
    keys += [("ps-dme", 0.0)] + [("ss-dme", s) for s in splits]
    keys = list(dict.fromkeys(keys))
    rel = np.array(sorted(set(TRADEOFF_RELIABILITY) | {round(1 - g, 4) for g in FCR_GAMMAS}))
    gammas = 1.0 - rel
    bname = "dkw" if band == "dkw" else "bj"

    tasks = []
    for n in ns:
        for a in range(0, trials, TRIALS_PER_TASK):
            tasks.append(dict(n=n, trials=min(TRIALS_PER_TASK, trials - a), beta=models["beta"], B=models["B"],
                              s2=models["s2"], M=M, band=bname, keys=keys, gammas=gammas.tolist()))
    out = run_tasks(_task, tasks, seed=task_ss, workers=workers, progress=progress)

    agg: dict[int, dict[str, dict]] = {}
    for n in ns:
        parts = [o for o in out if o["n"] == n]
        agg[n] = {f: {k: np.concatenate([p[f][k] for p in parts]) for k in keys} for f in ("fcp", "width", "best")}

    oracle = float(models["s2"].min()) * chdtri(1.0, gammas)  # min_k s_k^2 chi2_1^{-1}(1 - gamma)
    lv = ps.levels(K, M, DELTA)
    rows = _fcr_rows(agg, ns, methods, band, split, K, M, trials, gammas, lv)
    rows += _tradeoff_rows(agg, ns, splits, band, rel, oracle, trials)
    curve = width_curve()
    table = pd.concat([pd.DataFrame(rows), curve], ignore_index=True, sort=False)
    info = _ridge_info(models, K, M, lv)
    params = {"study": "psdme-ridge", "trials": trials, "ns": list(ns), "methods": list(methods), "band": band,
              "split": split, "splits": list(splits), "K": K, "M": M, "delta": DELTA, "n_train": N_TRAIN,
              "dim": DIM, "lambda_range": list(LAMBDA_RANGE)}
    return StudyResult(params=params, level={"delta": DELTA, "meaning": "target FCR of the selected bands"},
                       n=trials, seed=recorded, tables={"rows": table}, info=info)


def _check_ridge_args(trials: int, ns: Sequence[int], methods: Sequence[str], band: str, split: float,
                      splits: Sequence[float], K: int, M: int, workers: int):
    """Validate :func:`study_ridge`'s arguments; returns ``ns``, ``methods``, ``band``, ``split``, ``splits`` in
    canonical form."""
    _check_positive(trials=trials, K=K, M=M, workers=workers)
    ns = tuple(int(n) for n in ns)
    if not ns or any(n < 2 for n in ns):
        raise AssayInputError(f"ns must be sample sizes >= 2, got {list(ns)!r}")
    methods = tuple(methods)
    bad = [m for m in methods if m not in ALL_METHODS]
    if bad or not methods:
        raise AssayInputError(f"methods must be among {', '.join(ALL_METHODS)}, got {list(methods)!r}")
    band = {"bj": "berk-jones", "berk_jones": "berk-jones"}.get(band, band)
    if band not in ("dkw", "berk-jones"):
        raise AssayInputError(f"band must be 'dkw' or 'berk-jones', got {band!r}")
    for s in (split, *splits):
        if not (0 < float(s) < 1):
            raise AssayInputError(f"splits must be in (0, 1), got {s!r}")
    if M > K:
        raise AssayInputError(f"M (selected) must be at most K = {K}, got {M}")
    return ns, methods, band, float(split), tuple(float(s) for s in splits)


def _fcr_rows(agg: dict, ns: Sequence[int], methods: Sequence[str], band: str, split: float, K: int, M: int,
              trials: int, gammas: np.ndarray, lv: dict) -> list[dict[str, Any]]:
    """The ``fcr`` rows: one per n and method (FCR, width, guaranteed KPI at each FCR gamma)."""
    rows: list[dict[str, Any]] = []
    for n in ns:
        for m in methods:
            k = (m, split if m == "ss-dme" else 0.0)
            f, w, b = agg[n]["fcp"][k], agg[n]["width"][k], agg[n]["best"][k]
            paper_design = band == "dkw" and (K, M) == (2000, 1000) and (m != "ss-dme" or split == 0.5)
            row = {"kind": "fcr", "n": n, "method": m, "band": band, "split": k[1] if m == "ss-dme" else float("nan"),
                   "K": K, "M": M, "delta": DELTA, "level": lv[m],
                   "fcr": float(f.mean()), "fcr_se": _se(f), "miss_any": float((f > 0).mean()),
                   "width": float(w.mean()),
                   "analytic_width": analytic_width(m, n, K, M, split=split) if band == "dkw" else float("nan"),
                   "trials": trials,
                   "paper_fcr": PAPER_FCR.get((n, m)) if paper_design else None,
                   "paper_width": NOTES_WIDTH.get((n, m)) if paper_design else None}
            for g in FCR_GAMMAS:
                j = int(np.argmin(np.abs(gammas - g)))
                col = b[:, j]
                fin = np.isfinite(col)
                row[f"kpi_{1 - g:g}"] = float(col[fin].mean()) if fin.any() else float("inf")
                row[f"kpi_inf_{1 - g:g}"] = int((~fin).sum())
            rows.append(row)
    return rows


def _tradeoff_rows(agg: dict, ns: Sequence[int], splits: Sequence[float], band: str, rel: np.ndarray,
                   oracle: np.ndarray, trials: int) -> list[dict[str, Any]]:
    """The ``tradeoff`` rows (Fig. 3): the best guaranteed KPI per n, method and reliability."""
    rows: list[dict[str, Any]] = []
    for n in ns:
        for k in [("ps-dme", 0.0)] + [("ss-dme", s) for s in splits]:
            b = agg[n]["best"][k]
            for j, r in enumerate(rel):
                col = b[:, j]
                fin = np.isfinite(col)
                rows.append({"kind": "tradeoff", "n": n, "method": k[0], "band": band,
                             "split": k[1] if k[0] == "ss-dme" else float("nan"),
                             "reliability": float(r), "gamma": float(1 - r),
                             "best_kpi": float(col[fin].mean()) if fin.any() else float("inf"),
                             "best_kpi_se": _se(col[fin]) if fin.sum() > 1 else float("nan"),
                             "n_inf": int((~fin).sum()), "oracle_kpi": float(oracle[j]), "trials": trials})
    return rows


def _ridge_info(models: dict, K: int, M: int, lv: dict) -> dict[str, Any]:
    """The study's ``info``: notes on the columns, crossover ratios, the range of s_k^2, tau* and the levels."""
    xo = {"study_design": crossover_ratio(K, M), "fig6_tau*": crossover_ratio(CURVE_K, CURVE_S)}
    xo.update({f"fig6_tau={t:g}": crossover_ratio(CURVE_K, CURVE_S, tau=t) for t in CURVE_TAUS})
    return {
        "notes": [
            "fcr: mean over trials of #{selected k whose band misses the exact F_k} / max(|S|, 1); fcr_se its MC se; "
            "miss_any: share of trials with at least one miss",
            "paper_fcr: App. G.1 Table 1 (SS-DME split 0.5); paper_width: notes/psdme.md section 3 analytic eps",
            "width: mean DKW eps (or BJ critical value, KL scale) over selected models and trials",
            "kpi_*: best guaranteed KPI min_S X*_k(gamma), mean over trials where finite; kpi_inf_*: trials where +inf",
            "tradeoff: Fig. 3; best_kpi mean and se over finite trials, n_inf trials with no finite guarantee; "
            "oracle_kpi = min_k s_k^2 chi2_1^{-1}(1 - gamma)",
            "width-curve: Fig. 6 at delta = 0.1, delta|S|/K = 0.01 (K = 1000, |S| = 100); width_unit = eps * sqrt(2n); "
            "crossover = ln(2/delta) / ln(2/alpha) (eq. 15)",
            "SS-DME uses one random split of the shared calibration sample per trial (tradeoff splits nested)",
        ],
        "crossover": xo,
        "s2_range": [float(models["s2"].min()), float(models["s2"].max())],
        "tau_star": cal.optimal_power_tau(K, M, DELTA),
        "levels": lv,
    }
