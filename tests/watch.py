"""Watching another process from a test: wait for a condition, never for luck.

A child process (``assay eval``, a resumed run, a Ray worker) writes its journal, a log or a port in its own time: a
test that polls it must take "not there yet" (the file missing, its tables not created, a line half written, a
refused connection) as "not yet", wait with a bounded deadline, and fail with the child's own words (its stderr),
not with an error of its own making. Everything here does that:

* :class:`Child`: a subprocess whose stderr goes to a file (a pipe nobody reads can fill and stop the child), with
  :meth:`Child.tail` for failure messages and :meth:`Child.kill9`;
* :func:`wait_for`: poll a condition until it holds, tolerating :data:`NOT_YET` errors, until a deadline or until the
  child exits;
* :func:`journal_count`: a count from a SQLite journal another process writes, 0 while the file or its tables do not
  exist yet;
* :func:`complete_lines`: the complete lines of a text file another process appends to.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import tempfile
import time
from contextlib import closing
from pathlib import Path
from typing import Any, Callable

__all__ = ["Child", "wait_for", "journal_count", "complete_lines", "NOT_YET"]

#: what a condition may raise while the other process has not got there yet: the file or table does not exist, the
#: database is locked, a line is half written, nothing listens on the port yet
NOT_YET: tuple[type[BaseException], ...] = (sqlite3.OperationalError, sqlite3.DatabaseError, FileNotFoundError,
                                             ConnectionError, ValueError, IndexError)


class Child:
    """``subprocess.Popen(cmd)`` with stderr in a temporary file; a context manager that kills the child on exit."""

    def __init__(self, cmd: list[str], *, env: dict | None = None, cwd: str | Path | None = None,
                 stdout: Any = subprocess.DEVNULL) -> None:
        fd, name = tempfile.mkstemp(prefix="assay-child-", suffix=".stderr")
        self.stderr_path = Path(name)
        with os.fdopen(fd, "wb") as err:
            self.proc = subprocess.Popen([str(c) for c in cmd], stdout=stdout, stderr=err, env=env, cwd=cwd)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def poll(self) -> int | None:
        return self.proc.poll()

    def stderr(self) -> str:
        try:
            return self.stderr_path.read_text(errors="replace")
        except OSError:
            return ""

    def tail(self, chars: int = 3000) -> str:
        return self.stderr()[-chars:]

    def kill9(self, timeout: float = 30) -> None:
        """SIGKILL (the crash a resumed run must survive) and reap it."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=timeout)

    def wait(self, timeout: float) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill9()
            raise AssertionError(f"the child did not finish within {timeout:.0f} s; its stderr:\n{self.tail()}") from None

    def __enter__(self) -> "Child":
        return self

    def __exit__(self, *exc) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        try:
            self.proc.wait(timeout=30)
        finally:
            self.stderr_path.unlink(missing_ok=True)


def wait_for(condition: Callable[[], Any], *, what: str, timeout: float, child: Child | None = None,
             interval: float = 0.05) -> Any:
    """Call ``condition()`` until it returns something true, and return that.

    An error in :data:`NOT_YET` counts as "not yet". Fails (AssertionError naming ``what``, with the child's stderr)
    when the deadline passes, or when ``child`` exits before the condition holds (checked once more after the exit,
    since the child may have got there just before it ended)."""
    deadline = time.monotonic() + timeout
    last: BaseException | None = None
    while True:
        exited = child is not None and child.poll() is not None
        try:
            value = condition()
            if value:
                return value
        except NOT_YET as e:
            last = e
        if exited:
            raise AssertionError(f"{what}: the child ended (exit {child.poll()}) before it happened"
                                 f"{f' (last: {last!r})' if last else ''}; its stderr:\n{child.tail()}")
        if time.monotonic() > deadline:
            err = f"; its stderr:\n{child.tail()}" if child is not None else ""
            raise AssertionError(f"{what}: not within {timeout:.0f} s{f' (last: {last!r})' if last else ''}{err}")
        time.sleep(interval)


def journal_count(path: str | Path, sql: str, params: tuple = ()) -> int:
    """The first column of ``sql``'s first row in a SQLite file another process writes; 0 while the file, its
    tables or its rows are not there yet (or the database is busy)."""
    if not Path(path).exists():
        return 0
    try:
        with closing(sqlite3.connect(str(path), timeout=5)) as con:
            row = con.execute(sql, params).fetchone()
    except sqlite3.OperationalError:  # "no such table" before the child creates it; "database is locked"
        return 0
    return int(row[0]) if row and row[0] is not None else 0


def complete_lines(path: str | Path) -> list[str]:
    """The lines of a text file another process appends to, without a last line still being written (no newline
    yet); empty while the file does not exist."""
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        return []
    lines = text.split("\n")
    return [ln for ln in lines[:-1] if ln.strip()]
