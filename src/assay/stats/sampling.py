"""Sampling a finite bank without replacement, with a floor and recorded probabilities, and the doubly robust
increments that estimate the bank's mean from such a sample: the one engine under every sampled estimate in assay
(FAQ's active querying, the adaptive comparison, the grader audit). Method-free: arrays in, arrays out.

Design. A bank of N questions (answers, cases); R_t the ones not drawn before draw t. Draw t picks I_t from R_t with

    q_t(j) = (1 - floor) h_t(j) + floor / |R_t|      (j in R_t; 0 elsewhere),

h_t a distribution on R_t (the caller's scores, normalised), each row rescaled to sum to 1 (which removes rounding,
and spreads a row whose h vanished on R_t uniformly). Every question left keeps probability at least floor / |R_t|,
so the weights below stay bounded by |R_t| / floor. The probabilities are recorded with each draw, so the estimate
can be recomputed (and checked) from the draws alone.

Increment. For a per-question value z (a score, a label, a difference of two scores) and a prediction f of it known
before the draw,

    phi_t = (1/N) [ sum_{s<t} z(I_s) + sum_{j in R_t} f(j) + (z(I_t) - f(I_t)) / q_t(I_t) ],

and E[phi_t | past] = theta = (1/N) sum_j z(j) exactly (Horvitz-Thompson on the part not seen, the rest known), so
phi_t - theta are martingale differences: their mean, or any predictably weighted mean, estimates theta, and the
confidence sequences of :mod:`assay.stats.sequences` hold over them. Whatever z(I_t) turns out to be in [low, high],
phi_t lies in [L_t, U_t] with

    L_t = (1/N) [ sum_{s<t} z(I_s) + sum_{R_t} f + min_{j in R_t} (low - f(j)) / q_t(j) ]    (U_t with high, max),

both known before the answer. With uniform draws and f = 0, phi_t = (1/N) [sum_{s<t} z + |R_t| z(I_t)], the sequential
form of the sample mean without replacement, and L_t, U_t narrow as |R_t| / N: with the whole bank drawn the mean is
known exactly.

Who uses what: FAQ draws one question per model per round with scores h that change every round (:func:`floored`,
:func:`draw`, :func:`increment`); the adaptive comparison draws a round's questions with fixed scores
(:func:`fixed_weight_draws`, or :func:`uniform_draws` without a history) and bounds every claim's increments
(:func:`increment_terms`, :func:`bounds`); the audit draws with fixed weights and replays its plan with the same
generator. The random generator is used exactly as each did before this module existed: one uniform per row and draw
(:func:`draw`), or one permutation per round (:func:`uniform_draws`).
"""

from __future__ import annotations

from typing import Iterator, NamedTuple

import numpy as np

__all__ = ["floored", "draw", "uniform_draws", "fixed_weight_draws", "Draw", "increment", "increment_terms", "bounds",
           "running_sums", "pair_terms"]

#: the largest number of (pair x question) cells :func:`pair_terms` works on at once (32 MB a float array)
CELLS_PAIRS = 1 << 22


def floored(h: np.ndarray, left: np.ndarray | None, floor: float, *, n_left=None,
            out: np.ndarray | None = None) -> np.ndarray:
    """Draw probabilities with a floor: q = (1 - floor) h + floor / |R| on R, 0 off it, rows rescaled to sum to 1.

    Parameters
    ----------
    h : ndarray
        (A, N) scores, each row a distribution on its R (nonnegative, summing to 1 there; a row of zeros gives
        uniform draws on R). Not modified unless it is ``out``.
    left : ndarray or None
        (A, N) booleans, R: the questions that may still be drawn; None: the whole bank, with no rescaling (sampling
        with replacement from a distribution ``h`` over the bank).
    floor : float
        The share of every draw spread uniformly over R, in (0, 1].
    n_left : int or ndarray, optional
        |R| per row, when the caller knows it (default: counted from ``left``).
    out : ndarray, optional
        Where to write q (may be ``h`` itself: computed in place).

    Returns
    -------
    ndarray
        (A, N) probabilities q.

    Examples
    --------
    >>> import numpy as np
    >>> h = np.array([[0.0, 0.25, 0.75, 0.0]])
    >>> print(floored(h, np.array([[True, True, True, False]]), 0.5).round(4))
    [[0.1667 0.2917 0.5417 0.    ]]
    """
    if n_left is None:
        n_left = h.shape[1] if left is None else left.sum(axis=1, keepdims=True)
    q = np.multiply(h, 1.0 - floor, out=out)
    q += floor / n_left
    if left is not None:
        q *= left  # 0 off R (q > 0 is finite: times 1 or 0 is exact)
        q /= q.sum(axis=1, keepdims=True)
    return q


def draw(q: np.ndarray, u: np.ndarray) -> np.ndarray:
    """One categorical draw per row of ``q`` by inverse CDF: the first question whose cumulative probability reaches
    ``u`` times the row's total (questions of probability 0 are never drawn).

    Parameters
    ----------
    q : ndarray
        (A, N) nonnegative probabilities (rows need not sum to exactly 1).
    u : ndarray
        (A,) uniforms on [0, 1), one per row (the caller's ``rng.random(A)``).

    Returns
    -------
    ndarray
        (A,) the drawn columns.

    Examples
    --------
    >>> import numpy as np
    >>> draw(np.array([[0.2, 0.0, 0.8], [0.5, 0.5, 0.0]]), np.array([0.5, 0.25])).tolist()
    [2, 0]
    """
    cum = np.cumsum(q, axis=1)
    # cum is non-decreasing (q >= 0), so the first index at or above u * total is the argmax of a boolean (which
    # stops at the first True: half the time of counting every entry)
    above = cum >= (u * cum[:, -1])[:, None]
    idx = np.argmax(above, axis=1)
    # no cumulative sum at or above it (not possible for u < 1): the last column
    idx[~above[:, -1]] = q.shape[1] - 1
    # rounding can land on a zero-probability column at the very end of a row: the last column with probability
    bad = q[np.arange(q.shape[0]), idx] <= 0
    if bad.any():
        idx[bad] = q.shape[1] - 1 - np.argmax(q[bad, ::-1] > 0, axis=1)
    return idx


def uniform_draws(left: np.ndarray, m: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``m`` questions drawn uniformly without replacement from R (``left``, (N,) booleans) by one permutation of R,
    and each draw's probability 1 / |R_t| -> (items (m,), q (m,)).

    Examples
    --------
    >>> import numpy as np
    >>> items, q = uniform_draws(np.array([True, False, True, True]), 2, np.random.default_rng(0))
    >>> len(set(items.tolist()) - {0, 2, 3}), q.round(4).tolist()
    (0, [0.3333, 0.5])
    """
    n_left = int(left.sum()) - np.arange(m)
    return rng.permutation(np.flatnonzero(left))[:m], 1.0 / n_left


class Draw(NamedTuple):
    """One draw of :func:`fixed_weight_draws`: its number ``t`` (from 0), the probabilities ``q`` (A, N) it was drawn
    with, R before it (``left``, (A, N); do not keep a reference: it changes after the next draw) and the drawn
    columns ``items`` (A,)."""

    t: int
    q: np.ndarray
    left: np.ndarray
    items: np.ndarray


def fixed_weight_draws(h: np.ndarray, m: int, floor: float, *, known: np.ndarray | None = None,
                       left: np.ndarray | None = None, rng: np.random.Generator | None = None,
                       order: np.ndarray | None = None) -> Iterator[Draw]:
    """``m`` draws without replacement per row with fixed weights: draw t has the probabilities :func:`floored` gives
    to the distribution h_t on R_t below. Draws with ``rng`` (one uniform per row and draw), or replays a given
    ``order`` (A, m) to recover the probabilities each of its draws had.

    h_t: the questions without a weight (``known`` False) keep 1 / |R_t| each; the weighted ones share the rest,
    |K & R_t| / |R_t|, in proportion to their weights (uniformly where their weights on R_t sum to 0).

    Parameters
    ----------
    h : ndarray
        (A, N) nonnegative weights.
    m : int
        Draws per row (at most |R|).
    floor : float
        The uniform share of every draw, in (0, 1].
    known : ndarray, optional
        (N,) or (A, N) booleans: the questions that have a weight (default: all).
    left : ndarray, optional
        (A, N) booleans, R before the first draw (default: every question); updated in place.
    rng : numpy Generator, optional
        Draw with it.
    order : ndarray, optional
        (A, m) the draws to replay instead.

    Yields
    ------
    Draw
        Each draw, before the next one is made.

    Examples
    --------
    >>> import numpy as np
    >>> w = np.array([[1.0, 1.0, 2.0, 2.0]])
    >>> drawn = fixed_weight_draws(w, 2, 0.5, order=np.array([[2, 0]]))
    >>> [(d.items.tolist(), round(float(d.q[0, d.items[0]]), 4)) for d in drawn]
    [([2], 0.2917), ([0], 0.2917)]
    """
    h = np.atleast_2d(np.asarray(h, dtype=float))
    A, N = h.shape
    left = np.ones((A, N), bool) if left is None else left
    rows = np.arange(A)
    for t in range(m):
        n_left = left.sum(axis=1, keepdims=True)
        scored = left if known is None else left & known
        hl = np.where(scored, h, 0.0)
        tot = hl.sum(axis=1, keepdims=True)
        if known is None:
            dist = np.divide(hl, np.where(tot > 0, tot, 1.0), out=hl)
        else:
            share = scored.sum(axis=1, keepdims=True) / n_left
            dist = np.where(scored, share * hl / np.where(tot > 0, tot, 1.0), np.where(left, 1.0 / n_left, 0.0))
        dist = np.where((tot > 0) | ~left, dist, 1.0 / n_left)  # no weight left: uniform on R
        q = floored(dist, left, floor, n_left=n_left, out=dist)
        items = draw(q, rng.random(A)) if order is None else np.asarray(order[:, t], dtype=np.int64)
        yield Draw(t, q, left, items)
        left[rows, items] = False


def increment_terms(F: np.ndarray, q: np.ndarray, left: np.ndarray, low, high):
    """What a draw's increments need of the predictions before the answers: per claim (row of ``F``), the
    predictions' sum over R, and the lowest and highest possible correction (z - f(j)) / q(j) over R for z in
    [low, high] -> (rest, lo_w, hi_w), (C,) each.

    Parameters
    ----------
    F : ndarray
        (C, N) each claim's prediction of every question's value.
    q : ndarray
        (N,) the draw's probabilities (shared by the claims) or (C, N) one row per claim.
    left : ndarray
        R, (N,) or (C, N) booleans.
    low, high : float or ndarray
        The range of the values, one for all or (C,) per claim.

    Examples
    --------
    >>> import numpy as np
    >>> F = np.array([[0.5, 0.5, 0.5]]); q = np.array([0.5, 0.5, 0.0]); left = np.array([True, True, False])
    >>> [x.tolist() for x in increment_terms(F, q, left, 0.0, 1.0)]
    [[1.0], [-1.0], [1.0]]
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        qq = np.where(left, q, np.nan)
        rest = np.where(left, F, 0.0).sum(axis=1)
        lo_w = np.nanmin((np.reshape(low, (-1, 1)) - F) / qq, axis=1)
        hi_w = np.nanmax((np.reshape(high, (-1, 1)) - F) / qq, axis=1)
    return rest, lo_w, hi_w


def running_sums(z_at: np.ndarray, start=0.0) -> np.ndarray:
    """Per row, the sum of the values drawn before each draw: ``start`` + the exclusive cumulative sum of ``z_at``
    (C, n) along the draws.

    Examples
    --------
    >>> import numpy as np
    >>> running_sums(np.array([[1.0, 0.0, 1.0]]), 2.0).tolist()
    [[2.0, 3.0, 3.0]]
    """
    z_at = np.atleast_2d(z_at)
    first = np.zeros((z_at.shape[0], 1))
    return np.reshape(start, (-1, 1)) + np.concatenate([first, np.cumsum(z_at, axis=1)[:, :-1]], axis=1)


def increment(before, rest, z, f, q, N: int):
    """The doubly robust increment without replacement (module docstring): (before + rest + (z - f) / q) / N,
    elementwise, with ``before`` the sum of the values drawn earlier, ``rest`` the predictions' sum over R, ``z`` the
    drawn value, ``f`` its prediction and ``q`` its probability.

    Examples
    --------
    >>> round(float(increment(3.0, 2.5, 1.0, 0.5, 0.25, 10)), 4)
    0.75
    """
    return (before + rest + (z - f) / q) / N


def bounds(before, rest, lo_w, hi_w, N: int):
    """(L, U): the lowest and highest the increment can be whatever the drawn value in its range, known before it
    (module docstring), from :func:`increment_terms`' ``lo_w`` and ``hi_w``.

    Examples
    --------
    >>> [round(float(x), 4) for x in bounds(3.0, 2.5, -2.0, 2.0, 10)]
    [0.35, 0.75]
    """
    return (before + rest + lo_w) / N, (before + rest + hi_w) / N


def pair_terms(X: np.ndarray, a: np.ndarray, b: np.ndarray, q: np.ndarray, left: np.ndarray, low: float,
               high: float, *, known: np.ndarray | None = None, fill=None, exact: bool = True):
    """:func:`increment_terms` for claims on pairs, whose prediction is a difference of two rows, F_p = X[a_p] -
    X[b_p] (``fill``, (P,), where ``known`` is False), worked a slice of pairs at a time.

    ``exact=False`` gives valid but wider bounds in O(K N) instead of O(P N): (low - F_p(j)) / q(j) = A_a(j) + B_b(j)
    with A_a = (low / 2 - X_a) / q and B_b = (low / 2 + X_b) / q, so its minimum over R is at least min A_a + min B_b
    (the maximum likewise at most). On a real leaderboard's predictions the range is about 1.6 times the exact one;
    what needs the exact bounds (betting) should not use it. ``rest`` is then the difference of the rows' sums (the
    same up to rounding).

    Parameters
    ----------
    X : ndarray
        (K, N) the rows' predictions.
    a, b : ndarray
        (P,) the pairs' rows.
    q : ndarray
        (N,) the draw's probabilities.
    left : ndarray
        (N,) booleans, R.
    low, high : float
        The range of a pair's values.
    known : ndarray, optional
        (N,) booleans: where the rows predict (default everywhere); elsewhere a pair predicts ``fill``.
    fill : ndarray, optional
        (P,) the pairs' prediction where ``known`` is False.
    exact : bool
        The exact extremes (default), or the bounds from the rows' own extremes.

    Returns
    -------
    tuple of ndarray
        (rest, lo_w, hi_w), (P,) each.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.random((6, 200)); a, b = np.triu_indices(6, 1); q = rng.random(200); q /= q.sum()
    >>> left = rng.random(200) < 0.8
    >>> exact = pair_terms(X, a, b, q, left, -1.0, 1.0)
    >>> all(np.array_equal(e, s) for e, s in zip(exact, increment_terms(X[a] - X[b], q, left, -1.0, 1.0)))
    True
    >>> wide = pair_terms(X, a, b, q, left, -1.0, 1.0, exact=False)
    >>> bool(np.all(wide[1] <= exact[1]) and np.all(wide[2] >= exact[2]))
    True
    """
    a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    P = len(a)
    known = np.ones(X.shape[1], bool) if known is None else np.asarray(known, bool)
    kl = np.flatnonzero(left & known)
    lo_w, hi_w, rest = np.full(P, np.inf), np.full(P, -np.inf), np.zeros(P)
    if exact:  # as increment_terms computes them, on every question: the same numbers
        step = max(1, CELLS_PAIRS // X.shape[1])
        for s in range(0, P, step):
            F = X[a[s:s + step]] - X[b[s:s + step]]
            if fill is not None and not known.all():
                F = np.where(known[None, :], F, np.asarray(fill, dtype=float)[s:s + step, None])
            rest[s:s + step], lo_w[s:s + step], hi_w[s:s + step] = increment_terms(F, q, left, low, high)
        return rest, lo_w, hi_w
    if len(kl):
        Xk, Q = X[:, kl], q[kl]
        rows = Xk.sum(axis=1)
        rest = rows[a] - rows[b]
        lo_w = ((low / 2.0 - Xk) / Q).min(axis=1)[a] + ((low / 2.0 + Xk) / Q).min(axis=1)[b]
        hi_w = ((high / 2.0 - Xk) / Q).max(axis=1)[a] + ((high / 2.0 + Xk) / Q).max(axis=1)[b]
        # a sum rounds otherwise than the difference it stands for: widened by far more than that rounding
        lo_w, hi_w = lo_w - 1e-12 * np.abs(lo_w), hi_w + 1e-12 * np.abs(hi_w)
    ul = np.flatnonzero(left & ~known)
    if len(ul):  # where there is no prediction the pair predicts its fill: the extremes sit at the smallest q
        fill = np.asarray(fill, dtype=float)
        rest = rest + len(ul) * fill
        qmin = q[ul].min()
        lo_w = np.minimum(lo_w, (low - fill) / qmin)
        hi_w = np.maximum(hi_w, (high - fill) / qmin)
    return rest, lo_w, hi_w
