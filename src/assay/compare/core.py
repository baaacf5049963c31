"""The compare core on arrays: every model's mean score and every pair's paired difference, with intervals that
hold all at once, and the rank and tier claims that follow from them.

Setting. ``S`` is models x questions (scores in [low, high], each question's epochs averaged), the questions a
random sample of a population (the sampled unit is the cluster when questions come in clusters). The targets are
each model's mean score over the population and each pair's difference of means, mean(a) - mean(b).

Two guarantees:

* ``asymptotic`` (Miller 2024, "Adding Error Bars to Evals", paired and clustered standard errors): the covariance
  of the K model means from cluster sums of centred scores, Sigma = C / (C - 1) * Z Z' / n^2 (Z: K x C sums over each
  cluster of s_ki - m_k; every question its own cluster when none are given); a pair's variance is
  Sigma_aa + Sigma_bb - 2 Sigma_ab (paired: what two models share on a question cancels). The family of all K model
  intervals and K (K - 1) / 2 pair intervals holds together by a studentized max-t critical value from the Gaussian
  multiplier bootstrap of the cluster sums (whose law given the data is N(0, Sigma), drawn as such). Cautions for
  small samples: each claim's critical value is the same per-claim level taken from Student t with the claim's
  effective degrees of freedom (Satterthwaite's, from its cluster sums, at most C - 1: few clusters, or a few that
  carry most of the variance, widen it), and a pseudo-observation of the largest possible deviation keeps every
  standard error at least range / n (two models that agree on every sampled question, or a model scoring 1
  everywhere, still get an interval of positive width).
* ``finite`` (Waudby-Smith and Ramdas 2024, "Estimating means of bounded random variables by betting", the
  predictable plug-in empirical-Bernstein confidence sequence, their eqs. 13-15): for each claim the units (questions,
  or clusters) are read in one seeded order shared by every model, and the running intersection of the sequence at
  level delta / (K + K (K - 1) / 2) (a union bound over every claim) holds at every sample size at once, so all
  claims hold together with probability at least 1 - delta whenever one stops (optional stopping is allowed). With
  clusters, the unit is the cluster's mean score and the target is the mean over clusters, each cluster weighted
  equally. Every claim's sequence is computed in closed form, vectorised over claims and in blocks of units.

From the pair intervals: pair verdicts, rank intervals [1 + #certified better, K - #certified worse] (the true rank
with ties is [1 + #truly better, K - #truly worse]) and tiers (1 + the longest chain of certified "better" above).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy import stats

from ..errors import AssayInputError

__all__ = ["CompareCore", "pair_index", "asymptotic", "finite", "eb_confidence_sequence", "ranks_and_tiers",
           "verdicts", "items_to_resolve", "GUARANTEES"]

GUARANTEES = ("asymptotic", "finite")


class CompareCore(NamedTuple):
    """Per model (K,): ``est``, ``lo``, ``hi``; per pair (P,) in :func:`pair_index` order: ``d``, ``d_lo``, ``d_hi``,
    ``half`` (half-width before clipping to the range); ``crit`` (asymptotic: the simultaneous critical value; finite:
    the per-claim level), ``units`` (questions or clusters used)."""

    est: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    d: np.ndarray
    d_lo: np.ndarray
    d_hi: np.ndarray
    half: np.ndarray
    crit: float
    units: int


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


def _unit_sums(X: np.ndarray, clusters: np.ndarray | None) -> np.ndarray:
    """Sums of the columns of ``X`` (rows x questions) over each cluster -> rows x clusters."""
    if clusters is None:
        return X
    order = np.argsort(clusters, kind="stable")
    cs = clusters[order]
    starts = np.flatnonzero(np.r_[True, cs[1:] != cs[:-1]])
    return np.add.reduceat(X[:, order], starts, axis=1)


def asymptotic(S: np.ndarray, clusters: np.ndarray | None, *, delta: float, low: float, high: float,
               rng: np.random.Generator, n_boot: int = 4000, chunk: int = 4096) -> CompareCore:
    """Cluster-robust paired intervals for every model and pair, simultaneous by a studentized max-t.

    The method is described in the module docstring (Miller 2024, "Adding Error Bars to Evals"): the covariance of the
    model means from cluster sums of centred scores, each claim's critical value from the Gaussian multiplier bootstrap
    of the cluster sums, raised to Student t with the claim's Satterthwaite degrees of freedom, and a standard error of
    at least range / n.

    Parameters
    ----------
    S : ndarray
        K x n scores, models x questions, in [low, high].
    clusters : ndarray or None
        (n,) integer codes of each question's cluster, or None (every question its own cluster).
    delta : float
        Error level of the whole family of K model and K (K - 1) / 2 pair intervals.
    low, high : float
        The score range; the model intervals are clipped to it and the pair intervals to +-(high - low).
    rng : numpy.random.Generator
        Randomness of the multiplier bootstrap.
    n_boot : int, default 4000
        Bootstrap draws of the max-t statistic.
    chunk : int, default 4096
        Pairs handled at once when taking the max over claims (bounds the memory).

    Returns
    -------
    CompareCore
        Estimates and intervals per model and per pair; ``crit`` is the simultaneous (Gaussian) critical value and
        ``units`` the number of clusters C.

    Raises
    ------
    AssayInputError
        With fewer than 2 clusters.

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
    m = S.mean(axis=1)
    Z = _unit_sums(S - m[:, None], clusters)
    C = Z.shape[1]
    if C < 2:
        raise AssayInputError("a cluster-robust interval needs at least 2 clusters")
    Sigma = (Z @ Z.T) * (C / (C - 1)) / n**2
    a, b = pair_index(K)
    se_m = np.sqrt(np.maximum(np.diag(Sigma), 0.0) + (R / 2 / n) ** 2)
    var_d = Sigma[a, a] + Sigma[b, b] - 2.0 * Sigma[a, b]
    se_d = np.sqrt(np.maximum(var_d, 0.0) + (R / n) ** 2)
    # the multiplier bootstrap's law given the data is N(0, Sigma): drawn as such, in chunks, the max over claims kept
    w, Q = np.linalg.eigh(Sigma)
    L = Q * np.sqrt(np.clip(w, 0.0, None))
    mx = np.empty(n_boot)
    for s in range(0, n_boot, 256):
        e = min(s + 256, n_boot)
        G = rng.standard_normal((e - s, K)) @ L.T
        t = np.max(np.abs(G / se_m), axis=1)
        for p in range(0, len(a), chunk):
            sl = slice(p, p + chunk)
            t = np.maximum(t, np.max(np.abs((G[:, a[sl]] - G[:, b[sl]]) / se_d[sl]), axis=1))
        mx[s:e] = t
    crit = float(np.quantile(mx, 1.0 - delta))
    # few clusters, or a few clusters that carry most of a claim's variance: each claim's critical value at the same
    # per-claim level from Student t with the claim's effective degrees of freedom (Satterthwaite: (sum_c u_c^2)^2
    # / sum_c u_c^4 over its cluster sums u_c, at most C - 1), never below the Gaussian value
    per_claim = 2.0 * stats.norm.sf(crit)
    Z2 = Z * Z
    m2 = Z2.sum(axis=1)
    m4 = (Z2 * Z2).sum(axis=1)
    crit_m = _t_crit(per_claim, _eff_df(m2, m4, C))
    # a pair's sums u = z_a - z_b: sum u^2 and sum u^4 from K x K cross-moment matrices (no pairs x clusters array)
    m31 = (Z2 * Z) @ Z.T  # sum_c z_ic^3 z_jc
    m22 = Z2 @ Z2.T  # sum_c z_ic^2 z_jc^2
    m11 = Z @ Z.T
    u2 = m2[a] - 2.0 * m11[a, b] + m2[b]
    u4 = m4[a] - 4.0 * m31[a, b] + 6.0 * m22[a, b] - 4.0 * m31[b, a] + m4[b]
    crit_d = _t_crit(per_claim, _eff_df(u2, np.maximum(u4, 0.0), C))
    crit_m, crit_d = np.maximum(crit_m, crit), np.maximum(crit_d, crit)
    d = m[a] - m[b]
    half = crit_d * se_d
    return CompareCore(est=m, lo=np.clip(m - crit_m * se_m, low, high), hi=np.clip(m + crit_m * se_m, low, high),
                       d=d, d_lo=np.clip(d - half, -R, R), d_hi=np.clip(d + half, -R, R), half=half, crit=crit,
                       units=C)


def _eff_df(sum2: np.ndarray, sum4: np.ndarray, C: int) -> np.ndarray:
    """Satterthwaite's effective degrees of freedom of a variance that is a sum of squared cluster sums u_c, from
    sum u^2 and sum u^4: (sum u^2)^2 / sum u^4, at most C - 1 (C for C equal contributions; 1 when one cluster
    carries everything)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        df = np.where(sum4 > 0, sum2 ** 2 / sum4, C - 1.0)
    return np.clip(df, 1.0, C - 1.0)


def _t_crit(per_claim: float, df: np.ndarray) -> np.ndarray:
    return stats.t.isf(per_claim / 2.0, df)


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


def _unit_means(S: np.ndarray, clusters: np.ndarray | None) -> np.ndarray:
    if clusters is None:
        return S
    return _unit_sums(S, clusters) / np.bincount(clusters)[None, :]  # codes are 0 .. C-1, all present


def finite(S: np.ndarray, clusters: np.ndarray | None, *, delta: float, low: float, high: float,
           rng: np.random.Generator | None, horizon: int | None = None, population: int | None = None,
           pair_chunk: int = 2048, threads: int | None = None) -> CompareCore:
    """Anytime-valid intervals for every model and pair, all at once.

    The method is described in the module docstring (Waudby-Smith and Ramdas 2024, the predictable plug-in
    empirical-Bernstein confidence sequence, at level delta / (K + K (K - 1) / 2) per claim). The units (questions,
    or cluster means) are read in one order shared by every model; the bets are tuned to be tightest at ``horizon``
    units, valid at every sample size whatever it is.

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
    [0.607 0.437 0.374] [0.858 0.718 0.649] 0.0083
    """
    K = S.shape[0]
    U = _unit_means(S, clusters)
    n_units = U.shape[1]
    if rng is not None:  # None: the columns are already in the order they were drawn (a bank queried live)
        U = U[:, rng.permutation(n_units)]
    R = high - low
    a, b = pair_index(K)
    P = len(a)
    alpha = delta / (K + P)  # a union bound over every claim, each a two-sided sequence
    Ym = (U - low) / R
    h = n_units if horizon is None else horizon
    lo_m, hi_m, _ = eb_confidence_sequence(Ym, alpha, horizon=h, population=population)
    est = U.mean(axis=1)
    d_lo = np.empty(P)
    d_hi = np.empty(P)
    half = np.empty(P)

    def chunk(s: int) -> None:  # each chunk of pairs computed the same way on any number of threads
        sl = slice(s, s + pair_chunk)
        Yd = ((U[a[sl]] - U[b[sl]]) + R) / (2.0 * R)
        l, hh, rad = eb_confidence_sequence(Yd, alpha, horizon=h, population=population)
        d_lo[sl] = l * 2.0 * R - R
        d_hi[sl] = hh * 2.0 * R - R
        half[sl] = rad * 2.0 * R

    starts = list(range(0, P, pair_chunk))
    if threads is None:
        from ..stats.bootstrap import default_threads

        threads = default_threads()
    if threads > 1 and len(starts) > 1:
        import concurrent.futures

        with concurrent.futures.ThreadPoolExecutor(min(threads, len(starts))) as pool:
            list(pool.map(chunk, starts))  # numpy releases the GIL in the chunks' array work
    else:
        for s in starts:
            chunk(s)
    d = est[a] - est[b]
    return CompareCore(est=est, lo=lo_m * R + low, hi=hi_m * R + low, d=d, d_lo=d_lo, d_hi=d_hi, half=half,
                       crit=alpha, units=n_units)


def verdicts(d_lo: np.ndarray, d_hi: np.ndarray, margin: float | None) -> tuple[np.ndarray, np.ndarray]:
    """Each pair's verdict from its difference interval, and whether the interval lies inside +-margin.

    The verdict is ``"a better"`` (the interval above 0), ``"b better"`` (below 0), ``"equivalent"`` (with a margin:
    the interval contains 0 and lies inside +-margin) or ``"unresolved"``.

    Parameters
    ----------
    d_lo, d_hi : ndarray
        (P,) lower and upper ends of each pair's interval for mean(a) - mean(b).
    margin : float or None
        Equivalence margin; None: no pair is ever ``"equivalent"``.

    Returns
    -------
    tuple of ndarray
        The (P,) verdicts (object array of str) and the (P,) booleans "inside +-margin".

    Examples
    --------
    >>> import numpy as np
    >>> v, inside = verdicts(np.array([0.1, -0.3, -0.02, -0.2]), np.array([0.3, -0.1, 0.03, 0.1]), 0.05)
    >>> print(v.tolist(), inside.tolist())
    ['a better', 'b better', 'equivalent', 'unresolved'] [False, False, True, False]
    """
    inside = (np.zeros(len(d_lo), bool) if margin is None else (d_lo >= -margin) & (d_hi <= margin))
    v = np.full(len(d_lo), "unresolved", dtype=object)
    v[d_lo > 0] = "a better"
    v[d_hi < 0] = "b better"
    v[(v == "unresolved") & inside] = "equivalent"
    return v, inside


def ranks_and_tiers(est: np.ndarray, d_lo: np.ndarray, d_hi: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rank intervals and tiers of every model from the pair intervals.

    The rank interval is [1 + #certified better, K - #certified worse] and the tier is 1 + the longest chain of
    certified "better" above a model.

    Parameters
    ----------
    est : ndarray
        (K,) estimated means (they order the chains: a certified "better" goes with a higher estimate).
    d_lo, d_hi : ndarray
        (P,) pair intervals for mean(a) - mean(b), in :func:`pair_index` order.

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
