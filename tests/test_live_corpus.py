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

from assay.models.extract import (extract_auto, extract_choice, extract_label, extract_number, normalize, parse_number,
                                  parse_options)
from assay.models.scoring import make_scorer, score_response

CORPUS = Path(__file__).parent / "fixtures" / "live_corpus"
#: every hand-labelled file of the corpus (``*_raw.jsonl`` files hold unlabelled answers and are skipped)
#: numeric*.jsonl (numeric answers labelled blind, rounds 1 to 6 of issue 37) and math.jsonl (maths answers labelled
#: blind, issue 48: tests/test_math_corpus.py) are measured by their agreement rates, not record by record
RECORDS = [json.loads(line) for f in sorted(CORPUS.glob("*.jsonl"))
           if not f.name.endswith("_raw.jsonl") and not f.name.startswith(("numeric", "math"))
           for line in f.read_text().splitlines() if line.strip()]

# Responses where the rules read something other than the hand label, each with the reason it is left so (a rule
# that would read it would misread more common shapes). Keep this list short and explained.
KNOWN: dict[str, str] = {
    "s1-basics-053": "'Answer: Months are numbered, but ...': the value of an Answer: line is read whole, a sentence (the "
                  "exact scorer then finds it unequal to any one-word reference, as a reader would)",
    "s1-basics-162": "'... = 165 marbles.' then another sentence, cut off by max_tokens: a cut-off answer is read by its "
                  "answer markers only (its last statements are unfinished work in most cut-off answers of "
                  "numeric.jsonl, e.g. s3-t0-047, s3-t0-112)",
    "s1-basics-186": "'(which is 3).' at the end of an answer cut off by max_tokens: read by its answer markers only, as "
                  "s1-basics-162",
    # held out (session1_heldout.jsonl, labelled before the rules were run on it: 37 of 40 agreed; s1-heldout-19,
    # 'is "small," which means ...', is read since)
    "s1-heldout-33": "'1' then reasoning that reaches another number, cut off: the leading token is read",
    # held out (responses.jsonl, collected and labelled independently: 227 of 245 agreed before the rules were revised
    # on its disagreements; these 7 remain)
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
        ans = extract_number(text, cut_off=rec.get("finish_reason") == "length", question=rec["prompt"])
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
    o = score_response(rec["response"], None, ref, make_scorer(rec["scorer"]), prompt=rec["prompt"],
                       finish_reason=rec.get("finish_reason"))
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


NUMERIC = [json.loads(line) for name in ("numeric.jsonl", "numeric_bank.jsonl", "numeric3.jsonl", "numeric4.jsonl",
                                        "numeric5.jsonl", "numeric6.jsonl", "numeric7.jsonl",
                                        "numeric8.jsonl", "numeric9.jsonl")
           for line in (CORPUS / name).read_text().splitlines() if line.strip()]


def _wilson(k: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    p, d = k / n, 1 + z * z / n
    c, h = (p + z * z / (2 * n)) / d, z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return c - h, c + h


def _agrees(rec: dict) -> bool:
    got, want = parsed(rec), expected(rec)
    return got == want if got is None or want is None else abs(got - want) <= 1e-6 * max(1.0, abs(want))


@pytest.mark.parametrize("half, n, before, after", [("dev", 200, 129, 185), ("test", 200, 113, 173),
                                                   ("bank", 240, 211, 223), ("bank2", 160, 120, 145),
                                                   ("dev3", 185, 160, 173), ("test3", 195, 159, 176),
                                                   ("r4", 380, 313, 325), ("r5", 300, 282, 292),
                                                   ("r6", 300, 278, 289), ("r7", 400, 336, 360),
                                                   ("r8", 400, 359, 366),
                                                   ("r9", 400, 355, 362)])
def test_fresh_numeric_answers_are_read_as_a_careful_reader_reads_them(half, n, before, after):
    """Fresh answers of SmolLM2 to numeric questions, labelled blind by readers who saw the prompt, the reference and
    the answer, not the rules (the corpus README), read before and after the rules were revised on them:

    * ``dev`` / ``test`` (numeric.jsonl): 200 new questions, greedy and at temperature 0.8, split by question; before
      is extract_auto (the numeric scorer's earlier reader); the rules of extract_number were written on ``dev`` (129
      -> 185 of 200); ``test`` read 113 -> 160 when first read (0.800, Wilson 95% [0.739, 0.850]), 173 now;
    * ``bank`` (numeric_bank.jsonl): the shipped bank's 80 numeric questions, three fresh answers each, collected
      once those rules were final: 211 -> 220 when first read, 223 now;
    * ``bank2``: 160 more answers to those questions at temperature 0.8, read once by the rules of issue 37's first
      round: 120 -> 141 (0.881, Wilson 95% [0.822, 0.923]), 145 now;
    * ``dev3`` / ``test3`` (numeric3.jsonl, issue 37's second round): 150 new questions in eight phrasings, greedy and
      at 0.8, and the bank's questions at 0.8 under a tutor system prompt, each labelled by two readers (374 of 380
      agreed; a third decided the 6 others); before is extract_number as the first round left it. The rules were
      revised on ``dev3`` (160 -> 173 of 185); ``test3`` then read 159 -> 160 of 195 (0.821, Wilson [0.761, 0.868];
      measured on the working tree, the two revisions were committed together):
      the revision hardly carried over, so the rules were revised again on both halves (176 of 195 now); the held-out
      measure of these rules is round 4;
    * ``r4`` (numeric4.jsonl): 380 more answers collected and labelled the same way (374 of 380 agreed), read once
      after the rules were final: 313 (0.824) before this round's revision, 320 after (0.842, Wilson 95% [0.802,
      0.875]); a gain within the interval's width, and far from issue 37's 0.97 (the corpus README says why); 324
      after rounds 5 and 6, 325 after round 7's;
    * ``r5`` (numeric5.jsonl): 300 answers as ``assay query`` asks by default (greedy) to new questions phrased to ask
      for a number, two readers (297 of 300 agreed), read once: 282 (0.940) before issue 37's second round, 285 after
      (0.950, Wilson 95% [0.919, 0.969]); then five rules its misses prompted (no loss on the 1,560 answers above):
      291; 292 after round 8's;
    * ``r6`` (numeric6.jsonl): 300 more such answers, two readers (298 of 300 agreed), read once after round 5's
      rules were final: 278 (0.927) with round 1's rules, 283 (0.943, Wilson 95% [0.911, 0.964]) with round 5's;
      then one change its misses prompted (a last line after a "####" line overrides it): 286; 287 after round
      7's, 289 after round 8's;
    * ``r7`` (numeric7.jsonl): 200 new questions phrased to ask for a number, greedy and at temperature 0.8, two
      readers (388 of 400 agreed), collected and read once after round 6's rules were final: 336 (0.840) with round
      1's rules, 344 (0.860, Wilson 95% [0.823, 0.891]) with round 6's; greedy 184 of 200 (0.920), at 0.8 160
      of 200 (0.800); then the changes its misses prompted (the corpus README; no loss on the 2,160 answers above,
      5 gained there): 357 (not a held-out figure; round 8 is their held-out measure); 360 after round 8's;
    * ``r8`` (numeric8.jsonl): as round 7, 200 more new questions, two readers (393 of 400 agreed), collected and read
      once after round 7's changes were committed: 359 (0.897) with round 1's rules, 364 (0.910) with round 6's, 365
      (0.912, Wilson 95% [0.881, 0.936]) with round 7's; greedy 192 of 200 (0.960), at 0.8 173 of 200 (0.865); then
      four changes its misses prompted (no loss on the 2,560 answers above, 7 gained there): 366 (not held out);
    * ``r9`` (numeric9.jsonl): as round 7, 200 more new questions, two readers (393 of 400 agreed), collected and read
      once after round 8's changes were committed, by the reader shipped now: 355 (0.887) with round 1's rules, 362
      (0.905, Wilson 95% [0.872, 0.930]) with the final ones; greedy 191 of 200 (0.955), at 0.8 171 of 200 (0.855).

    A rule change that reads fewer of these as the readers did fails here; every figure is printed again by
    ``tests/fixtures/live_corpus/measure_numeric.py`` (the corpus README)."""
    recs = [r for r in NUMERIC if r["half"] == half]
    assert len(recs) == n
    k = sum(_agrees(r) for r in recs)
    assert k >= after, f"{half}: {k} of {len(recs)} read as labelled (was {after}; before: {before})"
    lo, hi = _wilson(k, len(recs))
    # where the rules were written, the gain is more than the interval: not noise
    if half not in ("r4", "r5", "r6", "r7", "r8", "r9"):
        assert lo > before / len(recs), (lo, hi)


@pytest.mark.parametrize("halves, n, agreed", [(("dev3", "test3"), 380, 374), (("r4",), 380, 374), (("r5",), 300, 297),
                                                (("r6",), 300, 298), (("r7",), 400, 388),
                                                (("r8",), 400, 393),
                                                (("r9",), 400, 393)])
def test_the_later_rounds_were_read_twice_blind(halves, n, agreed):
    """Every answer of numeric3.jsonl to numeric9.jsonl has two readers' labels; they agree on 0.97 to 0.99 of them,
    and the label is theirs where they agree (a third reader decided the others)."""
    recs = [r for r in NUMERIC if r["half"] in halves]
    same = [r for r in recs if r["reader_a"] == r["reader_b"]]
    assert len(recs) == n and len(same) == agreed
    assert all(r["expected"] == r["reader_a"] for r in same)
    assert all(r["note"].startswith("adjudicated") for r in recs if r["reader_a"] != r["reader_b"])


@pytest.mark.parametrize("dev, test, n_items", [("dev", "test", 200), ("dev3", "test3", 230)])
def test_numeric_halves_are_split_by_question(dev, test, n_items):
    """The dev and test halves share no question (an answer's twin at the other temperature is in its half)."""
    d = {r["item"] for r in NUMERIC if r["half"] == dev}
    t = {r["item"] for r in NUMERIC if r["half"] == test}
    assert not d & t and len(d | t) == n_items
    assert {r["temperature"] for r in NUMERIC} == {0.0, 0.8} and all(r["scorer"] == "numeric" for r in NUMERIC)
    assert len({r["id"] for r in NUMERIC}) == len(NUMERIC) == 3360
