"""Answer extraction on a corpus of REAL model answers with hand-checked expected parses.

``tests/fixtures/live_corpus/*.jsonl``: answers of SmolLM2-135M-Instruct (the live model) to prompts of the
shipped basics bank and of DyVal, each with the final answer a careful reader finds in it (``expected``; ``null``
when there is none), checked by hand (see the folder's README). Every scorer is tested on every response of its
shape: the extractor must read what the reader read, or nothing when the reader found nothing. No model is needed.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from assay.models.extract import extract_auto, extract_choice, extract_label, normalize, parse_number, parse_options
from assay.models.scoring import make_scorer, score_response

CORPUS = Path(__file__).parent / "fixtures" / "live_corpus"
#: every hand-labelled file of the corpus (``*_raw.jsonl`` files hold unlabelled answers and are skipped)
RECORDS = [json.loads(line) for f in sorted(CORPUS.glob("*.jsonl")) if not f.name.endswith("_raw.jsonl")
           for line in f.read_text().splitlines() if line.strip()]

# Responses where the rules read something other than the hand label, each with the reason it is left so (a rule
# that would read it would misread more common shapes). Keep this list short and explained.
KNOWN: dict[str, str] = {
    "s1-basics-053": "'Answer: Months are numbered, but ...': the value of an Answer: line is read whole, a sentence (the "
                  "exact scorer then finds it unequal to any one-word reference, as a reader would)",
    "s1-basics-162": "'... 17 bags x 9 marbles = 165 marbles.' then another sentence: only an equation on the LAST line is "
                  "read (reading any equation in the text misreads worked steps, e.g. s1-basics-194)",
    "s1-basics-197": "cut off by max_tokens inside 'answer: 10 (the total number of marbles) + 32': the last number of an "
                  "Answer: value is read (32); a reader sees no finished answer",
    "s1-basics-205": "two contradictory totals, cut off: the equation on the last line is read (15)",
    # held out (session1_heldout.jsonl, labelled before the rules were run on it: 37 of 40 agreed; s1-heldout-19,
    # 'is "small," which means ...', is read since)
    "s1-heldout-33": "'1' then reasoning that reaches another number, cut off: the leading token is read",
    "s1-heldout-36": "'9 * 10 = 9 is equivalent to 5 ...' on the only line: the equation's result is read",
    # held out (responses.jsonl, collected and labelled independently: 227 of 245 agreed before the rules were revised
    # on its disagreements; these 7 remain)
    "s2-t0-number-003": "'..., so Ana now has 11 marbles.': a long sentence without an answer marker is not read (taking "
                        "its last number misreads rambling answers, e.g. s1-basics-189, s1-basics-198)",
    "s2-t0-number-018": "'12 + 35 = 60' then 'Vincent has 60 stamps now.': the equation is not on the last line",
    "s2-t0-number-079": "'2. 90 shells total' as the last list item: a number in a list line is not read as the answer",
    "s2-dyval-deductive_logic-d2-02": "the label is read from 'cannot be determined based on these facts' about other "
                                      "propositions: a long answer's passing mentions are not read",
    "s2-dyval-deductive_logic-d2-06": "'...applicable to the conclusion of jkc being false': a passing mention",
    "s2-dyval-deductive_logic-d2-07": "'The rule is N/A, which means ...': a passing mention in a long answer",
    "s2-dyval-deductive_logic-d3-09": "'N/A cannot be determined because ...' on the last line after restated rules",
}


def parsed(rec: dict):
    """What assay's rules read from the response, in the hand label's canonical form."""
    text, scorer = rec["response"], rec["scorer"]
    if scorer == "numeric":
        ans = extract_auto(text)
        x = parse_number(ans) if ans is not None else None
        return None if x is None or not math.isfinite(x) else x
    if scorer == "label":
        return extract_label(text)
    if scorer == "choice":
        return extract_choice(text, "ABCD", parse_options(rec["prompt"]))
    if scorer == "exact":
        ans = extract_auto(text)
        return None if ans is None else normalize(ans)
    raise AssertionError(f"unknown scorer {scorer!r}")


def expected(rec: dict):
    e = rec["expected"]
    if e is None:
        return None
    if rec["scorer"] == "numeric":
        return float(e)
    if rec["scorer"] == "exact":
        return normalize(e)
    return e


def test_the_corpus_is_real_large_and_varied():
    assert len(RECORDS) >= 200
    assert len({r["id"] for r in RECORDS}) == len(RECORDS)
    by_scorer = {s: sum(r["scorer"] == s for r in RECORDS) for s in ("numeric", "label", "choice", "exact")}
    assert all(n >= 25 for n in by_scorer.values()), by_scorer
    assert sum(r["expected"] is None for r in RECORDS) >= 5  # answers with no answer in them are part of it


@pytest.mark.parametrize("rec", RECORDS, ids=[r["id"] for r in RECORDS])
def test_every_response_parses_as_read_by_hand(rec):
    got, want = parsed(rec), expected(rec)
    if rec["id"] in KNOWN:
        assert got != want, f"{rec['id']} now parses as read by hand: drop it from KNOWN"
        return
    if isinstance(want, float) and got is not None:
        assert got == pytest.approx(want), rec["response"]
    else:
        assert got == want, f"{rec['response']!r}: read {got!r}, hand label {want!r}"


@pytest.mark.parametrize("rec", RECORDS, ids=[r["id"] for r in RECORDS])
def test_every_scorer_scores_the_response_as_the_label_says(rec):
    """The scorer's verdict follows from the hand label: no answer -> unparseable (wrong by default); an answer ->
    right exactly when it matches the reference."""
    if rec["id"] in KNOWN:
        pytest.skip(KNOWN[rec["id"]])
    ref = rec["reference"]
    o = score_response(rec["response"], None, ref, make_scorer(rec["scorer"]), prompt=rec["prompt"])
    if rec["expected"] is None:
        assert o.status in ("unparseable", "refused") and o.final_score == 0.0
        return
    assert o.status == "answered"
    if rec["scorer"] == "numeric":
        right = abs(float(rec["expected"]) - float(parse_number(str(ref)))) <= 1e-6 * max(1.0, abs(float(ref)))
    elif rec["scorer"] == "exact":
        right = normalize(rec["expected"]) == normalize(ref)
    else:
        right = rec["expected"] == (ref if rec["scorer"] == "choice" else extract_label(str(ref)))
    assert o.final_score == (1.0 if right else 0.0), (rec["response"], ref)
