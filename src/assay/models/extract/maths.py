"""Maths answers: the answer a response commits to, as LaTeX or plain text, for the ``math`` scorer (which decides
equality with math-verify, :mod:`assay.models.mathverify`).

Where the answer is found, first rule that applies:

1. the last ``\\boxed{...}`` / ``\\fbox{...}`` (nested braces matched): ``so \\boxed{\\frac{3}{4}}`` ->
   ``\\frac{3}{4}``;
2. Minerva's closing line, "Final Answer: The final answer is $X$. I hope it is correct." -> ``X``;
3. the last answer marker, "The answer is X", "Answer: X", "#### X" (a value in ``$...$`` is read to its closing
   ``$``; otherwise to the end of its sentence): ``The answer is $\\frac{1}{2}$.`` -> ``\\frac{1}{2}``;
4. the concluding statement: the last sentence's math span or the value after its last "is" / "=" / "equals"
   (``So x = \\frac{3}{4}.`` -> ``\\frac{3}{4}``; ``the sum is $\\frac{3}{6} = \\frac{1}{2}$`` -> ``\\frac{1}{2}``);
5. a response that is only an answer (one short line): itself.

A response is read up to the first new problem the model makes up after its answer ("Problem 2.", "Question:"):
what follows answers another question. A response cut off by its token limit (within its own answer) is read by rules
1-3 only (its last sentence is unfinished work). A last
paragraph that lists several candidates ("1. 3/4", "2. 0.75") without a marker gives nothing. The value found keeps
its LaTeX; ``$`` / ``\\(`` delimiters, a trailing full stop and a leading "x =" are removed, and the last side of an
equation chain is kept; plain words alone ("I do not know", "no solution") and two answers offered as alternatives
("$82\\%$ or $100\\%$") are not an answer; "x = 2 or x = -2" is the set of both. LaTeX written
without ``$`` is read as LaTeX by the scorer.
"""

from __future__ import annotations

import re

from .markers import _check_text, extract_boxed, strip_reasoning

__all__ = ["extract_math", "clean_math"]

_MINERVA = re.compile(r"final\s+answer\s+is\s*:?\s*(?P<v>.+?)\s*(?:\.\s*)?(?:I\s+hope\s+it\s+is\s+correct.*)?$",
                      re.IGNORECASE | re.MULTILINE)
_MARKER = re.compile(r"(?:\b(?:the\s+)?(?:final\s+)?answer\s*(?:is|:)|^\s*####)\s*:?\s*(?P<v>[^\n]*\S)",
                     re.IGNORECASE | re.MULTILINE)
_SPAN = re.compile(r"\$\$(?P<a>.+?)\$\$|\$(?P<b>[^$]+?)\$|\\\((?P<c>.+?)\\\)|\\\[(?P<d>.+?)\\\]", re.DOTALL)
_END = re.compile(r"(?<![\d\\])[.!?;](?=\s|$)|,\s+(?:so|which|because|since|as|and|but|where)\b", re.IGNORECASE)
_LIST_LINE = re.compile(r"^\s*(?:\d+[.)]|[-*\u2022])\s+\S")
_ASSIGN = re.compile(r"^\s*[A-Za-z](?:_\{?\w+\}?)?\s*=\s*(?!=)")
_VERB = re.compile(r"(?:\bis\b|\bequals\b|\bare\b|\bbe\b|=|\\approx|\\equiv)\s*", re.IGNORECASE)
SHORT = 40
#: two math spans offered as alternatives
_ALTERNATIVES = re.compile(r"^\$[^$]+\$\s*,?\s*or\s+\$[^$]+\$\s*[.!]?\s*$", re.IGNORECASE)
#: "x = a or x = b" / "x = a and x = b": the solutions of an equation, a set
_SOLUTIONS = re.compile(r"(?:^|(?<=\s))([A-Za-z])\s*=\s*([^=,;]+?)\s*(?:,\s*)?(?:or|and)\s+\1\s*=\s*([^=,;]+?)\s*[.!]?\s*$",
                        re.IGNORECASE)
#: two or more plain words and nothing else
_WORDS_ONLY = re.compile(r"^[A-Za-z']+(?:[\s,]+[A-Za-z']+)+$")


def _top_level_split(s: str, sep: str) -> list[str]:
    """``s`` split at ``sep`` outside braces, brackets and parentheses."""
    out, depth, cur, i = [], 0, [], 0
    while i < len(s):
        c = s[i]
        if c in "{[(":
            depth += 1
        elif c in "}])":
            depth = max(0, depth - 1)
        if depth == 0 and s.startswith(sep, i) and not (sep == "=" and i and s[i - 1] in "<>!\\"):
            out.append("".join(cur))
            cur = []
            i += len(sep)
            continue
        cur.append(c)
        i += 1
    out.append("".join(cur))
    return out


def clean_math(value: str | None) -> str | None:
    """A found answer made ready to compare: its first math span if it starts with one, then delimiters, markdown
    emphasis, a trailing full stop and a leading ``x =`` removed, and the last side of an equation chain kept
    (``\\frac{3}{6} = \\frac{1}{2}`` -> ``\\frac{1}{2}``). ``None`` when nothing is left."""
    if value is None:
        return None
    v = value.strip().strip("*_`").strip()
    if _ALTERNATIVES.search(v) and not _SOLUTIONS.match(v.replace("$", "")):
        return None  # "$82\\%$ or $100\\%$": two answers, none chosen
    sol = _SOLUTIONS.match(v.replace("$", ""))
    if sol:  # "x = 2 or x = -2": the set of solutions
        return f"\\{{{sol.group(2).strip()}, {sol.group(3).strip()}\\}}"
    m = _SPAN.match(v)
    if m:
        v = next(g for g in m.groups() if g is not None)
    elif "$" in v:
        v = v.split("$")[0] if not v.startswith("$") else v
    else:
        end = _END.search(v)
        if end:
            v = v[: end.start()]
    v = v.strip().strip("$").strip()
    v = re.sub(r"^\\(?:displaystyle|quad|qquad)\s*", "", v)
    v = v.rstrip(" .,;:!").strip("*_` ").strip()
    parts = [p.strip() for p in _top_level_split(v, "=")]
    parts = [p for p in parts if p]
    if len(parts) > 1:
        v = parts[-1]
    elif parts:
        v = parts[0]
    v = _ASSIGN.sub("", v).strip()
    v = v.rstrip(" .,;:").strip()
    if _WORDS_ONLY.match(v):
        return None  # "I do not know", "no solution": words, not a mathematical answer
    return v or None


def _last_paragraph(text: str) -> str:
    paras = [p for p in re.split(r"\n\s*\n", text.strip()) if p.strip()]
    return paras[-1] if paras else ""


def _statement(text: str) -> str | None:
    para = _last_paragraph(text)
    lines = [ln for ln in para.splitlines() if ln.strip()]
    if not lines:
        return None
    if sum(bool(_LIST_LINE.match(ln)) for ln in lines) >= 2 and _LIST_LINE.match(lines[-1]):
        return None  # a list of candidates without a marker: no single answer
    last = lines[-1].strip()
    # the last sentence of the last line
    pieces = [p for p in re.split(r"(?<![\d\\])[.!?](?:\s+|$)(?![^$]*\$(?:[^$]*\$[^$]*\$)*[^$]*$)", last) if p.strip()]
    sentence = pieces[-1] if pieces else last
    spans = list(_SPAN.finditer(sentence))
    if spans:
        before = sentence[: spans[-1].start()]
        if _VERB.search(before) or not before.strip() or re.search(r"\b(?:so|thus|therefore|hence|get|gives?|have)\s*$",
                                                                      before, re.IGNORECASE):
            s = spans[-1]
            return next(g for g in s.groups() if g is not None)
        return None
    sol = _SOLUTIONS.search(sentence.replace("$", ""))
    if sol:
        return sol.group(0)
    verbs = list(_VERB.finditer(sentence))
    if verbs:
        return sentence[verbs[-1].end():]
    if len(lines) == 1 and len(last) <= SHORT:
        return last
    return None


#: the start of a new problem the model made up after answering ("Problem 2.", "# Problem 3:", "Question:")
_NEW_PROBLEM = re.compile(r"^[ \t]*(?:#+[ \t]*)?(?:Problem|Question|Exercise|Example)[ \t]*\d*[ \t]*[:.]",
                          re.IGNORECASE | re.MULTILINE)


def answer_part(text: str) -> tuple[str, bool]:
    """The part of a response that answers the question asked: up to the first new problem the model made up after
    some text of its own (it has finished its answer then), and whether anything was cut there."""
    for m in _NEW_PROBLEM.finditer(text):
        if text[: m.start()].strip():
            return text[: m.start()], True
    return text, False


def _sentence_value(v: str) -> str:
    """A marker's value that is a sentence ("The circumference of a circle with diameter 3 is 3\\pi"): the value
    after its last "is" / "=" / "equals"."""
    if _SPAN.search(v) or not re.search(r"[A-Za-z]{2,}\s+[A-Za-z]{2,}", v):
        return v
    verbs = list(_VERB.finditer(v))
    return v[verbs[-1].end():] if verbs else v


def extract_math(text: str | None, cut_off: bool = False) -> str | None:
    """The answer a maths response commits to, LaTeX kept (module docstring), or ``None``.

    Parameters
    ----------
    text : str or None
        A model's response.
    cut_off : bool, default False
        True when the response was cut off by its token limit: only a box, Minerva's line or an answer marker count.

    Returns
    -------
    str or None
        The answer, e.g. ``\\frac{3}{4}``, ``2\\sqrt{2}``, ``(1, 2)``.

    Examples
    --------
    >>> print(extract_math("So x = \\\\frac{3}{4}."))
    \\frac{3}{4}
    >>> print(extract_math("Final Answer: The final answer is $2\\\\pi$. I hope it is correct."))
    2\\pi
    """
    text = _check_text(text, "extract_math")
    if text is None:
        return None
    text = strip_reasoning(text) or ""
    text, trimmed = answer_part(text)
    if trimmed:
        cut_off = False  # the cut came in a problem it made up, after its answer to this one
    if not text.strip():
        return None
    boxed = extract_boxed(text)
    if boxed is not None:
        return clean_math(boxed)
    found = None
    for m in _MINERVA.finditer(text):
        found = m.group("v")
    if found is None:
        for m in _MARKER.finditer(text):
            found = m.group("v")
    if found is not None:
        if _ALTERNATIVES.search(found.strip()) and not _SOLUTIONS.match(found.replace("$", "").strip()):
            return None  # two answers offered, none chosen: no later sentence decides it
        v = clean_math(_sentence_value(found))
        if v is not None:
            return v
    if cut_off:
        return None
    return clean_math(_statement(text))
