"""Numbers stated as a final answer (:func:`extract_number`): the concluding statement of a worked answer, read
against the question it answers, with cut-off handling.

Part of :mod:`assay.models.extract` (the rules by answer shape; its docstring is the index)."""

from __future__ import annotations

import re
from typing import Any

from .values import _UNEVALUATED, _WORD_NUMBER, _whole_number, normalize, word_number
from .markers import (
    SHORT_ANSWER_WORDS, _BOX_RE, _EQUATION, _HASHES, _IS_THE_ANSWER, _QUOTES, _SO_CLAUSE, _check_text, _last_answer,
    _leading, _trim_value, extract_boxed, strip_reasoning,
)

__all__ = ["extract_number"]


#: LaTeX a numeric answer may be written in, rewritten before the rules read it: ``\frac{3}{4}`` (and ``\dfrac``,
#: ``\tfrac``, ``\frac34``) is the fraction 3/4, never the number 3; ``\times`` / ``\cdot`` / ``\div`` are the
#: operators they stand for, ``\%`` and ``\$`` their signs
_LATEX_FRAC = re.compile(r"\\[dt]?frac\s*(?:\{\s*([-+]?\d[\d,]*(?:\.\d+)?)\s*\}|(\d))"
                         r"\s*(?:\{\s*(\d[\d,]*(?:\.\d+)?)\s*\}|(\d))")
_LATEX_OPS = (("\\times", " \u00d7 "), ("\\cdot", " \u00d7 "), ("\\div", " \u00f7 "), ("\\%", "%"), ("\\$", "$"))
#: a token holding a symbolic part (a root, pi, infinity, a function, a fraction of non-numbers): not a
#: number, so no number in it is read as the answer (``2\sqrt{2}`` is not 2, ``2\pi`` is not 2)
_SYMBOLIC = re.compile(r"[^\s$]*(?:\\(?:sqrt|pi|infty|sin|cos|tan|log|ln|exp|theta|alpha|beta|gamma|[dt]?frac|binom|"
                       r"begin|mathbf|vec|overline)\b)[^\s$]*")


def _latex_to_plain(text: str) -> str:
    """A response with LaTeX numbers made plain for the number rules (see :data:`_LATEX_FRAC`, :data:`_SYMBOLIC`)."""
    if "\\" not in text:
        return text
    text = _LATEX_FRAC.sub(lambda m: f"{m.group(1) or m.group(2)}/{m.group(3) or m.group(4)}", text)
    for a, b in _LATEX_OPS:
        text = text.replace(a, b)
    return _SYMBOLIC.sub(" (an expression) ", text)


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
    text = _latex_to_plain(text)
    question = _question_text(question)
    found = _answer_marker(text)
    if found is not None and found[2] is None and not text[found[1]:].strip():
        return _before_empty_answer(text, found)
    cands = _marker_candidates(text, found)
    cands += _opening_candidates(text)
    concluding = None if cut_off else _concluding_number(text, question)
    if concluding is not None and _conclusion_counts(text, cands, concluding[0]):
        cands.append(concluding)
    tail = None if cut_off else _short_count(text, question)
    if tail is not None:
        cands.append(tail)
    if cands:
        return max(cands, key=lambda c: c[0])[1] or None
    return None


def _question_text(question: Any) -> str | None:
    """The question as text: a string as it is, chat messages' last user message, anything else None."""
    if isinstance(question, (list, tuple)):  # chat messages: the last user message
        users = [m.get("content") for m in question if isinstance(m, dict) and m.get("role") == "user"]
        question = users[-1] if users else None
    return question if isinstance(question, str) else None


def _answer_marker(text: str):
    """The last ``Answer:`` marker the response gives its own answer with (a quoted marker, or one naming another's
    answer, is none)."""
    found = _last_answer(text, "Answer")
    if found is not None and text[max(0, found[0] - 1):found[0]] in _QUOTES:
        found = None  # "the result after 'Answer:'": the marker quoted, not used
    if found is not None and _OTHER_ANSWER.search(text[:found[0]]):
        found = None  # "A previous answer: 24", "our target answer: 3 meters": not the answer it gives
    return found


def _before_empty_answer(text: str, found) -> str | None:
    """The answer of a response that ends on an empty ``Answer:``: the result the line before it reached, if any."""
    # it ends on an empty "Answer:": the answer it was about to give never came, unless the line before it
    # reached one ("30 - 28 = 16", "Lucas has 25 - 19 = 3 cookies." or "#### 6" just before the marker)
    before = text[:found[0]].rstrip().splitlines()[-1:] or [""]
    results = list(_EQUATION.finditer(before[0]))
    m = results[-1] if results else _HASHES.search(before[0])
    return _number_value(m.group("v")) if m else None


def _marker_candidates(text: str, found) -> list[tuple[int, str]]:
    """(position, number) of the answers given by a marker: the last ``\\boxed{}``, the ``Answer:`` line, the last
    ``####`` line and "the answer is X" statement, and every "X is the answer" statement."""
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
    return cands


def _opening_candidates(text: str) -> list[tuple[int, str]]:
    """(0, number) of a response that is one short line, and of one that opens with a lone number."""
    cands: list[tuple[int, str]] = []
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
    return cands


def _conclusion_counts(text: str, cands: list[tuple[int, str]], start: int) -> bool:
    """Whether the concluding statement at ``start`` is read as the answer, given the answers found before it."""
    # a concluding sentence overrides an answer given earlier (a marker, or a number the response opened with)
    # only when it is given as final ("So, ...", "Therefore, ..."); otherwise it is the explanation of that answer
    later = [c for c in cands if c[0] >= start]
    last_line = text.rstrip().splitlines()[-1]
    on_last = start >= len(text.rstrip()) - len(last_line)
    hashes = bool(cands) and text[max(cands)[0]:].lstrip().startswith("####")
    alone = on_last and (_EQUATION_LINE.match(last_line.strip()) or hashes)
    # ... or it is an equation alone on the last line ("12 + 1 = 13"), or the last line, after a "####"
    # line ("#### 1" then "Lucas has a total of 18 balloons.")
    return bool(not cands or later or _CONCLUDES.match(text[start:]) or alone)


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
