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
each model's own answers after every round (:class:`assay.faq.FactorPosterior`). Without a history q is uniform.
Every question left keeps probability at least floor / R, so the weights below stay bounded.

Increments (doubly robust, without replacement)
-----------------------------------------------
For a claim c with per-question value z_c(j) (a model's score, or a pair's score difference) and prediction f_c(j)
(the factor model's p_a(j), or p_a(j) - p_b(j); the claim's running mean where there is none), the t-th draw I_t
gives

    phi_t = (1/N) [ sum_{asked before} z_c + sum_{R_t} f_c + (z_c(I_t) - f_c(I_t)) / q_t(I_t) ],

with E[phi_t | past] = theta_c exactly (the without-replacement increment of :mod:`assay.stats.sampling`), and the
bounds L_t <= phi_t <= U_t obtained by putting the lowest and highest possible z at the worst question of R_t: known
before the answer. Uniform q gives phi_t = (1/N) [sum_{asked} z + R_t z(I_t)], the sequential without-replacement form
of the sample mean, and L_t, U_t narrow as R_t / N: with the whole bank asked a claim is known exactly. A model that
leaves the play keeps its claims as they were (a confidence sequence holds at every time, including the one it stopped
at).

Guarantees
----------
``finite`` (the default): each claim's increments feed :class:`assay.stats.betting.IncrementCS`, one-sided betting
e-processes at every point of a grid, each point's bets tuned to its own null (aGRAPA), the decision points (0 and
+-margin) among them, so a verdict is a rejection of its own null ("difference <= 0" for "a better", ">= margin" and
"<= -margin" for "equivalent"). The error level delta is split by a union bound: each of the K + K (K - 1) / 2 claims
gets delta / (K + K (K - 1) / 2), half to each one-sided side. Holds at every round, whatever the history's quality.

``asymptotic``: the same increments, the normal-mixture confidence sequence of Waudby-Smith, Arbour, Sinha, Kennedy and
Ramdas (2024, Thm 2.2; :class:`assay.stats.sequences.AsymptoticCS`) with weights c_t = N / R_t, Bonferroni over the
claims,
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
from typing import Any, Callable

import numpy as np

from ..errors import AssayInputError
from ..stats.sampling import (CELLS_PAIRS, bounds, fixed_weight_draws, increment, increment_terms, pair_terms,
                              running_sums, uniform_draws)
from ..stats.sequences import CELLS, AsymptoticCS, IncrementCS
from . import core

__all__ = ["GOALS", "GUARANTEES", "NOT_EXACT", "check_goal", "certified_better", "goal_status", "AdaptiveRun", "run",
           "BURN_IN",
           "FLOOR", "MAX_MEMORY", "peak_bytes", "max_models", "check_memory"]

GOALS = ("all", "best", "top-k")
GUARANTEES = ("finite", "asymptotic")

#: why the fixed-n guarantee of :mod:`assay.compare.exact` is not offered where questions are asked until resolved
NOT_EXACT = ("guarantee='exact' holds at a number of questions fixed in advance; asking until resolved (or replaying "
             "it) needs a guarantee that holds whenever it stops: 'finite' (or 'asymptotic'); compare the answers "
             "afterwards with guarantee='exact'")
#: draws before the asymptotic sequences are reported (before that, only the certain bounds)
BURN_IN = 30
#: the share of every draw's probability spread uniformly over the questions left
FLOOR = 0.5
_EPS = 1e-9  # the decision points sit this far inside the nulls they reject ("> 0" is "> 1e-9 * range")
#: the open pairs whose predicted disagreement sets the draw weights, at most (evenly spaced over the open pairs when
#: there are more: 91 models have 4,095 pairs); the weights only shape the design, never the validity
WEIGHT_PAIRS = 4096
#: what a Python process running assay takes before any array of the run (numpy, scipy, pandas loaded)
BASE_BYTES = 256 * 1024**2
#: with a history, the pairs' increment bounds are exact (a pass over pairs x questions at every draw) up to this many
#: cells (about 180 models on 1,000 questions); beyond, the asymptotic guarantee bounds each pair by its models'
#: bounds, valid and about 1.6 times wider on a real leaderboard (with them everywhere, goal best with a history of
#: the same families asked 0.49 of the baseline's questions where exact bounds ask 0.41: bench/compare_adaptive.py)
EXACT_CELLS = 1 << 24
#: the memory a run may take by default (bytes): :func:`check_memory` refuses a run whose estimate is above it
MAX_MEMORY = 4 * 1024**3


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


def peak_bytes(K: int, N: int, *, guarantee: str, batch: int = 10, grid: int = 1024, history: bool = False) -> int:
    """An upper estimate of the memory a run of ``K`` models on ``N`` questions takes at its peak (bytes), before
    anything is allocated: the scores, each claim's sequence, a round's increments and the goal's bookkeeping
    (per pair), and with a history the predictions (worked in slices of claims)."""
    K, N, B = int(K), int(N), int(batch)
    P = K * (K - 1) // 2
    C = K + P
    total = K * N * 8 + K * K  # the scores; the certified-better closure
    total += P * 8 * 12 + C * B * 8 * 14  # the goal's pair arrays; a round's increments, bounds and sums
    if guarantee == "finite":
        total += IncrementCS.state_bytes(K, grid) + IncrementCS.state_bytes(P, 2 * grid, 5) + IncrementCS.WORK_BYTES
    else:
        total += AsymptoticCS.state_bytes(C)
    if history:  # the predictions and their pair-wise extremes (a slice of pairs at a time), the draw weights
        total += K * N * 8 * 5 + 6 * 8 * CELLS_PAIRS + 4 * 8 * WEIGHT_PAIRS * N
    # the interpreter and its libraries, and a tenth more for what the arrays' count leaves out (measured: a finite
    # run of 427 models x 1,351 questions peaked at 3.997 GB where the arrays alone came to 4.0 GB)
    return int(BASE_BYTES + 1.1 * total)


def max_models(N: int, *, guarantee: str, limit: float = MAX_MEMORY, **kw) -> int:
    """The largest number of models whose run fits in ``limit`` bytes (:func:`peak_bytes`)."""
    lo, hi = 2, 2
    while peak_bytes(hi, N, guarantee=guarantee, **kw) <= limit and hi < 1 << 20:
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if peak_bytes(mid, N, guarantee=guarantee, **kw) <= limit else (lo, mid)
    return lo


def check_memory(K: int, N: int, *, guarantee: str, limit: float | None = MAX_MEMORY, **kw) -> int:
    """Refuse (AssayInputError) a run whose :func:`peak_bytes` is above ``limit`` (None: no limit), naming the
    largest number of models that fits; otherwise return the estimate."""
    need = peak_bytes(K, N, guarantee=guarantee, **kw)
    if limit is not None and need > limit:
        most = max_models(N, guarantee=guarantee, limit=limit, **kw)
        other = (" or guarantee='asymptotic' (a few numbers per claim)" if guarantee == "finite" else "")
        raise AssayInputError(
            f"{K} models on {N} questions would take about {need / 1024**3:.1f} GB with guarantee={guarantee!r} "
            f"(above the limit of {limit / 1024**3:.1f} GB): compare at most {most} models at once{other}, or raise "
            "the limit (max_memory=)")
    return need


def _claim_values(Z: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Rows: the models' own values, then each pair's difference."""
    return np.concatenate([Z, Z[a] - Z[b]], axis=0)


def _row_means(X: np.ndarray) -> np.ndarray:
    """Each row's mean over its non-NaN entries (NaN where it has none), as ``np.nanmean`` computes it."""
    seen = ~np.isnan(X)
    cnt = seen.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(cnt > 0, np.where(seen, X, 0.0).sum(axis=1) / cnt, np.nan)


@dataclass
class _Round:
    """One round's draws and what each claim's increments need of them, fixed before any answer is seen."""

    play: np.ndarray  # (m,) the models asked
    claims: np.ndarray  # (C',) claim rows: the models in play, then K + the pairs with both in play
    items: np.ndarray  # (B,) bank positions drawn
    q: np.ndarray  # (B,) each draw's probability
    rest: np.ndarray  # (C', B) the predictions' sum over the questions left before each draw
    lo_w: np.ndarray  # (C', B) the lowest (z - f) / q over them
    hi_w: np.ndarray  # (C', B) the highest
    f_at: np.ndarray  # (C', B) the prediction at the drawn question


class _Engine:
    """The state of an adaptive run between rounds, and its steps (module docstring): where the goal stands, who
    stays in play, the next round's draws, and what the answers add to every claim's sequence."""

    def __init__(self, K: int, N: int, *, goal: str, k: int, guarantee: str, margin, delta: float, budget: int,
                 low: float, high: float, grid: int, predictor, floor: float, eliminate: bool) -> None:
        self.K, self.N, self.goal, self.k, self.guarantee, self.margin = K, N, goal, k, guarantee, margin
        self.budget, self.low, self.high, self.predictor, self.floor = budget, low, high, predictor, floor
        self.eliminate = eliminate
        self.a, self.b = core.pair_index(K)
        P = len(self.a)
        R = high - low
        self.alpha = delta / (K + P)
        if guarantee == "finite":
            pts = [0.0, _EPS * R, -_EPS * R] + ([] if margin is None else [margin - _EPS * R, -margin + _EPS * R])
            self.cs_m = IncrementCS(np.full(K, self.alpha), low, high, grid=grid)
            self.cs_p = IncrementCS(np.full(P, self.alpha), -R, R, grid=2 * grid, points=pts)
        else:
            self.cs_m = AsymptoticCS(np.full(K, self.alpha), low, high, horizon=budget, burn_in=BURN_IN)
            self.cs_p = AsymptoticCS(np.full(P, self.alpha), -R, R, horizon=budget, burn_in=BURN_IN)
        self.zlo = np.concatenate([np.full(K, low), np.full(P, -R)])
        self.zhi = np.concatenate([np.full(K, high), np.full(P, R)])
        self.S = np.full((K, N), np.nan)
        self.asked = np.zeros(N, bool)
        self.order: list[int] = []
        self.qs: list[float] = []
        self.draw_round: list[int] = []
        self.in_play = np.ones(K, bool)
        self.n_asked = np.zeros(K, dtype=np.int64)
        self.left_round = np.full(K, -1, dtype=np.int64)
        self.left_reason = [""] * K
        self.rounds: list[dict] = []
        self.sum_z = np.zeros(K + P)  # sum over the questions asked of each claim's value
        self.r = 0

    # -- where the goal stands --------------------------------------------------------------------------------

    def intervals(self):
        """The models' and the pairs' intervals now, each pair's also within its models' (every claim holds)."""
        lo_m, hi_m = self.cs_m.interval()
        d_lo, d_hi = self.cs_p.interval()
        d_lo = np.maximum(d_lo, lo_m[self.a] - hi_m[self.b])
        d_hi = np.minimum(d_hi, hi_m[self.a] - lo_m[self.b])
        return lo_m, hi_m, d_lo, d_hi

    def status(self) -> GoalStatus:
        _, _, d_lo, d_hi = self.intervals()
        return goal_status(self.goal, self.k, d_lo, d_hi, self.margin, self.K)

    def stop_reason(self, st: GoalStatus) -> str:
        t = len(self.order)
        return ("goal met" if st.met else "bank exhausted" if t >= self.N else "budget spent" if t >= self.budget
                else "")

    def retire(self, st: GoalStatus) -> None:
        """The models the goal no longer needs leave the play (they keep their claims as they are)."""
        if self.eliminate:
            for m in np.flatnonzero(self.in_play & ~st.needed):
                self.left_round[m], self.left_reason[m] = self.r, ("goal met" if st.met else "settled")
            self.in_play &= st.needed

    def close(self, reason: str) -> None:
        for m in np.flatnonzero(self.in_play):
            self.left_round[m], self.left_reason[m] = self.r, reason

    # -- the next round's draws -------------------------------------------------------------------------------

    def plan(self, st: GoalStatus, batch: int, rng: np.random.Generator) -> _Round:
        """The next round: who is asked, its questions drawn without replacement, and the terms of every claim's
        increments (module docstring), all before any answer."""
        a, b, K, N = self.a, self.b, self.K, self.N
        t = len(self.order)
        play = np.flatnonzero(self.in_play)
        B = min(int(batch), self.budget - t, N - t)
        claims = np.concatenate([play, K + np.flatnonzero(self.in_play[a] & self.in_play[b])])
        if self.predictor is None:  # uniform draws, no predictions: the terms in closed form
            items, q_at = uniform_draws(~self.asked, B, rng)
            n_left0 = N - t - np.arange(B)
            zero = np.zeros((len(claims), B))
            return _Round(play, claims, items, q_at, zero, self.zlo[claims][:, None] * n_left0[None, :],
                          self.zhi[claims][:, None] * n_left0[None, :], zero.copy())
        return self._plan_predicted(st, play, claims, B, rng)

    def _plan_predicted(self, st: GoalStatus, play, claims, B: int, rng) -> _Round:
        """Draws where the history predicts the open pairs disagree (each question left keeping its floor), and each
        claim's predictions' terms at every draw (the models' directly, the pairs' by :func:`pair_terms`)."""
        K, N, a, b = self.K, self.N, self.a, self.b
        Pm = np.zeros((K, N))
        Pm[play] = self.predictor.predict(play)
        known = self.predictor.known
        op = (np.flatnonzero(st.open_pairs & self.in_play[a] & self.in_play[b]) if self.eliminate
              else np.flatnonzero(~st.settled))
        h = self._weights(Pm, op, known)
        t = len(self.order)
        mean = self.sum_z[claims] / max(t, 1) if t else np.zeros(len(claims))
        nm = len(play)
        pr = claims[nm:] - K
        Fm = np.where(known[None, :], Pm[play], mean[:nm, None] if t else 0.0)  # the models' predictions
        fill = mean[nm:] if t else np.zeros(len(pr))  # a pair's where the history has none
        C = len(claims)
        items, q_at = np.empty(B, dtype=np.int64), np.empty(B)
        rest, lo_w, hi_w, f_at = (np.empty((C, B)) for _ in range(4))
        R = self.high - self.low
        # the pairs' exact bounds cost O(pairs x questions) a draw; past EXACT_CELLS the asymptotic guarantee takes
        # them from the models' own (valid, wider: they only set its variance floor and its certain bounds)
        exact = self.guarantee == "finite" or len(pr) * N <= EXACT_CELLS
        for d in fixed_weight_draws(h[None, :], B, self.floor, known=known, left=(~self.asked)[None, :], rng=rng):
            s, j, q, left = d.t, int(d.items[0]), d.q[0], d.left[0]
            items[s], q_at[s] = j, q[j]
            rest[:nm, s], lo_w[:nm, s], hi_w[:nm, s] = increment_terms(Fm, q, left, self.low, self.high)
            f_at[:nm, s] = Fm[:, j]
            rest[nm:, s], lo_w[nm:, s], hi_w[nm:, s] = pair_terms(Pm, a[pr], b[pr], q, left, -R, R, known=known,
                                                                  fill=fill, exact=exact)
            f_at[nm:, s] = Pm[a[pr], j] - Pm[b[pr], j] if known[j] else fill
        return _Round(np.asarray(play), claims, items, q_at, rest, lo_w, hi_w, f_at)

    def _weights(self, Pm, op, known) -> np.ndarray:
        """h (N,): over the open pairs (at most :data:`WEIGHT_PAIRS` of them, evenly spaced, when there are more),
        each pair's predicted spread of its difference, sqrt(p_a (1 - p_a) + p_b (1 - p_b)), normalised over the
        questions left that the history covers, summed."""
        h = np.zeros(self.N)
        usable = known & ~self.asked
        if len(op) > WEIGHT_PAIRS:
            op = op[np.linspace(0, len(op) - 1, WEIGHT_PAIRS).round().astype(np.int64)]
        pa, pb = Pm[self.a[op]], Pm[self.b[op]]
        spread = np.where(usable, np.sqrt(pa * (1 - pa) + pb * (1 - pb)), 0.0)
        tot = spread.sum(axis=1, keepdims=True)
        if len(op):
            h = (spread / np.where(tot > 0, tot, 1.0)).sum(axis=0)
        return h

    # -- what the answers add ---------------------------------------------------------------------------------

    def feed(self, rd: _Round, Zp: np.ndarray) -> None:
        """The round's answers: every claim in play gets its increments, bounded before the answers."""
        K, N, B = self.K, self.N, len(rd.items)
        t = len(self.order)
        Z = np.full((K, B), np.nan)
        Z[rd.play] = Zp
        zc = _claim_values(np.nan_to_num(Z), self.a, self.b)[rd.claims]  # (claims, B)
        before = running_sums(zc, self.sum_z[rd.claims])
        phi = increment(before, rd.rest, zc, rd.f_at, rd.q[None, :], N)
        L, U = bounds(before, rd.rest, rd.lo_w, rd.hi_w, N)
        nm = len(rd.play)
        if self.guarantee == "finite":
            self.cs_m.update(rd.claims[:nm], phi[:nm], L[:nm], U[:nm])
            self.cs_p.update(rd.claims[nm:] - K, phi[nm:], L[nm:], U[nm:])
        else:  # weights c_t = N / R_t: each weighted increment then has about the same conditional spread
            c = N / (N - t - np.arange(B)).astype(float)
            self.cs_m.update(rd.claims[:nm], phi[:nm], L[:nm], U[:nm], c=c)
            self.cs_p.update(rd.claims[nm:] - K, phi[nm:], L[nm:], U[nm:], c=c)
        self.sum_z[rd.claims] += zc.sum(axis=1)
        self.S[np.ix_(rd.play, rd.items)] = Zp
        self.asked[rd.items] = True
        self.order.extend(int(i) for i in rd.items)
        self.qs.extend(float(x) for x in rd.q)
        self.draw_round.extend([self.r] * B)
        self.n_asked[rd.play] += B
        if self.predictor is not None:
            self.predictor.update(rd.play, rd.items, Zp)
        if len(self.order) >= N:
            self._exact()
        self.rounds.append({"round": self.r, "models": [int(m) for m in rd.play], "questions": B})
        self.r += 1

    def _exact(self) -> None:
        """The whole bank asked of the models in play: their claims are exact."""
        a, b, N = self.a, self.b, self.N
        full = np.flatnonzero(self.n_asked == N)
        self.cs_m.set_exact(full, _row_means(self.S[full]))
        pf = np.flatnonzero((self.n_asked[a] == N) & (self.n_asked[b] == N))
        self.cs_p.set_exact(pf, self._pair_means(pf))

    def _pair_means(self, pairs: np.ndarray) -> np.ndarray:
        """Each pair's mean score difference over the questions both were asked (in slices of pairs)."""
        out = np.full(len(pairs), np.nan)
        step = max(1, CELLS // self.N)
        for c0 in range(0, len(pairs), step):
            pr = pairs[c0:c0 + step]
            out[c0:c0 + step] = _row_means(self.S[self.a[pr]] - self.S[self.b[pr]])
        return out

    def result(self, reason: str, alpha: float) -> AdaptiveRun:
        lo_m, hi_m, d_lo, d_hi = self.intervals()
        a, b = self.a, self.b
        n_asked = self.n_asked
        pair_n = np.minimum(n_asked[a], n_asked[b])
        if self.predictor is not None:  # questions drawn unequally: the doubly robust estimate, not the sample mean
            est = np.where(n_asked > 0, self.cs_m.estimate(), np.nan)
            d = np.where(pair_n > 0, self.cs_p.estimate(), np.nan)
        else:
            est = _row_means(self.S)
            d = self._pair_means(np.arange(len(a)))
        est = np.clip(est, lo_m, hi_m)
        d = np.clip(d, d_lo, d_hi)
        st = goal_status(self.goal, self.k, d_lo, d_hi, self.margin, self.K)
        return AdaptiveRun(S=self.S, order=np.array(self.order, dtype=np.int64), q=np.array(self.qs),
                           draw_round=np.array(self.draw_round), n_asked=n_asked, left_round=self.left_round,
                           left_reason=self.left_reason, est=est, lo=lo_m, hi=hi_m, d=d, d_lo=d_lo, d_hi=d_hi,
                           pair_n=pair_n, met=st.met, reason=reason, rounds=self.rounds, status=st.status,
                           better=st.better, alpha=alpha)


def _checked(Zp, n: int, B: int, low: float, high: float) -> np.ndarray:
    Zp = np.asarray(Zp, dtype=float).reshape(n, B)
    if not np.all(np.isfinite(Zp)) or Zp.min() < low - 1e-12 or Zp.max() > high + 1e-12:
        raise AssayInputError(f"scores must be finite and in [{low}, {high}]")
    return Zp


def run(ask: Callable[[np.ndarray, np.ndarray], np.ndarray], K: int, N: int, *, goal: str = "all", k: int | None = None,
        guarantee: str = "finite", margin: float | None = None, delta: float = 0.05, budget: int | None = None,
        batch: int = 10, rng: np.random.Generator, predictor: Any = None, low: float = 0.0,
        high: float = 1.0, eliminate: bool = True, floor: float = FLOOR, grid: int = 1024,
        progress: Callable[[int, int, int], None] | None = None,
        record: Callable[[int, np.ndarray, np.ndarray, np.ndarray], None] | None = None,
        max_memory: float | None = MAX_MEMORY) -> AdaptiveRun:
    """Ask until the goal is met, the budget (questions per model) is spent or the bank runs out (module docstring).

    ``ask(models, items)`` returns the (len(models), len(items)) scores in [low, high] of the models (positions
    0..K-1) on the bank's questions (positions 0..N-1). ``predictor``: each model's predicted probability of a right
    answer per question (``known``, ``predict(models)``, ``update(models, items, Z)``: an
    :class:`assay.faq.FactorPosterior`), or None for uniform draws. ``eliminate=False`` keeps every model in play to
    the end (the uniform baseline of :func:`assay.compare.live.replay`). ``progress(questions asked, budget, claims
    open)`` is called after every round; ``record(round, models, items, q)`` before each round's questions are asked,
    with the probability each was drawn with. A run whose estimated peak memory (:func:`peak_bytes`) is above
    ``max_memory`` bytes is refused before anything is asked (None: no limit).
    """
    goal, kk = check_goal(goal, k, K)
    if guarantee not in GUARANTEES:
        raise AssayInputError(NOT_EXACT if guarantee == "exact" else
                              f"guarantee must be one of {', '.join(GUARANTEES)}; got {guarantee!r}")
    budget = N if budget is None else min(int(budget), N)
    check_memory(K, N, guarantee=guarantee, limit=max_memory, batch=batch, grid=grid, history=predictor is not None)
    eng = _Engine(K, N, goal=goal, k=kk, guarantee=guarantee, margin=margin, delta=delta, budget=budget, low=low,
                  high=high, grid=grid, predictor=predictor, floor=floor, eliminate=eliminate)
    while True:
        st = eng.status()
        if progress is not None and eng.r > 0:  # after each round, with where the goal stands now
            progress(len(eng.order), budget, int(st.open_pairs.sum()))
        reason = eng.stop_reason(st)
        eng.retire(st)
        if reason or not eng.in_play.any():
            reason = reason or "goal met"
            eng.close(reason)
            break
        rd = eng.plan(st, batch, rng)
        if record is not None:  # the round's draws and their probabilities, kept before any question is asked
            record(eng.r, rd.play, rd.items, rd.q)
        eng.feed(rd, _checked(ask(rd.play, rd.items), len(rd.play), len(rd.items), low, high))
    return eng.result(reason, eng.alpha)


def __getattr__(name: str):
    """Names that moved, importable from here for one release: ``FactorPredictor`` (now
    :class:`assay.faq.FactorPosterior`)."""
    if name == "FactorPredictor":
        from ..faq.posterior import FactorPosterior

        return FactorPosterior
    raise AttributeError(name)
