"""Executors (serial, process pool) behind one interface, and seeding by ``SeedSequence.spawn``.

A unit of parallel work is a pure function ``fn(task, seed_sequence) -> result``. Each task gets
its own child ``SeedSequence`` spawned from the root seed in task order, so the numbers a study
produces depend only on the root seed and the task list, never on the executor or the number of
workers. Results come back in task order.

Progress is reported through an optional callback ``progress(done, total)``; the CLI turns that
into a rich progress bar on a terminal and into plain lines otherwise (CI, pipes).
"""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from .errors import AssayInputError

__all__ = ["resolve_seed", "spawn", "SerialExecutor", "ProcessExecutor", "get_executor", "run_tasks"]


def resolve_seed(seed: int | np.random.SeedSequence | np.random.Generator | None):
    """Return ``(recorded_seed, SeedSequence)``.

    ``None`` draws fresh OS entropy and records it, so every run can be repeated exactly from its
    result. A ``Generator`` is used through a child of its own seed sequence (recorded as
    ``None``: the caller owns that stream).
    """
    if seed is None:
        ss = np.random.SeedSequence()
        return int(ss.entropy), ss
    if isinstance(seed, np.random.SeedSequence):
        return (int(seed.entropy) if isinstance(seed.entropy, int) else None), seed
    if isinstance(seed, np.random.Generator):
        return None, np.random.SeedSequence(seed.integers(0, 2**63 - 1, size=4).tolist())
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise AssayInputError(f"seed must be an int, a numpy Generator or None, got {seed!r}")
    if seed < 0:
        raise AssayInputError(f"seed must be a non-negative integer, got {seed}")
    return int(seed), np.random.SeedSequence(int(seed))


def spawn(seed, n: int) -> list[np.random.SeedSequence]:
    """``n`` independent child seed sequences, in a fixed order."""
    _, ss = resolve_seed(seed)
    return ss.spawn(n)


class SerialExecutor:
    """Runs tasks one after another in this process."""

    workers = 1

    def map(
        self,
        fn: Callable[[Any, np.random.SeedSequence], Any],
        tasks: Sequence[Any],
        seeds: Sequence[np.random.SeedSequence],
        progress: Callable[[int, int], None] | None = None,
    ) -> list[Any]:
        out = []
        for k, (task, ss) in enumerate(zip(tasks, seeds)):
            out.append(fn(task, ss))
            if progress:
                progress(k + 1, len(tasks))
        return out


class ProcessExecutor:
    """Runs tasks in a pool of worker processes; results are returned in task order."""

    def __init__(self, workers: int | None = None) -> None:
        self.workers = int(workers or os.cpu_count() or 1)
        if self.workers < 1:
            raise AssayInputError(f"workers must be >= 1, got {workers}")

    def map(self, fn, tasks, seeds, progress=None) -> list[Any]:
        results: list[Any] = [None] * len(tasks)
        # Each worker process limits its BLAS threads so that W workers use W cores.
        with ProcessPoolExecutor(max_workers=self.workers, initializer=_single_thread_blas) as pool:
            futures = {pool.submit(fn, t, s): k for k, (t, s) in enumerate(zip(tasks, seeds))}
            done = 0
            for fut in as_completed(futures):
                results[futures[fut]] = fut.result()
                done += 1
                if progress:
                    progress(done, len(tasks))
        return results


def _single_thread_blas() -> None:
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    try:  # threadpoolctl ships with scikit-learn / scipy stacks; optional here
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)
    except Exception:  # pragma: no cover - best effort only
        pass


def get_executor(workers: int | None = 1, kind: str | None = None):
    """``workers`` <= 1 (or kind "serial") -> serial; otherwise a process pool."""
    if kind not in (None, "serial", "processes"):
        raise AssayInputError(f"executor must be 'serial' or 'processes', got {kind!r}")
    if kind == "serial" or workers is None or workers <= 1:
        return SerialExecutor()
    return ProcessExecutor(workers)


def run_tasks(
    fn: Callable[[Any, np.random.SeedSequence], Any],
    tasks: Iterable[Any],
    *,
    seed: int | None,
    workers: int = 1,
    progress: Callable[[int, int], None] | None = None,
) -> list[Any]:
    """Run ``fn`` over ``tasks`` with child seeds spawned from ``seed``; same numbers on any executor."""
    tasks = list(tasks)
    seeds = spawn(seed, len(tasks))
    return get_executor(workers).map(fn, tasks, seeds, progress)
