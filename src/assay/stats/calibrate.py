"""p-to-e calibrators, their generalised inverses, and the PS-DME band half-width with the optimal
power calibrator.

Setting (Farzaneh and Simeone, "Post-Selection Distributional Model Evaluation", PS-DME, Sec. 3.2-3.3
and App. E): K configurations, n_k observations of configuration k, a data-dependent selected set S
with |S| members, and an FCR level delta in (0, 1).

Calibrators (Definition 1)
--------------------------
An e-calibrator is a function f: [0, 1] -> [0, inf] that is (i) nonincreasing and upper
semicontinuous and (ii) has int_0^1 f(u) du <= 1; then f(P) is an e-value (E[f(P)] <= 1) for every
p-value P. The paper uses the power family

    f_tau(p) = (1 - tau) p^(-tau),     tau in (0, 1) (open),  f_tau(0) = +inf              (eq. 12)

with int_0^1 f_tau = (1 - tau) / (1 - tau) = 1 exactly (the family is admissible: no slack). Note the
naming clash with Vovk and Wang (2021) and the ``expectation`` package, which write the same family
as kappa p^(kappa - 1) with kappa = 1 - tau.

The generalised inverse is (paper, text after eq. 12)

    f^{-1}(t) = sup{u in [0, 1] : f(u) >= t},

so for the power family f_tau^{-1}(t) = min(1, ((1 - tau) / t)^(1/tau)) for t > 0 (the sup is
attained), = 1 for t <= 1 - tau (every u qualifies, including t <= 0) and = 0 at t = +inf. For a
generic nonincreasing f, :func:`generalized_inverse` finds the same sup numerically, exactly up to
floating point (bisection on the bit pattern of u, 64 steps); if no u qualifies (f(0) < t) the sup of
the empty set is reported as 0, which gives an infinite (trivial, hence conservative) band.

The paper's proof of Corollary 2 (App. E) uses the Vovk-Sellke envelope

    f_VS(p) = sup_{tau in (0,1)} f_tau(p) = -exp(-1) / (p ln p)  for p <= 1/e,   1 for p > 1/e   (eq. 33)

which is NOT a calibrator (its integral diverges like ln ln(1/p) near 0), and its inverse

    f_VS^{-1}(y) = exp(W_{-1}(-1 / (e y)))  for y >= 1,   1 for y <= 1.                        (eq. 36)

Both are provided (:func:`vovk_sellke_bound`, :func:`vovk_sellke_inverse`) because f_tau^{-1}(y) <=
f_VS^{-1}(y) for every tau, with equality at the optimal tau below; they are references, never to
be used as calibrators. The paper uses no other calibrator (in particular no mixture over tau), so
none is offered here; any callable that passes :func:`is_calibrator` can be used with
:func:`generalized_inverse`.

Band half-width (eq. 13-14)
---------------------------
PS-DME reports, for k in S, the DKW band Fhat_k +- eps_k with

    eps_k = sqrt( ln(2 / alpha) / (2 n_k) ),   alpha = f^{-1}( K / (delta |S|) ),             (eq. 14)

i.e. the DKW inversion (eq. 9: P(sup|Fhat - F| > eps) <= 2 exp(-2 n eps^2)) at level alpha, which is
:func:`dkw_halfwidth`. Theorem 1: FCR <= delta for any selection rule and any calibrator FIXED in
advance.

Optimal power calibrator (eq. 17) and its width (denominator of eq. 16)
----------------------------------------------------------------------
Write c = delta |S| / K in (0, 1) and y = 1 / c. For the power family alpha(tau) = ((1 - tau) c)^(1/tau)
(always < 1 since (1 - tau) c < 1). Maximising ln alpha(tau) = ln((1 - tau) c) / tau over tau in (0, 1):
the derivative vanishes iff ln((1 - tau) c) = -tau / (1 - tau). With u = 1 - tau and w = -1/u this
reads ln(c) - ln(-w) = 1 + w, i.e. w e^w = -c / e. Since u in (0, 1) means w < -1, w is the LOWER real
branch, w = W_{-1}(-delta |S| / (e K)), and

    tau* = 1 + 1 / W_{-1}(-delta |S| / (e K))                                                  (eq. 17)

Substituting back, ln((1 - tau*) c) = 1 + w and tau* = (1 + w) / w, hence ln alpha* = w EXACTLY:

    f_{tau*}^{-1}(K / (delta |S|)) = exp(W_{-1}(-delta |S| / (e K))) = f_VS^{-1}(y)   (eq. 36)

so the optimal power calibrator attains the Vovk-Sellke envelope at this one level, and eq. (14)
becomes

    eps_k = sqrt( (ln 2 - W_{-1}(-delta |S| / (e K))) / (2 n_k) ),

the denominator of the paper's condition (16). The stationary point is the maximum: ln alpha(tau)
-> -inf as tau -> 0 (for c < 1) and as tau -> 1, and the stationary point is unique.

Check against the paper. Eq. (16) and (17) agree with the above. Eq. (34) as printed,
argmax_tau f_tau(p) = -1 / ln p, is the argmax in the kappa = 1 - tau parametrisation; in the
parametrisation of eq. (12) the argmax is tau = 1 + 1 / ln p (d/dtau [ln(1 - tau) - tau ln p] = 0),
and with ln p = ln f_VS^{-1}(y) = W_{-1}(-1/(e y)) this gives eq. (17) again. So eq. (17), which we
implement, is right and (34) has a parametrisation slip (-1/W would be 1 - tau*, not tau*). Also the
"max" in eq. (33) is a sup (not attained in (0, 1)) for p > 1/e.

Branch point (clamp). The argument x = -delta |S| / (e K) lies in (-1/e, 0) for valid inputs, since
c < 1. Only rounding can bring it onto (or below) -1/e (delta within a few ulps of 1 with |S| = K);
there we clamp x to -1/e, where W_{-1}(-1/e) = -1, so tau* = 0 (the limit: the calibrator
degenerates to f = 1, no evidence) and alpha* = exp(-1), eps = sqrt((ln 2 + 1)/(2 n)), which are the
limits of the unclamped formulas as c -> 1 (and any band is valid at delta = 1 anyway). Just above
the branch point scipy's lambertw loses precision (it returns -1 at x = -1/e + 1e-15, while the true
value is about -1 - 7e-8); the result is also clipped to w <= -1 so that tau* is in [0, 1). At the
other end, if x underflows to -0.0 (astronomically small delta |S| / K), W_{-1} = -inf, tau* = 1 and
eps = inf.

Caveat (choice documented): tau* depends on |S|. The guarantee of Theorem 1 needs the calibrator
fixed before the data are seen, so choosing tau from the realised |S| is formally justified only
when |S| is fixed in advance (e.g. fixed-size top-M selection, as in all the paper's experiments).
For a data-dependent |S| pass a pre-specified ``tau`` to :func:`power_level` / :func:`ps_dme_halfwidth`.
"""

from __future__ import annotations

import math
import numbers
import warnings
from typing import Callable, Sequence

import numpy as np
from scipy import integrate
from scipy.special import lambertw

from .. import checks
from ..errors import AssayInputError

__all__ = [
    "power_calibrator",
    "power_calibrator_inverse",
    "vovk_sellke_bound",
    "vovk_sellke_inverse",
    "generalized_inverse",
    "calibrator_mass",
    "is_calibrator",
    "lambert_lower",
    "optimal_power_tau",
    "optimal_power_level",
    "power_level",
    "power_log_level",
    "dkw_halfwidth",
    "optimal_halfwidth",
    "ps_dme_halfwidth",
]

_INV_E = math.exp(-1.0)
_ONE_BITS = np.array(1.0, dtype=np.float64).view(np.int64).item()


# --------------------------------------------------------------------------------------------
# Input validation
# --------------------------------------------------------------------------------------------


def _out(x: np.ndarray):
    """0-d arrays come back as Python floats, others as arrays."""
    x = np.asarray(x, dtype=float)
    return float(x) if x.ndim == 0 else x


def _check_tau(tau) -> np.ndarray:
    t = np.asarray(tau, dtype=float)
    if not np.all((t > 0.0) & (t < 1.0)):  # also rejects NaN
        raise AssayInputError(f"tau must lie in the open interval (0, 1) (eq. 12); got {tau!r}")
    return t


def _check_p(p) -> np.ndarray:
    a = np.asarray(p, dtype=float)
    if not np.all((a >= 0.0) & (a <= 1.0)):
        raise AssayInputError(f"p-values must lie in [0, 1]; got values outside (or NaN) in {p!r}")
    return a


def _check_e(e) -> np.ndarray:
    a = np.asarray(e, dtype=float)
    if np.any(np.isnan(a)):
        raise AssayInputError(f"e-value thresholds must not be NaN; got {e!r}")
    return a


def _check_int(name: str, value, lo: int, hi: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, float, np.floating)):
        raise AssayInputError(f"{name} must be an integer; got {value!r}")
    if isinstance(value, (float, np.floating)) and not (math.isfinite(value) and float(value).is_integer()):
        raise AssayInputError(f"{name} must be an integer; got {value!r}")
    v = int(value)
    if v < lo or (hi is not None and v > hi):
        rng = f"{lo}..{hi}" if hi is not None else f">= {lo}"
        raise AssayInputError(f"{name} must be in {rng}; got {value!r}")
    return v


def _check_design(K, selected, delta) -> tuple[int, int, float]:
    K = _check_int("K (number of configurations)", K, 1)
    s = _check_int("selected (|S|, number of selected configurations)", selected, 1, K)
    return K, s, checks.level(delta, "delta (the FCR level)")


def _check_n(n) -> np.ndarray:
    a = np.asarray(n)
    if a.dtype == bool or not (np.issubdtype(a.dtype, np.integer) or np.issubdtype(a.dtype, np.floating)):
        raise AssayInputError(f"n (observations per configuration) must be integer(s) >= 1; got {n!r}")
    a = a.astype(float)
    if not np.all(np.isfinite(a) & (a >= 1.0) & (a == np.floor(a))):
        raise AssayInputError(f"n (observations per configuration) must be integer(s) >= 1; got {n!r}")
    return a


# --------------------------------------------------------------------------------------------
# Calibrators
# --------------------------------------------------------------------------------------------


def power_calibrator(p, tau):
    """Evaluate the power calibrator f_tau(p) = (1 - tau) p^(-tau) (eq. 12).

    Broadcasts over ``p`` and ``tau``; f_tau(0) = +inf.

    Parameters
    ----------
    p : array_like
        p-value(s), in [0, 1].
    tau : array_like
        Exponent(s), in the open interval (0, 1).

    Returns
    -------
    float or numpy.ndarray
        The e-value(s) f_tau(p); a float for scalar input, an array of the broadcast shape otherwise.

    Raises
    ------
    AssayInputError
        When ``tau`` is outside (0, 1) or ``p`` outside [0, 1] (NaN included).

    Examples
    --------
    >>> power_calibrator(0.01, 0.5)
    5.0
    >>> power_calibrator([0.0, 0.25, 1.0], 0.5).tolist()
    [inf, 1.0, 0.5]
    """
    t = _check_tau(tau)
    a = _check_p(p)
    with np.errstate(divide="ignore", over="ignore"):
        return _out((1.0 - t) * np.power(a, -t))


def power_calibrator_inverse(e, tau):
    """Generalised inverse sup{u in [0,1] : f_tau(u) >= e} = min(1, ((1 - tau)/e)^(1/tau)).

    Broadcasts over ``e`` and ``tau``. Equals 1 for e <= 1 - tau (including e <= 0) and 0 at e = inf.
    Computed in log space.

    Parameters
    ----------
    e : array_like
        e-value threshold(s); any real or +inf, not NaN.
    tau : array_like
        Exponent(s), in the open interval (0, 1).

    Returns
    -------
    float or numpy.ndarray
        The largest u in [0, 1] with f_tau(u) >= e; a float for scalar input, an array of the broadcast shape otherwise.

    Raises
    ------
    AssayInputError
        When ``tau`` is outside (0, 1) or ``e`` is NaN.

    Examples
    --------
    >>> power_calibrator_inverse([0.4, 5.0, float("inf")], 0.5).round(4).tolist()
    [1.0, 0.01, 0.0]
    """
    t = _check_tau(tau)
    a = _check_e(e)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.exp((np.log1p(-t) - np.log(a)) / t)
    return _out(np.where(a <= 1.0 - t, 1.0, np.minimum(r, 1.0)))


def vovk_sellke_bound(p):
    """Evaluate the envelope sup_tau f_tau(p) (eq. 33): -exp(-1)/(p ln p) for p <= 1/e, else 1.

    NOT a calibrator (its integral diverges); +inf at p = 0.

    Parameters
    ----------
    p : array_like
        p-value(s), in [0, 1].

    Returns
    -------
    float or numpy.ndarray
        The envelope's value(s); a float for scalar input, an array of the broadcast shape otherwise.

    Raises
    ------
    AssayInputError
        When ``p`` is outside [0, 1] (NaN included).

    Examples
    --------
    >>> round(vovk_sellke_bound(0.01), 4), vovk_sellke_bound(0.5)
    (7.9884, 1.0)
    """
    a = _check_p(p)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        v = -_INV_E / (a * np.log(a))
    v = np.where(a == 0.0, np.inf, v)
    return _out(np.where(a > _INV_E, 1.0, v))


def vovk_sellke_inverse(e):
    """Generalised inverse of the envelope (eq. 36): exp(W_{-1}(-1/(e y))) for y > 1, else 1.

    Here y is the threshold ``e`` and e in the formula is Euler's number.

    Parameters
    ----------
    e : array_like
        Threshold(s) y; any real or +inf, not NaN.

    Returns
    -------
    float or numpy.ndarray
        f_VS^{-1}(y); a float for scalar input, an array of the broadcast shape otherwise.

    Raises
    ------
    AssayInputError
        When ``e`` is NaN.

    Examples
    --------
    >>> vovk_sellke_inverse([0.5, 2.0, 20.0]).round(4).tolist()
    [1.0, 0.0687, 0.0032]
    """
    a = _check_e(e)
    out = np.ones(a.shape)
    big = a > 1.0
    if np.any(big):
        x = np.maximum(-1.0 / (math.e * a[big]), -_INV_E)
        w = np.minimum(lambertw(x, k=-1).real, -1.0)
        out[big] = np.exp(w)
    return _out(out)


def generalized_inverse(f: Callable[[np.ndarray], np.ndarray], e):
    """Compute sup{u in [0, 1] : f(u) >= e} for a vectorised nonincreasing ``f``, numerically.

    Bisection on the IEEE-754 bit pattern of u (order-preserving for u >= 0), so after at most 64
    evaluations of ``f`` the answer is the largest double u with f(u) >= e as ``f`` computes it.
    ``f`` is never evaluated at 0; if even the smallest positive u fails, 0 is returned (the sup of
    the empty set, conservatively). Vectorised over ``e``.

    Parameters
    ----------
    f : callable
        Nonincreasing function on [0, 1], taking and returning float arrays of the same shape.
    e : array_like
        Threshold(s); any real or +inf, not NaN. Where f(1) >= e the answer is 1.

    Returns
    -------
    float or numpy.ndarray
        The generalised inverse f^{-1}(e); a float for scalar input, an array of the broadcast shape otherwise.

    Raises
    ------
    AssayInputError
        When ``e`` is NaN.

    Examples
    --------
    >>> f = lambda u: power_calibrator(u, 0.5)
    >>> generalized_inverse(f, [0.4, 5.0]).round(12).tolist()
    [1.0, 0.01]
    """
    a = _check_e(e)
    flat = a.ravel()
    one = np.asarray(f(np.ones(flat.shape)), dtype=float)
    lo = np.zeros(flat.shape, dtype=np.int64)  # bits of 0.0: f(0) >= e assumed (f(0) = sup f)
    hi = np.full(flat.shape, _ONE_BITS, dtype=np.int64)  # bits of 1.0: f(1) < e where it matters
    active = ~(one >= flat)
    while True:
        gap = active & (hi - lo > 1)
        if not np.any(gap):
            break
        mid = lo + (hi - lo) // 2
        ok = np.asarray(f(mid.view(np.float64)), dtype=float) >= flat
        lo = np.where(gap & ok, mid, lo)
        hi = np.where(gap & ~ok, mid, hi)
    res = np.where(active, lo.view(np.float64), 1.0)
    return _out(res.reshape(a.shape))


def calibrator_mass(f: Callable[[np.ndarray], np.ndarray], breakpoints: Sequence[float] = ()) -> float:
    """Compute int_0^1 f(u) du, numerically (Definition 1 (ii) asks for <= 1).

    Integrates in s = -ln u, int f(e^{-s}) e^{-s} ds, which turns the integrable singularity of a
    calibrator at u = 0 into a decaying tail that ``scipy.integrate.quad`` handles; the range is split
    at ``breakpoints`` (values of u where f jumps, e.g. for step calibrators) and at a few fixed
    points. Double precision limits the range to u >= 2.2e-308 (the smallest normal double, s <= 708):
    the mass below is invisible (f overflows there). For f_tau it is (2.2e-308)^(1 - tau), below
    1e-10 for tau <= 0.96 but 8.4e-4 at tau = 0.99, so the reported mass of a power calibrator with tau
    very close to 1 falls short of 1 by that amount. A divergent integral (e.g. the Vovk-Sellke
    envelope's, which grows like ln ln(1/u)) comes back well above 1 (about 3.05 for eq. 33).

    Parameters
    ----------
    f : callable
        The candidate calibrator on [0, 1], taking and returning float arrays.
    breakpoints : sequence of float, default ()
        Values of u in (0, 1) where ``f`` jumps.

    Returns
    -------
    float
        The integral (``inf`` if it is not finite).

    Examples
    --------
    >>> round(calibrator_mass(lambda u: power_calibrator(u, 0.5)), 6)
    1.0
    >>> round(calibrator_mass(lambda u: np.where(u <= 0.1, 10.0, 0.0), [0.1]), 6)
    1.0
    """

    s_max = -math.log(np.finfo(float).tiny)

    def g(s):
        u = math.exp(-s)
        with np.errstate(over="ignore", divide="ignore"):
            return float(np.asarray(f(np.array([u])), dtype=float)[0]) * u

    cuts = {-math.log(b) for b in breakpoints if math.exp(-s_max) < b < 1.0}
    edges = sorted({0.0, 1.0, 10.0, 100.0, s_max, *cuts})
    total = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", integrate.IntegrationWarning)
        for lo, hi in zip(edges[:-1], edges[1:]):
            val, _ = integrate.quad(g, lo, hi, limit=500, epsabs=1e-12, epsrel=1e-10)
            total += val
    return float(total) if math.isfinite(total) else math.inf


def is_calibrator(
    f: Callable[[np.ndarray], np.ndarray],
    *,
    tol: float = 1e-8,
    grid_size: int = 4001,
    breakpoints: Sequence[float] = (),
) -> bool:
    """Numerical check of Definition 1 (an e-calibrator).

    ``f`` must be nonnegative and nonincreasing on a grid of u in (0, 1] (log-spaced down to 1e-300 plus linear),
    and :func:`calibrator_mass` <= 1 + tol. Upper semicontinuity cannot be checked numerically; a grid check of
    monotonicity is a necessary condition only.

    Parameters
    ----------
    f : Callable[[numpy.ndarray], numpy.ndarray]
        The candidate calibrator, vectorised over u.
    tol : float, optional
        The relative tolerance of the monotonicity check and the absolute tolerance of the mass. Default 1e-8.
    grid_size : int, optional
        The number of points of each of the two grids (log-spaced and linear). Default 4001.
    breakpoints : sequence of float, optional
        Values of u where ``f`` jumps, passed to :func:`calibrator_mass`. Default none.

    Returns
    -------
    bool
        True when every check passes.

    Examples
    --------
    >>> is_calibrator(lambda u: power_calibrator(u, 0.5)), is_calibrator(vovk_sellke_bound)
    (True, False)
    """
    u = np.unique(np.concatenate([np.logspace(-300, 0, grid_size), np.linspace(0.0, 1.0, grid_size)[1:]]))
    v = np.asarray(f(u), dtype=float)
    if np.any(np.isnan(v)) or np.any(v < 0.0):
        return False
    if np.any(np.diff(v) > tol * np.maximum(1.0, np.abs(v[:-1]))):
        return False
    return calibrator_mass(f, breakpoints) <= 1.0 + tol


# --------------------------------------------------------------------------------------------
# Optimal power calibrator and the PS-DME width
# --------------------------------------------------------------------------------------------


def lambert_lower(K, selected, delta) -> tuple[float, bool]:
    """w = W_{-1}(-delta |S| / (e K)) and whether the argument was clamped at -1/e (module docstring).

    The result is clipped to w <= -1 (the range of the lower branch); at the clamp w = -1. An argument that
    underflows to -0.0 gives w = -inf.

    Parameters
    ----------
    K : int
        The number of configurations (>= 1).
    selected : int
        |S|, the number of selected configurations (1 .. K).
    delta : float
        The FCR level, strictly between 0 and 1.

    Returns
    -------
    tuple of (float, bool)
        ``(w, clamped)``.

    Raises
    ------
    AssayInputError
        When ``K``, ``selected`` or ``delta`` is out of range.

    Examples
    --------
    >>> w, clamped = lambert_lower(20, 5, 0.1)
    >>> round(w, 4), clamped
    (-6.5716, False)
    """
    K, s, d = _check_design(K, selected, delta)
    x = -(d * s) / (math.e * K)
    if x <= -_INV_E:
        return -1.0, True
    w = float(lambertw(x, k=-1).real) if x != 0.0 else -math.inf
    if math.isnan(w):  # defensive: scipy returns NaN just below the branch point
        return -1.0, True
    return min(w, -1.0), False


def optimal_power_tau(K, selected, delta) -> float:
    """tau* = 1 + 1 / W_{-1}(-delta |S| / (e K)) (eq. 17), in [0, 1); 0 only at the clamp.

    The tau of the power calibrator that maximises the level alpha = f_tau^{-1}(K / (delta |S|)), hence gives the
    narrowest PS-DME band (module docstring).

    Parameters
    ----------
    K : int
        The number of configurations (>= 1).
    selected : int
        |S|, the number of selected configurations (1 .. K).
    delta : float
        The FCR level, strictly between 0 and 1.

    Returns
    -------
    float
        tau*.

    Raises
    ------
    AssayInputError
        When ``K``, ``selected`` or ``delta`` is out of range.

    Examples
    --------
    >>> round(optimal_power_tau(20, 5, 0.1), 4)
    0.8478
    """
    w, _ = lambert_lower(K, selected, delta)
    return 1.0 + 1.0 / w


def optimal_power_level(K, selected, delta) -> float:
    """alpha* = f_{tau*}^{-1}(K / (delta |S|)) = exp(W_{-1}(-delta |S| / (e K))) (eq. 14, 17, 36).

    The per-band level of the optimal power calibrator, which attains the Vovk-Sellke envelope (module docstring).

    Parameters
    ----------
    K : int
        The number of configurations (>= 1).
    selected : int
        |S|, the number of selected configurations (1 .. K).
    delta : float
        The FCR level, strictly between 0 and 1.

    Returns
    -------
    float
        alpha*.

    Raises
    ------
    AssayInputError
        When ``K``, ``selected`` or ``delta`` is out of range.

    Examples
    --------
    >>> round(optimal_power_level(20, 5, 0.1), 6)
    0.001399
    """
    w, _ = lambert_lower(K, selected, delta)
    return math.exp(w)


def _power_log_level(K, selected, delta, tau) -> float:
    """ln f_tau^{-1}(K / (delta |S|)) = ln((1 - tau) delta |S| / K) / tau, in log space (no underflow)."""
    K, s, d = _check_design(K, selected, delta)
    t = float(_check_tau(tau))
    return min(0.0, (math.log1p(-t) + math.log(d) + math.log(s) - math.log(K)) / t)


def power_log_level(K, selected, delta, tau) -> float:
    """ln alpha = ln f_tau^{-1}(K / (delta |S|)) for a given tau (eq. 12, 14).

    Computed in log space (no underflow) as min(0, ln((1 - tau) delta |S| / K) / tau).

    Parameters
    ----------
    K : int
        The number of configurations (>= 1).
    selected : int
        |S|, the number of selected configurations (1 .. K).
    delta : float
        The FCR level, strictly between 0 and 1.
    tau : float
        The power calibrator's tau, in the open interval (0, 1), fixed in advance.

    Returns
    -------
    float
        ln alpha (<= 0).

    Raises
    ------
    AssayInputError
        When ``K``, ``selected``, ``delta`` or ``tau`` is out of range.

    Examples
    --------
    >>> round(power_log_level(20, 5, 0.1, 0.8), 4)
    -6.6229
    """
    return _power_log_level(K, selected, delta, tau)


def power_level(K, selected, delta, tau) -> float:
    """alpha = f_tau^{-1}(K / (delta |S|)) for a given (pre-specified) tau (eq. 14).

    May underflow to 0 for tau near 0; :func:`ps_dme_halfwidth` works with ln alpha instead.

    Parameters
    ----------
    K : int
        The number of configurations (>= 1).
    selected : int
        |S|, the number of selected configurations (1 .. K).
    delta : float
        The FCR level, strictly between 0 and 1.
    tau : float
        The power calibrator's tau, in the open interval (0, 1), fixed in advance.

    Returns
    -------
    float
        alpha, in [0, 1].

    Raises
    ------
    AssayInputError
        When ``K``, ``selected``, ``delta`` or ``tau`` is out of range.

    Examples
    --------
    >>> round(power_level(20, 5, 0.1, 0.8), 6)
    0.00133
    """
    return math.exp(_power_log_level(K, selected, delta, tau))


def dkw_halfwidth(n, alpha):
    """Return the DKW inversion at level alpha (eq. 9, 11, 14): eps = sqrt(ln(2/alpha) / (2 n)); vectorised over n.

    Parameters
    ----------
    n : int or array_like of int
        Observations per configuration, integer(s) >= 1.
    alpha : float
        Level, in [0, 1]; alpha = 0 gives an infinite half-width.

    Returns
    -------
    float or numpy.ndarray
        The half-width(s) eps; a float for scalar input, an array of the broadcast shape otherwise.

    Raises
    ------
    AssayInputError
        When ``n`` is not integer(s) >= 1 or ``alpha`` is outside [0, 1].

    Examples
    --------
    >>> round(dkw_halfwidth(100, 0.05), 4), dkw_halfwidth([10, 100], 0.05).round(4).tolist()
    (0.1358, [0.4295, 0.1358])
    """
    nn = _check_n(n)
    a = float(alpha)
    if not (0.0 <= a <= 1.0) or math.isnan(a):
        raise AssayInputError(f"alpha must lie in [0, 1]; got {alpha!r}")
    log_term = math.inf if a == 0.0 else math.log(2.0) - math.log(a)
    return _out(np.sqrt(log_term / (2.0 * nn)))


def optimal_halfwidth(n, K, selected, delta):
    """PS-DME half-width with the optimal power calibrator, vectorised over ``n`` (module docstring).

    eps_k = sqrt((ln 2 - W_{-1}(-delta |S| / (e K))) / (2 n_k)): the DKW half-width (eq. 14) at the level
    alpha* of :func:`optimal_power_level`.

    Parameters
    ----------
    n : int or array_like
        The number of observations n_k of each configuration (whole numbers >= 1).
    K : int
        The number of configurations (>= 1).
    selected : int
        |S|, the number of selected configurations (1 .. K).
    delta : float
        The FCR level, strictly between 0 and 1.

    Returns
    -------
    float or numpy.ndarray
        eps_k: a float for a scalar ``n``, else an array shaped like ``n``.

    Raises
    ------
    AssayInputError
        When ``n``, ``K``, ``selected`` or ``delta`` is out of range.

    Examples
    --------
    >>> optimal_halfwidth([100, 400], 20, 5, 0.1).round(4).tolist()
    [0.1906, 0.0953]
    """
    nn = _check_n(n)
    w, _ = lambert_lower(K, selected, delta)
    return _out(np.sqrt((math.log(2.0) - w) / (2.0 * nn)))


def ps_dme_halfwidth(n, K, selected, delta, *, tau: float | None = None):
    """PS-DME half-width (eq. 14) with the power calibrator.

    Uses the optimal tau* (eq. 17) when ``tau`` is None (:func:`optimal_halfwidth`), else the given pre-specified
    tau, with ln alpha computed in log space (:func:`power_log_level`). Vectorised over ``n``. Choosing tau* from
    the realised |S| is formally justified only when |S| is fixed in advance (module docstring); for a
    data-dependent |S| pass a pre-specified ``tau``.

    Parameters
    ----------
    n : int or array_like
        The number of observations n_k of each configuration (whole numbers >= 1).
    K : int
        The number of configurations (>= 1).
    selected : int
        |S|, the number of selected configurations (1 .. K).
    delta : float
        The FCR level, strictly between 0 and 1.
    tau : float, optional
        A pre-specified tau in the open interval (0, 1); None (the default) for tau*.

    Returns
    -------
    float or numpy.ndarray
        eps_k: a float for a scalar ``n``, else an array shaped like ``n``.

    Raises
    ------
    AssayInputError
        When ``n``, ``K``, ``selected``, ``delta`` or ``tau`` is out of range.

    Examples
    --------
    >>> round(ps_dme_halfwidth(100, 20, 5, 0.1), 4), round(ps_dme_halfwidth(100, 20, 5, 0.1, tau=0.8), 4)
    (0.1906, 0.1913)
    """
    if tau is None:
        return optimal_halfwidth(n, K, selected, delta)
    nn = _check_n(n)
    log_alpha = _power_log_level(K, selected, delta, tau)
    return _out(np.sqrt((math.log(2.0) - log_alpha) / (2.0 * nn)))
