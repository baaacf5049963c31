"""Simultaneous confidence bands for a CDF: DKW (Massart constant) and Berk-Jones with an exact
critical value.

Setting (Farzaneh and Simeone, PS-DME, Sec. 3 and App. F): X_1..X_n i.i.d. with CDF F, empirical CDF
Fhat(x) = #{i : X_i <= x} / n (eq. 2). A band [L(x), U(x)] has level 1 - alpha when
P(L(x) <= F(x) <= U(x) for every x) >= 1 - alpha. ``alpha`` is the miscoverage of ONE band
(DESIGN.md naming); PS-DME calls this with alpha = f^{-1}(K / (delta |S|)) (eq. 14, 30) so that the
selected bands have FCR <= delta. KPIs are "lower is better", which does not change the band; the
guaranteed KPI X* = inf{x : L(x) >= 1 - gamma} (eq. 18) only reads the lower bound.

A band is a function of the ECDF value only: L(x) = lo(j), U(x) = hi(j) with j = n Fhat(x). Because
Fhat is a right-continuous step function, coverage has to hold on BOTH sides of every jump: at x_(i)
(Fhat = #{X <= x_(i)} / n) and just before it (Fhat = #{X < x_(i)} / n). Every band here reports both
(``lower``/``upper`` and ``lower_left``/``upper_left``), with ties counted correctly.

DKW
---
Massart (1990): P(sup_x |Fhat(x) - F(x)| > eps) <= 2 exp(-2 n eps^2) for every eps > 0 (paper eq. 9),
so

    eps(n, alpha) = sqrt( log(2 / alpha) / (2 n) )                      (eq. 11 / 14)

and L = max(0, Fhat - eps), U = min(1, Fhat + eps) (eq. 10a-b, 13a-b). The paper uses this
TWO-SIDED band everywhere, including the guaranteed KPI (eq. 18 reads L of the two-sided band), and
that is the default here. The one-sided variants (``side="lower"`` / ``"upper"``) use Massart's
one-sided bound P(sup_x (Fhat - F) > eps) <= exp(-2 n eps^2), valid when exp(-2 n eps^2) <= 1/2,
i.e. alpha <= 1/2, giving eps = sqrt(log(1/alpha) / (2 n)); they are NOT what the paper uses (its
e-values come from the two-sided p-value) and are offered only for a lower-bound-only use outside
PS-DME. DKW is valid for every F, continuous or not (for discontinuous F the KS statistic is
stochastically smaller), so ties are fine.

Berk-Jones
----------
With the Bernoulli KL divergence K(p, q) = p log(p/q) + (1-p) log((1-p)/(1-q)) (eq. 38; K(0, q) =
-log(1-q), K(1, q) = -log q), the BJ statistic is S_n(F) = sup_x K(Fhat(x), F(x)) (eq. 37), TWO-SIDED
(both directions of deviation, KL on the paper's scale, not multiplied by n; the notes' t equals
n * c). Under the null with F continuous, S_n(F) has the law of S_n^0 = sup_u K(G(u), u) for G the
ECDF of n uniforms (eq. 39). The band is {u : K(Fhat(x), u) <= c} (eq. 41), i.e. [a_j, b_j] at
Fhat = j/n, the two roots of K(j/n, q) = c (a_0 = 0, b_n = 1, b_0 = 1 - e^{-c}, a_n = e^{-c}).
c = q_n(1 - alpha) (eq. 40) is computed EXACTLY:

* The sup runs over u in [0, 1], i.e. over both sides of every jump of G. On [U_(i), U_(i+1)) G = i/n
  and K(i/n, .) is convex with minimum 0 at i/n, so S_n^0 <= c iff
      a_i <= U_(i) <= b_{i-1}   for i = 1..n                                   (*)
  (the same convention as Duembgen's R code BJ_band). In counting-process form, with N(u) = #{U <= u}:
  N(a_i) <= i - 1 and N(b_{i-1}) >= i.
* P(*) is a boundary-crossing probability of the uniform empirical process, computed by Noe's
  recursion in its Poissonised form (Noe 1972; Moscovich and Nadler 2017): replace the sample by a
  Poisson process of rate n on [0, 1]; between consecutive breakpoints (the merged, sorted a_i and
  b_{i-1}) the count increases by Poisson(n * gap); after each breakpoint the counts violating its
  constraint are set to 0. Conditionally on N(1) = n the Poisson process is the uniform sample, so
      P(*) = P_Pois(path inside, N(1) = n) / P_Pois(N(1) = n),  P_Pois(N(1) = n) = e^{-n} n^n / n!.
  We drop the e^{-lambda} factor of every step (they multiply to e^{-n} and cancel) and renormalise the
  state by its maximum at every step, keeping the log of the scale: this is the rate-n Poissonisation
  that the notes found accurate (rate 1 underflows in the tail). Each step convolves only the window
  of counts allowed between the nearest constraints (O(sqrt(n)) wide for BJ), so a probability costs
  O(n sqrt(n)). The Poisson kernel lambda^d / d! is cut where a term is below 1e-25 times the kernel's
  sum e^lambda; the dropped mass is below double-precision rounding of the kept sum (the error on P is
  at most about 2n * 1e-25 * sqrt(2 pi n), i.e. < 1e-17 for n <= 10^6), so the result is exact to
  floating point, not an asymptotic approximation.
* P(*) is continuous and strictly increasing in c. The critical value is the smallest c with
  P(*) >= 1 - alpha: Brent's method on log(1 - P(c)) - log(alpha), then moved up by the root
  tolerance so the returned c is on the conservative side. Precision of 1 - P is about 1e-13 absolute,
  so alpha below ~1e-10 is not resolved (raised as an error).
* For discontinuous F, F(x) ranges over a subset of [0, 1] and the statistic is a sup over that subset,
  so the band stays valid (conservative) with ties.

Boundaries a_j are found by vectorised bisection on log q in [log p - (c - (1-p) log(1-p)) / p, log p]
(at the left end K(p, q) >= p log(p/q) + (1-p) log(1-p) >= c), 80 halvings, i.e. to relative
precision far below 1e-16; b_j = 1 - a(1 - j/n) by the symmetry K(p, q) = K(1-p, 1-q).
Critical values and the boundary tables are cached per (n, alpha) with functools.lru_cache.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy import optimize
from scipy.special import gammaln, xlog1py, xlogy

from ..errors import AssayInputError

__all__ = [
    "kl_bernoulli",
    "kl_bounds",
    "dkw_epsilon",
    "dkw_band",
    "bj_noncrossing_probability",
    "bj_critical_value",
    "bj_boundaries",
    "bj_band",
    "CDFBand",
    "band_covers",
]

_KERNEL_CUT = 1e-25  # Poisson-kernel terms below this fraction of e^lambda are dropped (see docstring)
_BISECT_STEPS = 80
_MIN_ALPHA = 1e-10


# ---------------------------------------------------------------------------------------------------
# Bernoulli KL and its inversion
# ---------------------------------------------------------------------------------------------------


def kl_bernoulli(p, q) -> np.ndarray:
    """Bernoulli KL divergence K(p, q) (PS-DME eq. 38), with 0 log 0 = 0; +inf where q is 0 or 1 and p
    is not.

    Vectorised over broadcast ``p``, ``q`` in [0, 1].

    Parameters
    ----------
    p : array_like
        First Bernoulli mean(s), in [0, 1].
    q : array_like
        Second Bernoulli mean(s), in [0, 1]; broadcast against ``p``.

    Returns
    -------
    numpy.ndarray
        K(p, q) = p log(p / q) + (1 - p) log((1 - p) / (1 - q)), of the broadcast shape.

    Examples
    --------
    >>> kl_bernoulli([0.5, 0.0, 0.5], [0.25, 0.5, 1.0]).round(4).tolist()
    [0.1438, 0.6931, inf]
    """
    p = np.asarray(p, dtype=float)
    q = np.asarray(q, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = xlogy(p, p) - xlogy(p, q) + xlogy(1.0 - p, 1.0 - p) - xlog1py(1.0 - p, -q)
    return out


def _lower_root(p: np.ndarray, c: float) -> np.ndarray:
    """Smallest q in [0, p] with K(p, q) <= c, i.e. the root of K(p, q) = c below p (0 when p = 0)."""
    p = np.asarray(p, dtype=float)
    out = np.zeros_like(p)
    m = p > 0
    if not np.any(m):
        return out
    pm = p[m]
    a = xlogy(1.0 - pm, 1.0 - pm)  # (1-p) log(1-p) <= 0
    b = xlogy(pm, pm)
    hi = np.log(pm)
    lo = hi - (c - a) / pm
    for _ in range(_BISECT_STEPS):
        mid = 0.5 * (lo + hi)
        k = b - pm * mid + a - xlog1py(1.0 - pm, -np.exp(mid))
        big = k > c
        lo = np.where(big, mid, lo)
        hi = np.where(big, hi, mid)
    # hi always satisfies K <= c (it starts at q = p, where K = 0): the band's edge, inside by <= 1 ulp.
    out[m] = np.exp(hi)
    return out


def kl_bounds(p, c: float) -> tuple[np.ndarray, np.ndarray]:
    """Return the interval {q in [0, 1] : K(p, q) <= c} (PS-DME eq. 41) as (lower, upper), vectorised over ``p``.

    ``c`` is the KL threshold on the paper's scale (eq. 40), not multiplied by n.

    Parameters
    ----------
    p : array_like
        Bernoulli mean(s) in [0, 1], the ECDF value(s).
    c : float
        KL threshold, >= 0.

    Returns
    -------
    lower, upper : numpy.ndarray
        The ends of the interval, each of the shape of ``p``.

    Raises
    ------
    AssayInputError
        When ``c`` < 0.

    Examples
    --------
    >>> lo, hi = kl_bounds([0.0, 0.5, 1.0], 0.1)
    >>> lo.round(4).tolist(), hi.round(4).tolist()
    ([0.0, 0.2871, 0.9048], [0.0952, 0.7129, 1.0])
    """
    p = np.asarray(p, dtype=float)
    if c < 0:
        raise AssayInputError(f"c must be >= 0, got {c}")
    return _lower_root(p, c), 1.0 - _lower_root(1.0 - p, c)


# ---------------------------------------------------------------------------------------------------
# Bands as objects
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CDFBand:
    """A simultaneous CDF band for K configurations (or one, when built from a 1-D sample).

    ``x`` holds each row's observations sorted ascending (NaN = missing, sorted last); ``n`` the number
    of observations per row. At the i-th sorted point the band is [lower, upper] (value AT x_(i),
    Fhat = #{X <= x_(i)}/n) and [lower_left, upper_left] (just BEFORE x_(i), Fhat = #{X < x_(i)}/n);
    entries for missing observations are NaN. ``method`` is "dkw" or "bj"; ``alpha`` the miscoverage;
    ``width`` the per-row eps (DKW) or KL critical value c (BJ)."""

    x: np.ndarray
    n: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    lower_left: np.ndarray
    upper_left: np.ndarray
    method: str
    alpha: float
    side: str
    width: np.ndarray
    _bound: Callable = None  # (counts (K, m) int, rows) -> (lower, upper); counts of X <= point

    def at(self, grid) -> tuple[np.ndarray, np.ndarray]:
        """Band on a user grid: (lower, upper) of shape (..., len(grid)), the right-continuous values
        (Fhat(g) = #{X <= g}/n). For the left limit at g evaluate at np.nextafter(g, -np.inf)."""
        g = np.asarray(grid, dtype=float)
        if g.ndim != 1 or np.isnan(g).any():
            raise AssayInputError("grid must be a 1-D array without NaN")
        x2 = self.x.reshape(-1, self.x.shape[-1])
        counts = _counts_le(x2, g)
        lo, hi = self._bound(counts)
        shape = self.x.shape[:-1] + (g.size,)
        return lo.reshape(shape), hi.reshape(shape)


def _counts_le(x2: np.ndarray, g: np.ndarray) -> np.ndarray:
    """#{x_r <= g_j} for every row r of a row-sorted (NaN-last) array and every grid value."""
    order = np.argsort(g, kind="stable")
    gs = g[order]
    K, n = x2.shape
    m = gs.size
    # Stable sort of [row, grid]: grid values come after equal data values, so data <= g is counted.
    merged = np.concatenate([x2, np.broadcast_to(gs, (K, m))], axis=1)
    pos = np.argsort(merged, axis=1, kind="stable")
    inv = np.empty_like(pos)
    np.put_along_axis(inv, pos, np.arange(n + m)[None, :].repeat(K, 0), axis=1)
    cnt_sorted = inv[:, n:] - np.arange(m)[None, :]
    cnt = np.empty_like(cnt_sorted)
    cnt[:, order] = cnt_sorted
    # NaN data sort after every grid value, so they are never counted.
    return cnt


def _prepare(x) -> tuple[np.ndarray, tuple[int, ...], np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Sort rows, count non-missing, and the tie-aware counts #{X <= x_(i)} and #{X < x_(i)}."""
    x = np.asarray(x, dtype=float)
    if x.ndim == 0 or x.shape[-1] == 0:
        raise AssayInputError("x must have at least one observation per row (last axis)")
    if np.isinf(x).any():
        raise AssayInputError("x contains +-inf; bands need finite observations (use NaN for missing)")
    lead = x.shape[:-1]
    x2 = np.sort(x.reshape(-1, x.shape[-1]), axis=1)
    K, m = x2.shape
    nan = np.isnan(x2)
    n = m - nan.sum(axis=1)
    if np.any(n == 0):
        raise AssayInputError("a row has no observations (all NaN)")
    idx1 = np.arange(1, m + 1)
    ends = np.empty((K, m), dtype=bool)
    np.not_equal(x2[:, 1:], x2[:, :-1], out=ends[:, :-1])
    ends[:, -1] = True
    if ends.all():  # no ties (NaN != NaN, so missing entries never look tied)
        right = np.broadcast_to(idx1, (K, m))
        left = right - 1
    else:
        right = np.minimum.accumulate(np.where(ends, idx1, m + 1)[:, ::-1], axis=1)[:, ::-1]
        starts = np.empty_like(ends)
        starts[:, 0] = True
        starts[:, 1:] = ends[:, :-1]
        left = np.maximum.accumulate(np.where(starts, idx1 - 1, 0), axis=1)
    return x2, lead, n, right, left, nan


def _finish(x2, lead, n, lo_r, hi_r, lo_l, hi_l, nan, method, alpha, side, width, bound) -> CDFBand:
    if nan.any():
        for a in (lo_r, hi_r, lo_l, hi_l):
            a[nan] = np.nan
    m = x2.shape[1]
    shp = lead + (m,)
    return CDFBand(x=x2.reshape(shp), n=n.reshape(lead), lower=lo_r.reshape(shp), upper=hi_r.reshape(shp),
                   lower_left=lo_l.reshape(shp), upper_left=hi_l.reshape(shp), method=method, alpha=alpha,
                   side=side, width=np.asarray(width).reshape(lead), _bound=bound)


# ---------------------------------------------------------------------------------------------------
# DKW
# ---------------------------------------------------------------------------------------------------

_SIDES = ("both", "lower", "upper")


def dkw_epsilon(n, alpha, *, side: str = "both") -> np.ndarray:
    """DKW half-width with Massart's constant (PS-DME eq. 11/14).

    The half-width is sqrt(log(2/alpha) / (2n)) for the two-sided band (``side="both"``, what the paper uses) and
    sqrt(log(1/alpha) / (2n)) for a one-sided band (``"lower"``/``"upper"``, needs alpha <= 1/2). Vectorised over
    ``n`` and ``alpha``.

    Parameters
    ----------
    n : int or array_like
        The number of observations (positive).
    alpha : float or array_like
        The miscoverage of the band, in (0, 1).
    side : {"both", "lower", "upper"}, optional
        Which band: two-sided (the default) or one-sided.

    Returns
    -------
    numpy.ndarray
        The half-width eps, broadcast over ``n`` and ``alpha``.

    Raises
    ------
    AssayInputError
        When ``side`` is unknown, ``n`` is not positive, ``alpha`` is outside (0, 1), or a one-sided band is asked
        with alpha > 1/2.

    Examples
    --------
    >>> round(float(dkw_epsilon(100, 0.05)), 4), round(float(dkw_epsilon(100, 0.05, side="lower")), 4)
    (0.1358, 0.1224)
    >>> dkw_epsilon([100, 400], 0.05).round(4).tolist()
    [0.1358, 0.0679]
    """
    if side not in _SIDES:
        raise AssayInputError(f"side must be one of {_SIDES}, got {side!r}")
    n = np.asarray(n, dtype=float)
    alpha = np.asarray(alpha, dtype=float)
    if np.any(n <= 0):
        raise AssayInputError("n must be positive")
    if np.any((alpha <= 0) | (alpha >= 1)):
        raise AssayInputError("alpha must be in (0, 1)")
    if side == "both":
        return np.sqrt(np.log(2.0 / alpha) / (2.0 * n))
    if np.any(alpha > 0.5):
        raise AssayInputError("one-sided DKW (Massart) needs alpha <= 1/2")
    return np.sqrt(np.log(1.0 / alpha) / (2.0 * n))


def dkw_band(x, alpha: float, *, side: str = "both") -> CDFBand:
    """DKW band (PS-DME eq. 10a-b / 13a-b) for each row of ``x``.

    L = max(0, Fhat - eps) and U = min(1, Fhat + eps) with eps from :func:`dkw_epsilon`, on both sides of every
    jump of the ECDF (module docstring). NaN marks a missing observation, so rows may have different n_k.
    ``side="lower"`` keeps U = 1, ``"upper"`` keeps L = 0 (one-sided eps).

    Parameters
    ----------
    x : array_like
        Observations, shape (..., n): one band per row of the last axis; NaN = missing; no infinities.
    alpha : float
        The miscoverage of one band, in (0, 1).
    side : {"both", "lower", "upper"}, optional
        Which band: two-sided (the default, what the paper uses) or one-sided.

    Returns
    -------
    CDFBand
        The band of every row, with ``width`` the per-row eps.

    Raises
    ------
    AssayInputError
        When a row has no observations, ``x`` holds an infinity, or :func:`dkw_epsilon` refuses ``alpha`` / ``side``.

    Examples
    --------
    >>> band = dkw_band([0.1, 0.4, 0.4, 0.9], 0.2)
    >>> int(band.n), round(float(band.width), 4)
    (4, 0.5365)
    >>> band.lower.round(4).tolist(), band.lower_left.round(4).tolist()
    ([0.0, 0.2135, 0.2135, 0.4635], [0.0, 0.0, 0.0, 0.2135])
    """
    x2, lead, n, right, left, nan = _prepare(x)
    eps = dkw_epsilon(n, alpha, side=side)
    nf = n.astype(float)[:, None]
    e = eps[:, None]
    use_lo = side in ("both", "lower")
    use_hi = side in ("both", "upper")

    def bound(counts):
        f = counts / nf
        lo = np.maximum(f - e, 0.0) if use_lo else np.zeros_like(f)
        hi = np.minimum(f + e, 1.0) if use_hi else np.ones_like(f)
        return lo, hi

    lo_r, hi_r = bound(right)
    lo_l, hi_l = bound(left)
    return _finish(x2, lead, n, lo_r, hi_r, lo_l, hi_l, nan, "dkw", alpha, side, eps, bound)


# ---------------------------------------------------------------------------------------------------
# Berk-Jones: exact null probability (Poissonised Noe recursion) and critical value
# ---------------------------------------------------------------------------------------------------


def _log_noncrossing(lower: np.ndarray, upper: np.ndarray) -> float:
    """log P(lower_i <= U_(i) <= upper_i, i = 1..n) for n uniform order statistics; ``lower``,
    ``upper`` nondecreasing. Poissonised Noe recursion at rate n (module docstring)."""
    n = lower.size
    # events: value, kind (0 = cap: N(value) <= i-1 from lower_i, 1 = floor: N(value) >= i from upper_i)
    i = np.arange(1, n + 1)
    vals = np.concatenate([lower, upper, [1.0]])
    kind = np.concatenate([np.zeros(n, int), np.ones(n, int), [1]])
    lim = np.concatenate([i - 1, i, [n]])
    o = np.lexsort((kind, vals))  # ties: caps first (any order is fine for a continuous law)
    vals, kind, lim = vals[o], kind[o], lim[o]
    E = vals.size
    floor = np.maximum.accumulate(np.where(kind == 1, lim, 0))
    capv = np.where(kind == 0, lim, n)
    cap = np.minimum.accumulate(capv[::-1])[::-1]  # nearest cap at or after each event
    lam = n * np.diff(np.concatenate([[0.0], vals]))
    lam = np.maximum(lam, 0.0)
    prev_floor = np.concatenate([[0], floor[:-1]])
    if np.any(floor > cap):
        return -math.inf
    # Kernels for all steps at once: log terms d log(lam) - log d! - lam, cut below _KERNEL_CUT, and the
    # largest useful jump (cap - previous floor). Row maxima are factored out into the log scale.
    need = cap - prev_floor
    lmax = float(lam.max())
    dcap = int(min(need.max(), math.ceil(lmax + 12.0 * math.sqrt(lmax) + 60.0)))
    d = np.arange(dcap + 1, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        ll = np.log(lam)
        lt = d[None, :] * ll[:, None] - gammaln(d + 1.0)[None, :] - lam[:, None]
    lt[lam == 0.0, 0] = 0.0
    lt[lam == 0.0, 1:] = -np.inf
    ok = lt >= math.log(_KERNEL_CUT)
    D = np.minimum(dcap - np.argmax(ok[:, ::-1], axis=1), need)
    top = lt.max(axis=1)
    kern = np.exp(lt - top[:, None])
    logscale = float(np.sum(top + lam))  # kernel = lam^d / d! = exp(lt + lam)
    D = D.tolist()
    lo_l = (floor - prev_floor).tolist()
    hi_l = (cap - prev_floor + 1).tolist()
    state = np.array([1.0])
    for k in range(E):
        state = np.convolve(state, kern[k, : D[k] + 1])[lo_l[k]: hi_l[k]]
        if not state.size:
            return -math.inf
        if k & 15 == 15 or k == E - 1:
            mx = state.max() if state.size else 0.0
            if mx <= 0.0:
                return -math.inf
            state /= mx
            logscale += math.log(mx)
    # final event is u = 1 with floor n: the state is the single count n
    return math.log(state[0]) + logscale + math.lgamma(n + 1.0) - n * math.log(n)


@functools.lru_cache(maxsize=256)
def _bj_boundaries_cached(n: int, c: float) -> tuple[np.ndarray, np.ndarray]:
    p = np.arange(n + 1) / n
    a, b = kl_bounds(p, c)
    a.setflags(write=False)
    b.setflags(write=False)
    return a, b


def bj_boundaries(n: int, c: float) -> tuple[np.ndarray, np.ndarray]:
    """Return (a, b), arrays of length n + 1: the BJ band [a_j, b_j] at Fhat = j/n for KL threshold ``c``
    (PS-DME eq. 41).

    Read-only, cached.

    Parameters
    ----------
    n : int
        Sample size.
    c : float
        KL threshold on the paper's scale (eq. 40), >= 0.

    Returns
    -------
    a, b : numpy.ndarray
        Read-only arrays of length n + 1: a_j, b_j = :func:`kl_bounds` (j/n, c).

    Raises
    ------
    AssayInputError
        When ``c`` < 0.

    Examples
    --------
    >>> a, b = bj_boundaries(4, 0.3)
    >>> a.round(3).tolist(), b.round(3).tolist()
    ([0.0, 0.035, 0.164, 0.369, 0.741], [0.259, 0.631, 0.836, 0.965, 1.0])
    """
    return _bj_boundaries_cached(int(n), float(c))


def bj_noncrossing_probability(n: int, c: float) -> float:
    """Return the exact P(S_n^0 <= c) = P(a_i <= U_(i) <= b_{i-1}, i = 1..n) for n uniforms (PS-DME eq. 39-40).

    ``c`` on the paper's KL scale (the notes' t is n * c).

    Parameters
    ----------
    n : int
        Number of uniforms, >= 1.
    c : float
        KL threshold on the paper's scale, >= 0.

    Returns
    -------
    float
        The non-crossing probability, with (a, b) = :func:`bj_boundaries` (n, c).

    Raises
    ------
    AssayInputError
        When ``n`` < 1 or ``c`` < 0.

    Examples
    --------
    At the exact critical value the probability is 1 - alpha:

    >>> round(bj_noncrossing_probability(20, bj_critical_value(20, 0.05)), 4)
    0.95
    """
    n = int(n)
    if n < 1:
        raise AssayInputError("n must be >= 1")
    a, b = bj_boundaries(n, c)
    return math.exp(_log_noncrossing(np.asarray(a[1:]), np.asarray(b[:-1])))


def _log_crossing(n: int, c: float) -> float:
    a, b = bj_boundaries(n, c)
    lp = _log_noncrossing(np.asarray(a[1:]), np.asarray(b[:-1]))
    p = math.exp(lp)
    if p >= 1.0:
        return -math.inf
    return math.log1p(-p) if p > 0.5 else math.log(-math.expm1(lp))


@functools.lru_cache(maxsize=256)
def _bj_critical_cached(n: int, alpha: float, xtol: float) -> float:
    target = math.log(alpha)

    def g(t):  # t = n c, the scale on which the root is O(1)
        return _log_crossing(n, t / n) - target

    t0 = math.log(1.0 / alpha) + math.log(math.log(max(n, 3))) + 0.8
    lo, hi = max(t0 - 1.0, 1e-6), t0 + 1.5
    glo = g(lo)
    while glo <= 0:  # crossing already <= alpha: move down
        hi, lo = lo, lo / 2.0
        glo = g(lo)
    ghi = g(hi)
    while ghi > 0:
        lo, hi = hi, hi + 2.0
        ghi = g(hi)
    root = optimize.brentq(g, lo, hi, xtol=xtol, rtol=4 * np.finfo(float).eps)
    # brentq's answer is within xtol + rtol|root| of the true root; step to its upper side.
    t = min(root + 2.0 * (xtol + 4 * np.finfo(float).eps * abs(root)), hi)
    return t / n


def bj_critical_value(n: int, alpha: float, *, xtol: float = 1e-9) -> float:
    """Exact BJ critical value q_n(1 - alpha) (PS-DME eq. 40) on the KL scale.

    The smallest c (up to ``xtol / n``, rounded up) with P(S_n^0 > c) <= alpha, found by Brent's method on the exact
    non-crossing probability (module docstring). Cached by (n, alpha, xtol).

    Parameters
    ----------
    n : int
        The number of observations (>= 1).
    alpha : float
        The miscoverage of the band, in [1e-10, 1) (smaller levels are not resolved in double precision).
    xtol : float, optional
        The root tolerance on the scale t = n c. Default 1e-9.

    Returns
    -------
    float
        The critical value c on the paper's KL scale (not multiplied by n).

    Raises
    ------
    AssayInputError
        When ``n`` < 1 or ``alpha`` is outside [1e-10, 1).

    Examples
    --------
    >>> round(float(bj_critical_value(50, 0.05)), 4)
    0.1042
    """
    n = int(n)
    if n < 1:
        raise AssayInputError("n must be >= 1")
    alpha = float(alpha)
    if not (_MIN_ALPHA <= alpha < 1.0):
        raise AssayInputError(f"alpha must be in [{_MIN_ALPHA}, 1), got {alpha}")
    return _bj_critical_cached(n, alpha, float(xtol))


def bj_band(x, alpha: float) -> CDFBand:
    """Build the Berk-Jones band (PS-DME eq. 40-42) with the exact critical value, for each row of ``x``.

    ``x`` has shape (..., n); NaN = missing. One critical value per distinct n_k (cached).

    Parameters
    ----------
    x : array_like
        Observations, shape (n,) or (..., n), the last axis the sample; NaN = missing.
    alpha : float
        Miscoverage of one band, in [1e-10, 1).

    Returns
    -------
    CDFBand
        The band, ``method="bj"``, ``side="both"``; ``width`` holds each row's KL critical value c
        (:func:`bj_critical_value`).

    Raises
    ------
    AssayInputError
        When a row has no observation, ``x`` holds an infinity, or ``alpha`` is out of range.

    Examples
    --------
    >>> band = bj_band([0.1, 0.4, 0.4, 0.9], 0.2)
    >>> int(band.n), round(float(band.width), 4)
    (4, 0.724)
    >>> band.lower.round(4).tolist(), band.upper.round(4).tolist()
    ([0.0059, 0.1933, 0.1933, 0.4848], [0.8067, 0.9941, 0.9941, 1.0])
    """
    x2, lead, n, right, left, nan = _prepare(x)
    K, m = x2.shape
    uniq = np.unique(n)
    cvals = {int(k): bj_critical_value(int(k), alpha) for k in uniq}
    width = np.array([cvals[int(k)] for k in n])
    # per-row lookup tables of length m + 1 (rows with n_k < m padded; padding never indexed)
    tab_lo = np.empty((K, m + 1))
    tab_hi = np.empty((K, m + 1))
    for k in uniq:
        rows = n == k
        a, b = bj_boundaries(int(k), cvals[int(k)])
        tab_lo[rows, : k + 1] = a
        tab_hi[rows, : k + 1] = b
        tab_lo[rows, k + 1:] = np.nan
        tab_hi[rows, k + 1:] = np.nan

    def bound(counts):
        return np.take_along_axis(tab_lo, counts, axis=1), np.take_along_axis(tab_hi, counts, axis=1)

    rr = np.minimum(right, m)
    lo_r, hi_r = bound(np.ascontiguousarray(rr))
    lo_l, hi_l = bound(np.ascontiguousarray(left))
    return _finish(x2, lead, n, lo_r, hi_r, lo_l, hi_l, nan, "bj", alpha, "both", width, bound)


# ---------------------------------------------------------------------------------------------------
# Coverage check
# ---------------------------------------------------------------------------------------------------


def band_covers(band: CDFBand, cdf: Callable, cdf_left: Callable | None = None,
                grid=None) -> np.ndarray:
    """Whether the band contains the CDF ``cdf`` everywhere, per row.

    The band is a step function jumping only at the data, so for continuous ``cdf`` checking both sides
    of every jump is exact: at x_(i) against cdf(x_(i)) and just before it against the left limit
    ``cdf_left(x_(i))`` (defaults to ``cdf``, i.e. continuous F). For a discontinuous F also pass a
    ``grid`` containing its atoms (checked on both sides as well, with ``cdf_left`` at the atoms).

    Parameters
    ----------
    band : CDFBand
        The band to check.
    cdf : Callable
        The true CDF F, vectorised over a numpy array.
    cdf_left : Callable or None, optional
        The left limit F(x-) of the CDF; None (the default) for ``cdf`` itself, i.e. continuous F.
    grid : array_like or None, optional
        Further points to check, holding the atoms of a discontinuous F. Default None.

    Returns
    -------
    numpy.ndarray
        Boolean, shape of ``band.n``: True where the row's band contains F everywhere.

    Examples
    --------
    >>> x = np.random.default_rng(0).uniform(size=(3, 200))
    >>> band = dkw_band(x, 0.05)
    >>> band_covers(band, lambda t: np.clip(t, 0, 1)).tolist()
    [True, True, True]
    >>> band_covers(band, lambda t: np.clip(t, 0, 1) ** 2).tolist()
    [False, False, False]
    """
    x = band.x
    F = cdf(x)
    Fl = F if cdf_left is None else cdf_left(x)
    with np.errstate(invalid="ignore"):
        bad = (F < band.lower) | (F > band.upper) | (Fl < band.lower_left) | (Fl > band.upper_left)
    bad &= ~np.isnan(x)
    out = ~bad.any(axis=-1)
    if grid is not None:
        g = np.asarray(grid, dtype=float)
        lo, hi = band.at(g)
        Fg = np.broadcast_to(cdf(g), lo.shape)
        out &= ~((Fg < lo) | (Fg > hi)).any(axis=-1)
        gl = np.nextafter(g, -np.inf)
        lo, hi = band.at(gl)
        Fgl = np.broadcast_to((cdf if cdf_left is None else cdf_left)(g), lo.shape)
        out &= ~((Fgl < lo) | (Fgl > hi)).any(axis=-1)
    return out


def noncrossing_probability_reference(lower, upper) -> float:
    """P(lower_i <= U_(i) <= upper_i, i = 1..n) by the plain (non-Poissonised) Noe recursion over the
    merged breakpoints with binomial transitions, in pure Python, O(n^3): a slow, independent reference
    for the tests and the benchmark, not for production use."""
    n = len(lower)
    ev = sorted([(lower[i], 0, i) for i in range(n)] + [(upper[i], 1, i + 1) for i in range(n)])
    Q = [1.0] + [0.0] * n
    prev = 0.0
    for u, kind, lim in ev:
        p = (u - prev) / (1.0 - prev) if prev < 1.0 else 0.0
        new = [0.0] * (n + 1)
        for j in range(n + 1):
            if Q[j] == 0.0:
                continue
            r = n - j
            for d in range(r + 1):
                new[j + d] += Q[j] * math.comb(r, d) * p ** d * (1.0 - p) ** (r - d)
        if kind == 0:  # lower_i: N(u) <= i - 1 (lim = i - 1 with 0-based i)
            for j in range(lim + 1, n + 1):
                new[j] = 0.0
        else:  # upper_{i}: N(u) >= i
            for j in range(lim):
                new[j] = 0.0
        Q, prev = new, u
    return Q[n]
