"""``assay.eval.plan``: what a campaign will ask and what it may cost, before any request (issue 25)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from assay.errors import AssayInputError
from assay.eval.plan import CHARS_PER_TOKEN, plan
from assay.eval.spec import load_campaign, parse_campaign

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "campaign.toml"


def _bank(tmp_path, n=50):
    bank = pd.DataFrame({"id": [f"q{i}" for i in range(n)], "prompt": ["x" * (10 + i) for i in range(n)],
                         "reference": ["a"] * n})
    path = tmp_path / "bank.csv"
    bank.to_csv(path, index=False)
    hist = tmp_path / "hist.csv"
    pd.DataFrame([[1, 0] * (n // 2)] * 3, columns=bank["id"]).to_csv(hist)
    labels = tmp_path / "human.csv"
    pd.DataFrame({"item": bank["id"][:5], "loss_human": [0, 1, 0, 0, 1]}).to_csv(labels, index=False)
    return bank, path, hist, labels


def _campaign(tmp_path, bank_keys=None, template="Q: {question}", **sections):
    bank, path, hist, labels = _bank(tmp_path)
    data = {"campaign": {"name": "t"},
            "model": [{"name": "a", "endpoint": "http://127.0.0.1:1/v1", "model": "m", "template": template,
                       "max_tokens": 10, "price_in": 1.0, "price_out": 2.0},
                      {"name": "b", "endpoint": "http://127.0.0.1:1/v1", "model": "m", "max_tokens": 20,
                       "system": "be brief"}],
            "bank": {"path": str(path), "sample": 20, **(bank_keys or {})}}
    data.update(sections)
    return parse_campaign(data, source="t.toml", base=tmp_path), bank, hist, labels


def test_the_example_plan_counts_every_request_before_any_is_sent():
    c = load_campaign(EXAMPLE)
    p = plan(c)
    rows = {(r.model, r.section): r for r in p.rows}
    assert p.bank_size == 303 and p.sample_size == 100
    # faq: 25% of the history's 200 questions at most (said in a note); the shared sample: 100; scope: its budget
    assert rows[("greedy", "faq")].requests == 50 and rows[("greedy", "sample")].requests == 100
    assert any("the 200 questions of the history (the bank has 303)" in n for n in p.notes)
    assert rows[("sampled", "scope")].requests == 200 and rows[("sampled", "scope")].prompt_tokens == 0
    # no human labels: the judge section is skipped with its reason, and the rest still runs
    assert "judge" in p.skipped and "human labels" in p.skipped["judge"] and p.judge_requests == 0
    assert rows[("greedy", "compare")].requests == 40  # at most: compare stops once every pair is resolved
    assert p.totals()["greedy"]["requests"] == 390
    d = p.to_dict()
    assert d["fingerprint"] == c.fingerprint() and "LOCAL_API_KEY" not in str(d["rows"])


def test_tokens_and_dollars_are_measured_on_the_bank_with_the_template(tmp_path):
    c, bank, *_ = _campaign(tmp_path, faq={"history": str(tmp_path / "hist.csv"), "budget": 10})
    p = plan(c)
    rows = {(r.model, r.section): r for r in p.rows}
    mean_len = bank["prompt"].str.len().mean()
    a = rows[("a", "faq")]
    assert a.requests == 10
    assert a.prompt_tokens == round(10 * (mean_len + len("Q: ")) / CHARS_PER_TOKEN)
    assert a.completion_tokens == 10 * 10
    assert a.dollars == pytest.approx((a.prompt_tokens * 1.0 + a.completion_tokens * 2.0) / 1e6)
    b = rows[("b", "faq")]
    assert b.prompt_tokens == round(10 * (mean_len + len("be brief")) / CHARS_PER_TOKEN) and b.dollars == 0
    assert p.sample_size is None and not any(r.section == "sample" for r in p.rows)


def test_the_shared_sample_and_the_judge(tmp_path):
    c, *_ = _campaign(tmp_path, judge={"endpoint": "http://127.0.0.1:2/v1", "model": "j",
                                                 "human_labels": str(tmp_path / "human.csv"), "risk_target": 0.3},
                                kpi={"metrics": ["latency_s"]})
    p = plan(c)
    assert p.sample_size == 20 and not p.skipped
    assert [r.requests for r in p.rows if r.section == "sample"] == [20, 20]
    assert p.judge_requests == 40
    assert any("kpi sends no request" in n for n in p.notes)
    # a sample larger than the bank is the whole bank
    c2, *_ = _campaign(tmp_path, bank_keys={"sample": 500}, kpi={"metrics": ["latency_s"]})
    assert plan(c2).sample_size == 50



def test_one_budget_rule_for_the_sample_faq_and_compare(tmp_path):
    """[bank].sample, [faq].budget and [compare].budget resolve by one rule (assay.checks.fraction_or_count): a
    fraction that leaves fewer than 2 of the 50 questions is refused with the key named (the sample used to round it
    up to 2 where FAQ refused it), and an integral float above 1 is a count in the file as in the library."""
    c, *_ = _campaign(tmp_path, bank_keys={"sample": 0.03}, kpi={"metrics": ["latency_s"]})
    with pytest.raises(AssayInputError, match=r"\[bank\]\.sample 0.03 of 50 questions is 1; at least 2"):
        plan(c)
    c, *_ = _campaign(tmp_path, faq={"history": str(tmp_path / "hist.csv"), "budget": 0.03})
    with pytest.raises(AssayInputError, match=r"\[faq\]\.budget 0.03 of 50 questions is 1; at least 2"):
        plan(c)
    c, *_ = _campaign(tmp_path, compare={"budget": 12.0})
    assert c.compare.budget == 12.0 and {r.requests for r in plan(c).rows if r.section == "compare"} == {12}
    c, *_ = _campaign(tmp_path, bank_keys={"sample": 0.04}, kpi={"metrics": ["latency_s"]})
    assert plan(c).sample_size == 2


def test_a_plan_over_a_budget_cap_is_refused_before_any_request(tmp_path):
    c, *_ = _campaign(tmp_path, faq={"history": str(tmp_path / "hist.csv"), "budget": 10}, kpi={"metrics": ["latency_s"]},
                              budget={"questions": 25})
    with pytest.raises(AssayInputError, match=r"up to 30 questions, over \[budget\]\.questions = 25"):
        plan(c)
    c, *_ = _campaign(tmp_path, faq={"history": str(tmp_path / "hist.csv"), "budget": 10}, budget={"dollars": 1e-6})
    with pytest.raises(AssayInputError, match=r"over \[budget\]\.dollars"):
        plan(c)
    c, *_ = _campaign(tmp_path, faq={"history": str(tmp_path / "hist.csv"), "budget": 10}, budget={"tokens": 100})
    with pytest.raises(AssayInputError, match=r"over \[budget\]\.tokens = 100"):
        plan(c)


def test_a_choices_column_that_is_not_there_is_named(tmp_path):
    c, *_ = _campaign(tmp_path, bank_keys={"choices_col": "options"}, template="{question}\n{choices}",
                      faq={"history": str(tmp_path / "hist.csv")})
    with pytest.raises(AssayInputError, match=r"\[bank\]\.choices_col 'options' is not a column"):
        plan(c)
