"""The campaign's shared sample and its PS-DME section against the real local model (SmolLM2-135M on llama.cpp):
real answers, messy ones included, counted in the outcome vocabulary and scored by the bank's policy."""

from __future__ import annotations

import pandas as pd
import pytest

from assay.eval.sample import kpi_section, run_sample
from assay.eval.spec import parse_campaign
from assay.models.scoring import STATUSES


def test_the_sample_and_its_kpis_on_the_real_model(live_model, tmp_path):
    from assay.datasets import load_basics

    load_basics().groupby("shape", sort=False).head(4).to_csv(tmp_path / "bank.csv", index=False)
    models = [{"name": f"max{n}", "endpoint": live_model.base_url, "model": live_model.alias, "max_tokens": n,
               "concurrency": 2, "timeout": 120} for n in (16, 48)]
    c = parse_campaign({"campaign": {"name": "live", "seed": 3}, "model": models,
                        "bank": {"path": "bank.csv", "scorer_col": "scorer", "sample": 8},
                        "kpi": {"metrics": ["latency_s", "completion_tokens"], "select": "all"}},
                       source="live.toml", base=tmp_path)
    journal = tmp_path / "j.sqlite"
    rows = run_sample(c, journal=journal)
    assert len(rows) == 16 and not rows["cached"].any()
    # every real answer has an outcome from the vocabulary, and under the default policy every one that is not a
    # parsed answer (unparseable, too long, refused or empty) is scored as wrong, none left unscored
    assert rows["status"].isin(STATUSES).all() and rows["score"].notna().all()
    assert (rows.loc[rows["status"] != "answered", "score"] == 0).all()
    assert (rows["latency_s"] > 0).all() and (rows["completion_tokens"] >= 0).all()
    assert (rows.loc[rows.model == "max16", "completion_tokens"] <= 16).all()
    # a rerun pays for nothing: every answer comes back from the journal, the same
    again = run_sample(c, journal=journal)
    assert again["cached"].all()
    pd.testing.assert_series_equal(again["text"], rows["text"])
    results, skipped = kpi_section(c, rows)
    assert set(results) == {"latency_s", "completion_tokens"} and not skipped
    assert set(results["latency_s"].table["config"]) == {"max16", "max48"}
    assert results["latency_s"].level["delta"] == pytest.approx(0.05)
