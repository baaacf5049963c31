"""The ``math`` scorer (issue 48): answers compared by value with math-verify, found by assay's reader, every call
bounded in wall time in any thread; and ``numeric`` refusing references it would misread."""

from __future__ import annotations

import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor

import pandas as pd
import pytest

from assay.errors import AssayInputError
from assay.models import mathverify
from assay.models.extract import extract_math, extract_number, parse_number
from assay.models.scoring import Asked, check_references, make_scorer, score, score_response

# the issue's table: answer, reference, right
ISSUE = [("So x = \\frac{3}{4}.", "0.75", 1.0), ("The answer is 2.", "2\\pi", 0.0), ("\\boxed{50\\%}", "0.5", 1.0),
         ("The answer is \\sqrt{2}", "\\sqrt{2}", 1.0), ("\\boxed{x^2+1}", "x^2+1", 1.0)]


@pytest.mark.parametrize("answer, reference, right", ISSUE)
def test_the_issues_answers_are_scored_as_a_reader_scores_them(answer, reference, right):
    out = make_scorer("math")(answer, reference)
    assert out.status == "answered" and out.score == right


FORMS = [  # answer, reference, right: every form the issue names compares by value
    ("The answer is $\\frac{6}{8}$.", "\\frac{3}{4}", 1.0),  # fractions
    ("The answer is 3/4.", "\\frac{3}{4}", 1.0),
    ("Final Answer: The final answer is $\\sqrt{8}$. I hope it is correct.", "2\\sqrt{2}", 1.0),  # roots
    ("The area is $4\\pi$.", "4\\pi", 1.0),  # pi
    ("The area is $4\\pi$.", "2\\pi", 0.0),
    ("So it is 75%.", "\\frac{3}{4}", 1.0),  # percentages
    ("The answer is $[0, 1]$.", "[0, 1]", 1.0),  # intervals, with their brackets
    ("The answer is $[0, 1)$.", "[0, 1]", 0.0),
    ("The point is $(1, 2)$.", "(1, 2)", 1.0),  # tuples
    ("The point is $(2, 1)$.", "(1, 2)", 0.0),
    ("The solutions are $\\{2, -2\\}$.", "\\{-2, 2\\}", 1.0),  # sets, in any order
    ("\\boxed{\\begin{pmatrix} 1 & 0 \\\\ 0 & 1 \\end{pmatrix}}",
     "\\begin{pmatrix} 1 & 0 \\\\ 0 & 1 \\end{pmatrix}", 1.0),  # matrices
    ("\\boxed{1 + 2x + x^2}", "x^2 + 2x + 1", 1.0),  # expressions
    ("\\boxed{x^2 + 2x}", "x^2 + 2x + 1", 0.0),
    ("Thus the sum is $\\frac{3}{6} = \\frac{1}{2}$.", "\\frac{1}{2}", 1.0),  # the end of an equation chain
]


@pytest.mark.parametrize("answer, reference, right", FORMS)
def test_answer_forms_compare_by_value(answer, reference, right):
    out = make_scorer("math")(answer, reference)
    assert (out.status, out.score) == ("answered", right), out


def test_where_the_answer_is_found():
    assert extract_math("We get \\boxed{2} and then \\boxed{\\frac{1}{2}}") == "\\frac{1}{2}"  # the last box
    assert extract_math("Final Answer: The final answer is $2\\pi$. I hope it is correct.") == "2\\pi"
    assert extract_math("1. 3/4\n2. 0.75\n3. 8/16") is None  # candidates, none chosen
    assert extract_math("$\\frac{1}{2}$") == "\\frac{1}{2}"  # only an answer
    # a response cut off by its token limit is read by its markers only: its last sentence is unfinished work
    assert extract_math("We have x = 3. Then x + 1 = 4", cut_off=True) is None
    assert extract_math("The answer is $5$. Now, another example: x = 7", cut_off=True) == "5"
    cut = score_response("We have x = 3. Then x + 1 = 4", None, "4", "math", finish_reason="length")
    assert cut.status == "unparseable"


def test_an_unreadable_answer_is_unparseable_and_an_unreadable_reference_is_refused_naming_the_row():
    sc = make_scorer("math")
    assert sc("I do not know.", "\\frac{1}{2}").status == "unparseable"
    with pytest.raises(AssayInputError, match="cannot read the reference"):
        sc("The answer is 2.", "\\frac{")
    with pytest.raises(AssayInputError, match="row 'q2'.*cannot read the reference"):
        check_references("math", ["\\frac{1}{2}", "\\frac{"], ids=["q1", "q2"])
    with pytest.raises(AssayInputError, match="timeout must be"):
        make_scorer("math", timeout=0)


def test_a_call_that_runs_out_of_time_is_unparseable_from_any_thread():
    sc = make_scorer("math", timeout=1)
    with ThreadPoolExecutor(4) as pool:  # not the main thread: math-verify's SIGALRM would fail here
        outs = list(pool.map(lambda a: sc(a, "1"), ["\\boxed{9^{9^{9^{9}}}}", "\\boxed{1}", "\\boxed{2}"]))
    assert outs[0].status == "unparseable" and "longer than 1 s" in outs[0].detail
    assert (outs[1].score, outs[2].score) == (1.0, 0.0)


@pytest.mark.slow  # it waits for a frozen helper process to time out
def test_a_helper_that_stops_answering_is_killed_and_replaced():
    assert mathverify.same_answer(["1"], "1", timeout=1) == (True, "1")  # the helper runs
    proc = mathverify._HELPER.proc
    os.kill(proc.pid, signal.SIGSTOP)  # a loop in C code that no signal of its own interrupts
    start = time.monotonic()
    assert mathverify.same_answer(["1"], "2", timeout=1) == mathverify.TIMEOUT
    assert time.monotonic() - start < 30
    assert proc.poll() is not None  # killed
    assert mathverify.same_answer(["\\frac{1}{2}"], "0.5", timeout=1)[0] is True  # a new helper


def test_numeric_refuses_references_it_would_misread_and_keeps_plain_ones():
    sc = make_scorer("numeric")
    for ref in ("2\\pi", "2x", "x^2+1", "\\sqrt{2}", "(1, 2)"):
        with pytest.raises(AssayInputError, match="math scorer"):
            sc("The answer is 2.", ref)
    for answer, ref in (("I have 42 apples.", "42 apples"), ("It costs $5.", "$5"), ("The answer is 1000.", "1,000"),
                        ("The answer is 50%.", "50%"), ("The answer is 0.75.", "\\frac{3}{4}")):
        assert sc(answer, ref).score == 1.0, (answer, ref)
    with pytest.raises(AssayInputError, match="row 'b'.*not a plain number"):
        check_references(["numeric", "numeric"], ["4", "2x"], ids=["a", "b"])


def test_numeric_never_reads_a_latex_fraction_as_its_numerator():
    assert parse_number(extract_number("So x = \\frac{3}{4}.")) == 0.75
    assert parse_number(extract_number("The answer is $\\dfrac{7}{2}$.")) == 3.5
    assert extract_number("The answer is $5\\sqrt{2}$.") is None  # not a number: not 5
    assert extract_number("The area is 4\\pi.") is None
    assert make_scorer("numeric")("\\boxed{50\\%}", "0.5").score == 1.0  # a percentage is its fraction too


def test_assay_query_refuses_an_unreadable_reference_before_any_request(tmp_path):
    from typer.testing import CliRunner

    from assay.cli import app

    bank = tmp_path / "bank.csv"
    pd.DataFrame({"id": ["a", "b"], "prompt": ["1/2 + 1/4?", "pi?"], "reference": ["\\frac{3}{4}", "2\\pi"]}).to_csv(
        bank, index=False)
    # an endpoint that does not exist: a request would fail with a transport error, not with the reference's row
    res = CliRunner().invoke(app, ["query", str(bank), "--model", "m", "--endpoint", "http://127.0.0.1:9/v1",
                                   "--reference-col", "reference", "--scorer", "numeric", "--journal",
                                   str(tmp_path / "j.sqlite")])
    assert res.exit_code != 0 and "row 'b'" in res.output and "math scorer" in res.output


def test_a_restatement_of_the_question_is_not_an_answer():
    sc = make_scorer("math")
    assert sc("The answer is $0.5$.", "\\frac{1}{2}", Asked("What is $0.5$ written as a fraction?")).score == 0.0
    assert sc("So it is $\\sqrt{8}$.", "2\\sqrt{2}", Asked("Simplify $\\sqrt{8}$.")).score == 0.0
    assert sc("The answer is 0.1.", "10\\%", Asked("Write 0.1 as a percentage.")).score == 0.0
    assert sc("So it is $2\\sqrt{2}$.", "2\\sqrt{2}", Asked("Simplify $\\sqrt{8}$.")).score == 1.0
    # the worked examples of a few-shot prompt are not the question
    shots = "Problem: What is $\\frac{1}{3} + \\frac{1}{6}$?\nSolution: ... $\\frac{1}{2}$.\n\nProblem: What is $2^{-1}$?"
    assert sc("The final answer is $\\frac{1}{2}$.", "\\frac{1}{2}", Asked(shots)).score == 1.0


def test_a_problem_the_model_makes_up_after_answering_is_not_read():
    text = "Answer: $\\frac{6}{12}$\n\nProblem 2. What is $\\frac{5}{8}$ doubled?\nSolution: ...\nAnswer: $\\frac{5}{4}$"
    assert extract_math(text) == "\\frac{6}{12}"
    # the cut came inside the made-up problem: the answer before it stands
    assert extract_math(text + "\n\nProblem 3. What", cut_off=True) == "\\frac{6}{12}"
    assert extract_math("Answer:\nThe circumference of a circle with diameter 3 is 3\\pi.") == "3\\pi"


def test_alternatives_are_no_answer_and_solutions_are_a_set():
    assert extract_math("The answer is $82 \\%$ or $100 \\%$.") is None
    assert extract_math("So x = 2 or x = -2.") == "\\{2, -2\\}"
    assert make_scorer("math")("The answer is $x = 2$ or $x = -2$.", "\\{-2, 2\\}").score == 1.0


def test_a_reference_in_words_is_refused_on_every_path_and_maths_is_not():
    """`score(..., "see the figure", "math")` used to score the answer 0 (math-verify reads words as a product of
    letters); a reference that is prose is refused, naming it, on every path. Every reference of the labelled corpus,
    words inside \\text{}, variables and a lettered option stay accepted."""
    import json
    from pathlib import Path

    with pytest.raises(AssayInputError, match="'see the figure' is words, not maths"):
        score({"text": "The answer is 4."}, "see the figure", "math")
    with pytest.raises(AssayInputError, match="row 'q2'.*is words, not maths"):
        check_references("math", ["4", "no real solution"], ids=["q1", "q2"])
    with pytest.raises(AssayInputError, match="is words"):
        make_scorer("math")("4", "the answer is four")
    corpus = Path(__file__).parent / "fixtures" / "live_corpus" / "math.jsonl"
    refs = sorted({str(json.loads(line)["reference"]) for line in corpus.read_text().splitlines() if line.strip()})
    assert len(refs) > 100
    check_references("math", refs + ["\\text{Evelyn}", "x+y", "(C)", "x = 2 \\text{ or } x = -2",
                                     "\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}", "\\text{no real solution}"])


def test_one_contract_every_scorer_reads_what_it_needs_of_the_request():
    """Every scorer is called as scorer(text, reference, asked): choice reads the prompt's options, numeric and math
    whether the answer was cut off; a plain (text, reference) callable and one that takes the request work too."""
    prompt = "Which is largest?\nA) 12\nB) 76\nC) 33"
    assert make_scorer("choice")("The largest number is 76.", "B", Asked(prompt)).score == 1.0
    assert make_scorer("choice")("The largest number is 76.", "B").status == "unparseable"  # no options without it
    cut = "Jonas buys 3 boxes with 6 cards each. There are a total of 2 + 7 + 5 = 14 boxes with 1 card each and"
    assert make_scorer("numeric")(cut, "14").score == 1.0
    assert make_scorer("numeric")(cut, "14", Asked(finish_reason="length")).status == "unparseable"
    plain = make_scorer(lambda text, ref: text.strip() == ref)
    assert plain(" ok ", "ok", Asked("ignored")).score == 1.0
    seen = []
    aware = make_scorer(lambda text, ref, asked: seen.append(asked.finish_reason) or 1.0)
    assert score_response("x", None, "y", aware, finish_reason="length").final_score == 1.0 and seen == ["length"]
