"""Progress reporting that degrades gracefully.

On an interactive terminal a rich progress bar is drawn on stderr. Without a terminal, or with
``CI`` set, or when asked for plain output, progress becomes plain lines on stderr, at most one
per ``every`` seconds plus the final one, so logs stay readable.
"""

from __future__ import annotations

import os
import sys
import time
from contextlib import contextmanager
from typing import Callable, Iterator

__all__ = ["progress_reporter", "interactive", "stderr_console"]


def interactive() -> bool:
    """True when stderr is a terminal and we are not in CI.

    ``CI`` set to ``1``, ``true`` or ``yes`` (any case) counts as CI.

    Returns
    -------
    bool
        Whether progress output may be interactive.
    """
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        return False
    return sys.stderr.isatty()


@contextmanager
def progress_reporter(label: str, *, enabled: bool = True, every: float = 5.0) -> Iterator[Callable[..., None]]:
    """Report progress through a callback: a rich bar on a terminal, plain lines otherwise.

    A context manager that yields a callback ``update(done, total, info="")``. On an interactive terminal
    (:func:`interactive`) it draws a rich progress bar on stderr; otherwise it prints plain lines on stderr, at most
    one per ``every`` seconds plus the final one (``done == total``). ``info`` is a short status text shown beside
    the count (e.g. "3 in flight, 2 retries, 1.2k tokens").

    Parameters
    ----------
    label : str
        The text shown before the count.
    enabled : bool, optional
        When False, the callback does nothing. Default True.
    every : float, optional
        The least number of seconds between two plain lines (not used by the rich bar). Default 5.0.

    Returns
    -------
    Iterator[Callable[..., None]]
        A context manager yielding the callback ``update(done, total, info="")``.

    Examples
    --------
    >>> with progress_reporter("questions", enabled=False) as update:
    ...     update(3, 10, info="2 retries")
    """
    if not enabled:
        yield lambda done, total, info="": None
        return
    if interactive():
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), TextColumn("{task.fields[info]}"), transient=True,
                      console=stderr_console()) as bar:
            task = bar.add_task(label, total=None, info="")

            def update(done: int, total: int, info: str = "") -> None:
                bar.update(task, completed=done, total=total, info=info)

            yield update
        return

    state = {"last": 0.0}
    start = time.monotonic()

    def update(done: int, total: int, info: str = "") -> None:
        now = time.monotonic()
        if done == total or now - state["last"] >= every:
            state["last"] = now
            extra = f", {info}" if info else ""
            print(f"{label}: {done}/{total} done ({now - start:.1f} s{extra})", file=sys.stderr, flush=True)

    yield update


def stderr_console():
    """A rich console on stderr (progress, live tables: stdout stays the result's)."""
    from rich.console import Console

    return Console(stderr=True)
