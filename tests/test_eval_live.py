"""The campaign's shared sample and its PS-DME section against the real local model (SmolLM2-135M on llama.cpp):
real answers, messy ones included, counted in the outcome vocabulary and scored by the bank's policy."""

from __future__ import annotations

import pandas as pd
import pytest

from assay.eval.sample import kpi_section, run_sample
from assay.eval.spec import parse_campaign
from assay.models.scoring import STATUSES

# one worker runs every test of a real model: its llama.cpp servers (session fixtures) load once, not on each worker
# slow (make check leaves it out): a real model server
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("live")]


def test_the_sample_and_its_kpis_on_the_real_model(live_model, tmp_path):
    from assay.datasets import load_basics

    load_basics().groupby("shape", sort=False).head(4).to_csv(tmp_path / "bank.csv", index=False)
    # a sample of 4 items (8 answers; 8 items took 5.5 s): each configuration's KPIs still have an answer per item
    models = [{"name": f"max{n}", "endpoint": live_model.base_url, "model": live_model.alias, "max_tokens": n,
               "concurrency": 2, "timeout": 120} for n in (8, 24)]
    c = parse_campaign({"campaign": {"name": "live", "seed": 3}, "model": models,
                        "bank": {"path": "bank.csv", "scorer_col": "scorer", "sample": 4},
                        "kpi": {"metrics": ["latency_s", "completion_tokens"], "select": "all"}},
                       source="live.toml", base=tmp_path)
    journal = tmp_path / "j.sqlite"
    rows = run_sample(c, journal=journal)
    assert len(rows) == 8 and not rows["cached"].any()
    # every real answer has an outcome from the vocabulary, and under the default policy every one that is not a
    # parsed answer (unparseable, too long, refused or empty) is scored as wrong, none left unscored
    assert rows["status"].isin(STATUSES).all() and rows["score"].notna().all()
    assert (rows.loc[rows["status"] != "answered", "score"] == 0).all()
    assert (rows["latency_s"] > 0).all() and (rows["completion_tokens"] >= 0).all()
    assert (rows.loc[rows.model == "max8", "completion_tokens"] <= 8).all()
    # a rerun pays for nothing: every answer comes back from the journal, the same
    again = run_sample(c, journal=journal)
    assert again["cached"].all()
    pd.testing.assert_series_equal(again["text"], rows["text"])
    results, skipped = kpi_section(c, rows)
    assert set(results) == {"latency_s", "completion_tokens"} and not skipped
    assert set(results["latency_s"].table["config"]) == {"max8", "max24"}
    assert results["latency_s"].level["delta"] == pytest.approx(0.05)


def test_a_compare_section_on_the_real_model(live_model, tmp_path):
    """[compare] in a campaign against SmolLM2 on llama.cpp: two configurations asked the same questions in one
    seeded order, the real (messy) answers counted per model and said in the statements, journaled per model and
    section (a rerun asks nothing). 4 questions at most each, in two batches of 2 (10 in batches of 5 took 7.8 s, 4
    take 3.1 s; the answers still mix parsed and unparseable ones): the mechanics, not who wins."""
    from assay.datasets import load_basics
    from assay.eval import campaign as camp

    load_basics().groupby("shape", sort=False).head(6).to_csv(tmp_path / "bank.csv", index=False)
    models = [{"name": name, "endpoint": live_model.base_url, "model": live_model.alias, "max_tokens": 8,
               "concurrency": 2, "timeout": 120, **extra}
              for name, extra in (("plain", {}), ("brief", {"system": "Answer with the answer only."}))]
    c = parse_campaign({"campaign": {"name": "live-cmp", "seed": 2}, "model": models,
                        "bank": {"path": "bank.csv", "scorer_col": "scorer"},
                        "compare": {"budget": 4, "batch": 2}}, source="live.toml", base=tmp_path)
    journal = tmp_path / "j.sqlite"
    res = camp.run(c, journal=journal)
    cmp = res.sections["compare"].results["all"]
    asked = int(cmp.params["queried"])
    live = cmp.info["live"]
    assert asked in (2, 4) and live["questions"] == asked
    assert all(sum(live["outcomes"][m].values()) == asked for m in ("plain", "brief"))
    assert (res.costs[res.costs["section"] == "compare"]["requests"] == asked).all()
    said = res.summary[res.summary["section"] == "compare"]
    # a statement per model, the pairs, the goal, and the population claims (or why none is shown)
    assert len(said) == 5 and set(said["subject"]) == {"plain", "brief", "all", "goal", "population"}
    # each model's real answers counted by how they ended, cut-offs apart, in the models table (and its statement
    # when some did not end well)
    shown = cmp.models.set_index("model")["outcomes"]
    assert all(shown[m].startswith(f"{asked} answers: ") and "cut off at the token limit" in shown[m]
               for m in ("plain", "brief"))
    assert said[said["subject"] == "goal"]["statement"].str.contains("questions asked: plain").all()
    again = camp.run(c, journal=journal)
    assert sum(again.sections["compare"].results["all"].info["live"]["requests"].values()) == 0
    pd.testing.assert_frame_equal(again.sections["compare"].results["all"].pairs, cmp.pairs)


def _counters(journal, prefix: str) -> int:
    from watch import journal_count

    return journal_count(journal, "SELECT COALESCE(SUM(value), 0) FROM counters WHERE run_id LIKE ? AND name = 'requests'",
                         (prefix + "%",))


def test_a_whole_campaign_on_the_real_models_killed_and_resumed(live_model, live_judge, tmp_path):
    """`assay eval` end to end against the real models, as a user runs it: SmolLM2 in two configurations, every
    section, small budgets (4 questions a model for FAQ, QuickScope and the shared sample); kill -9 in the middle of
    FAQ, `--resume`, then a rerun that asks only what changed. The killed run is a process of its own; the resume and
    the rerun are the same command lines run in this process (through Typer's test runner), which has the modules
    loaded already: each `assay eval` process spent about 3 s loading them (reasoning-gym, SciPy, matplotlib).
    QuickScope searches short chain sums (reasoning-gym), whose prompts cost the one server thread little, and the
    answers are 8 and 12 tokens at most: the server generates about 40 tokens a second on one thread, and nothing here
    reads more of an answer than its outcome and score."""
    import json
    import os
    import sys
    from pathlib import Path

    from typer.testing import CliRunner

    from assay.cli import app
    from assay.datasets import load_basics
    from assay.eval.prompts import uniform_sample

    examples = Path(__file__).parents[1] / "examples"
    bank = load_basics()
    hist = pd.read_parquet(examples / "basics_history.parquet")
    bank = bank[bank["id"].isin(hist["item"])]
    bank.to_csv(tmp_path / "bank.csv", index=False)
    # human labels on half of the sampled items: the bank's own scorer on SmolLM2's answers stands in for a human
    # grader (it is the label the judge is checked against); the sample is the campaign's, drawn from its seed
    sampled = uniform_sample(list(bank["id"].astype(str)), 4, 0)
    # QuickScope on short sums (a few dozen prompt tokens): DyVal's prompts, hundreds of tokens each, took 13 s a
    # model here; DyVal on the real model is tested on its own (test_live.py)
    (tmp_path / "space.yaml").write_text("parameters:\n  terms: {type: integer, low: 2, high: 3}\n"
                                         "  digits: {type: integer, low: 1, high: 2}\n")
    toml = tmp_path / "live.toml"
    toml.write_text(f"""
[campaign]
name = "live"
seed = 0
out = "report"

[[model]]
name = "brief"
endpoint = "{live_model.base_url}"
model = "{live_model.alias}"
template = "Answer briefly.\\n\\n{{question}}"
max_tokens = 8
concurrency = 2
timeout = 120
context_window = 512

[[model]]
name = "plain"
endpoint = "{live_model.base_url}"
model = "{live_model.alias}"
system = "Be concise."
max_tokens = 12
concurrency = 2
timeout = 120
context_window = 512

[bank]
path = "bank.csv"
scorer_col = "scorer"
sample = 4

[faq]
history = "{examples / 'basics_history.parquet'}"
budget = 4

[scope]
generator = "reasoning_gym:chain_sum"
space = "space.yaml"
budget = 4
certify = 0.5

[judge]
endpoint = "{live_judge.base_url}"
model = "{live_judge.alias}"
completions = true
rubric = "fewshot"
human_labels = "human.csv"
risk_target = 0.9

[kpi]
metrics = ["latency_s", "completion_tokens"]
select = "best_mean"

[siren]
budgets = [1, 2]
splits = 10
""")
    journal = tmp_path / "j.sqlite"
    env = {**os.environ, "CI": "true"}
    base = [sys.executable, "-m", "assay.cli", "eval"]
    # the human labels need the answers: the file starts empty (so the judge section is skipped, with the reason)
    # and is filled in once the sample exists
    pd.DataFrame({"model": [], "item": [], "loss_human": []}).to_csv(tmp_path / "human.csv", index=False)
    from watch import Child, journal_count, wait_for

    with Child([*base, str(toml), "--journal", str(journal)], env=env) as child:
        # the journal appears before its tables: "not there yet" is waited out, never read as an error
        wait_for(lambda: journal_count(journal, "SELECT COUNT(*) FROM records WHERE run_id LIKE '%/faq' AND error IS NULL")
                 >= 3, what="3 FAQ answers in the journal", timeout=600, child=child)
        child.kill9()
        run_id = next(w for w in child.stderr().split() if w.startswith("eval-live-"))
    kept = _counters(journal, run_id)
    assert kept >= 3  # the answers paid for before the kill are in the journal
    runner = CliRunner(env={"CI": "true"})
    res = runner.invoke(app, ["eval", "--resume", run_id, "--journal", str(journal), "--json"])
    assert res.exit_code == 0, res.output[-3000:]
    out = json.loads(res.stdout)
    assert out["run_id"] == run_id and set(out["sections"]) == {"faq", "scope", "judge", "kpi", "siren"}
    faq = out["sections"]["faq"]["results"]
    for name in ("brief", "plain"):
        est = faq[name]["estimates"][0]
        # the estimate is unbiased, so with 4 questions sampling noise can carry it a little past 0 or 1; the
        # interval is clipped to [0, 1] (docs/faq.md)
        assert est["ci_low"] <= min(max(est["estimate"], 0.0), 1.0) <= est["ci_high"] and int(est["n_queries"]) == 4
        assert abs(est["estimate"] - min(max(est["estimate"], 0.0), 1.0)) < 0.5
    # no human labels on the sample yet: the judge section is skipped with the reason, every other section ran
    assert "none of the human labels" in out["sections"]["judge"]["skipped"]["all"]
    assert out["sections"]["scope"]["results"]["brief"]["tickets"] == 4
    summary = pd.DataFrame(out["summary"])
    assert {"faq", "scope", "kpi", "siren", "judge"} <= set(summary["section"])
    # now the humans label half of the sample (the bank's scorer stands in for them), and the judge section runs
    sample = pd.DataFrame(out["sample"])
    assert set(sample["item"]) == set(sampled)
    half = sample[sample["item"].isin(sampled[::2])]
    pd.DataFrame({"model": half["model"], "item": half["item"], "loss_human": 1.0 - half["score"]}).to_csv(
        tmp_path / "human.csv", index=False)
    sent = _counters(journal, run_id)
    res = runner.invoke(app, ["eval", str(toml), "--journal", str(journal), "--json"])
    assert res.exit_code == 0, res.output[-3000:]
    again = json.loads(res.stdout)
    new = _counters(journal, run_id) - sent
    assert 0 < new <= 2 * 4  # only the judge's verdicts were new: at most one per sampled answer
    j = again["sections"]["judge"]["results"]["all"]
    assert {c["candidate"] for c in j["candidates"]} == {"brief", "plain"}
    assert again["sections"]["faq"]["results"]["brief"]["estimates"] == faq["brief"]["estimates"]
    html = (tmp_path / "report" / "report.html").read_text()
    assert "assay eval: live" in html and "R-AutoEval+" in html and "<svg" in html

