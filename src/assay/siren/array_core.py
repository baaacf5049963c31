"""SIREN's core on arrays (paper Sections 2-3, eq. 6, 24, 72-76): a grid of cells sharing M items -> estimates,
item contributions, the shared multiplier bootstrap, pointwise intervals and the simultaneous band.

:func:`core` takes one items x artifacts array per (system, budget) cell and the split design
(:func:`assay.siren.splits.split_design`) and returns a :class:`SirenEstimate`; no pandas. The cells with more than
one artifact are computed all at once and streamed over blocks of items (:func:`_grid_split`), with the same numbers
as :func:`assay.siren.splits.repeated_split` on each cell.

A Gaussian multiplier bootstrap with ONE multiplier per item, shared by every cell of the grid (eq. 72), gives
pointwise intervals and a simultaneous band over the whole grid; the same draws serve the contrasts
(:mod:`assay.siren.contrasts`). See :mod:`assay.stats.bootstrap` for the two equivalent engines that draw it.

Cells with one artifact (the untuned default, budget 0) involve no selection: their estimate is
the plain mean over all M items (the limit of the repeated-split estimator as R grows; same
expectation, no items discarded) with contribution psi_i = Z_i - mean.

The checks of the core's arguments (:func:`_check_core_params`) live here too; :func:`assay.siren.evaluate` adds
those of the split design.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, NamedTuple, Sequence

import numpy as np

from ..data.siren import score_array
from .. import checks
from ..errors import AssayInputError
from ..stats import bootstrap as boot
from .splits import SELECTORS, _influence_scales, _select


def _is_real(x: Any) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_)) and math.isfinite(float(x))


#: temperatures below this are refused: no mean score resolves differences that fine, and the softmax's derivative
#: (1 / tau) overflows into infinite or NaN intervals
MIN_TEMPERATURE = 1e-8


def _check_core_params(n_boot, alpha, temperature, selector, band, engine, threshold) -> None:
    checks.positive_int(n_boot, "n_boot (quantiles need draws)", minimum=100)
    checks.level(alpha, "alpha (0.05 gives 95% intervals)")
    checks.number(threshold, "instability_threshold", low=0.0, high=1.0, high_open=True)
    if selector not in SELECTORS:
        raise AssayInputError(f"selector must be one of {', '.join(SELECTORS)}, got {selector!r}")
    if selector != "hard" and not (_is_real(temperature) and temperature > 0):
        raise AssayInputError(f"temperature must be a positive number on the score scale (e.g. 0.1), got {temperature!r}")
    if selector != "hard" and temperature < MIN_TEMPERATURE:
        raise AssayInputError(f"temperature {temperature!r} is below {MIN_TEMPERATURE:g}, far finer than any difference "
                              "between mean scores: the softmax is then an argmax whose derivative overflows. For "
                              "argmax selection use selector='hard' (or 'adaptive'); otherwise a temperature such as 0.1")
    if band not in ("studentized", "raw"):
        raise AssayInputError(f"band must be 'studentized' or 'raw', got {band!r}")
    if engine not in ("exact", "multipliers"):
        raise AssayInputError(f"engine must be 'exact' or 'multipliers', got {engine!r}")


class SirenEstimate(NamedTuple):
    """What :func:`core` computes for C cells sharing M items (arrays in the order the cells were given).

    Attributes
    ----------
    theta : (C,) array
        The repeated-split estimate theta~ of each cell (eq. 6).
    psi : (M, C) array
        Centred item contributions psi_i - psi_bar, the summands of G* (eq. 24, 72).
    psi_heldout, psi_selection : (M, C) arrays
        The two terms of psi_i before centring: the held-out effect q_r'Gamma^T_i and the selection effect
        T_r' Dg(S_r) Gamma^S_i, summed over splits with weights omega_r (eq. 24).
    omega : (C, C) array
        Omega_hat = M^-1 sum_i (psi_i - psi_bar)(psi_i - psi_bar)', the covariance of the bootstrap law (eq. 76).
    se : (C,) array
        Standard error sqrt(Omega_cc / M) of each estimate.
    se_heldout, se_selection : (C,) arrays
        The standard error each term of psi would give alone (their sum of squares is not se^2: they covary).
    K : (C,) int array
        Shortlisted artifacts per cell.
    selector : (C,) object array
        The selector each cell used: ``"none"`` (K = 1: no selection), ``"hard"`` or ``"softmax"``.
    pi_win : (C,) array
        Winner instability: 1 - share of the splits won by the modal argmax winner.
    eff_artifacts : (C,) array
        Effective number of artifacts 1 / sum_k q_rk^2, averaged over the splits.
    naive_max : (C,) array
        M1: the best artifact's mean over all M items (the same items that chose it).
    draws : (B, C) array
        Bootstrap replicates of G* = M^-1/2 sum_i zeta_i (psi_i - psi_bar), one multiplier per item shared by
        every cell (eq. 72; exactly N(0, Omega_hat) given psi, eq. 75).
    critical : (C,) array
        Pointwise critical values: the (1 - alpha) quantile of |G*_c|.
    ci_low, ci_high : (C,) arrays
        Pointwise intervals theta -+ critical / sqrt(M).
    band_critical : float
        The (1 - alpha) quantile of max_c |G*_c| / s_c (s_c = sqrt(Omega_cc) for the studentized band, 1 for
        the raw band; cells with s_c = 0 are left out).
    band_low, band_high : (C,) arrays
        The simultaneous band theta -+ band_critical * s_c / sqrt(M), covering every cell at once.
    """

    theta: np.ndarray
    psi: np.ndarray
    psi_heldout: np.ndarray
    psi_selection: np.ndarray
    omega: np.ndarray
    se: np.ndarray
    se_heldout: np.ndarray
    se_selection: np.ndarray
    K: np.ndarray
    selector: np.ndarray
    pi_win: np.ndarray
    eff_artifacts: np.ndarray
    naive_max: np.ndarray
    draws: np.ndarray
    critical: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    band_critical: float
    band_low: np.ndarray
    band_high: np.ndarray


def _cell_arrays(scores: Any) -> tuple[list[np.ndarray], list[str] | None]:
    """Cells as a list of (M, K_c) arrays, compact dtypes kept (:func:`score_array`), and their names when given as
    a mapping."""
    names = None
    if isinstance(scores, Mapping):
        names = [str(k) for k in scores]
        scores = list(scores.values())
    elif isinstance(scores, np.ndarray) and scores.ndim == 3:
        scores = list(scores)
    elif isinstance(scores, np.ndarray):
        scores = [scores]
    Zs = [score_array(Z) for Z in scores]
    Zs = [Z[:, None] if Z.ndim == 1 else Z for Z in Zs]
    if not Zs:
        raise AssayInputError("no cells given")
    M = Zs[0].shape[0]
    for j, Z in enumerate(Zs):
        if Z.ndim != 2 or Z.shape[0] != M or Z.shape[1] < 1:
            raise AssayInputError(f"cell {j}: expected an items x artifacts array with {M} items, got shape {Z.shape}")
    return Zs, names


def core(
    scores: Any,
    in_score: np.ndarray,
    *,
    alpha: float = 0.05,
    rng: np.random.Generator | int | None = None,
    n_boot: int = 2000,
    selector: str = "softmax",
    temperature: float = 0.1,
    split_weights: str | Sequence[float] = "eval_size",
    instability_threshold: float = 0.10,
    band: str = "studentized",
    engine: str = "exact",
    labels: Sequence[str] | None = None,
) -> SirenEstimate:
    """SIREN on arrays: estimates, item contributions and the shared multiplier bootstrap for a grid of cells.

    For each cell c with score matrix Z (M items x K artifacts) and the split design ``in_score`` (D_r):
    S_r, T_r are the artifacts' means on D_r and E_r (eq. 4-5), q_r = g(S_r), Y_r = q_r'T_r and
    theta~ = sum_r omega_r Y_r (eq. 6); psi_i adds the item's held-out and selection effects (eq. 24). A cell
    with one artifact has no selection: theta = mean of Z, psi_i = Z_i - theta. The contributions of all cells,
    centred, give Omega_hat (eq. 76) and the bootstrap draws G* with one multiplier per item (eq. 72), from
    which come the pointwise intervals and the simultaneous band. No pandas: arrays in, arrays out.

    Parameters
    ----------
    scores : sequence of (M, K_c) arrays, (C, M, K) array or mapping name -> (M, K_c) array
        Scores in [0, 1], every cell on the same M items in the same order.
    in_score : bool array (R, M)
        Scoring-set membership of each split (True = in D_r), e.g. from :func:`split_design`.
    alpha : float, default 0.05
        Miscoverage of each pointwise interval and of the band.
    rng : Generator, int or None
        Randomness of the bootstrap draws (the split design is an input).
    n_boot : int, default 2000
        Bootstrap draws B.
    selector, temperature, split_weights, instability_threshold
        As in :func:`evaluate` (``temperature`` is ignored by ``"hard"``).
    band : {"studentized", "raw"}, default "studentized"
        Simultaneous band on max_c |G*_c| / sd_c or on max_c |G*_c| (the paper's raw form).
    engine : {"exact", "multipliers"}, default "exact"
        How G* is drawn (same law; see :mod:`assay.stats.bootstrap`).
    labels : sequence of str, optional
        Cell names used in error messages.

    Returns
    -------
    SirenEstimate
    """
    Zs, names = _cell_arrays(scores)
    _check_core_params(n_boot, alpha, temperature, selector, band, engine, instability_threshold)
    M, C = Zs[0].shape[0], len(Zs)
    D = np.asarray(in_score)
    if D.ndim != 2 or D.shape[1] != M or D.shape[0] < 1:
        raise AssayInputError(f"in_score must be a (splits, {M}) boolean array, got shape {D.shape}")
    labels = list(labels) if labels is not None else (names or [f"cell {j}" for j in range(C)])
    rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    tau = float(temperature) if _is_real(temperature) else float("nan")  # unused by "hard"
    sel_kw = dict(selector=selector, temperature=tau, split_weights=split_weights,
                  instability_threshold=instability_threshold)

    theta = np.empty(C)
    psi_E = np.empty((M, C))
    psi_D = np.empty((M, C))
    K_of = np.array([Z.shape[1] for Z in Zs])
    selector_used = np.empty(C, dtype=object)
    pi_win = np.zeros(C)
    eff_k = np.ones(C)
    naive_max = np.empty(C)

    # Cells with one artifact: no selection, the full-pool mean (see the module docstring).
    for j in np.flatnonzero(K_of == 1):
        z = Zs[j][:, 0].astype(float)
        theta[j] = z.mean()
        naive_max[j] = theta[j]
        psi_E[:, j] = z - theta[j]
        psi_D[:, j] = 0.0
        selector_used[j] = "none"
    # Cells with K > 1: all of them at once, streamed over blocks of items (_grid_split).
    multi = np.flatnonzero(K_of > 1)
    if len(multi):
        res = _grid_split([Zs[j] for j in multi], D, out=(psi_E, psi_D, multi), **sel_kw)
        theta[multi] = res["theta"]
        selector_used[multi] = np.where(res["hard"], "hard", "softmax")
        pi_win[multi] = res["pi_win"]
        eff_k[multi] = res["eff_k"]
        naive_max[multi] = res["naive_max"]

    psi = psi_E + psi_D
    psi -= psi.mean(axis=0, keepdims=True)  # centred in place: no second (M, C) copy
    omega_hat = boot.covariance(psi)
    if not (np.isfinite(theta).all() and np.isfinite(omega_hat).all()):
        bad = [labels[j] for j in np.flatnonzero(~np.isfinite(theta) | ~np.isfinite(np.diag(omega_hat)))]
        raise AssayInputError(f"the estimate or its variance is not finite for {', '.join(bad[:3])}: at temperature "
                              f"{tau:g} the softmax's derivative overflows (near-tied artifacts); use a larger "
                              "temperature (e.g. 0.1) or selector='hard' / 'adaptive'")
    G = boot.draw(psi, n_boot, rng, engine=engine)
    root = math.sqrt(M)
    sd = np.sqrt(np.clip(np.diag(omega_hat), 0.0, None))
    critical = boot.pointwise_critical(G, alpha)
    half = critical / root
    scale = sd if band == "studentized" else np.ones(C)
    crit = boot.simultaneous_critical(G, alpha, scale=scale)
    band_half = crit * scale / root
    return SirenEstimate(
        theta=theta,
        psi=psi,
        psi_heldout=psi_E,
        psi_selection=psi_D,
        omega=omega_hat,
        se=sd / root,
        se_heldout=_centred_norms(psi_E) / M,
        se_selection=_centred_norms(psi_D) / M,
        K=K_of,
        selector=selector_used,
        pi_win=pi_win,
        eff_artifacts=eff_k,
        naive_max=naive_max,
        draws=G,
        critical=critical,
        ci_low=theta - half,
        ci_high=theta + half,
        band_critical=crit,
        band_low=theta - band_half,
        band_high=theta + band_half,
    )


def _centred_norms(x: np.ndarray, rows: int = 8192) -> np.ndarray:
    """Column norms of x minus its column means, a block of rows at a time (no centred (M, C) copy)."""
    mean = x.mean(axis=0)
    ss = np.zeros(x.shape[1])
    for a in range(0, x.shape[0], rows):
        d = x[a : a + rows] - mean
        ss += np.einsum("ij,ij->j", d, d)
    return np.sqrt(ss)


def _rowwise_dot(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """sum_k X[..., k] * Y[..., k] over a short last axis (the artifacts), fused: no (rows, cells, K) product
    temporary, and several times faster than multiplying and reducing over an axis of length K."""
    return np.einsum("mnk,mnk->mn", X, Y)


#: items x columns float64 values a block of :func:`_grid_split` holds at once (about 16 MB)
_BLOCK_ELEMS = 2**21


def _grid_split(Zs: Sequence[np.ndarray], D: np.ndarray, out: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
                **sel_kw: Any) -> dict[str, np.ndarray]:
    """The repeated-split estimator and item contributions for C cells sharing M items, streamed over items.

    Same numbers as :func:`repeated_split` on each cell (up to rounding), without stacking the cells: the cells'
    columns are read a block of items at a time, converted to float64 in that block only (0/1 scores may be held
    as bool or int8, an eighth of the memory), in two passes. Pass 1 accumulates every artifact's sum over D_r and
    over all items with one BLAS product per block; the selection step (:func:`_select`) then runs on the (R, K)
    split means of all cells with the same K at once; pass 2 forms psi_heldout and psi_selection block by block
    with two more products. Memory beyond the inputs and the (M, C) outputs: a few blocks of ~16 MB.

    Returns ``theta``, ``pi_win``, ``hard``, ``eff_k``, ``naive_max`` (C,) and ``psi_heldout``,
    ``psi_selection`` (M, C). With ``out = (psi_E, psi_D, columns)`` the contributions are written into those
    columns of the caller's arrays instead (no second (M, C) pair).
    """
    # The products here are thin (R or K columns against a block of items): BLAS threads gain little on them and
    # spin badly when the cores are busy, so this step runs with one BLAS thread.
    if Zs[0].shape[0] * sum(Z.shape[1] for Z in Zs) < boot._THIN_PRODUCT_ELEMS:
        return _grid_split_blocks(Zs, D, out, **sel_kw)
    with boot._blas_limited(1):
        return _grid_split_blocks(Zs, D, out, **sel_kw)


def _grid_split_blocks(Zs: Sequence[np.ndarray], D: np.ndarray, out_arrays: Any, **sel_kw: Any) -> dict[str, Any]:
    M = Zs[0].shape[0]
    R = D.shape[0]
    C = len(Zs)
    K_of = np.array([Z.shape[1] for Z in Zs])
    # columns grouped by K, so each group's block is a (rows, cells, K) view
    order = np.argsort(K_of, kind="stable")
    groups = [order[K_of[order] == K] for K in np.unique(K_of)]
    width = int(K_of.sum())
    rows = max(1, min(M, _BLOCK_ELEMS // max(width, R)))
    Df = D.astype(float)  # (R, M)
    m = Df.sum(axis=1)
    l = M - m
    Dt = np.ascontiguousarray(Df.T)  # (M, R)
    spans = [(a, min(M, a + rows)) for a in range(0, M, rows)]
    block = np.empty((rows, width))

    def fill(a: int, b: int) -> np.ndarray:
        out = block[: b - a]
        col = 0
        for g in groups:
            for j in g:
                k = K_of[j]
                out[:, col : col + k] = Zs[j][a:b]  # converted to float64 here, one block at a time
                col += k
        return out

    DZ = np.zeros((R, width))
    total = np.zeros(width)
    for a, b in spans:
        Zb = fill(a, b)
        DZ += Dt[a:b].T @ Zb
        total += Zb.sum(axis=0)

    out = {k: np.empty(C) for k in ("theta", "pi_win", "eff_k", "naive_max")}
    out["hard"] = np.zeros(C, dtype=bool)
    weights = []  # per group: (columns, cells, K, held-out weights (R, n K), selection weights, their offsets)
    col = 0
    for g in groups:
        n, K = len(g), int(K_of[g[0]])
        cols = slice(col, col + n * K)
        col += n * K
        dz = DZ[:, cols].reshape(R, n, K).transpose(1, 0, 2)  # (n, R, K)
        tot = total[cols].reshape(n, K)
        S = dz / m[None, :, None]
        T = (tot[:, None, :] - dz) / l[None, :, None]
        sel = _select(S, T, np.broadcast_to(l, (n, R)), **sel_kw)
        for key in ("theta", "pi_win", "eff_k"):
            out[key][g] = sel[key]
        out["hard"][g] = sel["hard"]
        out["naive_max"][g] = tot.max(axis=1) / M
        scale_E, scale_D = _influence_scales(sel["omega"], M, m[None, :], l[None, :])
        WE = (scale_E[..., None] * sel["q"]).transpose(1, 0, 2).reshape(R, n * K)
        WD = (scale_D[..., None] * sel["c"]).transpose(1, 0, 2).reshape(R, n * K)
        cS = (sel["c"] * S).sum(axis=-1)  # (n, R)
        weights.append((cols, g, n, K, WE, WD, (scale_E * sel["Y"]).T, (scale_D * cS).T))

    if out_arrays is None:
        psi_E, psi_D, to = np.empty((M, C)), np.empty((M, C)), np.arange(C)
    else:
        psi_E, psi_D, to = out_arrays
    for a, b in spans:
        Zb = fill(a, b)
        Db = Dt[a:b]
        Eb = 1.0 - Db
        for cols, g, n, K, WE, WD, offE, offD in weights:
            Zg = Zb[:, cols].reshape(b - a, n, K)
            psi_E[a:b, to[g]] = _rowwise_dot(Zg, (Eb @ WE).reshape(b - a, n, K)) - Eb @ offE
            psi_D[a:b, to[g]] = _rowwise_dot(Zg, (Db @ WD).reshape(b - a, n, K)) - Db @ offD
    if out_arrays is None:
        out["psi_heldout"] = psi_E
        out["psi_selection"] = psi_D
    return out
