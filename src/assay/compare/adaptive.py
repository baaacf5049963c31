"""The adaptive comparison engine: several models asked questions of a finite bank, round by round, only as long as
the goal needs them, each question drawn where it decides the open claims, with intervals that hold at every round.

One engine serves :func:`assay.compare.live.query_until_resolved` (models behind endpoints), a campaign's
``[compare]`` section and :func:`assay.compare.live.replay` (a complete score table replayed as live models). It
sees the models only through ``ask(models, items) -> scores``.

Estimand
--------
Each model's mean score over the N questions of the bank (each question weighted equally), theta_a, and each pair's
difference theta_a - theta_b. The bank is finite and fixed: the targets are its own means, not a population's.

Design
------
Round r: the models still in play are asked the same ``batch`` questions (the design stays paired), drawn one at a
time without replacement from the questions none of them has been asked. Question j of the R still unasked is drawn
with probability

    q(j) = floor / R + (1 - floor) h(j) / sum_R h         (questions the history covers; the others keep 1 / R),

where h(j) = sum over the open pair claims of sqrt(p_a(j) (1 - p_a(j)) + p_b(j) (1 - p_b(j))), normalised per pair:
the predicted spread of the pair's difference on question j, from FAQ's factor model (:mod:`assay.faq`) updated with
each model's own answers after every round (:func:`assay.faq.core.laplace_step`). Without a history q is uniform.
Every question left keeps probability at least floor / R, so the weights below stay bounded.

Increments (doubly robust, without replacement)
-----------------------------------------------
For a claim c with per-question value z_c(j) (a model's score, or a pair's score difference) and prediction f_c(j)
(the factor model's p_a(j), or p_a(j) - p_b(j); the claim's running mean where there is none), the t-th draw I_t
gives

    phi_t = (1/N) [ sum_{asked before} z_c + sum_{R_t} f_c + (z_c(I_t) - f_c(I_t)) / q_t(I_t) ],

with E[phi_t | past] = theta_c exactly (FAQ's without-replacement increment, :mod:`assay.faq.core`), and the bounds
L_t <= phi_t <= U_t obtained by putting the lowest and highest possible z at the worst question of R_t: known before
the answer. Uniform q gives phi_t = (1/N) [sum_{asked} z + R_t z(I_t)], the sequential without-replacement form of the
sample mean, and L_t, U_t narrow as R_t / N: with the whole bank asked a claim is known exactly. A model that leaves
the play keeps its claims as they were (a confidence sequence holds at every time, including the one it stopped at).

Guarantees
----------
``finite`` (the default): each claim's increments feed :class:`assay.stats.betting.IncrementCS`, one-sided betting
e-processes at every point of a grid, each point's bets tuned to its own null (aGRAPA), the decision points (0 and
+-margin) among them, so a verdict is a rejection of its own null ("difference <= 0" for "a better", ">= margin" and
"<= -margin" for "equivalent"). The error level delta is split by a union bound: each of the K + K (K - 1) / 2 claims
gets delta / (K + K (K - 1) / 2), half to each one-sided side. Holds at every round, whatever the history's quality.

``asymptotic``: the same increments, the normal-mixture confidence sequence of Waudby-Smith, Arbour, Sinha, Kennedy and
Ramdas (2024, Thm 2.2; :func:`assay.faq.core.cs_radius`) with weights c_t = N / R_t, Bonferroni over the claims,
reported only after ``BURN_IN`` draws and with a variance floor (a claim with no spread yet is given the spread of one
answer in t + 1 off its value), so an early zero variance never orders a pair. About 1 - delta, by a martingale
central limit theorem. The weights make every weighted increment about equally spread (phi_t's spread shrinks like
R_t / N): FAQ's fixed-budget weights (N / R_t)^2 let the last few questions of a long run dominate the sum, where
the central limit theorem does not hold (with them goal ``all`` missed more than delta in ``bench/compare_adaptive.py``;
docs/compare.md has the numbers and the commit that reproduces them).

Goals and who stays in play
---------------------------
Certified orderings are closed transitively (if a > b and b > c hold, a > c holds: every claim holds at once).
``all``: every pair ordered or equivalent within the margin; a model is asked while one of its pairs is open.
``top-k`` (``best`` is k = 1): a model is surely in when it beats at least K - k others, surely out when at least k
beat it; the goal is met when every model is in or out, or (with a margin) the undecided ones are pairwise
equivalent. For ``best`` a model beaten by any other leaves at once; for k >= 2 a model stays while it is undecided
or has an open pair with an undecided model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import AssayInputError
from ..stats.betting import IncrementCS
from . import core

__all__ = ["GOALS", "GUARANTEES", "check_goal", "certified_better", "goal_status", "FactorPredictor", "AdaptiveRun",
           "run", "AsymptoticCS", "BURN_IN", "FLOOR"]

GOALS = ("all", "best", "top-k")
GUARANTEES = ("finite", "asymptotic")
#: draws before the asymptotic sequences are reported (before that, only the certain bounds)
BURN_IN = 30
#: the share of every draw's probability spread uniformly over the questions left
FLOOR = 0.5
_EPS = 1e-9  # the decision points sit this far inside the nulls they reject ("> 0" is "> 1e-9 * range")


def check_goal(goal: Any, k: Any, K: int) -> tuple[str, int]:
    """The goal and the size of the top set it certifies -> (goal, k); ``best`` is k = 1, ``all`` k = 0."""
    if goal not in GOALS:
        raise AssayInputError(f"goal must be one of {', '.join(GOALS)}; got {goal!r}")
    if goal == "top-k":
        if k is None:
            raise AssayInputError("goal 'top-k' needs k (how many models the top set holds)")
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= int(k) < K:
            raise AssayInputError(f"k must be an integer from 1 to {K - 1} (the number of models less one); got {k!r}")
        return goal, int(k)
    if k is not None and not (goal == "best" and k == 1):
        raise AssayInputError(f"k is for goal 'top-k' only (goal {goal!r} was given with k={k!r})")
    return goal, (1 if goal == "best" else 0)


def certified_better(d_lo: np.ndarray, d_hi: np.ndarray, K: int) -> np.ndarray:
    """(K, K) booleans: [i, j] when i is certified better than j, directly or through a chain of certified pairs."""
    a, b = core.pair_index(K)
    better = np.zeros((K, K), bool)
    better[a[d_lo > 0], b[d_lo > 0]] = True
    better[b[d_hi < 0], a[d_hi < 0]] = True
    for m in range(K):  # Warshall's transitive closure
        better |= better[:, m:m + 1] & better[m:m + 1, :]
    return better


@dataclass
class GoalStatus:
    met: bool
    needed: np.ndarray  # (K,) models whose claims the goal still needs
    open_pairs: np.ndarray  # (P,) pairs whose settling the goal still needs
    settled: np.ndarray  # (P,) ordered (directly or through others) or equivalent
    better: np.ndarray  # (K, K) the transitive closure
    status: np.ndarray  # (K,) "in", "out" or "open" (goal top-k / best); "" for goal all


def goal_status(goal: str, k: int, d_lo: np.ndarray, d_hi: np.ndarray, margin: float | None, K: int) -> GoalStatus:
    """Where the goal stands given the pair intervals (module docstring)."""
    a, b = core.pair_index(K)
    better = certified_better(d_lo, d_hi, K)
    ordered = better[a, b] | better[b, a]
    m = 0.0 if margin is None else margin  # without a margin: a difference known to be exactly 0
    equiv = ~ordered & (d_lo >= -m) & (d_hi <= m)
    settled = ordered | equiv
    status = np.full(K, "", dtype=object)
    if goal == "all":
        open_p = ~settled
        needed = np.zeros(K, bool)
        needed[a[open_p]] = True
        needed[b[open_p]] = True
        return GoalStatus(bool(settled.all()), needed, open_p, settled, better, status)
    beats, beaten = better.sum(axis=1), better.sum(axis=0)
    s_in, s_out = beats >= K - k, beaten >= k
    undecided = ~s_in & ~s_out
    status[:] = "open"
    status[s_in] = "in"
    status[s_out] = "out"
    both_open = undecided[a] & undecided[b]
    ties = bool(equiv[both_open].all()) and undecided.sum() >= 1
    met = bool(not undecided.any()) or bool(ties)
    if k == 1:  # best: only the models that may still be best, against each other
        open_p = both_open & ~settled
    else:
        open_p = (undecided[a] | undecided[b]) & ~settled
    needed = np.zeros(K, bool)
    needed[a[open_p]] = True
    needed[b[open_p]] = True
    if met:
        needed[:] = False
        open_p = np.zeros(len(a), bool)
    return GoalStatus(met, needed, open_p, settled, better, status)


class FactorPredictor:
    """Each model's predicted probability of answering each bank question correctly, from FAQ's factor model fitted
    on a history (its question factors, offsets and the prior over a model's factors), updated with the model's own
    answers by FAQ's online Laplace step. Questions the history lacks get no prediction (``known`` False)."""

    def __init__(self, fm: Any, bank_ids: Sequence[str], K: int) -> None:
        cols = {str(c): i for i, c in enumerate(fm.col_labels_)}
        pos = np.array([cols.get(str(i), -1) for i in bank_ids])
        self.known = pos >= 0
        k = fm.V_.shape[1]
        self.V = np.zeros((len(pos), k))
        self.b = np.zeros(len(pos))
        self.V[self.known] = np.asarray(fm.V_, dtype=float)[pos[self.known]]
        self.b[self.known] = np.asarray(fm.b_, dtype=float)[pos[self.known]]
        mean, cov = fm.prior_()
        self.u = np.tile(np.asarray(mean, dtype=float), (K, 1))
        self.Sigma = np.tile(np.asarray(cov, dtype=float), (K, 1, 1))

    def predict(self, models: np.ndarray) -> np.ndarray:
        """(len(models), N) probabilities (0.5 where the history has no prediction)."""
        from scipy.special import expit

        from ..faq.core import clamp_p

        x = self.u[models] @ self.V.T + self.b
        return np.where(self.known, clamp_p(expit(x)), 0.5)

    def update(self, models: np.ndarray, items: np.ndarray, Z: np.ndarray) -> None:
        """Each of ``models`` answered ``items`` (in order) with 0/1 scores ``Z`` (len(models), len(items))."""
        from scipy.special import expit

        from ..faq.core import clamp_p, laplace_step

        u, Sigma = self.u[models], self.Sigma[models]
        for j, item in enumerate(items):
            if not self.known[item]:
                continue
            v = np.broadcast_to(self.V[item], u.shape).copy()
            p = clamp_p(expit(u @ self.V[item] + self.b[item]))
            laplace_step(u, Sigma, v, p, (Z[:, j] > 0.5).astype(float))
        self.u[models], self.Sigma[models] = u, Sigma


class AsymptoticCS:
    """Asymptotic confidence sequences for several claims from weighted martingale increments (module docstring):
    the normal-mixture boundary, Bonferroni over the claims, a burn-in and a variance floor; intersected over time
    and with the certain bounds [L_t, U_t]."""

    def __init__(self, alpha, low: float, high: float, *, horizon: int, burn_in: int = BURN_IN) -> None:
        self.alpha = np.atleast_1d(np.asarray(alpha, dtype=float))
        C = len(self.alpha)
        self.low, self.high, self.horizon, self.burn_in = float(low), float(high), int(horizon), int(burn_in)
        self.n = np.zeros(C, dtype=np.int64)
        self.sc = np.zeros(C)
        self.scphi = np.zeros(C)
        self.sc2 = np.zeros(C)
        self.sc2phi = np.zeros(C)
        self.sc2phi2 = np.zeros(C)
        self.floor = np.zeros(C)
        self.rho = np.full(C, np.nan)
        self.lo = np.full(C, float(low))
        self.hi = np.full(C, float(high))
        self.exact = np.full(C, np.nan)

    def update(self, idx, phi, L, U, c) -> None:
        from ..faq.core import cs_radius, cs_rho

        idx = np.asarray(idx, dtype=np.int64)
        if not len(idx):
            return
        phi, L, U = (np.atleast_2d(np.asarray(x, dtype=float)) for x in (phi, L, U))
        c = np.broadcast_to(np.asarray(c, dtype=float), phi.shape)
        B = phi.shape[1]
        n0 = self.n[idx]
        t = n0[:, None] + np.arange(1, B + 1)[None, :]
        # the floor: a spread of one answer in t + 1 off the claim's value, on this step's scale
        fl = ((U - L) / 2.0) ** 2 / (t + 1.0)
        self.sc[idx] += c.sum(axis=1)
        self.scphi[idx] += (c * phi).sum(axis=1)
        self.sc2[idx] += (c * c).sum(axis=1)
        self.sc2phi[idx] += (c * c * phi).sum(axis=1)
        self.sc2phi2[idx] += (c * c * phi * phi).sum(axis=1)
        self.floor[idx] += (c * c * fl).sum(axis=1)
        self.n[idx] = n0 + B
        self.lo[idx] = np.maximum(self.lo[idx], L.max(axis=1))
        self.hi[idx] = np.minimum(self.hi[idx], U.min(axis=1))
        n = self.n[idx].astype(float)
        est = self.scphi[idx] / self.sc[idx]
        emp = self.sc2phi2[idx] - 2.0 * est * self.sc2phi[idx] + est * est * self.sc2[idx]
        emp = np.maximum(emp, 0.0) * n / np.maximum(n - 1.0, 1.0)
        V = np.maximum(emp, self.floor[idx])
        ready = self.n[idx] >= self.burn_in
        if ready.any():
            j = idx[ready]
            new = np.isnan(self.rho[j])
            if new.any():  # the mixing scale: tightest at the horizon, from the spread seen over the burn-in
                scale = self.horizon / np.maximum(self.n[j[new]], 1)
                self.rho[j[new]] = cs_rho(self.alpha[j[new]], np.maximum(V[ready][new] * scale, 1e-12))
            r = cs_radius(V[ready], self.rho[j], self.alpha[j], self.sc[j])
            self.lo[j] = np.maximum(self.lo[j], est[ready] - r)
            self.hi[j] = np.minimum(self.hi[j], est[ready] + r)

    def set_exact(self, idx, values) -> None:
        self.exact[np.asarray(idx, dtype=np.int64)] = np.asarray(values, dtype=float)

    def estimate(self) -> np.ndarray:
        """Each claim's weighted mean of its increments (its exact value where known)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            est = self.scphi / self.sc
        return np.where(np.isfinite(self.exact), self.exact, est)

    def interval(self) -> tuple[np.ndarray, np.ndarray]:
        lo, hi = self.lo.copy(), np.maximum(self.hi, self.lo)
        ex = np.isfinite(self.exact)
        return np.where(ex, self.exact, lo), np.where(ex, self.exact, hi)


@dataclass
class AdaptiveRun:
    """What an adaptive run did and found (arrays over the K models and the P pairs in :func:`core.pair_index`
    order)."""

    S: np.ndarray  # (K, N) scores, NaN where not asked
    order: np.ndarray  # (T,) bank positions in the order drawn
    q: np.ndarray  # (T,) each draw's probability when it was drawn
    draw_round: np.ndarray  # (T,) the round of each draw
    n_asked: np.ndarray  # (K,)
    left_round: np.ndarray  # (K,) rounds each model took part in
    left_reason: list
    est: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    d: np.ndarray
    d_lo: np.ndarray
    d_hi: np.ndarray
    pair_n: np.ndarray  # (P,) questions both models of the pair were asked
    met: bool
    reason: str  # "goal met", "budget spent", "bank exhausted"
    rounds: list = field(default_factory=list)  # per round: the models asked and the questions each was asked
    status: np.ndarray | None = None
    better: np.ndarray | None = None
    alpha: float = 0.0


def _claim_values(Z: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Rows: the models' own values, then each pair's difference."""
    return np.concatenate([Z, Z[a] - Z[b]], axis=0)


def run(ask: Callable[[np.ndarray, np.ndarray], np.ndarray], K: int, N: int, *, goal: str = "all", k: int | None = None,
        guarantee: str = "finite", margin: float | None = None, delta: float = 0.05, budget: int | None = None,
        batch: int = 10, rng: np.random.Generator, predictor: FactorPredictor | None = None, low: float = 0.0,
        high: float = 1.0, eliminate: bool = True, floor: float = FLOOR, grid: int = 1024,
        progress: Callable[[int, int, int], None] | None = None,
        record: Callable[[int, np.ndarray, np.ndarray, np.ndarray], None] | None = None) -> AdaptiveRun:
    """Ask until the goal is met, the budget (questions per model) is spent or the bank runs out (module docstring).

    ``ask(models, items)`` returns the (len(models), len(items)) scores in [low, high] of the models (positions
    0..K-1) on the bank's questions (positions 0..N-1). ``eliminate=False`` keeps every model in play to the end
    (the uniform baseline of :func:`assay.compare.live.replay`). ``progress(questions asked, budget, claims open)``
    is called after every round; ``record(round, models, items, q)`` before each round's questions are asked, with
    the probability each was drawn with.
    """
    goal, kk = check_goal(goal, k, K)
    if guarantee not in GUARANTEES:
        raise AssayInputError(f"guarantee must be one of {', '.join(GUARANTEES)}; got {guarantee!r}")
    budget = N if budget is None else min(int(budget), N)
    a, b = core.pair_index(K)
    P = len(a)
    C = K + P
    R = high - low
    alpha = delta / C
    if guarantee == "finite":
        pts = [0.0, _EPS * R, -_EPS * R] + ([] if margin is None else [margin - _EPS * R, -margin + _EPS * R])
        cs_m = IncrementCS(np.full(K, alpha), low, high, grid=grid)
        cs_p = IncrementCS(np.full(P, alpha), -R, R, grid=2 * grid, points=pts)
    else:
        cs_m = AsymptoticCS(np.full(K, alpha), low, high, horizon=budget)
        cs_p = AsymptoticCS(np.full(P, alpha), -R, R, horizon=budget)
    zlo = np.concatenate([np.full(K, low), np.full(P, -R)])
    zhi = np.concatenate([np.full(K, high), np.full(P, R)])
    S = np.full((K, N), np.nan)
    asked = np.zeros(N, bool)
    order: list[int] = []
    qs: list[float] = []
    draw_round: list[int] = []
    in_play = np.ones(K, bool)
    n_asked = np.zeros(K, dtype=np.int64)
    left_round = np.full(K, -1, dtype=np.int64)
    left_reason = [""] * K
    rounds: list[dict] = []
    sum_z = np.zeros(C)  # sum over the questions asked of each claim's value (its models' shared questions)
    r = 0
    while True:
        lo_m, hi_m = cs_m.interval()
        d_lo, d_hi = cs_p.interval()
        d_lo = np.maximum(d_lo, lo_m[a] - hi_m[b])
        d_hi = np.minimum(d_hi, hi_m[a] - lo_m[b])
        st = goal_status(goal, kk, d_lo, d_hi, margin, K)
        t = len(order)
        if progress is not None and r > 0:  # after each round, with where the goal stands now
            progress(t, budget, int(st.open_pairs.sum()))
        if st.met:
            reason = "goal met"
        elif t >= N:
            reason = "bank exhausted"
        elif t >= budget:
            reason = "budget spent"
        else:
            reason = ""
        if eliminate:
            leaving = in_play & ~st.needed
            for m in np.flatnonzero(leaving):
                left_round[m], left_reason[m] = r, ("goal met" if st.met else "settled")
            in_play &= st.needed
        if reason or not in_play.any():
            reason = reason or "goal met"
            for m in np.flatnonzero(in_play):
                left_round[m], left_reason[m] = r, reason
            break
        play = np.flatnonzero(in_play)
        B = min(int(batch), budget - t, N - t)
        # the claims in play: the models', then the pairs with both models in play
        pairs_in = np.flatnonzero(in_play[a] & in_play[b])
        claims = np.concatenate([play, K + pairs_in])
        # predictions f (claims x N) and the draw weights h (N,)
        if predictor is not None:
            Pm = np.zeros((K, N))
            Pm[play] = predictor.predict(play)
            known = predictor.known
            F = np.concatenate([Pm, Pm[a] - Pm[b]], axis=0)[claims]
            # each open pair (the goal's, both in play) spreads its weight by the predicted spread of its difference
            op = np.flatnonzero(st.open_pairs & in_play[a] & in_play[b]) if eliminate else np.flatnonzero(~st.settled)
            h = np.zeros(N)
            if len(op):
                spread = np.sqrt(Pm[a[op]] * (1 - Pm[a[op]]) + Pm[b[op]] * (1 - Pm[b[op]]))
                spread = np.where(known & ~asked, spread, 0.0)
                tot = spread.sum(axis=1, keepdims=True)
                h = (spread / np.where(tot > 0, tot, 1.0)).sum(axis=0)
            # where there is no prediction, the claim's running mean (predictable)
            cnt = max(t, 1)
            F = np.where(known[None, :], F, (sum_z[claims] / cnt)[:, None] if t else 0.0)
        else:  # uniform draws: no predictions needed (the closed form below)
            known, F, h = np.zeros(N, bool), None, np.zeros(N)
        items = np.empty(B, dtype=np.int64)
        q_at = np.empty(B)
        A = np.empty((len(claims), B))  # sum_{R_t} f
        lo_w = np.empty((len(claims), B))
        hi_w = np.empty((len(claims), B))
        f_at = np.empty((len(claims), B))
        left = ~asked
        if predictor is None:  # uniform draws, no predictions: the bounds in closed form
            n_left0 = N - t - np.arange(B)
            items = rng.permutation(np.flatnonzero(left))[:B]
            q_at = 1.0 / n_left0
            A = np.zeros((len(claims), B))
            lo_w = zlo[claims][:, None] * n_left0[None, :]
            hi_w = zhi[claims][:, None] * n_left0[None, :]
            f_at = np.zeros((len(claims), B))
        for s in range(B if predictor is not None else 0):
            n_left = int(left.sum())
            q = np.where(left, 1.0 / n_left, 0.0)
            kl = known & left
            hk = np.where(kl, h, 0.0)
            tot = hk.sum()
            if tot > 0:
                share = kl.sum() / n_left
                q = np.where(kl, floor / n_left + (1.0 - floor) * share * hk / tot, q)
            q = q / q.sum()
            j = int(np.searchsorted(np.cumsum(q), rng.random() * q.sum(), side="right"))
            j = min(j, N - 1)
            while not left[j]:  # rounding at the very end of the row: the last question left
                j = int(np.flatnonzero(left)[-1])
            items[s], q_at[s] = j, q[j]
            with np.errstate(divide="ignore", invalid="ignore"):
                inv = np.where(left, 1.0 / q, np.nan)
            A[:, s] = np.where(left[None, :], F, 0.0).sum(axis=1)
            lo_w[:, s] = np.nanmin((zlo[claims][:, None] - F) * inv[None, :], axis=1)
            hi_w[:, s] = np.nanmax((zhi[claims][:, None] - F) * inv[None, :], axis=1)
            f_at[:, s] = F[:, j]
            left[j] = False
        if record is not None:  # the round's draws and their probabilities, kept before any question is asked
            record(r, play, items, q_at)
        Zp = np.asarray(ask(play, items), dtype=float).reshape(len(play), B)
        if not np.all(np.isfinite(Zp)) or Zp.min() < low - 1e-12 or Zp.max() > high + 1e-12:
            raise AssayInputError(f"scores must be finite and in [{low}, {high}]")
        Z = np.full((K, B), np.nan)
        Z[play] = Zp
        zc = _claim_values(np.nan_to_num(Z), a, b)[claims]  # (claims, B)
        before = sum_z[claims][:, None] + np.concatenate([np.zeros((len(claims), 1)), np.cumsum(zc, axis=1)[:, :-1]],
                                                         axis=1)
        phi = (before + A + (zc - f_at) / q_at[None, :]) / N
        L = (before + A + lo_w) / N
        U = (before + A + hi_w) / N
        nm = len(play)
        if guarantee == "finite":
            cs_m.update(claims[:nm], phi[:nm], L[:nm], U[:nm])
            cs_p.update(claims[nm:] - K, phi[nm:], L[nm:], U[nm:])
        else:
            n_left0 = N - t - np.arange(B)  # questions left before each draw
            c = N / n_left0.astype(float)  # each weighted increment then has about the same conditional spread
            cs_m.update(claims[:nm], phi[:nm], L[:nm], U[:nm], c)
            cs_p.update(claims[nm:] - K, phi[nm:], L[nm:], U[nm:], c)
        sum_z[claims] += zc.sum(axis=1)
        S[np.ix_(play, items)] = Zp
        asked[items] = True
        order.extend(int(i) for i in items)
        qs.extend(float(x) for x in q_at)
        draw_round.extend([r] * B)
        n_asked[play] += B
        if predictor is not None:
            predictor.update(play, items, Zp)
        if len(order) >= N:  # the whole bank asked of the models in play: their claims are exact
            full = np.flatnonzero(n_asked == N)
            cs_m.set_exact(full, np.nanmean(S[full], axis=1))
            pf = np.flatnonzero((n_asked[a] == N) & (n_asked[b] == N))
            cs_p.set_exact(pf, np.nanmean(S[a[pf]] - S[b[pf]], axis=1))
        rounds.append({"round": r, "models": [int(m) for m in play], "questions": B})
        r += 1
    lo_m, hi_m = cs_m.interval()
    d_lo, d_hi = cs_p.interval()
    d_lo = np.maximum(d_lo, lo_m[a] - hi_m[b])
    d_hi = np.minimum(d_hi, hi_m[a] - lo_m[b])
    est = np.array([np.nanmean(S[m]) if n_asked[m] else np.nan for m in range(K)])
    pair_n = np.minimum(n_asked[a], n_asked[b])
    d = np.array([np.nanmean(S[x] - S[y]) if n else np.nan for x, y, n in zip(a, b, pair_n)])
    if predictor is not None:  # questions drawn unequally: the doubly robust estimate, not the sample mean
        est = np.where(n_asked > 0, cs_m.estimate(), np.nan)
        d = np.where(pair_n > 0, cs_p.estimate(), np.nan)
    est = np.clip(est, lo_m, hi_m)
    d = np.clip(d, d_lo, d_hi)
    st = goal_status(goal, kk, d_lo, d_hi, margin, K)
    return AdaptiveRun(S=S, order=np.array(order, dtype=np.int64), q=np.array(qs), draw_round=np.array(draw_round),
                       n_asked=n_asked, left_round=left_round, left_reason=left_reason, est=est, lo=lo_m, hi=hi_m,
                       d=d, d_lo=d_lo, d_hi=d_hi, pair_n=pair_n, met=st.met, reason=reason, rounds=rounds,
                       status=st.status, better=st.better, alpha=alpha)
