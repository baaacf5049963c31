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

__all__ = ["progress_reporter", "interactive"]


def interactive() -> bool:
    """True when stderr is a terminal and we are not in CI."""
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        return False
    return sys.stderr.isatty()


@contextmanager
def progress_reporter(label: str, *, enabled: bool = True, every: float = 5.0) -> Iterator[Callable[..., None]]:
    """Yield a callback ``update(done, total, info="")``; rich bar on a terminal, plain lines otherwise.

    ``info`` is a short status text shown beside the count (e.g. "3 in flight, 2 retries, 1.2k tokens").
    """
    if not enabled:
        yield lambda done, total, info="": None
        return
    if interactive():
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), TextColumn("{task.fields[info]}"), transient=True,
                      console=_stderr_console()) as bar:
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


def _stderr_console():
    from rich.console import Console

    return Console(stderr=True)
