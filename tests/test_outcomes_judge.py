"""The outcome vocabulary, the context-length recogniser and the judge's rubric and verdict rules (no server)."""

from __future__ import annotations

import pandas as pd
import pytest

from assay.errors import AssayInputError
from assay.models import CallableModel, Response
from assay.models.judge import RUBRICS, Rubric, judge, parse_verdict
from assay.models.outcomes import (ENDPOINT_FAILURES, MODEL_FAILURES, OUTCOMES, counts_of, headline,
                                   is_context_length, of_response)

# what real servers say when a prompt does not fit (llama-cpp-python, llama.cpp, vLLM, OpenAI, Ollama, LiteLLM)
CONTEXT_REPLIES = [
    "This model's maximum context length is 2048 tokens. However, you requested 3051 tokens (3031 in the messages, "
    "20 in the completion). Please reduce the length of the messages or completion.",
    "Requested tokens (2100) exceed context window of 2048",
    "the request exceeds the available context size, try increasing it",
    "Error code: context_length_exceeded",
    "prompt is too long: 5000 tokens > 4096 maximum",
    "Input is too long for requested model.",
]
OTHER_400 = ["Invalid value for 'temperature': must be between 0 and 2", "model 'x' not found",
             "messages: field required", "Unsupported parameter: 'seed'"]


@pytest.mark.parametrize("msg", CONTEXT_REPLIES)
def test_context_length_replies_are_too_long(msg):
    assert is_context_length(400, msg)
    assert is_context_length(413, msg)
    assert not is_context_length(500, msg) and not is_context_length(None, msg)


@pytest.mark.parametrize("msg", OTHER_400)
def test_other_bad_requests_are_not_too_long(msg):
    assert not is_context_length(400, msg)


def test_vocabulary_partitions_the_outcomes():
    assert set(OUTCOMES) == {"answered"} | MODEL_FAILURES | ENDPOINT_FAILURES
    assert not MODEL_FAILURES & ENDPOINT_FAILURES
    assert of_response(Response(text="4", latency_s=0.1)) is None
    assert of_response(Response(text="  ", latency_s=0.1)) == "refused"
    assert of_response(Response(text=None, latency_s=0.1, outcome="too_long")) == "too_long"
    assert of_response({"text": None, "error": "timed out: no answer within 5 s"}) == "timeout"
    assert of_response({"text": None, "error": "connection refused at http://x"}) == "transport"
    c = counts_of(["answered", "unparseable", "unparseable", "timeout"])
    assert c == {"answered": 1, "unparseable": 2, "too_long": 0, "refused": 0, "timeout": 1, "transport": 0}
    line = headline(c, "wrong")
    assert line == ("of 4 requests: 2 unparseable, 0 too long for the model, 0 refused or empty: scored as wrong "
                    "(policy 'wrong'); 1 timed out: missing (not answers)")
    with pytest.raises(AssayInputError):
        counts_of(["ok"])


# -- rubrics ----------------------------------------------------------------------------------------------------


def test_shipped_rubrics_and_bad_rubrics(tmp_path):
    for r in RUBRICS.values():
        assert set(r.verdicts) == {"CORRECT", "INCORRECT"}
        p = r.prompt("What is 1 + 1?", "2", "two")
        assert "What is 1 + 1?" in p and "two" in p and "{answer}" not in p
    with pytest.raises(AssayInputError, match="no verdict format"):
        Rubric("Q: {question} R: {reference} A: {answer}. Is it right?")  # CORRECT / INCORRECT never shown
    with pytest.raises(AssayInputError, match="placeholder"):
        Rubric("Grade this: {answer}. CORRECT or INCORRECT?")
    with pytest.raises(AssayInputError, match="no verdict format"):
        Rubric("{question} {reference} {answer} PASS?", {"PASS": 0})
    with pytest.raises(AssayInputError, match=r"in \[0, 1\]"):
        Rubric("{question} {reference} {answer} PASS or FAIL", {"PASS": 0, "FAIL": 2})
    f = tmp_path / "r.yaml"
    f.write_text("template: 'Q {question} R {reference} A {answer}. Say PASS or FAIL.'\n")
    with pytest.raises(AssayInputError, match="no verdict format"):
        Rubric.load(f)
    f.write_text("template: 'Q {question} R {reference} A {answer}. Say PASS or FAIL.'\nverdicts: {PASS: 0, FAIL: 1}\n")
    assert Rubric.load(f).verdicts == {"PASS": 0.0, "FAIL": 1.0}
    with pytest.raises(AssayInputError, match="no rubric"):
        Rubric.load(tmp_path / "missing.yaml")


@pytest.mark.parametrize("reply, verdict", [
    ("CORRECT", "CORRECT"), (" INCORRECT", "INCORRECT"), ("Verdict: correct.", "CORRECT"),
    ("The answer is incorrect because 2 + 2 is 4.", "INCORRECT"), ("**INCORRECT**", "INCORRECT"),
    ("This is not correct.", "INCORRECT"), ("<think>maybe correct</think> INCORRECT", "INCORRECT"),
    ("It is correct. No wait, it is incorrect.", None), ("10", None), ("", None), (None, None),
    ("CORRECT or INCORRECT", None),
])
def test_parse_verdict(reply, verdict):
    assert parse_verdict(reply, RUBRICS["default"]) == verdict


def test_judge_labels_outcomes_and_policy():
    rows = pd.DataFrame({"candidate": ["a"] * 5, "item": list("12345"), "question": ["q"] * 5,
                         "reference": ["4"] * 5, "answer": ["4", "5", None, "four", "x"],
                         "h": [0.0, 1.0, None, None, 1.0]})
    replies = iter(["CORRECT", "INCORRECT", "hmm", ""])

    def fake_judge(prompt):
        return next(replies)

    res = judge(rows, CallableModel(fake_judge, name="j"), human_col="h", concurrency=1)
    lab = res.labels
    assert list(lab["loss_judge"]) == [0.0, 1.0, 1.0, 1.0, 1.0]
    assert list(lab["outcome"]) == ["answered", "answered", "not sent", "unparseable", "refused"]
    assert lab["loss_human"].isna().sum() == 2
    assert res.counts["unparseable"] == 1 and res.counts["refused"] == 1
    assert res.agreement() == {"n": 2, "agreement": 1.0}
    with pytest.raises(AssayInputError, match="policy"):
        judge(rows, CallableModel(fake_judge), policy="missing")
    with pytest.raises(AssayInputError, match="duplicate"):
        judge(pd.concat([rows, rows]), CallableModel(fake_judge))
    with pytest.raises(AssayInputError, match="no column"):
        judge(rows.drop(columns="reference"), CallableModel(fake_judge))
