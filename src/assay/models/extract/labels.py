"""Labels (:func:`extract_label`): one of a closed set of words (True / False / N/A, yes / no, a verdict) stated as the
answer.

Part of :mod:`assay.models.extract` (the rules by answer shape; its docstring is the index)."""

from __future__ import annotations

import re
from typing import Any

from ...errors import AssayInputError
from .values import _LATEX_WRAP
from .markers import _SENTENCE_END, _STATED, _check_text, _trim_value, extract_answer, extract_boxed, strip_reasoning
from .choices import _clean_mc, _distinct

__all__ = ["LABEL_SYNONYMS", "extract_label"]


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
