"""Testing by betting: e-processes for bounded means, betting strategies, Ville tests, and
confidence bounds by inverting the tests.

Setting (Park, Zecchin, Simeone, R-AutoEval+, Sec. 2.1 and App. C; Waudby-Smith and Ramdas 2024):
observations q_1, q_2, ... in [lo, hi] with mean R. To test H0: R > target, bet against the
null: the wealth

    E_n = prod_{i <= n} (1 - lambda_i (q_i - target)),     lambda_i predictable in [0, 1/(hi - target))   (eq. 6)

is a nonnegative supermartingale under H0, so by Ville's inequality
P(max_i E_i >= 1/delta) <= delta. Several strategies s = 1..S, each with its own observations
q_{s,i} (same mean R) and wealth E_{s,i}, combine by exponential weights
w_{s,i} proportional to w_{s,0} E_{s,i-1} (eq. 13); the combined wealth (eq. 7, 11) then equals
exactly the average sum_s w_{s,0} E_{s,n}, which is how it is computed here (in log space).

Bets
----
* ``wsr`` (eq. 21-22): lambda_i = min(cap, sqrt(2 log(1/delta) / (n sigma2_{i-1}))) with the running
  variance sigma2_{i-1} = (sigma0^2 + sum_{j<i} (q_j - mu_j)^2) / i, mu_j = (mu0 + sum_{k<=j} q_k) / (j+1),
  mu0 = 1/2, sigma0^2 = 1/4, cap = c / (hi - target), c = 3/4. ``n`` is the horizon: the number of
  observations that will be seen (the paper's fixed-n form). Without a horizon (a stream of
  unknown length) the anytime schedule of Waudby-Smith and Ramdas replaces n by i log(i + 1).
  Choice documented here because the paper's released code uses three variants (fixed n with
  log(1/delta) in the test, i log(i+1) with log(2/delta) in the toy stream, fixed n with
  log(2/delta) and cap 1/(1+2 rho) in the intervals): we use log(1/delta_side) where delta_side
  is the error budget of that one-sided test (delta for a test, delta/2 per side of a two-sided
  interval), the fixed horizon when it is known and the i log(i+1) schedule otherwise. Validity
  never depends on these choices (any predictable bet in range is valid); only power does.
* ``up`` (eq. 20): Cover's universal portfolio. With b in (0, 1) on a grid (midpoints of ``grid``
  equal cells) and the Beta(1/2, 1/2) prior normalised on the grid, the wealth of betting the
  posterior-mean fraction equals the prior-average of the constant-bet wealths,
  E_i = sum_g pi_g prod_{j<=i} (1 - b_g x_j), x_j = (q_j - target) / scale, scale = hi - target.
  Computed exactly on the grid by one vectorised update per step.

Bounds
------
An upper confidence bound is the smallest target that the test rejects (every larger target is
rejected too). That needs the rejection to be monotone in the target, which holds when the bets do
not depend on the target: the bet cap becomes 1/(hi - lo) (paper App. E.5) and UP's scale hi - lo.
Then every factor 1 - lambda (q - t) is nonnegative and increasing in t, so the bound is found by
bisection to a stated tolerance. Lower bounds by reflection q -> lo + hi - q. Two-sided intervals
by the hedged capital process (Waudby-Smith and Ramdas, Sec. 4.4): K(m) = eps K+(m) + (1-eps) K-(m)
with K+ = prod(1 + lambda (q - m)) and K- = prod(1 - lambda (q - m)); each is a product of
nonnegative monotone affine functions of m, hence convex, so max_i K_i(m) is convex and the set
{m : max_i K_i(m) < 1/delta} is an interval, found by golden-section search for its minimiser and
bisection for its ends.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import AssayInputError
from .special import logsumexp

__all__ = [
    "wsr_bets",
    "log_wealth",
    "up_log_wealth",
    "UniversalPortfolio",
    "e_process",
    "mixture_log_wealth",
    "mixture_weights",
    "ville",
    "growth_rate",
    "upper_bound",
    "lower_bound",
    "hedged_interval",
    "IncrementCS",
]


C_WSR = 0.75
MU0 = 0.5
VAR0 = 0.25


def _as_2d(q: np.ndarray) -> tuple[np.ndarray, tuple[int, ...]]:
    q = np.asarray(q, dtype=float)
    lead = q.shape[:-1]
    return q.reshape(-1, q.shape[-1]), lead


def wsr_bets(
    q: np.ndarray,
    *,
    delta: float,
    cap: np.ndarray | float,
    horizon: int | None = None,
    mu0: float = MU0,
    var0: float = VAR0,
) -> np.ndarray:
    """Waudby-Smith-Ramdas predictable plug-in bets (eq. 21-22), vectorised over time.

    lambda_i = min(cap, sqrt(2 log(1/delta) / (n sigma2_{i-1}))) with the running variance of the module docstring;
    ``n`` is the ``horizon`` when given, else the anytime schedule i log(i + 1). ``q`` has shape (..., n); ``cap``
    broadcasts against the leading dimensions. The bet at step i uses q_1..q_{i-1} only.

    Parameters
    ----------
    q : (..., n) array
        The observations, time on the last axis.
    delta : float
        The error budget of the one-sided test the bets serve.
    cap : float or array
        The largest bet, broadcast against the leading dimensions of ``q``.
    horizon : int, optional
        The number of observations that will be seen; None (the default) for the i log(i + 1) schedule.
    mu0 : float, optional
        The prior mean of the running mean. Default 1/2.
    var0 : float, optional
        The prior variance sigma0^2 of the running variance. Default 1/4.

    Returns
    -------
    (..., n) array
        The bets lambda_i, nonnegative, shaped like ``q``.

    Examples
    --------
    >>> q = np.array([0.2, 0.9, 0.4, 0.6])
    >>> wsr_bets(q, delta=0.1, cap=1.0, horizon=100).round(4).tolist()
    [0.4292, 0.5814, 0.5827, 0.6647]
    """
    q = np.asarray(q, dtype=float)
    n = q.shape[-1]
    j = np.arange(1, n + 1, dtype=float)
    mu = (mu0 + np.cumsum(q, axis=-1)) / (j + 1.0)  # mu_j, j = 1..n (includes q_j)
    dev = (q - mu) ** 2
    past = np.concatenate([np.zeros(q.shape[:-1] + (1,)), np.cumsum(dev, axis=-1)[..., :-1]], axis=-1)
    var = (var0 + past) / j  # sigma2_{i-1}, i = 1..n
    if horizon is None:
        scale = j * np.log(j + 1.0)
    else:
        scale = float(horizon)
    lam = np.sqrt(2.0 * math.log(1.0 / delta) / (scale * np.maximum(var, 1e-12)))
    cap = np.asarray(cap, dtype=float)
    if cap.ndim:
        cap = cap.reshape(cap.shape + (1,))
    return np.clip(np.minimum(lam, cap), 0.0, None)


def log_wealth(q: np.ndarray, target: float | np.ndarray, lam: np.ndarray) -> np.ndarray:
    """Path of log E_i = sum_{j<=i} log(1 - lambda_j (q_j - target)) (eq. 6).

    A factor that would be negative counts as 0 (log wealth -inf from there on).

    Parameters
    ----------
    q : (..., n) array
        The observations, time on the last axis.
    target : float or array
        The null's boundary (H0: mean > target), broadcast against the leading dimensions of ``q``.
    lam : (..., n) array
        The predictable bets (e.g. :func:`wsr_bets`).

    Returns
    -------
    (..., n) array
        The log-wealth path.

    Examples
    --------
    >>> log_wealth([0.2, 0.9, 0.4, 0.6], 0.8, np.full(4, 0.5)).round(4).tolist()
    [0.2624, 0.2111, 0.3934, 0.4887]
    """
    t = np.asarray(target, dtype=float)
    if t.ndim:
        t = t.reshape(t.shape + (1,))
    factor = 1.0 - lam * (np.asarray(q, dtype=float) - t)
    with np.errstate(divide="ignore"):
        return np.cumsum(np.log(np.clip(factor, 0.0, None)), axis=-1)


def _up_grid(grid: int) -> tuple[np.ndarray, np.ndarray]:
    b = (np.arange(grid) + 0.5) / grid
    logp = -0.5 * np.log(b) - 0.5 * np.log1p(-b)
    logp -= logsumexp(logp)
    return b, logp


class UniversalPortfolio:
    """Streaming universal-portfolio wealth (eq. 20) for B parallel bettors on one bet grid.

    ``update(x)`` takes normalised outcomes x (B, T) with x <= 1 (x = (q - target) / scale) and
    returns the log-wealth path (B, T), continuing from the previous call. The wealth of betting
    the posterior-mean fraction equals the prior-average of the constant-bet wealths (the payoff
    1 - b x is linear in b), which is what is tracked: W[k, g] is the wealth of the constant bet
    b_g divided by a running normaliser carried in log space. Every factor 1 - b x is > 0 because
    x <= 1 and b < 1.
    """

    def __init__(self, n_bettors: int, grid: int = 10_000) -> None:
        self.b, logp = _up_grid(grid)
        self.prior = np.exp(logp)
        self.W = np.ones((n_bettors, grid))
        self._buf = np.empty((n_bettors, grid))
        self.log_norm = np.zeros(n_bettors)
        self.steps = 0

    def update(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        out = np.empty(x.shape)
        W, buf = self.W, self._buf
        for i in range(x.shape[1]):
            np.multiply(x[:, i, None], self.b, out=buf)
            np.subtract(1.0, buf, out=buf)
            np.multiply(W, buf, out=W)
            tot = W @ self.prior
            out[:, i] = self.log_norm + np.log(tot)
            self.steps += 1
            if self.steps % 8 == 0:  # renormalise now and then: 8 steps cannot over- or underflow
                self.log_norm += np.log(tot)
                W /= tot[:, None]
        return out


def up_log_wealth(
    q: np.ndarray, target: float | np.ndarray, scale: float | np.ndarray, *, grid: int = 10_000
) -> np.ndarray:
    """Universal-portfolio wealth path (eq. 20), exact on a grid of constant bets.

    Returns log E_i for every step; factor of bet b at step j is 1 - b (q_j - target) / scale.
    Shapes: q (..., n); target and scale broadcast against the leading dimensions.

    Parameters
    ----------
    q : (..., n) array
        The observations, time on the last axis.
    target : float or array
        The null's boundary (H0: mean > target).
    scale : float or array
        The outcome scale: hi - target, or hi - lo for monotone bets; (q - target) / scale must be <= 1.
    grid : int, optional
        The number of constant bets b (midpoints of ``grid`` equal cells of (0, 1)). Default 10 000.

    Returns
    -------
    (..., n) array
        The log-wealth path log E_i.

    Examples
    --------
    >>> up_log_wealth([0.2, 0.9, 0.4, 0.6], 0.8, 0.2, grid=100).round(4).tolist()
    [0.9163, 0.5277, 1.2892, 1.8032]
    """
    q2, lead = _as_2d(q)
    B, n = q2.shape
    t = np.broadcast_to(np.asarray(target, dtype=float), lead).reshape(-1)
    sc = np.broadcast_to(np.asarray(scale, dtype=float), lead).reshape(-1)
    x = (q2 - t[:, None]) / sc[:, None]  # (B, n), at most 1
    return UniversalPortfolio(B, grid).update(x).reshape(lead + (n,))


def e_process(
    q: np.ndarray,
    target: float,
    *,
    lo: np.ndarray | float,
    hi: np.ndarray | float,
    betting: str = "wsr",
    delta: float = 0.1,
    horizon: int | None = None,
    grid: int = 10_000,
    monotone: bool = False,
    c: float = C_WSR,
) -> np.ndarray:
    """Log-wealth paths (..., n) of the test of H0: mean > ``target`` for observations in [lo, hi].

    The WSR bets are capped at c / (hi - target), UP's outcomes scaled by hi - target. ``monotone=True`` uses the
    target-free cap 1/(hi - lo) (WSR) or scale hi - lo (UP), which makes the wealth increasing in the target
    (needed to invert tests into bounds).

    Parameters
    ----------
    q : (..., n) array
        The observations, time on the last axis.
    target : float
        The null's boundary (H0: mean > target).
    lo : float or array
        The lowest possible observation.
    hi : float or array
        The highest possible observation.
    betting : {"wsr", "up"}, optional
        The strategy: Waudby-Smith-Ramdas bets (:func:`wsr_bets`, the default) or Cover's universal portfolio
        (:func:`up_log_wealth`).
    delta : float, optional
        The error level the WSR bets are tuned to. Default 0.1.
    horizon : int, optional
        For WSR: the number of observations that will be seen; None (the default) for the anytime schedule.
    grid : int, optional
        For UP: the number of constant bets. Default 10 000.
    monotone : bool, optional
        Use the target-free cap / scale. Default False.
    c : float, optional
        For WSR without ``monotone``: the cap factor. Default 3/4.

    Returns
    -------
    (..., n) array
        The log-wealth path log E_i; reject at level delta once it reaches log(1/delta) (:func:`ville`).

    Raises
    ------
    AssayInputError
        When ``betting`` is unknown.

    Examples
    --------
    >>> x = (np.random.default_rng(0).random(200) < 0.3).astype(float)
    >>> log_e = e_process(x, 0.5, lo=0.0, hi=1.0, delta=0.1, horizon=200)
    >>> round(float(log_e[-1]), 4)
    13.3519
    >>> reject, first = ville(log_e, 0.1)
    >>> bool(reject), int(first)
    (True, 36)
    """
    lo = np.asarray(lo, dtype=float)
    hi = np.asarray(hi, dtype=float)
    if betting == "wsr":
        cap = 1.0 / (hi - lo) if monotone else c / (hi - target)
        lam = wsr_bets(q, delta=delta, cap=cap, horizon=horizon)
        return log_wealth(q, target, lam)
    if betting == "up":
        scale = (hi - lo) if monotone else (hi - target)
        return up_log_wealth(q, target, scale, grid=grid)
    raise AssayInputError(f"betting must be 'wsr' or 'up', got {betting!r}")


def mixture_log_wealth(log_e: np.ndarray, weights0: np.ndarray | None = None) -> np.ndarray:
    """Return the log of sum_s w_{s,0} E_{s,i}: strategies on axis -2, time on axis -1 (eq. 7, 11, 13).

    Parameters
    ----------
    log_e : numpy.ndarray of shape (..., S, n)
        log E_{s,i}, the log-wealth of each strategy s at each time i.
    weights0 : array_like of shape (S,) or None, default None
        Prior weights w_{s,0} of the strategies (normalised to sum 1 here); None for uniform weights 1/S.

    Returns
    -------
    numpy.ndarray of shape (..., n)
        The log of the combined wealth at each time.

    Examples
    --------
    >>> log_e = np.log([[1.0, 2.0, 4.0], [1.0, 0.5, 0.25]])
    >>> np.exp(mixture_log_wealth(log_e)).round(4).tolist()
    [1.0, 1.25, 2.125]
    >>> np.exp(mixture_log_wealth(log_e, [3, 1])).round(4).tolist()
    [1.0, 1.625, 3.0625]
    """
    S = log_e.shape[-2]
    w = np.full(S, 1.0 / S) if weights0 is None else np.asarray(weights0, dtype=float) / np.sum(weights0)
    with np.errstate(divide="ignore"):
        lw = np.log(w)
    return logsumexp(log_e + lw[:, None], axis=-2)


def mixture_weights(log_e: np.ndarray, weights0: np.ndarray | None = None) -> np.ndarray:
    """Return the predictable weights w_{s,i} proportional to w_{s,0} E_{s,i-1} (eq. 13), shape like ``log_e``.

    Parameters
    ----------
    log_e : numpy.ndarray of shape (..., S, n)
        log E_{s,i}, the log-wealth of each strategy s at each time i.
    weights0 : array_like of shape (S,) or None, default None
        Prior weights w_{s,0} of the strategies (normalised to sum 1 here); None for uniform weights 1/S.

    Returns
    -------
    numpy.ndarray of shape (..., S, n)
        The weights, summing to 1 over the strategies (axis -2) at each time; at i = 0 they are w_{s,0}.

    Examples
    --------
    >>> log_e = np.log([[1.0, 2.0, 4.0], [1.0, 0.5, 0.25]])
    >>> mixture_weights(log_e).round(4).tolist()
    [[0.5, 0.5, 0.8], [0.5, 0.5, 0.2]]
    """
    S = log_e.shape[-2]
    w = np.full(S, 1.0 / S) if weights0 is None else np.asarray(weights0, dtype=float) / np.sum(weights0)
    with np.errstate(divide="ignore"):
        lw = np.log(w)[:, None]
    prev = np.concatenate([np.zeros(log_e.shape[:-1] + (1,)), log_e[..., :-1]], axis=-1) + lw
    return np.exp(prev - logsumexp(prev, axis=-2, keepdims=True))


def ville(log_e: np.ndarray, delta: float) -> tuple[np.ndarray, np.ndarray]:
    """Run Ville's test max_i E_i >= 1/delta: (reject, first index reaching it, -1 if never), per path.

    Parameters
    ----------
    log_e : numpy.ndarray of shape (..., n)
        log E_i, the log-wealth along each path (time on the last axis).
    delta : float
        Error level of the test, in (0, 1].

    Returns
    -------
    reject : numpy.ndarray of bool, shape (...)
        True where the wealth reaches 1/delta (in log space, up to 1e-12).
    first : numpy.ndarray of int, shape (...)
        The first index i with E_i >= 1/delta, -1 where never.

    Examples
    --------
    >>> reject, first = ville(np.log([[1.0, 10.0, 30.0], [2.0, 3.0, 4.0]]), 0.05)
    >>> reject.tolist(), first.tolist()
    ([True, False], [2, -1])
    """
    thr = math.log(1.0 / delta) - 1e-12
    hit = log_e >= thr
    reject = hit.any(axis=-1)
    first = np.where(reject, hit.argmax(axis=-1), -1)
    return reject, first


def growth_rate(values: np.ndarray, probs: np.ndarray, target: float, hi: float) -> tuple[float, float]:
    """Optimal constant-bet growth g* = max_lambda E log(1 - lambda (q - target)) (eq. 14).

    For a discrete distribution of q; lambda ranges over [0, 1/(hi - target)). 1/g* is the sample-complexity slope
    in log(1/delta) (eq. 15).

    Parameters
    ----------
    values : array
        The values q can take.
    probs : array
        Their probabilities.
    target : float
        The null's boundary (H0: mean > target).
    hi : float
        The highest possible observation.

    Returns
    -------
    tuple of (float, float)
        ``(g*, lambda*)``; ``(0.0, 0.0)`` when the best growth found is negative (no bet grows the wealth).

    Examples
    --------
    >>> tuple(round(v, 4) for v in growth_rate([0.0, 1.0], [0.7, 0.3], 0.5, 1.0))
    (0.0823, 0.8)
    """
    from scipy.optimize import minimize_scalar

    v = np.asarray(values, dtype=float)
    p = np.asarray(probs, dtype=float)
    upper = (1.0 - 1e-12) / (hi - target)

    def neg(lam: float) -> float:
        return -float(p @ np.log1p(-lam * (v - target)))

    res = minimize_scalar(neg, bounds=(0.0, upper), method="bounded", options={"xatol": 1e-12})
    lam = float(res.x)
    g = -neg(lam)
    if g < 0:
        return 0.0, 0.0
    return g, lam


# --------------------------------------------------------------------------------------------
# Confidence bounds by test inversion
# --------------------------------------------------------------------------------------------


def _bound_process(
    q: np.ndarray, lo: np.ndarray, hi: np.ndarray, betting: str, delta: float, horizon: int | None, grid: int
):
    """Return f(t) = max_i log(mixture wealth at target t), increasing in t (monotone bets)."""
    q = np.asarray(q, dtype=float)
    S, n = q.shape
    lo = np.broadcast_to(np.asarray(lo, dtype=float), (S,))
    hi = np.broadcast_to(np.asarray(hi, dtype=float), (S,))
    if betting == "wsr":
        lam = wsr_bets(q, delta=delta, cap=1.0 / (hi - lo), horizon=horizon)

        def f(t: float) -> float:
            return float(mixture_log_wealth(log_wealth(q, t, lam)).max())
    elif betting == "up":

        def f(t: float) -> float:
            return float(mixture_log_wealth(up_log_wealth(q, t, hi - lo, grid=grid)).max())
    else:
        raise AssayInputError(f"betting must be 'wsr' or 'up', got {betting!r}")
    return f


def upper_bound(
    q: np.ndarray,
    lo: np.ndarray | float,
    hi: np.ndarray | float,
    *,
    delta: float,
    betting: str = "wsr",
    horizon: int | None = None,
    grid: int = 10_000,
    domain: tuple[float, float] = (0.0, 1.0),
    tol: float = 1e-6,
) -> float:
    """Upper confidence bound on the common mean of the rows of ``q`` (S, n) at level 1 - delta.

    The smallest target in ``domain`` whose null (mean > target) the mixture test rejects, to
    ``tol``, found by bisection with monotone bets (module docstring). Returns domain[1] when nothing in the domain
    is rejected, and domain[0] when domain[0] itself is.

    Parameters
    ----------
    q : (S, n) or (n,) array
        The observations: one row per strategy, all with the same mean.
    lo : float or array
        The lowest possible observation, per row.
    hi : float or array
        The highest possible observation, per row.
    delta : float
        The error level.
    betting : {"wsr", "up"}, optional
        The strategy (:func:`e_process`). Default ``"wsr"``.
    horizon : int, optional
        For WSR: the number of observations that will be seen; None (the default) for the anytime schedule.
    grid : int, optional
        For UP: the number of constant bets. Default 10 000.
    domain : tuple of (float, float), optional
        The range searched. Default (0, 1).
    tol : float, optional
        The bisection tolerance. Default 1e-6.

    Returns
    -------
    float
        The upper bound (on the rejected side of the boundary).

    Raises
    ------
    AssayInputError
        When ``betting`` is unknown.

    Examples
    --------
    >>> x = (np.random.default_rng(0).random(200) < 0.3).astype(float)
    >>> round(upper_bound(x, 0.0, 1.0, delta=0.1, horizon=200), 4)
    0.3359
    """
    f = _bound_process(np.atleast_2d(q), lo, hi, betting, delta, horizon, grid)
    thr = math.log(1.0 / delta) - 1e-12
    if f(domain[0]) >= thr:
        return domain[0]
    return _edge(f, domain[0], domain[1], thr, tol)


def _edge(F, inside: float, outside: float, thr: float, tol: float) -> float:
    """Bisection for the boundary between a non-rejected point ``inside`` (F < thr) and ``outside``;
    returns ``outside`` itself when it is not rejected either. The result is on the rejected side."""
    if F(outside) < thr:
        return outside
    while abs(outside - inside) > tol:
        mid = 0.5 * (inside + outside)
        if F(mid) >= thr:
            outside = mid
        else:
            inside = mid
    return outside


def lower_bound(q, lo, hi, *, delta, betting="wsr", horizon=None, grid=10_000, domain=(0.0, 1.0), tol=1e-6) -> float:
    """Lower confidence bound by reflection q -> lo + hi - q (requires lo + hi equal across rows).

    The upper bound (:func:`upper_bound`) of the reflected observations, reflected back.

    Parameters
    ----------
    q : (S, n) or (n,) array
        The observations: one row per strategy, all with the same mean.
    lo : float or array
        The lowest possible observation, per row.
    hi : float or array
        The highest possible observation, per row.
    delta : float
        The error level.
    betting : {"wsr", "up"}, optional
        The strategy (:func:`e_process`). Default ``"wsr"``.
    horizon : int, optional
        For WSR: the number of observations that will be seen; None (the default) for the anytime schedule.
    grid : int, optional
        For UP: the number of constant bets. Default 10 000.
    domain : tuple of (float, float), optional
        The range searched. Default (0, 1).
    tol : float, optional
        The bisection tolerance. Default 1e-6.

    Returns
    -------
    float
        The lower bound.

    Raises
    ------
    AssayInputError
        When lo + hi differs between rows, or ``betting`` is unknown.

    Examples
    --------
    >>> x = (np.random.default_rng(0).random(200) < 0.3).astype(float)
    >>> round(lower_bound(x, 0.0, 1.0, delta=0.1, horizon=200), 4)
    0.21
    """
    q = np.atleast_2d(np.asarray(q, dtype=float))
    lo = np.broadcast_to(np.asarray(lo, dtype=float), (q.shape[0],))
    hi = np.broadcast_to(np.asarray(hi, dtype=float), (q.shape[0],))
    total = lo + hi
    if not np.allclose(total, total[0]):
        raise AssayInputError("reflection needs lo + hi to be the same for every row")
    c = float(total[0])
    u = upper_bound(c - q, lo, hi, delta=delta, betting=betting, horizon=horizon, grid=grid,
                    domain=(c - domain[1], c - domain[0]), tol=tol)
    return c - u


def hedged_interval(
    q: np.ndarray,
    lo: np.ndarray | float,
    hi: np.ndarray | float,
    *,
    delta: float,
    eps: float = 0.5,
    betting: str = "wsr",
    horizon: int | None = None,
    grid: int = 10_000,
    domain: tuple[float, float] = (0.0, 1.0),
    tol: float = 1e-6,
) -> tuple[float, float]:
    """Two-sided (1 - delta) interval for the common mean by the hedged capital process.

    K(m) = eps K+(m) + (1 - eps) K-(m) with monotone bets (cap 1/(hi - lo)); the WSR bets of each
    side are tuned to that side's share of the error, log(1/(delta eps)) and log(1/(delta (1 - eps))).
    The interval is {m : max_i K_i(m) < 1/delta}, found by golden-section search for the minimiser of the convex
    max_i log K_i(m), then bisection on both sides; when even the minimiser is rejected (a rare event under the
    null) the interval is the single point (m*, m*).

    Parameters
    ----------
    q : (S, n) or (n,) array
        The observations: one row per strategy, all with the same mean.
    lo : float or array
        The lowest possible observation, per row.
    hi : float or array
        The highest possible observation, per row.
    delta : float
        The error level of the interval.
    eps : float, optional
        The weight of K+ (bets that the mean is above m). Default 0.5.
    betting : {"wsr", "up"}, optional
        The strategy (:func:`e_process`). Default ``"wsr"``.
    horizon : int, optional
        For WSR: the number of observations that will be seen; None (the default) for the anytime schedule.
    grid : int, optional
        For UP: the number of constant bets. Default 10 000.
    domain : tuple of (float, float), optional
        The range searched. Default (0, 1).
    tol : float, optional
        The search tolerance. Default 1e-6.

    Returns
    -------
    tuple of (float, float)
        ``(lower, upper)``.

    Raises
    ------
    AssayInputError
        When ``betting`` is unknown.

    Examples
    --------
    >>> x = (np.random.default_rng(0).random(200) < 0.3).astype(float)
    >>> tuple(round(v, 4) for v in hedged_interval(x, 0.0, 1.0, delta=0.1, horizon=200))
    (0.2002, 0.3468)
    """
    q = np.atleast_2d(np.asarray(q, dtype=float))
    S, n = q.shape
    lo = np.broadcast_to(np.asarray(lo, dtype=float), (S,))
    hi = np.broadcast_to(np.asarray(hi, dtype=float), (S,))
    thr = math.log(1.0 / delta) - 1e-12
    c = lo + hi
    if betting == "wsr":
        # K- (weight 1 - eps) bets that the mean is below m; K+ (weight eps) that it is above m.
        lam_minus = wsr_bets(q, delta=delta * (1 - eps), cap=1.0 / (hi - lo), horizon=horizon)
        lam_plus = wsr_bets(c[:, None] - q, delta=delta * eps, cap=1.0 / (hi - lo), horizon=horizon)

        def F(m: float) -> float:
            minus = mixture_log_wealth(log_wealth(q, m, lam_minus))  # prod(1 - lambda (q - m))
            plus = mixture_log_wealth(log_wealth(c[:, None] - q, c - m, lam_plus))  # prod(1 + lambda (q - m))
            return float(np.logaddexp(math.log(1 - eps) + minus, math.log(eps) + plus).max())
    elif betting == "up":

        def F(m: float) -> float:
            minus = mixture_log_wealth(up_log_wealth(q, m, hi - lo, grid=grid))
            plus = mixture_log_wealth(up_log_wealth(c[:, None] - q, c - m, hi - lo, grid=grid))
            return float(np.logaddexp(math.log(1 - eps) + minus, math.log(eps) + plus).max())
    else:
        raise AssayInputError(f"betting must be 'wsr' or 'up', got {betting!r}")

    # F is convex in m: golden-section search for its minimiser, then bisection on both sides.
    a, b = domain
    g = (math.sqrt(5) - 1) / 2
    x1, x2 = b - g * (b - a), a + g * (b - a)
    f1, f2 = F(x1), F(x2)
    while b - a > tol:
        if f1 <= f2:
            b, x2, f2 = x2, x1, f1
            x1 = b - g * (b - a)
            f1 = F(x1)
        else:
            a, x1, f1 = x1, x2, f2
            x2 = a + g * (b - a)
            f2 = F(x2)
    m_star = 0.5 * (a + b)
    if F(m_star) >= thr:  # every mean rejected (a rare event under the null): a degenerate interval
        return m_star, m_star

    return _edge(F, m_star, domain[0], thr, tol), _edge(F, m_star, domain[1], thr, tol)


from .sequences import IncrementCS  # noqa: E402  (moved to stats.sequences; importable from here too)
