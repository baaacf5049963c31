"""Scorers: each reads one answer against its reference and says ``answered`` (with a score in [0, 1]) or
``unparseable``. Built-in: :func:`exact`, :func:`numeric`, :func:`math_scorer` (``"math"``), :func:`choice`,
:func:`label`, :func:`contains`; :func:`make_scorer` builds one by name or wraps a callable of your own.

One contract. A scorer is called ``scorer(text, reference, asked)``: ``asked`` (an :class:`Asked`) carries what is
known of the request the answer came from (its prompt, its finish reason), and each scorer reads what it needs of it
(``choice`` the options the prompt lists, ``numeric`` and ``math`` whether the answer was cut off and what the question
asks), so no caller needs to know which scorer it holds. A plain ``(text, reference)`` callable is a scorer too
(:func:`make_scorer` wraps it). A reference a scorer cannot read is refused, naming it, when the scorer first meets
it (and by :func:`check_references` before any question is asked): a ``numeric`` reference that is not a plain
number, a ``math`` reference math-verify cannot read or that is words rather than maths, a ``choice`` reference that
is not a letter, a ``label`` reference outside the labels.
"""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ..errors import AssayInputError
from .extract import (extract_label, extract_math, extract_number, normalize, parse_number,
                      parse_options, resolve_extract)
from .extract import _choice_letters, _choice_with_reason, _letter_in, _name, _check_text, _label_of
from .outcomes import ANSWERED, UNPARSEABLE, Outcome

__all__ = ["Scorer", "Asked", "SCORERS", "exact", "numeric", "math_scorer", "choice", "label", "contains",
           "make_scorer", "check_references"]


@dataclass(frozen=True)
class Asked:
    """What a scorer may read of the request an answer came from.

    Attributes
    ----------
    prompt : str or list, optional
        The prompt (text, or chat messages: the last user message is the question).
    finish_reason : str, optional
        The server's (``"length"``: the answer was cut off by its token limit).
    """

    prompt: Any = None
    finish_reason: str | None = None

    @property
    def cut_off(self) -> bool:
        """True when the answer was cut off by its token limit."""
        return self.finish_reason == "length"

    def options(self) -> dict[str, str] | None:
        """The answer options the prompt lists (letter -> text), or None."""
        return None if self.prompt is None else parse_options(self.prompt)


NOTHING_ASKED = Asked()


@runtime_checkable
class Scorer(Protocol):
    """Anything called as ``scorer(text, reference, asked) -> Outcome`` (module docstring).

    ``text`` is the model's response (``None`` when there was none); ``reference`` the item's reference answer;
    ``asked`` an :class:`Asked`. A scorer returns status ``"answered"`` with a score in [0, 1], or ``"unparseable"``
    when it cannot find an answer in the text. Timeouts and generation failures are handled before the scorer is
    called (:func:`assay.models.scoring.score_response`).
    """

    def __call__(self, text: str | None, reference: Any, asked: Asked = NOTHING_ASKED) -> Outcome: ...


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

    def _extracted(self, text: str | None, asked: Asked = NOTHING_ASKED) -> tuple[str | None, Outcome | None]:
        text = _check_text(text, f"{self.name} scorer")
        if text is None or not text.strip():
            return None, Outcome(None, "unparseable", None, "empty response")
        # the number extractor also reads what it knows of the request: a response cut off by its token limit (its
        # last sentence is unfinished work, not a conclusion) and the question (what it counts); the other
        # extractors read the text alone
        if self.extract is extract_number:
            value = extract_number(text, cut_off=asked.cut_off, question=asked.prompt)
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

    def __call__(self, text: str | None, reference: Any, asked: Asked = NOTHING_ASKED) -> Outcome:
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

    def __call__(self, text: str | None, reference: Any, asked: Asked = NOTHING_ASKED) -> Outcome:
        refs = self.check_reference(reference)
        value, failed = self._extracted(text, asked)
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
                words = _words(r)
                if words:
                    raise AssayInputError(f"math scorer: the reference {r!r} is words, not maths ({words!r} outside "
                                          "\\text{}): write the answer itself, e.g. \\frac{3}{4}, or a worded answer "
                                          "inside \\text{...}")
                got = parse_answer(r, self.timeout)
                if got is None or got == TIMEOUT or not r.strip():
                    why = f"reading it took longer than {self.timeout:g} s" if got == TIMEOUT else "it reads nothing"
                    raise AssayInputError(f"math scorer: math-verify cannot read the reference {r!r} ({why}); write "
                                          "it as LaTeX or a plain expression, e.g. \\frac{3}{4}, 2\\sqrt{2}, (1, 2)")
                self._read[r] = got
            refs.append(r)
        return refs

    def __call__(self, text: str | None, reference: Any, asked: Asked = NOTHING_ASKED) -> Outcome:
        from .mathverify import TIMEOUT, same_answer

        refs = self.check_reference(reference)
        text = _check_text(text, "math scorer")
        if text is None or not text.strip():
            return Outcome(None, UNPARSEABLE, None, "empty response")
        value = extract_math(text, cut_off=asked.cut_off) if self.extract is extract_math else self.extract(text)
        if value is None:
            return Outcome(None, UNPARSEABLE, None, f"no answer found by {_name(self.extract)}")
        value = str(value)
        got = same_answer(refs, value, self.timeout)
        if got == TIMEOUT:
            return Outcome(None, UNPARSEABLE, value, f"math-verify took longer than {self.timeout:g} s to read it")
        if got is None:
            return Outcome(None, UNPARSEABLE, value, "math-verify reads no mathematical answer in it")
        hit, canonical = got
        if hit and _restates(value, asked.prompt):
            return Outcome(0.0, ANSWERED, value, f"read {canonical}: it restates the question's own expression")
        return Outcome(1.0 if hit else 0.0, ANSWERED, value, f"read {canonical}")


#: LaTeX that holds words legitimately: text wrappers with their argument, commands, environment names
_WORDY_LATEX = re.compile(r"\\(?:text\w*|mathrm|mbox|operatorname|begin|end)\s*\{[^{}]*\}|\\[A-Za-z]+")
_WORD_RUN = re.compile(r"[A-Za-z]{2,}(?:[\s,;:]+[A-Za-z]{2,})+")


def _words(reference: str) -> str | None:
    """The first run of two or more words (of two letters or more) outside ``\\text{}`` and LaTeX commands: prose
    (``see the figure``), which math-verify would read as a product of letters; None for maths."""
    m = _WORD_RUN.search(_WORDY_LATEX.sub(" ", reference))
    return m.group(0) if m else None


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

    def __call__(self, text: str | None, reference: Any, asked: Asked = NOTHING_ASKED) -> Outcome:
        refs = self.check_reference(reference)
        text = _check_text(text, "choice scorer")
        if text is not None and self.extract is not None:
            text = self.extract(text)
        letter, why = _choice_with_reason(text, self.letters, asked.options())
        if letter is None:
            return Outcome(None, "unparseable", None, why)
        return Outcome(1.0 if letter in refs else 0.0, ANSWERED, letter, why)


class _Contains(_Base):
    name = "contains"

    def __call__(self, text: str | None, reference: Any, asked: Asked = NOTHING_ASKED) -> Outcome:
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

    def __call__(self, text: str | None, reference: Any, asked: Asked = NOTHING_ASKED) -> Outcome:
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
    """A user callable made into a Scorer: floats / bools become ok outcomes, None unparseable. A callable that takes
    a third argument (or an ``asked`` keyword) is given the :class:`Asked`; a plain ``(text, reference)`` one is not."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.name = _name(fn)
        try:
            params = inspect.signature(fn).parameters.values()
            positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
            self._asks = (len(positional) >= 3 or any(p.kind == p.VAR_POSITIONAL for p in params)
                          or any(p.name == "asked" for p in params))
        except (TypeError, ValueError):  # a builtin without a signature: called as (text, reference)
            self._asks = False

    def __call__(self, text: str | None, reference: Any, asked: Asked = NOTHING_ASKED) -> Outcome:
        out = self.fn(text, reference, asked) if self._asks else self.fn(text, reference)
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
