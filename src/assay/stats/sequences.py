"""Confidence sequences for the means of several claims from martingale increments with predictable bounds (the
doubly robust increments of :mod:`assay.stats.sampling`), valid at every sample size at once, so a run may stop
whenever its goal is met.

* :class:`IncrementCS`, finite-sample: every point of a grid tested by its own betting e-process (Waudby-Smith and
  Ramdas 2024). Its state is (claims x grid points): :meth:`IncrementCS.state_bytes` says how much before any is
  allocated.
* :class:`AsymptoticCS`, asymptotic: the two-sided normal-mixture boundary of Robbins, as an asymptotic confidence
  sequence (Waudby-Smith, Arbour, Sinha, Kennedy & Ramdas 2024, "Time-uniform central limit theory and asymptotic
  confidence sequences", Thm 2.2), over predictably weighted increments; its state is a few numbers per claim.

Both take the increments in batches, ``update(idx, phi, L, U)`` for claims ``idx``, and keep a running intersection
(an end once moved never moves back); ``set_exact`` records a claim known exactly (a whole finite bank seen).
FAQ (:mod:`assay.faq.core`), the adaptive comparison (:mod:`assay.compare.adaptive`) and the audit
(:mod:`assay.audit`) use them.
"""

from __future__ import annotations

import numpy as np

from ..errors import AssayInputError

__all__ = ["cs_rho", "cs_radius", "AsymptoticCS", "IncrementCS"]

#: the largest number of (claim x batch x grid point) cells one step of an update works on at once (64 MB a float
#: array): larger updates are done in slices of claims, with the same numbers
CELLS = 1 << 23


def cs_rho(alpha, v_target):
    """Mixing scale rho of the normal-mixture boundary.

    The boundary is tightest where the variance process equals ``v_target``
    (Waudby-Smith et al. 2024, Sec. 2: rho^2 = (2 log(1/alpha) + log(1 + 2 log(1/alpha))) / V*).

    Parameters
    ----------
    alpha : float or ndarray
        Miscoverage of the confidence sequence.
    v_target : float or ndarray
        V*, the value of the variance process where the boundary should be tightest (floored at 1e-300).

    Returns
    -------
    float or ndarray
        The mixing scale rho (an array when given arrays, elementwise).

    Examples
    --------
    >>> round(cs_rho(0.05, 100.0), 4)
    0.2817
    """
    a = 2.0 * np.log(1.0 / np.asarray(alpha, dtype=float))
    rho = np.sqrt((a + np.log1p(a)) / np.maximum(np.asarray(v_target, dtype=float), 1e-300))
    return float(rho) if rho.ndim == 0 else rho


def cs_radius(V, rho, alpha, sum_c):
    """Half-width of the two-sided normal-mixture confidence sequence for a weighted mean of increments.

    With S_t = sum_s c_s (phi_s - theta) and the variance process V_t, the boundary |S_t| <= sqrt((V_t + 1/rho^2)
    (log(1 + rho^2 V_t) + 2 log(1/alpha))) holds for all t with probability about 1 - alpha; dividing by sum c gives
    the radius around the weighted mean.

    Parameters
    ----------
    V : array_like
        The variance process V_t on the unnormalised scale (negative values count as 0).
    rho : float or array_like
        The mixing scale (:func:`cs_rho`): where the boundary is tightest, never its validity.
    alpha : float or array_like
        Miscoverage.
    sum_c : array_like
        The sum of the weights c_t so far.

    Returns
    -------
    ndarray
        The radius around theta_hat_t.

    Examples
    --------
    >>> import numpy as np
    >>> print(cs_radius(np.array([10.0, 100.0]), 0.5, 0.05, np.array([100.0, 100.0])).round(4))
    [0.1007 0.3102]
    """
    V = np.maximum(np.asarray(V, dtype=float), 0.0)
    r2 = (V + 1.0 / rho**2) * (np.log1p(rho**2 * V) + 2.0 * np.log(1.0 / alpha))
    return np.sqrt(r2) / sum_c


class AsymptoticCS:
    """Asymptotic confidence sequences for several claims from weighted martingale increments (module docstring).

    For claim c with increments phi_t, weights c_t (predictable) and a variance floor v_t per increment:
    theta_hat = sum c phi / sum c; V = max(V_emp n / (n - 1), sum c^2 v) with V_emp = sum c^2 (phi - theta_hat)^2;
    the interval theta_hat +- :func:`cs_radius` is intersected over time from ``burn_in`` increments on, and with
    the certain bounds [L_t, U_t] of each increment where given. ``rho`` is the mixing scale per claim: set it
    (:attr:`rho`) before the first update, or it is chosen at the burn-in, tightest at ``horizon`` from the spread
    seen so far. The floor v_t defaults to a spread of one answer in t + 1 off the claim's value, ((U_t - L_t) / 2)^2
    / (t + 1), so an early zero variance never closes an interval.

    Parameters
    ----------
    alpha : float or array_like
        Each claim's two-sided miscoverage (its length is the number of claims).
    low, high : float
        The claims' range: the interval before any increment.
    horizon : int
        The sample size where the boundary should be tightest (when ``rho`` is not set).
    burn_in : int
        Increments before a claim's interval moves from [low, high] (its certain bounds aside).
    """

    def __init__(self, alpha, low: float, high: float, *, horizon: int, burn_in: int) -> None:
        self.alpha = np.atleast_1d(np.asarray(alpha, dtype=float))
        C = len(self.alpha)
        self.low, self.high, self.horizon, self.burn_in = float(low), float(high), int(horizon), int(burn_in)
        self.n = np.zeros(C, dtype=np.int64)
        # running sums of c, c phi, c^2, c^2 phi, c^2 phi^2 and c^2 v
        self.sc, self.scphi, self.sc2, self.sc2phi, self.sc2phi2, self.floor = (np.zeros(C) for _ in range(6))
        self.rho = np.full(C, np.nan)
        self.lo = np.full(C, float(low))
        self.hi = np.full(C, float(high))
        self.exact = np.full(C, np.nan)

    @staticmethod
    def state_bytes(C: int) -> int:
        """The bytes the state of ``C`` claims takes (14 numbers a claim)."""
        return 14 * 8 * int(C)

    def update(self, idx, phi, L=None, U=None, c=1.0, floor=None) -> None:
        """Feed claims ``idx`` (C',) a batch of increments ``phi`` (C', B) with weights ``c`` (B,) or (C', B), their
        certain bounds ``L``, ``U`` (C', B; optional) and their variance floors ``floor`` (C', B; default from the
        bounds, class docstring)."""
        idx = np.asarray(idx, dtype=np.int64)
        if not len(idx):
            return
        phi = np.atleast_2d(np.asarray(phi, dtype=float))
        c = np.broadcast_to(np.asarray(c, dtype=float), phi.shape)
        B = phi.shape[1]
        n0 = self.n[idx]
        if floor is None:
            t = n0[:, None] + np.arange(1, B + 1)[None, :]
            floor = ((np.asarray(U, dtype=float) - np.asarray(L, dtype=float)) / 2.0) ** 2 / (t + 1.0)
        c2 = c * c
        self.sc[idx] += c.sum(axis=1)
        self.scphi[idx] += (c * phi).sum(axis=1)
        self.sc2[idx] += c2.sum(axis=1)
        self.sc2phi[idx] += (c2 * phi).sum(axis=1)
        self.sc2phi2[idx] += (c2 * (phi * phi)).sum(axis=1)
        self.floor[idx] += (c2 * floor).sum(axis=1)
        self.n[idx] = n0 + B
        if L is not None:
            self.lo[idx] = np.maximum(self.lo[idx], np.atleast_2d(L).max(axis=1))
            self.hi[idx] = np.minimum(self.hi[idx], np.atleast_2d(U).min(axis=1))
        self._narrow(idx)

    def _narrow(self, idx: np.ndarray) -> None:
        """The claims that have passed the burn-in: their interval intersected with theta_hat +- radius."""
        ready = self.n[idx] >= self.burn_in
        if not ready.any():
            return
        j = idx[ready]
        n = self.n[j].astype(float)
        est = self.scphi[j] / np.maximum(self.sc[j], 1e-300)
        emp = np.maximum(self.sc2phi2[j] - 2 * est * self.sc2phi[j] + est**2 * self.sc2[j], 0.0)
        V = np.maximum(emp * (n / np.maximum(n - 1.0, 1.0)), self.floor[j])
        new = np.isnan(self.rho[j])
        if new.any():  # the mixing scale: tightest at the horizon, from the spread seen over the burn-in
            scale = self.horizon / np.maximum(self.n[j[new]], 1)
            self.rho[j[new]] = cs_rho(self.alpha[j[new]], np.maximum(V[new] * scale, 1e-12))
        r = cs_radius(V, self.rho[j], self.alpha[j], np.maximum(self.sc[j], 1e-300))
        self.lo[j] = np.maximum(self.lo[j], est - r)
        self.hi[j] = np.minimum(self.hi[j], est + r)

    def set_exact(self, idx, values) -> None:
        """The means of claims ``idx`` are known exactly (a whole finite bank seen)."""
        self.exact[np.asarray(idx, dtype=np.int64)] = np.asarray(values, dtype=float)

    def estimate(self) -> np.ndarray:
        """Each claim's weighted mean of its increments (its exact value where known)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            est = self.scphi / self.sc
        return np.where(np.isfinite(self.exact), self.exact, est)

    def interval(self) -> tuple[np.ndarray, np.ndarray]:
        """Each claim's (lower, upper) now (the running intersection; the exact value where known)."""
        lo, hi = self.lo.copy(), np.maximum(self.hi, self.lo)
        ex = np.isfinite(self.exact)
        return np.where(ex, self.exact, lo), np.where(ex, self.exact, hi)


class IncrementCS:
    """Anytime-valid confidence sequences for the means theta_c of several claims, from martingale increments
    with predictable bounds, by testing every point of a grid with its own betting e-process.

    Setting. For claim c, increments phi_1, phi_2, ... arrive with E[phi_t | past] = theta_c and
    L_t <= phi_t <= U_t, where L_t and U_t are known before phi_t is seen. The doubly robust increments of
    sampling without replacement from a finite bank (FAQ's, and :mod:`assay.compare.adaptive`'s) are of this form:
    their bounds narrow as |remaining| / N, so the sequence closes on the bank's own mean as the bank runs out.

    Tests. With x_t = (phi_t - L_t) / (U_t - L_t) in [0, 1] and mu_t(g) = (g - L_t) / (U_t - L_t), every grid
    point g gets two one-sided e-processes against composite nulls (Waudby-Smith and Ramdas 2024, Sec. 4):

    * up(g) = prod (1 + l+_t (x_t - mu_t(g))), l+_t in [0, cap / mu_t(g)]: a nonnegative supermartingale under
      every theta <= g (then E[x_t] = mu_t(theta) <= mu_t(g)), so crossing 1 / a rejects "theta <= g" at level a;
    * dn(g) = prod (1 - l-_t (x_t - mu_t(g))), l-_t in [0, cap / (1 - mu_t(g))]: rejects "theta >= g".

    The bets are aGRAPA's (Waudby-Smith and Ramdas 2024, Sec. B.3) for that null: l = (m - mu) / (v + (m - mu)^2)
    clipped to its range, with m and v the predicted mean and variance of x_t from the increments before the
    current batch (a batch's bets are set before any of its increments is seen: still predictable). Each point's
    bets are tuned to that point's null, which is the "betting at the decision nulls" of the adaptive comparison:
    the decision points (0 and +-margin for a difference) are grid points, so a verdict is exactly a rejection.
    A point with mu_t(g) outside [0, 1] is impossible (theta lies in [L_t, U_t]) and rejected with certainty.

    Interval. Each side gets a / 2 (a: the claim's two-sided level). The lower end is the grid point just below the
    first point (from below) whose "theta <= g" was never rejected; the upper end likewise from above. The end is
    valid although the bets depend on g: if theta < lower end, the smallest grid point g* >= theta (fixed by
    theta alone) was rejected while "theta <= g*" held, an event of probability at most a / 2. The interval is
    therefore conservative by at most one grid step (``grid`` points over the range, plus ``points``).
    """

    def __init__(self, alpha, low: float, high: float, *, grid: int = 1024, points=(), cap: float = 0.5) -> None:
        alpha = np.atleast_1d(np.asarray(alpha, dtype=float))
        if np.any(alpha <= 0) or np.any(alpha >= 1):
            raise AssayInputError("every level must be in (0, 1)")
        if not high > low:
            raise AssayInputError("the range needs high > low")
        C = len(alpha)
        pts = np.asarray(list(points), dtype=float)
        g = np.unique(np.concatenate([np.linspace(low, high, int(grid)), pts[(pts > low) & (pts < high)]]))
        self.g = g
        self.low, self.high, self.cap = float(low), float(high), float(cap)
        self.thr = np.log(2.0 / alpha)  # each side at alpha / 2
        G = len(g)
        self.log_up = np.zeros((C, G))
        self.log_dn = np.zeros((C, G))
        self.out_lo = np.zeros((C, G), bool)  # "theta <= g" rejected: theta > g
        self.out_hi = np.zeros((C, G), bool)  # "theta >= g" rejected: theta < g
        self.n = np.zeros(C, dtype=np.int64)
        self.sum_phi = np.zeros(C)
        self.sum_res2 = np.zeros(C)
        self.exact = np.full(C, np.nan)

    def _window(self, idx: np.ndarray) -> np.ndarray:
        """The grid columns that can still move claims ``idx``' ends: from the first point not rejected from below
        to the last not rejected from above (a point outside has its side's rejection already), as (C', W) indices,
        W the widest window (narrower windows padded by repeating their last column)."""
        G = len(self.g)
        first = np.argmin(self.out_lo[idx], axis=1)
        first = np.where(self.out_lo[idx].all(axis=1), G - 1, first)
        last = G - 1 - np.argmin(self.out_hi[idx][:, ::-1], axis=1)
        last = np.where(self.out_hi[idx].all(axis=1), 0, last)
        lo_i = np.minimum(first, last)
        hi_i = np.maximum(first, last)
        W = int((hi_i - lo_i).max()) + 1
        return np.minimum(lo_i[:, None] + np.arange(W)[None, :], hi_i[:, None])

    @staticmethod
    def state_bytes(C: int, grid: int, points: int = 0) -> int:
        """The bytes the state of ``C`` claims on a grid of ``grid`` (+ ``points``) points takes: two log-wealths
        and two rejection flags a point, and four numbers a claim."""
        return int(C) * ((int(grid) + int(points)) * (8 + 8 + 1 + 1) + 4 * 8)

    #: the bytes an update works in beyond the state, at most: a dozen float arrays of :data:`CELLS` cells
    WORK_BYTES = 12 * 8 * CELLS

    def update(self, idx, phi, L, U) -> None:
        """Feed claims ``idx`` (C',) a batch of increments ``phi`` with their bounds ``L``, ``U`` (C', B each),
        in the order they arrived (in slices of claims of at most :data:`CELLS` cells at a time: each claim's
        numbers do not depend on the others')."""
        idx = np.asarray(idx, dtype=np.int64)
        if not len(idx):
            return
        phi, L, U = (np.atleast_2d(np.asarray(x, dtype=float)) for x in (phi, L, U))
        step = max(1, CELLS // (phi.shape[1] * len(self.g)))
        for s in range(0, len(idx), step):
            self._update(idx[s:s + step], phi[s:s + step], L[s:s + step], U[s:s + step])

    def _update(self, idx, phi, L, U) -> None:
        """One slice of :meth:`update`."""
        cols = self._window(idx)  # (C', W): only these points can still change an end
        rows = idx[:, None]
        g = self.g[cols][:, None, :]  # (C', 1, W)
        n = self.n[idx]
        mid = 0.5 * (self.low + self.high)
        theta_hat = (mid + self.sum_phi[idx]) / (n + 1.0)  # shrunk towards the middle of the range early on
        v = (0.25 + self.sum_res2[idx]) / (n + 1.0)  # predicted variance of x (the prior: a fair coin's)
        width = U - L
        ok = width > 1e-15  # a zero-width step carries its value exactly; no bet on it
        w = np.where(ok, width, 1.0)
        x = np.clip((phi - L) / w, 0.0, 1.0)
        m = np.clip((theta_hat[:, None] - L) / w, 0.0, 1.0)  # (C', B)
        mu = (g - L[:, :, None]) / w[:, :, None]  # (C', B, W)
        diff = m[:, :, None] - mu
        den = v[:, None, None] + diff * diff
        feasible = (mu > 0.0) & (mu < 1.0) & ok[:, :, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            lp = np.where(feasible & (diff > 0), np.minimum(diff / den, self.cap / mu), 0.0)
            lm = np.where(feasible & (diff < 0), np.minimum(-diff / den, self.cap / (1.0 - mu)), 0.0)
        dx = x[:, :, None] - mu
        up = self.log_up[rows, cols][:, None, :] + np.cumsum(np.log1p(lp * dx), axis=1)
        dn = self.log_dn[rows, cols][:, None, :] + np.cumsum(np.log1p(-lm * dx), axis=1)
        thr = self.thr[idx][:, None]
        # certain rejections: theta lies in [L_t, U_t], and at g = L_t ("theta <= L_t") phi_t = L_t for sure
        sure_lo = ((mu <= 0.0) & ((mu < 0.0) | (x[:, :, None] > 0.0))).any(axis=1)
        sure_hi = ((mu >= 1.0) & ((mu > 1.0) | (x[:, :, None] < 1.0))).any(axis=1)
        self.out_lo[rows, cols] |= (up.max(axis=1) >= thr) | sure_lo
        self.out_hi[rows, cols] |= (dn.max(axis=1) >= thr) | sure_hi
        self.log_up[rows, cols] = up[:, -1, :]
        self.log_dn[rows, cols] = dn[:, -1, :]
        # the points left of a claim's window are rejected from below, right of it from above, for good
        self.n[idx] = n + phi.shape[1]
        self.sum_phi[idx] += phi.sum(axis=1)
        self.sum_res2[idx] += ((x - m) ** 2).sum(axis=1)

    def set_exact(self, idx, values) -> None:
        """The means of claims ``idx`` are known exactly (a whole finite bank seen)."""
        self.exact[np.asarray(idx, dtype=np.int64)] = np.asarray(values, dtype=float)

    def estimate(self) -> np.ndarray:
        """Each claim's mean of its increments (each one unbiased for theta; its exact value where known)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            est = self.sum_phi / self.n
        return np.where(np.isfinite(self.exact), self.exact, est)

    def interval(self) -> tuple[np.ndarray, np.ndarray]:
        """Each claim's (lower, upper) now (the running intersection: a rejected point stays rejected)."""
        G = len(self.g)
        first_open = np.argmin(self.out_lo, axis=1)  # first point not rejected from below
        all_lo = self.out_lo.all(axis=1)
        lo = np.where(first_open > 0, self.g[np.maximum(first_open - 1, 0)], self.low)
        lo = np.where(all_lo, self.high, lo)
        last_open = G - 1 - np.argmin(self.out_hi[:, ::-1], axis=1)
        all_hi = self.out_hi.all(axis=1)
        hi = np.where(last_open < G - 1, self.g[np.minimum(last_open + 1, G - 1)], self.high)
        hi = np.where(all_hi, self.low, hi)
        hi = np.maximum(hi, lo)
        ex = np.isfinite(self.exact)
        return np.where(ex, self.exact, lo), np.where(ex, self.exact, hi)
