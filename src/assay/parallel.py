"""Executors (serial, process pool) behind one interface, and seeding by ``SeedSequence.spawn``.

A unit of parallel work is a pure function ``fn(task, seed_sequence) -> result``. Each task gets
its own child ``SeedSequence`` spawned from the root seed in task order, so the numbers a study
produces depend only on the root seed and the task list, never on the executor or the number of
workers. Results come back in task order.

Progress is reported through an optional callback ``progress(done, total)``; the CLI turns that
into a rich progress bar on a terminal and into plain lines otherwise (CI, pipes).
"""

from __future__ import annotations

import contextlib
import os
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from .errors import AssayBackendError, AssayInputError
from .seeds import resolve_seed, spawn  # noqa: F401  (re-exported: the one seed rule lives in assay.seeds)

__all__ = ["resolve_seed", "spawn", "SerialExecutor", "ProcessExecutor", "RayExecutor", "get_executor", "run_tasks",
           "use_executor"]


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
        # Each worker process limits its BLAS threads so that W workers use W cores, and receives the task
        # function (with the large inputs it closes over) once, at start-up, instead of with every task.
        with ProcessPoolExecutor(max_workers=self.workers, initializer=_worker_init, initargs=(fn,)) as pool:
            futures = {pool.submit(_call_worker_fn, t, s): k for k, (t, s) in enumerate(zip(tasks, seeds))}
            done = 0
            for fut in as_completed(futures):
                results[futures[fut]] = fut.result()
                done += 1
                if progress:
                    progress(done, len(tasks))
        return results


_WORKER_FN: list = []


def _worker_init(fn) -> None:
    _single_thread_blas()
    _WORKER_FN[:] = [fn]


def _call_worker_fn(task, ss):
    return _WORKER_FN[0](task, ss)


def _single_thread_blas() -> None:
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    try:  # threadpoolctl ships with scikit-learn / scipy stacks; optional here
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)
    except Exception:  # pragma: no cover - best effort only
        pass


class RayExecutor:
    """Runs tasks on a Ray cluster (``pip install 'assay[ray]'``): a local one with ``workers`` CPUs, or the
    cluster at ``address`` (``"auto"``: the one this machine belongs to; ``"ray://host:10001"``: a remote head).

    * The task function (with the large inputs it closes over: a FAQ history and factors, a score tensor) is put
      in the object store ONCE (``ray.put``) and shared by every task, not pickled per task.
    * Tasks are sent in chunks (about 4 per worker, or ``chunk`` tasks each) so that the per-call overhead of Ray
      stays small against the work, with at most ``workers`` chunks running at once; a chunk takes every m-th task
      (tasks 0, m, 2m, ...), so that long tasks listed together spread over the chunks; results come back in
      task order.
    * A task whose worker or node dies is retried by Ray (``max_retries``) on the nodes that are left; tasks are
      pure functions of (task, child seed), so a retry returns exactly the same result (tested with a node of a
      3-node cluster removed mid-run). When the retries are spent: :class:`AssayBackendError`.
    * ``address``: where nothing answers, :class:`AssayBackendError` within ``connect_timeout`` seconds (Ray
      itself would retry for minutes).
    """

    def __init__(self, workers: int | None = None, address: str | None = None, *, max_retries: int = 3,
                 chunk: int | None = None, connect_timeout: float = 5.0) -> None:
        try:
            import ray  # noqa: F401
        except ImportError:
            raise AssayInputError("the Ray executor needs the optional extra: pip install 'assay[ray]'") from None
        self.workers = int(workers or os.cpu_count() or 1)
        self.address = address
        self.max_retries = int(max_retries)
        self.chunk = chunk
        self.connect_timeout = float(connect_timeout)

    def _init(self):
        import ray

        if ray.is_initialized():
            _same_cluster(ray, self.address)
            return ray
        kw = dict(include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
        if not self.address:
            ray.init(num_cpus=self.workers, **kw)
            return ray
        # ray.init retries an address where nothing answers for minutes: ask the head's port first, briefly
        _probe(self.address, self.connect_timeout)
        try:
            ray.init(address=self.address, **kw)
        except (ConnectionError, TimeoutError, ValueError, RuntimeError) as e:
            raise AssayBackendError(f"could not join the Ray cluster at {self.address}: {e}") from None
        return ray

    def map(self, fn, tasks, seeds, progress=None) -> list[Any]:
        ray = self._init()
        n = len(tasks)
        if n == 0:
            return []
        size = self.chunk or max(1, -(-n // (4 * self.workers)))
        fn_ref = ray.put(fn)
        remote = ray.remote(num_cpus=1, max_retries=self.max_retries)(_run_chunk)
        # chunk j holds tasks j, j + m, j + 2m, ...: task lists are often ordered by cost (a study's big cells
        # first), and consecutive tasks in one chunk would put all the long ones on one worker
        m = -(-n // size)
        chunks = [list(range(j, n, m)) for j in range(m)]
        results: list[Any] = [None] * n
        where: dict = {}
        pending: list = []
        nxt, done = 0, 0
        while nxt < len(chunks) or pending:
            # at most `workers` chunks in flight: `workers` means the same on a laptop and on a cluster
            while nxt < len(chunks) and len(pending) < self.workers:
                idx = chunks[nxt]
                ref = remote.remote(fn_ref, [tasks[i] for i in idx], [seeds[i] for i in idx])
                where[ref] = idx
                pending.append(ref)
                nxt += 1
            ready, pending = ray.wait(pending, num_returns=1)
            for r in ready:
                idx = where.pop(r)
                try:
                    out = ray.get(r)
                except (ray.exceptions.NodeDiedError, ray.exceptions.WorkerCrashedError,
                        ray.exceptions.ObjectLostError, ray.exceptions.RaySystemError) as e:
                    # the cluster, not the task, failed, and Ray's retries are spent (a task's own exception
                    # is raised as it is)
                    for p in pending:
                        with contextlib.suppress(Exception):
                            ray.cancel(p)
                    why = (str(e).strip().splitlines() or [type(e).__name__])[0]
                    which = (f"task {idx[0]}" if len(idx) == 1 else
                             "tasks " + ", ".join(map(str, idx[:5])) + (", ..." if len(idx) > 5 else ""))
                    raise AssayBackendError(f"Ray lost {which} of {n} after {self.max_retries} retries "
                                            f"({type(e).__name__}): {why}") from e
                for i, res in zip(idx, out):
                    results[i] = res
                done += len(idx)
                if progress:
                    progress(done, n)
        return results


def _head(address: str) -> tuple[str, int] | None:
    """(host, port) that ``ray.init(address=...)`` will dial, resolved as Ray resolves it ("auto": the cluster
    this machine belongs to; 127.0.0.1 / localhost: this machine's node address); None when Ray's own resolution
    is not available (another Ray version), in which case nothing is checked beforehand."""
    if address.startswith("ray://"):
        target = address[len("ray://"):]
    else:
        try:
            from ray._private.services import canonicalize_bootstrap_address

            target = canonicalize_bootstrap_address(address)
        except ConnectionError as e:  # "auto" with no cluster on this machine
            raise AssayBackendError(f"no Ray cluster to join at address {address!r}: {e}") from None
        except ValueError:
            target = address
        except Exception:  # pragma: no cover - a Ray without this helper
            return None
        if target is None:
            return None
    host, sep, port = target.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise AssayInputError(f"a Ray address is 'auto', HOST:PORT (the head's GCS port, 6379 by default) or "
                              f"ray://HOST:PORT (Ray Client, 10001 by default); got {address!r}")
    return host.strip("[]"), int(port)


def _probe(address: str, timeout: float) -> None:
    import socket

    head = _head(address)
    if head is None:
        return
    try:
        socket.create_connection(head, timeout=timeout).close()
    except OSError as e:
        raise AssayBackendError(
            f"no Ray cluster answers at {address} ({head[0]}:{head[1]}: {e or 'timed out'}); start one with "
            f"`ray start --head` and give its address, or leave out the address for a Ray on this machine") from None


def _same_cluster(ray, address: str | None) -> None:
    """Ray is already connected in this process: it must be to ``address`` when one is named (a second cluster
    cannot be joined without ray.shutdown()); "auto", ray:// and no address accept the connection there is."""
    if not address or address == "auto" or address.startswith("ray://"):
        return
    try:
        head = _head(address)
        current = ray.get_runtime_context().gcs_address
    except Exception:  # pragma: no cover - nothing to compare with
        return
    if head is None or not current:
        return
    host, _, port = current.rpartition(":")
    if (host.strip("[]"), int(port)) != head:
        raise AssayInputError(f"this process is already connected to the Ray cluster at {current}; call "
                              f"ray.shutdown() before running on {address}")


def _run_chunk(fn, tasks, seeds):
    return [fn(t, s) for t, s in zip(tasks, seeds)]


_DEFAULT: dict[str, Any] = {"kind": None, "address": None}


class use_executor:
    """Make ``kind`` ("serial", "processes", "ray") the executor of every study / FAQ protocol run in this block
    (or, called without ``with``, from now on): ``with use_executor("ray", address="auto"): run_study(...)``."""

    def __init__(self, kind: str | None, address: str | None = None) -> None:
        if kind not in (None, "serial", "processes", "ray"):
            raise AssayInputError(f"executor must be serial, processes or ray; got {kind!r}")
        self._old = dict(_DEFAULT)
        _DEFAULT.update(kind=kind, address=address)

    def __enter__(self) -> "use_executor":
        return self

    def __exit__(self, *exc: Any) -> None:
        _DEFAULT.update(self._old)


def get_executor(workers: int | None = 1, kind: str | None = None, address: str | None = None):
    """Choose the executor for a run: serial, a process pool or Ray.

    ``workers`` <= 1 or None (or kind "serial") -> :class:`SerialExecutor`; "ray" -> :class:`RayExecutor`;
    otherwise a :class:`ProcessExecutor` with ``workers`` processes. Without ``kind``, the executor chosen with
    :class:`use_executor` (default: by ``workers``).

    Parameters
    ----------
    workers : int or None, optional
        The number of workers (processes, or Ray CPUs; for Ray, None or <= 0 means every CPU). Default 1.
    kind : str or None, optional
        ``"serial"``, ``"processes"`` or ``"ray"``; None (the default) for the one chosen with
        :class:`use_executor`, else by ``workers``.
    address : str or None, optional
        The Ray cluster to join (see :class:`RayExecutor`); None (the default) for the one chosen with
        :class:`use_executor`, else a local Ray.

    Returns
    -------
    SerialExecutor or ProcessExecutor or RayExecutor
        An executor with a ``map(fn, tasks, seeds, progress=None)`` method.

    Raises
    ------
    AssayInputError
        When ``kind`` is not one of the three.

    Examples
    --------
    >>> type(get_executor()).__name__, type(get_executor(4)).__name__, type(get_executor(4, "serial")).__name__
    ('SerialExecutor', 'ProcessExecutor', 'SerialExecutor')
    """
    kind = kind or _DEFAULT["kind"]
    address = address or _DEFAULT["address"]
    if kind not in (None, "serial", "processes", "ray"):
        raise AssayInputError(f"executor must be 'serial', 'processes' or 'ray', got {kind!r}")
    if kind == "ray":
        return RayExecutor(workers if workers and workers > 0 else None, address)
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
    """Run ``fn`` over ``tasks`` with child seeds spawned from ``seed``; same numbers on any executor.

    Each task gets its own child ``SeedSequence`` spawned from ``seed`` in task order, so the results depend only on
    ``seed`` and the task list, never on the executor or the number of workers. The executor is
    :func:`get_executor` ``(workers)``.

    Parameters
    ----------
    fn : Callable[[Any, numpy.random.SeedSequence], Any]
        A pure function ``fn(task, seed_sequence) -> result``; picklable when run in worker processes.
    tasks : Iterable[Any]
        The tasks, one call of ``fn`` each.
    seed : int or None
        The root seed (:func:`assay.seeds.spawn`).
    workers : int, optional
        The number of workers; 1 (the default) runs the tasks one after another in this process.
    progress : Callable[[int, int], None] or None, optional
        A callback ``progress(done, total)`` called as tasks finish. Default None.

    Returns
    -------
    list
        The results, in task order.

    Examples
    --------
    >>> def draw(task, ss):
    ...     return round(task + float(np.random.default_rng(ss).random()), 4)
    >>> run_tasks(draw, [0, 10, 20], seed=1)
    [0.699, 10.4758, 20.2332]
    """
    tasks = list(tasks)
    seeds = spawn(seed, len(tasks))
    return get_executor(workers).map(fn, tasks, seeds, progress)
