"""assay compare on logs the tools wrote (issue 46): inspect-ai and lm-eval runs against SmolLM2-135M and Gemma 3 270M
on a small dataset of our own (tests/fixtures/compare_logs, with their provenance): two tasks with inspect's default
sample ids 1..10, one model run twice with two system prompts, one run with 2 epochs, a task with two scorers, and
lm-eval's two filters. Sources are named (NAME=PATH), questions keyed by (task, item), scorers chosen, counts that
agree, live prompt variants from the command line, and reports that show every --require outcome."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from assay import compare
from assay.cli import app
from assay.cli.compare import parse_live_models
from assay.data.sources import split_source
from assay.errors import AssayInputError

runner = CliRunner()
LOGS = Path(__file__).parent / "fixtures" / "compare_logs"
INS = LOGS / "inspect"
LM = LOGS / "lmeval"
SMOL = "openai-api/local/smollm2"
GEMMA = "openai-api-completions/local/gemma3"


def run(*args):
    return runner.invoke(app, ["compare", *map(str, args)])


def as_json(*args):
    r = run(*args, "--json", "--seed", "0")
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def one(folder: Path, task: str) -> Path:
    """The log of ``task`` in a run folder."""
    found = [p for p in folder.glob("*.eval") if f"_{task}_" in p.name]
    assert len(found) == 1, (folder, task, found)
    return found[0]


# -- naming what is compared -----------------------------------------------------------------------------------


def test_two_runs_of_one_model_are_refused_until_named():
    """inspect logs of SmolLM2 with and without a system prompt carry the same model name: refused, with the fix
    named; NAME=PATH compares them without editing a file."""
    r = run(INS / "smollm2-default", INS / "smollm2-brief")
    assert r.exit_code == 2 and "two runs of one model" in r.output and "A=" in r.output
    out = as_json(f"plain={INS / 'smollm2-default'}", f"brief={INS / 'smollm2-brief'}")
    assert [m["model"] for m in out["models"]] == ["plain", "brief"] and out["n"] == 20
    assert any(s.startswith("plain=") and s.endswith(": plain") for s in out["sources"])
    # the same for lm-eval (model_name "smollm2" in both runs)
    r = run(LM / "smollm2-default", LM / "smollm2-brief", "--log-scorer", "strict-match")
    assert r.exit_code == 2 and "two runs of one model" in r.output
    out = as_json(f"d={LM / 'smollm2-default'}", f"b={LM / 'smollm2-brief'}", LM / "gemma3",
                  "--log-scorer", "strict-match")
    assert {m["model"] for m in out["models"]} == {"d", "b", "gemma3"}


def test_a_source_with_several_models_names_each_and_a_path_with_equals_is_a_path(tmp_path):
    both = tmp_path / "both"
    both.mkdir()
    for folder in ("smollm2-default", "gemma3-completions"):
        for f in (INS / folder).glob("*.eval"):
            shutil.copy(f, both / f.name)
    out = as_json(f"two={both}", f"brief={INS / 'smollm2-brief'}")
    assert {m["model"] for m in out["models"]} == {f"two/{SMOL}", f"two/{GEMMA}", "brief"}
    odd = tmp_path / "runs=2"
    odd.mkdir()
    t = pd.DataFrame({"model": np.repeat(["a", "b"], 30), "item": np.tile(np.arange(30), 2),
                      "score": np.random.default_rng(0).random(60).round()})
    t.to_csv(odd / "s.csv", index=False)
    assert split_source(str(odd / "s.csv")) == (None, odd / "s.csv")
    out = as_json(odd / "s.csv")
    assert {m["model"] for m in out["models"]} == {"a", "b"}
    assert split_source(f"x={odd / 's.csv'}") == ("x", odd / "s.csv")
    out = as_json(f"x={odd / 's.csv'}")
    assert {m["model"] for m in out["models"]} == {"x/a", "x/b"}
    r = run(f"x={tmp_path / 'missing.csv'}")
    assert r.exit_code == 2 and "no such file" in r.output


def test_ingest_model_works_for_every_log_kind_or_is_refused(tmp_path):
    for src, kind in ((one(INS / "smollm2-default", "arith"), "inspect"), (LM / "gemma3", "lmeval"),
                      (Path(__file__).parent / "fixtures" / "ingest" / "helm", "helm")):
        r = runner.invoke(app, ["ingest", str(src), "--model", "renamed", "--json"])
        assert r.exit_code == 0, (kind, r.output)
        assert json.loads(r.stdout)["model"] == ["renamed"], kind
    table = tmp_path / "t.csv"
    pd.DataFrame({"model": ["a"], "item": ["1"], "score": [1.0]}).to_csv(table, index=False)
    r = runner.invoke(app, ["ingest", str(table), "--model", "renamed"])
    assert r.exit_code == 2 and "does not take model" in r.output
    r = runner.invoke(app, ["ingest", str(LM / "gemma3"), "--scorer", "match"])
    assert r.exit_code == 2 and "does not take scorer" in r.output  # an option of another tool: refused


# -- questions keyed by task --------------------------------------------------------------------------------------


def test_two_tasks_never_pair_and_a_file_pairs_with_its_folder():
    """inspect numbers every task's samples 1..10: task arith of one model and task facts of another share no
    question; a single log and a folder of the same task share its 10."""
    r = run(one(INS / "smollm2-default", "arith"), one(INS / "gemma3-completions", "facts"))
    assert r.exit_code == 2 and "no question in common" in r.output
    out = as_json(one(INS / "smollm2-default", "arith"), INS / "gemma3-completions")
    assert out["n"] == 10 and out["task_labels"] == ["arith"]
    assert any("10 of 20 questions are answered by every model" in w for w in out["warnings"])
    assert {m["model"]: m["answered"] for m in out["models"]} == {SMOL: 10, GEMMA: 20}
    assert all(p["n_items"] == 10 for p in out["pairs"])  # the count the estimate used


def test_several_tasks_get_a_per_task_view_and_a_named_weighting():
    out = as_json(f"plain={INS / 'smollm2-default'}", f"brief={INS / 'smollm2-brief'}", INS / "gemma3-completions")
    assert sorted(out["task_labels"]) == ["arith", "facts"] and len(out["task_pairs"]) == 2 * 3
    assert {r["task"] for r in out["tasks"]} == {"arith", "facts"} and len(out["tasks"]) == 2 * 3
    assert "pooled" in out["estimand"] and "per task" in out["level"]["meaning"]
    w = as_json(f"plain={INS / 'smollm2-default'}", f"brief={INS / 'smollm2-brief'}", INS / "gemma3-completions",
                "--weight", "tasks")
    assert "each task weighted equally" in w["estimand"]
    r = run(f"plain={INS / 'smollm2-default'}", INS / "gemma3-completions", "--seed", "0")
    assert r.exit_code == 0 and "per task" in r.output and "arith (10)" in r.output and "task facts:" in r.output


def test_ingest_then_compare_keeps_the_tasks_and_a_changed_question_is_refused(tmp_path):
    for name, src in (("smol", INS / "smollm2-default"), ("gemma", INS / "gemma3-completions")):
        r = runner.invoke(app, ["ingest", str(src), "-o", str(tmp_path / f"{name}.csv")])
        assert r.exit_code == 0, r.output
    out = as_json(tmp_path / "smol.csv", tmp_path / "gemma.csv")
    assert out["n"] == 20 and sorted(out["task_labels"]) == ["arith", "facts"]
    # --task-col for a table whose task column has another name
    t = pd.read_csv(tmp_path / "gemma.csv").rename(columns={"task": "benchmark"})
    t.to_csv(tmp_path / "renamed.csv", index=False)
    s = pd.read_csv(tmp_path / "smol.csv").rename(columns={"task": "benchmark"})
    s.to_csv(tmp_path / "renamed_s.csv", index=False)
    out = as_json(tmp_path / "renamed_s.csv", tmp_path / "renamed.csv", "--task-col", "benchmark")
    assert out["n"] == 20 and sorted(out["task_labels"]) == ["arith", "facts"]
    # the facts questions relabelled as arith: the ids match, the question text (its hash) does not
    g = pd.read_csv(tmp_path / "gemma.csv")
    g = g[g["task"] == "facts"].assign(task="arith")
    g.to_csv(tmp_path / "wrong.csv", index=False)
    r = run(tmp_path / "smol.csv", tmp_path / "wrong.csv")
    assert r.exit_code == 2 and "not the same question" in r.output and "arith/" in r.output


# -- choosing the scorer; epochs ----------------------------------------------------------------------------------


def test_a_log_with_two_scorers_is_refused_until_one_is_chosen():
    r = run(INS / "smollm2-two-scorers", INS / "gemma3-completions-two-scorers")
    assert r.exit_code == 2 and "2 scorers (match; includes)" in r.output and "--log-scorer" in r.output
    out = as_json(INS / "smollm2-two-scorers", INS / "gemma3-completions-two-scorers", "--log-scorer", "match")
    m = {x["model"]: x["estimate"] for x in out["models"]}
    assert m == {SMOL: pytest.approx(0.3), GEMMA: pytest.approx(0.0)} and out["scorers"] == {
        "facts_two_scorers": "match"}
    out = as_json(INS / "smollm2-two-scorers", INS / "gemma3-completions-two-scorers", "--log-scorer", "includes")
    assert {x["model"]: x["estimate"] for x in out["models"]} == {SMOL: pytest.approx(0.4), GEMMA: pytest.approx(0.6)}
    r = run(INS / "smollm2-two-scorers", INS / "gemma3-completions-two-scorers", "--log-scorer", "judge")
    assert r.exit_code == 2 and "matches none" in r.output
    # a task with one scorer keeps it; a --log-scorer no task offers is a typo, refused
    r = run(f"plain={INS / 'smollm2-default'}", INS / "gemma3-completions", "--log-scorer", "macth")
    assert r.exit_code == 2 and "--log-scorer macth" in r.output and "includes, match" in r.output


def test_lmeval_filters_are_chosen_by_name():
    r = run(LM / "gemma3", f"d={LM / 'smollm2-default'}")
    assert r.exit_code == 2 and "exact_match,strict-match; exact_match,flexible-extract" in r.output
    strict = as_json(LM / "gemma3", f"d={LM / 'smollm2-default'}", "--log-scorer", "strict-match")
    flexible = as_json(LM / "gemma3", f"d={LM / 'smollm2-default'}", "--log-scorer", "exact_match,flexible-extract")
    assert strict["scorers"]["cmp_arith"] == "exact_match,strict-match"
    assert flexible["scorers"]["cmp_arith"] == "exact_match,flexible-extract"
    assert strict["models"] != flexible["models"]


def test_epochs_are_shown_in_the_header_the_json_and_the_report(tmp_path):
    args = [f"twice={one(INS / 'smollm2-epochs2', 'arith')}", one(INS / "gemma3-completions", "arith")]
    r = run(*args, "--seed", "0", "--report", tmp_path / "r.html")
    assert r.exit_code == 0, r.output
    assert "epochs per question (averaged first): twice 2, " in r.output and f"{GEMMA} 1" in r.output
    assert "epochs per question" in (tmp_path / "r.html").read_text()
    out = as_json(*args)
    assert out["epochs"] == {"twice": 2.0, GEMMA: 1.0} and list(out["epochs"]) == ["twice", GEMMA]


# -- counts that agree -----------------------------------------------------------------------------------------------


def _bank(n=40, repeat=None):
    b = pd.DataFrame({"id": [f"q{i}" for i in range(n)], "prompt": [f"What is {i} + 1?" for i in range(n)],
                      "reference": [str(i + 1) for i in range(n)]})
    if repeat is not None:
        b.loc[repeat, "prompt"] = b.loc[0, "prompt"]
    return b


def _model(name, right):
    from assay.models import CallableModel

    def fn(prompt: str) -> str:
        i = int(prompt.split()[2])
        return f"Answer: {i + 1 if right(i) else 0}"

    return CallableModel(fn, name=name)


def test_a_bank_with_a_repeated_prompt_is_refused_live_and_with_run(tmp_path):
    from assay.compare.live import query_until_resolved

    models = {"a": _model("a", lambda i: i % 2 == 0), "b": _model("b", lambda i: i % 3 == 0)}
    with pytest.raises(AssayInputError, match=r"repeats a prompt .* for ids q0, q7\)"):
        query_until_resolved(models, _bank(repeat=7), scorer="numeric", budget=20, batch=10)
    # journaled answers, then scored from the journal against a bank that repeats a prompt
    j = tmp_path / "j.sqlite"
    query_until_resolved(models, _bank(), scorer="numeric", budget=30, batch=10, journal=j, run_id="c")
    _bank(repeat=7).to_csv(tmp_path / "rep.csv", index=False)
    r = run("--run", "c/a", "--run", "c/b", "--journal", j, "--bank", tmp_path / "rep.csv", "--scorer", "numeric")
    assert r.exit_code == 2 and "repeats a prompt" in r.output and "ids q0, q7" in r.output


def test_every_count_printed_is_the_count_the_estimate_used(tmp_path):
    from assay.compare.live import query_until_resolved

    models = {"a": _model("a", lambda i: i % 2 == 0), "b": _model("b", lambda i: i % 3 == 0)}
    j = tmp_path / "j.sqlite"
    res = query_until_resolved(models, _bank(), scorer="numeric", budget=30, batch=10, journal=j, run_id="c")
    assert res.n == 30 and (res.pairs["n_items"] == 30).all() and res.info["live"]["questions"] == 30
    _bank().to_csv(tmp_path / "bank.csv", index=False)
    out = as_json("--run", "c/a", "--run", "c/b", "--journal", j, "--bank", tmp_path / "bank.csv",
                  "--scorer", "numeric")
    assert out["n"] == 30 and all(p["n_items"] == 30 for p in out["pairs"])
    assert all(m["answered"] == 30 for m in out["models"])


# -- live prompt variants from the command line --------------------------------------------------------------------


def test_live_models_and_system_prompts_parse():
    served, prompts = parse_live_models(["plain=smollm2", "brief=smollm2", "gemma"],
                                        ["brief=Answer with the answer only. x=1"])
    assert served == {"plain": "smollm2", "brief": "smollm2", "gemma": "gemma"}
    assert prompts == {"brief": "Answer with the answer only. x=1"}
    _, prompts = parse_live_models(["a", "b"], ["Be brief."])
    assert prompts == {"a": "Be brief.", "b": "Be brief."}
    with pytest.raises(AssayInputError, match="given twice"):
        parse_live_models(["smollm2", "smollm2"], [])


def test_two_prompt_variants_of_one_served_model_live(tmp_path):
    """Against an OpenAI-compatible server on 127.0.0.1: one served model asked as two named variants, one with a
    system prompt; each variant journaled on its own, and the report and JSON carry the --require outcome."""
    from fake_openai_server import FakeOpenAIServer

    bank = pd.DataFrame({"id": [f"q{i}" for i in range(20)], "prompt": [f"What is {i} + {i}?" for i in range(20)],
                         "reference": [str(2 * i) for i in range(20)]})
    bank.to_csv(tmp_path / "bank.csv", index=False)
    with FakeOpenAIServer() as srv:
        args = ["--endpoint", srv.base_url, "--model", "plain=m", "--model", "brief=m", "--system",
                "brief=Answer with the answer only.", "--bank", tmp_path / "bank.csv", "--scorer", "numeric",
                "--budget", "20", "--batch", "10", "--journal", tmp_path / "j.sqlite", "--margin", "0.5",
                "--require", "plain>=brief-0.5", "--report", tmp_path / "r.html", "-o", tmp_path / "r.json"]
        r = run(*args)
        assert r.exit_code == 0, r.output
        systems = [m for m in (srv.last_body or {}).get("messages", []) if m.get("role") == "system"]
        # --guarantee is honoured live; a named run with other settings would draw other questions: refused (by
        # default each command's settings have a run of their own)
        first = r.stderr.split("journal run ")[1].split()[0]
        r2 = run(*args[:-4], "--guarantee", "asymptotic", "--run-id", first)
        assert r2.exit_code == 2 and "other compare settings" in r2.output and "guarantee" in r2.output
        r2 = run(*args[:-4], "--guarantee", "asymptotic", "--run-id", "c2", "--json")
        assert r2.exit_code == 0, r2.output
        assert json.loads(r2.stdout)["params"]["guarantee"] == "asymptotic"
    out = json.loads((tmp_path / "r.json").read_text())
    assert [m["model"] for m in out["models"]] == ["plain", "brief"] and out["params"]["guarantee"] == "finite"
    assert out["require"][0]["claim"] == "plain>=brief-0.5" and "require" in (tmp_path / "r.html").read_text()
    assert sum(out["live"]["requests"].values()) == sum(m["n_asked"] for m in out["models"])
    assert systems in ([], [{"role": "system", "content": "Answer with the answer only."}])


# -- reports and wording --------------------------------------------------------------------------------------------


def test_reports_show_every_require_outcome(tmp_path):
    args = [f"d={LM / 'smollm2-default'}", f"b={LM / 'smollm2-brief'}", LM / "gemma3", "--log-scorer", "strict-match",
            "--require", "gemma3>=d-0.9", "--require", "gemma3>d", "--seed", "0"]
    r = run(*args, "-o", tmp_path / "r.json", "--report", tmp_path / "r.html")
    assert r.exit_code == 1 and "require ok: gemma3>=d-0.9" in r.output and "require FAILED: gemma3>d" in r.output
    out = json.loads((tmp_path / "r.json").read_text())
    assert [(x["claim"], x["certified"]) for x in out["require"]] == [("gemma3>=d-0.9", True), ("gemma3>d", False)]
    page = (tmp_path / "r.html").read_text()
    assert "require certified:</b> gemma3&gt;=d-0.9" in page and "require NOT certified:</b> gemma3&gt;d" in page
    r = runner.invoke(app, ["report", str(tmp_path / "r.json"), "-o", str(tmp_path / "r.md")])
    assert r.exit_code == 0, r.output
    md = (tmp_path / "r.md").read_text()
    assert "**require certified:** gemma3>=d-0.9" in md and "**require NOT certified:** gemma3>d" in md
    assert "### task_pairs" in md


def test_wording(tmp_path):
    S = np.random.default_rng(0).random((2, 50)).round()
    t = pd.DataFrame({"model": np.repeat(["a", "b"], 50), "item": np.tile(np.arange(50), 2), "score": S.ravel()})
    res = compare.evaluate(t, seed=0)
    assert res.statements()[-1].startswith("1 pair on questions like these:")
    t.loc[3, "score"] = 7.0
    with pytest.raises(AssayInputError, match=r"bounds=\(low, high\) \(it is \[0, 1\] now\)") as e:
        compare.evaluate(t)
    assert "--" not in str(e.value)
    t.to_csv(tmp_path / "t.csv", index=False)
    r = run(tmp_path / "t.csv")
    assert r.exit_code == 2 and "--bounds LOW HIGH (it is [0, 1] now)" in r.output
    broken = tmp_path / "cut.eval"
    broken.write_bytes(one(INS / "smollm2-default", "arith").read_bytes()[:5000])
    r = run(broken, INS / "gemma3-completions")
    assert r.exit_code == 2 and "damaged or incomplete" in r.output
