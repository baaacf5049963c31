"""Scoring model responses: pluggable scorers on top of the extraction rules, and an explicit failure policy.

How a request ended is one of the outcomes of :mod:`assay.models.outcomes` (answered, unparseable, too long for
the model, refused / empty, timed out, transport error), recorded as the ``status`` of an :class:`Outcome`. A
scorer decides between ``answered`` (with a score in [0, 1]) and ``unparseable``; the model layer has already
decided the others (:func:`score_response` reads them from the response).

What a model failure (unparseable, too long, refused) counts as is a *policy*, chosen by the caller and recorded
on every outcome (``policy`` and ``final_score``):

* ``"wrong"`` (default): ``final_score`` is 0.0, as lm-evaluation-harness and inspect-ai score an answer they
  cannot parse;
* ``"missing"``: ``final_score`` is ``None``; the item stays missing (NaN downstream), never silently 0;
* ``"correct"``: ``final_score`` is 1.0.

Timeouts and transport errors are not answers: their ``final_score`` is ``None`` under every policy (a dead
endpoint must not read as a weak model), and the commands report them and stop or resume.

Why the choice is explicit: the QuickScope release disagrees with its own text. Its metrics record
``accuracy in {1, 0, None}`` plus ``timed_out`` / ``generation_failure`` flags; in *every* shipped
utility a timeout or generation failure returns utility 1.0, and an unparseable answer (no ``\\boxed{}``
found) gets accuracy 0, i.e. wrong. The code comments call these "not a reasoning failure", and the description we
were given says timeouts and unparseable answers are treated as *correct*. Because the status is kept next to the
policy, a study can count each kind (:func:`count_outcomes`) and re-score under another policy
(:func:`apply_policy`) without calling the model again.

The scorers (:func:`exact`, :func:`numeric`, :func:`math_scorer` (``"math"``), :func:`choice`, :func:`label`,
:func:`contains`, :func:`make_scorer`) and their one contract live in :mod:`assay.models.scorers`; the extraction rules
they use in :mod:`assay.models.extract` (both re-exported here). :func:`score_rows` and :func:`score_table` score many
stored answers at once: every method that scores answers calls them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from ..errors import AssayInputError
from .extract import (extract_answer, extract_auto, extract_boxed, extract_choice, extract_label, normalize,
                      parse_number, strip_reasoning)
from .outcomes import (ANSWERED, DEFAULT_POLICY, ENDPOINT_FAILURES, OUTCOMES, POLICIES, REFUSED, Outcome,
                       check_policy as _check_policy, of_response)
from .scorers import (SCORERS, Asked, Scorer, check_references, choice, contains, exact, label, make_scorer,
                      math_scorer, numeric)
from .extract import _check_text

__all__ = [
    "STATUSES",
    "POLICIES",
    "DEFAULT_POLICY",
    "SCORERS",
    "Outcome",
    "Scorer",
    "Asked",
    "extract_boxed",
    "extract_answer",
    "extract_choice",
    "extract_auto",
    "extract_label",
    "strip_reasoning",
    "normalize",
    "parse_number",
    "exact",
    "numeric",
    "math_scorer",
    "check_references",
    "choice",
    "label",
    "contains",
    "make_scorer",
    "apply_policy",
    "score_response",
    "score",
    "score_rows",
    "score_table",
    "count_outcomes",
]

#: the outcomes an :class:`Outcome` can record (:data:`assay.models.outcomes.OUTCOMES`)
STATUSES: tuple[str, ...] = OUTCOMES


# --------------------------------------------------------------------------------------------
# Policy
# --------------------------------------------------------------------------------------------


def apply_policy(outcome: Outcome, policy: str = DEFAULT_POLICY) -> float | None:
    """The score an outcome counts as under ``policy``.

    Answered outcomes keep their score. A model failure (unparseable, too long, refused) maps to 0.0 under
    ``"wrong"`` (the default), ``None`` under ``"missing"``, 1.0 under ``"correct"``. A timeout or transport error
    is ``None`` under every policy: it is not an answer.

    Parameters
    ----------
    outcome : Outcome
        A scored outcome.
    policy : str, optional
        ``"wrong"`` (default), ``"missing"`` or ``"correct"``.

    Returns
    -------
    float or None
        The score, or ``None`` when the outcome is left out.

    Raises
    ------
    AssayInputError
        If ``policy`` is unknown or ``outcome`` is not an Outcome.

    Examples
    --------
    >>> failed = Outcome(None, "unparseable")
    >>> apply_policy(failed), apply_policy(failed, "missing"), apply_policy(failed, "correct")
    (0.0, None, 1.0)
    """
    policy = _check_policy(policy)
    if not isinstance(outcome, Outcome):
        raise AssayInputError(f"apply_policy expects an Outcome; got {type(outcome).__name__}")
    if outcome.status == ANSWERED:
        return outcome.score
    if outcome.status in ENDPOINT_FAILURES:
        return None
    return POLICIES[policy]


def score_response(
    text: str | None,
    error: str | None,
    reference: Any,
    scorer: Any = "exact",
    policy: str = DEFAULT_POLICY,
    *,
    outcome: str | None = None,
    detail: str | None = None,
    prompt: Any = None,
    finish_reason: str | None = None,
) -> Outcome:
    """Score one model response and record the failure policy on the outcome.

    ``outcome`` is what the model layer already knows (``Response.outcome``: ``too_long``, ``refused``,
    ``timeout``, ``transport``), with the server's words in ``detail``. Otherwise ``error`` (the model layer's
    error string, ``None`` when the call succeeded) decides: one mentioning a timeout gives ``timeout``, a
    context-length message ``too_long``, any other ``transport``; the scorer is then not called and ``detail``
    holds the message. A call with no text, or only whitespace, is ``refused`` (the model answered nothing).
    Otherwise ``scorer`` (a name or callable, see :func:`make_scorer`) decides between ``answered`` and
    ``unparseable``.

    Parameters
    ----------
    text : str or None
        The response's text.
    error : str or None
        The model layer's error string, ``None`` when the call succeeded.
    reference : Any
        The reference answer.
    scorer : str or callable, default "exact"
        A scorer name or callable (:func:`make_scorer`).
    policy : str, default DEFAULT_POLICY
        The failure policy (``"wrong"``, ``"missing"`` or ``"correct"``).
    outcome : str, optional
        The outcome the model layer already knows (one of :data:`STATUSES`).
    detail : str, optional
        The server's words about that outcome.
    prompt : str or list, optional
        Lets the ``choice`` scorer read the options it lists and the ``numeric`` scorer the thing the question
        counts.
    finish_reason : str, optional
        The server's (``"length"`` when the answer was cut off by its token limit); lets the ``numeric`` scorer read
        a cut-off answer by its answer markers alone.

    Returns
    -------
    Outcome
        The outcome, carrying ``policy`` and ``final_score = apply_policy(outcome, policy)``.

    Raises
    ------
    AssayInputError
        On an unknown policy or outcome, an ``error`` that is not a string, or a scorer that returns no Outcome.

    Examples
    --------
    >>> score_response("Answer: C", None, "C", "choice")
    Outcome(score=1.0, status='answered', extracted='C', detail='Answer: C', policy='wrong', final_score=1.0)
    >>> score_response(None, "Read timeout", "C", "choice").status
    'timeout'
    """
    policy = _check_policy(policy)
    if error is not None and not isinstance(error, str):
        raise AssayInputError(f"error must be a string from the model layer or None; got {error!r}")
    text = _check_text(text, "score_response")
    if outcome is not None and outcome not in STATUSES:
        raise AssayInputError(f"outcome must be one of {', '.join(STATUSES)} or None; got {outcome!r}")
    pre = of_response({"text": text, "error": error.strip() if error else None, "outcome": outcome})
    if pre is not None:
        why = error if (error and error.strip()) else (detail or ("empty response" if pre == REFUSED else None))
        out = Outcome(None, pre, None, why)
    else:
        out = make_scorer(scorer)(text, reference, Asked(prompt, finish_reason))
        if not isinstance(out, Outcome):
            raise AssayInputError(f"scorer {scorer!r} returned {out!r}, not an Outcome")
    return replace(out, policy=policy, final_score=apply_policy(out, policy))


def score(response: Any, reference: Any, scorer: Any = "exact", policy: str = DEFAULT_POLICY,
          prompt: Any = None) -> Outcome:
    """:func:`score_response` on a :class:`~assay.models.base.Response` (or its dict).

    Text, error, outcome, detail and finish reason are read from it.

    Parameters
    ----------
    response : Response or mapping
        The model's response.
    reference : Any
        The reference answer.
    scorer : str or callable, default "exact"
        A scorer name or callable (:func:`make_scorer`).
    policy : str, default DEFAULT_POLICY
        The failure policy.
    prompt : str or list, optional
        As in :func:`score_response`.

    Returns
    -------
    Outcome
        The scored outcome with its policy and final score.

    Examples
    --------
    >>> score({"text": "The answer is 42.", "error": None}, "42", "numeric")
    Outcome(score=1.0, status='answered', extracted='42', detail='parsed 42.0', policy='wrong', final_score=1.0)
    """
    get = response.get if isinstance(response, Mapping) else (lambda k, d=None: getattr(response, k, d))
    return score_response(get("text"), get("error"), reference, scorer, policy, outcome=get("outcome"),
                          detail=get("detail"), prompt=prompt, finish_reason=get("finish_reason"))


def count_outcomes(outcomes: Iterable[Outcome | Mapping[str, Any]]) -> dict[str, int]:
    """Counts of each outcome, every outcome present: ``{"answered": n, "unparseable": n, ...}``.

    Accepts outcomes or their ``to_dict()`` records (e.g. read back from a journal).

    Parameters
    ----------
    outcomes : iterable of Outcome or Mapping
        Outcomes or their ``to_dict()`` records.

    Returns
    -------
    dict of str to int
        The count of every status.

    Raises
    ------
    AssayInputError
        If an item is not an Outcome or a record with a known status.

    Examples
    --------
    >>> count_outcomes([Outcome(None, "unparseable"), {"status": "answered"}])
    {'answered': 1, 'unparseable': 1, 'too_long': 0, 'refused': 0, 'timeout': 0, 'transport': 0}
    """
    counts = dict.fromkeys(STATUSES, 0)
    for i, o in enumerate(outcomes):
        status = o.status if isinstance(o, Outcome) else o.get("status") if isinstance(o, Mapping) else None
        if status not in counts:
            raise AssayInputError(
                f"count_outcomes: item {i} is not an Outcome with a status in {STATUSES}; got {o!r}"
            )
        counts[status] += 1
    return counts


def score_rows(texts: Iterable[Any], references: Iterable[Any], scorers: Any, policy: str = DEFAULT_POLICY,
               outcomes: Iterable[Any] | None = None, prompts: Iterable[Any] | None = None,
               finish_reasons: Iterable[Any] | None = None, errors: Iterable[Any] | None = None) -> list[Outcome]:
    """Score many stored answers at once (e.g. a history of raw answers read back from a journal or a file).

    Rescoring stored text with better extraction rules needs no model call.

    Parameters
    ----------
    texts : iterable
        The responses' texts (None or NaN: no text).
    references : iterable
        The reference answers, one per text.
    scorers : str, callable or sequence
        One scorer (name or callable) or one per row.
    policy : str, default DEFAULT_POLICY
        The failure policy.
    outcomes : iterable, optional
        The model layer's outcome per row (``Response.outcome``), when known.
    prompts : iterable, optional
        The prompt per row, as in :func:`score_response`.
    finish_reasons : iterable, optional
        The server's finish reason per row, when known.
    errors : iterable, optional
        The model layer's error string per row (a timeout or transport error), when known.

    Returns
    -------
    list of Outcome
        One per row.

    Raises
    ------
    AssayInputError
        When the per-row inputs differ in length.

    Examples
    --------
    >>> [(o.status, o.final_score) for o in score_rows(["Answer: B", "", "Answer: A"], ["B", "B", "B"], "choice")]
    [('answered', 1.0), ('refused', 0.0), ('answered', 0.0)]
    """
    texts, references = list(texts), list(references)
    if len(texts) != len(references):
        raise AssayInputError(f"score_rows: {len(texts)} texts but {len(references)} references")
    per_row = (list(scorers) if isinstance(scorers, (list, tuple)) or hasattr(scorers, "__array__")
               else [scorers] * len(texts))
    if len(per_row) != len(texts):
        raise AssayInputError(f"score_rows: {len(per_row)} scorers for {len(texts)} rows")
    made: dict[Any, Any] = {}
    outs = list(outcomes) if outcomes is not None else [None] * len(texts)
    asked = list(prompts) if prompts is not None else [None] * len(texts)
    finished = list(finish_reasons) if finish_reasons is not None else [None] * len(texts)
    failed = list(errors) if errors is not None else [None] * len(texts)
    if not len(outs) == len(asked) == len(finished) == len(failed) == len(texts):
        raise AssayInputError(f"score_rows: outcomes, prompts, finish_reasons and errors need one entry per text "
                              f"({len(texts)})")
    result = []
    for text, ref, sc, oc, prompt, fin, err in zip(texts, references, per_row, outs, asked, finished, failed):
        key = sc if isinstance(sc, str) else id(sc)
        if key not in made:
            made[key] = make_scorer(sc)
        result.append(score_response(_given(text), _given(err), ref, made[key], policy, outcome=_given(oc),
                                     prompt=prompt, finish_reason=fin if isinstance(fin, str) else None))
    return result


def _given(v: Any) -> Any:
    """None for a missing cell (None or NaN), else the value."""
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else v


def score_table(table: Any, scorers: Any = "exact", policy: str = DEFAULT_POLICY, *, text: str | None = None):
    """Score a table of stored answers, one row each: :func:`score_rows` on its columns.

    Parameters
    ----------
    table : DataFrame
        ``response`` (or ``text``: the answer), ``reference``, and where known ``prompt``, ``finish_reason``,
        ``outcome`` (the model layer's) and ``error``.
    scorers : str, callable or sequence
        One scorer (name or callable) or one per row.
    policy : str, default DEFAULT_POLICY
        The failure policy.
    text : str, optional
        The column of the answers (default ``response``, else ``text``).

    Returns
    -------
    DataFrame
        ``score`` (the final score after the policy; None where the answer has none), ``status``, ``extracted``,
        ``detail``, on the table's index.

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"response": ["Answer: 4", "five"], "reference": ["4", "5"]})
    >>> score_table(t, "numeric")[["score", "status"]].to_dict("list")
    {'score': [1.0, 1.0], 'status': ['answered', 'answered']}
    """
    import pandas as pd

    col = text or ("response" if "response" in table.columns else "text")
    for need in (col, "reference"):
        if need not in table.columns:
            raise AssayInputError(f"score_table: the table has no {need!r} column; columns: "
                                  f"{', '.join(map(str, table.columns))}")
    get = lambda c: table[c].tolist() if c in table.columns else None  # noqa: E731
    outs = score_rows(table[col].tolist(), table["reference"].tolist(), scorers, policy, outcomes=get("outcome"),
                      prompts=get("prompt"), finish_reasons=get("finish_reason"), errors=get("error"))
    return pd.DataFrame({"score": [o.final_score for o in outs], "status": [o.status for o in outs],
                         "extracted": [o.extracted for o in outs], "detail": [o.detail for o in outs]},
                        index=table.index)
