"""What a journal record is: the request key (the sha256 of a request's canonical JSON, secrets dropped), the fields
read from a stored response (text, finish reason, latency, tokens, error, outcome), and the write operations of
:meth:`assay.models.journal.Journal.batch`. The journal itself (:mod:`assay.models.journal`) stores them."""

from __future__ import annotations

import datetime as _dt
import json
import math
from dataclasses import dataclass, field
from typing import Any, Mapping

from ..errors import AssayInputError
from .secrets import mask_secrets, scrub

__all__ = ["request_key", "Put", "Finish", "Claim", "Release", "Bump", "Prepared", "Operation"]

# -- canonical JSON and the request key ------------------------------------------------------------------


def _default(o: Any) -> Any:
    # numpy scalars / arrays, sets, paths: anything a caller may reasonably pass as a parameter
    if hasattr(o, "tolist"):
        return o.tolist()
    if hasattr(o, "item"):
        return o.item()
    if isinstance(o, (set, frozenset)):
        return sorted(o, key=repr)
    if isinstance(o, (bytes, bytearray)):
        return o.decode("utf-8", "replace")
    if isinstance(o, (_dt.datetime, _dt.date)):
        return o.isoformat()
    return str(o)


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_default)


def _dumps(obj: Any) -> str:
    return mask_secrets(_canonical(scrub(obj)))


def request_key(model: str, prompt: Any, params: Mapping[str, Any] | None) -> str:
    """sha256 hex of the canonical JSON of ``{"model", "prompt", "params"}``, secrets dropped from params.

    Canonical: ``sort_keys=True``, ``separators=(",", ":")``, ``ensure_ascii=False``; so the key does
    not depend on dict order, and tuples and lists hash alike.

    Parameters
    ----------
    model : str
        The model's name.
    prompt : str or list
        The prompt (text or chat messages).
    params : mapping, optional
        The request parameters (None counts as ``{}``).

    Returns
    -------
    str
        64 hex characters.

    Raises
    ------
    AssayInputError
        When ``params`` is not a mapping.

    Examples
    --------
    >>> request_key("m", "Hi", {"temperature": 0, "api_key": "x"}) == request_key("m", "Hi", {"temperature": 0})
    True
    >>> request_key("m", ["a", "b"], None) == request_key("m", ("a", "b"), {})
    True
    """
    import hashlib

    if params is None:
        params = {}
    if not isinstance(params, Mapping):
        raise AssayInputError(f"request params must be a mapping, got {type(params).__name__}")
    payload = {"model": model, "prompt": prompt, "params": scrub(params)}
    return hashlib.sha256(_canonical(payload).encode("utf-8")).hexdigest()


def _int_or_none(v: Any) -> int | None:
    try:
        if v is None or isinstance(v, bool):
            return None
        f = float(v)
        return int(f) if math.isfinite(f) else None
    except (TypeError, ValueError):
        return None


def _float_or_none(v: Any) -> float | None:
    try:
        if v is None or isinstance(v, bool):
            return None
        f = float(v)
        return f if math.isfinite(f) else None
    except (TypeError, ValueError):
        return None


def _first_choice(response: Mapping) -> Mapping:
    choices = response.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], Mapping):
        return choices[0]
    return {}


def _response_fields(response: Mapping) -> dict[str, Any]:
    usage = response.get("usage") if isinstance(response.get("usage"), Mapping) else {}
    err = response.get("error")
    if err is not None and not isinstance(err, str):
        err = _canonical(err)
    latency = response.get("latency_s", response.get("latency"))
    return {
        "latency_s": _float_or_none(latency),
        "prompt_tokens": _int_or_none(usage.get("prompt_tokens", response.get("prompt_tokens"))),
        "completion_tokens": _int_or_none(usage.get("completion_tokens", response.get("completion_tokens"))),
        "error": (mask_secrets(err) if err else None),
    }


def _text_of(response: Mapping) -> Any:
    if "text" in response:
        return response["text"]
    ch = _first_choice(response)
    msg = ch.get("message")
    if isinstance(msg, Mapping) and "content" in msg:
        return msg["content"]
    return ch.get("text")


def _outcome_of(response: Mapping, error: Any) -> str | None:
    """How the request ended before scoring (:func:`assay.models.outcomes.of_response`), ``None`` for text to score."""
    from .outcomes import of_response

    return of_response({"text": _text_of(response), "error": error, "outcome": response.get("outcome")})


def _as_str(v: Any) -> str | None:
    if v is None:
        return None
    return v if isinstance(v, str) else _canonical(v)


# -- the write operations of Journal.batch ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Put:
    """Record an answer. Result ``"stored"``, or ``"duplicate"`` when a completed answer was there already: the first
    completed answer wins (the new one, paid for, is thrown away and counted); a stored error may be replaced."""
    run_id: str
    key: str
    request: Mapping[str, Any]
    response: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Finish(Put):
    """The runner's :class:`Put`: also adds the request's counters (``requests``, ``timeouts``) and, when the response
    is an error, releases ``owner``'s claim on the key (a claim on an answered key is spent: it yields ``"done"``, and
    :meth:`Journal.finish_run` deletes it)."""
    counts: Mapping[str, int] = field(default_factory=dict)
    owner: str | None = None


@dataclass(frozen=True, slots=True)
class Claim:
    """Take ``key`` for ``owner`` for ``ttl_s`` seconds, so two processes on one run never pay twice for it. Result
    ``"claimed"``, ``"done"`` (answered already) or ``"busy"`` (another live owner holds it). A claim whose owner is a
    dead process on this host, or whose lease expired, is taken over."""
    run_id: str
    key: str
    owner: str
    ttl_s: float


@dataclass(frozen=True, slots=True)
class Release:
    """Give back ``owner``'s claim on ``key``."""
    run_id: str
    key: str
    owner: str


@dataclass(frozen=True, slots=True)
class Bump:
    """Add ``counts`` (counter name -> n) to the run's counters."""
    run_id: str
    counts: Mapping[str, int]


@dataclass(frozen=True, slots=True)
class Prepared:
    """A :class:`Put` or :class:`Finish` with its record serialised (:meth:`Journal.prepare`): the row to write and
    whether it is a completed answer (not an error)."""
    op: Put
    row: tuple
    ok: bool


Operation = Put | Claim | Release | Bump | Prepared


def _checked_record(key: Any, request: Any, response: Any) -> tuple[dict, dict]:
    """Refuse a malformed record (empty key, non-mapping request or response); return the response with secrets
    scrubbed and its typed fields (latency, tokens, error)."""
    if not isinstance(key, str) or not key:
        raise AssayInputError(f"record key must be a non-empty string (see request_key), got {key!r}")
    if not isinstance(request, Mapping) or not isinstance(response, Mapping):
        raise AssayInputError("request and response must be mappings (dicts), got "
                              f"{type(request).__name__} and {type(response).__name__}")
    clean = scrub(dict(response))
    return clean, _response_fields(clean)
