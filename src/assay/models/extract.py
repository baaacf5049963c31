"""Answer extraction: the rules that read a final answer out of a model's text, one section per answer shape.

Real small models rarely answer in the exact shape asked for. The rules below were written against the responses
of real models (``tests/fixtures/live_corpus/``: prompts and the SmolLM2-135M-Instruct answers they produced, each
with its expected parse checked by hand) and are tested on every response of that corpus.

Answer shapes and their extractors:

* **boxed** (:func:`extract_boxed`): the last ``\\boxed{...}`` / ``\\fbox{...}``, nested braces matched;
* **marked** (:func:`extract_answer`): the last ``Answer: X`` / ``**Final answer:** X`` line;
* **auto** (:func:`extract_auto`, the default of ``exact`` and ``numeric``): boxed, else marked, else a final
  answer stated in a sentence (``The answer is 42.``, ``The value of zyc is True.``), else a one-line response;
* **label** (:func:`extract_label`): one of a closed set of words (True / False / N/A, yes / no, a verdict) stated
  as the answer, after ``<think>`` blocks are dropped;
* **number** (:func:`parse_number`): the number an extracted answer states (``1,000``, ``3/4``, ``\\frac{3}{4}``,
  ``50%``, ``42 meters``, ``$1,200.50``);
* **choice** (:func:`extract_choice`): a multiple-choice letter in its usual shapes (``C``, ``(C)``, ``C)``,
  ``Answer: C``, ``the correct option is C``), ``None`` when two letters compete.

Everything first drops reasoning blocks (``<think>...</think>``, ``<reasoning>``), which hold drafts, not
answers: :func:`strip_reasoning`. :func:`normalize` is the canonical string form used by ``exact``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any

from ..errors import AssayInputError

__all__ = ["extract_boxed", "extract_answer", "extract_choice", "extract_auto", "extract_label", "normalize",
           "parse_number", "strip_reasoning", "resolve_extract", "EXTRACTORS", "parse_options",
           "extract_statement", "extract_number", "word_number"]

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

    Parameters
    ----------
    text : str or None
        A model's response.

    Returns
    -------
    str or None
        The stripped content of the last box, or ``None``.

    Raises
    ------
    AssayInputError
        If ``text`` is neither a string nor None.

    Examples
    --------
    >>> print(extract_boxed("so x = \\\\boxed{\\\\frac{1}{2}}"))
    \\frac{1}{2}
    >>> print(extract_boxed("no box here"))
    None
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
_QUOTES = "'\"\u2018\u2019\u201c\u201d`"


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
        if len(v) >= 2 and v[0] in _QUOTES and v[-1] in _QUOTES:  # 'closed', "mice", “mice”
            v = v[1:-1]
        elif v and v[-1] in _QUOTES and v.count(v[-1]) == 1:  # a stray closing quote: 19'
            v = v[:-1]
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

    Parameters
    ----------
    text : str or None
        A model's response.
    prefix : str, optional
        The word before the colon (default ``"Answer"``); a non-empty string.

    Returns
    -------
    str or None
        The trimmed value, or ``None``.

    Raises
    ------
    AssayInputError
        If ``text`` is neither a string nor None, or ``prefix`` is not a non-empty string.

    Examples
    --------
    >>> extract_answer("Work...\\nThe rest.\\n**Answer:** 42.")
    '42'
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
    r"(?<![A-Za-z])(?:answer|option|choice)(?:\s+(?:is|would\s+be|should\s+be|=)\s*:?\s*|\s+(?=[(\[]?[A-Z][)\].:]))",
    re.IGNORECASE,
)
_IS_TOKEN = re.compile(r"(?:[(\[]\s*([A-Za-z])\s*[)\]]|([A-Z])(?![A-Za-z0-9'\u2019]))")
_IS_MORE = re.compile(
    r"^\s*(?:,|/|&|\bor\b|\band\b)\s*(?:[(\[]\s*([A-Za-z])\s*[)\]]|([A-Z])(?![A-Za-z0-9]))",
    re.IGNORECASE,
)


_OPTION_LINE = re.compile(r"^(?:option\s+)?[(\[]?([A-Z])[)\].:](?:\s|$)", re.IGNORECASE)


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


def _choice_with_reason(text: str | None, choices: Any = "ABCD",
                        options: dict[str, str] | None = None) -> tuple[str | None, str]:
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
        cands.append((found[1], letter, why, "Answer:", _after_letter(found[2], letter)))
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
            cands.append((m.end() + tok.end(), None, f"ambiguous: {letter}, {other}", "answer is", ""))
        else:
            cands.append((m.end() + tok.end(), letter, None, "answer is", rest[tok.end():]))
        break
    boxes = list(_BOX_RE.finditer(cleaned))
    if boxes:
        boxed = extract_boxed(cleaned)
        if boxed is not None:
            letter, why = _letter_in(boxed, letters)
            cands.append((boxes[-1].end() + len(boxed), letter, why, "boxed", _after_letter(boxed, letter)))
    # The marker stated last wins: models that correct themselves restate the answer at the end.
    for _, letter, why, rule, tail in sorted(cands, key=lambda c: c[0], reverse=True):
        if letter is not None:
            return _checked_option(letter, tail, options, f"{rule} {letter}")
        if why is not None:
            return None, f"{why} ({rule})"
    lines = [ln for ln in cleaned.splitlines() if ln.strip()]
    if lines:
        m = _WHOLE_LETTER.match(lines[-1].strip())
        if m and m.group(1).upper() in letters:
            return m.group(1).upper(), f"final line {m.group(1).upper()}"
        # an answer that starts with an option as the prompt listed it: "A) Paris", "Option B: 19"; several option
        # lines ("A) 76" then "D) 24") list options without choosing one
        leads = [(m, ln) for ln in lines if (m := _OPTION_LINE.match(ln.strip())) and m.group(1).upper() in letters]
        if len({m.group(1).upper() for m, _ in leads}) > 1:
            return None, "ambiguous: " + ", ".join(_distinct(m.group(1).upper() for m, _ in leads)) + " (option lines)"
        lead = _OPTION_LINE.match(lines[0].strip())
        if lead and lead.group(1).upper() in letters:
            letter = lead.group(1).upper()
            if options and len(lines) > 1:
                later = extract_auto("\n".join(lines[1:]))
                other = [k for k, v in options.items() if k != letter and later is not None
                         and normalize(v) == normalize(later)]
                if other:  # "A) 62" then "The largest number is indeed 13" (13 is B): no one answer
                    return None, f"ambiguous: {letter}, then option {other[0]}'s text"
            return _checked_option(letter, lines[0].strip()[lead.end():], options, f"leading option {letter}")
    if options:
        # an option named by its text instead of its letter: "The largest number is 11"
        value = extract_auto(text)
        if value is not None:
            hit = [k for k, v in options.items() if k in letters and normalize(v) == normalize(value)]
            if len(hit) == 1:
                return hit[0], f"option text {value!r}"
    return None, f"no choice among {letters} found"


def _after_letter(value: str, letter: str | None) -> str:
    """What a marker's value says right after its letter (``"26"`` in ``"A) 26"``)."""
    if letter is None:
        return ""
    m = re.search(rf"(?<![A-Za-z]){letter}(?![A-Za-z])", value, re.IGNORECASE)
    return value[m.end():] if m else ""


def _checked_option(letter: str, after: str, options: dict[str, str] | None, why: str) -> tuple[str | None, str]:
    """``letter`` unless the text written right after it names another option (``A) 14`` when A is 33)."""
    if not options or letter not in options:
        return letter, why
    m = re.match(r"^\s*[)\].:]?\s*([^\n.;,]*)", after)
    said = m.group(1).strip() if m else ""
    if said and normalize(said) != normalize(options[letter]):
        if any(normalize(said) == normalize(v) for k, v in options.items() if k != letter):
            return None, f"letter {letter} and option text {said!r} disagree"
    return letter, why


_OPTION_DEF = re.compile(r"^\s*[(\[]?([A-Z])[)\].:]\s+(.+?)\s*$")


def parse_options(prompt: Any) -> dict[str, str]:
    """The options a multiple-choice prompt lists, one per line (``A) Paris``, ``(B) Rome``, ``C. Berlin``).

    The result is ``{"A": "Paris", ...}``; empty when the prompt lists none (chat messages: the last user message is
    read).

    Parameters
    ----------
    prompt : str or list of dict
        The prompt: a string, or chat messages (dicts with ``role`` and ``content``).

    Returns
    -------
    dict of str to str
        Option letter -> option text (the first definition of a letter wins); empty when fewer than two options are
        found or the prompt is not text.

    Examples
    --------
    >>> parse_options("Capital of France?\\nA) Paris\\nB) Rome\\nC) Berlin")
    {'A': 'Paris', 'B': 'Rome', 'C': 'Berlin'}
    """
    if isinstance(prompt, (list, tuple)):
        users = [m.get("content") for m in prompt if isinstance(m, dict) and m.get("role") == "user"]
        prompt = users[-1] if users else None
    if not isinstance(prompt, str):
        return {}
    out: dict[str, str] = {}
    for line in prompt.splitlines():
        m = _OPTION_DEF.match(line)
        if m:
            out.setdefault(m.group(1), m.group(2))
    return out if len(out) >= 2 else {}


def extract_choice(text: str | None, choices: Any = "ABCD", options: dict[str, str] | None = None) -> str | None:
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
       counts; else a response that starts with an option written as the prompt lists them (``A) Paris``,
       ``(B) 26``) gives that option's letter.

    Letters outside ``choices`` never count, so with choices up to ``J`` a standalone ``I`` in an
    answer line is read as option I.

    Parameters
    ----------
    text : str or None
        The model's response.
    choices : str or list of str, default "ABCD"
        The valid letters.
    options : dict of str to str, optional
        The options the prompt lists, letter -> option text.

    Returns
    -------
    str or None
        The letter, or ``None`` when nothing matches or the answer is ambiguous.

    Examples
    --------
    >>> extract_choice("B looks wrong at first. Answer: (C)")
    'C'
    >>> print(extract_choice("Answer: C or D"))
    None
    >>> extract_choice("(B) 26", "ABCDE")
    'B'
    """
    return _choice_with_reason(text, choices, options)[0]


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

    Parameters
    ----------
    s : str, int, float, Decimal or Fraction
        The answer.

    Returns
    -------
    str
        Its canonical form.

    Raises
    ------
    AssayInputError
        If ``s`` is not a string or a number (a bool is refused).

    Examples
    --------
    >>> normalize("$1,000.50$"), normalize(" 3.0 "), normalize("Paris.")
    ('1000.5', '3', 'paris')
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


_UNEVALUATED = re.compile(r"\u221a|sqrt|\^|\*\*|\\sqrt", re.IGNORECASE)


def parse_number(s: str | None) -> float | None:
    """The number an answer states, or ``None``.

    The whole (normalised) answer is tried first: ``1,000``, ``-2.50``, ``1e-3``, ``1/2``,
    ``\\frac{3}{4}``, ``-\\frac{1}{2}``, ``50%`` (-> 50). Otherwise the *last* number in the
    answer is used (``x = 3, so y = 5`` -> 5; ``42 meters`` -> 42); without digits, the last number written in
    words (``six`` -> 6, ``twenty-four`` -> 24).

    Parameters
    ----------
    s : str or None
        An extracted answer.

    Returns
    -------
    float or None
        The number, or ``None`` when there is none (or the answer is an unevaluated expression such as ``sqrt(9)``).

    Raises
    ------
    AssayInputError
        If ``s`` is neither None nor a string or number (from :func:`normalize`).

    Examples
    --------
    >>> parse_number("x = 3, so y = 5"), parse_number("twenty-four"), parse_number("1/2")
    (5.0, 24.0, 0.5)
    """
    if s is None:
        return None
    s = normalize(s)
    x = _whole_number(s)
    if x is not None:
        return x
    found = _ANY_NUMBER.findall(s)
    if not found:
        words = list(_WORD_NUMBER.finditer(s))  # "six", "twenty-four": a number written in words
        return float(word_number(words[-1].group(0))) if words else None
    if _UNEVALUATED.search(s):  # "sqrt(9)", "2^3", "x**2": an expression, not the number written last
        return None
    return _whole_number(normalize(found[-1].replace(" ", "")))


# --- reasoning blocks ------------------------------------------------------------------------------

_THINK = re.compile(r"<(think|thinking|reasoning|reflection)>.*?</\1>", re.IGNORECASE | re.DOTALL)
_THINK_OPEN = re.compile(r"<(?:think|thinking|reasoning|reflection)>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"^.*?</(?:think|thinking|reasoning|reflection)>", re.IGNORECASE | re.DOTALL)


def strip_reasoning(text: str | None) -> str | None:
    """``text`` without its reasoning blocks.

    ``<think>...</think>`` (and ``<thinking>``, ``<reasoning>``, ``<reflection>``) are removed; an unclosed opening
    tag drops everything after it (a draft cut off before any answer); a closing tag without its opening (templates
    that put ``<think>`` in the prompt) drops everything before it.

    Parameters
    ----------
    text : str or None
        A model's response.

    Returns
    -------
    str or None
        The text without reasoning blocks (``text`` itself when it is empty or None).

    Examples
    --------
    >>> strip_reasoning("<think>2 + 2 = 4</think>The answer is 4.").strip()
    'The answer is 4.'
    """
    if not text:
        return text
    out = _THINK.sub(" ", text)
    out = _THINK_CLOSE.sub(" ", out, count=1)
    m = _THINK_OPEN.search(out)
    if m:
        out = out[:m.start()]
    return out


# --- an answer stated in a sentence ---------------------------------------------------------------

# "the answer is 42", "The final answer is: True", "the value of zyc is True", "x = 7", "the result is 3.5",
# "so the solution is B"; the LAST such statement counts (models restate their answer at the end)
_STATED = re.compile(
    r"(?<![A-Za-z])(?:(?:final|correct|right)\s+)?(?:answer|result|solution|value(?:\s+of\s+[A-Za-z_][\w']*)?|"
    r"output|total|sum)\s*(?:is|would\s+be|will\s+be|should\s+be|equals|=|:)\s*:?\s*"
    r"(?P<v>[^\n]*)", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<!\d)[.!;](?:\s|$)|[.!;]$|,\s+(?:so|which|because|since|as|and)\b", re.IGNORECASE)


def _stated(text: str) -> str | None:
    """The value of the last "the answer is X" / "the value of n is X" / "x = X" statement, up to its sentence end.

    Values of several different named quantities ("The value of ych is 7. The value of rpw is 10.") are a list of
    intermediate results, not an answer: ``None`` unless an "answer" / "result" statement comes last."""
    found = None
    names: set[str] = set()
    for m in _STATED.finditer(text):
        v = m.group("v")
        end = _SENTENCE_END.search(v)
        v = _trim_value(v[:end.start()] if end else v)
        if not v:
            continue
        named = re.match(r"(?:(?:final|correct|right)\s+)?value\s+of\s+([A-Za-z_][\w']*)", m.group(0), re.IGNORECASE)
        if named:
            names.add(named.group(1).lower())
        found = (v, bool(named))
    if found is None:
        return None
    value, by_name = found
    return None if (by_name and len(names) > 1) else value


# "<subject> is <answer>." as the response's last sentence: "The opposite of 'open' is 'closed'.", "The day after
# Friday is Sunday." (a short predicate only: at most three words)
_COPULA = re.compile(r"\b(?:is|equals)\s+(?P<v>[^\s.!?,;:]+(?:\s+[^\s.!?,;:]+){0,2})[\s.!'\"\u2018\u2019\u201c\u201d]*"
                     r"(?:[,;][\"'\u2019\u201d]?\s+(?:as|which|because|since|meaning)\b.*)?$", re.IGNORECASE)
# "... = 40 coins in total" on the last line of a worked answer
_EQUATION = re.compile(r"(?:^|(?<=[\d)]))\s*=\s*(?P<v>[-+]?\$?\d[\d,]*(?:\.\d+)?)(?![\d.]*\s*[-+*/x×÷])")


def _last_sentence(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    if not lines:
        return ""
    parts = [p for p in re.split(r"(?<=[.!?])\s+", lines[-1].strip()) if p.strip()]
    return parts[-1] if parts else ""


_ADVERBS = ("usually", "actually", "simply", "indeed", "just", "probably", "always", "often", "clearly", "therefore")
#: "14 is the answer.", "There are 3 bags in total, which is the answer.", "... = 300 boxes, which is his answer"
_IS_THE_ANSWER = re.compile(r"(?P<v>(?:[^\n.!?]|(?<=\d)\.(?=\d))*?)\s*,?\s*(?:which\s+)?is\s+(?:the|his|her|my|our|their)\s+"
                            r"(?:final\s+|correct\s+|right\s+)?answer\b",
                            re.IGNORECASE)
#: the conclusion inside an "X is the answer" statement: "28 is less than 22, so 20 apples"
_SO_CLAUSE = re.compile(r"(?:^|[,;]\s*)(?:so|therefore|thus|hence)\b,?\s*", re.IGNORECASE)
#: a first line that is one token, alone or followed by an explanation: "32", "Astra-nar", "April - The month..."
_LEADING_TOKEN = re.compile(r"^(?P<v>[^\s,;:]+?)[.!]?(?:\s+[-\u2013\u2014]\s+(?=[A-Za-z]).*|,\s+(?=[A-Za-z]).*)?$")
#: the most words a one-line answer may have to be taken whole ("Dusk", "Day before tomorrow")
SHORT_ANSWER_WORDS = 3


def _copula(text: str) -> str | None:
    m = _COPULA.search(_last_sentence(text))
    if not m:
        return None
    words = _trim_value(m.group("v").strip(_QUOTES + "()")).split()
    while words and words[0].lower() in _ADVERBS:
        words = words[1:]
    v = _trim_value(" ".join(words).strip(_QUOTES))
    low = v.lower()
    if not v or low.startswith(("not", "no ", "a ", "an ", "the ")) or low in ("a", "an", "the"):
        return None  # "is not a word", "is a non-existent day": a description, not an answer
    if re.search(r"[*/=+^]|\s-\s", v):  # an expression ("7*dcd - 5"), not an answer
        return None
    return v


_HASHES = re.compile(r"^\s*####\s*(?P<v>\S[^\n]*)$", re.MULTILINE)


def _hashes(text: str) -> str | None:
    """GSM8K's final-answer line, ``#### 8`` (the last one)."""
    found = list(_HASHES.finditer(text))
    return _trim_value(found[-1].group("v")) or None if found else None


def _last_marker(text: str) -> str | None:
    """The value of the answer marker stated last: an ``Answer:`` line, ``#### X`` or "the answer is X"."""
    cands: list[tuple[int, str]] = []
    found = _last_answer(text, "Answer")
    if found is not None and found[2] is not None:
        cands.append((found[0], found[2]))
    hashes = list(_HASHES.finditer(text))
    if hashes and _trim_value(hashes[-1].group("v")):
        cands.append((hashes[-1].start(), _trim_value(hashes[-1].group("v"))))
    stated = _stated(text)
    if stated is not None:
        cands.append((max(m.start() for m in _STATED.finditer(text)), stated))
    return max(cands)[1] if cands else None


def extract_statement(text: str | None) -> str | None:
    """An answer stated in words or by an equation.

    Without the one-line and leading-token rules of :func:`extract_auto`, the forms read are: ``#### 8``,
    "the answer is X", "X is the answer", or an arithmetic equation's result on the last line. For answers passed
    on unchanged to another scorer (reasoning-gym's), where a short reply such as "no answer here" must stay no
    answer.

    Parameters
    ----------
    text : str or None
        A model's response; reasoning blocks are dropped first (:func:`strip_reasoning`).

    Returns
    -------
    str or None
        The stated answer, or ``None``.

    Raises
    ------
    AssayInputError
        If ``text`` is neither a string nor None.

    Examples
    --------
    >>> extract_statement("#### 8")
    '8'
    >>> print(extract_statement("no answer here"))
    None
    """
    text = strip_reasoning(_check_text(text, "extract_statement"))
    if not text or not text.strip():
        return None
    return _last_marker(text) or _is_the_answer(text) or _equation(text)


def _is_the_answer(text: str) -> str | None:
    found = None
    for m in _IS_THE_ANSWER.finditer(text):
        v = _trim_value(m.group("v"))
        if v:
            found = v
    return found


def _leading(text: str) -> str | None:
    """The first line when it is a single token, alone or before an explanation (``32`` then a worked answer)."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    if len(lines) < 2 and not re.search(r"\s[-\u2013\u2014]\s+[A-Za-z]|,\s+[A-Za-z]", lines[0] if lines else ""):
        return None
    lone = {normalize(_trim_value(ln)) for ln in lines if _whole_number(normalize(_trim_value(ln))) is not None}
    if len(lone) > 1:
        return None  # "10", "2", "3", "4" on lines of their own: a list, not an answer and its explanation
    m = _LEADING_TOKEN.match(lines[0])
    return _trim_value(m.group("v")) or None if m else None


def _equation(text: str) -> str | None:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    if not lines:
        return None
    found = list(_EQUATION.finditer(lines[-1]))
    return found[-1].group("v") if found else None


def extract_auto(text: str | None) -> str | None:
    """Default extractor: the first of these that finds an answer.

    1. the last ``\\boxed{}``;
    2. the last ``Answer:`` line, or GSM8K's ``#### X``;
    3. the last "the answer is X" / "the value of zyc is X" / "the result = X" statement, or "X is the answer";
    4. a last sentence of the form "<subject> is <short answer>." (``The plural of 'mouse' is mice.``; at most three
       words after "is", an adverb such as "usually" dropped; "is not ..." is no answer);
    5. a one-line response of at most :data:`SHORT_ANSWER_WORDS` words, taken whole (``Dusk``; models told to "reply
       with just the number" do that);
    6. a first line that is one token before an explanation (``32`` then lines of reasoning; ``April - The month
       of April...``);
    7. the result of an equation on the last line (``5 * 9 = 45 coins in total`` -> ``45``).

    Reasoning blocks are dropped first (:func:`strip_reasoning`). Anything else is unparseable: a long sentence
    that states no answer ("The month comes after March.") is not read as one.

    Parameters
    ----------
    text : str or None
        A model's response.

    Returns
    -------
    str or None
        The answer, or ``None`` when the response states none.

    Raises
    ------
    AssayInputError
        If ``text`` is neither a string nor None.

    Examples
    --------
    >>> extract_auto("Let me think.\\nThe answer is 42.")
    '42'
    >>> extract_auto("5 * 9 = 45 coins in total")
    '45'
    """
    text = _check_text(text, "extract_auto")
    text = strip_reasoning(text)
    if not text or not text.strip():
        return None
    boxed = extract_boxed(text)
    if boxed is not None:
        return boxed
    marked = _last_marker(text)  # Answer:, ####, "the answer is": the one stated last wins
    if marked is not None:
        return marked
    for fn in (_is_the_answer, _copula):
        v = fn(text)
        if v is not None:
            return v
    stripped = text.strip()
    if "\n" not in stripped and len(stripped.split()) <= SHORT_ANSWER_WORDS:
        return _trim_value(stripped) or None
    return _leading(text) or _equation(text)


# --- numbers stated as a final answer ---------------------------------------------------------------

_UNITS_WORDS = {"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
                "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
                "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19}
_TENS_WORDS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
               "ninety": 90}
_SMALL = "|".join(sorted(_UNITS_WORDS, key=len, reverse=True))
_TENS = "|".join(_TENS_WORDS)
_BELOW_100 = rf"(?:(?:{_TENS})(?:[-\s](?:{_SMALL}))?|{_SMALL})"
#: a number written in words, up to the thousands: "six", "twenty-four", "one hundred and five", "two thousand"
_WORD_NUMBER = re.compile(
    rf"(?<![A-Za-z-])(?:(?:{_BELOW_100}|a)\s+thousand(?:,?\s+(?:and\s+)?(?:{_BELOW_100}\s+hundred(?:\s+(?:and\s+)?"
    rf"{_BELOW_100})?|{_BELOW_100}))?|(?:{_BELOW_100}|a)\s+hundred(?:\s+(?:and\s+)?{_BELOW_100})?|{_BELOW_100})"
    rf"(?![A-Za-z-])", re.IGNORECASE)


def _below_100(words: str) -> int:
    parts = re.split(r"[-\s]+", words.strip().lower())
    return sum(_TENS_WORDS.get(w, 0) + _UNITS_WORDS.get(w, 0) for w in parts)


def word_number(s: str) -> int | None:
    """The value of a number written in words, or ``None`` when ``s`` is not one.

    Examples of the forms: ``"six"`` -> 6, ``"twenty-four"`` -> 24, ``"one hundred and five"`` -> 105,
    ``"two thousand"`` -> 2000.

    Parameters
    ----------
    s : str
        The words (case and surrounding whitespace are ignored).

    Returns
    -------
    int or None
        The value, or ``None``.

    Examples
    --------
    >>> word_number("one hundred and five")
    105
    >>> print(word_number("banana"))
    None
    """
    s = s.strip().lower()
    if not _WORD_NUMBER.fullmatch(s):
        return None
    total = 0
    rest = s
    m = re.match(r"^(.*?)\s+thousand(?:,?\s+(?:and\s+)?(.*))?$", rest)
    if m:
        total += (1 if m.group(1) == "a" else _below_100(m.group(1))) * 1000
        rest = m.group(2) or ""
    m = re.match(r"^(.*?)\s+hundred(?:\s+(?:and\s+)?(.*))?$", rest)
    if m:
        total += (1 if m.group(1) == "a" else _below_100(m.group(1))) * 100
        rest = m.group(2) or ""
    if rest:
        total += _below_100(rest)
    return total


#: a number as a final answer writes it: digits with thousands separators, decimals, a fraction, a sign, a currency
#: sign or a percent, a short unit written against it ("2cm", "5kg"); not an ordinal ("19th") nor a part of a longer
#: token ("4oola", "x2")
_NUMBER_TOKEN = re.compile(
    r"(?<![\w.,/])(?:[-+]|\u2212)?\$?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?(?:\s*/\s*\d+(?:\.\d+)?)?%?"
    r"(?:(?=(?!(?:st|nd|rd|th|[xyzn])\b)[A-Za-z]{1,3}(?![\w]))|(?![\w/]|\.\d))")
#: what states a quantity before it: "=", "is", "has", "makes", "gives", "equals", "a total of", "≈" ...
_CUE = re.compile(r"(?:=|\u2248|~|\bit['\u2019]s\b|\b(?:is|are|was|were|equals?|equal\s+to|equivalent\s+to|has|have|had|makes?|gives?|get|gets|"
                  r"becomes?|leaves?|total\s+of|comes?\s+to|adds?\s+up\s+to|consists?\s+of|contains?|"
                  r"simplif(?:y|ies)\s+to|round(?:s|ed)?(?:\s+(?:down|up))?\s+to)\b)", re.IGNORECASE)
#: an unevaluated expression or a range right after a number: "18 - 32", "2 * 13", "6*8", "6 * Tariq's amount",
#: "5 to 10", "23 minus 20"
_OPERATOR_AFTER = re.compile(r"^\s*(?:(?:[-+\u2212]|[*/\u00d7\u00f7^]|\*\*)\s*(?:\d|\()|(?:[*/\u00d7\u00f7^]|\*\*)\s*[A-Za-z]"
                             r"|x\s+(?:\d|[A-Za-z])|x\d|(?:to|or)\s+\d"
                             r"|(?:minus|plus|times|divided\s+by|multiplied\s+by)\s+\S)", re.IGNORECASE)
#: words between a verb and a number that make it no amount the clause states: "is not 40", "contain no more than
#: 10", "at most 5"
_NOT_STATED = re.compile(r"\bnot\b|\b(?:more|less|fewer)\s+than\b|\bat\s+(?:most|least)\b|\bup\s+to\b", re.IGNORECASE)
#: a second amount after a number and its unit: "1 hour and 45 minutes"
_TWO_AMOUNTS = re.compile(r"(?:[ \t]+[A-Za-z]+)?[ \t]+and[ \t]+\d")
#: a verb followed by a place, not an amount: "50 grams are in 5 kilograms", "240 seconds are in 4 minutes"
_PLACE = re.compile(r"\s*(?:in|inside|within|on|at|from|per)\s+(?!total\b|all\b)", re.IGNORECASE)
#: words that make the number after them an operand or a part of a description, not a stated quantity: "is
#: divided by 5", "equivalent to finding the remainder when dividing 53 by 10", "is the difference between the
#: number of 1s"
_OPERAND_BEFORE = re.compile(r"\b(?:by|minus|plus|times|over|dividing|multiplying|adding|subtracting|divided|"
                             r"multiplied|subtracted|added|difference|product|quotient|remainder|sum\s+of|number\s+of|"
                             r"multiple\s+of|factor\s+of)\s*$|\b(?:dividing|multiplying|adding|subtracting|taking)\b"
                             r"|\b(?:sum|difference|product|quotient)\s+(?:of|between)\b",
                             re.IGNORECASE)
#: a list item's marker at the start of a line: "1.", "2)", "Step 3:", "- ", "* "
_LIST_MARKER = re.compile(r"^\s*(?:(?:step\s+)?\d+\s*[.):]|[-*\u2022])\s+", re.IGNORECASE)
#: a sentence that opens as a conclusion: "So, ...", "Therefore ...", "In total ..."
_CONCLUDES = re.compile(r"^\W*(?:so|therefore|thus|hence|in\s+total|in\s+all|this\s+means|finally)\b", re.IGNORECASE)
#: a line that is an equation ending on its result: "30 - 28 = 16"
_EQUATION_LINE = re.compile(r"^[^=\n]*\d[^=\n]*=\s*(?P<v>[-+]?\d[\d,]*(?:\.\d+)?)\s*$")
#: what may come before the number an answer's value opens with: "indeed 2", "about 30"
_VALUE_HEAD = re.compile(r"\s*(?:(?:indeed|actually|simply|just|probably|clearly|exactly|approximately|about|roughly|"
                         r"around)\s+)*", re.IGNORECASE)
#: a condition that opens a sentence ("When you have 30, ..."), and one that follows the main clause ("... 35 when
#: divided by 9", "... because it leaves a remainder of 0", "... where a = 34 and b = 16")
_CONDITION_FIRST = re.compile(r"^\W*(?:when|if|unless|because|since)\b[^,]*,", re.IGNORECASE)
_CONDITION_AFTER = re.compile(r"\s(?:when|if|unless|because|since|where)\s", re.IGNORECASE)
#: a clause that explains the amount just stated: "0.5 meters, which is the same as 1.5 feet"
_WHICH_AFTER = re.compile(r",\s*which\s+(?:is|are)\s+(?:the\s+same|equivalent|equal|also|the\s+equivalent)\b",
                          re.IGNORECASE)
#: the opening of a conversion's statement: "16 meters is equal to ", "20 years is approximately "
_CONVERSION = re.compile(r"^\W*[-+]?\d[\d,.]*\s+[A-Za-z]+\s+(?:is|are|equals)\s+(?:(?:approximately|about|roughly|exactly)\s+)?"
                         r"(?:(?:equal|equivalent)\s+to\s+)?(?:(?:approximately|about|roughly)\s+)?$", re.IGNORECASE)
#: a term with an unknown written against its number: "2x", "3y + 1"
_ALGEBRA = re.compile(r"\s*[-+]?\d+(?:\.\d+)?[xyzn]\b")
#: a statement taken back right after it: "16 + 27 = 45, but that's incorrect.", "... has 88 keys, but 88 is not a
#: correct answer", "11*6 = 62 is incorrect.", "30 + 21 = 51 is not possible", "..., which is close to my answer but
#: not quite"
_REJECTED = re.compile(r"^[^.!?]*?\bbut\s+(?:that|this|it|[-+]?\d[\d,.]*)(?:'s|\s+is)\s+"
                       r"(?:not\s+(?:a\s+)?(?:right|correct|possible)|incorrect|wrong)\b"
                       r"|^\s*(?:is|was)\s+(?:not\s+(?:a\s+)?(?:right|correct|possible)|incorrect|wrong)\b"
                       r"|^[^.!?]*?\bbut\s+not\s+quite\b",
                       re.IGNORECASE)
#: a first line that is a number with a gloss in parentheses: "13 (months)"
_GLOSSED_LEAD = re.compile(r"^\s*([-+]?\d[\d,]*(?:\.\d+)?)\s*\([^()\n]*\)[ \t]*[.!]?[ \t]*\n")
_GLOSSED_LINE = re.compile(r"^[ \t]*[-+]?\d[\d,]*(?:\.\d+)?[ \t]*\([^()\n]*\)[ \t]*[.!]?[ \t]*$", re.MULTILINE)
#: words that make an "answer:" another one than the response gives: "A previous answer: 24"
_OTHER_ANSWER = re.compile(r"\b(?:previous|target|expected|desired|wrong|incorrect)\s+$", re.IGNORECASE)
#: the answer named before its value: "the answer is", "the answer to this question is", "the final answer would be",
#: and the result, total or solution stated the same way (the value is a lookahead: a later statement inside the
#: value, "... is 8/35. The correct final answer was 9", is found as a match of its own)
_ANSWER_IS_NUMERIC = re.compile(
    r"(?<![A-Za-z])(?:(?:final|correct|right)\s+)?(?:answer(?:\s+to\s+(?:this|the|your)\s+(?:question|problem))?|"
    r"result|solution|total|sum)[ \t]*(?:is|was|would\s+be|will\s+be|should\s+be|equals|=|:)[ \t]*:?[ \t]*(?=(?P<v>[^\n]*))",
    re.IGNORECASE)


#: where an answer statement's value ends: its sentence ("17. There are 3 more ..." ends at 17; a decimal point is
#: followed by a digit, not a space), or a reason given for it ("..., because 3 boxes hold 4");
#: a clause that goes on with the value ("the total of two and four, which makes six") is part of it
_REASON_END = re.compile(r"[.!;](?:\s|$)|,\s+(?:because|since|as)\b", re.IGNORECASE)


def _blank_parentheses(s: str) -> str:
    """``s`` with every (...) blanked out, positions kept: "30 coins (the original 18 + the new 2)" states 30."""
    out, depth = [], 0
    for ch in s:
        if ch == "(":
            depth += 1
        out.append(" " if depth else ch)
        if ch == ")" and depth:
            depth -= 1
    return "".join(out)


def _numbers_in(s: str, words: bool = True) -> list[tuple[int, int, str]]:
    """(start, end, text) of every number in ``s`` (parentheses blanked first), in digits and, with ``words``, in
    words."""
    found = [(m.start(), m.end(), m.group(0)) for m in _NUMBER_TOKEN.finditer(s)]
    if words:
        found += [(m.start(), m.end(), m.group(0)) for m in _WORD_NUMBER.finditer(s)]
    return sorted(found)


def _stated_at(clause: str, words: bool = True) -> tuple[int, str] | None:
    """(position, number) of the number a clause states after its last cue that is followed by one ("so Omar now has 20 cards" -> 20,
    "= 7 + 17 - 24 = 50 shells" -> 50, "is 31 days, not 40" -> 31); ``None`` when that number starts an unevaluated
    cue is followed by a number, ``(position, "")`` when the number it states starts an unevaluated expression or a range ("is
    18 - 32", "is 5 to 10")."""
    clause = _blank_parentheses(clause)
    nums = _numbers_in(clause, words)
    if not nums:
        return None
    for cue in reversed(list(_CUE.finditer(clause))):
        if _ALGEBRA.match(clause, cue.end()):
            return cue.end(), ""  # "= 2x", "is 3x + 1": a term with an unknown, no number
        after = [n for n in nums if n[0] >= cue.end()]
        if not after:
            continue
        start, end, tok = after[0]
        between = clause[cue.end():start]
        if cue.group(0)[:2].lower() == "it" and _VALUE_HEAD.match(between).end() != len(between):
            continue  # "It's an exception to the traditional 365 days": "it's" states only the number right after it
        if _NOT_STATED.search(between) or len(between.split()) > 6 or _PLACE.match(between):
            continue  # "is not 40", "no more than 10", or a number far from the verb: not what the clause states
        if _OPERAND_BEFORE.search(between) or _OTHER_ANSWER.search(re.sub(r"\W*answer\W*$", " ", between)):
            continue  # "is divided by 5", "equivalent to multiplying 2 by 4", "equal to our target answer: 3": an
            # operand or another's answer, not what the clause states
        if (re.search(r"[+*/\u00d7\u00f7^]|\s-\s", between) or _OPERATOR_AFTER.match(clause[end:])
                or _TWO_AMOUNTS.match(clause[end:])):
            return start, ""  # an expression, a range or two amounts ("1 hour and 45 minutes"): no one number
        return start, tok
    return None


def _number_value(s: str) -> str | None:
    """The number an answer marker's value states: the number stated after its last cue ("the total of two and
    four, which makes six" -> six; "36 - 13 = 20 cookies left" -> 20), else the number it opens with ("9 zeros in
    one thousand" -> 9), else its last number; an operand is never the value ("the difference between the number of
    1s ..."); ``None`` without one, for an unevaluated expression ("18 (Mateo) - 32 (Jonas)", "23 minus 20") and for
    a value that is no answer ("not provided", "to use trial and error")."""
    if not s or re.match(r"^\W*(?:not|to)\b", s, re.IGNORECASE) or _ALGEBRA.match(s):
        return None  # "not provided", "to use trial and error", "3x + 1"
    if _whole_number(normalize(s)) is not None:
        return s  # the whole value is a number: "1,000", "\\frac{1}{2}", "-3/4", "50%"
    head = _VALUE_HEAD.match(s).end()
    first = _NUMBER_TOKEN.match(s, head)
    if first and re.match(r"\s+(?:more|less|fewer)\s+than\b[^=]*$", s[first.end():], re.IGNORECASE):
        # "The answer is 2 more than Lucas's total of 100." -> 2, the difference it gives (but "1 more than 2*3 =
        # 3+1 = 4" reaches 4)
        return first.group(0)
    x = _stated_at(s)
    if x is not None:
        return x[1] or None
    blank = _blank_parentheses(s)
    nums = [n for n in _numbers_in(blank) if not _OPERAND_BEFORE.search(blank[:n[0]])]  # not "the number of 1s"
    if not nums:
        return None
    if nums[0][0] == _VALUE_HEAD.match(blank).end() and not _OPERATOR_AFTER.match(blank[nums[0][1]:]):
        return nums[0][2]  # the value opens with its number: "9 zeros in one thousand", "indeed 2, with ..." -> 9, 2
    start, end, tok = nums[-1]
    if _OPERATOR_AFTER.match(blank[end:]) or (len(nums) > 1 and _OPERATOR_AFTER.match(blank[nums[-2][1]:])):
        return None  # an unevaluated expression, not a number
    return tok


def _sentences(text: str) -> list[tuple[int, str]]:
    """(start, sentence) of the text's sentences, list markers removed, in order."""
    out = []
    for line_m in re.finditer(r"[^\n]+", text):
        line = line_m.group(0)
        lead = _LIST_MARKER.match(line)
        base = line_m.start() + (lead.end() if lead else 0)
        body = line[lead.end():] if lead else line
        for m in re.finditer(r"(?:[^.!?]|\.(?=\d)|\.(?!\s|$))+[.!?]*", body):
            if m.group(0).strip():
                out.append((base + m.start(), m.group(0)))
    return out


#: a name given a value at the start of a line, a list item or a clause ("hwb = 1, bxp = 10", "2. ikr = 4"), or
#: "the value of nea is 8"; two or more names given values are a list of values
_ASSIGNED = re.compile(r"(?:(?:^|[,;]\s*|\band\s+)(?:\d+[.)]\s*)?([A-Za-z_][A-Za-z_0-9]{0,11})\s*(?:=|\u2248)\s*"
                       r"[-\d\u221a(]|\bvalue\s+of\s+([A-Za-z_][A-Za-z_0-9]*)\s+(?:is|equals|=))",
                       re.IGNORECASE | re.MULTILINE)
#: a sentence about a named value that states no number ("The value of nea equals the square of rxk."): it ends the
#: search, it is not passed over (an answer restated in words, "The answer is a number.", is passed over)
_NAMED_VALUE = re.compile(r"^\W*(?:so,?\s+)?the\s+(?:final\s+)?values?\s+of\b", re.IGNORECASE)
#: the noun counted in "How many (more) marbles ..."
_ASKED = re.compile(r"\bhow\s+many\s+(?:more\s+|fewer\s+|less\s+|additional\s+|extra\s+)?([A-Za-z]+)", re.IGNORECASE)
_NOT_NOUNS = {"more", "fewer", "less", "additional", "extra", "full", "whole", "total", "new", "remaining", "left",
              "of", "in", "than", "and", "or", "the", "a", "an", "times", "per", "each", "now", "all"}


def _stem(word: str) -> str:
    w = word.lower()
    for suf in ("ies", "es", "s"):
        if w.endswith(suf) and len(w) > len(suf) + 2:
            return w[:-len(suf)] + ("y" if suf == "ies" else "")
    return w


def _asked_stem(question: str | None) -> str | None:
    """The stem of the noun the question counts ("How many more marbles ..." -> "marble"), or ``None``."""
    asked = _ASKED.search(question) if question else None
    return _stem(asked.group(1)) if asked else None


def _counts(after: str, want: str | None) -> tuple[bool, int]:
    """(whether the words right after a number count the thing whose stem is ``want``, where that noun ends in
    ``after``): "15 millimeters", "18 more coins"."""
    m = _COUNTED_NOUN.match(after)
    return (want is not None and m is not None and _stem(m.group(1)) == want), (m.end() if m else 0)


def _counts_another_thing(after: str, question: str | None) -> bool:
    """True when a number followed by ``after`` counts another thing the question names than the one it asks for
    ("There are now 1.5 bags ..." when the question asks how many shells are in the bags)."""
    want = _asked_stem(question)
    if want is None:
        return False
    if re.match(r"\s*[,;:.!?]", after):
        return False  # "is approximately 10, with eight ...": nothing is counted right after the number
    words = re.findall(r"[A-Za-z]+", _blank_parentheses(after))
    # the thing counted: the first lower-case word after the number ("1.5 bags", "17 more coins"); a name ("27
    # Mateo") is not a thing counted
    noun = next((w for w in words[:3] if w.lower() not in _NOT_NOUNS), None)
    if noun is None or not noun.islower():
        return False
    named = {_stem(w) for w in re.findall(r"[A-Za-z]+", question)}
    return _stem(noun) != want and _stem(noun) in named


#: the noun right after a number: "18 more coins" -> coins, "2 weeks" -> weeks
_COUNTED_NOUN = re.compile(r"[ \t]+(?:(?:more|fewer|less|extra|additional)[ \t]+)?([A-Za-z]+)", re.IGNORECASE)


def _relative(after: str, question: str | None) -> bool:
    """True when a number followed by ``after`` is a difference from something ("1 more than a leap year") and the
    question asks how many, not how many more."""
    if not question or not re.match(r"\s+(?:more|less|fewer)\s+than\b", after, re.IGNORECASE):
        return False
    return not re.search(r"\bhow\s+many\s+(?:more|fewer|less)\b|\bdifference\b", question, re.IGNORECASE)


def _restates(sent: str, question: str | None) -> bool:
    """True when a sentence only restates the question's data: two or more numbers, each given by the question with
    the same word before it ("Priya has 23 books and Omar has 17 books." for "Priya has 23 books and Omar has 17.")."""
    if not question:
        return False
    nums = _numbers_in(_blank_parentheses(sent), words=False)
    if len(nums) < 2:
        return False
    q = _blank_parentheses(question)
    given = {(re.findall(r"[A-Za-z]+|=", q[:m.start()])[-1:] or [""])[0].lower() + " " + m.group(0)
             for m in _NUMBER_TOKEN.finditer(q)}
    return all((re.findall(r"[A-Za-z]+|=", sent[:a])[-1:] or [""])[0].lower() + " " + t in given for a, _, t in nums)


def _asked_number(clause: str, question: str | None, at: int, tok: str) -> str:
    """``tok`` (at ``at`` in ``clause``), or the clause's one number that counts the thing the question asks for,
    when ``tok`` counts another thing or is tacked on after it: "Ines has a total of 18 more coins than Amara, which
    is 36" -> 18 when the question asks how many more coins. A number the question gives is not taken ("gave 13
    cookies to Ines")."""
    want = _asked_stem(question)
    if want is None:
        return tok
    given = {t for _, _, t in _numbers_in(question, words=False)}
    blank = _blank_parentheses(clause)
    counted = []
    nouns = {}
    for start, end, t in _numbers_in(blank, words=False):
        m = _COUNTED_NOUN.match(blank[end:])
        nouns[t] = _stem(m.group(1)) if m and m.group(1).lower() not in _NOT_NOUNS else None
        if nouns[t] == want and t not in given and not _OPERAND_BEFORE.search(blank[:start]):
            counted.append(t)
    if len(set(counted)) != 1 or tok in counted:
        return tok
    other = nouns.get(tok) not in (None, want)  # "2 weeks" when it asks for days
    appended = bool(re.search(r",\s*which\s+(?:is|makes|equals)\s*$", blank[:at]))  # "..., which is 36"
    return counted[0] if other or appended else tok


def _main_clause(sent: str, question: str | None = None) -> str:
    """``sent`` without a condition or a reason (positions kept, blanked): "When you have 30, divide it by 3." has
    no amount stated; "the result will be 35 when divided by 9 because ..." states 35. A which-clause that gives the
    amount in the unit the question asks for is kept ("0.15 meters, which is the equivalent of 15 millimeters")."""
    m = _CONDITION_FIRST.match(sent)
    if m:
        sent = " " * m.end() + sent[m.end():]
    for rx in (_CONDITION_AFTER, _WHICH_AFTER):  # each the first of its kind, the condition first
        m = rx.search(sent)
        if m and _stated_at(sent[:m.start()]) is not None:
            end = sent.find(",", m.end())
            end = len(sent) if end < 0 else end
            if rx is _WHICH_AFTER and _states_asked(sent[m.start():end], question):
                continue
            sent = sent[:m.start()] + " " * (end - m.start()) + sent[end:]
    return sent


def _states_asked(clause: str, question: str | None) -> bool:
    """True when the number ``clause`` states is followed by the noun the question counts ("which is the equivalent
    of 15 millimeters" when it asks how many millimeters)."""
    want = _asked_stem(question)
    found = _stated_at(clause) if want else None
    return bool(found and found[1]) and _counts(clause[found[0] + len(found[1]):], want)[0]


def _words_count_asked(sent: str, question: str | None) -> bool:
    """True when a number in words in ``sent`` counts the thing the question asks for ("is two seconds" when it asks
    how many seconds): then numbers in words are read in that sentence, as digits are."""
    want = _asked_stem(question)
    return want is not None and any(_counts(sent[m.end():], want)[0] for m in _WORD_NUMBER.finditer(sent))


#: what may follow "<number> <thing counted>" at the start of a sentence that states it: "... stickers are left"
_OPENING_VERB = re.compile(r"[ \t]+(?:are|is|were|was|remain|remains)\b", re.IGNORECASE)


def _opening_count(sent: str, question: str | None) -> tuple[int, str] | None:
    """(position, number) of a sentence that opens with a number of the thing the question counts and a verb:
    "Three hundred and three stickers are left.", "15 apples remain." when it asks how many stickers / apples."""
    want = _asked_stem(question)
    if want is None:
        return None
    head = _VALUE_HEAD.match(sent, len(sent) - len(sent.lstrip())).end()
    nums = [n for n in _numbers_in(_blank_parentheses(sent)) if n[0] == head]
    if not nums:
        return None
    start, end, tok = max(nums, key=lambda n: n[1])
    counted, noun_end = _counts(sent[end:], want)
    return (start, tok) if counted and _OPENING_VERB.match(sent[end + noun_end:]) else None


def _concluding_number(text: str, question: str | None = None) -> tuple[int, str] | None:
    """The number the response's last statement of a quantity gives ("So, Lena has 17 more coins than Kenji.",
    "A week has 7 days.", "4 x 10 meters = 44 meters"): the last sentence that states a number after a verb or an
    equals sign; sentences after it that state none (an instruction, a comment, a number in parentheses) are passed
    over. A number in words counts in a response written without digits ("An insect has six legs.") or in a
    sentence that opens as a conclusion ("So, ..."); elsewhere "you have two steps" is prose, not an answer.

    No number when that statement is one of a list of values of two or more names ("hwb = 1, bxp = 10"), is about
    an unevaluated expression (a square root, a power), or counts another thing the question names than the one it
    asks for (``question``: "... 1.5 bags" when it asks how many shells); a sentence about a named value or the
    answer that states no number ("The value of nea equals the square of rxk.") ends the search too.

    A sentence that only restates the question's data ("Priya has 23 books and Omar has 17 books.") is passed over;
    a number that is an operand ("... is divided by 5") is not stated; when the stated number counts another thing
    or is tacked on ("18 more coins than Amara, which is 36"), the sentence's one number of the thing the question
    asks for is taken instead. A statement taken back ("11*6 = 62 is incorrect.", "..., but 88 is not a correct
    answer") or a difference the question does not ask for ("1 more than a leap year") gives no number, unless an
    earlier sentence reached the same number, which then stands. A number in words is read where it counts the thing
    the question asks for ("... is two seconds"), and a sentence may open with its number ("Three hundred and three
    stickers are left.")."""
    names = {(m.group(1) or m.group(2)).lower() for m in _ASSIGNED.finditer(text)}
    if len(names) >= 2 or re.search(r"\bthe\s+values\s+of\b", text, re.IGNORECASE):
        return None  # a list of values, not one answer
    digits = bool(_NUMBER_TOKEN.search(text))
    for start, sent in reversed(_sentences(text)):
        sent = _main_clause(sent, question)
        found = _stated_at(sent, words=not digits or bool(_CONCLUDES.match(sent)) or _words_count_asked(sent, question))
        if found is None:
            found = _opening_count(sent, question)
        if found is None:
            if _NAMED_VALUE.match(sent):
                return None
            continue
        at, tok = found
        aside = _blank_parentheses(sent)  # a power inside a parenthetical aside leaves the statement evaluated
        if not tok or _UNEVALUATED.search(aside) or re.search(r"square\s+root", aside, re.IGNORECASE):
            return None  # it states an expression: no number, and nothing earlier stands for it
        if _counts_another_thing(sent[at + len(tok):], question) and not _CONVERSION.match(sent[:at]):
            return None
        if (_relative(sent[at + len(tok):], question) and not re.search(r"=\s*$", sent[:at])
                or _REJECTED.search(sent[at + len(tok):])):
            # "1 more than a leap year" when it asks how many, or "16 + 27 = 45, but that's incorrect.": no answer,
            # unless an earlier sentence reached the same number ("1. 25 + 4 = 30" then "it's 30 more than 27";
            # "49-35 = 10 cookies." then "Ines also has 10 more ..., but that is not possible")
            if any(t == tok for _, _, t in _numbers_in(_blank_parentheses(text[:start]))):
                continue
            return None
        if _restates(sent, question):
            continue  # "Omar has 17 books." when the question says "Omar has 17": the question's data, not an answer
        return start, _asked_number(sent, question, at, tok)
    return None


def extract_number(text: str | None, cut_off: bool = False, question: Any = None) -> str | None:
    """The number a response gives as its final answer, read as a careful reader reads it, or ``None``.

    Candidates, each at its place in the response:

    1. the last ``\\boxed{}``, ``Answer:`` line, GSM8K ``#### X`` line, "the answer (to this question) is X" or
       "X is the answer" statement: the number its value states ("The answer is 36 - 13 = 20 cookies left." -> 20;
       "The answer is the total of two and four, which makes six." -> six); a marker whose value holds no number
       ("The answer is a number.") is passed over, so the equation before it ("31 + 15 = 46") still counts; an
       answer the response calls another's ("A previous answer: 24", "our target answer: 3") is no marker; a response
       that ends on an empty ``Answer:`` gives nothing, unless the line before it reaches a result by an equation
       ("30 - 28 = 16", "Lucas has 25 - 19 = 3 cookies.") or is a ``####`` line;
    2. the response's concluding statement: its last sentence holding a number, when that sentence states it after
       a verb or an equals sign ("So, Lena has 17 more coins than Kenji.", "A week has 7 days.", "4 x 10 meters =
       44 meters"; list markers such as "2." are not numbers), or a short last line that gives one number of the
       thing the question counts ("Amara 20 stickers."); not in a response cut off by its token limit
       (``cut_off``), whose last sentence is unfinished work, not a conclusion;
    3. a response that is one short line (:data:`SHORT_ANSWER_WORDS` words, or a number in words of any length:
       "Three hundred and fifteen.") or starts with a lone number before its explanation (``32`` then reasoning;
       not lone numbers on several lines, which are a list).

    The candidate stated last wins (a model that restates its answer at the end is read at the end), except that a
    concluding statement overrides an answer given before it only when it is given as final ("So, ...") or is an
    equation alone on the last line ("12 + 1 = 13"), or is the last line and follows a ``####`` line ("#### 1",
    then "Lucas has a total of 18 balloons."); an expression left unevaluated ("18 (Mateo) - 32 (Jonas)", "23
    minus 20") and a number only in parentheses are not answers. Numbers may be written in words ("eight").

    Parameters
    ----------
    text : str or None
        The model's response.
    cut_off : bool, default False
        The response was cut off by its token limit (its last sentence is then not read as a conclusion).
    question : str or list of dict, optional
        The question asked, or its chat messages (the last user message is used), to tell the thing the question
        counts.

    Returns
    -------
    str or None
        The number as written, for :func:`parse_number`, or ``None``.

    Examples
    --------
    >>> extract_number("The answer is 36 - 13 = 20 cookies left.")
    '20'
    >>> extract_number("So, Lena has 17 more coins than Kenji.")
    '17'
    >>> extract_number("Answer: eight")
    'eight'
    """
    text = _check_text(text, "extract_number")
    text = strip_reasoning(text)
    if not text or not text.strip():
        return None
    if isinstance(question, (list, tuple)):  # chat messages: the last user message
        users = [m.get("content") for m in question if isinstance(m, dict) and m.get("role") == "user"]
        question = users[-1] if users else None
    question = question if isinstance(question, str) else None
    found = _last_answer(text, "Answer")
    if found is not None and text[max(0, found[0] - 1):found[0]] in _QUOTES:
        found = None  # "the result after 'Answer:'": the marker quoted, not used
    if found is not None and _OTHER_ANSWER.search(text[:found[0]]):
        found = None  # "A previous answer: 24", "our target answer: 3 meters": not the answer it gives
    if found is not None and found[2] is None and not text[found[1]:].strip():
        # it ends on an empty "Answer:": the answer it was about to give never came, unless the line before it
        # reached one ("30 - 28 = 16", "Lucas has 25 - 19 = 3 cookies." or "#### 6" just before the marker)
        before = text[:found[0]].rstrip().splitlines()[-1:] or [""]
        results = list(_EQUATION.finditer(before[0]))
        m = results[-1] if results else _HASHES.search(before[0])
        return _number_value(m.group("v")) if m else None
    cands: list[tuple[int, str]] = []
    boxes = list(_BOX_RE.finditer(text))
    if boxes:
        v = _number_value(extract_boxed(text) or "")
        if v is not None:
            cands.append((boxes[-1].start(), v))
    if found is not None and found[2] is not None:
        v = _number_value(found[2])
        if v is not None:
            cands.append((found[0], v))
    for rx in (_HASHES, _ANSWER_IS_NUMERIC):
        for m in reversed(list(rx.finditer(text))):
            if rx is _ANSWER_IS_NUMERIC and _OTHER_ANSWER.search(text[:m.start()]):
                continue
            v = m.group("v")
            end = _REASON_END.search(v) if rx is _ANSWER_IS_NUMERIC else None
            v = _number_value(v[:end.start()] if end else v)
            if v is not None:
                cands.append((m.start(), v))
                break
            if rx is _ANSWER_IS_NUMERIC and re.match(r"\s*(?:a|the)\s+number\b", m.group("v"), re.IGNORECASE):
                continue  # "The answer is a number.": an empty restatement; the answer before it stands
            if rx is _HASHES:
                break
    for m in _IS_THE_ANSWER.finditer(text):
        v = m.group("v")
        so = list(_SO_CLAUSE.finditer(v))
        v = _number_value(v[so[-1].end():] if so else v)  # "28 is less than 22, so 20 apples is the answer." -> 20
        if v is not None:
            cands.append((m.start(), v))
    stripped = _trim_value(text.strip())
    if "\n" not in stripped and (len(stripped.split()) <= SHORT_ANSWER_WORDS or word_number(stripped) is not None):
        v = _number_value(stripped)  # "42", "42 apples", "Three hundred and fifteen."
        if v is not None:
            cands.append((0, v))
    lead = _leading(text)
    v = _number_value(lead) if lead else None
    glossed = _GLOSSED_LEAD.match(text) if "\n" in text.strip() else None
    if v is None and glossed and len(_GLOSSED_LINE.findall(text)) == 1:
        v = glossed.group(1)  # "13 (months)" on the first line, then more (not a list of such lines)
    if v is not None:  # "7" then an explanation: the answer given first
        cands.append((0, v))
    concluding = None if cut_off else _concluding_number(text, question)
    if concluding is not None:
        start, tok = concluding
        # a concluding sentence overrides an answer given earlier (a marker, or a number the response opened with)
        # only when it is given as final ("So, ...", "Therefore, ..."); otherwise it is the explanation of that answer
        later = [c for c in cands if c[0] >= start]
        last_line = text.rstrip().splitlines()[-1]
        on_last = start >= len(text.rstrip()) - len(last_line)
        hashes = bool(cands) and text[max(cands)[0]:].lstrip().startswith("####")
        alone = on_last and (_EQUATION_LINE.match(last_line.strip()) or hashes)
        if not cands or later or _CONCLUDES.match(text[start:]) or alone:
            # ... or it is an equation alone on the last line ("12 + 1 = 13"), or the last line, after a "####"
            # line ("#### 1" then "Lucas has a total of 18 balloons.")
            cands.append(concluding)
    tail = None if cut_off else _short_count(text, question)
    if tail is not None:
        cands.append(tail)
    if cands:
        return max(cands, key=lambda c: c[0])[1] or None
    return None


def _short_count(text: str, question: str | None) -> tuple[int, str] | None:
    """(position, number) of a short last line that gives one number of the thing the question counts, without a
    verb: "Amara 20 stickers." when it asks how many stickers."""
    want = _asked_stem(question)
    line = text.rstrip().splitlines()[-1]
    if want is None or len(line.split()) > 4:
        return None
    nums = _numbers_in(_blank_parentheses(line), words=True)
    if len(nums) != 1 or not _counts(line[nums[0][1]:], want)[0]:
        return None
    return len(text.rstrip()) - len(line) + nums[0][0], nums[0][2]


# --- labels (a closed set of words) ---------------------------------------------------------------

#: the usual synonyms of True / False / N/A, keyed by the letters-only lower-case form
LABEL_SYNONYMS: dict[str, str] = {
    "true": "True", "false": "False",
    "na": "N/A", "unknown": "N/A", "undetermined": "N/A", "undeterminable": "N/A", "indeterminate": "N/A",
    "cannotbedetermined": "N/A", "cannotdetermine": "N/A", "notdetermined": "N/A", "notapplicable": "N/A",
}
_WORD = re.compile(r"[A-Za-z][A-Za-z/'-]*")
_PHRASES = re.compile(r"cannot be determined|can ?not be determined|not determined|not applicable|n/a",
                      re.IGNORECASE)


def _label_of(s: str, labels: dict[str, str]) -> str | None:
    """The label a short answer states (its letters-only lower-case form looked up in ``labels``)."""
    key = re.sub(r"[^a-z0-9]", "", _LATEX_WRAP.sub(r"\1", s).lower())
    return labels.get(key)


def _labels_in(s: str, labels: dict[str, str]) -> list[str]:
    """Every label mentioned in ``s``, in order of appearance (a phrase such as "cannot be determined" is one)."""
    return [lab for _, (lab, _) in _label_positions(s, labels)]


def extract_label(text: str | None, labels: Any = None) -> str | None:
    """The label (one of a closed set of words) a response gives as its answer, or ``None``.

    ``labels`` maps a word's letters-only lower-case form to its label (default :data:`LABEL_SYNONYMS`: True /
    False / N/A with unknown, "cannot be determined"...; yes / no are not in it, "no" is too common a word); a list
    of words means each word is its own label. Rules, after reasoning blocks are dropped (the first that applies):

    1. a marker (``\\boxed{}``, ``Answer:``, "the answer is ...", "the value of zyc is ...") whose value *starts*
       with a label gives it (``The answer is False. 69 is...``); "is not true" gives ``None`` (a negated label is no
       answer); a marker whose value starts otherwise ("the answer is a classic example ...") is skipped;
    2. a response that *starts* with a label (``True.``, ``False: 69 is odd``, ``1. False``) gives it, unless
       another line starts with a different one (``True: ...`` then ``False: ...``) or it ends "so <the other>";
       a last line that is just a label, after reasoning, gives it;
    3. a one-sentence response that mentions one label only (``ijf is true.``);
    4. otherwise ``None``: a longer response that mentions labels in passing ("The conclusion that hvb is true does
       not follow...") states no answer.

    Parameters
    ----------
    text : str or None
        A model's response.
    labels : dict or list of str or None, optional
        Word -> label, or a list of words that are their own labels; None (default) means :data:`LABEL_SYNONYMS`.

    Returns
    -------
    str or None
        The label, or ``None``.

    Raises
    ------
    AssayInputError
        If ``text`` is neither a string nor None, or ``labels`` is not a non-empty list of words or a dict.

    Examples
    --------
    >>> extract_label("The answer is False. 69 is odd.")
    'False'
    >>> extract_label("Yes.", ["yes", "no"])
    'yes'
    """
    table = _label_table(labels)
    text = _check_text(text, "extract_label")
    text = strip_reasoning(text)
    if not text or not text.strip():
        return None
    cands = []
    for fn in (extract_boxed, extract_answer, _stated_all):
        for pos, v in fn(text) if fn is _stated_all else [(0, fn(text))]:
            if v is not None:
                cands.append((pos, v))
    for _, v in sorted(cands, key=lambda c: c[0], reverse=True):
        start = _label_at_start(v, table)
        if start == "negated":
            return None
        if start is not None:
            return start
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    heads = [h for h in (_label_at_start(re.sub(r"^\d+[.)]\s*", "", ln), table, head=True) for ln in lines)
             if h not in (None, "negated")]
    first = _label_at_start(re.sub(r"^\d+[.)]\s*", "", lines[0]), table, head=True)
    if first not in (None, "negated"):
        if len(set(heads)) > 1:
            return None
        tail = _labels_in(re.split(r"[,;]\s+", lines[-1])[-1], table) if len(lines[-1]) else []
        ends = re.search(r"(?:so|therefore|thus|hence)\s+\S+[.!]?\s*$", lines[-1], re.IGNORECASE)
        if ends and tail and tail[-1] != first:
            return None  # "False. 51 is less than 42, so True.": it ends on the other label
        return first
    last = _label_at_start(lines[-1], table, head=True) if len(lines) > 1 else None
    if last not in (None, "negated") and _label_of(lines[-1], table) == last:
        return last  # reasoning, then the answer alone on the last line
    sentences = [x for x in re.split(r"(?<=[.!?])\s+|\n+", text.strip()) if x.strip()]
    if len(sentences) == 1:
        if re.search(r"\b(?:not|n't)\s+(?:\w+\s+)?$", sentences[0][:_first_label_at(sentences[0], table)],
                     re.IGNORECASE):
            return None  # "69 is not true": a negated label is no answer
        found = _distinct(_labels_in(sentences[0], table))
        return found[0] if len(found) == 1 else None
    return None


def _first_label_at(s: str, table: dict[str, str]) -> int:
    pos = _label_positions(s, table)
    return pos[0][0] if pos else 0


def _label_at_start(value: str, table: dict[str, str], head: bool = False) -> str | None:
    """The label ``value`` starts with (after quotes, markdown and brackets), ``"negated"`` for "not <label>", else
    ``None``. With ``head`` (a response's first words) the label must end its clause: ``True.``, ``False:``,
    ``True,`` or the end of the line, so "True is a value that..." is not an answer."""
    v = _clean_mc(value).lstrip(" *_`'\"([").strip()
    m = re.match(r"(?:not|isn't|is\s+not)\s+(?:entirely\s+|quite\s+|necessarily\s+)?(\S+)", v, re.IGNORECASE)
    if m and _label_of(m.group(1), table):
        return "negated"
    found = [(p, lab) for p, lab in _label_positions(v, table) if p == 0]
    if not found:
        return None
    label, end = found[0][1]
    if head and not re.match(r"^\s*(?:[.:,;!)\]*_'\"]|$)", v[end:]):
        return None
    return label


def _label_positions(s: str, table: dict[str, str]) -> list[tuple[int, tuple[str, int]]]:
    """(start, (label, end)) of every label mentioned in ``s``."""
    out = []
    taken = []
    for m in _PHRASES.finditer(s):
        lab = table.get(re.sub(r"[^a-z]", "", m.group(0).lower()))
        if lab:
            out.append((m.start(), (lab, m.end())))
            taken.append((m.start(), m.end()))
    for m in _WORD.finditer(s):
        if any(a <= m.start() < b for a, b in taken):
            continue
        lab = table.get(re.sub(r"[^a-z]", "", m.group(0).lower()))
        if lab:
            out.append((m.start(), (lab, m.end())))
    return sorted(out)


def _stated_all(text: str) -> list[tuple[int, str]]:
    """(position, value) of every "the answer is X" statement, each value up to its sentence end."""
    out = []
    for m in _STATED.finditer(text):
        v = m.group("v")
        end = _SENTENCE_END.search(v)
        v = _trim_value(v[:end.start()] if end else v)
        if v:
            out.append((m.start(), v))
    return out


def _label_table(labels: Any) -> dict[str, str]:
    if labels is None:
        return LABEL_SYNONYMS
    if isinstance(labels, dict):
        return {re.sub(r"[^a-z0-9]", "", str(k).lower()): str(v) for k, v in labels.items()}
    if isinstance(labels, (list, tuple, set, frozenset)) and labels and all(isinstance(w, str) and w.strip()
                                                                          for w in labels):
        return {re.sub(r"[^a-z0-9]", "", w.lower()): w for w in labels}
    raise AssayInputError(f"labels must be a non-empty list of words or a dict word -> label; got {labels!r}")


def _extract_text(text: str | None) -> str | None:
    if text is None or not text.strip():
        return None
    return text.strip()


EXTRACTORS: dict[str, Callable[[str | None], str | None]] = {
    "auto": extract_auto,
    "number": extract_number,
    "label": extract_label,
    "boxed": extract_boxed,
    "answer": extract_answer,
    "text": _extract_text,
}


def resolve_extract(extract: Any) -> Callable[[str | None], str | None]:
    """The extractor function an ``extract=`` argument names.

    Parameters
    ----------
    extract : str, callable or None
        A name in :data:`EXTRACTORS` (``"auto"``, ``"number"``, ``"label"``, ``"boxed"``, ``"answer"``,
        ``"text"``), None (the whole text, stripped; ``None`` when blank) or a callable text -> str | None, returned
        as it is.

    Returns
    -------
    callable
        A function text -> str | None.

    Raises
    ------
    AssayInputError
        If ``extract`` is an unknown name or neither a name, None nor a callable.

    Examples
    --------
    >>> resolve_extract("boxed") is extract_boxed
    True
    >>> resolve_extract(None)("  Paris ")
    'Paris'
    """
    if extract is None:
        return _extract_text
    if isinstance(extract, str):
        if extract in EXTRACTORS:
            return EXTRACTORS[extract]
        raise AssayInputError(
            f"unknown extractor {extract!r}; accepted: {', '.join(map(repr, EXTRACTORS))}, None "
            "(the whole text) or a callable text -> str | None"
        )
    if callable(extract):
        return extract
    raise AssayInputError(f"extract must be a name, None or a callable; got {extract!r}")


def _name(fn: Any) -> str:
    return getattr(fn, "__name__", None) or type(fn).__name__


