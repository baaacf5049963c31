"""The campaign's shared sample asked live through the journal, and the PS-DME section on its KPIs (issue 25)."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from fake_openai_server import FakeOpenAIServer, question  # noqa: E402

from assay.errors import AssayInputError  # noqa: E402
from assay.eval.sample import campaign_run_id, kpi_section, run_sample  # noqa: E402
from assay.eval.spec import parse_campaign  # noqa: E402


def _campaign(tmp_path, url, **kpi):
    bank = pd.DataFrame({"id": [f"q{i}" for i in range(30)], "prompt": [question(i, 2 * i) for i in range(30)],
                         "reference": [3 * i for i in range(30)]})
    bank.to_csv(tmp_path / "bank.csv", index=False)
    models = [{"name": "short", "endpoint": url, "model": "fake", "max_tokens": 16, "price_in": 1.0, "price_out": 3.0},
              {"name": "long", "endpoint": url, "model": "fake", "max_tokens": 64, "template": "Think. {question}",
               "price_in": 1.0, "price_out": 3.0}]
    return parse_campaign({"campaign": {"name": "t", "seed": 5}, "model": models,
                           "bank": {"path": "bank.csv", "scorer": "numeric", "sample": 12},
                           "kpi": {"metrics": ["latency_s", "completion_tokens", "cost", "ttft_s"], **kpi}},
                          source="t.toml", base=tmp_path)


def test_the_sample_is_asked_once_scored_and_read_back_from_the_journal(tmp_path):
    journal = tmp_path / "j.sqlite"
    with FakeOpenAIServer(retry_after=0) as srv:
        c = _campaign(tmp_path, srv.base_url)
        rows = run_sample(c, journal=journal)
        paid = srv.total
        again = run_sample(c, journal=journal)
        assert srv.total == paid  # the rerun pays for nothing: every answer comes from the journal
    assert paid == 24 and len(rows) == 24 and rows.groupby("model").size().to_dict() == {"long": 12, "short": 12}
    assert (rows["score"] == 1).all() and (rows["status"] == "answered").all()
    # both configurations were asked the same uniformly drawn items
    assert set(rows.loc[rows.model == "short", "item"]) == set(rows.loc[rows.model == "long", "item"])
    assert rows.loc[rows.model == "long", "prompt"].str.startswith("Think. What is").all()
    assert (rows["latency_s"] > 0).all() and (rows["completion_tokens"] > 0).all()
    assert rows["cost"].to_numpy() == pytest.approx((rows.prompt_tokens * 1.0 + rows.completion_tokens * 3.0) / 1e6)
    assert again["cached"].all() and (again[["item", "score"]].to_numpy() == rows[["item", "score"]].to_numpy()).all()
    assert rows["run_id"].iloc[0].startswith(campaign_run_id(c) + "/")


def test_kpi_bands_after_the_declared_selection_and_the_kpis_the_endpoint_did_not_report(tmp_path):
    with FakeOpenAIServer(retry_after=0) as srv:
        c = _campaign(tmp_path, srv.base_url, select="top_k", k=1, target=0.8)
        rows = run_sample(c, journal=tmp_path / "j.sqlite")
    results, skipped = kpi_section(c, rows)
    assert set(results) == {"latency_s", "completion_tokens", "cost"}
    assert "ttft_s" in skipped and "stream = true" in skipped["ttft_s"]
    r = results["cost"]
    # the declared rule (top_k, k = 1) kept the cheaper configuration (the other's template adds prompt tokens)
    means = rows.groupby("model")["cost"].mean()
    assert means["short"] < means["long"] and list(r.selected) == ["short"]
    assert r.level["delta"] == pytest.approx(0.05) and r.params["band"] == "berk-jones"
    assert "kpi_0.8" in r.table.columns  # the guaranteed KPI at the declared target (failure probability 0.2)


def test_a_sample_without_a_bank_is_refused(tmp_path):
    c = parse_campaign({"campaign": {"name": "t"}, "model": [{"name": "a", "endpoint": "http://127.0.0.1:9/v1",
                                                                "model": "m"}],
                        "scope": {"budget": 5}}, source="t.toml", base=tmp_path)
    with pytest.raises(AssayInputError, match=r"needs a \[bank\]"):
        run_sample(c, journal=tmp_path / "j.sqlite")


def test_empty_choices_are_named_before_any_request(tmp_path):
    bank = pd.DataFrame({"id": ["a", "b", "c"], "prompt": ["x", "y", "z"], "reference": ["1", "2", "3"],
                         "options": ["A) 1", None, "C) 3"]})
    bank.to_csv(tmp_path / "bank.csv", index=False)
    c = parse_campaign({"campaign": {"name": "t"},
                        "model": [{"name": "a", "endpoint": "http://127.0.0.1:9/v1", "model": "m",
                                   "template": "{question} {choices}"}],
                        "bank": {"path": "bank.csv", "choices_col": "options"}, "kpi": {"metrics": ["latency_s"]}},
                       source="t.toml", base=tmp_path)
    with pytest.raises(AssayInputError, match=r"choices_col 'options' is empty for ids b"):
        run_sample(c, journal=tmp_path / "j.sqlite")
