"""The repeated-split estimator of SIREN (paper Sections 2-3, eq. 4-6, 24): the split design, the selectors and
each item's first-order contribution, batched over N independent problems.

This is the per-cell mathematics; :mod:`assay.siren.array_core` runs it for a whole grid of cells sharing items and
adds the multiplier bootstrap, and the simulation studies and the item bootstrap (:mod:`assay.siren.comparators`)
call :func:`repeated_split` directly.

* R repeated splits of the item pool into a scoring part D_r (size floor(rho M)) and a held-out
  part E_r (the rest); S_r, T_r are the artifacts' means on D_r and E_r (eq. 4-5).
* A selector turns S_r into weights q_r = g(S_r) over the shortlist; Y_r = q_r' T_r; the
  estimate is theta~ = sum_r omega_r Y_r (eq. 6).
* Each item's first-order contribution (eq. 24) adds its held-out effect and its effect through
  the selector's derivative:
      psi_i = sum_r omega_r [ 1{i in E_r} (M/|E_r|) q_r'(Z_i - T_r)
                             + 1{i in D_r} (M/|D_r|) T_r' Dg(S_r) (Z_i - S_r) ].
  Actual split sizes are used, so odd M is exact (M = 1001 -> |D| = 500, |E| = 501).

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
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ..errors import AssayInputError

SELECTORS = ("softmax", "hard", "adaptive")


def split_sizes(M: int, score_fraction: float) -> tuple[int, int]:
    """Return the sizes of a split's scoring and held-out sets.

    (|D_r|, |E_r|) = (floor(rho M), M - floor(rho M)), each at least 1.

    Parameters
    ----------
    M : int
        Number of items (at least 2 for both sets to be non-empty).
    score_fraction : float
        rho, the fraction of the items in the scoring set D_r.

    Returns
    -------
    tuple of (int, int)
        (|D_r|, |E_r|), with |D_r| kept in [1, M - 1].

    Examples
    --------
    >>> split_sizes(10, 0.5), split_sizes(10, 0.01), split_sizes(10, 1.0)
    ((5, 5), (1, 9), (9, 1))
    """
    m = int(math.floor(score_fraction * M))
    m = min(max(m, 1), M - 1)
    return m, M - m


def split_design(
    M: int, reps: int, score_fraction: float, rng: np.random.Generator, *, batch: int | None = None
) -> np.ndarray:
    """Random scoring-set membership, shape ``(R, M)`` (or ``(batch, R, M)``), True = in D_r.

    Each split draws a uniformly random subset of size floor(rho M) independently of the others
    (the k-th smallest of M uniforms marks the subset: O(M) per split, no sort).

    Parameters
    ----------
    M : int
        Number of items.
    reps : int
        Number R of splits.
    score_fraction : float
        rho, the fraction of the items in each scoring set; |D_r| = floor(rho M), kept in [1, M - 1]
        (:func:`split_sizes`).
    rng : numpy.random.Generator
        Draws the uniforms.
    batch : int or None, default None
        When given, that many independent designs stacked along a leading axis.

    Returns
    -------
    bool ndarray (R, M), or (batch, R, M)
        True where the item is in the scoring set D_r; the held-out set E_r is the complement.

    Examples
    --------
    >>> import numpy as np
    >>> D = split_design(10, 3, 0.5, np.random.default_rng(0))
    >>> D.shape, D.sum(axis=1).tolist()
    ((3, 10), [5, 5, 5])
    >>> split_design(10, 3, 0.5, np.random.default_rng(0), batch=2).shape
    (2, 3, 10)
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
