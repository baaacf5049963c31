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

Built-in scorers: :func:`exact`, :func:`numeric`, :func:`math_scorer` (``"math"``), :func:`choice`, :func:`label`,
:func:`contains`;
:func:`make_scorer` builds one by name or wraps a user callable. The extraction rules they use live in
:mod:`assay.models.extract` (re-exported here).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any, Protocol, runtime_checkable

from ..errors import AssayInputError
from .extract import (EXTRACTORS, extract_answer, extract_auto, extract_boxed, extract_choice, extract_label,
                      extract_math, extract_number,
                      normalize, parse_number, parse_options, resolve_extract, strip_reasoning)
from .extract import _choice_letters, _choice_with_reason, _letter_in, _name, _check_text, _label_of
from .outcomes import (ANSWERED, DEFAULT_POLICY, ENDPOINT_FAILURES, OUTCOMES, POLICIES, REFUSED, UNPARSEABLE,
                       of_response)

__all__ = [
    "STATUSES",
    "POLICIES",
    "DEFAULT_POLICY",
    "SCORERS",
    "Outcome",
    "Scorer",
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
    "count_outcomes",
]

#: the outcomes an :class:`Outcome` can record (:data:`assay.models.outcomes.OUTCOMES`)
STATUSES: tuple[str, ...] = OUTCOMES


# --------------------------------------------------------------------------------------------
# Outcome
# --------------------------------------------------------------------------------------------


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
        if self.status not in STATUSES:
            raise AssayInputError(
                f"Outcome status {self.status!r} is not one of {', '.join(map(repr, STATUSES))}"
            )
        if self.status == ANSWERED:
            object.__setattr__(self, "score", _check_score(self.score, "score"))
        elif self.score is not None:
            raise AssayInputError(
                f"an Outcome with status {self.status!r} has no score; got score={self.score!r} "
                "(use status 'answered' for a scored response)"
            )
        if self.policy is not None:
            _check_policy(self.policy)
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


def _check_policy(policy: Any) -> str:
    if not isinstance(policy, str) or policy not in POLICIES:
        raise AssayInputError(
            f"unknown failure policy {policy!r}; accepted: 'wrong' (unparseable, too long and refused answers "
            "count as 0, the default), 'missing' (they are left out), 'correct' (they count as 1)"
        )
    return policy


# --------------------------------------------------------------------------------------------
# Scorers
# --------------------------------------------------------------------------------------------


@runtime_checkable
class Scorer(Protocol):
    """Anything called as ``scorer(text, reference) -> Outcome``.

    ``text`` is the model's response (``None`` when there was none); ``reference`` the item's
    reference answer. A scorer returns status ``"answered"`` with a score in [0, 1], or ``"unparseable"``
    when it cannot find an answer in the text. Timeouts and generation failures are handled before
    the scorer is called (:func:`score_response`).
    """

    def __call__(self, text: str | None, reference: Any) -> Outcome: ...


def _references(reference: Any, where: str) -> list[Any]:
    """A reference, or a list / tuple / set of acceptable references."""
    refs = list(reference) if isinstance(reference, (list, tuple, set, frozenset)) else [reference]
    if not refs or any(r is None or isinstance(r, bool) for r in refs):
        raise AssayInputError(
            f"{where} scorer: reference must be a string / number or a non-empty list of them; "
            f"got {reference!r}"
        )
    return refs


class _Base:
    name = "scorer"

    def __init__(self, extract: Any) -> None:
        self.extract = resolve_extract(extract)

    def _extracted(self, text: str | None, cut_off: bool = False, question: Any = None
                   ) -> tuple[str | None, Outcome | None]:
        text = _check_text(text, f"{self.name} scorer")
        if text is None or not text.strip():
            return None, Outcome(None, "unparseable", None, "empty response")
        # the number extractor also reads what it knows of the request: a response cut off by its token limit (its
        # last sentence is unfinished work, not a conclusion) and the question (what it counts); the other
        # extractors read the text alone
        if self.extract is extract_number:
            value = extract_number(text, cut_off=cut_off, question=question)
        else:
            value = self.extract(text)
        if value is None:
            return None, Outcome(None, "unparseable", None, f"no answer found by {_name(self.extract)}")
        return str(value), None

    def check_reference(self, reference: Any) -> list[Any]:
        """The reference(s) this scorer compares with; AssayInputError for one it cannot use."""
        return _references(reference, self.name)

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self._params().items())
        return f"{self.name}({params})"

    def _params(self) -> dict[str, Any]:
        return {"extract": _name(self.extract)}


def _finite(value: Any, message: str, *, above: float, strict: bool) -> float:
    """A scorer's numeric parameter: finite and above ``above`` (strictly or not), else AssayInputError."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        x = float("nan")
    if not (math.isfinite(x) and (x > above if strict else x >= above)):
        raise AssayInputError(f"{message}; got {value!r}")
    return x


class _Exact(_Base):
    name = "exact"

    def __call__(self, text: str | None, reference: Any) -> Outcome:
        refs = [normalize(r) for r in _references(reference, self.name)]
        value, failed = self._extracted(text)
        if failed:
            return failed
        got = normalize(value)
        return Outcome(1.0 if got in refs else 0.0, ANSWERED, value, f"normalized {got!r}")


class _Numeric(_Base):
    name = "numeric"

    def __init__(self, tol: float, extract: Any) -> None:
        super().__init__(extract)
        self.tol = _finite(tol, "numeric scorer tol must be a finite number >= 0", above=0.0, strict=False)

    def _params(self) -> dict[str, Any]:
        return {"tol": self.tol, **super()._params()}

    def check_reference(self, reference: Any) -> list[float]:
        """The reference(s) as numbers; AssayInputError when one is not a plain number (a LaTeX command, a
        variable or an operator: ``2\\pi``, ``2x``, ``x^2+1``), which the ``math`` scorer reads."""
        refs = []
        for r in _references(reference, self.name):
            if isinstance(r, (int, float)):
                x = float(r)
            else:
                why = _not_plain_number(str(r))
                if why:
                    raise AssayInputError(f"numeric scorer: reference {r!r} is not a plain number ({why}); score "
                                          "it with the math scorer (scorer='math'), which compares answers by value")
                x = parse_number(str(r))
            if x is None or not math.isfinite(x):
                raise AssayInputError(f"numeric scorer: reference {r!r} is not a finite number (for symbolic "
                                      "answers use the math scorer, scorer='math')")
            refs.append(x)
        return refs

    def __call__(self, text: str | None, reference: Any, cut_off: bool = False, question: Any = None) -> Outcome:
        refs = self.check_reference(reference)
        value, failed = self._extracted(text, cut_off, question)
        if failed:
            return failed
        x = parse_number(value)
        if x is None or not math.isfinite(x):
            return Outcome(None, "unparseable", value, "no number in the extracted answer")
        # absolute tolerance near 0, relative for large references; a percentage answer ("50%") is also read as
        # the fraction it stands for (0.5), as a reader of "what fraction ..." or "what percent ..." would
        xs = (x, x / 100.0) if value.rstrip().endswith("%") else (x,)
        hit = any(abs(v - r) <= self.tol * max(1.0, abs(r)) for r in refs for v in xs)
        return Outcome(1.0 if hit else 0.0, ANSWERED, value, f"parsed {x!r}")


#: what makes a reference not a plain number: a LaTeX command (other than a fraction of numbers, a percent or a
#: currency sign, thin spaces and text wrappers), a power, an operator between two operands, an equals sign, a
#: variable written against a number ("2x") or alone
_REF_COMMAND = re.compile(r"\\(?!(?:[dt]?frac|text|textrm|mathrm|mbox)\b|[%$,;!: ])[A-Za-z]+")
_REF_OPERATOR = re.compile(r"[\^=*\u00d7\u00f7]|[\w)}]\s*[-+\u2212]\s*[\w(\\]|[(\[{](?![^{}]*\}\s*\{)")


def _not_plain_number(r: str) -> str | None:
    s = r.strip()
    if _REF_COMMAND.search(s):
        return "it has the LaTeX command " + _REF_COMMAND.search(s).group(0)
    bare = re.sub(r"\\[dt]?frac\s*\{[^{}]*\}\s*\{[^{}]*\}|\\(?:text|textrm|mathrm|mbox)\s*\{[^{}]*\}", "1", s)
    bare = re.sub(r"(\d)[eE][-+]?\d+", r"\1", bare)  # scientific notation: 2.5e-3
    if _REF_OPERATOR.search(bare.lstrip("-+\u2212 ")):
        return "it has an operator or brackets"
    if re.search(r"\d[A-Za-z](?![A-Za-z])", bare) or re.fullmatch(r"[-+]?[A-Za-z]", bare.strip()):
        return "it has a variable"
    return None


class _Math(_Base):
    name = "math"

    def __init__(self, timeout: float, extract: Any) -> None:
        super().__init__(extract)
        self.timeout = _finite(timeout, "math scorer timeout must be a number of seconds > 0", above=0.0, strict=True)
        self._read: dict[str, str] = {}

    def _params(self) -> dict[str, Any]:
        return {"timeout": self.timeout, **super()._params()}

    def check_reference(self, reference: Any) -> list[str]:
        """The reference(s) as text, each read by math-verify; AssayInputError for one it cannot read (or that
        takes longer than ``timeout`` to read), so that it is never compared as something else."""
        from .mathverify import TIMEOUT, parse_answer

        refs = []
        for r in _references(reference, self.name):
            r = repr(r) if isinstance(r, float) else str(r)
            if r not in self._read:
                got = parse_answer(r, self.timeout)
                if got is None or got == TIMEOUT or not r.strip():
                    why = f"reading it took longer than {self.timeout:g} s" if got == TIMEOUT else "it reads nothing"
                    raise AssayInputError(f"math scorer: math-verify cannot read the reference {r!r} ({why}); write "
                                          "it as LaTeX or a plain expression, e.g. \\frac{3}{4}, 2\\sqrt{2}, (1, 2)")
                self._read[r] = got
            refs.append(r)
        return refs

    def __call__(self, text: str | None, reference: Any, cut_off: bool = False, question: Any = None) -> Outcome:
        from .mathverify import TIMEOUT, same_answer

        refs = self.check_reference(reference)
        text = _check_text(text, "math scorer")
        if text is None or not text.strip():
            return Outcome(None, UNPARSEABLE, None, "empty response")
        value = extract_math(text, cut_off=cut_off) if self.extract is extract_math else self.extract(text)
        if value is None:
            return Outcome(None, UNPARSEABLE, None, f"no answer found by {_name(self.extract)}")
        value = str(value)
        got = same_answer(refs, value, self.timeout)
        if got == TIMEOUT:
            return Outcome(None, UNPARSEABLE, value, f"math-verify took longer than {self.timeout:g} s to read it")
        if got is None:
            return Outcome(None, UNPARSEABLE, value, "math-verify reads no mathematical answer in it")
        hit, canonical = got
        if hit and _restates(value, question):
            return Outcome(0.0, ANSWERED, value, f"read {canonical}: it restates the question's own expression")
        return Outcome(1.0 if hit else 0.0, ANSWERED, value, f"read {canonical}")


_MATH_SPAN = re.compile(r"\$\$(.+?)\$\$|\$([^$]+?)\$|\\\((.+?)\\\)", re.DOTALL)
_LAST_PROBLEM = re.compile(r"^[ \t]*(?:#+[ \t]*)?(?:Problem|Question|Q)[ \t]*\d*[ \t]*[:.]", re.IGNORECASE | re.MULTILINE)
_PLAIN_TOKEN = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?:/\d+)?%?(?![\w.])")


def _plain_form(s: str) -> str:
    """A maths text with its spelling differences removed, to tell a restatement: ``\\frac{a}{b}`` -> ``a/b``,
    ``\\dfrac`` -> ``\\frac``, no spaces, ``\\left`` / ``\\right`` / ``$`` dropped, ``\\cdot`` / ``\\times`` -> ``*``."""
    s = s.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac").replace("\\left", "").replace("\\right", "")
    s = re.sub(r"\\frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}", r"(\1)/(\2)", s)
    s = re.sub(r"\((\w+)\)/\((\w+)\)", r"\1/\2", s)
    s = s.replace("\\cdot", "*").replace("\\times", "*").replace("\\%", "%").replace("$", "")
    return re.sub(r"\s+", "", s).rstrip(".").lower()


def _restates(value: str, question: Any) -> bool:
    """True when a maths answer is the question's own expression written back ("0.5" to "What is 0.5 as a
    fraction?", ``\\sqrt{8}`` to "Simplify $\\sqrt{8}$"): equal by value to the reference only because the question
    is a conversion or a simplification, which the answer did not do."""
    if isinstance(question, (list, tuple)):  # chat messages: the last user message
        users = [m.get("content") for m in question if isinstance(m, dict) and m.get("role") == "user"]
        question = users[-1] if users else None
    if not isinstance(question, str) or not value:
        return False
    # a few-shot prompt ends with the question asked; the worked examples before it are not that question
    question = _LAST_PROBLEM.split(question)[-1]
    v = _plain_form(value)
    spans = [next(g for g in m.groups() if g is not None) for m in _MATH_SPAN.finditer(question)]
    outside = _MATH_SPAN.sub(" ", question)
    return any(v == _plain_form(x) for x in spans + _PLAIN_TOKEN.findall(outside))


class _Choice(_Base):
    name = "choice"

    def __init__(self, choices: Any, extract: Any) -> None:
        self.letters = _choice_letters(choices)
        self.extract = None if extract is None else resolve_extract(extract)

    def _params(self) -> dict[str, Any]:
        return {"choices": self.letters, "extract": _name(self.extract) if self.extract else None}

    def check_reference(self, reference: Any) -> list[str]:
        """The reference letter(s); AssayInputError for one that is not a valid letter."""
        refs = []
        for r in _references(reference, self.name):
            letter = _letter_in(str(r), self.letters)[0] if isinstance(r, str) else None
            if letter is None:
                raise AssayInputError(
                    f"choice scorer: reference {r!r} is not one of the letters {self.letters} "
                    "(give the letter, e.g. 'C', not an index)"
                )
            refs.append(letter)
        return refs

    def __call__(self, text: str | None, reference: Any, options: dict[str, str] | None = None) -> Outcome:
        refs = self.check_reference(reference)
        text = _check_text(text, "choice scorer")
        if text is not None and self.extract is not None:
            text = self.extract(text)
        letter, why = _choice_with_reason(text, self.letters, options)
        if letter is None:
            return Outcome(None, "unparseable", None, why)
        return Outcome(1.0 if letter in refs else 0.0, ANSWERED, letter, why)


class _Contains(_Base):
    name = "contains"

    def __call__(self, text: str | None, reference: Any) -> Outcome:
        refs = _references(reference, self.name)
        value, failed = self._extracted(text)
        if failed:
            return failed
        hay_raw, hay = " ".join(value.lower().split()), normalize(value)
        hit = False
        for r in refs:
            raw, norm = " ".join(str(r).lower().split()), normalize(r)
            if (raw and raw in hay_raw) or (norm and norm in hay):
                hit = True
                break
        return Outcome(1.0 if hit else 0.0, ANSWERED, value, None)


class _Label(_Base):
    name = "label"

    def __init__(self, labels: Any) -> None:
        from .extract import _label_table

        self.table = _label_table(labels)
        self.labels = labels
        self.extract = extract_label

    def _params(self) -> dict[str, Any]:
        return {"labels": self.labels}

    def check_reference(self, reference: Any) -> list[str]:
        """The reference label(s); AssayInputError for one that is none of the labels."""
        refs = []
        for r in _references(reference, self.name):
            lab = _label_of(str(r), self.table)
            if lab is None:
                raise AssayInputError(f"label scorer: reference {r!r} is none of the labels "
                                      f"{sorted(set(self.table.values()))}")
            refs.append(lab)
        return refs

    def __call__(self, text: str | None, reference: Any) -> Outcome:
        refs = self.check_reference(reference)
        text = _check_text(text, "label scorer")
        if text is None or not text.strip():
            return Outcome(None, UNPARSEABLE, None, "empty response")
        got = extract_label(text, self.table)
        if got is None:
            return Outcome(None, UNPARSEABLE, None, "no single label among "
                                                    f"{', '.join(sorted(set(self.table.values())))} stated")
        return Outcome(1.0 if got in refs else 0.0, ANSWERED, got, None)


def label(labels: Any = None) -> Scorer:
    """Scorer for answers from a closed set of words: 1 when :func:`extract_label` reads the reference's label.

    ``labels``: ``None`` (True / False / N/A and their synonyms: unknown, "cannot be determined"...), a
    list of words (each its own label, case-insensitive) or a dict word -> label. No label, or two different ones
    in the deciding place, -> ``"unparseable"``.

    Parameters
    ----------
    labels : list of str, dict or None, optional
        The label set, as above (default ``None``).

    Returns
    -------
    Scorer
        A scorer ``(text, reference) -> Outcome``.

    Raises
    ------
    AssayInputError
        If ``labels`` is not None, a non-empty list of words or a dict.

    Examples
    --------
    >>> out = label()("The statement is false.", "False")
    >>> out.score, out.extracted
    (1.0, 'False')
    """
    return _Label(labels)


def exact(extract: Any = "auto") -> Scorer:
    """Scorer: 1 when the :func:`normalize`-d extracted answer equals the normalised reference.

    ``extract``: ``"auto"`` (default, :func:`extract_auto`), ``"boxed"``, ``"answer"``,
    ``"text"`` / ``None`` (whole response) or a callable ``text -> str | None``. ``reference`` may
    be a list of acceptable answers. No answer extracted -> status ``"unparseable"``.

    Parameters
    ----------
    extract : str, callable or None, optional
        The extractor, as above (default ``"auto"``).

    Returns
    -------
    Scorer
        A scorer ``(text, reference) -> Outcome``.

    Raises
    ------
    AssayInputError
        If ``extract`` is not a known extractor name, None or a callable.

    Examples
    --------
    >>> out = exact()("The answer is 1,000.", "1000")
    >>> out.score, out.status
    (1.0, 'answered')
    """
    return _Exact(extract)


def numeric(tol: float = 1e-6, extract: Any = "number") -> Scorer:
    """Scorer: 1 when the number in the extracted answer is within ``tol`` of the reference.

    Correct when ``|x - ref| <= tol * max(1, |ref|)``: absolute tolerance for references of size
    up to 1, relative beyond. ``extract``: ``"number"`` (default, :func:`~assay.models.extract.extract_number`: the
    number the response gives as its final answer, from an answer marker or its concluding statement, digits or
    words; a response cut off by its token limit, known from :func:`score_response`'s ``finish_reason``, is read by
    its answer markers only), or any extractor of :func:`exact`. Numbers are read by :func:`parse_number`
    (``1,000``, ``1/2``, ``\\frac{1}{2}``, ``50%``, ``six``). An extracted answer without a number is
    ``"unparseable"``; ``\\frac{3}{4}`` reads as 0.75, ``5\\sqrt{2}`` as no number, and a percentage answer
    (``50%``) is right for 50 and for 0.5. A reference that is not a plain number (a LaTeX command, a variable or an
    operator: ``2\\pi``, ``2x``, ``x^2+1``) raises AssayInputError pointing to :func:`math_scorer`.

    Parameters
    ----------
    tol : float, optional
        The tolerance, a finite number >= 0 (default 1e-6).
    extract : str, callable or None, optional
        The extractor (default ``"number"``).

    Returns
    -------
    Scorer
        A scorer ``(text, reference) -> Outcome``.

    Raises
    ------
    AssayInputError
        If ``tol`` is not a finite number >= 0 or ``extract`` is not a valid extractor (and, when scoring, if the
        reference is not a number).

    Examples
    --------
    >>> out = numeric(tol=0.01)("Answer: 3.14", 3.14159)
    >>> out.score, out.extracted
    (1.0, '3.14')
    """
    return _Numeric(tol, extract)


def math_scorer(timeout: float = 5.0, extract: Any = "math") -> Scorer:
    """Scorer for maths answers: 1 when the answer the response commits to equals the reference by value.

    The answer is found by :func:`~assay.models.extract.extract_math` (the last ``\\boxed{}``, Minerva's "The final
    answer is ...", an answer marker, the concluding statement; a response cut off by its token limit is read by the
    first three only) and compared with ``math-verify``, so ``0.75`` equals ``\\frac{3}{4}``, ``2\\sqrt{2}`` equals
    ``\\sqrt{8}``, ``50\\%`` equals ``0.5``, ``(1, 2)`` a point or an interval, ``x^2+1`` equals ``1 + x^2``; LaTeX
    written without ``$`` is read as LaTeX. Every call is bounded by ``timeout`` seconds of wall time in any thread
    (:mod:`assay.models.mathverify`); an answer that takes longer, or that math-verify cannot read, is
    ``"unparseable"``. A reference math-verify cannot read raises AssayInputError (checked before any question is
    asked by the commands that ask).

    Parameters
    ----------
    timeout : float, optional
        Seconds one reading or comparison may take (default 5).
    extract : str, callable or None, optional
        The extractor (default ``"math"``).

    Returns
    -------
    Scorer
        A scorer ``(text, reference) -> Outcome``.

    Raises
    ------
    AssayInputError
        If ``timeout`` is not a positive number or ``extract`` is not a valid extractor (and, when scoring, if
        math-verify cannot read the reference).

    Examples
    --------
    >>> out = math_scorer()("So x = \\\\frac{3}{4}.", "0.75")
    >>> out.score, out.extracted
    (1.0, '\\\\frac{3}{4}')
    """
    return _Math(timeout, extract)


def choice(choices: Any = "ABCD", extract: Any = None) -> Scorer:
    """Scorer for multiple choice: 1 when :func:`extract_choice` finds the reference letter.

    When the prompt is known (:func:`score_response` with ``prompt=``), the options it lists are used too: an
    option named by its text ("The largest number is 76") counts as its letter, and a letter whose written text
    names another option ("A) 14" when A is 33) is unparseable.

    ``choices``: the valid letters. ``extract``: optional pre-extraction applied before the letter
    rules (default ``None``: the rules read the whole response). No letter, or an ambiguous one,
    -> status ``"unparseable"`` with the reason in ``detail``. The reference is a letter
    (``"C"``, ``"(c)"``) or a list of acceptable letters.

    Parameters
    ----------
    choices : str or sequence of str, optional
        The valid letters (default ``"ABCD"``).
    extract : str, callable or None, optional
        Pre-extraction before the letter rules (default ``None``).

    Returns
    -------
    Scorer
        A scorer ``(text, reference) -> Outcome``.

    Raises
    ------
    AssayInputError
        If ``choices`` or ``extract`` is not valid.

    Examples
    --------
    >>> out = choice()("The answer is (C).", "C")
    >>> out.score, out.extracted
    (1.0, 'C')
    """
    return _Choice(choices, extract)


def contains(extract: Any = None) -> Scorer:
    """Scorer: 1 when the reference occurs in the response (case- and whitespace-insensitive).

    Compared both raw (lowercased, whitespace collapsed) and :func:`normalize`-d. ``extract``
    defaults to the whole response; an empty response is ``"unparseable"``. Lenient by design:
    a response listing every option "contains" the right one.

    Parameters
    ----------
    extract : str, callable or None, optional
        The extractor applied first (default ``None``: the whole response).

    Returns
    -------
    Scorer
        A scorer ``(text, reference) -> Outcome``.

    Raises
    ------
    AssayInputError
        If ``extract`` is not a known extractor name, None or a callable.

    Examples
    --------
    >>> contains()("It is Paris, France.", "paris").score
    1.0
    """
    return _Contains(extract)


SCORERS: dict[str, Callable[..., Scorer]] = {
    "exact": exact,
    "numeric": numeric,
    "math": math_scorer,
    "choice": choice,
    "label": label,
    "contains": contains,
}


class _Wrapped:
    """A user callable made into a Scorer: floats / bools become ok outcomes, None unparseable."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.name = _name(fn)

    def __call__(self, text: str | None, reference: Any) -> Outcome:
        out = self.fn(text, reference)
        if isinstance(out, Outcome):
            return out
        if out is None:
            return Outcome(None, "unparseable", None, f"{self.name} returned None")
        if isinstance(out, (bool, int, float)):
            return Outcome(float(out), ANSWERED, None, None)
        raise AssayInputError(
            f"scorer {self.name} returned {out!r}; a scorer returns an Outcome, a number in [0, 1] "
            "or None (unparseable)"
        )

    def __repr__(self) -> str:
        return f"scorer({self.name})"


def make_scorer(name_or_callable: Any, **kwargs: Any) -> Scorer:
    """A scorer from a name (``"exact"``, ``"numeric"``, ``"choice"``, ``"contains"``) or a callable.

    ``kwargs`` go to the named factory (e.g. ``make_scorer("numeric", tol=1e-3)``). A callable
    ``(text, reference) -> Outcome | float | bool | None`` is wrapped so that a plain number is an
    ``"answered"`` outcome and ``None`` is ``"unparseable"``; built-in scorers are returned as they are.

    Parameters
    ----------
    name_or_callable : str, Scorer or callable
        A scorer name in :data:`SCORERS`, a built-in scorer or a callable ``(text, reference) -> ...``.
    **kwargs
        Arguments of the named factory; only with a name.

    Returns
    -------
    Scorer
        The scorer.

    Raises
    ------
    AssayInputError
        If the name is unknown, the arguments do not fit the factory, keyword arguments come with a callable, or
        ``name_or_callable`` is neither a name nor a callable.

    Examples
    --------
    >>> make_scorer("numeric", tol=1e-3)
    numeric(tol=0.001, extract='extract_number')
    >>> make_scorer(lambda text, ref: text.strip() == ref)(" ok ", "ok").score
    1.0
    """
    if isinstance(name_or_callable, str):
        factory = SCORERS.get(name_or_callable.strip().lower())
        if factory is None:
            raise AssayInputError(
                f"unknown scorer {name_or_callable!r}; accepted: {', '.join(map(repr, SCORERS))} "
                "or a callable (text, reference) -> Outcome | float | None"
            )
        try:
            return factory(**kwargs)
        except TypeError as exc:
            raise AssayInputError(f"bad arguments for scorer {name_or_callable!r}: {exc}") from None
    if kwargs:
        raise AssayInputError("keyword arguments are only accepted with a scorer name, not a callable")
    if isinstance(name_or_callable, (_Base, _Wrapped)):
        return name_or_callable
    if callable(name_or_callable):
        return _Wrapped(name_or_callable)
    raise AssayInputError(
        f"scorer must be one of {', '.join(map(repr, SCORERS))} or a callable; got {name_or_callable!r}"
    )


def check_references(scorers: Any, references: Iterable[Any], ids: Iterable[Any] | None = None,
                     where: str = "the bank") -> None:
    """Check every reference with its scorer before any question is asked.

    A numeric reference that is not a plain number (``2\\pi``), a maths reference math-verify cannot read, a choice
    reference that is not a letter: each is an :class:`AssayInputError` naming the row, before any model is paid.

    Parameters
    ----------
    scorers : scorer, name, or a sequence of them (one per row)
        The scorer of every row, or one for all.
    references : iterable
        The references, in row order.
    ids : iterable, optional
        The rows' ids, for the message (default: row numbers from 0).
    where : str, default "the bank"
        What the rows are, for the message.

    Raises
    ------
    AssayInputError
        Naming the first row whose reference its scorer cannot use, and why.

    Examples
    --------
    >>> try:
    ...     check_references("numeric", ["4", "2\\\\pi"], ids=["q1", "q2"])
    ... except AssayInputError as exc:
    ...     print(str(exc)[:80])
    the reference of row 'q2' of the bank: numeric scorer: reference '2\\\\pi' is not
    """
    refs = list(references)
    row_ids = [str(i) for i in ids] if ids is not None else [str(i) for i in range(len(refs))]
    if isinstance(scorers, (list, tuple)):
        made: dict[str, Scorer] = {}  # one scorer per name (a maths scorer remembers the references it has read)
        for x in scorers:
            if isinstance(x, str) and x not in made:
                made[x] = make_scorer(x)
        row_scorers = [made[x] if isinstance(x, str) else make_scorer(x) for x in scorers]
    else:
        row_scorers = [make_scorer(scorers)] * len(refs)
    for rid, sc, ref in zip(row_ids, row_scorers, refs):
        check = getattr(sc, "check_reference", None)
        if check is None:
            continue
        try:
            check(ref)
        except AssayInputError as exc:
            raise AssayInputError(f"the reference of row {rid!r} of {where}: {exc}") from None


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
        sc = make_scorer(scorer)
        if isinstance(sc, _Choice) and prompt is not None:
            out = sc(text, reference, parse_options(prompt))
        elif isinstance(sc, (_Numeric, _Math)):
            out = sc(text, reference, cut_off=finish_reason == "length", question=prompt)
        else:
            out = sc(text, reference)
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
               finish_reasons: Iterable[Any] | None = None) -> list[Outcome]:
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
    if len(outs) != len(texts) or len(asked) != len(texts) or len(finished) != len(texts):
        raise AssayInputError(f"score_rows: outcomes, prompts and finish_reasons need one entry per text "
                              f"({len(texts)})")
    result = []
    for text, ref, sc, oc, prompt, fin in zip(texts, references, per_row, outs, asked, finished):
        key = sc if isinstance(sc, str) else id(sc)
        if key not in made:
            made[key] = make_scorer(sc)
        oc = None if (oc is None or (isinstance(oc, float) and math.isnan(oc))) else oc
        text = None if (text is None or (isinstance(text, float) and math.isnan(text))) else text
        fin = fin if isinstance(fin, str) else None
        result.append(score_response(text, None, ref, made[key], policy, outcome=oc, prompt=prompt, finish_reason=fin))
    return result
