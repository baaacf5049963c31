"""Scoring model responses: answer extraction, pluggable scorers, and an explicit failure policy.

A model call ends in one of four ways, recorded as the ``status`` of an :class:`Outcome`:

* ``"ok"``: the response was scored (``score`` in [0, 1]);
* ``"unparseable"``: a response came back but no answer could be extracted from it;
* ``"timeout"``: the model layer reported a timeout (its error string contains "timeout");
* ``"error"``: any other generation failure (refusal, backend error, no text at all).

What a non-``ok`` outcome counts as is a *policy*, chosen by the caller and recorded on every outcome
(:func:`score_response` fills ``policy`` and ``final_score``):

* ``"missing"`` (default): ``final_score`` is ``None``; the item stays missing (NaN downstream), it
  never silently becomes 0 (DESIGN.md, "Missing data stays missing");
* ``"wrong"``: ``final_score`` is 0.0;
* ``"correct"``: ``final_score`` is 1.0.

Why the choice is explicit: the QuickScope release disagrees with its own text. Its metrics record
``accuracy in {1, 0, None}`` plus ``timed_out`` / ``generation_failure`` flags; in *every* shipped
utility a timeout or generation failure returns utility 1.0 (the maximal error, i.e. counted as a
wrong answer for the error-rate utility, and even worse than a wrong answer for the depth-weighted
CWE utilities), and an unparseable answer (no ``\\boxed{}`` found) gets accuracy 0, i.e. wrong. The
code comments call these "not a reasoning failure", and the description we were given says timeouts
and unparseable answers are treated as *correct*. ``policy="wrong"`` reproduces the released code
for the error-rate utility; ``policy="correct"`` reproduces the text; ``"missing"`` is assay's
default. Because the status is kept next to the policy, a study can count each kind
(:func:`count_outcomes`) and re-score under another policy (:func:`apply_policy`) without calling the
model again.

Extraction helpers: :func:`extract_boxed` (last ``\\boxed{...}`` / ``\\fbox{...}``, nested braces),
:func:`extract_answer` (last ``Answer: X`` line), :func:`extract_choice` (a multiple-choice letter,
``None`` when ambiguous) and :func:`normalize` (string / number canonical form). Built-in scorers:
:func:`exact`, :func:`numeric`, :func:`choice`, :func:`contains`; :func:`make_scorer` builds one by
name or wraps a user callable.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, replace
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any, Protocol, runtime_checkable

from ..errors import AssayInputError

__all__ = [
    "STATUSES",
    "POLICIES",
    "SCORERS",
    "Outcome",
    "Scorer",
    "extract_boxed",
    "extract_answer",
    "extract_choice",
    "extract_auto",
    "normalize",
    "parse_number",
    "exact",
    "numeric",
    "choice",
    "contains",
    "make_scorer",
    "apply_policy",
    "score_response",
    "count_outcomes",
]

STATUSES: tuple[str, ...] = ("ok", "unparseable", "timeout", "error")
POLICIES: dict[str, float | None] = {"missing": None, "wrong": 0.0, "correct": 1.0}


# --------------------------------------------------------------------------------------------
# Outcome
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """The result of scoring one response.

    Parameters
    ----------
    score : float or None
        The scorer's score in [0, 1] when ``status == "ok"``; ``None`` otherwise.
    status : str
        One of ``"ok"``, ``"unparseable"``, ``"timeout"``, ``"error"``.
    extracted : str or None
        The answer the scorer extracted (``None`` when nothing was extracted).
    detail : str or None
        Why: the model layer's error message, the reason extraction failed, etc.
    policy : str or None
        The failure policy applied by :func:`score_response` (``None`` until one is applied).
    final_score : float or None
        The score after the policy: ``score`` for ``ok`` outcomes, ``None`` / 0.0 / 1.0 for the
        others under ``"missing"`` / ``"wrong"`` / ``"correct"``.
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
        if self.status == "ok":
            object.__setattr__(self, "score", _check_score(self.score, "score"))
        elif self.score is not None:
            raise AssayInputError(
                f"an Outcome with status {self.status!r} has no score; got score={self.score!r} "
                "(use status 'ok' for a scored response)"
            )
        if self.policy is not None:
            _check_policy(self.policy)
        if self.final_score is not None:
            object.__setattr__(self, "final_score", _check_score(self.final_score, "final_score"))

    @property
    def ok(self) -> bool:
        """True when the response was scored."""
        return self.status == "ok"

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
            f"unknown failure policy {policy!r}; accepted: 'missing' (non-ok outcomes stay "
            "missing), 'wrong' (count as 0), 'correct' (count as 1)"
        )
    return policy


# --------------------------------------------------------------------------------------------
# Extraction
# --------------------------------------------------------------------------------------------


def _check_text(text: Any, where: str) -> str | None:
    if text is None or isinstance(text, str):
        return text
    raise AssayInputError(f"{where} expects a string (or None); got {type(text).__name__}")


# One or two backslashes: responses that went through JSON escaping sometimes keep "\\boxed".
_BOX_RE = re.compile(r"\\{1,2}(?:boxed|fbox)\s*\{")


def extract_boxed(text: str | None) -> str | None:
    """Content of the last ``\\boxed{...}`` (or ``\\fbox{...}``, ``\\boxed {...}``) in ``text``.

    Nested braces are matched (``\\boxed{\\frac{1}{2}}`` -> ``\\frac{1}{2}``) and escaped braces
    (``\\{``, ``\\}``) do not count. Returns ``None`` when there is no box, when the last box is
    unbalanced (e.g. a truncated response; an earlier box is *not* used instead, since the model's
    final answer is the one that was cut off) or when it is empty. The content is stripped.
    """
    text = _check_text(text, "extract_boxed")
    if not text:
        return None
    matches = list(_BOX_RE.finditer(text))
    if not matches:
        return None
    start = matches[-1].end()
    depth, i, n = 1, start, len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2  # skip the escaped character: \{ \} \\ and the first letter of \frac
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                content = text[start:i].strip()
                return content or None
        i += 1
    return None


_MD = r"(?:\*{1,2}|_{1,2})?"
_TRAIL = " \t\r\n.,;:!?"


def _answer_regex(prefix: str) -> re.Pattern[str]:
    return re.compile(
        rf"(?<![A-Za-z0-9]){_MD}{re.escape(prefix)}{_MD}[ \t]*[:：]{_MD}[ \t]*([^\n]*)",
        re.IGNORECASE,
    )


def _trim_value(value: str) -> str:
    v = value.strip()
    prev = None
    while v != prev:  # peel markdown and trailing punctuation until stable
        prev = v
        v = v.strip().strip("*_`").strip().rstrip(_TRAIL)
    return v


def _last_answer(text: str, prefix: str) -> tuple[int, int, str | None] | None:
    """(start, end, value) of the last ``prefix:`` in text, or None when there is none."""
    matches = list(_answer_regex(prefix).finditer(text))
    if not matches:
        return None
    m = matches[-1]
    value = _trim_value(m.group(1))
    end = m.end()
    if not value:
        # "Answer:" alone on its line: the answer is on the next non-empty line.
        for line in text[m.end():].splitlines():
            value = _trim_value(line)
            if value:
                end = text.index(line, m.end()) + len(line)
                break
    if value:
        boxed = extract_boxed(value)
        if boxed is not None:
            value = boxed
    return m.start(), end, (value or None)


def extract_answer(text: str | None, prefix: str = "Answer") -> str | None:
    """The value after the last ``prefix:`` (default ``Answer:``) in ``text``, up to end of line.

    Case-insensitive and tolerant of markdown (``**Answer:** 42``, ``**Answer**: 42``,
    ``Answer: **42**``); "Final Answer:" matches too, "Answers:" does not. Surrounding
    whitespace, markdown markers and trailing punctuation (``.,;:!?``) are trimmed. If the last
    ``Answer:`` ends its line, the next non-empty line is taken. A ``\\boxed{...}`` inside the
    value is unwrapped. Returns ``None`` when there is no ``Answer:`` or its value is empty.
    """
    text = _check_text(text, "extract_answer")
    if not isinstance(prefix, str) or not prefix.strip():
        raise AssayInputError(f"extract_answer prefix must be a non-empty string; got {prefix!r}")
    if not text:
        return None
    found = _last_answer(text, prefix.strip())
    return None if found is None else found[2]


# --- multiple choice ----------------------------------------------------------------------------

_LATEX_WRAP = re.compile(r"\\(?:text|textbf|textit|mathrm|mathbf|mbox|operatorname)\s*\{([^{}]*)\}")
_WHOLE_LETTER = re.compile(r"^(?:option|choice)?\s*[(\[{]?\s*([A-Za-z])\s*[)\]}]?\s*[.:,;!]?$", re.I)
_MARKED = re.compile(
    r"[(\[]\s*([A-Za-z])\s*[)\]]"  # (C) [c]
    r"|(?<![A-Za-z0-9(\[])([A-Z])\)"  # C)
)
_LEADING = re.compile(r"^(?:[(\[]\s*([A-Za-z])\s*[)\]]|([A-Z])(?:[).:]|\s*$)(?=\s|$))")
_BARE = re.compile(r"(?<![A-Za-z0-9'\u2019\\])([A-Z])(?![A-Za-z0-9'\u2019])")
_ANSWER_IS = re.compile(
    r"(?<![A-Za-z])(?:answer|option|choice)\s+(?:is|would\s+be|should\s+be|=)\s*:?\s*",
    re.IGNORECASE,
)
_IS_TOKEN = re.compile(r"(?:[(\[]\s*([A-Za-z])\s*[)\]]|([A-Z])(?![A-Za-z0-9'\u2019]))")
_IS_MORE = re.compile(
    r"^\s*(?:,|/|&|\bor\b|\band\b)\s*(?:[(\[]\s*([A-Za-z])\s*[)\]]|([A-Z])(?![A-Za-z0-9]))",
    re.IGNORECASE,
)


def _choice_letters(choices: Any) -> str:
    if isinstance(choices, str):
        items = list(choices.replace(",", "").replace(" ", ""))
    else:
        try:
            items = list(choices)
        except TypeError:
            items = None
    bad = (
        not items
        or any(not isinstance(c, str) or len(c) != 1 or not c.isascii() or not c.isalpha() for c in items)
        or len({c.upper() for c in items}) != len(items)
    )
    if bad:
        raise AssayInputError(
            f"choices must be distinct single letters, e.g. 'ABCD' or ['A', 'B', 'C']; got {choices!r}"
        )
    return "".join(c.upper() for c in items)


def _clean_mc(s: str) -> str:
    prev = None
    while s != prev:
        prev = s
        s = _LATEX_WRAP.sub(r"\1", s)
    return re.sub(r"\*|`|\$|__", "", s).strip()


def _letter_in(value: str, letters: str) -> tuple[str | None, str | None]:
    """(letter, None), (None, 'ambiguous: ...') or (None, None) for the letter stated in value."""
    v = _clean_mc(value)
    m = _WHOLE_LETTER.match(v)
    if m:
        letter = m.group(1).upper()
        return (letter, None) if letter in letters else (None, None)
    marked = _distinct(g.upper() for pair in _MARKED.findall(v) for g in pair if g)
    marked = [c for c in marked if c in letters]
    if len(marked) > 1:
        return None, "ambiguous: " + ", ".join(marked)
    lead = _LEADING.match(v)
    if lead:
        letter = (lead.group(1) or lead.group(2)).upper()
        if letter in letters and (not marked or marked == [letter]):
            return letter, None  # "(C) because A is wrong": the leading marked letter is the answer
    found = _distinct(marked + [c for c in _BARE.findall(v) if c in letters])
    if len(found) == 1:
        return found[0], None
    if len(found) > 1:
        return None, "ambiguous: " + ", ".join(found)
    return None, None


def _distinct(items: Iterable[str]) -> list[str]:
    out: list[str] = []
    for x in items:
        if x not in out:
            out.append(x)
    return out


def _choice_with_reason(text: str | None, choices: Any = "ABCD") -> tuple[str | None, str]:
    letters = _choice_letters(choices)
    text = _check_text(text, "extract_choice")
    if not text or not text.strip():
        return None, "empty response"
    cleaned = _clean_mc(text)
    # (end position, letter, reason, rule) for every explicit answer marker
    cands: list[tuple[int, str | None, str | None, str]] = []
    found = _last_answer(cleaned, "Answer")
    if found is not None and found[2] is not None:
        letter, why = _letter_in(found[2], letters)
        cands.append((found[1], letter, why, "Answer:"))
    for m in reversed(list(_ANSWER_IS.finditer(cleaned))):
        rest = cleaned[m.end():]
        tok = _IS_TOKEN.match(rest)
        if not tok:
            continue
        letter = (tok.group(1) or tok.group(2)).upper()
        if letter not in letters:
            continue
        more = _IS_MORE.match(rest[tok.end():])
        other = (more.group(1) or more.group(2)).upper() if more else None
        if other and other != letter and other in letters:
            cands.append((m.end() + tok.end(), None, f"ambiguous: {letter}, {other}", "answer is"))
        else:
            cands.append((m.end() + tok.end(), letter, None, "answer is"))
        break
    boxes = list(_BOX_RE.finditer(cleaned))
    if boxes:
        boxed = extract_boxed(cleaned)
        if boxed is not None:
            letter, why = _letter_in(boxed, letters)
            cands.append((boxes[-1].end() + len(boxed), letter, why, "boxed"))
    # The marker stated last wins: models that correct themselves restate the answer at the end.
    for _, letter, why, rule in sorted(cands, key=lambda c: c[0], reverse=True):
        if letter is not None:
            return letter, f"{rule} {letter}"
        if why is not None:
            return None, f"{why} ({rule})"
    lines = [ln for ln in cleaned.splitlines() if ln.strip()]
    if lines:
        m = _WHOLE_LETTER.match(lines[-1].strip())
        if m and m.group(1).upper() in letters:
            return m.group(1).upper(), f"final line {m.group(1).upper()}"
    return None, f"no choice among {letters} found"


def extract_choice(text: str | None, choices: Any = "ABCD") -> str | None:
    """A multiple-choice letter (upper case) stated in ``text``, or ``None``.

    ``choices`` is the set of valid letters: a string (``"ABCDE"``) or a list of single letters.
    Rules, after removing markdown (``*``, backticks, ``$``) and LaTeX ``\\text{}``-like wrappers:

    1. Explicit answer markers are collected: the last ``Answer: ...`` line (see
       :func:`extract_answer`), the last ``answer is X`` / ``correct option is (X)`` /
       ``choice would be X``, and the last ``\\boxed{X}``. The marker that appears *last* in the
       text decides (a model that corrects itself restates its answer at the end). Markers that
       name no valid letter (e.g. ``Answer: 42``) are skipped.
    2. Within a marker's value, a letter counts when the value is just that letter (``C``,
       ``(c)``, ``C.``, ``Option C``), when it is marked (``(C)``, ``[C]``, ``C)``) or a standalone
       capital (``Option C is right``). A leading marked letter wins over capitals in the prose that
       follows (``(C) because A is wrong`` -> ``C``). After ``answer is`` only the letter right
       after it is read, and lower case only in brackets (``the answer is a bit...`` is no answer).
    3. Two different letters in the deciding position (``Answer: C or D``, ``(B) and (C)``,
       ``\\boxed{A, C}``, ``answer is B/C``) make the answer ambiguous: ``None`` is returned (no
       earlier marker is used instead).
    4. Without any marker, a last non-empty line that is just a letter (``C``, ``(C)``, ``**C.**``)
       counts.

    Letters outside ``choices`` never count, so with choices up to ``J`` a standalone ``I`` in an
    answer line is read as option I. Returns ``None`` when nothing matches.
    """
    return _choice_with_reason(text, choices)[0]


# --- normalisation and numbers ------------------------------------------------------------------

_NUMBER_RE = re.compile(r"^[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d*)?(?:e[-+]?\d+)?$|^[-+]?\.\d+(?:e[-+]?\d+)?$")
_THIN_SPACES = re.compile(r"\\[,!;: ]")


def _canonical_number(s: str) -> str | None:
    if not _NUMBER_RE.match(s):
        return None
    try:
        d = Decimal(s.replace(",", ""))
    except InvalidOperation:
        return None
    if not d.is_finite():
        return None
    if d == 0:
        return "0"
    exponent = d.adjusted()
    if abs(exponent) > 60:  # keep absurd exponents short rather than writing 10^6 digits
        return s.replace(",", "")
    return format(d.normalize(), "f")


def normalize(s: Any) -> str:
    """Canonical string form of an answer for exact comparison.

    Strips whitespace and surrounding ``$`` (``$42$``, ``$$x$$``), unwraps ``\\text{...}``-like
    wrappers, drops LaTeX thin spaces (``1\\,000``), lowercases, strips trailing periods, and
    writes numbers canonically: thousands separators removed (``1,000`` -> ``1000``), trailing
    zeros dropped (``2.50`` -> ``2.5``, ``3.0`` -> ``3``), ``+``/leading zeros removed. Fractions
    (``1/2``) and other strings are kept as they are. Numbers (int / float / Decimal) are accepted
    and formatted the same way.
    """
    if isinstance(s, bool) or not isinstance(s, (str, int, float, Decimal, Fraction)):
        raise AssayInputError(f"normalize expects a string or a number; got {type(s).__name__} {s!r}")
    if isinstance(s, Fraction):
        s = f"{s.numerator}/{s.denominator}" if s.denominator != 1 else str(s.numerator)
    elif not isinstance(s, str):
        s = repr(s) if isinstance(s, float) else str(s)
    prev = None
    while s != prev:
        prev = s
        s = s.strip()
        if len(s) >= 2 and s.startswith("$") and s.endswith("$"):
            s = s.strip("$")
        s = s.rstrip(".").strip()
        s = _LATEX_WRAP.sub(r"\1", s)
    s = _THIN_SPACES.sub("", s).replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    s = s.lower().strip()
    num = _canonical_number(s)
    return num if num is not None else s


_FRAC_RE = re.compile(r"^([-+]?)\\frac\s*\{\s*([-+]?[\d.]+)\s*\}\s*\{\s*([-+]?[\d.]+)\s*\}$")
_SLASH_RE = re.compile(r"^([-+]?[\d.]+)\s*/\s*([-+]?[\d.]+)$")
_ANY_NUMBER = re.compile(
    r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?(?:\s*/\s*\d+(?:\.\d+)?)?|[-+]?\.\d+"
)


def _whole_number(s: str) -> float | None:
    s = s.strip().rstrip("%").rstrip("\\").strip()
    if not s:
        return None
    num = _canonical_number(s)
    if num is not None:
        return float(Decimal(num))
    for rx in (_FRAC_RE, _SLASH_RE):
        m = rx.match(s)
        if m:
            sign = -1.0 if rx is _FRAC_RE and m.group(1) == "-" else 1.0
            a, b = m.groups()[-2:]
            try:
                num_, den = float(a), float(b)
            except ValueError:
                return None
            if den == 0:
                return None
            return sign * num_ / den
    return None


def parse_number(s: str | None) -> float | None:
    """The number an answer states, or ``None``.

    The whole (normalised) answer is tried first: ``1,000``, ``-2.50``, ``1e-3``, ``1/2``,
    ``\\frac{3}{4}``, ``-\\frac{1}{2}``, ``50%`` (-> 50). Otherwise the *last* number in the
    answer is used (``x = 3, so y = 5`` -> 5; ``42 meters`` -> 42).
    """
    if s is None:
        return None
    s = normalize(s)
    x = _whole_number(s)
    if x is not None:
        return x
    found = _ANY_NUMBER.findall(s)
    if not found:
        return None
    return _whole_number(normalize(found[-1].replace(" ", "")))


def extract_auto(text: str | None) -> str | None:
    """Default extractor: the last ``\\boxed{}``, else the last ``Answer:``, else a one-line response.

    A response that is a single non-empty line with neither marker is taken as the answer itself
    (models told to "reply with just the number" do that); anything longer without a marker is
    unparseable.
    """
    text = _check_text(text, "extract_auto")
    if not text or not text.strip():
        return None
    for fn in (extract_boxed, extract_answer):
        v = fn(text)
        if v is not None:
            return v
    stripped = text.strip()
    if "\n" not in stripped:
        return _trim_value(stripped) or None
    return None


def _extract_text(text: str | None) -> str | None:
    if text is None or not text.strip():
        return None
    return text.strip()


_EXTRACTORS: dict[str, Callable[[str | None], str | None]] = {
    "auto": extract_auto,
    "boxed": extract_boxed,
    "answer": extract_answer,
    "text": _extract_text,
}


def _resolve_extract(extract: Any) -> Callable[[str | None], str | None]:
    if extract is None:
        return _extract_text
    if isinstance(extract, str):
        if extract in _EXTRACTORS:
            return _EXTRACTORS[extract]
        raise AssayInputError(
            f"unknown extractor {extract!r}; accepted: {', '.join(map(repr, _EXTRACTORS))}, None "
            "(the whole text) or a callable text -> str | None"
        )
    if callable(extract):
        return extract
    raise AssayInputError(f"extract must be a name, None or a callable; got {extract!r}")


def _name(fn: Any) -> str:
    return getattr(fn, "__name__", None) or type(fn).__name__


# --------------------------------------------------------------------------------------------
# Scorers
# --------------------------------------------------------------------------------------------


@runtime_checkable
class Scorer(Protocol):
    """Anything called as ``scorer(text, reference) -> Outcome``.

    ``text`` is the model's response (``None`` when there was none); ``reference`` the item's
    reference answer. A scorer returns status ``"ok"`` with a score in [0, 1], or ``"unparseable"``
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
        self.extract = _resolve_extract(extract)

    def _extracted(self, text: str | None) -> tuple[str | None, Outcome | None]:
        text = _check_text(text, f"{self.name} scorer")
        if text is None or not text.strip():
            return None, Outcome(None, "unparseable", None, "empty response")
        value = self.extract(text)
        if value is None:
            return None, Outcome(None, "unparseable", None, f"no answer found by {_name(self.extract)}")
        return str(value), None

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self._params().items())
        return f"{self.name}({params})"

    def _params(self) -> dict[str, Any]:
        return {"extract": _name(self.extract)}


class _Exact(_Base):
    name = "exact"

    def __call__(self, text: str | None, reference: Any) -> Outcome:
        refs = [normalize(r) for r in _references(reference, self.name)]
        value, failed = self._extracted(text)
        if failed:
            return failed
        got = normalize(value)
        return Outcome(1.0 if got in refs else 0.0, "ok", value, f"normalized {got!r}")


class _Numeric(_Base):
    name = "numeric"

    def __init__(self, tol: float, extract: Any) -> None:
        super().__init__(extract)
        try:
            tol = float(tol)
        except (TypeError, ValueError):
            tol = float("nan")
        if not (math.isfinite(tol) and tol >= 0):
            raise AssayInputError(f"numeric scorer tol must be a finite number >= 0; got {tol!r}")
        self.tol = tol

    def _params(self) -> dict[str, Any]:
        return {"tol": self.tol, **super()._params()}

    def __call__(self, text: str | None, reference: Any) -> Outcome:
        refs = []
        for r in _references(reference, self.name):
            x = float(r) if isinstance(r, (int, float)) else parse_number(str(r))
            if x is None or not math.isfinite(x):
                raise AssayInputError(f"numeric scorer: reference {r!r} is not a finite number")
            refs.append(x)
        value, failed = self._extracted(text)
        if failed:
            return failed
        x = parse_number(value)
        if x is None or not math.isfinite(x):
            return Outcome(None, "unparseable", value, "no number in the extracted answer")
        # absolute tolerance near 0, relative for large references
        hit = any(abs(x - r) <= self.tol * max(1.0, abs(r)) for r in refs)
        return Outcome(1.0 if hit else 0.0, "ok", value, f"parsed {x!r}")


class _Choice(_Base):
    name = "choice"

    def __init__(self, choices: Any, extract: Any) -> None:
        self.letters = _choice_letters(choices)
        self.extract = None if extract is None else _resolve_extract(extract)

    def _params(self) -> dict[str, Any]:
        return {"choices": self.letters, "extract": _name(self.extract) if self.extract else None}

    def __call__(self, text: str | None, reference: Any) -> Outcome:
        refs = []
        for r in _references(reference, self.name):
            letter = _letter_in(str(r), self.letters)[0] if isinstance(r, str) else None
            if letter is None:
                raise AssayInputError(
                    f"choice scorer: reference {r!r} is not one of the letters {self.letters} "
                    "(give the letter, e.g. 'C', not an index)"
                )
            refs.append(letter)
        text = _check_text(text, "choice scorer")
        if text is not None and self.extract is not None:
            text = self.extract(text)
        letter, why = _choice_with_reason(text, self.letters)
        if letter is None:
            return Outcome(None, "unparseable", None, why)
        return Outcome(1.0 if letter in refs else 0.0, "ok", letter, why)


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
        return Outcome(1.0 if hit else 0.0, "ok", value, None)


def exact(extract: Any = "auto") -> Scorer:
    """Scorer: 1 when the :func:`normalize`-d extracted answer equals the normalised reference.

    ``extract``: ``"auto"`` (default, :func:`extract_auto`), ``"boxed"``, ``"answer"``,
    ``"text"`` / ``None`` (whole response) or a callable ``text -> str | None``. ``reference`` may
    be a list of acceptable answers. No answer extracted -> status ``"unparseable"``.
    """
    return _Exact(extract)


def numeric(tol: float = 1e-6, extract: Any = "auto") -> Scorer:
    """Scorer: 1 when the number in the extracted answer is within ``tol`` of the reference.

    Correct when ``|x - ref| <= tol * max(1, |ref|)``: absolute tolerance for references of size
    up to 1, relative beyond. Numbers are read by :func:`parse_number` (``1,000``, ``1/2``,
    ``\\frac{1}{2}``, ``50%``, else the last number in the answer). An extracted answer without a
    number is ``"unparseable"``. A reference that is not a number raises AssayInputError.
    """
    return _Numeric(tol, extract)


def choice(choices: Any = "ABCD", extract: Any = None) -> Scorer:
    """Scorer for multiple choice: 1 when :func:`extract_choice` finds the reference letter.

    ``choices``: the valid letters. ``extract``: optional pre-extraction applied before the letter
    rules (default ``None``: the rules read the whole response). No letter, or an ambiguous one,
    -> status ``"unparseable"`` with the reason in ``detail``. The reference is a letter
    (``"C"``, ``"(c)"``) or a list of acceptable letters.
    """
    return _Choice(choices, extract)


def contains(extract: Any = None) -> Scorer:
    """Scorer: 1 when the reference occurs in the response (case- and whitespace-insensitive).

    Compared both raw (lowercased, whitespace collapsed) and :func:`normalize`-d. ``extract``
    defaults to the whole response; an empty response is ``"unparseable"``. Lenient by design:
    a response listing every option "contains" the right one.
    """
    return _Contains(extract)


SCORERS: dict[str, Callable[..., Scorer]] = {
    "exact": exact,
    "numeric": numeric,
    "choice": choice,
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
            return Outcome(float(out), "ok", None, None)
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
    ``"ok"`` outcome and ``None`` is ``"unparseable"``; built-in scorers are returned as they are.
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


# --------------------------------------------------------------------------------------------
# Policy
# --------------------------------------------------------------------------------------------


def apply_policy(outcome: Outcome, policy: str = "missing") -> float | None:
    """The score an outcome counts as under ``policy``.

    ``ok`` outcomes keep their score. Every other status (unparseable, timeout, error) maps to
    ``None`` under ``"missing"``, 0.0 under ``"wrong"``, 1.0 under ``"correct"``.
    """
    policy = _check_policy(policy)
    if not isinstance(outcome, Outcome):
        raise AssayInputError(f"apply_policy expects an Outcome; got {type(outcome).__name__}")
    if outcome.status == "ok":
        return outcome.score
    return POLICIES[policy]


def score_response(
    text: str | None,
    error: str | None,
    reference: Any,
    scorer: Any = "exact",
    policy: str = "missing",
) -> Outcome:
    """Score one model response and record the failure policy on the outcome.

    ``error`` is the model layer's error string (``None`` when the call succeeded): one containing
    "timeout" / "timed out" (any case) gives status ``"timeout"``, any other ``"error"``; the scorer
    is then not called and ``detail`` holds the message. A call with neither text nor error is an
    ``"error"`` (generation failure). Otherwise ``scorer`` (a name or callable, see
    :func:`make_scorer`) decides between ``"ok"`` and ``"unparseable"``. The returned outcome carries
    ``policy`` and ``final_score = apply_policy(outcome, policy)``.
    """
    policy = _check_policy(policy)
    if error is not None and not isinstance(error, str):
        raise AssayInputError(f"error must be a string from the model layer or None; got {error!r}")
    text = _check_text(text, "score_response")
    if error is not None and error.strip():
        low = error.lower()
        status = "timeout" if ("timeout" in low or "timed out" in low) else "error"
        out = Outcome(None, status, None, error)
    elif text is None:
        out = Outcome(None, "error", None, "no response text and no error from the model layer")
    else:
        out = make_scorer(scorer)(text, reference)
        if not isinstance(out, Outcome):
            raise AssayInputError(f"scorer {scorer!r} returned {out!r}, not an Outcome")
    return replace(out, policy=policy, final_score=apply_policy(out, policy))


def count_outcomes(outcomes: Iterable[Outcome | Mapping[str, Any]]) -> dict[str, int]:
    """Counts of each status, every status present: ``{"ok": n, "unparseable": n, ...}``.

    Accepts outcomes or their ``to_dict()`` records (e.g. read back from a journal).
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
