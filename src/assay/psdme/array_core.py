"""PS-DME's core on arrays (paper Sec. 3, eq. 3, 10-18; App. F): selection, per-band level, bands and guaranteed
KPIs for K samples, returned as a :class:`PsdmeCore`; no pandas.

:func:`core` chains the parts: the selection rule (:mod:`assay.psdme.selection`), the level of the method
(:mod:`assay.psdme.fcr`), the bands of the selected configurations and their guaranteed KPIs
(:mod:`assay.psdme.cdf`). The simulation study (``assay study psdme-ridge``) calls it on a KPI matrix per trial.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, NamedTuple, Sequence

import numpy as np

from .. import checks
from ..errors import AssayInputError
from ..stats import bands as bd
from ..stats import calibrate as cal
from .cdf import cdf_bands, guaranteed_kpi
from .arguments import (
    CORE_METHODS,
    DEFAULT_GAMMAS,
    _check_band,
    _check_gammas,
    _check_samples,
)
from .fcr import _fix_calibrator, levels
from .selection import select_configurations


class PsdmeCore(NamedTuple):
    """What :func:`core` returns (paper notation; K configurations, selected set K-hat of size |K-hat|)."""

    method: str
    """The method whose per-band level is used: ps-dme, ss-dme, bonferroni or naive."""
    selected: np.ndarray
    """Indices k in K-hat = S(D^sel) (eq. 3), in the rule's order; rows of ``band`` and ``x_star`` follow it."""
    alpha: float
    """Per-band miscoverage: delta (ss-dme, naive; eq. 11), f^{-1}(K / (delta |K-hat|)) (ps-dme; eq. 14), delta / K
    (bonferroni)."""
    levels: dict
    """alpha of every method at this design (:func:`levels`)."""
    band: bd.CDFBand | None
    """L_k, U_k of the selected configurations on both sides of every jump (eq. 10, 13, 42); None if K-hat is
    empty."""
    width: np.ndarray
    """Per selected configuration: eps_k (DKW, eq. 11 / 14) or the BJ critical value q_{n_k}(1 - alpha) (eq. 40)."""
    gammas: np.ndarray
    """The failure probabilities gamma of ``x_star``."""
    x_star: np.ndarray
    """X*_k(gamma) (eq. 18), shape (|K-hat|, len(gammas)); +inf where the band never reaches 1 - gamma."""
    best: np.ndarray
    """min over K-hat of X*_k(gamma), per gamma (+inf when no selected band reaches 1 - gamma, or K-hat is empty)."""
    best_index: np.ndarray
    """The index k attaining ``best`` (first in ``selected`` order), -1 where ``best`` is +inf."""
    tau: float | None
    """The power calibrator's tau (eq. 12) behind ps-dme's level; None for a calibrator function or empty K-hat."""


def core(
    samples: np.ndarray | Sequence[np.ndarray],
    select_samples: np.ndarray | Sequence[np.ndarray] | None = None,
    *,
    delta: float,
    select: Any = "all",
    method: str = "ps-dme",
    band: str = "dkw",
    calibrator: Any = "optimal",
    max_selected: int | None = None,
    gammas: Iterable[float] = DEFAULT_GAMMAS,
    names: Sequence[str] | None = None,
    design_levels: Mapping[str, float] | None = None,
) -> PsdmeCore:
    """Post-selection CDF bands and guaranteed KPIs on arrays (PS-DME Sec. 3, eq. 3, 10-18; App. F).

    Selects K-hat = S(D^sel) with the rule ``select`` (eq. 3), sets the per-band level of ``method`` (eq. 11, 14),
    builds the bands of the selected configurations on ``samples`` (eq. 10 / 13 DKW, eq. 42 Berk-Jones) and reads
    the guaranteed KPI X*_k(gamma) = inf{x : L_k(x) >= 1 - gamma} off each (eq. 18). FCR <= delta (eq. 8):
    Theorem 1 (ps-dme, full data, any selection rule, calibrator fixed in advance), Lemma 1 (ss-dme, disjoint
    selection data); bonferroni covers all K bands with probability >= 1 - delta; naive has no guarantee.

    Parameters
    ----------
    samples : (K, n) array or list of K 1-D arrays
        The data D_k the bands are built on (eq. 1; D_k^eval for ss-dme). KPI, lower is better; +inf = failure.
    select_samples : same form, optional
        The data the rule selects on: D_k^sel for ss-dme (required; see :func:`split_samples`), else ``samples``.
    delta : float
        FCR level (family-wise error of all K bands for bonferroni).
    select : "all" | "top:K" | "below:VALUE" | callable
        The selection rule (:func:`select_configurations`).
    method : {"ps-dme", "ss-dme", "bonferroni", "naive"}
    band : {"dkw", "berk-jones"}
    calibrator : "optimal" | float | callable
        PS-DME's e-calibrator: the power family (eq. 12) at its optimal tau (eq. 17), at a given tau, or any
        calibrator function.
    max_selected : int, optional
        For a rule whose |K-hat| depends on the data and the "optimal" calibrator: the largest |K-hat| planned for,
        declared before the data (default K); tau is optimal for it and fixed in advance, as Theorem 1 needs.
    gammas : iterable of float
        Failure probabilities gamma in (0, 1) of the guaranteed KPIs.
    names : sequence of str, optional
        Configuration names, for a callable rule.
    design_levels : mapping, optional
        :func:`levels` already computed for this design (K, |K-hat|, delta, calibrator), to skip recomputing them.

    Returns
    -------
    PsdmeCore
    """
    delta = checks.level(delta)
    if method not in CORE_METHODS:
        raise AssayInputError(f"method must be one of {', '.join(CORE_METHODS)} (bands() also takes 'auto'), "
                              f"got {method!r}")
    band = _check_band(band)
    g = _check_gammas(gammas)
    samples = _check_samples(samples)
    K = len(samples)
    if select_samples is None:
        if method == "ss-dme":
            raise AssayInputError("ss-dme needs select_samples: a selection split disjoint from samples "
                                  "(see split_samples)")
        select_samples = samples
    else:
        select_samples = _check_samples(select_samples, "select_samples")
        if len(select_samples) != K:
            raise AssayInputError(f"select_samples has {len(select_samples)} configurations, samples {K}")
    if names is not None and len(names) != K:
        raise AssayInputError(f"names has {len(names)} entries for {K} configurations")
    calibrator, _, _ = _fix_calibrator(select, K, delta, calibrator, max_selected)

    S = select_configurations(select, select_samples, names)
    lv = levels(K, len(S), delta, calibrator) if design_levels is None else dict(design_levels)
    alpha = lv[method]
    if len(S):
        rows = samples[S] if isinstance(samples, np.ndarray) else [samples[i] for i in S]
        b = cdf_bands(rows, alpha, band)
        xs = guaranteed_kpi(b, g)
        best = xs.min(axis=0)
        best_index = np.where(np.isfinite(best), S[xs.argmin(axis=0)], -1)
        width = np.asarray(b.width)
    else:
        b, width = None, np.empty(0)
        xs = np.full((0, g.size), np.inf)
        best, best_index = np.full(g.size, np.inf), np.full(g.size, -1)
    tau = (cal.optimal_power_tau(K, len(S), delta) if (len(S) and calibrator in (None, "optimal")) else
           (float(calibrator) if isinstance(calibrator, (int, float)) else None))
    return PsdmeCore(method=method, selected=S, alpha=alpha, levels=lv, band=b, width=width, gammas=g, x_star=xs,
                     best=best, best_index=best_index, tau=tau)
