"""Tests for assay.models.scoring: extraction, normalisation, scorers and the failure policy."""

from __future__ import annotations

import math
import pickle

import pytest

from assay.errors import AssayInputError
from assay.models.scoring import (
    POLICIES,
    STATUSES,
    Outcome,
    Scorer,
    apply_policy,
    choice,
    contains,
    count_outcomes,
    exact,
    extract_answer,
    extract_auto,
    extract_boxed,
    extract_choice,
    make_scorer,
    normalize,
    numeric,
    parse_number,
    score_response,
)

# --- extract_boxed ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        (r"so \boxed{42}", "42"),
        (r"\boxed{\frac{1}{2}}", r"\frac{1}{2}"),
        (r"\boxed{\sqrt{\frac{a^{2}}{b}}} done", r"\sqrt{\frac{a^{2}}{b}}"),
        (r"first \boxed{1} then \boxed{2}", "2"),  # last wins
        (r"\boxed{1} and \boxed{\frac{3}{4}}.", r"\frac{3}{4}"),
        (r"\boxed {7}", "7"),
        (r"\fbox{C}", "C"),
        (r"\boxed{ 12 }", "12"),
        (r"\boxed{\{1, 2\}}", r"\{1, 2\}"),  # escaped braces do not count
        ("\\\\boxed{5}", "5"),  # JSON-escaped backslash
        ("$\\boxed{x^2}$", "x^2"),
    ],
)
def test_extract_boxed(text, expected):
    assert extract_boxed(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "no box here",
        "",
        None,
        r"\boxed{\frac{1}{2}",  # unbalanced
        r"\boxed{1} then truncated \boxed{2",  # last unbalanced: no fallback to an earlier box
        r"\boxed{}",  # empty
        r"\boxedx{3}",
        r"\boxed 3",
    ],
)
def test_extract_boxed_none(text):
    assert extract_boxed(text) is None


def test_extract_boxed_rejects_non_string():
    with pytest.raises(AssayInputError):
        extract_boxed(42)


# --- extract_answer --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Answer: 42", "42"),
        ("answer: 42.", "42"),
        ("ANSWER:   Paris  ", "Paris"),
        ("**Answer:** 42", "42"),
        ("**Answer**: 42", "42"),
        ("Answer: **42**", "42"),
        ("*Answer:* yes!", "yes"),
        ("Final Answer: 3/4", "3/4"),
        ("Answer: 1\nwait\nAnswer: 2\nthat's it", "2"),  # last wins, up to end of line
        ("Answer:\n\n  17\n", "17"),  # value on the next line
        (r"Answer: \boxed{\frac{1}{2}}", r"\frac{1}{2}"),
        ("Answer: 2.5.", "2.5"),
        ("Answer：42", "42"),  # full-width colon
    ],
)
def test_extract_answer(text, expected):
    assert extract_answer(text) == expected


@pytest.mark.parametrize("text", ["no marker", "Answers: 3", "Answer:", "Answer: ...", "", None, "Answer 42"])
def test_extract_answer_none(text):
    assert extract_answer(text) is None


def test_extract_answer_custom_prefix_and_bad_prefix():
    assert extract_answer("Result: 5\nAnswer: 6", prefix="Result") == "5"
    assert extract_answer("final answer: x+1", prefix="Final answer") == "x+1"
    for bad in ("", "  ", None, 3):
        with pytest.raises(AssayInputError):
            extract_answer("Answer: 1", prefix=bad)


# --- extract_choice --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Answer: (C)", "C"),
        ("Answer: c", "C"),
        ("**Answer:** B.", "B"),
        ("Answer: C) 42 meters", "C"),
        ("Answer: (C) because A is wrong", "C"),
        ("Answer: Option D", "D"),
        ("I think the answer is C.", "C"),
        ("The correct answer is (b).", "B"),
        ("The correct option is: D", "D"),
        (r"Therefore \boxed{A}", "A"),
        (r"\boxed{\text{(B)}}", "B"),
        ("Let me think.\nBlah blah.\n\n(C)", "C"),
        ("Reasoning...\n**D**", "D"),
        # the marker stated last wins (self-correction)
        (r"First I thought the answer is A. Rechecking... \boxed{C}", "C"),
        ("Answer: B\nHmm, no. Actually the answer is D", "D"),
        # markers without a valid letter are skipped
        ("the answer is a bit unclear, Answer: B", "B"),
        ("Answer: 42\nSo the answer is C", "C"),
        ("The answer is B. Let me check whether the answer is correct.", "B"),
    ],
)
def test_extract_choice(text, expected):
    assert extract_choice(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Answer: C or D",
        "Answer: (B) and (C)",
        "Answer: C, since (A) is wrong",
        r"\boxed{A, C}",
        "The answer is B/C",
        "The answer is B or C",
        "Answer: A and B",
        # ambiguous final position is not rescued by an earlier marker
        "the answer is A.\nAnswer: B or C",
    ],
)
def test_extract_choice_ambiguous_is_none(text):
    assert extract_choice(text) is None


@pytest.mark.parametrize(
    "text",
    [
        "",
        None,
        "I have no idea.",
        "Answer: E",  # not among ABCD
        "the answer is a tricky one",
        "Answer: 42",
        "Some text\nA long line with a capital letter",
    ],
)
def test_extract_choice_none(text):
    assert extract_choice(text) is None


def test_extract_choice_custom_choices():
    assert extract_choice("Answer: E", choices="ABCDE") == "E"
    assert extract_choice("Answer: (f)", choices=["A", "B", "C", "D", "E", "F"]) == "F"
    assert extract_choice("Answer: A", choices="a,b") == "A"
    for bad in ("", "AAB", ["AB"], [1, 2], "A1", 5, None):
        with pytest.raises(AssayInputError):
            extract_choice("Answer: A", choices=bad)


# --- normalize / parse_number ----------------------------------------------------------------


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("  Paris ", "paris"),
        ("$42$", "42"),
        ("$$ 42 $$", "42"),
        ("1,000", "1000"),
        ("1,234,567.50", "1234567.5"),
        ("2.50", "2.5"),
        ("3.0", "3"),
        ("+7", "7"),
        ("-0.0", "0"),
        ("007", "7"),
        (".5", "0.5"),
        ("100", "100"),
        ("1/2", "1/2"),
        ("42.", "42"),
        ("Yes.", "yes"),
        (r"\text{Yes}", "yes"),
        (r"1\,000", "1000"),
        (r"\dfrac{1}{2}", r"\frac{1}{2}"),
        ("1,2", "1,2"),  # not a thousands separator: kept
        (2.50, "2.5"),
        (1000, "1000"),
    ],
)
def test_normalize(raw, expected):
    assert normalize(raw) == expected


@pytest.mark.parametrize("bad", [None, True, [1], {"a": 1}])
def test_normalize_rejects(bad):
    with pytest.raises(AssayInputError):
        normalize(bad)


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("1,000", 1000.0),
        ("-2.50", -2.5),
        ("1e-3", 0.001),
        ("1/2", 0.5),
        (r"\frac{3}{4}", 0.75),
        (r"-\frac{1}{2}", -0.5),
        (r"\dfrac{1}{4}", 0.25),
        ("50%", 50.0),
        ("$12.00$", 12.0),
        ("42 meters", 42.0),
        ("x = 3, so y = 5", 5.0),
        ("hello", None),
        ("1/0", None),
        (None, None),
    ],
)
def test_parse_number(raw, expected):
    got = parse_number(raw)
    if expected is None:
        assert got is None
    else:
        assert got == pytest.approx(expected)


# --- scorers ---------------------------------------------------------------------------------


def test_exact_scorer():
    s = exact()
    assert isinstance(s, Scorer)
    o = s(r"work... \boxed{1,000}", "1000")
    assert (o.score, o.status, o.extracted) == (1.0, "answered", "1,000")
    assert s("Answer: Paris.", "paris").score == 1.0
    assert s("Answer: London", "Paris").score == 0.0
    assert s("42", 42).score == 1.0  # one-line response, numeric reference
    assert s("Answer: 2.50", "2.5").score == 1.0
    assert s("Answer: b", ["a", "B"]).score == 1.0  # list of acceptable answers
    o = s("a long\nresponse without any marker", "x")
    assert (o.score, o.status, o.extracted) == (None, "unparseable", None)
    assert s("", "x").status == "unparseable"
    assert s(None, "x").status == "unparseable"
    assert exact(extract="boxed")("Answer: 3", "3").status == "unparseable"
    assert exact(extract=None)("  hello world ", "Hello World").score == 1.0
    assert exact(extract=lambda t: t.split()[-1])("it is 5", "5").score == 1.0
    with pytest.raises(AssayInputError):
        s("Answer: 1", None)
    with pytest.raises(AssayInputError):
        exact(extract="nope")


def test_numeric_scorer_tolerance_and_normalisation():
    s = numeric()
    assert s(r"\boxed{0.5}", "1/2").score == 1.0
    assert s(r"\boxed{\frac{1}{2}}", 0.5).score == 1.0
    assert s("Answer: 1,000", 1000).score == 1.0
    assert s("Answer: 1000.0000001", 1000).score == 1.0  # relative for large references
    assert s("Answer: 1000.01", 1000).score == 0.0
    assert s("Answer: 0.0000005", 0).score == 1.0  # absolute near 0
    assert s("Answer: 0.00001", 0).score == 0.0
    assert s("Answer: 42 apples", "42").score == 1.0
    assert numeric(tol=0.1)("Answer: 3.05", 3).score == 1.0
    assert numeric(tol=0)("Answer: 3.0", 3).score == 1.0
    o = s("Answer: forty-two", 42)  # a number written in words is a number
    assert (o.status, o.extracted, o.score) == ("answered", "forty-two", 1.0)
    o = s("Answer: many", 42)
    assert (o.status, o.extracted, o.score) == ("unparseable", None, None)
    assert s("long\nno marker", 1).status == "unparseable"
    for bad in (-1, float("nan"), float("inf"), "x"):
        with pytest.raises(AssayInputError):
            numeric(tol=bad)
    with pytest.raises(AssayInputError):
        s("Answer: 1", "not a number")


def test_choice_scorer():
    s = choice()
    o = s("The answer is (C).", "C")
    assert (o.score, o.status, o.extracted) == (1.0, "answered", "C")
    assert s("Answer: B", "c").score == 0.0
    assert s("Answer: B", "(b)").score == 1.0
    assert s("Answer: B", ["A", "B"]).score == 1.0
    o = s("Answer: C or D", "C")
    assert o.status == "unparseable" and "ambiguous" in o.detail
    assert s("no idea", "A").status == "unparseable"
    assert choice("ABCDE")("Answer: E", "E").score == 1.0
    with pytest.raises(AssayInputError):
        s("Answer: A", "E")  # reference outside choices
    with pytest.raises(AssayInputError):
        s("Answer: A", 0)  # an index is not a letter


def test_contains_scorer():
    s = contains()
    assert s("The capital is  PARIS, of course.", "paris").score == 1.0
    assert s("It is 1,000 apples", "1,000").score == 1.0
    assert s("nothing here", "paris").score == 0.0
    assert s("   ", "paris").status == "unparseable"
    assert contains(extract="answer")("Paris? Answer: Rome", "paris").score == 0.0


def test_make_scorer():
    assert repr(make_scorer("exact")).startswith("exact(")
    assert make_scorer("NUMERIC", tol=0.5)("Answer: 1.4", 1).score == 1.0
    assert make_scorer("choice", choices="AB")("Answer: B", "B").score == 1.0
    builtin = contains()
    assert make_scorer(builtin) is builtin

    def my(text, ref):
        return None if text == "?" else float(text == ref)

    w = make_scorer(my)
    assert w("x", "x") == Outcome(1.0, "answered", None, None)
    assert w("?", "x").status == "unparseable"
    assert make_scorer(lambda t, r: Outcome(0.5, "answered", t, "partial"))("a", "b").score == 0.5
    with pytest.raises(AssayInputError):
        make_scorer(lambda t, r: "yes")("a", "b")
    with pytest.raises(AssayInputError):
        make_scorer(lambda t, r: 2.0)("a", "b")  # score outside [0, 1]
    for bad in ("nope", "", 3, None):
        with pytest.raises(AssayInputError):
            make_scorer(bad)
    with pytest.raises(AssayInputError):
        make_scorer("exact", tol=1)  # unexpected argument
    with pytest.raises(AssayInputError):
        make_scorer(my, tol=1)


def test_builtin_scorers_pickle():
    for s in (exact(), numeric(tol=1e-3), choice("ABC"), contains()):
        s2 = pickle.loads(pickle.dumps(s))
        assert repr(s2) == repr(s)


def test_extract_auto():
    assert extract_auto(r"Answer: 3 \boxed{4}") == "4"
    assert extract_auto("Answer: 3") == "3"
    assert extract_auto("  17.  ") == "17"
    # several lines without a marker: no answer, unless the first line is one token before an explanation (the
    # "32" then reasoning shape of real small models: tests/fixtures/live_corpus)
    assert extract_auto("two words\nlines") is None
    assert extract_auto("two\nlines") == "two"
    assert extract_auto("") is None


# --- Outcome, policy, score_response, counts -------------------------------------------------


def test_outcome_validation():
    assert Outcome(True, "answered", "x", None).score == 1.0
    for bad in (
        dict(score=0.5, status="weird"),
        dict(score=None, status="answered"),
        dict(score=1.5, status="answered"),
        dict(score=float("nan"), status="answered"),
        dict(score=1.0, status="timeout"),
        dict(score=None, status="error", policy="maybe"),
    ):
        with pytest.raises(AssayInputError):
            Outcome(extracted=None, detail=None, **bad)
    d = Outcome(1.0, "answered", "4", None).to_dict()
    assert d == {"score": 1.0, "status": "answered", "extracted": "4", "detail": None,
                 "policy": None, "final_score": None}


EXPECTED = {"missing": None, "wrong": 0.0, "correct": 1.0}


@pytest.mark.parametrize("policy", ["missing", "wrong", "correct"])
@pytest.mark.parametrize("status", ["unparseable", "too_long", "refused"])
def test_apply_policy_model_failures(policy, status):
    # the model's failures on an item are scored by the policy
    assert apply_policy(Outcome(None, status, None, "why"), policy) == EXPECTED[policy]


@pytest.mark.parametrize("policy", ["missing", "wrong", "correct"])
@pytest.mark.parametrize("status", ["timeout", "transport"])
def test_apply_policy_endpoint_failures_are_never_scored(policy, status):
    # a dead or slow endpoint is not a wrong answer (nor a right one) under any policy
    assert apply_policy(Outcome(None, status, None, "why"), policy) is None


@pytest.mark.parametrize("policy", ["missing", "wrong", "correct"])
@pytest.mark.parametrize("score", [0.0, 0.25, 1.0])
def test_apply_policy_ok_keeps_score(policy, score):
    assert apply_policy(Outcome(score, "answered", "x", None), policy) == score


def test_apply_policy_default_and_bad():
    # the default policy is "wrong", as lm-evaluation-harness and inspect-ai score an answer they cannot parse
    assert apply_policy(Outcome(None, "unparseable")) == 0.0
    assert apply_policy(Outcome(None, "timeout")) is None
    assert set(POLICIES) == {"missing", "wrong", "correct"}
    for bad in ("Missing", "drop", "", None, 0):
        with pytest.raises(AssayInputError):
            apply_policy(Outcome(None, "timeout"), bad)
    with pytest.raises(AssayInputError):
        apply_policy({"status": "answered"}, "missing")
    with pytest.raises(AssayInputError):
        Outcome(None, "error")  # the old word is refused: one vocabulary


# (text, error, outcome from the model layer) for each way a call can end
CASES = {
    "answered": (r"\boxed{4}", None, None),
    "unparseable": ("I am not sure\nreally", None, None),
    "too_long": (None, None, "too_long"),
    "refused": ("   ", None, None),
    "timeout": (None, "no answer within 30.0 s (timed out)", None),
    "transport": (None, "connection refused at http://127.0.0.1:9/v1", None),
}


@pytest.mark.parametrize("policy", ["missing", "wrong", "correct"])
@pytest.mark.parametrize("status", list(CASES))
def test_score_response_every_status_every_policy(status, policy):
    text, error, outcome = CASES[status]
    o = score_response(text, error, "4", "exact", policy=policy, outcome=outcome)
    assert o.status == status
    assert o.policy == policy
    if status == "answered":
        assert o.score == o.final_score == 1.0
    elif status in ("timeout", "transport"):
        assert o.score is None and o.final_score is None
    else:
        assert o.score is None
        assert o.final_score == EXPECTED[policy]
    if error:
        assert o.detail == error


def test_score_response_details():
    # an error wins over text; any case; "timeout" anywhere
    assert score_response("42", "ReadTimeout: upstream", "42").status == "timeout"
    assert score_response("42", "TIMEOUT", "42").status == "timeout"
    assert score_response("42", "HTTP 500", "42").status == "transport"
    # a context-length error from an older journal is the model's too_long, not the endpoint's failure
    o = score_response(None, "HTTP 400: Requested tokens (2100) exceed context window of 2048", "42")
    assert (o.status, o.final_score) == ("too_long", 0.0)
    # empty error string = no error
    assert score_response("42", "", "42").status == "answered"
    # no text and no error: the model answered nothing
    o = score_response(None, None, "42")
    assert (o.status, o.final_score, o.policy) == ("refused", 0.0, "wrong")
    assert score_response(None, None, "42", outcome="refused", detail="refusal: no").detail == "refusal: no"
    # wrong answers stay wrong under every policy
    for policy in POLICIES:
        assert score_response("Answer: 5", None, "42", policy=policy).final_score == 0.0
    # scorer objects and callables
    assert score_response("Answer: (B)", None, "B", choice()).final_score == 1.0
    assert score_response("abc", None, "b", lambda t, r: float(r in t)).final_score == 1.0
    with pytest.raises(AssayInputError):
        score_response("42", None, "42", policy="drop")
    with pytest.raises(AssayInputError):
        score_response("42", None, "42", scorer="fuzzy")
    with pytest.raises(AssayInputError):
        score_response("42", RuntimeError("x"), "42")
    with pytest.raises(AssayInputError):
        score_response(42, None, "42")
    with pytest.raises(AssayInputError):
        score_response("42", None, "42", outcome="ok")


def test_count_outcomes():
    outs = [score_response(t, e, "4", policy="wrong", outcome=k) for t, e, k in CASES.values()]
    outs += [score_response(None, "timeout", "4"), score_response("Answer: 5", None, "4")]
    counts = count_outcomes(outs)
    assert counts == {"answered": 2, "unparseable": 1, "too_long": 1, "refused": 1, "timeout": 2, "transport": 1}
    assert list(counts) == list(STATUSES)
    assert count_outcomes([o.to_dict() for o in outs]) == counts
    zero = dict.fromkeys(STATUSES, 0)
    assert count_outcomes([]) == zero
    assert count_outcomes(iter(outs[:1])) == {**zero, "answered": 1}
    with pytest.raises(AssayInputError):
        count_outcomes([{"status": "weird"}])
    with pytest.raises(AssayInputError):
        count_outcomes([3])


def test_rescoring_under_another_policy_needs_no_model():
    outs = [score_response(t, e, "4", outcome=k) for t, e, k in CASES.values()]
    means = {}
    for policy in POLICIES:
        vals = [apply_policy(o, policy) for o in outs]
        kept = [v for v in vals if v is not None]
        means[policy] = sum(kept) / len(kept)
    # 1 answered right, 3 model failures, 2 endpoint failures (never scored)
    assert means == {"missing": 1.0, "wrong": 0.25, "correct": 1.0}
    assert not any(math.isnan(v) for v in means.values())


@pytest.mark.parametrize("text, want", [
    # the two shapes a fresh sample missed most (issue 37), and numbers in words
    ("2 + 4 = 6\nThe answer is the total of two and four, which makes six.", 6),
    ("31 + 15 = 46\nThe answer is a number.", 46),
    ("A week has 7 days.", 7),
    ("An insect has six legs.", 6),
    ("Three hundred and fifteen.", 315),
    ("So, Lena has 17 more coins than Kenji.", 17),
    ("The answer is 36 - 13 = 20 cookies left.", 20),
    ("Amara has 18 coins, and Tariq gives Amara 2 more. This means that Amara now has 30 coins (the original 18 + the "
     "new 2).", 30),
    ("April is approximately 31 days, not 40.", 31),
    ("1. First we add.\n2. Now we can calculate: 4 * 30 = 90 seconds.\nYou've already done it yourself!", 90),
    # a number in the question or the working is not the answer when the final statement gives another
    ("Omar has 19 cards. Lucas gives Omar 5 more, so Omar now has 20 cards.", 20),
    ("Lucas has 8 + 9 = 17 balloons. Mateo gives Lucas 17 more, so Lucas now has 26 balloons.", 26),
    # an answer given first stands against a later sentence that explains it; a later one given as final wins
    ("The answer is 17. There are 3 more shells than Ivan has now.", 17),
    ("7\nLet's break it down: 3 * 2 = 6 marbles are removed, so it is left with 4 remaining marbles.", 7),
    ("The answer is 15.\nSo, Kenji has a total of 2 * 15 = 30 balloons.", 30),
    # no answer
    ("The answer is 18 (Mateo) - 32 (Jonas).", None),
    ("A number is in the range of 5 to 10 when it ends with a zero.", None),
    ("1. hwb = 1, bxp = 10, haw = 2, qqt = 42", None),
    ("15 + 16 = Ana has 2 more marbles now.\nAnswer:", None),
    ("1. Multiply 5 by itself\n3. Now, multiply 11 by 6 (11 * 11)", None),
])
def test_the_number_a_response_commits_to(text, want):
    from assay.models.extract import extract_number

    got = extract_number(text)
    assert (None if got is None else parse_number(got)) == want, got


def test_a_cut_off_answer_is_read_by_its_markers_and_a_count_of_another_thing_is_no_answer():
    from assay.models.extract import extract_number

    working = "Jonas buys 3 boxes with 6 cards each. There are a total of 2 + 7 + 5 = 14 boxes with 1 card each and"
    assert extract_number(working) is not None and extract_number(working, cut_off=True) is None
    assert extract_number("14 is the answer. Then we count the", cut_off=True) == "14"
    q = "Tom has 2 bags with 3 shells in each bag. How many shells are there in all?"
    said = "In one bag, Tom has 2 + 3 = 5 shells\nThere are now 1.5 bags with the same number of shells."
    assert extract_number(said) == "1.5" and extract_number(said, question=q) is None
    assert extract_number("So there are 6 shells.", question=q) == "6"
    # through the scorer: the finish reason and the prompt reach the reader
    o = score_response(working, None, "14", "numeric", finish_reason="length")
    assert o.status == "unparseable"
    o = score_response(said, None, "6", "numeric", prompt=q)
    assert o.status == "unparseable"


@pytest.mark.parametrize("text, question, want", [
    # issue 37's second round: shapes of fresh answers the first rules misread, each beside one they must still read
    ("30 - 28 = 16\nAnswer:", None, 16),  # an empty Answer: after an equation that reached its result
    ("#### 6 Answer:", None, 6),
    ("Mia has 14 more marbles.\nAnswer:", None, None),  # ... not after a sentence
    ("10\n2\n3\n4", None, None),  # lone numbers on several lines are a list
    ("13 (months)\nThere are 3 years in 2 months.", None, 13),  # a glossed number first, then prose
    ("12 (The number of stamps)\n35 (the value of 35)", None, None),
    ("1. A previous answer: 24\nI added the additional box.", None, None),  # another's answer is no marker
    ("So your answer is 9 zeros in one thousand.", None, 9),  # a marker's value opens with its number
    ("The answer is indeed 2, with a fraction of 3/4 left over.", None, 2),
    ("So, there is no remainder when 23 minus 20 is divided by 5.", None, None),  # operands, an expression
    ("This is 1 + 2 - 4 = 5 + 6 = 8, where the final answer is the difference between the number of 1s.", None, 8),
    ("A century is a unit of time, equivalent to approximately 432 years.", None, 432),
    ("The English alphabet consists of 26 letters, but there are also digits.", None, 26),
    ("This simplifies to 670 with a remainder of 8 when divided by 9, so we round down to 68.", None, 68),
    ("The bags contain no more than 10 marbles total.", None, None),  # a bound, not an amount
    ("The bags contain 10 marbles total.", None, 10),
    ("Therefore, 3 minutes has a duration of 120 / 60 = 1 hour and 45 minutes.", None, None),  # two amounts
    ("16 + 27 = 45, but that's incorrect.", None, None),  # taken back
    ("When you have 30, divide it by the number that is asked.", None, None),  # a condition states nothing
    ("Therefore, Kenji has 36 - 27 = 10 more cards left to consider when you have two stacks of 5 cards each.", None,
     10),
    ("So, 3 kilograms is equal to 2.01 grams, which is the answer we are looking for.", None, 2.01),
    ("So Omar's total is 150 boxes x 2 + 60 boxes = 300 boxes, which is his answer.", None, 300),
    ("1\nIn this case, I would simply say:\n\n12 + 1 = 13", None, 13),  # an equation alone on the last line
    ("7\nLet's break it down: 3 * 2 = 6 marbles are removed.", None, 7),  # ... a sentence explaining does not
    # with the question: its data restated, the thing it counts, a difference it does not ask for
    ("Priya has 23 books and Omar has 17 books.\nThis is a classic example.",
     "Priya has 23 books and Omar has 17. How many more books does Priya have than Omar?", None),
    ("The answer is 20 - 54. This means Ines has a total of 18 more coins than Amara, which is 36.",
     "Ines has 54 coins and Amara has 33. How many more coins does Ines have than Amara?", 18),
    ("So, Mia now has 20 + 34 = 64 more.", "Mia has 34 stamps and gets 19 more. How many stamps does Mia have now?",
     64),
    ("Lena gave 41 cookies to Amara, and she has now only 5 left.",
     "Lena had 41 cookies and gave 5 of them to Amara. How many cookies does Lena have left?", 5),
    ("Garbled words here.\nAmara 20 stickers.", "Amara has 8 stickers. How many stickers does Amara have now?", 20),
    ("A non-leap year is 1 more than a leap year.", "How many days are in a non-leap year?", None),
    ("So, she has 44 - 20 = 18 more than the initial amount.",
     "Maya had 44 stamps and gave 20 of them to Tariq. How many stamps does Maya have left?", 18),
    ("So, Lena has 17 more coins than Kenji.", "How many more coins does Lena have than Kenji?", 17),
    # round 5 (greedy answers to prompts that ask for a number)
    ("Lucas has 25 - 19 = 3 cookies.\nAnswer:", None, 3),
    ("So, 5 * 100 = 50 grams are in 5 kilograms.", "How many grams are in 5 kilograms?", 50),
    ("There are 3 kilometers in total.", None, 3),
    ("#### 640\nAmara buys 7 boxes with 5 books, so she has 7 * 640 = 4320 books in her total box.", None, 4320),
    ("Lucas has 6 + 11 = 17.\n#### 1\nLucas has a total of 18 balloons.", None, 18),
    ("#### 7\nLet's check: 3 + 4 = 7 apples.\nThat is how we count.", None, 7),
    ("The answer is 60.\nTo convert it, multiply.\n\n3 * 3 = 9 seconds are in 60 minutes.", None, 60),
    ("The number of planets in the solar system is approximately 10, with eight confirmed Earth-sized worlds.",
     "How many planets are in the solar system? Answer with a number.", 10),
    ("5 dollars is equal to 0.125 cents, which is the equivalent decimal form of 5 in a currency system.", None,
     0.125),
    # round 7 (greedy and at 0.8): a statement taken back, "it's", a which-clause in the unit asked, a so-clause
    # in "X is the answer", an aside, a term with an unknown, a where-clause, numbers in words of the thing counted
    ("11*6 = 62 is incorrect.", None, None),
    ("11*6 = 62 is the product.", None, 62),
    ("The standard piano has 88 keys, but 88 is not a correct answer.", None, None),
    ("49-35 = 10 cookies.\nInes also has 10 more cookies than Mateo does, but that is not possible.", None, 10),
    ("In September, it's approximately 31 days.", None, 31),
    ("It's an exception to the traditional 365 days in a normal year.", "How many days are in a leap year?", None),
    ("23 centimeters is equal to 0.15 meters, which is the equivalent of 15 millimeters.",
     "How many millimeters are in 23 centimeters?", 15),
    (("5 dollars is equal to 0.125 cents, which is the equivalent decimal form of 5 in a system where it's often "
      "represented as 12.5 cents."), "How many cents are in 5 dollars?", 0.125),  # the which-clause states 5
    ("28 is less than 22, so 20 apples is the answer.", None, 20),
    ("Lena will have 49 more stamps than Jonas, which is a multiple of 3 (also the result of 2^(2*n)).", None, 49),
    ("Lena will have 2^5 more stamps than Jonas.", None, None),
    ("So the answer is 3x + 1.", None, None),
    ("We can think of it as 2 * 10 = 2x, where x is the number left.", None, None),
    ("So the answer is 3 x 4 = 12.", None, 12),
    ("The sum of 34 and 16 is 52, which can be written as a + b, where a = 34 and b = 16.", None, 52),
    ("Two-thirds of 23 is two seconds.", "How many seconds are in 23 minutes?", 2),
    ("Two-thirds of 23 is two steps.", "How many seconds are in 23 minutes?", None),
    ("Three hundred and three stickers are left.",
     "Maya had 34 stickers and gave 17 of them to Priya. How many stickers does Maya have left?", 303),
    ("Three hundred and three boxes are left.",
     "Maya had 34 stickers and gave 17 of them to Priya. How many stickers does Maya have left?", None),
    ("1. 25 + 4 = 30\nAdd this to your mind, it's 30 more than 27.", "Add 51 and 28.", 30),
    # round 8: two numbers joined by "and", a difference a marker opens with, a conversion into the wrong unit, a
    # statement disowned
    ("The number is 40 and 13.", None, None),
    ("The number is 40.", None, 40),
    ("The answer is 2 more than Lucas's total of 100.", None, 2),
    ("The answer is 1 more than 2*3 = 3+1 = 4.", None, 4),
    ("16 meters is equal to 3.28084 meters, which is a decimal approximation.",
     "How many centimeters are in 16 meters?", 3.28084),
    ("There are now 1.5 bags with the same number of shells.",
     "Tom has 2 bags with 3 shells in each bag. How many shells are there in all?", None),
    ("23 meters is approximately 1.85 meters, which is close to my answer but not quite.",
     "How many centimeters are in 23 meters?", None),
])
def test_the_second_round_shapes(text, question, want):
    from assay.models.extract import extract_number

    got = extract_number(text, question=question)
    assert (None if got is None else parse_number(got)) == want, got
