"""The ``Model`` interface: one prompt in, one :class:`Response` out, asynchronously.

A model adapter only knows how to send *one* request. Batching, the cap on requests in flight,
the requests-per-minute limiter, retries with backoff and the journal all live in
:mod:`assay.models.runner`, so every adapter gets them for free. An adapter signals a transient
failure (rate limit, overload, timeout, dropped connection, garbage on the wire) by raising
:class:`RetryableError`; a permanent one (bad request, unknown model) by returning a
``Response`` whose ``error`` is set.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from dataclasses import dataclass, fields
from typing import Any, Callable, Mapping, Protocol, Sequence, Union, runtime_checkable

__all__ = ["Prompt", "Response", "RetryableError", "Model", "CallableModel", "RequestJournal"]

#: A prompt is either a plain user message or a list of chat messages ``{"role": ..., "content": ...}``.
Prompt = Union[str, list]


@dataclass
class Response:
    """One model answer.

    ``latency_s`` is wall time measured on the client for the attempt that produced the answer
    (seconds). Token counts are ``None`` when the backend does not report them. ``error`` is set
    (and ``text`` usually ``None``) when the request failed for good on the endpoint's side (a timeout or a
    transport error: not an answer, not journaled as one, asked again on resume). ``outcome`` names how the
    request ended when the model layer already knows it (:mod:`assay.models.outcomes`: ``too_long``,
    ``refused``, ``timeout``, ``transport``; ``None`` when text came back for the scorer); ``detail`` is the
    server's words for a model-side failure (the context-length message, the refusal). ``attempts`` counts HTTP
    attempts including retries; ``cached`` is true when the answer came from the journal. ``ttft_s`` is the time
    to the first token when the answer was streamed (``None`` otherwise).
    """

    text: str | None
    latency_s: float
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str | None = None
    error: str | None = None
    attempts: int = 1
    cached: bool = False
    outcome: str | None = None
    detail: str | None = None
    ttft_s: float | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_dict(self) -> dict[str, Any]:
        # every field is a scalar: a shallow dict equals dataclasses.asdict, without its recursive deep copy
        return {name: getattr(self, name) for name in _RESPONSE_FIELDS}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Response":
        kw = {k: v for k, v in d.items() if k in _RESPONSE_FIELDS}
        kw.setdefault("text", None)
        kw.setdefault("latency_s", 0.0)
        return cls(**kw)


_RESPONSE_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Response))


class RetryableError(Exception):
    """A transient failure: the runner backs off and retries.

    ``status`` is the HTTP status (``None`` for timeouts, dropped connections, malformed bodies);
    ``retry_after`` the server's ``Retry-After`` in seconds, if it sent one; ``slow_down``: the failure says the
    server cannot take this many requests at once (e.g. it cut a concurrent stream short), so the adaptive
    concurrency reacts as to a 429.
    """

    def __init__(self, status: int | None = None, retry_after: float | None = None, message: str = "", *,
                 timed_out: bool = False, slow_down: bool = False) -> None:
        self.status = status
        self.retry_after = retry_after
        self.timed_out = timed_out
        self.slow_down = slow_down
        self.message = message or (f"HTTP {status}" if status else "transient error")
        super().__init__(self.message)

    @property
    def throttled(self) -> bool:
        """True for 429 / 503, or a failure that says so: the server asks us to slow down (adaptive concurrency
        reacts)."""
        return self.status in (429, 503) or self.slow_down

    def __repr__(self) -> str:
        return f"RetryableError(status={self.status!r}, retry_after={self.retry_after!r}, message={self.message!r})"


@runtime_checkable
class Model(Protocol):
    """What the runner needs from a model.

    ``name`` and ``params()`` define the answer: together with the prompt they form the journal
    key, so ``params()`` must list every request parameter that changes the answer (temperature,
    max tokens, seed, stop, endpoint...) and nothing secret.
    """

    name: str

    def params(self) -> dict[str, Any]: ...

    async def generate(self, prompt: Prompt) -> Response: ...


@runtime_checkable
class RequestJournal(Protocol):
    """What the runner needs of a journal of requests; :class:`assay.models.journal.Journal` (SQLite) is the
    implementation. Writes are operations (:class:`~assay.models.journal.Put`, ``Finish``, ``Claim``, ``Release``,
    ``Bump``) run in one transaction by :meth:`batch`; :meth:`batch_start` stops before the commit, so the runner
    commits on its event loop and makes the commits durable later with one :meth:`sync` for many."""

    def start_run(self, run_id: str | None = None, meta: Mapping | None = None) -> str: ...

    def completed_keys(self, run_id: str, keys: Sequence[str]) -> set: ...

    def get(self, run_id: str, key: str) -> dict | None: ...

    def lookup_any(self, key: str) -> dict | None: ...

    def prepare(self, op: Any) -> Any: ...

    def batch(self, ops: Sequence[Any]) -> list[Any]: ...

    def batch_start(self, ops: Sequence[Any]) -> tuple[list[Any], Callable[[], None]]: ...

    def sync(self) -> None: ...

    def finish_run(self, run_id: str, status: str = "done") -> None: ...


class CallableModel:
    """Wrap a plain Python callable ``prompt -> str`` (sync or ``async``) as a :class:`Model`.

    Sync callables run in a worker thread (``asyncio.to_thread``) so they do not block the event
    loop. The callable may also return a :class:`Response`. If it raises :class:`RetryableError`
    the runner retries; any other exception becomes ``Response(error=...)`` (not retried).
    """

    def __init__(self, fn: Callable[[Prompt], Any], *, name: str | None = None,
                 params: Mapping[str, Any] | None = None) -> None:
        if not callable(fn):
            from ..errors import AssayInputError

            raise AssayInputError(f"CallableModel needs a callable prompt -> str, got {type(fn).__name__}")
        self.fn = fn
        self.name = name or getattr(fn, "__qualname__", None) or type(fn).__name__
        self._params = dict(params or {})
        self._is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
            getattr(fn, "__call__", None))

    def params(self) -> dict[str, Any]:
        return dict(self._params)

    async def generate(self, prompt: Prompt) -> Response:
        t0 = time.perf_counter()
        try:
            if self._is_async:
                out = await self.fn(prompt)
            else:
                out = await asyncio.to_thread(self.fn, prompt)
                if inspect.isawaitable(out):
                    out = await out
        except RetryableError:
            raise
        except Exception as exc:  # a permanent failure of this prompt, recorded, not retried
            return Response(text=None, latency_s=time.perf_counter() - t0, error=f"{type(exc).__name__}: {exc}")
        latency = time.perf_counter() - t0
        if isinstance(out, Response):
            if not out.latency_s:
                out.latency_s = latency
            return out
        return Response(text=None if out is None else str(out), latency_s=latency, finish_reason="stop")

    def __repr__(self) -> str:
        return f"CallableModel(name={self.name!r}, params={self._params!r})"
