"""PS-DME's CDF bands and the KPIs they guarantee (paper eq. 9-10, 13, 18; App. F, eq. 40-42).

Bands are DKW (eq. 9, Massart's constant) or Berk-Jones with an exact critical value (App. F; much
narrower in the tails, which is where high-reliability guarantees live). Both are evaluated on both
sides of every jump of the ECDF. The guaranteed KPI at reliability 1 - gamma is
X*_k(gamma) = inf{x : L_k(x) >= 1 - gamma} (eq. 18): +inf when the band never reaches 1 - gamma
(the result says so). The best guaranteed KPI over the selection and the whole trade-off curve over
gamma are reported.

:func:`cdf_bands` builds the bands at a given per-band level (the level comes from :mod:`assay.psdme.fcr`) on top of
:mod:`assay.stats.bands`, counting a failure (+inf) as mass above every finite x; :func:`guaranteed_kpi` reads
X*_k(gamma) off them.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

from ..stats import bands as bd
from .arguments import _check_band

_FAIL = np.finfo(float).max  # stands in for a failure (+inf): above every finite KPI, still counted in n


def cdf_bands(samples: np.ndarray | Sequence[np.ndarray], alpha: float, band: str = "dkw") -> bd.CDFBand:
    """Simultaneous-in-x CDF bands [L_k(x), U_k(x)] at miscoverage ``alpha``, one row per sample.

    ``band="dkw"``: F-hat_k -+ eps_k with eps_k = sqrt(ln(2 / alpha) / (2 n_k)) (eq. 10a-b / 13a-b, 11 / 14);
    ``"berk-jones"``: the KL inversion with the exact critical value q_{n_k}(1 - alpha) (App. F, eq. 40-42).
    A +inf observation (a failure) counts as mass above every finite x, and comes back as +inf in ``x``.
    Rows may have different n_k (a list of 1-D arrays).

    Parameters
    ----------
    samples : ndarray (K, n) or sequence of 1-D ndarrays
        The KPI observations of each configuration, one row (or one array) per band; +inf marks a failure.
    alpha : float
        Miscoverage of each band (the per-band level, e.g. from :func:`assay.psdme.fcr.levels`).
    band : str, default "dkw"
        ``"dkw"`` or ``"berk-jones"``.

    Returns
    -------
    CDFBand
        The bands of :mod:`assay.stats.bands`, one row per sample: sorted observations ``x`` (NaN pads the shorter
        rows, failures as +inf), counts ``n``, and ``lower`` / ``upper`` (at each x) and ``lower_left`` /
        ``upper_left`` (just before it).

    Raises
    ------
    AssayInputError
        If ``band`` is not ``"dkw"`` or ``"berk-jones"``.

    Examples
    --------
    >>> import numpy as np
    >>> b = cdf_bands([np.array([1., 2., 3., 4.]), np.array([2., np.inf, 5.])], alpha=0.1)
    >>> b.x.tolist(), b.n.tolist()
    ([[1.0, 2.0, 3.0, 4.0], [2.0, 5.0, inf, nan]], [4, 3])
    >>> b.lower.round(4).tolist(), b.width.round(4).tolist()
    ([[0.0, 0.0, 0.1381, 0.3881], [0.0, 0.0, 0.2934, nan]], [0.6119, 0.7066])
    """
    band = _check_band(band)
    if isinstance(samples, np.ndarray) and samples.ndim == 2:
        x = np.where(np.isposinf(samples), _FAIL, samples) if np.isposinf(samples).any() else samples
    else:
        m = max(len(s) for s in samples)
        x = np.full((len(samples), m), np.nan)
        for i, s in enumerate(samples):
            x[i, : len(s)] = np.where(np.isposinf(s), _FAIL, s)
    b = bd.dkw_band(x, alpha) if band == "dkw" else bd.bj_band(x, alpha)
    if not (b.x == _FAIL).any():
        return b
    return dataclasses.replace(b, x=np.where(b.x == _FAIL, np.inf, b.x))  # failures reported as +inf again


def guaranteed_kpi(band: bd.CDFBand, gammas: Sequence[float] | np.ndarray) -> np.ndarray:
    """X*_k(gamma) = inf{x : L_k(x) >= 1 - gamma} (eq. 18), shape (rows of ``band``, len(gammas)).

    +inf where the lower band never reaches 1 - gamma (no KPI can be guaranteed at that reliability).

    Parameters
    ----------
    band : CDFBand
        The CDF bands of the configurations (one row each); L_k is its lower band.
    gammas : sequence of float or ndarray
        The levels gamma.

    Returns
    -------
    ndarray
        The guaranteed KPIs, shape (rows of ``band``, len(gammas)).

    Examples
    --------
    >>> import numpy as np
    >>> band = cdf_bands([np.arange(1.0, 21.0)], alpha=0.1)
    >>> guaranteed_kpi(band, [0.5, 0.1]).tolist()
    [[16.0, inf]]
    """
    gammas = np.asarray(gammas, dtype=float)
    lower = np.where(np.isnan(band.x), -np.inf, band.lower)
    x = band.x
    out = np.full((x.shape[0], len(gammas)), np.inf)
    for j, g in enumerate(gammas):
        ok = lower >= (1.0 - g) - 1e-12
        has = ok.any(axis=1)
        first = ok.argmax(axis=1)
        vals = x[np.arange(x.shape[0]), first]
        out[has, j] = vals[has]
    return out
