"""COUP+ search with certification, adaptive certification, repulsion and Frozen-LCB batching (QuickScope Sec. 3, App. A-B).

:class:`Search` is an ask/tell optimiser over a :class:`~assay.quickscope.SearchSpace`. Each configuration
(template) ``i`` is an arm with i.i.d. utilities in [0, 1] and unknown mean ``theta_i``; the search keeps, per arm,
the sample count ``m_i``, the empirical mean and anytime KL bounds ``[LCB_i, UCB_i]`` (:mod:`assay.stats.bounds`):

    UCB_i, LCB_i: the roots of m_i kl(mean_i, q) = ln(1/delta_i),   delta_i = delta / (26.71 n^2 m_i^2)

with ``n`` the pool size when the bound was computed and natural logarithms throughout (``log="bits"`` reproduces
the released code's bits-vs-nats mix, which makes every bound narrower by a factor ~ln 2 in the radius).

Validity. With arms indexed 1, 2, ... in order of addition, every ``n`` used for arm ``i`` is >= i, so
delta_i <= delta / (26.71 i^2 m^2) and the union over arms, sample counts and both sides is at most
2 delta (pi^2/6)^2 / 26.71 = 0.203 delta: all bounds of all arms hold at all times with probability >= 1 - delta.
In particular the *deferred refresh* of App. B.2 (bounds recomputed with the new pool size only when the pool
has grown 1.5x) keeps validity: a stale, smaller ``n`` is still >= the arm's index. A certificate
(LCB_i >= tau) is therefore wrong with probability at most delta, over the whole run.

One batch (:meth:`Search.ask`, App. A "Frozen-LCB simulation", strategy ``"remove"``):

1. incumbent = the active (non-certified) sampled arm with the highest empirical mean (+ repulsion bonus);
   it gets floor(B/2) tickets;
2. the other ceil(B/2) tickets are chosen one at a time: before each slot the expansion rule adds a new
   configuration iff eps'^2 < c * gamma and every active arm has a (real or simulated) sample, where
   eps' = max UCB over active *randomly drawn* arms - max LCB over active arms, the UCBs taken in the
   expected-outcome world (each simulated pull returns the arm's mean: App. A's activation schedule), and
   gamma = ln(pi^2 N^2 / (3 delta)) / N with N the number of randomly drawn arms (COUP's top-gamma quantile
   guarantee is about random draws; the released code assumes exactly half of the additions are random);
   then the challenger is the active non-incumbent arm with the highest simulated UCB (+ bonus), ties to the
   fewest simulated pulls, then at random;
3. every simulated pull of arm i updates its simulated mean as if the outcome were its PRE-BATCH LCB (frozen),
   which only lowers its UCB (Theorem 3.1: conservative w.p. 1 - delta), so the batch spreads over arms.

New configurations start with NO samples (bounds [0, 1]): the released code gives them arm 0's mean, which can
make an unsampled arm the incumbent. Proposals: with probability ``random_prob`` (default 1/2) a uniformly drawn
unseen configuration (flagged random), otherwise the unseen candidate with the highest random-forest prediction.

Certification (``certify=tau``): an arm whose LCB reaches tau is certified. Strategy ``"remove"`` drops it from
the active set. Strategy ``"adaptive"`` (LUCB-K, Sec. 3): certified arms stay; with K >= 2 certified, Phase 1
goes to the arm of the empirical top-K with the smallest LCB and Phase 2 to the highest UCB outside the top-K;
when a new arm certifies while K >= 2, tau rises to the value where certifying one more arm from scratch costs
(on average over the top group) as many samples as lifting every member of the group to tau
(mean_j fresh_j(tau) = sum_j extra_j(tau)); tau never falls.

Repulsion (``repulsion=alpha``): score bonus alpha * g * (1 - P(x)), P(x) = weighted mean over certified
configurations c of the random forest's shared-leaf proximity prox(x, c) (fraction of trees in which x and c
land in the same leaf), weights 1 / (1 + age_c / T) by batches since certification, g = 1 / (1 + t / T) with t
the batches since the latest certification (T = ``repulsion_decay``).

Speed (the released code spends 160-310 ms per ticket): bounds are vectorised numpy (bisection) after each tell
and a scalar Newton solve inside the batch simulation; the forest is refitted when the number of arms with >= 2
samples has grown by ``refit_growth`` (default 1.2x; App. B.2 refits at every increase), and candidates are
drawn, predicted and passed through ``forest.apply`` once per refit, not per addition.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from .. import checks
from ..errors import AssayInputError
from ..seeds import resolve_seed
from ..stats.bounds import coup_bounds, coup_radius, kl_lcb, kl_ucb, samples_to_certify
from .space import SearchSpace

__all__ = ["COUPParams", "Search", "Ticket"]

_TINY = 1e-15


@dataclass(frozen=True)
class COUPParams:
    """Search hyper-parameters (defaults: QuickScope App. B.1).

    delta : total error probability of all bounds and certificates (0.01).
    n0 : initial random configurations (50).
    exploration : c in the expansion rule eps'^2 < c * gamma (1.0, the paper's value; the released CoupConfig uses 2.0).
    random_prob : share of additions drawn uniformly once the surrogate is active (0.5).
    surrogate : ``"rf"`` (random forest on one-hot / scaled features) or ``None`` (all additions uniform).
    n_trees : trees in the forest (100). refit_growth : refit when arms with >= 2 samples grew by this factor.
    candidates : unseen configurations scored per refit (2,000; a finite space with fewer is scored entirely).
    certify : tau, or ``None`` (no certification). strategy : ``"remove"`` or ``"adaptive"`` (LUCB-K).
    repulsion : alpha (0 = off). repulsion_decay : T in batches (10). repulsion_phase1 : bonus on the incumbent too.
    log : ``"nats"`` (valid as stated) or ``"bits"`` (the released code's units).
    refresh_growth : deferred bound refresh factor (1.5).
    bound : ``"anytime"`` (the COUP+ union bound above) or ``"pointwise"``: ln(1/delta)/m per arm and sample count,
        no union over arms or time (the intervals of the paper's exported tables); a naive baseline for studies,
        whose certificates are NOT valid.
    min_growth : a floor on the pool's growth: before each challenger slot (once every active arm has a sample), a
        configuration is added whenever the pool holds fewer than n0 + min_growth * sqrt(tickets issued before the
        batch) (2.0; 0 = the paper's rule alone). The paper's
        rule waits until the best of the pool is pinned down (eps'^2 < c gamma); when the first n0 draws hold only
        mediocre templates whose bounds shrink slowly, it never fires: on the simulated DyVal world 3 seeds in 40
        kept 55-158 configurations for 2,000 tickets (top-10 true error 0.46 on the worst; the others 0.92-0.98).
        Adding arms never weakens a bound (the union is over arms by index), so the floor keeps every guarantee.
    """

    delta: float = 0.01
    n0: int = 50
    exploration: float = 1.0
    random_prob: float = 0.5
    surrogate: str | None = "rf"
    n_trees: int = 100
    refit_growth: float = 1.2
    candidates: int = 2000
    certify: float | None = None
    strategy: str = "remove"
    repulsion: float = 0.0
    repulsion_decay: float = 10.0
    repulsion_phase1: bool = True
    log: str = "nats"
    refresh_growth: float = 1.5
    bound: str = "anytime"
    min_growth: float = 2.0

    def validate(self) -> "COUPParams":
        for name in ("delta", "exploration", "random_prob", "refit_growth", "refresh_growth", "repulsion",
                     "repulsion_decay", "min_growth"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not math.isfinite(v):
                raise AssayInputError(f"{name} must be a finite number; got {v!r}")
        for name in ("n0", "n_trees", "candidates"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer, float)) or (isinstance(v, float) and not v.is_integer()):
                raise AssayInputError(f"{name} must be a positive integer; got {v!r}")
        if self.certify is not None and (isinstance(self.certify, bool)
                                         or not isinstance(self.certify, (int, float, np.integer, np.floating))):
            raise AssayInputError(f"certify (tau) must be a number in (0, 1) or None; got {self.certify!r}")
        checks.level(self.delta)
        if int(self.n0) != self.n0 or self.n0 < 1:
            raise AssayInputError(f"n0 must be a positive integer; got {self.n0!r}")
        if not self.exploration > 0:
            raise AssayInputError(f"exploration must be > 0; got {self.exploration!r}")
        if not 0 <= self.random_prob <= 1:
            raise AssayInputError(f"random_prob must be in [0, 1]; got {self.random_prob!r}")
        if self.surrogate not in (None, "rf", "none"):
            raise AssayInputError(f"surrogate must be 'rf' or None; got {self.surrogate!r}")
        if self.certify is not None:
            checks.level(self.certify, "certify (tau)")
        if self.strategy not in ("remove", "adaptive"):
            raise AssayInputError(f"strategy must be 'remove' or 'adaptive'; got {self.strategy!r}")
        if self.strategy == "adaptive" and self.certify is None:
            raise AssayInputError("adaptive certification needs a starting threshold: pass certify=tau")
        if self.repulsion < 0 or self.repulsion_decay <= 0:
            raise AssayInputError("repulsion must be >= 0 and repulsion_decay > 0")
        if self.repulsion > 0 and self.surrogate in (None, "none"):
            raise AssayInputError("repulsion uses the random forest's leaf proximity: it needs surrogate='rf'")
        if self.repulsion > 0 and self.certify is None:
            raise AssayInputError("repulsion pushes away from certified configurations: it needs certify=tau")
        if self.bound not in ("anytime", "pointwise"):
            raise AssayInputError(f"bound must be 'anytime' or 'pointwise'; got {self.bound!r}")
        if isinstance(self.min_growth, bool) or not isinstance(self.min_growth, (int, float)) or not self.min_growth >= 0:
            raise AssayInputError(f"min_growth must be a number >= 0; got {self.min_growth!r}")
        if self.log not in ("nats", "bits"):
            raise AssayInputError(f"log must be 'nats' or 'bits'; got {self.log!r}")
        if self.refit_growth < 1 or self.refresh_growth <= 1 or self.n_trees < 1 or self.candidates < 1:
            raise AssayInputError("refit_growth >= 1, refresh_growth > 1, n_trees >= 1 and candidates >= 1 are required")
        return self


@dataclass(frozen=True)
class Ticket:
    """One requested evaluation: draw an instance of ``config`` and report its utility with ``tell``."""

    id: int
    arm: int
    config: dict
    phase: str  # "incumbent" | "challenger"

    def to_dict(self) -> dict:
        return {"ticket": self.id, "arm": self.arm, "config": dict(self.config), "phase": self.phase}


# --- scalar KL upper bound for the in-batch simulation (hot path: no numpy) -------------------------------------

def _kl(p: float, q: float) -> float:
    a = p * math.log(p / q) if p > 0 else 0.0
    b = (1 - p) * math.log((1 - p) / (1 - q)) if p < 1 else 0.0
    return a + b


def _ucb_scalar(p: float, r: float) -> float:
    """Largest q >= p with kl(p, q) <= r: Newton in y = -ln(1 - q), where kl is convex, increasing and nearly
    linear; started on the far side of the root (Pinsker), the iterates decrease monotonically to it, so the
    result is never below the exact root (the same solver as :func:`assay.stats.bounds.kl_ucb`, scalar)."""
    if r == math.inf or p >= 1 - 1e-12:
        return 1.0
    p = max(p, 0.0)
    q = min(p + math.sqrt(r / 2) + 1e-12, 1 - _TINY)
    if _kl(p, 1 - _TINY) <= r:
        return 1.0
    y = -math.log1p(-q)
    for _ in range(60):
        q = min(max(-math.expm1(-y), _TINY), 1 - _TINY)
        f = _kl(p, q) - r
        d = (q - p) / q
        if f <= 0 or d <= 0:
            break
        step = f / d
        y -= step
        if step <= 1e-10:
            break
    return -math.expm1(-y)


class _BatchWorld:
    """One batch's simulated world (Frozen-LCB, App. A): the arms' counts, means and bounds as the batch pulls them."""

    def __init__(self, search: "Search") -> None:
        """Copy the search's per-arm state at the start of the batch."""
        self.search = search
        p = search.params
        self.adaptive = p.strategy == "adaptive"
        n = search.n
        self.n_start = n
        self.m = search._m[:n].copy()
        self.mean = search._means()
        self.lcb0 = search._lcb[:n].copy()
        self.sim_m = self.m.copy()
        self.sim_mean = self.mean.copy()
        self.sim_ucb = search._ucb[:n].copy()
        self.exp_ucb = self.sim_ucb.copy()
        self.nb = search._nb[:n].copy()
        self.active = ~search._cert[:n] if not self.adaptive else np.ones(n, bool)
        self.bonus = search._bonus()
        self.k_cert = int(search._cert[:n].sum())
        self.topk = np.zeros(n, bool)
        if self.adaptive and self.k_cert >= 2:
            order = np.lexsort((np.arange(n), -self.mean))
            self.topk[order[:self.k_cert]] = True

    def extend(self) -> None:
        """Give the arms added to the pool since the batch began unsampled entries."""
        search = self.search
        extra = search.n - len(self.m)
        if extra <= 0:
            return
        z = np.zeros(extra)
        self.m = np.concatenate([self.m, z])
        self.mean = np.concatenate([self.mean, z])
        self.lcb0 = np.concatenate([self.lcb0, z])
        self.sim_m = np.concatenate([self.sim_m, z])
        self.sim_mean = np.concatenate([self.sim_mean, z])
        self.sim_ucb = np.concatenate([self.sim_ucb, np.ones(extra)])
        self.exp_ucb = np.concatenate([self.exp_ucb, np.ones(extra)])
        self.nb = np.concatenate([self.nb, np.full(extra, search.n)])
        self.active = np.concatenate([self.active, np.ones(extra, bool)])
        self.topk = np.concatenate([self.topk, np.zeros(extra, bool)])
        more = search._bonus() if search.params.repulsion > 0 else np.zeros(search.n)
        self.bonus = more if len(more) == search.n else np.concatenate([self.bonus, z])

    def pull(self, i: int, k: int = 1) -> None:
        """Simulate ``k`` pulls of arm ``i``."""
        # frozen-LCB simulated outcome: k samples at the arm's pre-batch LCB (selection, Theorem 3.1) ...
        tot = self.sim_m[i] * self.sim_mean[i] + k * self.lcb0[i]
        self.sim_m[i] += k
        self.sim_mean[i] = tot / self.sim_m[i]
        r = self.search._radius(self.sim_m[i], max(self.nb[i], 1))
        self.sim_ucb[i] = _ucb_scalar(self.sim_mean[i], r)
        # ... and the expected-outcome world (outcome = the arm's mean; LCB for an unsampled arm), which App. A
        # uses for the activation schedule of new configurations
        self.exp_ucb[i] = _ucb_scalar(self.mean[i] if self.m[i] > 0 else self.lcb0[i], r)


class Search:
    """Ask/tell COUP+ search over ``space`` (see the module docstring).

    >>> from assay.quickscope import Integer, Search, SearchSpace
    >>> s = Search(SearchSpace([Integer("level", 0, 19)]), certify=0.5, seed=0, n0=10, surrogate=None)
    >>> for _ in range(30):  # ask a batch, evaluate each ticket's configuration (concurrently), tell the utilities
    ...     tickets = s.ask(20)
    ...     s.tell([(t.id, float(t.config["level"] >= 15)) for t in tickets])
    >>> sorted(s.certified()["level"])  # certified: utility above 0.5, all at once with probability >= 1 - delta
    [15, 16, 17, 18, 19]

    ``s.top(k)`` ranks the configurations by their lower bound, with bounds and counts.

    ``initial``: configurations to start the pool with (before the n0 random ones).
    """

    def __init__(self, space: SearchSpace, *, params: COUPParams | None = None, seed: Any = None,
                 initial: Sequence[Mapping] = (), **kwargs: Any) -> None:
        if not isinstance(space, SearchSpace):
            raise AssayInputError(f"space must be a SearchSpace; got {type(space).__name__}")
        base = params or COUPParams()
        if kwargs:
            unknown = set(kwargs) - set(asdict(base))
            if unknown:
                raise AssayInputError(f"unknown search parameter(s): {', '.join(sorted(unknown))}")
            base = COUPParams(**{**asdict(base), **kwargs})
        if base.surrogate == "none":
            base = COUPParams(**{**asdict(base), "surrogate": None})
        self.params = base.validate()
        self.space = space
        # one seed rule (assay.seeds): resolved here, before any draw; an int (given, or drawn from OS entropy for
        # None) is recorded in self.seed and gives the stream of np.random.default_rng(int); a Generator is used as
        # the search's own stream (recorded None: its state is not an int)
        if isinstance(seed, np.random.Generator):
            self.seed, self.rng = None, seed
        else:
            resolved = resolve_seed(seed)
            self.seed, self.rng = resolved.recorded, resolved.rng()
        self.tau = self.params.certify
        self.configs: list[dict] = []
        self._key_index: dict[str, int] = {}
        cap = 256
        self._sum = np.zeros(cap)
        self._m = np.zeros(cap)
        self._lcb = np.zeros(cap)
        self._ucb = np.ones(cap)
        self._nb = np.ones(cap)  # pool size used in each arm's current bound
        self._random = np.zeros(cap, bool)
        self._cert = np.zeros(cap, bool)
        self._cert_batch = np.full(cap, -1)
        self._cert_ticket = np.full(cap, -1)
        self._added_batch = np.zeros(cap, int)
        self._origin: list[str] = []
        self._leaves: list[np.ndarray | None] = []
        self.n = 0
        self.n_last_refresh = 1
        self.batches = 0          # batches asked
        self.tickets_issued = 0
        self.tickets_told = 0
        self.failures = 0
        self._pending: dict[int, Ticket] = {}
        self.exhausted = False
        self.trace: list[dict] = []
        self.events: list[dict] = []
        # surrogate state
        self._forest = None
        self._fit_count = 0       # arms with >= 2 samples at the last fit
        self.n_refits = 0
        self._cand: list[dict] = []
        self._cand_pred = np.zeros(0)
        self._cand_leaves: np.ndarray | None = None
        self._cand_used = np.zeros(0, bool)
        self._rand_queue: list[int] = []
        for cfg in initial:
            space.validate(cfg)
            self._add(dict(cfg), origin="initial", is_random=False)

    # -- pool -------------------------------------------------------------------------------------------------

    def _grow(self) -> None:
        cap = len(self._sum) * 2
        for name, fill in (("_sum", 0.0), ("_m", 0.0), ("_lcb", 0.0), ("_ucb", 1.0), ("_nb", 1.0), ("_random", False),
                           ("_cert", False), ("_cert_batch", -1), ("_cert_ticket", -1), ("_added_batch", 0)):
            old = getattr(self, name)
            new = np.full(cap, fill, dtype=old.dtype)
            new[: len(old)] = old
            setattr(self, name, new)

    def _add(self, cfg: dict, *, origin: str, is_random: bool, leaves: np.ndarray | None = None) -> int:
        key = self.space.key(cfg)
        if key in self._key_index:
            return -1
        if self.n == len(self._sum):
            self._grow()
        i = self.n
        self.configs.append(cfg)
        self._key_index[key] = i
        self._origin.append(origin)
        self._leaves.append(leaves)
        self._random[i] = is_random
        self._added_batch[i] = self.batches
        self.n += 1
        return i

    def _draw_random_config(self) -> tuple[dict, np.ndarray | None] | None:
        """A uniformly drawn unseen configuration (from the scored candidate queue when there is one)."""
        while self._rand_queue:
            j = self._rand_queue.pop()
            if self._cand_used[j]:
                continue
            self._cand_used[j] = True
            cfg = self._cand[j]
            if self.space.key(cfg) in self._key_index:
                continue
            return cfg, (None if self._cand_leaves is None else self._cand_leaves[j])
        got = self.space.sample_unseen(1, self.rng, self._key_index.keys())
        if not got:
            return None
        return got[0], self._leaves_of([got[0]])

    def _model_config(self) -> tuple[dict, np.ndarray | None] | None:
        free = ~self._cand_used
        if not free.any():
            self._refill_candidates()
            free = ~self._cand_used
            if not free.any():
                return None
        j = int(np.flatnonzero(free)[np.argmax(self._cand_pred[free])])
        self._cand_used[j] = True
        cfg = self._cand[j]
        if self.space.key(cfg) in self._key_index:
            return self._model_config()
        return cfg, (None if self._cand_leaves is None else self._cand_leaves[j])

    def _propose(self) -> int:
        """Add one configuration; returns its index, or -1 when the space is exhausted."""
        p = self.params
        use_model = self._forest is not None and self.rng.random() >= p.random_prob
        got = self._model_config() if use_model else self._draw_random_config()
        if got is None and use_model:
            use_model, got = False, self._draw_random_config()
        if got is None:
            self.exhausted = True
            return -1
        cfg, leaves = got
        return self._add(dict(cfg), origin="model" if use_model else "random", is_random=not use_model,
                         leaves=None if leaves is None else np.asarray(leaves))

    # -- bounds -----------------------------------------------------------------------------------------------

    def _means(self) -> np.ndarray:
        n = self.n
        m = self._m[:n]
        return np.divide(self._sum[:n], m, out=np.zeros(n), where=m > 0)

    def _update_bounds(self, idx: np.ndarray) -> None:
        if len(idx) == 0:
            return
        m = self._m[idx]
        mean = np.divide(self._sum[idx], m, out=np.zeros(len(idx)), where=m > 0)
        if self.params.bound == "pointwise":
            r = np.where(m > 0, math.log(1 / self.params.delta) / np.maximum(m, 1), np.inf)
            lcb, ucb = kl_lcb(mean, r), kl_ucb(mean, r)
        else:
            lcb, ucb = coup_bounds(mean, m, self.n, self.params.delta, self.params.log)
        self._lcb[idx], self._ucb[idx], self._nb[idx] = lcb, ucb, self.n

    def _maybe_refresh(self) -> None:
        if self.n >= math.ceil(self.params.refresh_growth * self.n_last_refresh):
            idx = np.flatnonzero(self._m[: self.n] >= 2)
            self._update_bounds(idx)
            self.n_last_refresh = self.n

    def _radius(self, m: float, nb: float) -> float:
        if m <= 0:
            return math.inf
        if self.params.bound == "pointwise":
            return math.log(1 / self.params.delta) / m
        r = (math.log(26.71 / self.params.delta) + 2 * math.log(max(nb, 1)) + 2 * math.log(m)) / m
        return r * math.log(2) if self.params.log == "bits" else r

    # -- surrogate --------------------------------------------------------------------------------------------

    def _maybe_refit(self) -> None:
        p = self.params
        if p.surrogate is None or self.n < p.n0:
            return
        observed = int((self._m[: self.n] >= 2).sum())
        if observed < 5:
            return
        if self._forest is not None and observed < max(self._fit_count + 1, p.refit_growth * self._fit_count):
            return
        from sklearn.ensemble import RandomForestRegressor

        idx = np.flatnonzero(self._m[: self.n] >= 1)
        X = self.space.encode([self.configs[i] for i in idx])
        y = self._sum[idx] / self._m[idx]
        seed = int(self.rng.integers(2**31 - 1))
        forest = RandomForestRegressor(n_estimators=p.n_trees, random_state=seed, n_jobs=1, min_samples_leaf=1)
        forest.fit(X, y, sample_weight=np.sqrt(self._m[idx]))
        self._forest = forest
        self._fit_count = observed
        self.n_refits += 1
        if p.repulsion > 0:
            leaves = forest.apply(self.space.encode(self.configs))
            self._leaves = [leaves[i] for i in range(self.n)]
        self._refill_candidates()

    def _leaves_of(self, cfgs: list[dict]) -> np.ndarray | None:
        if self._forest is None or self.params.repulsion <= 0:
            return None
        return self._forest.apply(self.space.encode(cfgs))[0]

    def _refill_candidates(self) -> None:
        cand = self.space.sample_unseen(self.params.candidates, self.rng, self._key_index.keys())
        self._cand = cand
        self._cand_used = np.zeros(len(cand), bool)
        self._rand_queue = list(range(len(cand)))  # already a uniform draw: pop from the end
        if cand and self._forest is not None:
            X = self.space.encode(cand)
            self._cand_pred = self._forest.predict(X)
            self._cand_leaves = self._forest.apply(X) if self.params.repulsion > 0 else None
        else:
            self._cand_pred = np.zeros(len(cand))
            self._cand_leaves = None

    def _bonus(self) -> np.ndarray:
        """Repulsion bonus per arm (zeros when off or nothing is certified)."""
        n = self.n
        p = self.params
        cert = np.flatnonzero(self._cert[:n])
        if p.repulsion <= 0 or len(cert) == 0 or self._forest is None:
            return np.zeros(n)
        have = np.array([lv is not None for lv in self._leaves[:n]])
        cert = cert[have[cert]]
        if len(cert) == 0:
            return np.zeros(n)
        L = np.zeros((n, len(self._forest.estimators_)), dtype=np.int64)
        for i in np.flatnonzero(have):
            L[i] = self._leaves[i]
        age = self.batches - self._cert_batch[cert]
        w = 1.0 / (1.0 + age / p.repulsion_decay)
        prox = (L[:, None, :] == L[cert][None, :, :]).mean(axis=2)  # n x n_cert shared-leaf fraction
        P = prox @ w / w.sum()
        g = 1.0 / (1.0 + (self.batches - self._cert_batch[cert].max()) / p.repulsion_decay)
        bonus = p.repulsion * g * (1.0 - P)
        if not have.all():
            bonus[~have] = bonus[have].max() if have.any() else p.repulsion * g
        return bonus

    # -- ask --------------------------------------------------------------------------------------------------

    def _gamma(self) -> float:
        N = max(int(self._random[: self.n].sum()), 1)
        return math.log(math.pi**2 * N**2 / (3 * self.params.delta)) / N

    def _fill_initial(self) -> None:
        need = self.params.n0 - int(self._random[: self.n].sum()) - 0
        if self.batches == 0 and need > 0:
            for cfg in self.space.sample_unseen(need, self.rng, self._key_index.keys()):
                self._add(cfg, origin="random", is_random=True)
        if self.n == 0:
            raise AssayInputError("the search space has no configuration left to evaluate")

    def ask(self, B: int | None = None) -> list[Ticket]:
        """The next batch of ``B`` tickets (default 20) built by Frozen-LCB simulation (App. A)."""
        B = 20 if B is None else B
        if int(B) != B or B < 1:
            raise AssayInputError(f"batch size must be a positive integer; got {B!r}")
        B = int(B)
        self._fill_initial()
        world = _BatchWorld(self)
        tickets: list[Ticket] = []
        pend_count = self._simulate_pending(world)
        issued0 = self.tickets_issued
        inc = self._ask_incumbent(world, B, pend_count, tickets)
        eps_used, gamma_used = self._ask_challengers(world, B, inc, issued0, tickets)
        if not tickets:
            raise AssayInputError("every configuration is certified and the space is exhausted: nothing left to ask")
        self._maybe_refresh()
        self.batches += 1
        self._last_eps, self._last_gamma = eps_used, gamma_used
        return tickets

    def _issue(self, tickets: list[Ticket], i: int, phase: str) -> None:
        """Hand out one ticket for arm ``i`` and record it as pending."""
        t = Ticket(self.tickets_issued, i, dict(self.configs[i]), phase)
        self.tickets_issued += 1
        self._pending[t.id] = t
        tickets.append(t)

    def _simulate_pending(self, world: "_BatchWorld") -> dict[int, int]:
        """Simulate the tickets still outstanding from earlier asks; returns their count per arm."""
        # Tickets handed out by earlier asks and not yet told are part of this batch's world: each is simulated at
        # its arm's frozen LCB, as if it had been issued in this batch, so consecutive asks spread over arms the way
        # one larger ask would (Optuna / SMAC users call ask several times before telling).
        pend_count: dict[int, int] = {}
        for t in self._pending.values():
            pend_count[t.arm] = pend_count.get(t.arm, 0) + 1
        for i, cnt in pend_count.items():
            if i < world.n_start:
                world.pull(i, cnt)
        return pend_count

    def _ask_incumbent(self, world: "_BatchWorld", B: int, pend_count: dict[int, int], tickets: list[Ticket]) -> int:
        """Phase 1: pick the incumbent and issue its tickets; returns its arm, or -1 when there is none."""
        # the incumbent is topped up to half of everything outstanding (this batch + pending tickets)
        p = self.params
        n_pending = sum(pend_count.values())
        sampled = world.active & (world.m > 0)
        inc = -1
        if sampled.any():
            if world.adaptive and world.k_cert >= 2:
                cand = np.flatnonzero(world.topk)
                score = world.lcb0[cand] - (world.bonus[cand] if p.repulsion_phase1 else 0)
                inc = int(cand[np.lexsort((world.m[cand], score))][0])  # smallest LCB, ties -> fewest samples
            else:
                score = np.where(sampled, world.mean + (world.bonus if p.repulsion_phase1 else 0), -np.inf)
                inc = int(np.argmax(score))  # ties -> lowest index
            n1 = min(B, max(0, (n_pending + B) // 2 - pend_count.get(inc, 0)))
            if n1:
                world.pull(inc, n1)
                for _ in range(n1):
                    self._issue(tickets, inc, "incumbent")
            elif not pend_count.get(inc):
                inc = -1  # a batch of one with nothing outstanding: no incumbent this time, as in the paper
        return inc

    def _ask_challengers(self, world: "_BatchWorld", B: int, inc: int, issued0: int,
                         tickets: list[Ticket]) -> tuple[float | None, float | None]:
        """Phase 2: fill the batch with challengers, one slot at a time; returns the last (eps', gamma) used."""
        # the expansion rule runs before each slot
        p = self.params
        gamma_used = eps_used = None
        floor = p.n0 + p.min_growth * math.sqrt(issued0)
        for _ in range(B - len(tickets)):
            rule = self._expand_before_slot(world, floor)
            if rule is not None:
                eps_used, gamma_used = rule
            i = self._pick_challenger(world, inc)
            if i < 0:
                break
            world.pull(i)
            self._issue(tickets, i, "challenger")
        return eps_used, gamma_used

    def _expand_before_slot(self, world: "_BatchWorld", floor: float) -> tuple[float, float] | None:
        """The expansion rule before one slot: maybe add a configuration; returns (eps', gamma) when they were
        computed."""
        p = self.params
        ready = not self.exhausted and p.n0 <= self.n and not (world.active & (world.sim_m == 0)).any()
        if ready and self.n < floor:
            self._add_to_batch(world, "growth floor")  # the growth floor: the pool lags n0 + min_growth sqrt(tickets)
        elif ready:
            eps = self._eps_prime(world.exp_ucb, world.lcb0, world.active, world.topk, world.adaptive, world.k_cert)
            gamma = self._gamma()
            if eps * eps < p.exploration * gamma:
                self._add_to_batch(world, None)
            return eps, gamma
        return None

    def _add_to_batch(self, world: "_BatchWorld", why: str | None) -> None:
        """Refit if due, propose one configuration and make room for it in the batch's world."""
        self._maybe_refit()
        j = self._propose()
        if j >= 0:
            world.extend()
            event = {"event": "add", "arm": j, "batch": self.batches, "origin": self._origin[j]}
            if why is not None:
                event["why"] = why
            self.events.append(event)

    def _pick_challenger(self, world: "_BatchWorld", inc: int) -> int:
        """The active non-incumbent arm with the highest simulated UCB (+ bonus); -1 when no arm is active."""
        cand_mask = world.active.copy()
        if inc >= 0:
            cand_mask[inc] = False
        if world.adaptive and world.k_cert >= 2:
            cand_mask &= ~world.topk
        if not cand_mask.any():
            cand_mask = world.active.copy()
        if not cand_mask.any():
            return -1
        score = np.where(cand_mask, world.sim_ucb + world.bonus, -np.inf)
        top = score.max()
        ties = np.flatnonzero(score >= top - 1e-12)
        if len(ties) > 1:
            fewest = world.sim_m[ties].min()
            ties = ties[world.sim_m[ties] == fewest]
            return int(ties[self.rng.integers(len(ties))]) if len(ties) > 1 else int(ties[0])
        return int(ties[0])

    def _eps_prime(self, ucb, lcb, active, topk, adaptive, k_cert) -> float:
        if adaptive and k_cert >= 2:
            out = ~topk
            if not out.any():
                return 0.0
            return max(0.0, float(ucb[out].max() - lcb[topk].min()))
        rnd = active & self._random[: len(active)]
        if not rnd.any() or not active.any():
            return 0.0
        return float(ucb[rnd].max() - lcb[active].max())

    # -- tell -------------------------------------------------------------------------------------------------

    def tell(self, results: Iterable) -> None:
        """Report outcomes: ``(ticket_id, utility)`` pairs or dicts with ``ticket`` and ``utility``.

        ``utility`` must be in [0, 1]; ``None`` / NaN records a failed evaluation (the ticket is closed, counted
        in ``failures``, and the arm gets no observation).
        """
        checked: list[tuple[int, float | None]] = []
        seen: set = set()
        for r in results:
            if isinstance(r, Mapping):
                tid, u = r.get("ticket"), r.get("utility")
            else:
                try:
                    tid, u = r
                except (TypeError, ValueError):
                    raise AssayInputError(f"tell() takes (ticket_id, utility) pairs or dicts; got {r!r}") from None
            tid = getattr(tid, "id", tid)
            if isinstance(tid, bool) or not isinstance(tid, (int, np.integer)):
                raise AssayInputError(f"a ticket id must be the integer id of a ticket from ask(); got {tid!r}")
            tid = int(tid)
            if tid not in self._pending or tid in seen:
                raise AssayInputError(f"ticket {tid!r} is unknown or was already told")
            seen.add(tid)
            if u is not None:
                try:
                    u = float(u)
                except (TypeError, ValueError):
                    raise AssayInputError(f"ticket {tid}: utility {u!r} is not a number") from None
                if math.isnan(u):
                    u = None
                elif not 0.0 <= u <= 1.0:
                    raise AssayInputError(f"ticket {tid}: utility {u!r} is outside [0, 1] (the bounds need [0, 1] utilities)")
            checked.append((tid, u))
        # everything validated: only now change the state (a bad entry leaves the search untouched)
        touched = []
        for tid, u in checked:
            t = self._pending.pop(tid)
            self.tickets_told += 1
            if u is None:
                self.failures += 1
                continue
            self._sum[t.arm] += u
            self._m[t.arm] += 1
            touched.append(t.arm)
        idx = np.unique(np.asarray(touched, dtype=int))
        self._update_bounds(idx)
        self._maybe_refresh()
        self._certify(idx)
        self.trace.append(self.status())

    def _certify(self, idx: np.ndarray) -> None:
        if self.tau is None or len(idx) == 0:
            return
        new = idx[(self._lcb[idx] >= self.tau) & ~self._cert[idx]]
        if len(new) == 0:
            return
        old_k = int(self._cert[: self.n].sum())
        for i in new:
            self._cert[i] = True
            self._cert_batch[i] = self.batches
            self._cert_ticket[i] = self.tickets_told
            self.events.append({"event": "certify", "arm": int(i), "batch": self.batches, "tickets": self.tickets_told,
                                "lcb": float(self._lcb[i]), "tau": float(self.tau)})
        if self.params.strategy == "adaptive" and old_k >= 2:
            self._raise_threshold(old_k)

    def _raise_threshold(self, old_k: int) -> None:
        """Adaptive certification: raise tau until one fresh certification costs as much as lifting the group."""
        n = self.n
        mean = self._means()
        group = np.lexsort((np.arange(n), -mean))[:old_k]
        mu, mj = mean[group], self._m[group]
        p = self.params

        def gap(tau: float) -> float:
            fresh = samples_to_certify(mu, tau, n, p.delta, p.log, m_max=10**6)
            fresh = np.where(np.isfinite(fresh), fresh, 10**6)
            return float(fresh.mean() - np.maximum(fresh - mj, 0).sum())

        lo, hi = float(self.tau), float(mu.min())
        if hi <= lo or gap(hi) > 0:
            return
        for _ in range(30):
            mid = 0.5 * (lo + hi)
            if gap(mid) > 0:
                lo = mid
            else:
                hi = mid
        if lo > self.tau:
            self.events.append({"event": "threshold", "batch": self.batches, "from": float(self.tau), "to": lo})
            self.tau = lo

    # -- reporting --------------------------------------------------------------------------------------------

    def status(self) -> dict:
        n = self.n
        act = ~self._cert[:n] if self.params.strategy == "remove" else np.ones(n, bool)
        eps_star = float(self._ucb[:n][act].max() - self._lcb[:n][act].max()) if act.any() else 0.0
        return {"tickets": self.tickets_told, "batches": self.batches, "pool": n,
                "sampled": int((self._m[:n] > 0).sum()), "certified": int(self._cert[:n].sum()),
                "failures": self.failures, "epsilon": eps_star, "tau": self.tau, "refits": self.n_refits}

    def arms(self) -> pd.DataFrame:
        """One row per configuration in the pool: its parameters, ``n`` (tickets told), ``estimate`` (mean utility),
        ``ci_low`` / ``ci_high`` (the anytime KL bounds LCB / UCB, simultaneous over all configurations and times at
        level delta), ``certified``, ``certified_at_ticket``, ``origin`` and ``key``."""
        n = self.n
        df = pd.DataFrame(self.configs)
        df.insert(0, "arm", np.arange(n))
        df["n"] = self._m[:n].astype(int)
        df["estimate"] = np.where(self._m[:n] > 0, self._means(), np.nan)
        df["ci_low"] = self._lcb[:n]
        df["ci_high"] = self._ucb[:n]
        df["certified"] = self._cert[:n]
        # missing (not -1) for configurations never certified: a count column stays a count
        df["certified_at_ticket"] = pd.array(np.where(self._cert[:n], self._cert_ticket[:n], 0), dtype="Int64")
        df.loc[~self._cert[:n], "certified_at_ticket"] = pd.NA
        df["origin"] = self._origin
        df["key"] = [self.space.key(c) for c in self.configs]
        return df

    def top(self, k: int = 10) -> pd.DataFrame:
        """The ``k`` sampled configurations with the highest LCB ``ci_low`` (ties: higher mean, then more samples)."""
        df = self.arms()
        df = df[df["n"] > 0]
        return df.sort_values(["ci_low", "estimate", "n"], ascending=False, kind="mergesort").head(k).reset_index(drop=True)

    @property
    def certified_arms(self) -> np.ndarray:
        """Ids (pool indices) of the certified configurations, in increasing order."""
        return np.flatnonzero(self._cert[: self.n])

    def certified(self) -> pd.DataFrame:
        df = self.arms()
        return df[df["certified"]].sort_values("certified_at_ticket").reset_index(drop=True)

    def radius(self, m, n=None):
        """The bound radius ln(1/delta_i)/m used for ``m`` samples at pool size ``n`` (default: now)."""
        return coup_radius(m, self.n if n is None else n, self.params.delta, self.params.log)
