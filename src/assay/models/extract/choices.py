"""Multiple-choice letters (:func:`extract_choice`) in their usual shapes (``C``, ``(C)``, ``C)``, ``Answer: C``,
``the correct option is C``), ``None`` when two letters compete; the options a prompt lists (:func:`parse_options`).

Part of :mod:`assay.models.extract` (the rules by answer shape; its docstring is the index)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from ...errors import AssayInputError
from .values import _LATEX_WRAP, normalize
from .markers import _BOX_RE, _check_text, _last_answer, extract_auto, extract_boxed

__all__ = ["extract_choice", "parse_options"]
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
