"""Run many prompts through a :class:`~assay.models.base.Model`: concurrency, rate limit, retries, journal.

Per prompt:

1. key = ``request_key(model.name, prompt, model.params())``; if the journal already holds that key
   for this run (or for any run, with ``reuse=True``) the stored answer is returned (``cached``)
   and nothing is sent. Identical prompts share one key and one request.
2. Otherwise take a slot of the (adaptive) concurrency limiter and a token of the
   requests-per-minute limiter, call ``model.generate`` (under ``asyncio.timeout(timeout)`` if a
   runner timeout is given), and on :class:`RetryableError` / timeout release the slot, sleep
   ``max(Retry-After, full-jitter exponential backoff)`` and try again, up to ``max_retries`` retries.
3. A successful answer is written to the journal *before* the prompt counts as done, and it keeps its
   concurrency slot until then: at any moment at most ``concurrency`` requests are paid for and not yet in the
   journal, so a process killed at any moment asks again at most that many on resume.

Journal writes are group-committed on the event loop. When requests wait for slots that answers hold, the answers
are committed at once; but when this process, not the endpoint, limits the throughput (concurrency x CPU time per
answer >= time per request: a fast local server), only once half the slots hold answers, which saves CPU where CPU
is what is short. Otherwise an answer waits for its commit at most 5% of the recent time per request (between 0.5 ms
and ``LINGER_S``, 25 ms). Everything queued is committed in one transaction, a write to the journal's write-ahead
log that survives ``kill -9`` when it returns. The fsync that makes it survive a power loss too runs on a thread, at
most every ``SYNC_EVERY_S`` (100 ms) for every commit before it, and once more before ``run()`` returns (see
:meth:`Journal.batch_start`). An answer is used (stored in the result, counted done) only in the callback that
runs after its commit. (An fsync per commit on the loop, or a commit thread that held every answer's slot through
the hand-off, costs a fast endpoint a large share of its throughput: ``python bench/query.py`` measures it.)

Before a key is sent it is *claimed* in the journal (per-request leases): a second process on the same run id
skips keys another live process holds, works on the others, and waits for the held ones to be answered (or for
their lease to lapse: an owner that died on this host is detected at once, elsewhere after ``lease_s``). So two
processes on one run never pay twice for a key. Every attempt sent, every timeout (the server may still have
completed, and billed, it) and every answer thrown away as a duplicate is counted in the journal
(``assay runs show``).

Adaptive concurrency is AIMD: a 429/503 halves the effective cap (at least 1), once per "round"
of requests (requests already in flight when it was halved do not halve it again); each
``recover_after`` consecutive successes (default: the current cap) raise it by one, up to
``concurrency``. A server that cuts a request short while others are in flight (llama-cpp-python's server ends all
but one of concurrent streams after their first chunk) serves fewer at once: each such cut lowers the cap for good by
one, so the runner settles on what the server can serve (one stream at a time there), and the cut attempt is asked
again without counting against ``max_retries``: no request is given up for the concurrency it was asked at.

Outcomes (:mod:`assay.models.outcomes`): a request that fails for good after its retries gets ``Response.error`` and
``outcome`` ``timeout`` (its last attempt timed out) or ``transport``; it is not journaled as an answer and a resumed
run asks again. The model's own failures (``too_long``, ``refused``) come back from the adapter as answers: journaled,
counted in ``stats["too_long"]`` / ``stats["refused"]``, never retried.

Jitter comes from one ``random.Random`` per request, seeded by ``(seed, request key)`` and drawn once per retry,
so it does not depend on scheduling order. Results come back in input order.

Layout: :func:`run_prompts` checks its arguments (``_check_arguments``), keys and groups the prompts
(``_group_prompts``), then hands the run to a ``_Session`` (serve from the journal, claim, send, commit,
finalize, counters), which packages the answers into a :class:`RunResult`.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import random
import secrets
import socket
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, NamedTuple, Sequence

from ..errors import AssayInputError
from .base import Model, RequestJournal, Response, RetryableError
from .journal import Claim, Finish, open_journal
from .outcomes import REFUSED, TIMEOUT, TOO_LONG, TRANSPORT

__all__ = ["run_prompts", "run", "RunResult", "AdaptiveLimiter", "RateLimiter"]

log = logging.getLogger("assay.models")

#: The longest the journal writer waits for more answers before committing a batch (seconds).
LINGER_S = 0.025

#: When this process, not the endpoint, is the bottleneck (a fast local server): commit at once (not after the
#: linger) when requests wait for a slot and this fraction of the slots hold answers not yet in the journal; the other
#: half keeps requests in flight while the batch grows. Otherwise an answer a request waits for is committed at once.
FLUSH_AT = 0.5

#: The linger is this fraction of the recent mean time per request (bounded by 0.5 ms and LINGER_S): holding an
#: answer's slot that long costs a slow endpoint at most about this fraction of its throughput.
LINGER_FRACTION = 0.05

#: At most one fsync of the journal (on its thread) per this many seconds while a run goes on: the answers of this
#: window are what a power loss can cost (asked again on resume); a process kill costs none of them.
SYNC_EVERY_S = 0.1

#: Longest wait we accept from a server's Retry-After (seconds); the SDK caps at 60 s, we allow more.
RETRY_AFTER_CAP = 120.0


class _LoopCommitter:
    """Group commit on the event loop, with the fsync on a thread of its own.

    Queued journal operations are committed together, on the loop: at once when :meth:`flush` asks (requests wait
    for slots uncommitted answers hold), else after the linger (5% of the recent time per request, 0.5 ms to
    ``LINGER_S``) from the first. A commit is a write to the
    journal's write-ahead log, no wait for the disk: when it returns the answers survive ``kill -9`` and their slots
    are given back, so a kill re-asks at most ``concurrency`` requests. The fsync that makes them survive a power loss
    too (:meth:`Journal.sync`) runs on a thread, one for every commit before it, and once more before the run ends.

    Why not simpler: an fsync per commit blocks the loop for the disk's time on every answer, and committing on a
    thread holds every answer's slot through the hand-off and the fsync, which starves the next requests
    (``python bench/query.py`` compares them)."""

    def __init__(self, journal: RequestJournal, loop: asyncio.AbstractEventLoop) -> None:
        import concurrent.futures

        self.journal = journal
        self.loop = loop
        self.pending: list[tuple[tuple, Any]] = []
        self._handle: asyncio.TimerHandle | None = None  # the lingering commit
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="assay-journal-sync")
        self._syncing: Any = None  # the fsync in flight (a concurrent future)
        self._dirty = False  # committed since the fsync in flight started
        self._sync_error: BaseException | None = None
        self._sync_timer: asyncio.TimerHandle | None = None  # the next fsync, waiting for SYNC_EVERY_S
        self._last_sync = -1e9  # loop time the last fsync started
        self._closing = False
        self.latency_s = 0.0  # running mean time per request (0: none seen yet)
        self.cpu_s = 0.0  # running mean CPU time of this process per answer
        self._cpu_at: float | None = None

    def submit(self, op: tuple) -> asyncio.Future:
        fut = self.loop.create_future()
        self.pending.append((op, fut))
        self._linger()
        return fut

    def submit_then(self, op: tuple, callback: Callable[[Any], None]) -> None:
        self.pending.append((op, callback))
        self._linger()

    def _linger(self) -> None:
        if self._handle is None:
            wait = min(LINGER_S, max(0.0005, LINGER_FRACTION * self.latency_s)) if self.latency_s else LINGER_S
            self._handle = self.loop.call_later(wait, self._fire)

    def seen(self, latency_s: float) -> None:
        """An answer arrived after ``latency_s``: update the running means of the time per request (the linger
        follows it) and of this process's CPU time per answer."""
        self.latency_s = latency_s if not self.latency_s else 0.9 * self.latency_s + 0.1 * latency_s
        now = time.process_time()
        if self._cpu_at is not None:
            d = now - self._cpu_at
            self.cpu_s = d if not self.cpu_s else 0.9 * self.cpu_s + 0.1 * d
        self._cpu_at = now

    def client_bound(self, slots: int) -> bool:
        """Whether this process, not the endpoint, limits the throughput: ``slots`` requests in flight would come
        back faster than it can handle them (slots x CPU per answer >= time per request). Then holding answers for
        a bigger commit costs no throughput and saves CPU; otherwise every slot held is a request not sent."""
        return bool(self.cpu_s and self.latency_s) and slots * self.cpu_s >= self.latency_s

    def _fire(self) -> None:
        self._handle = None
        self._commit()

    def flush(self) -> None:
        """Commit what is queued now: waiting longer cannot grow the batch (a request waits for a slot)."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        self._commit()

    def _commit(self) -> None:
        batch, self.pending = self.pending, []
        if not batch:
            return
        ops = [op for op, _ in batch]
        try:
            results, commit = self.journal.batch_start(ops)
            commit()
        except BaseException as exc:  # the transaction rolled back: every caller hears of it
            results = [exc] * len(batch)
        else:
            self._sync_soon()
        for (_, target), r in zip(batch, results):
            if isinstance(target, asyncio.Future):
                if not target.done():
                    target.set_exception(r) if isinstance(r, BaseException) else target.set_result(r)
            else:
                target(r)

    def _sync_soon(self) -> None:
        """An fsync on the thread for what was just committed: now, or ``SYNC_EVERY_S`` after the last one started
        (each hand-off to the thread costs the loop the GIL a few times), or right after the one in flight."""
        if self._closing:  # closing: _drain syncs once, at the end
            return
        if self._syncing is not None or self._sync_timer is not None:
            self._dirty = True
            return
        wait = self._last_sync + SYNC_EVERY_S - self.loop.time()
        if wait > 0:
            self._dirty = True
            self._sync_timer = self.loop.call_later(wait, self._sync_now)
            return
        self._sync_now()

    def _sync_now(self) -> None:
        self._sync_timer = None
        self._dirty = False
        self._last_sync = self.loop.time()
        self._syncing = self._pool.submit(self.journal.sync)
        self._syncing.add_done_callback(lambda f: self.loop.call_soon_threadsafe(self._synced, f))

    def _synced(self, fut) -> None:
        if self._syncing is not fut:
            return
        self._syncing = None
        exc = fut.exception()
        if exc is not None and self._sync_error is None:
            self._sync_error = exc
        if self._dirty:
            self._sync_soon()

    def _drain(self) -> None:
        """Commit what is queued and wait until every commit is on disk (blocking)."""
        self._closing = True
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        if self._sync_timer is not None:
            self._sync_timer.cancel()
            self._sync_timer = None
        self._commit()
        if self._syncing is not None:
            try:
                self._syncing.result()
            except BaseException as exc:
                self._sync_error = self._sync_error or exc
            self._syncing = None
        self._pool.shutdown(wait=True)
        try:
            self.journal.sync()
        except BaseException as exc:
            self._sync_error = self._sync_error or exc

    async def close(self) -> None:
        """Commit everything queued (and run its callbacks) and make it durable before returning; an fsync that
        failed is raised here."""
        if self._syncing is not None:  # let the fsync in flight finish without blocking the loop
            await asyncio.wait([asyncio.wrap_future(self._syncing)])
        self._drain()
        if self._sync_error is not None:
            raise self._sync_error

    def abort(self) -> None:
        """The run was interrupted: commit what is queued and sync, now (blocking)."""
        self._drain()


class AdaptiveLimiter:
    """A cap on requests in flight that halves on throttling and creeps back up (AIMD).

    Waiters queue in FIFO order and a freed slot wakes exactly as many of them as there are free slots (a
    Condition with ``notify_all`` woke every waiting task on each release: quadratic work with hundreds queued).
    """

    def __init__(self, cap: int, *, adaptive: bool = True, recover_after: int | None = None) -> None:
        import collections

        self.cap = int(cap)
        self.limit = int(cap)
        self.min_limit = int(cap)
        self.adaptive = adaptive
        self.recover_after = recover_after
        self.in_flight = 0
        self.max_in_flight = 0
        self._epoch = 0
        self._streak = 0
        self._waiters: collections.deque = collections.deque()

    @property
    def waiting(self) -> bool:
        """Some request is queued for a slot."""
        return bool(self._waiters)

    def _wake(self) -> None:
        # hand free slots to the oldest waiters; a slot is counted as taken when handed over
        while self._waiters and self.in_flight < self.limit:
            fut = self._waiters.popleft()
            if not fut.done():
                self.in_flight += 1
                self.max_in_flight = max(self.max_in_flight, self.in_flight)
                fut.set_result(self._epoch)

    async def acquire(self) -> int:
        """Wait for a slot; returns the epoch token to hand back to :meth:`release`."""
        if not self._waiters and self.in_flight < self.limit:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            return self._epoch
        fut = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        try:
            return await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():  # the slot was handed over just before the cancel: give it back
                self.in_flight -= 1
                self._wake()
            raise

    async def release(self, epoch: int, outcome: str) -> None:
        """``outcome`` is "ok", "throttled" (429/503), "crowded" (the server cut this request short because others
        were in flight: it serves fewer at once) or "other" (other failures: no change)."""
        self.release_now(epoch, outcome)

    def release_now(self, epoch: int, outcome: str) -> None:
        """:meth:`release` from synchronous code (a journal commit's callback)."""
        self.in_flight -= 1
        if self.adaptive and outcome == "crowded":
            # a server that cuts concurrent streams (llama-cpp-python's serves one at a time and ends the others
            # after their first chunk) serves fewer at once than were in flight: one slot fewer for good, so the
            # cap settles on what the server can serve instead of creeping back up into more cut streams
            self.cap = max(1, min(self.cap, self.limit) - 1)
            self.limit = min(self.limit, self.cap)
            self.min_limit = min(self.min_limit, self.limit)
            self._streak = 0
            self._epoch += 1
            log.info("the server cut a concurrent request short: at most %d at once from now on", self.cap)
        elif self.adaptive:
            if outcome == "throttled":
                self._streak = 0
                if epoch == self._epoch:  # one decrease per round of concurrent requests
                    self.limit = max(1, self.limit // 2)
                    self.min_limit = min(self.min_limit, self.limit)
                    self._epoch += 1
                    log.info("throttled by the server: concurrency -> %d", self.limit)
            elif outcome == "ok":
                self._streak += 1
                need = self.recover_after or self.limit
                if self.limit < self.cap and self._streak >= need:
                    self.limit += 1
                    self._streak = 0
        self._wake()


class RateLimiter:
    """Requests-per-minute limit as a GCRA token bucket (``burst`` requests may go at once)."""

    def __init__(self, rpm: float, burst: int = 1) -> None:
        self.interval = 60.0 / float(rpm)
        self.burst = max(1, int(burst))
        self._tat = 0.0  # theoretical arrival time of the next request

    async def acquire(self) -> None:
        now = time.monotonic()
        tat = max(self._tat, now)
        allowed_at = tat - (self.burst - 1) * self.interval
        self._tat = tat + self.interval  # reserve the slot before sleeping: no await in between
        wait = allowed_at - now
        if wait > 0:
            await asyncio.sleep(wait)


@dataclass
class RunResult:
    """Answers in input order, the run id (journal key space), the run's statistics and the seed of its jitter
    (``None`` when a numpy Generator was given)."""

    responses: list[Response]
    run_id: str | None
    stats: dict[str, Any] = field(default_factory=dict)
    seed: int | None = None

    @property
    def texts(self) -> list[str | None]:
        return [r.text for r in self.responses]

    def to_frame(self):
        import pandas as pd

        return pd.DataFrame([r.to_dict() for r in self.responses])

    def __len__(self) -> int:
        return len(self.responses)


def _check_int(name: str, value, lo: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < lo:
        raise AssayInputError(f"{name} must be an integer >= {lo}, got {value!r}")
    return value


def _check_pos(name: str, value, allow_none: bool = True):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise AssayInputError(f"{name} must be a positive number{' or None' if allow_none else ''}, got {value!r}")
    return float(value)


# -- 1. checking the arguments and preparing the prompts ----------------------------------------------------


@dataclass(frozen=True)
class _Settings:
    """The checked knobs of one run (see :func:`run_prompts` for their meaning)."""

    concurrency: int
    max_retries: int
    rpm: float | None
    timeout: float | None
    backoff_base: float
    backoff_max: float
    adaptive: bool
    recover_after: int | None
    reuse: bool
    lease_s: Any  # as given; turned into seconds by the session (``None``: long enough for every retry)
    seed: Any  # the resolved :class:`assay.seeds.Seed`
    jitter: int  # what every request's jitter stream is seeded from (with the request key)


class _Batch(NamedTuple):
    """The prompts of a run with their journal keys; ``groups`` maps each distinct key to the input positions that
    ask it (first position first, keys in order of first appearance): one request answers a whole group."""

    prompts: list
    keys: list[str]
    groups: dict[str, list[int]]


def _check_arguments(model: Model, prompts: Sequence, *, concurrency, max_retries, rpm, timeout, backoff_base,
                     backoff_max, adaptive, recover_after, reuse, lease_s, seed) -> tuple[list, _Settings]:
    """Refuse bad arguments before anything is opened or sent; returns the prompts as a list and the settings.

    ``seed`` is already resolved (a :class:`~assay.seeds.Seed`)."""
    prompts = list(prompts)
    _check_int("concurrency", concurrency, 1)
    _check_int("max_retries", max_retries, 0)
    rpm = _check_pos("rpm", rpm)
    timeout = _check_pos("timeout", timeout)
    for name, v in (("backoff_base", backoff_base), ("backoff_max", backoff_max)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not v >= 0 or v == float("inf"):
            raise AssayInputError(f"{name} must be a number of seconds >= 0, got {v!r}")
    backoff_base = float(backoff_base)
    backoff_max = float(backoff_max)
    lease_s = _check_pos("lease_s", lease_s)
    if recover_after is not None:
        _check_int("recover_after", recover_after, 1)
    for attr in ("name", "params", "generate"):
        if not hasattr(model, attr):
            raise AssayInputError(f"model must implement the Model interface (name, params(), async generate()); "
                                  f"{type(model).__name__} has no {attr!r}")
    # an int seed is used as given (jitter of the same run replays); a Generator gives an int drawn from its stream
    jitter = seed.recorded if seed.recorded is not None else int(seed.sequence.generate_state(1)[0])
    return prompts, _Settings(concurrency=concurrency, max_retries=max_retries, rpm=rpm, timeout=timeout,
                              backoff_base=backoff_base, backoff_max=backoff_max, adaptive=adaptive,
                              recover_after=recover_after, reuse=reuse, lease_s=lease_s, seed=seed, jitter=jitter)


def _start_run(journal: RequestJournal | None, run_id: str | None, model: Model, params: Mapping[str, Any],
               n_prompts: int) -> str:
    """Start (or resume) the journal run; without a journal, a fresh id when none is given."""
    if journal is not None:
        return journal.start_run(run_id, meta={"model": model.name, "params": params, "n_prompts": n_prompts})
    return run_id if run_id is not None else uuid.uuid4().hex[:12]


def _group_prompts(model: Model, prompts: list, params: Mapping[str, Any]) -> _Batch:
    """Key every prompt (:func:`~assay.models.journal.request_key`) and group identical requests."""
    from .journal import request_key

    keys = [request_key(model.name, p, params) for p in prompts]
    groups: dict[str, list[int]] = {}
    for i, k in enumerate(keys):
        groups.setdefault(k, []).append(i)
    return _Batch(prompts, keys, groups)


# -- 2. the request loop --------------------------------------------------------------------------------------


class _Session:
    """One run's request loop: the journal, the limiters, the answers so far and the counters.

    Per distinct request: :meth:`wait_for_claim` (another process holds the key), :meth:`send` (attempts with
    retries), :meth:`commit` (journal first) and :meth:`finalize` (the answer is used and counted). Answers already
    in the journal are served by :meth:`serve_completed` before anything is claimed."""

    def __init__(self, model: Model, batch: _Batch, params: Mapping[str, Any], journal: RequestJournal | None,
                 run_id: str, cfg: _Settings, progress: Callable[[dict], None] | None) -> None:
        self.model = model
        self.batch = batch
        self.params = params
        self.journal = journal
        self.run_id = run_id
        self.cfg = cfg
        self.progress = progress
        self.stats: dict[str, Any] = {
            "run_id": run_id, "total": len(batch.prompts), "done": 0, "cached": 0, "requests": 0, "retries": 0,
            "throttled": 0, "timeouts": 0, "errors": 0, "in_flight": 0, "max_in_flight": 0,
            "concurrency": cfg.concurrency, "min_concurrency": cfg.concurrency,
            "prompt_tokens": 0, "completion_tokens": 0, "elapsed_s": 0.0, "waited_for_other_process": 0,
            "duplicates_thrown_away": 0, "too_long": 0, "refused": 0,
        }
        self.writer: _LoopCommitter | None = (_LoopCommitter(journal, asyncio.get_running_loop())
                                              if journal is not None else None)
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self.lease = float(cfg.lease_s) if cfg.lease_s is not None else (
            (cfg.timeout or 600.0) * (cfg.max_retries + 1) + cfg.backoff_max * cfg.max_retries + 60.0)
        self.t_start = time.perf_counter()
        self.limiter = AdaptiveLimiter(cfg.concurrency, adaptive=cfg.adaptive, recover_after=cfg.recover_after)
        self.held: dict[str, int] = {}  # key -> limiter epoch of an answer not yet in the journal
        self.rate = RateLimiter(cfg.rpm) if cfg.rpm else None
        self.results: list[Response | None] = [None] * len(batch.prompts)
        self.errors: list[BaseException] = []  # journal failures heard in commit callbacks

    # -- counters -------------------------------------------------------------------------------------------

    def _gauges(self) -> None:
        st, lim = self.stats, self.limiter
        st["in_flight"] = lim.in_flight
        st["max_in_flight"] = lim.max_in_flight
        st["concurrency"] = lim.limit
        st["min_concurrency"] = lim.min_limit
        st["elapsed_s"] = time.perf_counter() - self.t_start

    def report(self) -> None:
        """Refresh the gauges and hand a copy of the stats to ``progress``."""
        self._gauges()
        if self.progress is not None:
            self.progress(dict(self.stats))

    def account(self, resp: Response, n: int) -> None:
        """Count ``n`` prompts answered by ``resp`` (tokens only for answers paid for in this run)."""
        st = self.stats
        st["done"] += n
        if resp.cached:
            st["cached"] += n
        if resp.error is not None:
            st["errors"] += n
        elif resp.outcome in (TOO_LONG, REFUSED):  # the model's answer on the item: done, counted apart
            st[resp.outcome] += n
        if resp.error is None and not resp.cached:
            st["prompt_tokens"] += resp.prompt_tokens or 0
            st["completion_tokens"] += resp.completion_tokens or 0

    # -- answers from the journal ---------------------------------------------------------------------------

    def from_journal(self, key: str) -> Response | None:
        """The journaled answer for ``key`` (this run's; with ``reuse``, any run's), marked cached, else ``None``."""
        if self.journal is None:
            return None
        rec = self.journal.get(self.run_id, key)
        if rec is None and self.cfg.reuse:
            rec = self.journal.lookup_any(key)
        if rec is None:
            return None
        resp = Response.from_dict(_response_part(rec))
        if resp.error is not None:  # only successes are journaled, but be defensive
            return None
        resp.cached = True
        return resp

    def _fill(self, hit: Response, idx: list[int]) -> None:
        for i in idx:
            self.results[i] = hit if i == idx[0] else Response.from_dict(hit.to_dict())
        self.account(hit, len(idx))

    def serve_completed(self) -> list[tuple[str, list[int]]]:
        """Answer every group the journal already holds; returns the ``(key, positions)`` still to request."""
        j = self.journal
        # one query for the keys this run already answered; only those are read back (and, with reuse, every key)
        known = (j.completed_keys(self.run_id, list(self.batch.groups))
                 if (j is not None and not self.cfg.reuse) else None)
        todo: list[tuple[str, list[int]]] = []
        for key, idx in self.batch.groups.items():
            hit = self.from_journal(key) if (known is None or key in known) else None
            if hit is not None:
                self._fill(hit, idx)
            else:
                todo.append((key, idx))
        if self.stats["done"]:
            self.report()
        return todo

    # -- one request ----------------------------------------------------------------------------------------

    async def wait_for_claim(self, key: str, idx: list[int], st: str | None) -> bool:
        """Another live process holds ``key``: wait for its answer (True: served from the journal) or for its lease
        to lapse (False: the key is ours now)."""
        pause = 0.05
        while st != "claimed":
            if st == "done":
                hit = self.from_journal(key)
                if hit is not None:
                    self._fill(hit, idx)
                    self.report()
                    return True
            elif st == "busy":
                self.stats["waited_for_other_process"] += 1
            await asyncio.sleep(pause)
            pause = min(pause * 2, 1.0)
            st = await self.writer.submit(Claim(self.run_id, key, self.owner, self.lease))
        return False

    async def send(self, key: str, idx: list[int]) -> tuple[Response, int, int]:
        """Ask the model, retrying transient failures; ``(answer or final error, attempts sent, timeouts)``."""
        cfg, st, limiter, model = self.cfg, self.stats, self.limiter, self.model
        prompt = self.batch.prompts[idx[0]]
        rng = random.Random(f"{cfg.jitter}:{key}")
        attempt = 0
        crowded = 0  # attempts cut short by the server while others were in flight (not counted as attempts)
        last_err = ""
        last_timed_out = False
        n_sent = n_timeouts = 0
        while True:
            epoch = await limiter.acquire()
            outcome = "other"
            retry_after = None
            try:
                if self.rate is not None:
                    await self.rate.acquire()
                st["requests"] += 1
                n_sent += 1
                st["in_flight"] = limiter.in_flight
                st["max_in_flight"] = limiter.max_in_flight
                if cfg.timeout is not None:
                    async with asyncio.timeout(cfg.timeout):  # no extra task per request (wait_for made one)
                        resp = await model.generate(prompt)
                else:
                    resp = await model.generate(prompt)
                if not isinstance(resp, Response):
                    raise AssayInputError(f"{type(model).__name__}.generate must return a Response, "
                                          f"got {type(resp).__name__}")
                outcome = "ok"
            except RetryableError as exc:
                resp = None
                last_err = exc.message
                last_timed_out = exc.timed_out
                retry_after = exc.retry_after
                if exc.slow_down and limiter.in_flight > 1 and crowded < cfg.concurrency:
                    # cut short because others were in flight (the server serves fewer at once): the limiter
                    # lowers its cap, and this attempt does not count against max_retries, so a request is never
                    # given up because the server could not serve the concurrency asked for (bounded: the cap
                    # falls by one at each such cut)
                    outcome = "crowded"
                    crowded += 1
                    st["throttled"] += 1
                elif exc.throttled:
                    outcome = "throttled"
                    st["throttled"] += 1
                if exc.timed_out:
                    st["timeouts"] += 1
                    n_timeouts += 1
            except asyncio.TimeoutError:
                resp = None
                last_err = f"timed out: no answer within {cfg.timeout} s (the server is slow, overloaded or stuck)"
                last_timed_out = True
                st["timeouts"] += 1
                n_timeouts += 1
            finally:
                # an answer keeps its slot until the journal holds it (see commit): at any moment at most
                # `concurrency` requests are paid for and not yet durable, so a crash re-asks at most that many
                if outcome != "ok":
                    await limiter.release(epoch, outcome)

            if resp is not None:
                resp.attempts = attempt + 1
                resp.cached = False
                self.held[key] = epoch
                return resp, n_sent, n_timeouts
            if outcome == "crowded":
                st["retries"] += 1
                log.info("prompt %d: %s; asked again at a lower concurrency", idx[0], last_err)
                await asyncio.sleep(rng.uniform(0.0, cfg.backoff_base))
                continue
            if attempt >= cfg.max_retries:
                resp = Response(text=None, latency_s=0.0, error=f"gave up after {attempt + 1} attempts: {last_err}",
                                attempts=attempt + 1, outcome=TIMEOUT if last_timed_out else TRANSPORT)
                log.warning("prompt %d: %s", idx[0], resp.error)
                return resp, n_sent, n_timeouts
            delay = rng.uniform(0.0, min(cfg.backoff_max, cfg.backoff_base * (2.0 ** attempt)))
            if retry_after is not None:
                delay = max(delay, min(retry_after, RETRY_AFTER_CAP))
            attempt += 1
            st["retries"] += 1
            log.info("prompt %d: %s; retry %d/%d in %.2f s", idx[0], last_err, attempt, cfg.max_retries, delay)
            await asyncio.sleep(delay)

    def commit(self, key: str, idx: list[int], resp: Response, n_sent: int, n_timeouts: int) -> None:
        """Journal the answer, then :meth:`finalize` it (with the writer: in the callback after its commit) and
        hand back the limiter slot the answer held."""
        if self.writer is None:  # no journal
            self._free(key)
            self.finalize(idx, resp)
            return
        # committed before the prompt counts as done; an error is kept for the record only (the journal does not
        # serve it, so a resumed run asks again)
        request = {"model": self.model.name, "prompt": self.batch.prompts[idx[0]], "params": self.params}
        if resp.latency_s and resp.latency_s > 0:
            self.writer.seen(float(resp.latency_s))
        self.writer.submit_then(self.journal.prepare(Finish(self.run_id, key, request, resp.to_dict(),
                                                            {"requests": n_sent, "timeouts": n_timeouts}, self.owner)),
                                functools.partial(self._committed, key, idx, resp))
        lim = self.limiter
        if key in self.held and (len(self.held) >= lim.limit or (lim.waiting and (
                not self.writer.client_bound(lim.limit) or len(self.held) >= FLUSH_AT * lim.limit))):
            # requests wait for the slots these answers hold: commit now, not after the linger; when this process is
            # the bottleneck (fast local endpoints), only once half the slots wait on the journal
            self.writer.flush()

    def _committed(self, key: str, idx: list[int], resp: Response, done: Any = None) -> None:
        self._free(key)
        self.finalize(idx, resp, done)

    def _free(self, key: str) -> None:
        epoch = self.held.pop(key, None)
        if epoch is not None:
            self.limiter.release_now(epoch, "ok")

    def finalize(self, idx: list[int], resp: Response, done: Any = None) -> None:
        """Use a committed answer: fill its group's positions and count it. ``done`` is what the journal said
        (``"duplicate"``: another process had answered first; an exception: the commit failed)."""
        if isinstance(done, BaseException):
            self.errors.append(done)
            return
        if done == "duplicate":
            self.stats["duplicates_thrown_away"] += 1
        for i in idx:
            self.results[i] = resp if i == idx[0] else _dup(resp)
        self.account(resp, 1)
        if len(idx) > 1:
            self.account(self.results[idx[1]], len(idx) - 1)
        self.report()

    async def one(self, key: str, idx: list[int], st: str | None) -> None:
        """Everything for one distinct request; ``st`` is the result of its claim."""
        if self.writer is not None and st != "claimed" and await self.wait_for_claim(key, idx, st):
            return
        resp, n_sent, n_timeouts = await self.send(key, idx)
        self.commit(key, idx, resp, n_sent, n_timeouts)

    # -- the whole run --------------------------------------------------------------------------------------

    async def run(self, todo: list[tuple[str, list[int]]]) -> None:
        """Claim every key still needed, request them concurrently, commit the last answers and mark the run
        (``done``, ``incomplete``, ``interrupted`` or ``failed``) in the journal."""
        status = "failed"
        try:
            claimed: dict[str, str] = {}
            if self.writer is not None and todo:
                # claim every key this run still needs in one transaction; keys another live process holds wait
                claimed = dict(zip((k for k, _ in todo),
                                   self.journal.batch([Claim(self.run_id, k, self.owner, self.lease)
                                                       for k, _ in todo])))
            if todo:
                async with asyncio.TaskGroup() as tg:
                    for key, idx in todo:
                        tg.create_task(self.one(key, idx, claimed.get(key)))
            if self.writer is not None:
                await self.writer.close()  # every queued answer committed (and its callback run) before we return
                self.writer = None
            if self.errors:
                raise self.errors[0]
            status = "done" if self.stats["errors"] == 0 else "incomplete"
        except (KeyboardInterrupt, asyncio.CancelledError):
            status = "interrupted"
            raise
        except BaseExceptionGroup as eg:  # surface the first real error (e.g. AssayInputError), not a group
            first = eg.exceptions[0]
            while isinstance(first, BaseExceptionGroup):
                first = first.exceptions[0]
            raise first from None
        finally:
            if self.writer is not None:  # interrupted: commit what is queued before the run is marked
                self.writer.abort()
            if self.journal is not None:
                self.journal.finish_run(self.run_id, status)

    def result(self) -> RunResult:
        self._gauges()
        return RunResult(responses=list(self.results), run_id=self.run_id, stats=self.stats,
                         seed=self.cfg.seed.recorded)


# -- 3. the public entry points --------------------------------------------------------------------------------


async def run_prompts(
    model: Model,
    prompts: Sequence,
    *,
    journal=None,
    run_id: str | None = None,
    concurrency: int = 8,
    rpm: float | None = None,
    max_retries: int = 6,
    backoff_base: float = 0.5,
    backoff_max: float = 30.0,
    timeout: float | None = None,
    adaptive: bool = True,
    recover_after: int | None = None,
    reuse: bool = False,
    progress: Callable[[dict], None] | None = None,
    seed: int = 0,
    lease_s: float | None = None,
) -> RunResult:
    """Send every prompt to ``model`` and return the answers in input order.

    Parameters
    ----------
    model : a :class:`~assay.models.base.Model` (``OpenAIChatModel``, ``CallableModel``, ...).
    prompts : strings or chat-message lists.
    journal : a ``Journal``, a path to a SQLite file (opened and closed here), or ``None`` (no journal).
    run_id : journal run to write to / resume; new id if ``None``.
    concurrency : cap on requests in flight (default 8).
    rpm : requests per minute, every attempt counts (default: unlimited).
    max_retries : retries per prompt after the first attempt (default 6); then the prompt gets
        ``Response(error=...)``, which is not journaled (a resumed run tries it again).
    backoff_base, backoff_max : full-jitter exponential backoff, ``uniform(0, min(max, base * 2**k))`` seconds.
    timeout : per-attempt timeout in seconds enforced by the runner (``None``: the model's own).
    adaptive : halve the cap on 429/503, add one back after ``recover_after`` successes (default:
        the current cap).
    reuse : also answer from other runs in the journal with the same request key.
    progress : called with a copy of the stats dict after every finished prompt.
    seed : seeds the jitter; answers never depend on it. An int (default 0), ``None`` (fresh, recorded), a numpy
        ``SeedSequence`` or ``Generator`` (see :mod:`assay.seeds`); resolved once, recorded in ``RunResult.seed``.
    lease_s : how long another process's claim on a key is honoured when its owner cannot be checked (another
        host); default: long enough for every retry of one request.

    Returns
    -------
    RunResult
        ``responses`` in input order, ``run_id``, ``stats`` (the counters) and ``seed`` (the recorded seed).
    """
    from ..seeds import resolve_seed

    resolved = resolve_seed(seed)
    prompts, cfg = _check_arguments(model, prompts, concurrency=concurrency, max_retries=max_retries, rpm=rpm,
                                    timeout=timeout, backoff_base=backoff_base, backoff_max=backoff_max,
                                    adaptive=adaptive, recover_after=recover_after, reuse=reuse, lease_s=lease_s,
                                    seed=resolved)
    params = model.params()  # before the journal is opened: a model that cannot say its parameters leaves no file open
    journal, own_journal = open_journal(journal)
    try:
        run_id = _start_run(journal, run_id, model, params, len(prompts))
        session = _Session(model, _group_prompts(model, prompts, params), params, journal, run_id, cfg, progress)
        todo = session.serve_completed()
        await session.run(todo)
        return session.result()
    finally:
        if own_journal:
            journal.close()


def _dup(resp: Response) -> Response:
    """A later duplicate of a prompt in the same batch: same answer, served from the first request."""
    d = Response.from_dict(resp.to_dict())
    if d.error is None:
        d.cached = True
    return d


def _response_part(rec: Mapping[str, Any]) -> Mapping[str, Any]:
    """The journal may hand back the stored response itself or a record holding it."""
    if "response" in rec and isinstance(rec["response"], Mapping):
        return rec["response"]
    if "response" in rec and isinstance(rec["response"], str):
        import json

        return json.loads(rec["response"])
    return rec


def run(model: Model, prompts: Sequence, **kwargs) -> RunResult:
    """Synchronous :func:`run_prompts` (``asyncio.run``); closes the model's HTTP client afterwards.

    Parameters
    ----------
    model : Model
        The model to query.
    prompts : Sequence
        The prompts, as :func:`run_prompts` takes them.
    **kwargs
        Passed on to :func:`run_prompts`.

    Returns
    -------
    RunResult
        What :func:`run_prompts` returns.

    Raises
    ------
    AssayInputError
        If called from a running event loop (use ``await run_prompts(...)`` there).
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise AssayInputError("run() cannot be called from a running event loop; use `await run_prompts(...)`")

    async def main() -> RunResult:
        try:
            return await run_prompts(model, prompts, **kwargs)
        finally:
            aclose = getattr(model, "aclose", None)
            if aclose is not None:
                await aclose()

    return asyncio.run(main())
