"""The values an extracted answer states: :func:`normalize` (the canonical string form ``exact`` compares),
:func:`parse_number` (``1,000``, ``3/4``, ``\\frac{3}{4}``, ``50%``, ``42 meters``, ``$1,200.50``) and
:func:`word_number` (``forty-two``).

Part of :mod:`assay.models.extract` (the rules by answer shape; its docstring is the index)."""

from __future__ import annotations

import re
from decimal import Context, Decimal, InvalidOperation
from fractions import Fraction
from typing import Any

from ...errors import AssayInputError

__all__ = ["normalize", "parse_number", "word_number"]


# --- multiple choice ----------------------------------------------------------------------------

_LATEX_WRAP = re.compile(r"\\(?:text|textbf|textit|mathrm|mathbf|mbox|operatorname)\s*\{([^{}]*)\}")


# --- normalisation and numbers ------------------------------------------------------------------

_NUMBER_RE = re.compile(r"^[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d*)?(?:e[-+]?\d+)?$|^[-+]?\.\d+(?:e[-+]?\d+)?$")
_THIN_SPACES = re.compile(r"\\[,!;: ]")
#: the arithmetic context of every Decimal step here: its own, never the thread's (which any library or caller may
#: change: CI once ran this reader after something had lowered the global precision, and ``149.69205080707070`` was
#: read rounded). 28 digits is Python's default, so canonical forms are those written before this was pinned.
_DECIMAL = Context(prec=28)


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
    return format(d.normalize(context=_DECIMAL), "f")


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
