"""math-verify behind a wall-time bound that works in any thread and in worker processes.

``math-verify`` (Hugging Face's library, which the field's leaderboards score maths with) parses LaTeX and plain
expressions with sympy and decides whether two answers are equal by value. Its own timeouts use ``SIGALRM``, which
only the main thread of a process may set, and some inputs make sympy run for minutes (``10^{10^{10}}``, deep towers
of roots: the library's public issues). So every call here goes to one helper process per assay process, started on
first use as a plain subprocess (``python -m assay.models.mathverify``, reading requests on its stdin: it works from any
thread, from daemonic worker processes and from scripts without a ``__main__`` guard, where multiprocessing's
``spawn`` fails), where it runs in that process's main thread with math-verify's own timeouts on, and the parent waits
at most ``timeout`` seconds plus a margin for the reply (read by a thread into a queue, so the wait is bounded on any
platform); a helper that does not reply is killed (a C-level loop of sympy ignores signals) and the next call starts
a new one. A timeout reads as "could not be parsed" (:data:`TIMEOUT`), never as wrong or right.

Calls are serialised by a lock (one helper); each is a few milliseconds, the round trip a fraction of one.
"""

from __future__ import annotations

import atexit
import queue
import subprocess
import sys
import threading
from typing import Any

from ..errors import AssayBackendError

__all__ = ["parse_answer", "same_answer", "TIMEOUT", "DEFAULT_TIMEOUT", "available"]

#: seconds one parse or comparison may take (math-verify's own default)
DEFAULT_TIMEOUT = 5.0
#: what a call that ran out of time returns in place of its result
TIMEOUT = "timeout"


def available() -> bool:
    """True when math-verify can be imported."""
    try:
        import math_verify  # noqa: F401
    except ImportError:
        return False
    return True


def _as_latex(s: str) -> str:
    """The text math-verify reads: an answer without ``$`` delimiters is wrapped in them (``\\frac{3}{4}`` and
    ``x^2+1`` are then read as LaTeX, not searched for a number)."""
    s = s.strip()
    if "$" in s or "\\boxed" in s or s.startswith("\\(") or s.startswith("\\["):
        return s
    return f"${s}$"


def _canonical(p) -> str | None:
    """math-verify's LaTeX of a parse, ``None`` when it read no mathematical object (its parse falls back to the
    text itself, a string, for anything: that is not a reading)."""
    if not p or isinstance(p[0], str):
        return None
    return str(p[1]) if len(p) > 1 else str(p[0])


def serve(stdin=None, stdout=None) -> None:  # pragma: no cover - runs in the helper process
    """The helper's loop: one JSON request per line on stdin (``[op, args, timeout]``), one JSON reply per line."""
    import json
    import logging
    import sys
    import time

    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    logging.disable(logging.WARNING)  # math-verify warns on every call with its timeouts off; they are on here
    from math_verify import parse, verify

    cache: dict[tuple[str, int], Any] = {}

    def parsed(s: str, secs: int):
        key = (s, secs)
        if key not in cache:
            if len(cache) > 20_000:
                cache.clear()
            cache[key] = parse(_as_latex(s), parsing_timeout=secs)
        return cache[key]

    for line in stdin:
        start = time.monotonic()
        try:
            op, args, timeout = json.loads(line)
            secs = max(1, int(round(float(timeout))))
            if op == "parse":
                reply = ["ok", _canonical(parsed(args, secs))]
            elif op == "verify":
                refs, ans = args
                p = parsed(ans, secs)
                if _canonical(p) is None:
                    reply = ["ok", None]
                else:
                    hit = any(verify(parsed(r, secs), p, timeout_seconds=secs) for r in refs)
                    reply = ["ok", [bool(hit), _canonical(p)]]
            else:
                reply = ["error", f"unknown op {op!r}"]
        except Exception as exc:  # noqa: BLE001 - a sympy error on one input is that input's result
            reply = ["error", f"{type(exc).__name__}: {exc}"]
        # math-verify answers "not equal" (or "nothing read") when its own timeout stops it: a call that ran for its
        # whole time is a timeout, not a verdict
        if reply[0] == "ok" and time.monotonic() - start >= 0.95 * secs:
            reply = ["timeout", None]
        stdout.write(json.dumps(reply) + "\n")
        stdout.flush()


class _Helper:
    """One helper process (``python -m assay.models.mathverify``), talked to over its stdin / stdout; a thread reads
    its replies into a queue so that the caller can wait with a time limit on any platform and in any thread."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.proc = None
        self.replies: queue.Queue | None = None

    def _start(self) -> None:
        if not available():
            raise AssayBackendError("the math scorer needs math-verify: pip install 'math-verify[antlr4_13_2]>=0.9'")
        self.proc = subprocess.Popen([sys.executable, "-m", "assay.models.mathverify"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)
        replies: queue.Queue = queue.Queue()
        out = self.proc.stdout

        def read() -> None:
            for line in out:
                replies.put(line)
            replies.put(None)  # the helper is gone

        threading.Thread(target=read, daemon=True, name="assay-math-verify-reader").start()
        self.replies = replies

    def stop(self) -> None:
        p, self.proc, self.replies = self.proc, None, None
        if p is None:
            return
        try:
            p.kill()
        except OSError:
            pass
        try:
            p.wait(5)
        except subprocess.TimeoutExpired:
            pass
        for f in (p.stdin, p.stdout):
            try:
                f.close()
            except (OSError, ValueError):
                pass

    def call(self, op: str, args: Any, timeout: float) -> Any:
        import json

        with self.lock:
            first = self.proc is None or self.proc.poll() is not None
            if first:
                self.stop()
                self._start()
            try:
                self.proc.stdin.write(json.dumps([op, args, timeout]) + "\n")
                self.proc.stdin.flush()
                # math-verify's own timeouts stop a slow parse or comparison after ``timeout`` seconds each; the margin
                # covers two of them, and a new helper's import of sympy
                line = self.replies.get(timeout=3 * timeout + 2.0 + (60.0 if first else 0.0))
            except queue.Empty:
                self.stop()  # a loop that ignores signals (C code in sympy): killed, and the input unread
                return TIMEOUT
            except (OSError, ValueError):
                self.stop()
                return TIMEOUT
            if line is None:
                self.stop()  # the helper died on this input (a crash in sympy): the input could not be read
                return TIMEOUT
            status, value = json.loads(line)
            if status == "timeout":
                return TIMEOUT
            if status == "error":
                return None
            return value


_HELPER = _Helper()
atexit.register(_HELPER.stop)


def _check(s: Any, what: str) -> str:
    if not isinstance(s, str):
        raise TypeError(f"{what} must be a string")
    return s


def parse_answer(s: str, timeout: float = DEFAULT_TIMEOUT) -> str | None:
    """math-verify's reading of ``s`` (its canonical LaTeX), ``None`` when it reads nothing, :data:`TIMEOUT` when it
    ran out of time. ``s`` without ``$`` delimiters is read as LaTeX."""
    return _HELPER.call("parse", _check(s, "the answer"), float(timeout))


def same_answer(references: list[str], answer: str, timeout: float = DEFAULT_TIMEOUT):
    """``(equal, canonical answer)`` when math-verify reads ``answer`` (equal: it equals one of ``references`` by
    value), ``None`` when it reads nothing, :data:`TIMEOUT` when it ran out of time."""
    refs = [_check(r, "a reference") for r in references]
    out = _HELPER.call("verify", (refs, _check(answer, "the answer")), float(timeout))
    return tuple(out) if isinstance(out, list) else out


if __name__ == "__main__":  # pragma: no cover - the helper process
    serve()
