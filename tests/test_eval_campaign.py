"""`assay eval`: a whole campaign through one journal against the fake OpenAI server (issue 25).

The fake server answers every arithmetic question right (``\\boxed{a+b}``), so every section's numbers are known in
advance: FAQ's accuracy is 1, the judge agrees with the humans, SIREN's configurations tie."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from fake_openai_server import FakeOpenAIServer, question  # noqa: E402

from assay.errors import AssayInputError  # noqa: E402
from assay.eval import campaign as camp  # noqa: E402
from assay.eval.spec import parse_campaign  # noqa: E402
from assay.models import CallableModel  # noqa: E402

N_ITEMS = 40


def _history(tmp_path: Path, n_models: int = 36) -> Path:
    """A history with structure: model ability + item difficulty, in families (owner/name ids)."""
    rng = np.random.default_rng(0)
    ability = rng.normal(0.5, 1.0, n_models)
    difficulty = rng.normal(0.0, 1.0, N_ITEMS)
    p = 1 / (1 + np.exp(-(ability[:, None] - difficulty[None, :])))
    Z = (rng.random(p.shape) < p).astype(int)
    rows = [(f"fam{k % 6}/m{k}", f"q{j}", Z[k, j]) for k in range(n_models) for j in range(N_ITEMS)]
    pd.DataFrame(rows, columns=["model", "item", "score"]).to_csv(tmp_path / "history.csv", index=False)
    return tmp_path / "history.csv"


def _files(tmp_path: Path) -> None:
    bank = pd.DataFrame({"id": [f"q{i}" for i in range(N_ITEMS)], "prompt": [question(i, 2 * i) for i in range(N_ITEMS)],
                         "reference": [3 * i for i in range(N_ITEMS)]})
    bank.to_csv(tmp_path / "bank.csv", index=False)
    _history(tmp_path)
    labels = pd.DataFrame([(m, f"q{i}", 0.0) for m in ("short", "long") for i in range(0, N_ITEMS, 2)],
                          columns=["model", "item", "loss_human"])
    labels.to_csv(tmp_path / "human.csv", index=False)


def _campaign(tmp_path: Path, url: str, **over) -> object:
    _files(tmp_path)
    models = [{"name": "short", "endpoint": url, "model": "fake", "max_tokens": 16, "price_in": 1.0, "price_out": 3.0},
              {"name": "long", "endpoint": url, "model": "fake", "max_tokens": 64, "template": "Think. {question}",
               "price_in": 1.0, "price_out": 3.0}]
    data = {"campaign": {"name": "t", "seed": 5}, "model": models,
            "bank": {"path": "bank.csv", "scorer": "numeric", "sample": 30},
            "faq": {"history": "history.csv", "budget": 10, "calibrate": False},
            "judge": {"endpoint": url, "model": "judge", "human_labels": "human.csv", "risk_target": 0.5},
            "kpi": {"metrics": ["latency_s", "completion_tokens", "ttft_s"], "select": "best_mean"},
            "siren": {"budgets": [1, 2], "splits": 10}}
    for k, v in over.items():
        if v is None:
            data.pop(k, None)
        else:
            data[k] = v
    return parse_campaign(data, source=str(tmp_path / "t.toml"), base=tmp_path)


def _judge():
    return CallableModel(lambda prompt: "CORRECT", name="always-correct")


def test_a_campaign_runs_every_section_through_one_journal_and_pays_once(tmp_path):
    journal = tmp_path / "j.sqlite"
    events = []
    with FakeOpenAIServer(retry_after=0) as srv:
        c = _campaign(tmp_path, srv.base_url)
        res = camp.run(c, journal=journal, judge_model=_judge(), progress=events.append)
        paid = srv.total
        again = camp.run(c, journal=journal, judge_model=_judge())
        assert srv.total == paid  # a rerun pays for nothing
    # every answer the fake server gives is right: FAQ's interval covers the true accuracy, 1
    for name in ("short", "long"):
        e = res.sections["faq"].results[name].estimates.iloc[0]
        assert e["ci_low"] <= 1.0 <= e["ci_high"] and e["estimate"] > 0.9
        assert int(e["n_queries"]) == 10
    # the sample (30 items per model) reused FAQ's answers: distinct requests per model < 10 + 16
    cost = res.costs.set_index(["model", "section"])
    for name in ("short", "long"):
        faq_items = set(res.sections["faq"].results[name].tables["queries"]["item"])
        sample_items = set(res.sample.loc[res.sample.model == name, "item"])
        assert cost.loc[(name, "total"), "requests"] == len(faq_items | sample_items)
        assert cost.loc[(name, "sample"), "requests"] == len(sample_items - faq_items)
    assert paid == sum(len(set(res.sections["faq"].results[n].tables["queries"]["item"])
                           | set(res.sample.loc[res.sample.model == n, "item"])) for n in ("short", "long"))
    # judge: risk 0 on every model; Holm over the two models
    j = res.sections["judge"].results["all"]
    assert set(j.certified) == {"short", "long"} and j.info["selection"]["procedure"] == "holm"
    # among the certified, the cheaper per answer (the long template costs more prompt tokens) is the best
    assert j.best == "short" and "the cheapest certified configuration" in " ".join(res.summary["statement"])
    # kpi: ttft was not reported without streaming: skipped with the reason, the others ran
    assert "ttft_s" in res.sections["kpi"].skipped and set(res.sections["kpi"].results) == {"latency_s",
                                                                                           "completion_tokens"}
    # siren: budgets 1 and 2 over the configurations in file order
    cells = res.sections["siren"].results["all"].tables["cells"]
    assert list(cells["budget"]) == [1, 2]
    # summary: one statement per quantity, each section present
    assert set(res.summary["section"]) == {"faq", "judge", "kpi", "siren"}
    assert res.summary["statement"].str.len().gt(10).all()
    # each method's result states its own claims, each with its guarantee (Result.statements)
    said = res.summary[~res.summary["statement"].str.startswith("skipped")]
    assert said["level"].str.len().gt(5).all() and set(said["subject"]) >= {"short", "long"}
    # the rerun is the same result
    assert _numbers(again) == _numbers(res)
    # progress: a 'done' event per (section, model) unit
    done = {(e.section, e.subject) for e in events if e.status == "done"}
    assert {("faq", "short"), ("faq", "long"), ("sample", "short"), ("judge", "judge")} <= done
    assert any(e.width is not None for e in events if e.section == "faq")


def _numbers(res) -> str:
    """The statistical content of a campaign result: every section's main table and the statements (not the
    measured latencies, which are measurements of this run)."""
    keep = {"summary": res.summary.loc[res.summary.section != "kpi", "statement"].tolist()}
    for name, sec in res.sections.items():
        keep[name] = {k: r.table.to_json() for k, r in sec.results.items() if k != "latency_s"}
        keep[name + " skipped"] = sec.skipped
    return json.dumps(keep, sort_keys=True)


def test_sections_that_cannot_run_are_skipped_with_the_reason_and_the_rest_runs(tmp_path):
    with FakeOpenAIServer(retry_after=0) as srv:
        c = _campaign(tmp_path, srv.base_url,
                      judge={"endpoint": srv.base_url, "model": "judge", "risk_target": 0.5},
                      siren=None, kpi=None)
        res = camp.run(c, journal=tmp_path / "j.sqlite", judge_model=_judge())
    assert "human labels" in res.sections["judge"].skipped["all"]
    assert set(res.sections["faq"].results) == {"short", "long"}
    row = res.summary[res.summary.section == "judge"].iloc[0]
    assert row["statement"].startswith("skipped: no human labels")


def test_a_result_round_trips_through_json(tmp_path):
    with FakeOpenAIServer(retry_after=0) as srv:
        c = _campaign(tmp_path, srv.base_url, judge=None, kpi=None)
        res = camp.run(c, journal=tmp_path / "j.sqlite")
    back = camp.CampaignResult.from_dict(json.loads(json.dumps(res.to_dict())))
    assert back.run_id == res.run_id and back.campaign == res.campaign
    pd.testing.assert_frame_equal(back.summary, res.summary)
    assert back.sections["faq"].results["short"].estimates.equals(res.sections["faq"].results["short"].estimates)


def test_resume_reads_the_campaign_back_from_the_journal(tmp_path):
    journal = tmp_path / "j.sqlite"
    with FakeOpenAIServer(retry_after=0) as srv:
        c = _campaign(tmp_path, srv.base_url, judge=None, siren=None)
        first = camp.run(c, journal=journal)
        paid = srv.total
        back = camp.load_campaign_of_run(first.run_id, journal)
        assert back.fingerprint() == c.fingerprint()
        again = camp.resume(first.run_id, journal=journal)
        assert srv.total == paid
    pd.testing.assert_frame_equal(again.summary[again.summary.section == "faq"],
                                  first.summary[first.summary.section == "faq"])
    with pytest.raises(AssayInputError, match="not in the journal"):
        camp.load_campaign_of_run("eval-nope", journal)


def test_an_over_budget_campaign_stops_before_any_request(tmp_path):
    with FakeOpenAIServer(retry_after=0) as srv:
        c = _campaign(tmp_path, srv.base_url, budget={"questions": 5})
        with pytest.raises(AssayInputError, match="questions"):
            camp.run(c, journal=tmp_path / "j.sqlite")
        assert srv.total == 0


def test_the_scope_section_certifies_where_the_model_fails(tmp_path):
    """DyVal's questions are not the fake server's arithmetic: every answer fails, so QuickScope certifies weak
    templates within its budget, one search per model, each in its own journal run."""
    with FakeOpenAIServer(retry_after=0) as srv:
        c = parse_campaign({"campaign": {"name": "s", "seed": 1},
                            "model": [{"name": "a", "endpoint": srv.base_url, "model": "fake", "max_tokens": 8}],
                            "scope": {"budget": 200, "certify": 0.5}}, source=str(tmp_path / "s.toml"), base=tmp_path)
        res = camp.run(c, journal=tmp_path / "j.sqlite")
        assert srv.total == 200
    r = res.sections["scope"].results["a"]
    assert r.info["tickets"] == 200 and r.info["n_certified"] >= 1
    assert r.params["delta"] == pytest.approx(0.05)  # the campaign's level, not QuickScope's own default
    row = res.summary[res.summary.section == "scope"].iloc[0]
    assert "certified to have error rate above 0.5" in row["statement"] and row["requests"] == 200


def test_a_changed_campaign_pays_only_for_requests_it_has_not_made(tmp_path):
    """Another run id (here: a different KPI target, which changes the fingerprint) still reads every answer the
    journal holds for the same model, prompt and parameters: FAQ, the sample and the judge ask nothing again."""
    journal = tmp_path / "j.sqlite"
    with FakeOpenAIServer(retry_after=0) as srv:
        first = camp.run(_campaign(tmp_path, srv.base_url), journal=journal, judge_model=_judge())
        paid = srv.total
        c2 = _campaign(tmp_path, srv.base_url, kpi={"metrics": ["completion_tokens"], "target": 0.5})
        second = camp.run(c2, journal=journal, judge_model=_judge())
        assert srv.total == paid and second.run_id != first.run_id
        more = _campaign(tmp_path, srv.base_url, bank={"path": "bank.csv", "scorer": "numeric", "sample": 36})
        third = camp.run(more, journal=journal, judge_model=_judge())
        assert 0 < srv.total - paid <= 2 * (36 - 30)  # a larger sample pays only for its new items
    for name in ("short", "long"):
        pd.testing.assert_frame_equal(second.sections["faq"].results[name].estimates,
                                      first.sections["faq"].results[name].estimates)
    assert third.sample.groupby("model").size().to_dict() == {"long": 36, "short": 36}


def test_the_requests_a_finite_kpi_guarantee_needs():
    """dkw_needed(delta, target): the smallest n whose DKW half-width sqrt(ln(2/delta) / 2n) is below 1 - target."""
    import math

    from assay.psdme import dkw_needed

    for delta, target in ((0.05, 0.9), (0.1, 0.8), (0.01, 0.95)):
        n = dkw_needed(delta, target)
        eps = lambda k: math.sqrt(math.log(2 / delta) / (2 * k))  # noqa: E731
        assert eps(n) < 1 - target <= eps(n - 1)
    assert dkw_needed(0.05, 0.9) == 185


def test_a_compare_section_asks_until_resolved_and_reports_it(tmp_path):
    """[compare]: the [[model]] blocks asked the bank in one seeded order until every pair is resolved or equivalent
    within the margin; journaled per model and section (a rerun asks nothing), priced by --plan, summarised, and
    titled once in the report."""
    from assay.eval.plan import plan

    with FakeOpenAIServer(retry_after=0) as srv:
        # both configurations answer every question right (the fake server's rule): equivalent within 0.5
        c = _campaign(tmp_path, srv.base_url, faq=None, judge=None, kpi=None, siren=None,
                      compare={"budget": 40, "margin": 0.5, "batch": 10})
        p = plan(c)
        assert {(r.model, r.section, r.requests) for r in p.rows} == {("short", "compare", 40), ("long", "compare", 40)}
        res = camp.run(c, journal=tmp_path / "j.sqlite")
        paid = srv.total
        again = camp.run(c, journal=tmp_path / "j.sqlite")
        assert srv.total == paid  # every answer read from the journal
        # [bank].policy "missing" cannot hold in a paired design: an unscored answer counts as wrong, and it is said
        c_missing = _campaign(tmp_path, srv.base_url, faq=None, judge=None, kpi=None, siren=None,
                              compare={"budget": 40, "margin": 0.5, "batch": 10},
                              bank={"path": "bank.csv", "scorer": "numeric", "sample": 30, "policy": "missing"})
        missing = camp.run(c_missing, journal=tmp_path / "j2.sqlite").sections["compare"].results["all"]
    assert any("counts as wrong" in w for w in missing.warnings)
    assert not any("counts as wrong" in w for w in again.sections["compare"].results["all"].warnings)
    cmp = res.sections["compare"].results["all"]
    asked = int(cmp.params["queried"])
    assert cmp.pairs["verdict"].tolist() == ["equivalent"] and asked < 40 and asked % 10 == 0
    assert paid == 2 * asked and cmp.info["live"]["stopped"] == "every pair resolved"
    assert again.sections["compare"].results["all"].pairs.equals(cmp.pairs)
    s = res.summary[res.summary["section"] == "compare"]
    assert len(s) == 5 and s["statement"].str.contains("equivalent").any()
    # models that left early: no claim about questions like these, and the reason why
    assert s[s["subject"] == "population"]["statement"].str.contains("no claim about questions like these").all()
    assert s[s["subject"] == "goal"]["statement"].str.startswith("goal met").all()
    assert (res.costs[(res.costs["section"] == "compare")]["requests"] == asked).all()
    html_page = camp.write_report(res, tmp_path / "rep")
    page = (html_page / "report.html").read_text()
    assert page.count("compare: which configurations are better") == 1 and "<svg" in page


def test_each_section_and_model_draws_from_its_own_child_seed(tmp_path):
    """DESIGN's seed rule: a (section, model) seed is a child of the campaign seed, the same on every run, different
    across sections and models, and unchanged for the first model when a model is added after it."""
    from assay.eval.sample import section_seed

    c = _campaign(tmp_path, "http://127.0.0.1:9/v1")
    seeds = {(s, m): section_seed(c, s, m) for s in ("faq", "scope", "judge", "kpi", "siren", "compare")
             for m in (None, "short", "long")}
    assert len(set(seeds.values())) == len(seeds)
    assert seeds == {(s, m): section_seed(c, s, m) for s, m in seeds}
    assert section_seed(c, "faq", "short") != c.seed
    url = "http://127.0.0.1:9/v1"
    more = _campaign(tmp_path, url, model=[{"name": m.name, "endpoint": url, "model": "fake"} for m in c.models]
                     + [{"name": "third", "endpoint": url, "model": "fake"}])
    assert section_seed(more, "faq", "short") == seeds[("faq", "short")]
    other = _campaign(tmp_path, "http://127.0.0.1:9/v1", campaign={"name": "t", "seed": 6})
    assert section_seed(other, "faq", "short") != seeds[("faq", "short")]
