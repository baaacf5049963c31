"""The compare core on arrays: every model's mean score and every pair's paired difference, with intervals that
hold all at once, and the rank and tier claims that follow from them.

Setting. ``S`` is models x questions (scores in [low, high], each question's epochs averaged), the questions a
random sample of a population (the sampled unit is the cluster when questions come in clusters). The targets are
each model's mean score over the population and each pair's difference of means, mean(a) - mean(b). Questions may
carry weights (each task weighted equally: ``weights`` and ``strata``, the tasks as strata sampled separately).

Three guarantees:

* ``asymptotic`` (Miller 2024, "Adding Error Bars to Evals", paired and clustered standard errors). The covariance
  of the K weighted model means from unit sums of centred scores, Sigma = sum_c f_c z_c z_c' (z_c: the sum over unit
  c of w_i (s_i - m), the mean taken within the unit's stratum; f_c = C_t / (C_t - 1) with C_t units in its stratum;
  every question its own unit when no clusters are given). A pair's variance is Sigma_aa + Sigma_bb - 2 Sigma_ab
  (paired: what two models share on a question cancels).

  Two families, each holding at about 1 - delta: the K (K - 1) / 2 pair claims (and the verdicts, rank intervals and
  tiers, which are read off them), and, separately, the K model intervals. Each family's critical value is the
  studentized max-t of the Gaussian multiplier bootstrap of the unit sums (whose law given the data is N(0, Sigma),
  drawn as such). Small-sample caution is kept to where it is needed:

  - *degenerate claims*: a model, or a pair, on which fewer than ``MIN_DIFFER`` (5) sampled units (questions, or
    clusters) score differently from the value most of them share (two models that agree on all but 3 questions; a
    model at 0 on 28 of 30) has no usable standard error. Its interval is exact instead: with v the shared value and
    k+ / k- the units above / below it, the mean lies in
    [v - (v - low) U(k-), v + (high - v) U(k+)], U(k) the one-sided Clopper-Pearson upper bound for k of C at half
    the family's per-claim level (any score in [low, high] exceeds v at most as often as a 0/1 score would, so the
    binomial bound holds for fractional scores too; with unequal unit weights it is widened by the largest weight
    over the mean weight). For 0/1 scores this is the Clopper-Pearson interval itself. The exact claims take their
    share of delta: the family's critical value c solves P*(max over the other claims > c) + spent = delta, where
    each exact claim spends the per-claim level alpha(c) of the others, but all of them together at most
    ``EXACT_SHARE`` (a tenth) of delta (a degenerate pair rarely decides a verdict, and ten models of one family
    with a dozen near-identical pairs must not widen every other claim);
  - *few units*: the bootstrap's maximum is divided by a common sqrt(chi2_nu / nu), so that the max-t's law is
    multivariate t (as for simultaneous inference in linear models, Hothorn, Bretz and Westfall 2008), with
    nu = nu0 max(1, nu0 / 29), nu0 = C_eff - T the units' degrees of freedom (C_eff = (sum W_c)^2 / sum W_c^2 over
    the units' weights: the number of questions, or of clusters when they are of equal size; T strata). Up to about
    30 units this is Student t with nu0 degrees of freedom; beyond, the correction fades as 1 / nu0^2 instead of
    1 / nu0. Measured on real matrices (``bench/compare_power.py --ablation``, 2,000 draws): at 30 questions of
    models near chance (BBH) the Gaussian max-t covers 0.900 and this 0.943; at 100 questions the full t_{n-1}
    resolves 0.81-0.87x the plain max-t's pairs where that max-t covers 0.92-0.95, this 0.93-0.96x. A claim whose variance sits on a
    few clusters also gets Student t at the per-claim level with its Satterthwaite degrees of freedom,
    (sum f u^2)^2 / sum f^2 u^4 over its unit sums u, scaled by C_eff / 10 when there are more than 10 clusters and
    at most nu: with few clusters this is the Satterthwaite correction, with many it fades into the multivariate t.

  Model intervals are score intervals at the per-claim critical value, {mu : (m - mu)^2 <= c^2 r (mu - low)(high - mu)}
  with r = se^2 / ((m - low)(high - m)) (Wilson's interval for 0/1 scores; the design effect carried by r), so that
  they stay inside [low, high] and behave near the bounds. Pair intervals are d +- c se_d, and are then cut to what
  the two model intervals imply, [lo_a - hi_b, hi_a - lo_b].
* ``finite`` (Waudby-Smith and Ramdas 2024, "Estimating means of bounded random variables by betting", the
  predictable plug-in empirical-Bernstein confidence sequence, their eqs. 13-15): for each claim the units (questions,
  or clusters) are read in one seeded order shared by every model, and the running intersection of the sequence
  holds at every sample size at once. One family: a union bound over every model and pair claim, each at
  delta / (K + K (K - 1) / 2), so all claims hold together with probability at least 1 - delta whenever one stops
  (optional stopping is allowed). When units are drawn with replacement, each claim's sequence (at 1 - ``EXCURSION``
  of its level) is intersected with an anytime-valid bound on how often units leave the bound (a model) or 0 (a
  pair), from a Beta(1, h / 2) mixture of binomial likelihood ratios (at ``EXCURSION`` of its level): near-exact for
  models and pairs with few answers off the bound, where the betting sequence alone is 1.5 to 2.5 times as wide as
  Clopper-Pearson. Pair intervals are cut to what the model intervals imply (one family, so the cut keeps the
  guarantee). With clusters, the unit is the cluster's mean score and the target is the mean over clusters, each
  cluster weighted equally. Drawn without replacement from a bank (``population``), the sequences are for the bank's
  mean, and once the whole bank is read the means are known exactly.

* ``exact``: finite-sample at the number of questions given, not anytime: Holm over exact one-sided tests for the
  verdicts, the intervals a second family (:mod:`assay.compare.exact`).

From the pair intervals: pair verdicts, rank intervals [1 + #certified better, K - #certified worse] (the true rank
with ties is [1 + #truly better, K - #truly worse]) and tiers (1 + the longest chain of certified "better" above).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy import special, stats

from ..errors import AssayInputError

__all__ = ["CompareCore", "pair_index", "asymptotic", "finite", "eb_confidence_sequence", "ranks_and_tiers",
           "verdicts", "items_to_resolve", "exact_upper", "mixture_upper", "GUARANTEES", "MIN_DIFFER", "EXCURSION",
           "finite_rows", "unit_means"]

GUARANTEES = ("asymptotic", "exact", "finite")

#: a claim with fewer sampled units off its most common value than this is degenerate (exact interval)
MIN_DIFFER = 5

#: the degrees of freedom of the units, nu0 = C_eff - T, become nu0 * max(1, nu0 / DF_FADE): full Student t up to
#: this many, fading to the Gaussian beyond (see the module docstring)
DF_FADE = 29.0

#: the most the exact (degenerate) claims of a family spend of its delta, all together
EXACT_SHARE = 0.1

#: the share of a finite-guarantee claim's level spent on the excursion bound
EXCURSION = 1.0 / 3.0


class CompareCore(NamedTuple):
    """Per model (K,): ``est``, ``lo``, ``hi``; per pair (P,) in :func:`pair_index` order: ``d``, ``d_lo``, ``d_hi``,
    ``half`` (half-width before cutting to the range and to the model intervals); ``crit`` (asymptotic: the pair
    family's critical value; finite: the per-claim level), ``units`` (questions or clusters used); ``alpha_models``,
    ``alpha_pairs``: each family's per-claim level; ``exact_models``, ``exact_pairs``: the claims whose interval is
    the exact small-sample one (asymptotic: degenerate claims), and ``alpha_exact_models``, ``alpha_exact_pairs``
    their per-claim level; ``df``: the degrees of freedom of the max-t's t law (None: finite); ``better`` (+1: a
    better, -1: b better, 0) and ``equivalent`` per pair when the verdicts come from tests rather than the intervals
    (:mod:`assay.compare.exact`), with the ``tests`` used."""

    est: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    d: np.ndarray
    d_lo: np.ndarray
    d_hi: np.ndarray
    half: np.ndarray
    crit: float
    units: int
    alpha_models: float = float("nan")
    alpha_pairs: float = float("nan")
    exact_models: np.ndarray | None = None
    exact_pairs: np.ndarray | None = None
    df: float | None = None
    alpha_exact_models: float = float("nan")
    alpha_exact_pairs: float = float("nan")
    better: np.ndarray | None = None
    equivalent: np.ndarray | None = None
    tests: str | None = None


def pair_index(K: int) -> tuple[np.ndarray, np.ndarray]:
    """(a, b) of every pair a < b, in row-major order.

    Parameters
    ----------
    K : int
        The number of models.

    Returns
    -------
    a, b : ndarray of int64 (K (K - 1) / 2,)
        The first and second index of each pair.

    Examples
    --------
    >>> a, b = pair_index(3)
    >>> a.tolist(), b.tolist()
    ([0, 0, 1], [1, 2, 2])
    """
    a, b = np.triu_indices(K, k=1)
    return a.astype(np.int64), b.astype(np.int64)


def _unit_sums(X: np.ndarray, codes: np.ndarray | None) -> np.ndarray:
    """Sums of the columns of ``X`` (rows x questions) over each unit code 0 .. U-1 -> rows x units."""
    if codes is None:
        return X
    order = np.argsort(codes, kind="stable")
    cs = codes[order]
    starts = np.flatnonzero(np.r_[True, cs[1:] != cs[:-1]])
    return np.add.reduceat(X[:, order], starts, axis=1)


# -- exact binomial bounds ------------------------------------------------------------------------------------------


def exact_upper(k: np.ndarray, n: int, a: np.ndarray | float) -> np.ndarray:
    """One-sided Clopper-Pearson upper bounds at level ``a`` for ``k`` successes of ``n`` (1 where k >= n).

    Examples
    --------
    >>> print(exact_upper(np.array([0, 1]), 30, 0.025).round(4).tolist())
    [0.1157, 0.1722]
    """
    k = np.asarray(k, dtype=np.float64)
    a = np.broadcast_to(np.asarray(a, dtype=np.float64), k.shape)
    out = np.ones(k.shape)
    ok = k < n
    if ok.any():
        out[ok] = special.betaincinv(k[ok] + 1.0, n - k[ok], 1.0 - a[ok])
    return out


def mixture_upper(k: np.ndarray, n: int, a: float, b: float, iters: int = 60) -> np.ndarray:
    """Anytime-valid upper bounds for a Bernoulli probability from ``k`` successes in ``n`` draws: the largest p
    whose Beta(1, b) mixture likelihood ratio, B(k + 1, b + n - k) / B(1, b) / (p^k (1 - p)^(n - k)), stays below
    1 / a (Ville's inequality: a nonnegative martingale under p, so the bound holds at every n at once with
    probability at least 1 - a). Tightest near k = 0 when b is about half the number of draws planned.

    Examples
    --------
    >>> print(mixture_upper(np.array([0, 1, 3]), 30, 0.025, 15.0).round(3).tolist())
    [0.148, 0.215, 0.334]
    """
    k = np.asarray(k, dtype=np.float64)
    log_prior = special.betaln(k + 1.0, b + n - k) - special.betaln(1.0, b)
    target = np.log(1.0 / a)

    def log_m(p):
        with np.errstate(divide="ignore", invalid="ignore"):
            return log_prior - np.where(k > 0, k * np.log(p), 0.0) - (n - k) * np.log1p(-p)

    lo = np.clip(k / n, 1e-300, 1.0)
    hi = np.ones_like(k)
    done = k >= n
    lo = np.where(done, 1.0, lo)
    # the ratio is smallest at p = k / n and grows towards p = 1: bisect for where it reaches 1 / a
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        above = log_m(mid) >= target
        hi = np.where(above & ~done, mid, hi)
        lo = np.where(~above & ~done, mid, lo)
    return np.where(done, 1.0, hi)


# -- which claims are degenerate --------------------------------------------------------------------------------


def _row_modes(V: np.ndarray, min_differ: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """For each row of unit values: (degenerate, the shared value, units above it, units below it).

    A row is degenerate when fewer than ``min_differ`` units differ from its most common value; such a value holds
    at least U - min_differ + 1 units, so it is among the row's first ``min_differ`` values (pigeonhole) and only
    those are tried."""
    rows, U = V.shape
    V = np.round(V, 12)
    best = np.full(rows, -1, dtype=np.int64)
    val = np.zeros(rows)
    for j in range(min(min_differ, U)):
        c = V[:, j:j + 1]
        cnt = (V == c).sum(axis=1)
        take = cnt > best
        best = np.where(take, cnt, best)
        val = np.where(take, c[:, 0], val)
    above = (V > val[:, None]).sum(axis=1)
    below = (V < val[:, None]).sum(axis=1)
    return (above + below) < min_differ, val, above, below


def _pair_modes(UV: np.ndarray, min_differ: int, span: float, chunk_cells: int = 20_000_000):
    """:func:`_row_modes` of every pair's unit differences UV[a] - UV[b], without a pairs x units array. A degenerate
    pair has at most ``min_differ - 1`` units off its common value v, each at most ``2 span`` from it, so its sum of
    squared deviations from its mean is at most (min_differ - 1) (2 span)^2; that sum comes for every pair from one
    Gram matrix, and only the pairs under the bound are looked at unit by unit."""
    K, U = UV.shape
    a, b = pair_index(K)
    P = len(a)
    deg = np.zeros(P, bool)
    val = np.zeros(P)
    above = np.zeros(P, np.int64)
    below = np.zeros(P, np.int64)
    Uc = UV - UV.mean(axis=1, keepdims=True)
    G = Uc @ Uc.T
    ss = G[a, a] + G[b, b] - 2.0 * G[a, b]
    cand = np.flatnonzero(ss <= (min_differ - 1) * (2.0 * span) ** 2 * (1.0 + 1e-9) + 1e-9)
    step = max(1, chunk_cells // max(U, 1))
    for s in range(0, len(cand), step):
        idx = cand[s:s + step]
        dg, v, ab, be = _row_modes(UV[a[idx]] - UV[b[idx]], min_differ)
        deg[idx], val[idx], above[idx], below[idx] = dg, v, ab, be
    return deg, val, above, below


def _exact_interval(v, above, below, n_units, a_side, lower, upper, widen):
    """[v - (v - lower) U(below), v + (upper - v) U(above)]: the exact interval of a degenerate claim (module
    docstring), U the one-sided Clopper-Pearson bound at ``a_side``."""
    up = np.minimum(exact_upper(above, n_units, a_side) * widen, 1.0)
    dn = np.minimum(exact_upper(below, n_units, a_side) * widen, 1.0)
    return v - (v - lower) * dn, v + (upper - v) * up


# -- the asymptotic guarantee ----------------------------------------------------------------------------------


def _solve_crit(mx: np.ndarray, n_exact: int, delta: float, sf) -> tuple[float, float]:
    """The family's critical value c and the per-claim level of its exact claims: the smallest c with
    P*(max > c) + (what the exact claims spend) <= delta, where each of the ``n_exact`` exact claims spends the
    per-claim level 2 sf(c) of the others, but all of them together at most EXACT_SHARE * delta (they are degenerate
    claims that rarely decide a verdict: many of them must not widen every other claim). With no other claim, the
    exact ones share delta equally. (mx: the bootstrap draws of the maximum over the other claims; sf: their
    per-claim tail.)"""
    mx = np.sort(mx)
    B = len(mx)

    def spend(c):
        every = n_exact * 2.0 * sf(c)
        return every if B == 0 else min(every, EXACT_SHARE * delta)

    def err(c):
        return ((B - np.searchsorted(mx, c, side="right")) / B if B else 0.0) + spend(c)

    lo, hi = 0.0, 1.0
    while err(hi) > delta and hi < 1e6:
        lo, hi = hi, hi * 2.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if err(mid) > delta:
            lo = mid
        else:
            hi = mid
    return hi, (spend(hi) / n_exact if n_exact else float(2.0 * sf(hi)))


def _satterthwaite(u2f: np.ndarray, u4f2: np.ndarray, cap: float) -> np.ndarray:
    """(sum f u^2)^2 / sum f^2 u^4, in [1, cap]."""
    with np.errstate(divide="ignore", invalid="ignore"):
        df = np.where(u4f2 > 0, u2f ** 2 / u4f2, cap)
    return np.clip(df, 1.0, cap)


def _score_interval(m, se, crit, low, high):
    """{mu : (m - mu)^2 <= crit^2 r (mu - low)(high - mu)}, r = se^2 / ((m - low)(high - m)): Wilson's interval for 0/1
    scores, with the design effect carried by r."""
    R = high - low
    x = (m - low) / R
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where((x > 0) & (x < 1), (se / R) ** 2 / (x * (1.0 - x)), 0.0)
    z2 = crit ** 2 * r
    centre = (2.0 * x + z2) / (2.0 * (1.0 + z2))
    rad = np.sqrt(np.maximum((2.0 * x + z2) ** 2 - 4.0 * (1.0 + z2) * x ** 2, 0.0)) / (2.0 * (1.0 + z2))
    return low + R * np.clip(centre - rad, 0.0, 1.0), low + R * np.clip(centre + rad, 0.0, 1.0)


def asymptotic(S: np.ndarray, clusters: np.ndarray | None, *, delta: float, low: float, high: float,
               rng: np.random.Generator, n_boot: int = 4000, chunk: int = 4096, weights: np.ndarray | None = None,
               strata: np.ndarray | None = None, min_differ: int = MIN_DIFFER) -> CompareCore:
    """Cluster-robust paired intervals for every pair (one family) and every model (a second family), each family
    simultaneous by a studentized max-t, degenerate claims exact.

    The method is described in the module docstring.

    Parameters
    ----------
    S : ndarray
        K x n scores, models x questions, in [low, high].
    clusters : ndarray or None
        (n,) integer codes 0 .. C-1 of each question's cluster, or None (every question its own cluster).
    delta : float
        Error level of each family (the pairs with their verdicts, ranks and tiers; the model intervals).
    low, high : float
        The score range; the model intervals are clipped to it and the pair intervals to +-(high - low).
    rng : numpy.random.Generator
        Randomness of the multiplier bootstrap.
    n_boot : int, default 4000
        Bootstrap draws of the max-t statistic.
    chunk : int, default 4096
        Pairs handled at once when taking the max over claims (bounds the memory).
    weights : ndarray, optional
        (n,) question weights (normalised to sum 1); default equal.
    strata : ndarray, optional
        (n,) integer codes 0 .. T-1 of strata sampled separately (each task's questions): means are centred within
        the stratum and each stratum's units get its own C_t / (C_t - 1). Clusters never cross strata.
    min_differ : int, default 5
        A claim with fewer units off its most common value is degenerate (exact interval).

    Returns
    -------
    CompareCore
        Estimates and intervals per model and per pair; ``crit`` is the pair family's critical value, ``units`` the
        number of units (clusters or questions), and the per-claim levels, exact claims and degrees of freedom.

    Raises
    ------
    AssayInputError
        With fewer than 2 units in a stratum.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> S = (rng.random((3, 200)) < np.array([[0.8], [0.6], [0.55]])).astype(float)
    >>> core = asymptotic(S, None, delta=0.05, low=0.0, high=1.0, rng=np.random.default_rng(1))
    >>> print(core.est.round(3), (core.d_lo > 0).tolist(), core.units)
    [0.725 0.575 0.515] [True, True, False] 200
    """
    K, n = S.shape
    R = high - low
    w = np.full(n, 1.0 / n) if weights is None else np.asarray(weights, dtype=np.float64) / float(np.sum(weights))
    st = np.zeros(n, np.int64) if strata is None else np.asarray(strata, dtype=np.int64)
    T = int(st.max()) + 1
    units = np.arange(n) if clusters is None else np.asarray(clusters, dtype=np.int64)
    U = int(units.max()) + 1
    unit_stratum = np.zeros(U, np.int64)
    unit_stratum[units] = st
    C_t = np.bincount(unit_stratum, minlength=T)
    if (C_t < 2).any():
        raise AssayInputError("a cluster-robust interval needs at least 2 " + ("clusters" if clusters is not None
                                                                                else "questions")
                              + (" in every task" if T > 1 else ""))
    f = (C_t / (C_t - 1.0))[unit_stratum]
    m = np.clip(S @ w, low, high)  # a weighted mean of scores in [low, high]: clipped only of rounding
    # centred within each stratum (one stratum: at the overall mean)
    onehot = np.zeros((n, T))
    onehot[np.arange(n), st] = w
    m_t = (S @ onehot) / onehot.sum(axis=0)
    Z = _unit_sums((S - m_t[:, st]) * w, None if clusters is None else units)
    Sigma = (Z * f) @ Z.T
    W = np.bincount(units, weights=w, minlength=U)  # each unit's weight
    UV = _unit_sums(S * w, None if clusters is None else units) / W  # each unit's (weighted) mean score
    widen = float(W.max() / W.mean())
    a, b = pair_index(K)
    P = len(a)
    se_m = np.sqrt(np.maximum(np.diag(Sigma), 0.0))
    se_d = np.sqrt(np.maximum(Sigma[a, a] + Sigma[b, b] - 2.0 * Sigma[a, b], 0.0))
    deg_m, v_m, up_m, dn_m = _row_modes(UV, min_differ)
    deg_d, v_d, up_d, dn_d = _pair_modes(UV, min_differ, R)
    deg_m |= se_m <= 0
    deg_d |= se_d <= 0
    # the units' degrees of freedom (questions, or clusters: C_eff - T), with the Student t correction fading beyond
    # DF_FADE of them: the max-t's law is multivariate t with nu degrees of freedom
    nu0 = max(1.0, float(W.sum() ** 2 / (W ** 2).sum()) - T)
    nu = nu0 * max(1.0, nu0 / DF_FADE)

    def sf(c):  # the per-claim tail of the max-t's t law (scipy's t.sf is this function, without its overhead)
        return special.stdtr(nu, -c)

    # the multiplier bootstrap's law given the data is N(0, Sigma): drawn as such, in blocks, the maxima kept
    ev, Q = np.linalg.eigh(Sigma)
    L = Q * np.sqrt(np.clip(ev, 0.0, None))
    mx_m = np.zeros(n_boot)
    mx_d = np.zeros(n_boot)
    keep_m = np.flatnonzero(~deg_m)
    keep_d = np.flatnonzero(~deg_d)
    for s in range(0, n_boot, 256):
        e = min(s + 256, n_boot)
        G = rng.standard_normal((e - s, K)) @ L.T
        scale = np.sqrt(rng.chisquare(nu, e - s) / nu)
        if len(keep_m):
            mx_m[s:e] = np.max(np.abs(G[:, keep_m]) / se_m[keep_m], axis=1) / scale
        t = np.zeros(e - s)
        for p in range(0, len(keep_d), chunk):
            j = keep_d[p:p + chunk]
            t = np.maximum(t, np.max(np.abs(G[:, a[j]] - G[:, b[j]]) / se_d[j], axis=1))
        mx_d[s:e] = t / scale
    c_m, ex_m = _solve_crit(mx_m if len(keep_m) else np.zeros(0), int(deg_m.sum()), delta, sf)
    c_d, ex_d = _solve_crit(mx_d if len(keep_d) else np.zeros(0), int(deg_d.sum()), delta, sf)
    alpha_m, alpha_d = float(2.0 * sf(c_m)), float(2.0 * sf(c_d))
    crit_m = np.full(K, c_m)
    crit_d = np.full(P, c_d)
    if clusters is not None:
        # a claim whose variance sits on a few clusters: Student t at the per-claim level with its Satterthwaite
        # degrees of freedom, scaled by C_eff / 10 beyond 10 clusters, at most nu
        grow = max(1.0, (nu0 + T) / 10.0)
        Z2 = Z * Z
        m2f = Z2 @ f
        m4f = (Z2 * Z2) @ (f * f)
        crit_m = np.maximum(c_m, stats.t.isf(alpha_m / 2.0, np.minimum(nu, grow * _satterthwaite(m2f, m4f, nu))))
        # a pair's sums u = z_a - z_b: sum f u^2 and sum f^2 u^4 from K x K cross-moment matrices
        m11 = (Z * f) @ Z.T
        m31 = (Z2 * Z * f * f) @ Z.T
        m22 = (Z2 * f * f) @ Z2.T
        u2 = m2f[a] - 2.0 * m11[a, b] + m2f[b]
        u4 = m4f[a] - 4.0 * m31[a, b] + 6.0 * m22[a, b] - 4.0 * m31[b, a] + m4f[b]
        crit_d = np.maximum(c_d, stats.t.isf(alpha_d / 2.0, np.minimum(nu, grow * _satterthwaite(u2, np.maximum(
            u4, 0.0), nu))))
    lo, hi = _score_interval(m, se_m, crit_m, low, high)
    e_lo, e_hi = _exact_interval(v_m[deg_m], up_m[deg_m], dn_m[deg_m], U, ex_m / 2.0, low, high, widen)
    lo[deg_m], hi[deg_m] = e_lo, e_hi
    d = m[a] - m[b]
    half = crit_d * se_d
    d_lo, d_hi = d - half, d + half
    e_lo, e_hi = _exact_interval(v_d[deg_d], up_d[deg_d], dn_d[deg_d], U, ex_d / 2.0, -R, R, widen)
    d_lo[deg_d], d_hi[deg_d] = e_lo, e_hi
    half[deg_d] = (e_hi - e_lo) / 2.0
    lo, hi = np.clip(lo, low, high), np.clip(hi, low, high)
    d_lo = np.maximum(np.clip(d_lo, -R, R), lo[a] - hi[b])
    d_hi = np.minimum(np.clip(d_hi, -R, R), hi[a] - lo[b])
    return CompareCore(est=m, lo=lo, hi=hi, d=d, d_lo=d_lo, d_hi=d_hi, half=half, crit=float(c_d), units=U,
                       alpha_models=alpha_m, alpha_pairs=alpha_d, exact_models=deg_m, exact_pairs=deg_d, df=nu,
                       alpha_exact_models=ex_m, alpha_exact_pairs=ex_d)


# -- the finite guarantee --------------------------------------------------------------------------------------


def eb_confidence_sequence(Y: np.ndarray, alpha: float, *, horizon: int | None = None,
                           population: int | None = None, cap: float = 0.5,
                           block: int = 512) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The predictable plug-in empirical-Bernstein confidence sequence of each row of ``Y``.

    The result is the running intersection at the last column. The values of each row are in [0, 1] and read left
    to right (Waudby-Smith and Ramdas 2024, eqs. 13-15):
    mu_t = (1/2 + sum_{i<=t} y_i) / (t + 1), s2_t = (1/4 + sum_{i<=t} (y_i - mu_i)^2) / (t + 1),
    lambda_t = min(sqrt(2 log(2/alpha) / (s2_{t-1} h_t)), cap) with h_t = t log(1 + t) (the anytime schedule) or
    the ``horizon`` when the number of units is known in advance (tightest there; any predictable bet keeps the
    sequence valid at every t, so the horizon only moves where it is narrowest), v_t = 4 (y_t - mu_{t-1})^2,
    psi(l) = (-log(1 - l) - l) / 4, and the set at t is
    sum lambda_i y_i / sum lambda_i +- (log(2/alpha) + sum v_i psi(lambda_i)) / sum lambda_i.

    With a finite ``population`` of N values read without replacement, the target is their mean mu and the i-th
    value's conditional mean is (N mu - S_{i-1}) / (N - i + 1) (S: the sum read before it; Waudby-Smith and Ramdas,
    "Confidence sequences for sampling without replacement"), affine in mu, so the set is
    sum lambda_i (y_i + S_{i-1} / (N - i + 1)) / sum lambda_i w_i +- (log(2/alpha) + sum v_i psi(lambda_i)) /
    sum lambda_i w_i with w_i = N / (N - i + 1).

    Parameters
    ----------
    Y : ndarray
        rows x T values in [0, 1], each row one sequence read left to right.
    alpha : float
        Error level of each (two-sided) sequence.
    horizon : int, optional
        Number of units the bets are tuned for; None uses the anytime schedule h_t = t log(1 + t).
    population : int, optional
        Size N of the finite population the values were drawn from without replacement; None: drawn with replacement
        (or from an infinite population).
    cap : float, default 0.5
        Largest bet lambda_t.
    block : int, default 512
        Columns handled at once (the sequence is computed in closed form, vectorised over rows and in blocks).

    Returns
    -------
    tuple of ndarray
        (lower, upper, the radius at the last column), each per row, clipped to [0, 1].

    Examples
    --------
    >>> import numpy as np
    >>> y = (np.random.default_rng(0).random((1, 200)) < 0.75).astype(float)
    >>> lo, hi, radius = eb_confidence_sequence(y, 0.05)
    >>> print(lo.round(3), hi.round(3), radius.round(3))
    [0.595] [0.814] [0.111]
    """
    rows, T = Y.shape
    log2a = float(np.log(2.0 / alpha))
    sum_y = np.zeros(rows)
    sum_sq = np.zeros(rows)
    mu_prev = np.full(rows, 0.5)
    s2_prev = np.full(rows, 0.25)
    sum_l = np.zeros(rows)
    sum_ly = np.zeros(rows)
    sum_vpsi = np.zeros(rows)
    lo = np.zeros(rows)
    hi = np.ones(rows)
    radius = np.ones(rows)
    for t0 in range(0, T, block):
        y = Y[:, t0:t0 + block]
        B = y.shape[1]
        t = np.arange(t0 + 1, t0 + B + 1, dtype=np.float64)
        cum_y = sum_y[:, None] + np.cumsum(y, axis=1)
        mu = (0.5 + cum_y) / (t + 1.0)
        mu_before = np.concatenate([mu_prev[:, None], mu[:, :-1]], axis=1)
        sq = (y - mu) ** 2
        cum_sq = sum_sq[:, None] + np.cumsum(sq, axis=1)
        s2 = (0.25 + cum_sq) / (t + 1.0)
        s2_before = np.concatenate([s2_prev[:, None], s2[:, :-1]], axis=1)
        h = float(horizon) if horizon is not None else t * np.log1p(t)
        lam = np.minimum(np.sqrt(2.0 * log2a / (s2_before * h)), cap)
        v = 4.0 * (y - mu_before) ** 2
        psi = (-np.log1p(-lam) - lam) / 4.0
        if population is None:
            lw, ly = lam, lam * y
        else:  # without replacement: each value's conditional mean given the ones read before it
            left = float(population) - t + 1.0
            before = cum_y - y  # S_{i-1}
            lw, ly = lam * (float(population) / left), lam * (y + before / left)
        c_l = sum_l[:, None] + np.cumsum(lw, axis=1)
        c_ly = sum_ly[:, None] + np.cumsum(ly, axis=1)
        c_vpsi = sum_vpsi[:, None] + np.cumsum(v * psi, axis=1)
        centre = c_ly / c_l
        rad = (log2a + c_vpsi) / c_l
        lo = np.maximum(lo, np.max(centre - rad, axis=1))
        hi = np.minimum(hi, np.min(centre + rad, axis=1))
        radius = rad[:, -1]
        sum_y, sum_sq, mu_prev, s2_prev = cum_y[:, -1], cum_sq[:, -1], mu[:, -1], s2[:, -1]
        sum_l, sum_ly, sum_vpsi = c_l[:, -1], c_ly[:, -1], c_vpsi[:, -1]
    lo = np.clip(lo, 0.0, 1.0)
    hi = np.clip(hi, 0.0, 1.0)
    hi = np.maximum(hi, lo)  # the intersection never empties for a valid sequence; guard rounding
    return lo, hi, radius


def unit_means(S: np.ndarray, clusters: np.ndarray | None) -> np.ndarray:
    """Each unit's mean score per row: a question's (``clusters`` None), or a cluster's, each cluster weighted
    equally (codes 0 .. C-1, all present)."""
    if clusters is None:
        return S
    return _unit_sums(S, clusters) / np.bincount(clusters)[None, :]  # codes are 0 .. C-1, all present


def finite_rows(Y: np.ndarray, alpha: float, horizon: int, population: int | None):
    """Each row's (lower, upper, radius) on [0, 1]: the betting sequence, and, drawn with replacement, intersected
    with the excursion bounds away from 0 and 1 (module docstring), the level split between them."""
    if population is not None:
        lo, hi, rad = eb_confidence_sequence(Y, alpha, horizon=horizon, population=population)
        if Y.shape[1] >= population:  # the whole bank read: its mean is known
            exact = Y.mean(axis=1)
            return exact, exact.copy(), np.zeros(len(exact))
        return lo, hi, rad
    lo, hi, rad = eb_confidence_sequence(Y, alpha * (1.0 - EXCURSION), horizon=horizon)
    n = Y.shape[1]
    a_side = alpha * EXCURSION / 2.0
    b = max(float(horizon) / 2.0, 1.0)
    up = mixture_upper((Y > 0).sum(axis=1), n, a_side, b)  # mean <= P(y > 0)
    dn = mixture_upper((Y < 1).sum(axis=1), n, a_side, b)  # 1 - mean <= P(y < 1)
    return np.maximum(lo, 1.0 - dn), np.minimum(hi, up), rad


def finite(S: np.ndarray, clusters: np.ndarray | None, *, delta: float, low: float, high: float,
           rng: np.random.Generator | None, horizon: int | None = None, population: int | None = None,
           pair_chunk: int = 2048, threads: int | None = None, strata: np.ndarray | None = None,
           stratum_weights: np.ndarray | None = None) -> CompareCore:
    """Anytime-valid intervals for every model and pair, all at once.

    The method is described in the module docstring (Waudby-Smith and Ramdas 2024, the predictable plug-in
    empirical-Bernstein confidence sequence, with the excursion bounds, at level delta / (K + K (K - 1) / 2) per
    claim). The units (questions, or cluster means) are read in one order shared by every model; the bets are tuned
    to be tightest at ``horizon`` units, valid at every sample size whatever it is.

    Parameters
    ----------
    S : ndarray
        K x n scores, models x questions, in [low, high].
    clusters : ndarray or None
        (n,) integer codes 0 .. C-1 of each question's cluster (the unit is then the cluster's mean score), or None.
    delta : float
        Error level of the whole family of claims.
    low, high : float
        The score range.
    rng : numpy.random.Generator or None
        Draws the order the units are read in; ``None``: in the columns' order, the order a bank was queried in.
    horizon : int, optional
        Number of units the bets are tuned for (default: all of them).
    population : int, optional
        The columns were drawn without replacement from a bank of that many questions, whose own mean is the target.
    pair_chunk : int, default 2048
        Pairs computed at once.
    threads : int, optional
        Threads the chunks of pairs are spread over (default: :func:`assay.stats.bootstrap.default_threads`); the
        result is the same on any number.
    strata : ndarray, optional
        (n,) codes 0 .. T-1 of strata (tasks), each sampled on its own: every claim is computed within each stratum
        at its level / T and the strata combined with ``stratum_weights`` (default equal).
    stratum_weights : ndarray, optional
        (T,) weights of the strata (normalised to sum 1).

    Returns
    -------
    CompareCore
        Estimates and intervals per model and per pair; ``crit`` is the per-claim level and ``units`` the number of
        units read.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> S = (rng.random((3, 200)) < np.array([[0.8], [0.6], [0.55]])).astype(float)
    >>> core = finite(S, None, delta=0.05, low=0.0, high=1.0, rng=np.random.default_rng(1))
    >>> print(core.lo.round(3), core.hi.round(3), round(core.crit, 4))
    [0.602 0.431 0.368] [0.862 0.725 0.657] 0.0083
    """
    K = S.shape[0]
    R = high - low
    a, b = pair_index(K)
    P = len(a)
    alpha = delta / (K + P)  # a union bound over every claim, each a two-sided sequence
    if strata is None:
        groups = [np.arange(S.shape[1])]
        sw = np.ones(1)
    else:
        strata = np.asarray(strata, dtype=np.int64)
        groups = [np.flatnonzero(strata == t) for t in range(int(strata.max()) + 1)]
        sw = np.ones(len(groups)) if stratum_weights is None else np.asarray(stratum_weights, dtype=np.float64)
        sw = sw / sw.sum()
    a_g = alpha / len(groups)
    if threads is None:
        from ..stats.bootstrap import default_threads

        threads = default_threads()
    est = np.zeros(K)
    lo_m = np.zeros(K)
    hi_m = np.zeros(K)
    d_lo = np.zeros(P)
    d_hi = np.zeros(P)
    half = np.zeros(P)
    n_units = 0
    for g, weight in zip(groups, sw):
        Sg = S[:, g]
        cg = None
        if clusters is not None:
            _, cg = np.unique(np.asarray(clusters)[g], return_inverse=True)
        U = unit_means(Sg, cg)
        nu_g = U.shape[1]
        n_units += nu_g
        if rng is not None:  # None: the columns are already in the order they were drawn (a bank queried live)
            U = U[:, rng.permutation(nu_g)]
        h = nu_g if horizon is None else horizon
        Ym = (U - low) / R
        l_, h_, _ = finite_rows(Ym, a_g, h, population)
        est += weight * U.mean(axis=1)
        lo_m += weight * (l_ * R + low)
        hi_m += weight * (h_ * R + low)

        def chunk(s: int, U=U, h=h, weight=weight) -> None:  # each chunk computed the same way on any thread
            sl = slice(s, s + pair_chunk)
            Yd = ((U[a[sl]] - U[b[sl]]) + R) / (2.0 * R)
            l, hh, rad = finite_rows(Yd, a_g, h, population)
            d_lo[sl] += weight * (l * 2.0 * R - R)
            d_hi[sl] += weight * (hh * 2.0 * R - R)
            half[sl] += weight * rad * 2.0 * R

        starts = list(range(0, P, pair_chunk))
        if threads > 1 and len(starts) > 1:
            import concurrent.futures

            with concurrent.futures.ThreadPoolExecutor(min(threads, len(starts))) as pool:
                list(pool.map(chunk, starts))  # numpy releases the GIL in the chunks' array work
        else:
            for s in starts:
                chunk(s)
    d = est[a] - est[b]
    d_lo = np.maximum(d_lo, lo_m[a] - hi_m[b])
    d_hi = np.minimum(d_hi, hi_m[a] - lo_m[b])
    return CompareCore(est=est, lo=lo_m, hi=hi_m, d=d, d_lo=d_lo, d_hi=d_hi, half=half, crit=alpha, units=n_units,
                       alpha_models=alpha, alpha_pairs=alpha, exact_models=np.zeros(K, bool),
                       exact_pairs=np.zeros(P, bool), df=None)


def verdicts(d_lo: np.ndarray, d_hi: np.ndarray, margin: float | None) -> tuple[np.ndarray, np.ndarray]:
    """Each pair's verdict from its difference interval, and whether the interval lies inside +-margin.

    The verdict is ``"a better"`` (the interval above 0), ``"b better"`` (below 0), ``"equal"`` (the interval is the
    single point 0: a difference known exactly, as when a whole bank was asked), ``"equivalent"`` (only with a
    margin: the interval contains 0 and lies inside +-margin) or ``"unresolved"``.

    Parameters
    ----------
    d_lo, d_hi : ndarray
        (P,) lower and upper ends of each pair's interval for mean(a) - mean(b).
    margin : float or None
        Equivalence margin; None: no pair is ever ``"equivalent"``.

    Returns
    -------
    tuple of ndarray
        The (P,) verdicts (object array of str) and the (P,) booleans "inside +-margin" (all False without one).

    Examples
    --------
    >>> import numpy as np
    >>> v, inside = verdicts(np.array([0.1, -0.3, -0.02, -0.2, 0.0]), np.array([0.3, -0.1, 0.03, 0.1, 0.0]), 0.05)
    >>> print(v.tolist(), inside.tolist())
    ['a better', 'b better', 'equivalent', 'unresolved', 'equal'] [False, False, True, False, True]
    >>> print(verdicts(np.array([-0.02, 0.0]), np.array([0.03, 0.0]), None)[0].tolist())
    ['unresolved', 'equal']
    """
    inside = (d_lo >= -margin) & (d_hi <= margin) if margin is not None else np.zeros(len(d_lo), bool)
    v = np.full(len(d_lo), "unresolved", dtype=object)
    v[d_lo > 0] = "a better"
    v[d_hi < 0] = "b better"
    v[(v == "unresolved") & inside] = "equivalent"
    v[(d_lo == 0) & (d_hi == 0)] = "equal"
    return v, inside


def ranks_and_tiers(est: np.ndarray, d_lo: np.ndarray, d_hi: np.ndarray,
                    better: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rank intervals and tiers of every model from the pair intervals.

    The rank interval is [1 + #certified better, K - #certified worse] and the tier is 1 + the longest chain of
    certified "better" above a model.

    Parameters
    ----------
    est : ndarray
        (K,) estimated means (they order the chains: a certified "better" goes with a higher estimate).
    d_lo, d_hi : ndarray
        (P,) pair intervals for mean(a) - mean(b), in :func:`pair_index` order.
    better : ndarray, optional
        (K, K) booleans, [i, j] when i is certified better than j, to use instead of the pairs' own verdicts (the
        adaptive comparison passes their transitive closure).

    Returns
    -------
    tuple of ndarray
        (rank_low, rank_high, tier), each (K,) integers.

    Examples
    --------
    >>> import numpy as np
    >>> low, high, tier = ranks_and_tiers(np.array([0.8, 0.6, 0.55]), np.array([0.03, 0.08, -0.07]),
    ...                                   np.array([0.27, 0.34, 0.19]))
    >>> print(low.tolist(), high.tolist(), tier.tolist())
    [1, 2, 2] [1, 3, 3] [1, 2, 2]
    """
    K = len(est)
    a, b = pair_index(K)
    if better is None:
        better = np.zeros((K, K), bool)  # better[i, j]: i certified better than j
        better[a[d_lo > 0], b[d_lo > 0]] = True
        better[b[d_hi < 0], a[d_hi < 0]] = True
    rank_low = 1 + better.sum(axis=0)
    rank_high = K - better.sum(axis=1)
    # a certified "better" goes with a higher estimate, so the estimates order the chains
    tier = np.ones(K, dtype=np.int64)
    for j in np.argsort(-est, kind="stable"):
        above = better[:, j]
        if above.any():
            tier[j] = 1 + int(tier[above].max())
    return rank_low, rank_high, tier


def items_to_resolve(d: np.ndarray, half: np.ndarray, units: int, items: int) -> np.ndarray:
    """How many questions would resolve each pair's observed difference under the same guarantee.

    The half-width shrinks as 1/sqrt(sample size) (exactly for the asymptotic interval, up to log factors for the
    finite one), so n_units * (half / |d|)^2 units, in questions at the sample's questions per unit. A planning
    estimate from the observed effect; infinite when the observed difference is 0.

    Parameters
    ----------
    d : ndarray
        (P,) observed differences.
    half : ndarray
        (P,) half-widths of their intervals.
    units : int
        Units (questions or clusters) the intervals were computed from.
    items : int
        Questions in the sample.

    Returns
    -------
    ndarray
        (P,) questions needed, rounded up; ``inf`` where the observed difference is 0.

    Examples
    --------
    >>> import numpy as np
    >>> print(items_to_resolve(np.array([0.2, 0.05, 0.0]), np.array([0.1, 0.1, 0.1]), 200, 200).tolist())
    [50.0, 800.0, inf]
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        need = units * (half / np.abs(d)) ** 2 * (items / units)
    return np.where(np.abs(d) > 0, np.ceil(need), np.inf)
