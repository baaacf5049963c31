"""The ``exact`` guarantee: finite-sample at the number of questions given, without the central limit theorem (fixed
n: valid at the sample you have, not at every sample size as the anytime ``finite`` guarantee is).

Setting as in :mod:`assay.compare.core`: ``S`` is models x questions, the questions (or clusters of them) a random
sample of a population, the targets each model's mean score and each pair's difference of means.

Verdicts, ranks and tiers (one family, at level delta). Each pair (a, b) carries two one-sided nulls, "d <= 0" (its
rejection: a is better) and "d >= 0" (b is better); with an equivalence margin m, two more, "d <= -m" and "d >= m"
(both rejected: the pair is equivalent, TOST). Holm's step-down procedure runs over all of them (2P, or 4P with a
margin), so every verdict holds together with probability at least 1 - delta (the true nulls stay unrejected until
the first error, the usual proof). The p-values:

* 0/1 scores without clusters: **McNemar's exact conditional test** for "d <= 0". With n10 the questions a got right
  and b wrong, n01 the reverse, and n = n10 + n01, given n the count n10 is binomial with probability
  p10 / (p10 + p01), at most 1/2 under the null, so p = P(Binomial(n, 1/2) >= n10) is exact (conservative where
  the null holds strictly). Questions both got right or wrong say nothing about the difference and cost nothing.
* otherwise (fractional scores, epochs averaged, clusters, a margin): a **fixed-n betting test** of the mean of the
  units' differences (Waudby-Smith and Ramdas 2024, the predictable plug-in bets tuned for the n units at hand,
  :func:`assay.stats.betting.e_process`): the wealth is a nonnegative supermartingale under the null, so
  p = 1 / max_t wealth_t is valid (Ville). The units are read in one seeded order shared by every pair; a cluster's
  unit is its mean difference, each cluster weighted equally.

Intervals (a second family, said so). Every model interval at delta / K (0/1 scores without clusters: the
Clopper-Pearson interval; otherwise the betting confidence sequence with the excursion bounds of
:mod:`assay.compare.core`, tuned to the n units) and every pair interval at delta / P (0/1 scores: d = p10 - p01
within [L10 - U01, U10 - L01], the Clopper-Pearson intervals of the two discordant shares each at delta / (2P);
otherwise the betting sequence on the differences), each family holding together with probability at least
1 - delta (Bonferroni). A verdict comes from its test, which is sharper than the interval: a pair can be ordered
while its interval still touches 0.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from ..stats.betting import e_process
from ..stats.multiple import holm
from . import core

__all__ = ["exact", "mcnemar_p", "betting_p", "is_binary"]


def is_binary(S: np.ndarray, low: float, high: float) -> bool:
    """Whether every score is at one of the bounds (0/1 scores, after epochs are averaged)."""
    return bool(np.all((S == low) | (S == high)))


def mcnemar_p(n10: np.ndarray, n01: np.ndarray) -> np.ndarray:
    """McNemar's exact conditional one-sided p-values for "d <= 0": P(Binomial(n10 + n01, 1/2) >= n10), 1 where no
    question is discordant.

    Examples
    --------
    >>> mcnemar_p(np.array([6, 3, 0]), np.array([0, 3, 0])).round(4).tolist()
    [0.0156, 0.6562, 1.0]
    """
    n10 = np.asarray(n10, dtype=np.int64)
    n = n10 + np.asarray(n01, dtype=np.int64)
    return np.where(n > 0, stats.binom.sf(n10 - 1, n, 0.5), 1.0)


def betting_p(X: np.ndarray, target: np.ndarray | float, alpha: float) -> np.ndarray:
    """One-sided p-values for "mean <= target" of each row of ``X`` (values in [0, 1], read left to right), from
    fixed-n betting: bets tuned to level ``alpha`` and the row's length, p = min(1, 1 / max_t wealth_t).

    Examples
    --------
    >>> x = np.tile([1.0, 1.0, 0.5, 1.0], (2, 10))
    >>> betting_p(x, np.array([0.5, 0.9]), 0.05).round(4).tolist()
    [0.0, 0.8568]
    """
    X = np.atleast_2d(np.asarray(X, dtype=np.float64))
    n = X.shape[1]
    if n == 0:
        return np.ones(X.shape[0])
    t = np.broadcast_to(np.asarray(target, dtype=np.float64), (X.shape[0],))
    # "mean(x) <= t" is "mean(1 - x) >= 1 - t": e_process bets against its null "mean > target" of 1 - x
    inner = (t > 0.0) & (t < 1.0)
    p = np.where(t >= 1.0, 1.0, 0.0)  # nothing exceeds 1; a target <= 0 is refuted by any value above it
    if inner.any():
        log_e = e_process(1.0 - X[inner], 1.0 - t[inner], lo=0.0, hi=1.0, delta=alpha, horizon=n)
        p[inner] = np.exp(-np.maximum(np.max(log_e, axis=1), 0.0))
    below = ~inner & (t <= 0.0)
    if below.any():
        p[below] = np.where((X[below] > t[below, None]).any(axis=1), 0.0, 1.0)
    return p


def clopper_pearson(k: np.ndarray, n: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Two-sided Clopper-Pearson intervals at level ``alpha`` for ``k`` successes of ``n`` (alpha / 2 a side).

    Examples
    --------
    >>> lo, hi = clopper_pearson(np.array([0, 15, 30]), 30, 0.05)
    >>> lo.round(4).tolist(), hi.round(4).tolist()
    ([0.0, 0.313, 0.8843], [0.1157, 0.687, 1.0])
    """
    k = np.asarray(k, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        lo = np.where(k > 0, stats.beta.ppf(alpha / 2.0, k, n - k + 1.0), 0.0)
        hi = np.where(k < n, stats.beta.isf(alpha / 2.0, k + 1.0, n - k), 1.0)
    return np.nan_to_num(lo, nan=0.0), np.nan_to_num(hi, nan=1.0)


def _nulls(U: np.ndarray, a: np.ndarray, b: np.ndarray, binary: bool, margin: float | None, low: float,
           high: float, alpha: float) -> np.ndarray:
    """The p-values (k, P) of the pairs' one-sided nulls: "d <= 0", "d >= 0" and, with a margin, "d <= -m",
    "d >= m"."""
    R = high - low
    D = (U[a] - U[b] + R) / (2.0 * R)  # each unit's difference on [0, 1]; d <= c is mean(D) <= (c + R) / (2 R)
    if binary:
        n10 = ((U[a] == high) & (U[b] == low)).sum(axis=1)
        n01 = ((U[a] == low) & (U[b] == high)).sum(axis=1)
        rows = [mcnemar_p(n10, n01), mcnemar_p(n01, n10)]
    else:
        rows = [betting_p(D, 0.5, alpha), betting_p(1.0 - D, 0.5, alpha)]
    if margin is not None:
        t = (R - margin) / (2.0 * R)  # d <= -m; and d >= m is 1 - D <= t
        rows += [betting_p(D, t, alpha), betting_p(1.0 - D, t, alpha)]
    return np.vstack(rows)


def exact(S: np.ndarray, clusters: np.ndarray | None, *, delta: float, low: float, high: float,
          rng: np.random.Generator | None, margin: float | None = None) -> core.CompareCore:
    """Finite-sample verdicts (Holm over exact one-sided tests) and intervals (a second family) at the n units given.

    The method is described in the module docstring.

    Parameters
    ----------
    S : ndarray
        K x n scores, models x questions, in [low, high].
    clusters : ndarray or None
        (n,) integer codes 0 .. C-1 of each question's cluster (the unit is the cluster's mean), or None.
    delta : float
        Error level of each family: the verdicts (with ranks and tiers), the pair intervals, the model intervals.
    low, high : float
        The score range.
    rng : numpy.random.Generator or None
        The order the units are read in by the betting tests and sequences (None: the columns' order).
    margin : float, optional
        Equivalence margin m: a pair whose nulls "d <= -m" and "d >= m" are both rejected is equivalent.

    Returns
    -------
    CompareCore
        Estimates and intervals per model and pair, ``better`` (+1: a better, -1: b better, 0) and ``equivalent``
        per pair from the tests; ``crit`` is Holm's first threshold, delta / (number of nulls).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> S = (rng.random((3, 100)) < np.array([[0.8], [0.5], [0.45]])).astype(float)
    >>> out = exact(S, None, delta=0.05, low=0.0, high=1.0, rng=np.random.default_rng(1))
    >>> out.better.tolist(), out.lo.round(3).tolist()
    ([1, 1, 0], [0.611, 0.321, 0.266])
    """
    K = S.shape[0]
    R = high - low
    a, b = core.pair_index(K)
    P = len(a)
    binary = clusters is None and is_binary(S, low, high)
    U = core.unit_means(S, None if clusters is None else
                        np.unique(np.asarray(clusters), return_inverse=True)[1].ravel())
    n = U.shape[1]
    if rng is not None:
        U = U[:, rng.permutation(n)]
    n_nulls = (4 if margin is not None else 2) * P
    pv = _nulls(U, a, b, binary, margin, low, high, delta / max(n_nulls, 1)) if P else np.zeros((2, 0))
    rejected = holm(pv.ravel(), delta).reshape(pv.shape) if P else np.zeros(pv.shape, bool)
    better = np.where(rejected[0], 1, np.where(rejected[1], -1, 0)).astype(np.int64)
    equivalent = (rejected[2] & rejected[3]) if margin is not None else np.zeros(P, bool)
    est = U.mean(axis=1)
    Y = (U - low) / R
    if binary:
        lo_m, hi_m = clopper_pearson(Y.sum(axis=1), n, delta / K)
        # d = p10 - p01: Clopper-Pearson intervals for the two discordant shares, each at delta / (2 P)
        l10, h10 = clopper_pearson((Y[a] > Y[b]).sum(axis=1), n, delta / max(2 * P, 1))
        l01, h01 = clopper_pearson((Y[a] < Y[b]).sum(axis=1), n, delta / max(2 * P, 1))
        d_lo, d_hi = (l10 - h01) * R, (h10 - l01) * R
    else:
        lo_m, hi_m, _ = core.finite_rows(Y, delta / K, n, None)
        d_lo, d_hi = np.zeros(P), np.zeros(P)
        if P:
            l, h, _ = core.finite_rows((U[a] - U[b] + R) / (2.0 * R), delta / P, n, None)
            d_lo, d_hi = l * 2.0 * R - R, h * 2.0 * R - R
    half = (d_hi - d_lo) / 2.0
    return core.CompareCore(est=est, lo=lo_m * R + low, hi=hi_m * R + low, d=est[a] - est[b], d_lo=d_lo, d_hi=d_hi,
                            half=half, crit=delta / max(n_nulls, 1), units=n, alpha_models=delta / K,
                            alpha_pairs=delta / max(P, 1), exact_models=np.zeros(K, bool),
                            exact_pairs=np.zeros(P, bool), df=None, better=better, equivalent=equivalent,
                            tests="McNemar exact (conditional)" if binary else "fixed-n betting")
