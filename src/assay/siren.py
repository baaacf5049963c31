"""SIREN: selection-aware intervals for tune-then-deploy procedures.

Paper: Xu, Zhang, Sun, Zhou, Cao, Aggarwal, "Towards Reliable LLM Evaluation: Correcting the
Winner's Curse in Adaptive Benchmarking" (``papers/siren.txt``), Sections 2-4, Appendix B, C.1.

A tuner searched prompts / programs for each system at each budget and kept a frozen shortlist
of K artifacts. Each artifact was then scored on the same pool of M evaluation items. SIREN
estimates, for every (system, budget) cell, the fresh-data score of the *procedure* "select
among the shortlist on data, then deploy", not the score of the winner on the data that chose it:

* R repeated splits of the item pool into a scoring part D_r (size floor(rho M)) and a held-out
  part E_r (the rest); S_r, T_r are the artifacts' means on D_r and E_r (eq. 4-5).
* A selector turns S_r into weights q_r = g(S_r) over the shortlist; Y_r = q_r' T_r; the
  estimate is theta~ = sum_r omega_r Y_r (eq. 6).
* Each item's first-order contribution (eq. 24) adds its held-out effect and its effect through
  the selector's derivative:
      psi_i = sum_r omega_r [ 1{i in E_r} (M/|E_r|) q_r'(Z_i - T_r)
                             + 1{i in D_r} (M/|D_r|) T_r' Dg(S_r) (Z_i - S_r) ].
  Actual split sizes are used, so odd M is exact (M = 1001 -> |D| = 500, |E| = 501).
* A Gaussian multiplier bootstrap with ONE multiplier per item, shared by every cell of the
  grid (eq. 72), gives pointwise intervals, a simultaneous band over the whole grid and
  intervals for pre-specified linear contrasts (tuned vs default, equal-budget system
  comparisons, cross-budget gains). See :mod:`assay.stats.bootstrap` for the two equivalent
  engines that draw it.

Layers
------
:func:`evaluate` is three steps, each usable on its own:

1. :func:`prepare` (from :mod:`assay.data.siren`): a tidy table, a dict of arrays or one array ->
   :class:`~assay.data.SirenDesign`, one items x artifacts array per cell on shared items;
2. :func:`split_design` draws the splits, :func:`core` takes the arrays and the splits and returns a
   :class:`SirenEstimate` (theta~, psi, Omega_hat, bootstrap draws, intervals, band; no pandas), and
   :func:`contrast_core` turns it into :class:`SirenContrasts` for a contrast matrix W;
3. :func:`assay.results.build` packages the numbers into a :class:`SirenResult`.

:func:`repeated_split` is the batched estimator underneath :func:`core` (N independent problems at once),
which the simulation studies and the item bootstrap call directly.

Selectors
---------
``"softmax"`` (default): q = softmax(S / tau). Its Jacobian is (diag(q) - q q') / tau, so the
selection term is c_r'(Z_i - S_r) with c_r = q_r * (T_r - Y_r) / tau: O(K) per split, never a
K x K matrix.

``"hard"``: argmax of S_r (exact ties share the weight equally). Its derivative is zero almost
everywhere, so psi keeps only the held-out term; near ties this misses the variance of the
winner jumping between splits and undercovers (Study B).

``"adaptive"``: per cell, hard when the winner instability pi_win <= ``instability_threshold``
(0.10), softmax otherwise. pi_win = 1 - (share of splits won by the modal winner); with ties the
splits' votes are split equally. With R <= 9 the threshold 0.10 means "every split agrees".

Temperature
-----------
``temperature`` (tau) is on the scale of the scores (accuracies in [0, 1]) and decides what is
being estimated. With tau = 0.1 (the paper's simulations, our default), a 0.05 accuracy lead
gives an artifact exp(0.5) = 1.6 times the weight: a soft argmax. With tau = 1.0 (the paper's
real-data runs) the weights are within a few percent of uniform and theta~ is essentially the
average held-out score of the whole shortlist, not of a tuned winner. The result reports tau and
the effective number of artifacts 1 / sum_k q_k^2 per cell so the reader can see which regime
applies.

Cells with one artifact (the untuned default, budget 0) involve no selection: their estimate is
the plain mean over all M items (the limit of the repeated-split estimator as R grows; same
expectation, no items discarded) with contribution psi_i = Z_i - mean.

Baselines (Section 4): M1 naive max of full-pool means; M2 = M1 with a Wald interval on the same
items; M3 single split (argmax on D_1, Wald on E_1); M4 R-split argmax with a Student-t interval
on the split spread (df = R - 1, as the paper describes it; the released code used a normal
quantile instead); the mean of the shortlist (Wald on item row means); and optionally a
nonparametric item bootstrap (resample items with replacement and rerun the whole repeated-split
pipeline; percentile interval, because duplicated items that straddle D and E recreate a small
winner's curse inside each replicate and bias a symmetric interval).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, NamedTuple, Sequence

import numpy as np
import pandas as pd
from scipy import stats as _st

from .data import SirenDesign, format_budget, parse_budget
from .data.siren import _score_array, prepare
from .errors import AssayInputError
from .results import Result, build, level_alias
from .seeds import resolve_seed
from .stats import bootstrap as boot

__all__ = [
    "evaluate",
    "prepare",
    "core",
    "contrast_core",
    "SirenEstimate",
    "SirenContrasts",
    "SirenResult",
    "Contrast",
    "split_design",
    "repeated_split",
    "baselines",
    "item_bootstrap",
    "SELECTORS",
]

SELECTORS = ("softmax", "hard", "adaptive")
CONTRAST_COLUMNS = ("contrast", "kind", "estimate", "se", "ci_low", "ci_high", "simultaneous_low",
                    "simultaneous_high", "verdict_pointwise", "verdict_simultaneous")
CONTRAST_FAMILIES = ("tuned-vs-default", "budget-gains", "pairwise")


# --------------------------------------------------------------------------------------------
# Split design and the vectorised repeated-split core
# --------------------------------------------------------------------------------------------


def split_sizes(M: int, score_fraction: float) -> tuple[int, int]:
    """(|D_r|, |E_r|) = (floor(rho M), M - floor(rho M)), each at least 1."""
    m = int(math.floor(score_fraction * M))
    m = min(max(m, 1), M - 1)
    return m, M - m


def split_design(
    M: int, reps: int, score_fraction: float, rng: np.random.Generator, *, batch: int | None = None
) -> np.ndarray:
    """Random scoring-set membership, shape ``(R, M)`` (or ``(batch, R, M)``), True = in D_r.

    Each split draws a uniformly random subset of size floor(rho M) independently of the others
    (the k-th smallest of M uniforms marks the subset: O(M) per split, no sort).
    """
    m, _ = split_sizes(M, score_fraction)
    shape = (reps, M) if batch is None else (batch, reps, M)
    u = rng.random(shape)
    kth = np.partition(u, m - 1, axis=-1)[..., m - 1 : m]
    return u <= kth


def _split_weights(split_weights: str | Sequence[float], l: np.ndarray) -> np.ndarray:
    R = l.shape[-1]
    if isinstance(split_weights, str):
        if split_weights == "eval_size":
            return l / l.sum(axis=-1, keepdims=True)
        if split_weights == "uniform":
            return np.full(l.shape, 1.0 / R)
        raise AssayInputError(
            f"split_weights must be 'eval_size', 'uniform' or {R} non-negative numbers, got {split_weights!r}"
        )
    w = np.asarray(split_weights, dtype=float)
    if w.shape != (R,) or not np.all(np.isfinite(w)) or (w < 0).any() or w.sum() <= 0:
        raise AssayInputError(f"split_weights must be {R} non-negative numbers with a positive sum, got {split_weights!r}")
    return np.broadcast_to(w / w.sum(), l.shape)


def _hard_weights(S: np.ndarray) -> np.ndarray:
    top = S.max(axis=-1, keepdims=True)
    is_max = S >= top - 1e-12
    return is_max / is_max.sum(axis=-1, keepdims=True)


def repeated_split(
    Z: np.ndarray,
    in_score: np.ndarray,
    *,
    selector: str = "softmax",
    temperature: float = 0.1,
    split_weights: str | Sequence[float] = "eval_size",
    instability_threshold: float = 0.10,
    influence: bool = True,
) -> dict[str, np.ndarray]:
    """The repeated-split estimator (eq. 6) and its item contributions (eq. 24), batched.

    Parameters
    ----------
    Z : array (N, M, K) or (M, K)
        Scores in [0, 1]: N independent problems (trials, cells with equal K), M items,
        K artifacts.
    in_score : bool array (N, R, M), (R, M) or (1, R, M)
        Scoring-set membership; the held-out set is the complement.

    Returns
    -------
    dict with ``theta`` (N,), ``Y`` (N, R), ``q`` (N, R, K), ``pi_win`` (N,), ``hard`` (N,) bool
    (which selector the adaptive rule used), ``eff_k`` (N,) mean effective number of artifacts,
    and when ``influence``: ``psi_heldout`` and ``psi_selection`` (N, M).
    """
    single = Z.ndim == 2
    Z = np.asarray(Z, dtype=float)
    if single:
        Z = Z[None]
    D = np.asarray(in_score)
    if D.ndim == 2:
        D = D[None]
    D = D.astype(float)
    N, M, K = Z.shape
    m = D.sum(axis=-1)  # (N|1, R)
    l = M - m
    DZ = D @ Z  # (N, R, K)
    S = DZ / m[..., None]
    T = (Z.sum(axis=-2)[:, None, :] - DZ) / l[..., None]  # held-out part = complement of D
    sel = _select(S, T, np.broadcast_to(l, S.shape[:2]), selector=selector, temperature=temperature,
                  split_weights=split_weights, instability_threshold=instability_threshold)
    out = {k: sel[k] for k in ("theta", "Y", "q", "S", "T", "pi_win", "hard", "eff_k", "omega")}
    if not influence:
        return out
    scale_E, scale_D = _influence_scales(sel["omega"], M, m, l)
    # psi_E_i = sum_r sE_r 1{i in E_r} (Z_i'q_r - Y_r) = Z_i' (Et @ (sE q))_i - (Et @ (sE Y))_i, and
    # likewise for the selection term: BLAS products, no (N, M, R) temporaries.
    Dt = np.ascontiguousarray(np.swapaxes(D, -1, -2))  # (N|1, M, R)
    Et = 1.0 - Dt
    c, Y, q = sel["c"], sel["Y"], sel["q"]
    cS = (c * S).sum(axis=-1)  # (N, R)
    psi_E = np.einsum("nmk,nmk->nm", Z, Et @ (scale_E[..., None] * q)) - (Et @ (scale_E * Y)[..., None])[..., 0]
    psi_D = np.einsum("nmk,nmk->nm", Z, Dt @ (scale_D[..., None] * c)) - (Dt @ (scale_D * cS)[..., None])[..., 0]
    out["psi_heldout"] = psi_E
    out["psi_selection"] = psi_D
    return out


def _select(
    S: np.ndarray,
    T: np.ndarray,
    l: np.ndarray,
    *,
    selector: str,
    temperature: float,
    split_weights: str | Sequence[float],
    instability_threshold: float,
) -> dict[str, np.ndarray]:
    """The selection step of eq. 6 for N problems from their split means S, T (N, R, K) and held-out sizes l (N, R):
    weights q = g(S), Y = q'T, theta, the split weights omega, winner instability, which problems the adaptive rule
    made hard, and c (N, R, K), the selector's derivative term of eq. 24 (c = q (T - Y) / tau for the softmax, 0 for
    hard selection)."""
    N = S.shape[0]
    omega = _split_weights(split_weights, l)  # (N, R)
    q_hard = _hard_weights(S)
    votes = q_hard.mean(axis=1)  # (N, K)
    pi_win = 1.0 - votes.max(axis=-1)
    if selector == "softmax":
        use_hard = np.zeros(N, dtype=bool)
    elif selector == "hard":
        use_hard = np.ones(N, dtype=bool)
    elif selector == "adaptive":
        use_hard = pi_win <= instability_threshold + 1e-12
    else:
        raise AssayInputError(f"selector must be one of {', '.join(SELECTORS)}, got {selector!r}")

    if selector != "hard":
        if not (temperature > 0 and np.isfinite(temperature)):
            raise AssayInputError(f"temperature must be a positive number, got {temperature!r}")
        x = S / temperature
        x = np.exp(x - x.max(axis=-1, keepdims=True))
        q_soft = x / x.sum(axis=-1, keepdims=True)
        q = np.where(use_hard[:, None, None], q_hard, q_soft)
    else:
        q = q_hard
    Y = (q * T).sum(axis=-1)  # (N, R)
    theta = (omega * Y).sum(axis=-1)
    # Selection term: T' Dg(S) Gamma^S = c'(Z_i - S) with c = q (T - Y) / tau (softmax), 0 (hard).
    if selector != "hard":
        c = q_soft * (T - Y[..., None]) / temperature
        c = np.where(use_hard[:, None, None], 0.0, c)
    else:
        c = np.zeros_like(q)
    return {
        "theta": theta,
        "Y": Y,
        "q": q,
        "S": S,
        "T": T,
        "pi_win": pi_win,
        "hard": use_hard,
        "eff_k": (1.0 / (q**2).sum(axis=-1)).mean(axis=-1),
        "omega": omega,
        "c": c,
    }


def _influence_scales(omega: np.ndarray, M: int, m: np.ndarray, l: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """omega_r M / |E_r| and omega_r M / |D_r|: the weights of the held-out and selection terms of eq. 24."""
    return omega * M / l, omega * M / m


# --------------------------------------------------------------------------------------------
# The pure core: a grid of cells sharing M items -> estimates, contributions, bootstrap
# --------------------------------------------------------------------------------------------


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
    """Cells as a list of (M, K_c) arrays, compact dtypes kept (:func:`_score_array`), and their names when given as
    a mapping."""
    names = None
    if isinstance(scores, Mapping):
        names = [str(k) for k in scores]
        scores = list(scores.values())
    elif isinstance(scores, np.ndarray) and scores.ndim == 3:
        scores = list(scores)
    elif isinstance(scores, np.ndarray):
        scores = [scores]
    Zs = [_score_array(Z) for Z in scores]
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


class SirenContrasts(NamedTuple):
    """Inference for L linear contrasts W theta over the cells (:func:`contrast_core`).

    Attributes
    ----------
    estimate : (L,) array
        W theta~.
    se : (L,) array
        sqrt(w' Omega_hat w / M), the exact standard deviation of w'G* / sqrt(M) given psi (eq. 75).
    ci_low, ci_high : (L,) arrays
        Pointwise symmetric intervals from the (1 - alpha) quantile of |w'G*|: each valid for one contrast
        chosen in advance.
    simultaneous_low, simultaneous_high : (L,) arrays
        Studentized simultaneous intervals from the quantile of max_l |w_l'G*| / sd_l: valid for all at once.
    critical_simultaneous : float
        That quantile.
    """

    estimate: np.ndarray
    se: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    simultaneous_low: np.ndarray
    simultaneous_high: np.ndarray
    critical_simultaneous: float


def contrast_core(fit: SirenEstimate, W: np.ndarray, *, alpha: float = 0.05) -> SirenContrasts:
    """Pre-specified linear contrasts of the cells, on the same bootstrap draws as the cells (eq. 72, 75).

    Because every cell shares one multiplier per item, w'G* carries the covariance of cells scored on the same
    items, so a paired comparison (tuned vs default, two systems at one budget, two budgets of one system) is
    much tighter than two separate intervals.

    Parameters
    ----------
    fit : SirenEstimate
        The output of :func:`core` (its ``theta``, ``draws``, ``omega`` and ``psi``).
    W : (L, C) array
        One row of cell weights per contrast (e.g. ``[1, -1, 0, ...]`` for cell 0 minus cell 1).
    alpha : float, default 0.05
        Miscoverage of each interval (pointwise) and of the family (simultaneous).
    """
    W = np.atleast_2d(np.asarray(W, dtype=float))
    if W.ndim != 2 or W.shape[1] != len(fit.theta):
        raise AssayInputError(f"W must have one column per cell ({len(fit.theta)}), got shape {W.shape}")
    ci = boot.contrast_inference(fit.theta, W, fit.draws, fit.omega, fit.psi.shape[0], alpha)
    est = ci["estimate"]
    return SirenContrasts(
        estimate=est,
        se=ci["se"],
        ci_low=est - ci["half"],
        ci_high=est + ci["half"],
        simultaneous_low=est - ci["half_simultaneous"],
        simultaneous_high=est + ci["half_simultaneous"],
        critical_simultaneous=float(ci["critical_simultaneous"]),
    )


# --------------------------------------------------------------------------------------------
# Baselines
# --------------------------------------------------------------------------------------------


def baselines(Z: np.ndarray, in_score: np.ndarray, alpha: float = 0.05) -> dict[str, tuple[float, float, float]]:
    """The paper's reporting baselines for one cell: name -> (estimate, ci_low, ci_high).

    ``m1_naive_max`` has no interval (NaN); ``m2_wald`` is M1 with a Wald interval on the same
    items (sample variance, ddof 0: exactly p(1-p) for 0/1 scores); ``m3_single_split`` uses the
    first split of the design; ``m4_rsplit_t`` a Student-t interval (df = R - 1) on the split
    spread of the held-out means of the per-split argmax (NaN interval when R = 1);
    ``shortlist_mean`` the mean of all K artifacts with a Wald interval on item row means.
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


# --------------------------------------------------------------------------------------------
# Contrasts
# --------------------------------------------------------------------------------------------


@dataclass
class Contrast:
    """A pre-specified linear contrast sum_c w_c theta_c over (system, budget) cells."""

    name: str
    weights: dict[tuple[str, float | str], float]
    kind: str = "custom"


_TERM = re.compile(r"^(?:(?P<coef>[-+]?\d*\.?\d+(?:[eE][-+]?\d+)?)\s*\*\s*)?(?P<cell>.+)$")


def _find_cell(ref: str, cells: Sequence[tuple[str, float | str]], expr: str) -> tuple[str, float | str]:
    if "@" not in ref:
        raise AssayInputError(
            f"contrast {expr!r}: term {ref!r} should be SYSTEM@BUDGET (e.g. 'gpt@1.5M - gpt@0')"
        )
    system, budget_text = ref.rsplit("@", 1)
    system = system.strip()
    budget = parse_budget(budget_text.strip())
    systems = list(dict.fromkeys(s for s, _ in cells))
    if system not in systems:
        raise AssayInputError(
            f"contrast {expr!r}: unknown system {system!r}; systems are: {', '.join(systems)}"
        )
    if (system, budget) not in cells:
        have = ", ".join(format_budget(b) for s, b in cells if s == system)
        raise AssayInputError(
            f"contrast {expr!r}: system {system!r} has no budget {budget_text.strip()!r}; its budgets are: {have}"
        )
    return system, budget


def parse_contrast(expr: str, cells: Sequence[tuple[str, float | str]]) -> Contrast:
    """Parse ``"[c*]SYSTEM@BUDGET (+|-) [c*]SYSTEM@BUDGET ..."``.

    Operators must have spaces around them, so system names may contain ``-``. Budgets accept
    suffixes (``500K``, ``1.5M``); the default is budget ``0``.
    """
    text = expr.strip()
    if not text:
        raise AssayInputError("empty contrast expression")
    sign = 1.0
    if text[0] in "+-" and not re.match(r"^[-+]\d", text):
        sign = -1.0 if text[0] == "-" else 1.0
        text = text[1:].strip()
    parts = re.split(r"\s+([+-])\s+", text)
    signs = [sign] + [(-1.0 if op == "-" else 1.0) for op in parts[1::2]]
    weights: dict[tuple[str, float | str], float] = {}
    for sgn, term in zip(signs, parts[0::2]):
        m = _TERM.match(term.strip())
        coef = float(m.group("coef")) if m and m.group("coef") else 1.0
        cell = _find_cell(m.group("cell").strip() if m else term, cells, expr)
        weights[cell] = weights.get(cell, 0.0) + sgn * coef
    if all(w == 0 for w in weights.values()):
        raise AssayInputError(f"contrast {expr!r} has all weights zero")
    return Contrast(name=expr.strip(), weights=weights)


def _label(cell: tuple[str, float | str]) -> str:
    return f"{cell[0]}@{format_budget(cell[1], compact=True)}"


def _is_default(budget: float | str) -> bool:
    return not isinstance(budget, str) and budget == 0


def contrast_family(kind: str, cells: Sequence[tuple[str, float | str]]) -> list[Contrast]:
    """Built-in families: tuned vs default, consecutive-budget gains, equal-budget system pairs."""
    systems = list(dict.fromkeys(s for s, _ in cells))
    out: list[Contrast] = []
    if kind == "tuned-vs-default":
        for s in systems:
            budgets = [b for t, b in cells if t == s]
            if not any(_is_default(b) for b in budgets):
                continue
            for b in budgets:
                if not _is_default(b):
                    a, d = (s, b), (s, 0.0)
                    out.append(Contrast(f"{_label(a)} - {_label(d)}", {a: 1.0, d: -1.0}, kind))
    elif kind == "budget-gains":
        for s in systems:
            budgets = [b for t, b in cells if t == s and not _is_default(b)]
            for b0, b1 in zip(budgets, budgets[1:]):
                a, c = (s, b1), (s, b0)
                out.append(Contrast(f"{_label(a)} - {_label(c)}", {a: 1.0, c: -1.0}, kind))
    elif kind == "pairwise":
        budgets = list(dict.fromkeys(b for _, b in cells))
        for b in budgets:
            have = [s for s in systems if (s, b) in cells]
            for i, s1 in enumerate(have):
                for s2 in have[i + 1 :]:
                    a, c = (s1, b), (s2, b)
                    out.append(Contrast(f"{_label(a)} - {_label(c)}", {a: 1.0, c: -1.0}, kind))
    else:
        raise AssayInputError(f"unknown contrast family {kind!r}; use one of {', '.join(CONTRAST_FAMILIES)}")
    return out


def _resolve_contrasts(spec: Iterable[Any], cells: Sequence[tuple[str, float | str]],
                       empty: list[str] | None = None) -> list[Contrast]:
    """The contrasts asked for. A family with no member in this table (``pairwise`` with one system) is reported in
    ``empty`` when that list is given and other contrasts remain; it is an error when nothing else was asked."""
    if isinstance(spec, (str, Contrast)):
        spec = [spec]
    spec = list(spec)
    out: list[Contrast] = []
    for item in spec:
        if isinstance(item, Contrast):
            for cell in item.weights:
                if cell not in cells:
                    raise AssayInputError(f"contrast {item.name!r} refers to unknown cell {cell!r}")
            out.append(item)
        elif isinstance(item, str) and item.strip() in CONTRAST_FAMILIES:
            fam = contrast_family(item.strip(), cells)
            if not fam and empty is not None and len(spec) > 1:
                empty.append(item.strip())
                continue
            if not fam:
                raise AssayInputError(
                    f"contrast family {item!r} is empty for this table (e.g. 'tuned-vs-default' needs "
                    "a budget-0 default cell and a tuned budget for the same system)"
                )
            out.extend(fam)
        elif isinstance(item, str):
            out.append(parse_contrast(item, cells))
        elif isinstance(item, Mapping):
            weights = {}
            for ref, w in item.items():
                cell = ref if isinstance(ref, tuple) else _find_cell(str(ref), cells, str(item))
                weights[(cell[0], parse_budget(cell[1]))] = float(w)
            c = Contrast(" + ".join(f"{w:g}*{_label(k)}" for k, w in weights.items()), weights)
            out.append(_resolve_contrasts([c], cells)[0])
        else:
            raise AssayInputError(f"cannot read contrast {item!r}: give an expression string, a family name or a dict")
    return out


# --------------------------------------------------------------------------------------------
# Result
# --------------------------------------------------------------------------------------------


class SirenResult(Result):
    """SIREN estimates per (system, budget) cell with pointwise CIs, a simultaneous band,
    contrasts and baselines.

    Tables: ``cells`` (main), ``contrasts``. ``baselines`` maps a baseline name to its rows.
    """

    method = "siren"
    main_table = "cells"

    @classmethod
    def _table_names(cls) -> tuple[str, ...]:
        return ("cells", "contrasts")

    @property
    def cells(self) -> pd.DataFrame:
        return self.tables["cells"]

    @property
    def contrasts(self) -> pd.DataFrame:
        """Contrast estimates and intervals (an empty frame with the usual columns when none)."""
        if "contrasts" not in self.tables:
            self.tables["contrasts"] = pd.DataFrame({c: [] for c in CONTRAST_COLUMNS})
        return self.tables["contrasts"]

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        d.setdefault("contrasts", [])
        return d

    def _restore(self) -> None:
        con = self.tables.get("contrasts")
        if con is not None and con.empty and len(con.columns) == 0:
            del self.tables["contrasts"]  # recreated with its columns by .contrasts
        for recs in self.info.get("baselines", {}).values():
            for r in recs:
                for k in ("estimate", "ci_low", "ci_high"):
                    if r.get(k) is None:
                        r[k] = float("nan")

    @property
    def baselines(self) -> dict[str, list[dict[str, Any]]]:
        return self.info.get("baselines", {})

    def baselines_frame(self) -> pd.DataFrame:
        rows = [dict(method=k, **r) for k, recs in self.baselines.items() for r in recs]
        return pd.DataFrame(rows)

    def cell(self, system: str, budget: Any) -> dict[str, Any]:
        b = parse_budget(budget)
        t = self.cells
        hit = t[(t["system"] == system) & (t["budget"].map(parse_budget) == b)]
        if hit.empty:
            raise AssayInputError(f"no cell system={system!r} budget={budget!r}")
        return hit.iloc[0].to_dict()

    def summary(self) -> str:
        lv = self.level
        lines = [
            f"SIREN (assay {self.version}): {len(self.cells)} cells, M = {self.n} items, "
            f"R = {self.params.get('reps')}, selector = {self.params.get('selector')}, "
            f"tau = {self.params.get('temperature')}, seed = {self.seed}",
            f"{1 - lv.get('alpha', 0.05):.0%} pointwise intervals; simultaneous band over the grid "
            f"({self.info.get('band', {}).get('type', '')}, critical value "
            f"{self.info.get('band', {}).get('critical', float('nan')):.3f})",
        ]
        cols = ["system", "budget", "K", "estimate", "ci_low", "ci_high", "band_low", "band_high", "naive_max"]
        lines.append(self.cells[[c for c in cols if c in self.cells]].to_string(index=False, float_format=lambda x: f"{x:.4f}"))
        if not self.contrasts.empty:
            lines.append("contrasts:")
            lines.append(self.contrasts[["contrast", "estimate", "ci_low", "ci_high"]].to_string(index=False, float_format=lambda x: f"{x:+.4f}"))
        for w in self.info.get("warnings", []):
            lines.append(f"warning: {w}")
        return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# The public entry point
# --------------------------------------------------------------------------------------------


def _is_real(x: Any) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_)) and math.isfinite(float(x))


#: temperatures below this are refused: no mean score resolves differences that fine, and the softmax's derivative
#: (1 / tau) overflows into infinite or NaN intervals
MIN_TEMPERATURE = 1e-8


def _selection_noise(Z: np.ndarray, m_score: int) -> float:
    """Standard deviation of the scoring-split difference between a cell's two best artifacts (by full mean):
    how much their selection scores move from split to split. A softmax temperature far below it makes the
    selection a hard switch driven by noise, where the linearised (delta-method) interval is unreliable."""
    if Z.shape[1] < 2 or m_score < 1:
        return 0.0
    top = np.argsort(-Z.mean(axis=0), kind="stable")[:2]
    d = Z[:, top[0]].astype(float) - Z[:, top[1]]  # float: scores may be stored as uint8 / int8
    return float(d.std(ddof=1) / math.sqrt(m_score)) if Z.shape[0] > 1 else 0.0


def _check_params(reps, score_fraction, n_boot, alpha, temperature, selector, band, engine, threshold) -> None:
    for name, v in (("score_fraction", score_fraction), ("alpha", alpha), ("instability_threshold", threshold)):
        if not _is_real(v):
            raise AssayInputError(f"{name} must be a number, got {v!r}")
    if isinstance(reps, bool) or not isinstance(reps, (int, np.integer)) or reps < 1:
        raise AssayInputError(f"reps must be a positive integer, got {reps!r}")
    if not (0 < score_fraction < 1):
        raise AssayInputError(f"score_fraction must be in (0, 1), got {score_fraction!r}")
    _check_core_params(n_boot, alpha, temperature, selector, band, engine, threshold)


def _check_core_params(n_boot, alpha, temperature, selector, band, engine, threshold) -> None:
    for name, v in (("alpha", alpha), ("instability_threshold", threshold)):
        if not _is_real(v):
            raise AssayInputError(f"{name} must be a number, got {v!r}")
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 100:
        raise AssayInputError(f"n_boot must be an integer >= 100 (quantiles need draws), got {n_boot!r}")
    if not (0 < alpha < 1):
        raise AssayInputError(f"alpha must be in (0, 1) (0.05 gives 95% intervals), got {alpha!r}")
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
    if not (0 <= threshold < 1):
        raise AssayInputError(f"instability_threshold must be in [0, 1), got {threshold!r}")


def evaluate(
    table: Any,
    *,
    reps: int = 10,
    score_fraction: float = 0.5,
    selector: str = "softmax",
    temperature: float = 0.1,
    split_weights: str | Sequence[float] = "eval_size",
    n_boot: int = 2000,
    alpha: float = 0.05,
    contrasts: Iterable[Any] = (),
    seed: int | np.random.Generator | None = None,
    columns: Mapping[str, str] | None = None,
    on_missing: str = "error",
    delta: float | None = None,
    band: str = "studentized",
    engine: str = "exact",
    instability_threshold: float = 0.10,
    item_bootstrap_draws: int = 0,
    include_baselines: bool = True,
) -> SirenResult:
    """Selection-aware estimates and intervals for every (system, budget) cell (SIREN, eq. 6, 24, 72).

    The three layers: :func:`prepare` (table -> :class:`SirenDesign`), :func:`split_design` and :func:`core`
    (arrays -> :class:`SirenEstimate`), :func:`contrast_core` for the contrasts, then
    :func:`assay.results.build`.

    Parameters
    ----------
    table : DataFrame, dict of arrays, SirenDesign or array
        Tidy long table with columns ``system, budget, artifact, item, score`` (rename yours with
        ``columns``), or ``{(system, budget): items x artifacts array}``.
    reps : int, default 10
        Number of repeated splits R.
    score_fraction : float, default 0.5
        rho: the scoring part of each split has floor(rho M) items, the held-out part the rest.
    selector : {"softmax", "hard", "adaptive"}, default "softmax"
        See the module docstring.
    temperature : float, default 0.1
        Softmax temperature tau on the score scale. 0.1 is a soft argmax on accuracies; 1.0 is
        nearly uniform averaging of the shortlist. Recorded in the result.
    split_weights : "eval_size" | "uniform" | sequence, default "eval_size"
        omega_r proportional to |E_r| (equal here, since every split has the same size), equal,
        or given.
    n_boot : int, default 2000
        Bootstrap draws B.
    alpha : float, default 0.05
        Miscoverage: 0.05 gives 95% pointwise intervals and a 95% simultaneous band.
    delta : float, optional
        assay's common name for the error level (DESIGN: ``delta`` in every function); when given it is used as
        ``alpha``.
    contrasts : iterable
        Expressions (``"A@1.5M - A@0"``), families (``"tuned-vs-default"``, ``"budget-gains"``,
        ``"pairwise"``), dicts ``{"A@1.5M": 1, "A@0": -1}`` or :class:`Contrast` objects.
    seed : int, Generator or None
        Randomness for the splits and the bootstrap (recorded; None draws and records one).
    band : {"studentized", "raw"}, default "studentized"
        Simultaneous band from the quantile of max_c |G*_c| / sd_c (equal pointwise level in every
        cell) or of max_c |G*_c| (the paper's raw form: equal half-widths).
    engine : {"exact", "multipliers"}, default "exact"
        How the multiplier draws are generated; same law (see :mod:`assay.stats.bootstrap`).
    instability_threshold : float, default 0.10
        pi_win threshold of the adaptive selector.
    item_bootstrap_draws : int, default 0
        If > 0, also run the nonparametric item bootstrap with this many replicates per cell.
    include_baselines : bool, default True
        Compute M1-M4 and the shortlist mean.

    Returns
    -------
    SirenResult
        Main table ``cells`` (one row per cell; ``n`` = the M evaluation items shared by every cell).
    """
    alpha = level_alias(alpha, delta, 0.05)
    _check_params(reps, score_fraction, n_boot, alpha, temperature, selector, band, engine, instability_threshold)
    seed = resolve_seed(seed)
    design = prepare(table, columns=columns, on_missing=on_missing)
    empty_families: list[str] = []
    contrast_list = _resolve_contrasts(contrasts, design.cells, empty_families)
    if not contrast_list and empty_families:
        raise AssayInputError(f"the contrast families {', '.join(map(repr, empty_families))} are empty for this table "
                              "('pairwise' compares systems at the same budget; 'tuned-vs-default' needs a budget-0 "
                              "cell and a tuned budget for the same system)")
    M = design.n_items
    rng_split, rng_boot, rng_item = (np.random.default_rng(s) for s in seed.spawn(3))
    in_score = split_design(M, reps, score_fraction, rng_split)
    tau = float(temperature) if _is_real(temperature) else float("nan")  # unused by "hard"
    sel_kw = dict(selector=selector, temperature=tau, split_weights=split_weights,
                  instability_threshold=instability_threshold)

    fit = core([design.scores[c] for c in design.cells], in_score, alpha=alpha, rng=rng_boot, n_boot=n_boot,
               band=band, engine=engine, labels=[_label(c) for c in design.cells], **sel_kw)
    tables = {"cells": _cells_table(design.cells, fit)}
    contrast_info: dict[str, Any] = {}
    if contrast_list:
        con = contrast_core(fit, _contrast_matrix(contrast_list, design.cells), alpha=alpha)
        tables["contrasts"] = _contrasts_table(contrast_list, con)
        contrast_info = {"critical_simultaneous": con.critical_simultaneous}

    m, l = split_sizes(M, score_fraction)
    params = {
        "reps": int(reps),
        "score_fraction": float(score_fraction),
        "selector": selector,
        "temperature": tau,
        "split_weights": split_weights if isinstance(split_weights, str) else list(map(float, split_weights)),
        "n_boot": int(n_boot),
        "band": band,
        "engine": engine,
        "instability_threshold": float(instability_threshold),
        "item_bootstrap_draws": int(item_bootstrap_draws),
        "on_missing": on_missing,
    }
    info = {
        "design": {"items": M, "score_size": m, "heldout_size": l, "cells": len(design.cells),
                   "dropped_items": len(design.dropped_items)},
        "band": {"type": band, "critical": fit.band_critical, "level": 1 - alpha},
        "contrast_band": contrast_info,
        "baselines": _baseline_rows(design, in_score, alpha, include_baselines, int(item_bootstrap_draws),
                                    rng_item, sel_kw),
    }
    return build(
        SirenResult,
        params=params,
        n=M,
        n_meaning="evaluation items shared by every cell",
        meaning=(
            f"each [ci_low, ci_high] covers its cell's procedure-level score with probability "
            f"about {1 - alpha:.0%} (asymptotic, given the frozen shortlist); [band_low, band_high] "
            f"cover every cell at once with probability about {1 - alpha:.0%}"
        ),
        seed=seed,
        tables=tables,
        alpha=alpha,
        warnings=[*(f"contrast family {f!r} has no member in this table ('pairwise' compares different systems at "
                    "the same budget; 'tuned-vs-default' needs a budget-0 cell and a tuned budget of the same system): "
                    "left out" for f in empty_families),
                  *_warnings(design, fit, tau, instability_threshold, m)],
        info=info,
    )


def _cells_table(cells: Sequence[tuple[str, float | str]], fit: SirenEstimate) -> dict[str, Any]:
    return {
        "system": [c[0] for c in cells],
        "budget": [c[1] for c in cells],
        "K": fit.K,
        "selector": fit.selector,
        "estimate": fit.theta,
        "ci_low": fit.ci_low,
        "ci_high": fit.ci_high,
        "band_low": fit.band_low,
        "band_high": fit.band_high,
        "se": fit.se,
        "se_heldout": fit.se_heldout,
        "se_selection": fit.se_selection,
        "pi_win": fit.pi_win,
        "eff_artifacts": fit.eff_artifacts,
        "naive_max": fit.naive_max,
        "optimism": fit.naive_max - fit.theta,
    }


def _contrast_matrix(contrast_list: Sequence[Contrast], cells: Sequence[tuple[str, float | str]]) -> np.ndarray:
    index = {c: j for j, c in enumerate(cells)}
    W = np.zeros((len(contrast_list), len(cells)))
    for i, con in enumerate(contrast_list):
        for cell, w in con.weights.items():
            W[i, index[cell]] += w
    return W


def _contrasts_table(contrast_list: Sequence[Contrast], con: SirenContrasts) -> dict[str, Any]:
    table: dict[str, Any] = {
        "contrast": [c.name for c in contrast_list],
        "kind": [c.kind for c in contrast_list],
        "estimate": con.estimate,
        "se": con.se,
        "ci_low": con.ci_low,
        "ci_high": con.ci_high,
        "simultaneous_low": con.simultaneous_low,
        "simultaneous_high": con.simultaneous_high,
    }
    # one verdict per interval: the pointwise one answers a single contrast chosen in advance; a reader who
    # scans several contrasts for a finding must use the simultaneous one (it holds for all at once)
    for kind, lo, hi in (("pointwise", "ci_low", "ci_high"), ("simultaneous", "simultaneous_low", "simultaneous_high")):
        table[f"verdict_{kind}"] = np.where(table[lo] > 0, "positive", np.where(table[hi] < 0, "negative", "inconclusive"))
    return table


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


def _warnings(design: SirenDesign, fit: SirenEstimate, tau: float, threshold: float, m_score: int) -> list[str]:
    """The sentences a reader must see beside the numbers: unstable hard selection, degenerate cells, a
    temperature below the selection noise, intervals reaching outside [0, 1]."""
    cells = design.cells
    out: list[str] = []
    for j in np.flatnonzero((fit.selector == "hard") & (fit.pi_win > threshold)):
        out.append(
            f"{_label(cells[j])}: hard selection with winner instability pi_win = {fit.pi_win[j]:.2f} > "
            f"{threshold}: the interval ignores the winner jumping between splits and can "
            "undercover (use selector='softmax')."
        )
    variance = np.diag(fit.omega)
    for j, cell in enumerate(cells):
        Z = design.scores[cell]
        if np.ptp(Z) == 0 or variance[j] <= 1e-24:
            # judged on the data (a constant cell with K > 1 leaves float residue ~1e-33 in the variance)
            out.append(
                f"{_label(cell)}: every item has the same score, so the interval has zero width; the "
                "normal approximation says nothing here (score more items or report an exact binomial bound)."
            )
        elif fit.selector[j] == "softmax" and tau < 0.25 * _selection_noise(Z, m_score):
            out.append(
                f"{_label(cell)}: temperature {tau:g} is far below the split-to-split noise of the two best "
                f"artifacts' selection scores ({_selection_noise(Z, m_score):.3g}): the softmax acts as a hard switch "
                "driven by noise, and its linearised interval is unreliable (it can reach outside the scores' "
                "range). Use a temperature of at least that noise, or selector='hard' / 'adaptive'."
            )
    for j in np.flatnonzero((fit.ci_low < -1e-9) | (fit.ci_high > 1 + 1e-9)):
        out.append(f"{_label(cells[j])}: the interval [{fit.ci_low[j]:.3f}, {fit.ci_high[j]:.3f}] reaches "
                   "outside the scores' range [0, 1]; the normal approximation is strained for this cell")
    return out
