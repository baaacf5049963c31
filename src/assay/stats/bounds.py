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

Solved by vectorised bisection to 1e-12 (not a 1,000-point grid, whose UCB rounds down: anti-conservative).
"""

from __future__ import annotations

import numpy as np

from ..errors import AssayInputError

__all__ = ["kl_bernoulli", "kl_ucb", "kl_lcb", "coup_radius", "coup_bounds", "samples_to_certify", "UNION_CONSTANT"]

UNION_CONSTANT = 26.71
_EPS = 1e-15


def kl_bernoulli(p, q) -> np.ndarray:
    """kl(p || q) for Bernoulli means (natural log), with 0 log 0 = 0; q is kept inside (0, 1)."""
    p = np.asarray(p, dtype=float)
    q = np.clip(np.asarray(q, dtype=float), _EPS, 1 - _EPS)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(p > 0, p * np.log(np.where(p > 0, p, 1) / q), 0.0)
        b = np.where(p < 1, (1 - p) * np.log(np.where(p < 1, 1 - p, 1) / (1 - q)), 0.0)
    return a + b


def _bisect(mean, radius, lo, hi, upper: bool, iters: int = 60):
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        inside = kl_bernoulli(mean, mid) <= radius
        if upper:
            lo = np.where(inside, mid, lo)
            hi = np.where(inside, hi, mid)
        else:
            hi = np.where(inside, mid, hi)
            lo = np.where(inside, lo, mid)
    return hi if upper else lo


def kl_ucb(mean, radius) -> np.ndarray:
    """Largest q in [mean, 1] with kl(mean, q) <= radius (vectorised; returned value >= the exact root)."""
    mean = np.clip(np.asarray(mean, dtype=float), 0.0, 1.0)
    radius = np.broadcast_to(np.asarray(radius, dtype=float), mean.shape)
    out = _bisect(mean, radius, mean.copy(), np.ones_like(mean), upper=True)
    # kl(mean, 1) is infinite unless mean = 1; but if even q -> 1 is inside, the bound is 1
    return np.where(np.isinf(radius) | (kl_bernoulli(mean, 1 - _EPS) <= radius), 1.0, out)


def kl_lcb(mean, radius) -> np.ndarray:
    """Smallest q in [0, mean] with kl(mean, q) <= radius (vectorised; returned value <= the exact root)."""
    mean = np.clip(np.asarray(mean, dtype=float), 0.0, 1.0)
    radius = np.broadcast_to(np.asarray(radius, dtype=float), mean.shape)
    out = _bisect(mean, radius, np.zeros_like(mean), mean.copy(), upper=False)
    return np.where(np.isinf(radius) | (kl_bernoulli(mean, _EPS) <= radius), 0.0, out)


def coup_radius(m, n, delta: float, log: str = "nats") -> np.ndarray:
    """ln(1/delta_i) / m with delta_i = delta / (26.71 n^2 m^2); infinite where m = 0. ``log="bits"``: times ln 2."""
    if not 0 < delta < 1:
        raise AssayInputError(f"delta must be in (0, 1); got {delta!r}")
    if log not in ("nats", "bits"):
        raise AssayInputError(f"log must be 'nats' or 'bits'; got {log!r}")
    m = np.asarray(m, dtype=float)
    n = np.asarray(n, dtype=float)
    with np.errstate(divide="ignore"):
        r = np.where(m > 0, (np.log(UNION_CONSTANT / delta) + 2 * np.log(np.maximum(n, 1)) + 2 * np.log(np.maximum(m, 1)))
                     / np.maximum(m, 1), np.inf)
    return r * np.log(2) if log == "bits" else r


def coup_bounds(mean, m, n, delta: float, log: str = "nats") -> tuple[np.ndarray, np.ndarray]:
    """(LCB, UCB) of every arm; arms with m = 0 get [0, 1]."""
    r = coup_radius(m, n, delta, log)
    mean = np.where(np.asarray(m) > 0, np.nan_to_num(np.asarray(mean, dtype=float)), 0.5)
    return kl_lcb(mean, r), kl_ucb(mean, r)


def samples_to_certify(mean, tau: float, n, delta: float, log: str = "nats", m_max: int = 10**7) -> np.ndarray:
    """Smallest m with LCB(mean, m) >= tau if the empirical mean stayed at ``mean`` (inf if mean < tau or > m_max)."""
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
