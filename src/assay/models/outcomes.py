"""The outcome vocabulary: how one request to a model ended, in six words used by every live path.

Every request that query, FAQ, QuickScope and the judge send ends in exactly one outcome:

=============== ==================================================================== ==============================
outcome         what happened                                                        whose failure
=============== ==================================================================== ==============================
``answered``    text came back and the scorer read an answer from it                 -- (scored right or wrong)
``unparseable`` text came back but no answer of the expected shape is in it          the model's, on this item
``too_long``    the prompt does not fit the model's context window (an HTTP 400      the model's, on this item
                context-length reply, or a prompt over a known window found before
                sending)
``refused``     the model refused (an OpenAI ``refusal``) or answered nothing        the model's, on this item
                (empty text, or no text at all)
``timeout``     no answer within the time limit, after the retries                   the endpoint's
``transport``   the request did not go through: connection refused or dropped,       the endpoint's
                5xx after the retries, a body that is not OpenAI JSON, another
                permanent HTTP error (401, 404 unknown model, ...)
=============== ==================================================================== ==============================

The first four are *answers*: the model's behaviour on that item, journaled as completed (a resumed run never
sends them again) and scored by the failure policy (:data:`POLICIES`; ``wrong`` by default, as
lm-evaluation-harness and inspect-ai score an answer they cannot parse). The last two say nothing about the model:
they are never journaled as answers (a resumed run asks again), never scored by a policy (always missing), and
they are the only outcomes that count toward "the endpoint looks down" (:data:`ENDPOINT_FAILURES`).

:func:`of_response` reads the outcome of a :class:`~assay.models.base.Response` before scoring (``None``: text
to score). :func:`is_context_length` recognises the context-length replies of llama.cpp, llama-cpp-python, vLLM,
Ollama, OpenAI and LiteLLM. :func:`headline` is the one sentence every command prints under its accuracy.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any, Iterable, Mapping

from ..errors import AssayInputError

__all__ = ["ANSWERED", "UNPARSEABLE", "TOO_LONG", "REFUSED", "TIMEOUT", "TRANSPORT", "OUTCOMES", "MODEL_FAILURES",
           "ENDPOINT_FAILURES", "POLICIES", "DEFAULT_POLICY", "LABELS", "is_context_length", "of_response",
           "headline", "counts_of", "Outcome", "check_policy", "SHAKY_SHARE", "shaky"]

ANSWERED = "answered"
UNPARSEABLE = "unparseable"
TOO_LONG = "too_long"
REFUSED = "refused"
TIMEOUT = "timeout"
TRANSPORT = "transport"

#: every outcome, in the order they are reported
OUTCOMES: tuple[str, ...] = (ANSWERED, UNPARSEABLE, TOO_LONG, REFUSED, TIMEOUT, TRANSPORT)
#: the model's failures on an item: scored by the policy, counted, never a reason to stop a run
MODEL_FAILURES = frozenset({UNPARSEABLE, TOO_LONG, REFUSED})
#: the endpoint's failures: always missing, and the only ones that can say "the endpoint looks down"
ENDPOINT_FAILURES = frozenset({TIMEOUT, TRANSPORT})

#: what a model failure counts as: ``wrong`` (0, the default), ``missing`` (left out) or ``correct`` (1)
POLICIES: dict[str, float | None] = {"wrong": 0.0, "missing": None, "correct": 1.0}
DEFAULT_POLICY = "wrong"

#: plain words for each outcome, as printed
LABELS: dict[str, str] = {ANSWERED: "answered", UNPARSEABLE: "unparseable", TOO_LONG: "too long for the model",
                          REFUSED: "refused or empty", TIMEOUT: "timed out", TRANSPORT: "transport errors"}

# context-length replies, lower-cased: llama-cpp-python "Requested tokens (2100) exceed context window of 2048",
# llama.cpp server "the request exceeds the available context size", vLLM "This model's maximum context length is
# 2048 tokens", OpenAI "context_length_exceeded", Ollama / others "prompt is too long", "input is too long"
_CONTEXT = re.compile(
    r"context[ _-]?(?:length|window|size)|maximum context|context_length_exceeded|exceeds? (?:the )?(?:available )?"
    r"context|n_ctx|prompt is too long|input is too long|too many tokens|reduce the length of the (?:messages|prompt)"
    r"|maximum (?:input|prompt) length|string_above_max_length")


def is_context_length(status: int | None, message: str | None) -> bool:
    """True when an HTTP error says the prompt does not fit the model's context window.

    That is 400 / 413 / 422 with a context-length message; the status alone is not enough, a 400 can be any bad
    request.

    Parameters
    ----------
    status : int or None
        The HTTP status.
    message : str or None
        The error message.

    Returns
    -------
    bool
        Whether the error is a context-length error.

    Examples
    --------
    >>> is_context_length(400, "This model's maximum context length is 4096 tokens")
    True
    >>> is_context_length(400, "bad request")
    False
    """
    if status not in (400, 413, 422) or not message:
        return False
    return bool(_CONTEXT.search(message.lower()))


def of_response(resp: Any) -> str | None:
    """The outcome a response already has before any scoring, or ``None`` when it holds text for the scorer.

    Reads ``resp.outcome`` when the model layer set it (``too_long``, ``refused``, ``timeout``, ``transport``);
    otherwise an error message that mentions a timeout is ``timeout``, any other error ``transport``, and a
    response with no text or only whitespace ``refused``. Accepts a :class:`~assay.models.base.Response` or its
    ``to_dict()``.

    Parameters
    ----------
    resp : Response or Mapping
        A response or its ``to_dict()``.

    Returns
    -------
    str or None
        The outcome name, or ``None``.

    Examples
    --------
    >>> of_response({"text": "  "}), of_response({"error": "Read timed out"}), of_response({"text": "42"})
    ('refused', 'timeout', None)
    """
    get = resp.get if isinstance(resp, Mapping) else (lambda k, d=None: getattr(resp, k, d))
    outcome = get("outcome")
    if outcome in OUTCOMES and outcome != ANSWERED:
        return outcome
    error = get("error")
    if error:
        low = str(error).lower()
        if "timeout" in low or "timed out" in low:
            return TIMEOUT
        if is_context_length(400, low):
            return TOO_LONG
        return TRANSPORT
    text = get("text")
    if text is None or not str(text).strip():
        return REFUSED
    return None


def counts_of(outcomes: Iterable[Any]) -> dict[str, int]:
    """``{outcome: n}`` for every outcome (zeros included), from outcome names, Outcomes or their dicts.

    Parameters
    ----------
    outcomes : iterable
        Outcome names, Outcomes (their ``status``) or their dicts (their ``"status"``).

    Returns
    -------
    dict of str to int
        The count of every outcome in :data:`OUTCOMES`.

    Raises
    ------
    AssayInputError
        If an item is not an outcome.

    Examples
    --------
    >>> counts_of(["answered", "unparseable", "answered"])
    {'answered': 2, 'unparseable': 1, 'too_long': 0, 'refused': 0, 'timeout': 0, 'transport': 0}
    """
    from ..errors import AssayInputError

    counts = dict.fromkeys(OUTCOMES, 0)
    for i, o in enumerate(outcomes):
        name = o if isinstance(o, str) else (o.get("status") if isinstance(o, Mapping) else getattr(o, "status", None))
        if name not in counts:
            raise AssayInputError(f"item {i}: {o!r} is not an outcome; outcomes are {', '.join(OUTCOMES)}")
        counts[name] += 1
    return counts


def headline(counts: Mapping[str, int], policy: str) -> str:
    """One sentence: how many answers were not scored as given and what they counted as.

    Every model failure is named whatever the policy (each kind with its count, zeros included), so an accuracy
    never hides them; requests that got no answer (timeouts, transport errors) are said apart, as missing.

    Parameters
    ----------
    counts : Mapping of str to int
        ``{outcome: n}``, as from :func:`counts_of`.
    policy : str
        How model failures are scored: ``"wrong"``, ``"missing"`` or ``"correct"``.

    Returns
    -------
    str
        The sentence.

    Examples
    --------
    >>> print(headline(counts_of(["answered", "unparseable", "timeout"]), "wrong"))
    of 3 requests: 1 unparseable, 0 too long for the model, 0 refused or empty: scored as wrong (policy 'wrong');
    1 timed out: missing (not answers)
    """
    total = sum(int(v) for v in counts.values())
    model = [(k, int(counts.get(k, 0))) for k in (UNPARSEABLE, TOO_LONG, REFUSED)]
    endpoint = [(k, int(counts.get(k, 0))) for k in (TIMEOUT, TRANSPORT) if counts.get(k, 0)]
    what = {"wrong": "scored as wrong", "missing": "left out of the accuracy", "correct": "scored as correct"}[policy]
    parts = ", ".join(f"{n} {LABELS[k]}" for k, n in model)
    line = f"of {total} requests: {parts}: {what} (policy {policy!r})"
    if endpoint:
        line += "; " + ", ".join(f"{n} {LABELS[k]}" for k, n in endpoint) + ": missing (not answers)"
    return line


@dataclass(frozen=True)
class Outcome:
    """The result of scoring one response.

    Parameters
    ----------
    score : float or None
        The scorer's score in [0, 1] when ``status == "answered"``; ``None`` otherwise.
    status : str
        One of the outcomes: ``"answered"``, ``"unparseable"``, ``"too_long"``, ``"refused"``, ``"timeout"``,
        ``"transport"`` (:mod:`assay.models.outcomes`).
    extracted : str or None
        The answer the scorer extracted (``None`` when nothing was extracted).
    detail : str or None
        Why: the model layer's error message, the reason extraction failed, etc.
    policy : str or None
        The failure policy applied by :func:`score_response` (``None`` until one is applied).
    final_score : float or None
        The score after the policy: ``score`` for answered outcomes; for model failures ``0.0`` / ``None`` /
        ``1.0`` under ``"wrong"`` / ``"missing"`` / ``"correct"``; ``None`` for timeouts and transport errors.
    """

    score: float | None
    status: str
    extracted: str | None = None
    detail: str | None = None
    policy: str | None = None
    final_score: float | None = None

    def __post_init__(self) -> None:
        if self.status not in OUTCOMES:
            raise AssayInputError(
                f"Outcome status {self.status!r} is not one of {', '.join(map(repr, OUTCOMES))}"
            )
        if self.status == ANSWERED:
            object.__setattr__(self, "score", _check_score(self.score, "score"))
        elif self.score is not None:
            raise AssayInputError(
                f"an Outcome with status {self.status!r} has no score; got score={self.score!r} "
                "(use status 'answered' for a scored response)"
            )
        if self.policy is not None:
            check_policy(self.policy)
        if self.final_score is not None:
            object.__setattr__(self, "final_score", _check_score(self.final_score, "final_score"))

    @property
    def ok(self) -> bool:
        """True when the response was scored (status ``answered``)."""
        return self.status == ANSWERED

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (JSON-serialisable) of all fields."""
        return asdict(self)


def _check_score(value: Any, name: str) -> float:
    if isinstance(value, bool):
        value = float(value)
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise AssayInputError(f"Outcome {name} must be a number in [0, 1]; got {value!r}") from None
    if not (0.0 <= x <= 1.0):  # also rejects NaN
        raise AssayInputError(f"Outcome {name} must be a number in [0, 1]; got {value!r}")
    return x


def check_policy(policy: Any) -> str:
    if not isinstance(policy, str) or policy not in POLICIES:
        raise AssayInputError(
            f"unknown failure policy {policy!r}; accepted: 'wrong' (unparseable, too long and refused answers "
            "count as 0, the default), 'missing' (they are left out), 'correct' (they count as 1)"
        )
    return policy


#: a claim resting on answers of which more than this share are unparseable (or refused, or too long) or cut off at the
#: token limit carries a warning
SHAKY_SHARE = 0.2


def shaky(c: Mapping[str, int] | None) -> str | None:
    """Why claims resting on these answers need a warning (more than a fifth of them unparseable, refused or too
    long, or cut off: ``c`` has the outcome counts and ``cut_off``), or None.

    Examples
    --------
    >>> shaky({"answered": 14, "unparseable": 16, "cut_off": 15})
    '16 of 30 answers unparseable, refused or too long and 15 of 30 cut off at the token limit'
    >>> shaky({"answered": 29, "unparseable": 1}) is None
    True
    """
    if c is None:
        return None
    total = sum(int(c.get(o, 0)) for o in OUTCOMES)
    if not total:
        return None
    failed = sum(int(c.get(o, 0)) for o in (UNPARSEABLE, TOO_LONG, REFUSED))
    cut = int(c.get("cut_off", 0))
    said = []
    if failed > SHAKY_SHARE * total:
        said.append(f"{failed} of {total} answers unparseable, refused or too long")
    if cut > SHAKY_SHARE * total:
        said.append(f"{cut} of {total} cut off at the token limit")
    return " and ".join(said) or None
