"""The shared markers of a final answer: the last ``\\boxed{...}`` (:func:`extract_boxed`), the last ``Answer: X`` line
(:func:`extract_answer`), reasoning blocks dropped (:func:`strip_reasoning`), and an answer stated in a sentence
(:func:`extract_statement`, :func:`extract_auto`).

Part of :mod:`assay.models.extract` (the rules by answer shape; its docstring is the index)."""

from __future__ import annotations

import re
from typing import Any

from ...errors import AssayInputError
from .values import _whole_number, normalize

__all__ = ["SHORT_ANSWER_WORDS", "extract_answer", "extract_auto", "extract_boxed", "extract_statement",
           "strip_reasoning"]

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


#: the phrase every match of :data:`_IS_THE_ANSWER` ends with: without it there is no match, and the full pattern,
#: which tries a lazy scan from every position, is not run (it costs time quadratic in a sentence's length)
_ANSWER_PHRASE = re.compile(r"\bis\s+(?:the|his|her|my|our|their)\s+(?:final\s+|correct\s+|right\s+)?answer\b",
                            re.IGNORECASE)


def _is_the_answer(text: str) -> str | None:
    found = None
    if not _ANSWER_PHRASE.search(text):
        return None
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
