"""The baselines SIREN is compared against (paper Section 4), per cell.

M1 naive max of full-pool means; M2 = M1 with a Wald interval on the same
items; M3 single split (argmax on D_1, Wald on E_1); M4 R-split argmax with a Student-t interval
on the split spread (df = R - 1, as the paper describes it; the released code used a normal
quantile instead); the mean of the shortlist (Wald on item row means); and optionally a
nonparametric item bootstrap (resample items with replacement and rerun the whole repeated-split
pipeline; percentile interval, because duplicated items that straddle D and E recreate a small
winner's curse inside each replicate and bias a symmetric interval).

:func:`baselines` computes M1-M4 and the shortlist mean for one cell, :func:`item_bootstrap` the item bootstrap
(also used by the simulation studies), and :func:`_baseline_rows` both for every cell of a design, as the rows
:func:`assay.siren.evaluate` records under ``info["baselines"]``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import stats as _st

from ..data import SirenDesign
from .splits import _hard_weights, repeated_split


def baselines(Z: np.ndarray, in_score: np.ndarray, alpha: float = 0.05) -> dict[str, tuple[float, float, float]]:
    """The paper's reporting baselines for one cell: name -> (estimate, ci_low, ci_high).

    ``m1_naive_max`` has no interval (NaN); ``m2_wald`` is M1 with a Wald interval on the same
    items (sample variance, ddof 0: exactly p(1-p) for 0/1 scores); ``m3_single_split`` uses the
    first split of the design; ``m4_rsplit_t`` a Student-t interval (df = R - 1) on the split
    spread of the held-out means of the per-split argmax (NaN interval when R = 1);
    ``shortlist_mean`` the mean of all K artifacts with a Wald interval on item row means.

    Parameters
    ----------
    Z : ndarray (M, K)
        Scores in [0, 1] of the K artifacts on the M items of the cell.
    in_score : bool ndarray (R, M)
        Scoring-set membership of each split (True = in D_r); the held-out set E_r is the complement.
    alpha : float, default 0.05
        Miscoverage of every interval (two-sided).

    Returns
    -------
    dict of str to (float, float, float)
        ``"m1_naive_max"``, ``"m2_wald"``, ``"m3_single_split"``, ``"m4_rsplit_t"`` and ``"shortlist_mean"``, each
        (estimate, ci_low, ci_high).

    Examples
    --------
    >>> import numpy as np
    >>> from assay.siren.splits import split_design
    >>> rng = np.random.default_rng(1)
    >>> Z = (rng.random((40, 3)) < [0.5, 0.6, 0.7]).astype(float)
    >>> for name, v in baselines(Z, split_design(40, 5, 0.5, np.random.default_rng(2))).items():
    ...     print(name, [round(float(x), 4) for x in v])
    m1_naive_max [0.65, nan, nan]
    m2_wald [0.65, 0.5022, 0.7978]
    m3_single_split [0.6, 0.3853, 0.8147]
    m4_rsplit_t [0.6, 0.524, 0.676]
    shortlist_mean [0.575, 0.495, 0.655]
    """
    Z = np.asarray(Z, dtype=float)
    M, K = Z.shape
    z = _st.norm.ppf(1 - alpha / 2)
    col = Z.mean(axis=0)
    k1 = int(np.argmax(col))
    m1 = float(col[k1])
    se2 = float(Z[:, k1].std()) / math.sqrt(M)
    D = np.asarray(in_score, dtype=bool)
    E = ~D
    S = (D.astype(float) @ Z) / D.sum(axis=1, keepdims=True)
    T = (E.astype(float) @ Z) / E.sum(axis=1, keepdims=True)
    qh = _hard_weights(S)
    Y = (qh * T).sum(axis=1)
    held0 = Z[E[0]] @ qh[0]
    se3 = float(held0.std()) / math.sqrt(len(held0))
    R = len(Y)
    m4 = float(Y.mean())
    if R > 1:
        h4 = _st.t.ppf(1 - alpha / 2, R - 1) * float(Y.std(ddof=1)) / math.sqrt(R)
    else:
        h4 = float("nan")
    rows = Z.mean(axis=1)
    sm = float(rows.mean())
    se_sm = float(rows.std()) / math.sqrt(M)
    return {
        "m1_naive_max": (m1, float("nan"), float("nan")),
        "m2_wald": (m1, m1 - z * se2, m1 + z * se2),
        "m3_single_split": (float(Y[0]), float(Y[0]) - z * se3, float(Y[0]) + z * se3),
        "m4_rsplit_t": (m4, m4 - h4, m4 + h4),
        "shortlist_mean": (sm, sm - z * se_sm, sm + z * se_sm),
    }


def item_bootstrap(
    Z: np.ndarray,
    in_score: np.ndarray,
    n_boot: int,
    rng: np.random.Generator,
    *,
    alpha: float = 0.05,
    batch: int = 128,
    **core: Any,
) -> dict[str, Any]:
    """Nonparametric item bootstrap: resample items with replacement, rerun the whole pipeline.

    The split design is applied by position to each resample (the resampled rows are in random
    order, so this is a fresh random split of the resample). Replicates are computed in batches
    (vectorised, not a Python loop per replicate). Returns the replicate estimates and the
    percentile interval.

    Parameters
    ----------
    Z : ndarray (M, K)
        Scores in [0, 1] of the K artifacts on the M items.
    in_score : bool ndarray (R, M)
        The split design (True = in the scoring set D_r), applied by position to every resample.
    n_boot : int
        Number of bootstrap replicates.
    rng : numpy.random.Generator
        Draws the resampled item indices.
    alpha : float, default 0.05
        Miscoverage of the percentile interval (quantiles alpha / 2 and 1 - alpha / 2).
    batch : int, default 128
        Replicates computed together in one vectorised call.
    **core
        Options of :func:`assay.siren.splits.repeated_split` (``selector``, ``temperature``, ``split_weights``,
        ``instability_threshold``).

    Returns
    -------
    dict
        ``draws`` (n_boot,) the replicate estimates, ``ci_low`` and ``ci_high`` the percentile interval.

    Examples
    --------
    >>> import numpy as np
    >>> from assay.siren.splits import split_design
    >>> rng = np.random.default_rng(1)
    >>> Z = (rng.random((40, 3)) < [0.5, 0.6, 0.7]).astype(float)
    >>> bs = item_bootstrap(Z, split_design(40, 5, 0.5, np.random.default_rng(2)), 200, np.random.default_rng(3))
    >>> len(bs["draws"]), round(bs["ci_low"], 4), round(bs["ci_high"], 4)
    (200, 0.4796, 0.751)
    """
    Z = np.asarray(Z, dtype=float)
    M = Z.shape[0]
    draws = np.empty(n_boot)
    for start in range(0, n_boot, batch):
        b = min(batch, n_boot - start)
        idx = rng.integers(0, M, size=(b, M))
        res = repeated_split(Z[idx], in_score, influence=False, **core)
        draws[start : start + b] = res["theta"]
    lo, hi = np.quantile(draws, [alpha / 2, 1 - alpha / 2])
    return {"draws": draws, "ci_low": float(lo), "ci_high": float(hi)}


def _baseline_rows(design: SirenDesign, in_score: np.ndarray, alpha: float, include_baselines: bool,
                   item_draws: int, rng_item: np.random.Generator, sel_kw: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """M1-M4 and the shortlist mean (:func:`baselines`) and the item bootstrap, as rows per baseline name."""
    base: dict[str, list[dict[str, Any]]] = {}
    if not (include_baselines or item_draws):
        return base
    for cell in design.cells:
        Z = design.scores[cell]
        if include_baselines:
            for name, (est, lo, hi) in baselines(Z, in_score, alpha).items():
                base.setdefault(name, []).append(
                    {"system": cell[0], "budget": cell[1], "estimate": est, "ci_low": lo, "ci_high": hi}
                )
        if item_draws:
            ib = item_bootstrap(Z, in_score, item_draws, rng_item, alpha=alpha, **sel_kw)
            base.setdefault("item_bootstrap", []).append(
                {"system": cell[0], "budget": cell[1], "estimate": float(ib["draws"].mean()),
                 "ci_low": ib["ci_low"], "ci_high": ib["ci_high"]}
            )
    return base
