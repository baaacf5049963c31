"""Anytime KL (Chernoff) confidence bounds for means of [0, 1]-bounded variables, vectorised over arms.

For an arm with empirical mean ``mean`` after ``m`` samples, the Chernoff bound for [0, 1] variables gives
P(mu > q) and P(mu < q) <= exp(-m kl(mean, q)) for q on the respective side, where kl is the Bernoulli
Kullback-Leibler divergence (natural log). The bounds are the q where m kl(mean, q) = ln(1 / delta_i):

    UCB = max{q >= mean : kl(mean, q) <= r},   LCB = min{q <= mean : kl(mean, q) <= r},   r = ln(1/delta_i) / m.

COUP+ as QuickScope uses it (research notes quickscope.md, 1.2) spends delta_i = delta / (26.71 n^2 m^2) per arm and
sample count (n = pool size; 26.71 ~ 2.7058 pi^2): summing over the n arms and all m >= 1 keeps the probability that
ANY bound ever fails below delta (a union bound over arms and time, so the bounds are anytime-valid).

Units: ``log="nats"`` (default) is the consistent choice: kl in nats against ln(1/delta_i). The released code
computes kl in bits against a threshold in nats, which is the same as using the radius ln(2) r: narrower bounds,
each failing with probability up to delta_i^ln2 rather than delta_i (still a union total below delta for typical pool
sizes, but not by the stated argument). ``log="bits"`` reproduces it for comparisons.

Solved by a vectorised Newton iteration started on the far side of the root, which converges monotonically and
never crosses it (UCB >= the exact root, LCB <= it); the released code's 1,000-point grid rounds the UCB down
(anti-conservative).
"""

from __future__ import annotations

import numpy as np

from .. import checks
from ..errors import AssayInputError

__all__ = ["kl_bernoulli", "kl_ucb", "kl_lcb", "coup_radius", "coup_bounds", "samples_to_certify", "UNION_CONSTANT"]

UNION_CONSTANT = 26.71
_EPS = 1e-15


def kl_bernoulli(p, q) -> np.ndarray:
    """Return kl(p || q) for Bernoulli means (natural log), with 0 log 0 = 0; q is kept inside (0, 1).

    Parameters
    ----------
    p : array_like
        First Bernoulli mean(s), in [0, 1].
    q : array_like
        Second Bernoulli mean(s); clipped to [1e-15, 1 - 1e-15], so the result is finite.

    Returns
    -------
    numpy.ndarray
        kl(p || q), of the broadcast shape of ``p`` and ``q``.

    Examples
    --------
    >>> kl_bernoulli([0.5, 0.0, 1.0], [0.25, 0.5, 0.5]).round(4).tolist()
    [0.1438, 0.6931, 0.6931]
    """
    p = np.asarray(p, dtype=float)
    q = np.clip(np.asarray(q, dtype=float), _EPS, 1 - _EPS)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(p > 0, p * np.log(np.where(p > 0, p, 1) / q), 0.0)
        b = np.where(p < 1, (1 - p) * np.log(np.where(p < 1, 1 - p, 1) / (1 - q)), 0.0)
    return a + b


def _kl_fast(p, q):
    """kl(p || q) for p in [0, 1], q strictly inside (0, 1) (no clipping: the callers keep q inside)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(p > 0, p * np.log(p / q), 0.0)
        b = np.where(p < 1, (1 - p) * np.log((1 - p) / (1 - q)), 0.0)
    return a + b


def _newton(mean, radius, upper: bool, iters: int = 60):
    """Root of kl(mean, q) = radius on the upper (q > mean) or lower (q < mean) side by Newton's method.

    Newton runs in y = -ln(1 - q) (upper side) or y = -ln(q) (lower side), where kl(mean, q(y)) is convex and
    increasing in y and nearly linear towards q -> 1 (or 0), so a start on the far side of the root (Pinsker:
    |q - mean| <= sqrt(radius / 2)) converges in a few steps, monotonically, without crossing the root: the UCB
    returned is >= the exact root and the LCB <= it (conservative at any stopping point).
    """
    step0 = np.sqrt(np.minimum(radius, 1e6) / 2) + 1e-12
    if upper:
        y = -np.log1p(-np.minimum(mean + step0, 1 - _EPS))
    else:
        y = -np.log(np.maximum(mean - step0, _EPS))
    q = None
    for _ in range(iters):
        q = -np.expm1(-y) if upper else np.exp(-y)
        q = np.clip(q, _EPS, 1 - _EPS)
        f = _kl_fast(mean, q) - radius
        d = (q - mean) / q if upper else (mean - q) / (1 - q)
        with np.errstate(divide="ignore", invalid="ignore"):
            step = np.where((f > 0) & (d > 0), f / d, 0.0)
        y = y - step
        if np.all(step <= 1e-10):  # y-units: stopping here leaves q on the conservative side by < 1e-10
            break
    q = -np.expm1(-y) if upper else np.exp(-y)
    return np.clip(q, 0.0, 1.0)


def kl_ucb(mean, radius) -> np.ndarray:
    """Return the largest q in [mean, 1] with kl(mean, q) <= radius (vectorised; returned value >= the exact root).

    Parameters
    ----------
    mean : array_like
        Empirical mean(s), clipped to [0, 1].
    radius : array_like
        r = ln(1/delta_i) / m, broadcast to the shape of ``mean``; an infinite radius gives 1.

    Returns
    -------
    numpy.ndarray
        The upper confidence bound(s), shape of ``mean``.

    Examples
    --------
    >>> kl_ucb([0.5, 0.0, 1.0], 0.1).round(4).tolist()
    [0.7129, 0.0952, 1.0]
    """
    mean = np.clip(np.asarray(mean, dtype=float), 0.0, 1.0)
    radius = np.broadcast_to(np.asarray(radius, dtype=float), mean.shape)
    finite = np.isfinite(radius)
    out = _newton(mean, np.where(finite, radius, 0.0), upper=True)
    # if even q -> 1 is inside (or the radius is infinite), the bound is 1
    return np.where(~finite | (mean >= 1 - 1e-12) | (_kl_fast(mean, np.full_like(mean, 1 - _EPS)) <= radius), 1.0, out)


def kl_lcb(mean, radius) -> np.ndarray:
    """Return the smallest q in [0, mean] with kl(mean, q) <= radius (vectorised; returned value <= the exact root).

    Parameters
    ----------
    mean : array_like
        Empirical mean(s), clipped to [0, 1].
    radius : array_like
        r = ln(1/delta_i) / m, broadcast to the shape of ``mean``; an infinite radius gives 0.

    Returns
    -------
    numpy.ndarray
        The lower confidence bound(s), shape of ``mean``.

    Examples
    --------
    >>> kl_lcb([0.5, 0.0, 1.0], 0.1).round(4).tolist()
    [0.2871, 0.0, 0.9048]
    """
    mean = np.clip(np.asarray(mean, dtype=float), 0.0, 1.0)
    radius = np.broadcast_to(np.asarray(radius, dtype=float), mean.shape)
    finite = np.isfinite(radius)
    out = _newton(mean, np.where(finite, radius, 0.0), upper=False)
    return np.where(~finite | (mean <= 1e-12) | (_kl_fast(mean, np.full_like(mean, _EPS)) <= radius), 0.0, out)


def coup_radius(m, n, delta: float, log: str = "nats") -> np.ndarray:
    """The COUP+ radius ln(1/delta_i) / m with delta_i = delta / (26.71 n^2 m^2).

    The radius is infinite where m = 0. With ``log="bits"`` it is multiplied by ln 2, which reproduces the released
    code (module docstring). Vectorised over ``m`` and ``n``.

    Parameters
    ----------
    m : int or array_like
        The number of samples of each arm.
    n : int or array_like
        The pool size (number of arms).
    delta : float
        The error level of all bounds together, strictly between 0 and 1.
    log : {"nats", "bits"}, optional
        ``"nats"`` (the default, the consistent choice) or ``"bits"`` (the released code's units: times ln 2).

    Returns
    -------
    numpy.ndarray
        The radius r, in the units of :func:`kl_bernoulli` (inf where m = 0).

    Raises
    ------
    AssayInputError
        When ``delta`` is not strictly between 0 and 1 or ``log`` is unknown.

    Examples
    --------
    >>> coup_radius([0, 10, 100], 50, 0.05).round(4).tolist()
    [inf, 1.871, 0.2332]
    >>> round(float(coup_radius(100, 50, 0.05, log="bits")), 4)
    0.1616
    """
    delta = checks.level(delta)
    if log not in ("nats", "bits"):
        raise AssayInputError(f"log must be 'nats' or 'bits'; got {log!r}")
    m = np.asarray(m, dtype=float)
    n = np.asarray(n, dtype=float)
    with np.errstate(divide="ignore"):
        r = np.where(m > 0, (np.log(UNION_CONSTANT / delta) + 2 * np.log(np.maximum(n, 1)) + 2 * np.log(np.maximum(m, 1)))
                     / np.maximum(m, 1), np.inf)
    return r * np.log(2) if log == "bits" else r


def coup_bounds(mean, m, n, delta: float, log: str = "nats") -> tuple[np.ndarray, np.ndarray]:
    """The anytime COUP+ bounds (LCB, UCB) of every arm.

    Each arm's bounds are :func:`kl_lcb` and :func:`kl_ucb` of its empirical mean at the radius
    :func:`coup_radius`; arms with m = 0 get [0, 1].

    Parameters
    ----------
    mean : array_like
        The empirical mean of each arm, in [0, 1] (ignored where m = 0, so NaN is fine there).
    m : int or array_like
        The number of samples of each arm.
    n : int or array_like
        The pool size (number of arms).
    delta : float
        The error level of all bounds together, strictly between 0 and 1.
    log : {"nats", "bits"}, optional
        The units of the radius (:func:`coup_radius`). Default ``"nats"``.

    Returns
    -------
    tuple of (numpy.ndarray, numpy.ndarray)
        ``(LCB, UCB)`` of every arm.

    Raises
    ------
    AssayInputError
        When ``delta`` is not strictly between 0 and 1 or ``log`` is unknown.

    Examples
    --------
    >>> lcb, ucb = coup_bounds([0.8, 0.5, 0.0], [100, 400, 0], 50, 0.05)
    >>> lcb.round(4).tolist(), ucb.round(4).tolist()
    ([0.4681, 0.3252, 0.0], [0.9713, 0.6748, 1.0])
    """
    r = coup_radius(m, n, delta, log)
    mean = np.where(np.asarray(m) > 0, np.nan_to_num(np.asarray(mean, dtype=float)), 0.5)
    return kl_lcb(mean, r), kl_ucb(mean, r)


def samples_to_certify(mean, tau: float, n, delta: float, log: str = "nats", m_max: int = 10**7) -> np.ndarray:
    """Smallest m with LCB(mean, m) >= tau if the empirical mean stayed at ``mean``.

    Found per arm by doubling m, then bisection. The answer is inf if mean < tau or > m_max (the doubling search
    stops at the first power of two >= ``m_max``).

    Parameters
    ----------
    mean : float or array_like
        The empirical mean of each arm, in [0, 1].
    tau : float
        The threshold the lower bound must reach.
    n : int or array_like
        The pool size (number of arms).
    delta : float
        The error level of all bounds together, strictly between 0 and 1.
    log : {"nats", "bits"}, optional
        The units of the radius (:func:`coup_radius`). Default ``"nats"``.
    m_max : int, optional
        The largest number of samples searched. Default 10**7.

    Returns
    -------
    numpy.ndarray
        The number of samples of each arm (a float array, at least 1-D; inf where none is found).

    Examples
    --------
    >>> samples_to_certify([0.9, 0.7, 0.5], 0.6, 50, 0.05).tolist()
    [104.0, 1319.0, inf]
    """
    mean = np.atleast_1d(np.asarray(mean, dtype=float))
    n = np.broadcast_to(np.asarray(n, dtype=float), mean.shape)

    def ok(m):
        return kl_lcb(mean, coup_radius(m, n, delta, log)) >= tau

    hi = np.ones_like(mean)
    feasible = mean >= tau
    for _ in range(int(np.ceil(np.log2(m_max))) + 1):
        grow = feasible & ~ok(hi) & (hi < m_max)
        if not grow.any():
            break
        hi = np.where(grow, hi * 2, hi)
    feasible &= ok(hi)
    lo = np.where(feasible, np.floor(hi / 2), hi)
    while True:
        todo = feasible & (hi - lo > 1)
        if not todo.any():
            break
        mid = np.floor((lo + hi) / 2)
        good = ok(mid)
        hi = np.where(todo & good, mid, hi)
        lo = np.where(todo & ~good, mid, lo)
    res = np.where(feasible, hi, np.inf)
    res = np.where(feasible & ok(np.ones_like(mean)), 1.0, res)
    return res
