"""The one reader of every source (issue 52): `assay.data.sources` for the command line, campaigns, the audit and
Python alike. Python and the command line give the same comparison of real inspect-ai and lm-eval logs; a journal
run is matched to its bank one way (its prompt, or a chat's last user message), read back with the scorer it was
scored with, a parent run id stands for the runs inside it, and a bank's references are text."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from assay import audit, compare
from assay.cli import app
from assay.data import sources
from assay.data.bank import read_bank
from assay.errors import AssayInputError
from assay.models import CallableModel

runner = CliRunner()
LOGS = Path(__file__).parent / "fixtures" / "compare_logs"
INS, LM = LOGS / "inspect", LOGS / "lmeval"
OLD = Path(__file__).parent / "fixtures" / "journals" / "main-c2f5a50.sqlite"


def _same(py, cli: dict) -> None:
    """A Python result and the command line's JSON of the same comparison hold the same numbers."""
    for table in ("models", "pairs"):
        a = py.tables[table].reset_index(drop=True)
        b = pd.DataFrame(cli[table])[list(a.columns)]
        for c in a.columns:
            if a[c].dtype.kind in "fc":  # JSON writes an infinity as null (its path in "infinite")
                x = np.where(np.isinf(a[c].to_numpy(float)), np.nan, a[c].to_numpy(float))
                np.testing.assert_allclose(x, b[c].to_numpy(float), rtol=0, atol=1e-12)
            else:
                assert a[c].astype(str).tolist() == b[c].astype(str).tolist(), (table, c)
    assert py.info["sources"] == cli["sources"] and py.info.get("scorers") == cli.get("scorers")


def test_python_and_the_command_line_compare_real_logs_alike():
    """`compare.evaluate({"plain": ..., "brief": ...}, log_scorer=..., weight=...)` is the command line's
    `assay compare plain=... brief=... --log-scorer ... --weight ...`, number for number."""
    srcs = {"plain": INS / "smollm2-two-scorers", "brief": INS / "smollm2-brief-two-scorers",
            "gemma": INS / "gemma3-completions-two-scorers"}
    py = compare.evaluate(srcs, log_scorer=["includes"], weight="tasks", seed=0)
    r = runner.invoke(app, ["compare", *[f"{k}={v}" for k, v in srcs.items()], "--log-scorer", "includes",
                            "--weight", "tasks", "--seed", "0", "--json"])
    assert r.exit_code == 0, r.output
    _same(py, json.loads(r.stdout))
    assert set(py.info["scorers"].values()) == {"includes"} and len(py.models) == 3
    # lm-eval logs named the same way, a filter chosen
    lm = {"plain": LM / "smollm2-default", "brief": LM / "smollm2-brief"}
    py = compare.evaluate(lm, log_scorer=["exact_match,strict-match"], seed=1)
    r = runner.invoke(app, ["compare", *[f"{k}={v}" for k, v in lm.items()], "--log-scorer",
                            "exact_match,strict-match", "--seed", "1", "--json"])
    assert r.exit_code == 0, r.output
    _same(py, json.loads(r.stdout))


def test_the_python_path_speaks_python_and_the_command_line_its_options():
    with pytest.raises(AssayInputError, match=r"choose one with log_scorer= ") as e:
        compare.evaluate({"plain": INS / "smollm2-two-scorers", "brief": INS / "smollm2-brief-two-scorers"})
    assert "--" not in str(e.value)
    r = runner.invoke(app, ["compare", f"plain={INS / 'smollm2-two-scorers'}",
                            f"brief={INS / 'smollm2-brief-two-scorers'}"])
    assert r.exit_code == 2 and "choose one with --log-scorer " in r.output and "log_scorer=" not in r.output


# -- journal runs --------------------------------------------------------------------------------------------------


def _bank(n=20, numbers=False):
    ref = [i + 1 for i in range(n)] if numbers else [str(i + 1) for i in range(n)]
    return pd.DataFrame({"id": [f"q{i}" for i in range(n)], "prompt": [f"What is {i} + 1?" for i in range(n)],
                         "reference": ref})


def _answering(name: str, right):
    def fn(prompt: str) -> str:
        i = int(prompt.split()[2])
        return f"The answer is {i + 1 if right(i) else 0}."

    return CallableModel(fn, name=name)


def _live_run(tmp_path, scorer="numeric", bank=None):
    from assay.compare.live import query_until_resolved

    models = {"plain": _answering("plain", lambda i: i % 2 == 0), "boxed": _answering("boxed", lambda i: i % 3 != 0)}
    j = tmp_path / "j.sqlite"
    query_until_resolved(models, _bank() if bank is None else bank, scorer=scorer, budget=20, batch=10, journal=j,
                         run_id="live1")
    return j


def test_a_parent_run_names_the_runs_inside_it_and_each_is_read_with_its_own_scorer(tmp_path):
    """`live1` stands for `live1/plain` and `live1/boxed`; each was scored with `numeric` and records it, so reading
    it back without naming a scorer gives the scores the live run gave (with `exact` the prose answers would all be
    wrong)."""
    j = _live_run(tmp_path)
    table = sources.read_sources(runs=["live1"], journal=j, bank=_bank())
    assert set(table["model"]) == {"live1/plain", "live1/boxed"} and set(table["scorer"]) == {"numeric"}
    acc = table.groupby("model")["score"].mean()
    assert acc["live1/plain"] == 0.5 and abs(acc["live1/boxed"] - 13 / 20) < 1e-12
    assert set(table["status"]) == {"answered"}
    with pytest.raises(AssayInputError, match=r"run 'live1' holds no answers of its own; it holds the runs "
                                              r"live1/plain, live1/boxed"):
        audit.read_run("live1", bank=_bank(), journal=j)
    run = audit.read_run("live1/plain", bank=_bank(), journal=j)
    assert set(run["scorer"]) == {"numeric"} and run["score"].mean() == 0.5
    # the command line reads it the same way, its scorer named in the header
    r = runner.invoke(app, ["compare", "--run", "live1", "--journal", str(j), "--bank", str(tmp_path / "b.csv")])
    assert r.exit_code == 2  # no such bank file: said, not a traceback
    _bank().to_csv(tmp_path / "b.csv", index=False)
    r = runner.invoke(app, ["compare", "--run", "live1", "--journal", str(j), "--bank", str(tmp_path / "b.csv"),
                            "--json", "--seed", "0"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert {m["model"] for m in out["models"]} == {"live1/plain", "live1/boxed"}
    assert out["outcomes"]["live1/plain"]["answered"] == 20
    # the grader each run was read with, and where it came from, is named (the JSON and the terminal)
    assert out["graders"]["live1/plain"] == "numeric (the scorer the run was scored with)"
    r = runner.invoke(app, ["compare", "--run", "live1", "--journal", str(j), "--bank", str(tmp_path / "b.csv"),
                            "--scorer", "exact", "--seed", "0"])
    assert "graded: live1/plain with exact (asked for; the run was scored with numeric)" in r.stdout


def test_a_scorer_column_of_the_bank_is_read_by_name(tmp_path):
    """`--scorer kind`, a column of the bank, scores each question by its own scorer (it raised KeyError:
    'scorer' before); `--scorer reference` too; a scorer column with a hole is refused naming the ids."""
    j = _live_run(tmp_path)
    b = _bank().assign(kind=["numeric"] * 10 + ["exact"] * 10)
    b.to_csv(tmp_path / "b.csv", index=False)
    r = runner.invoke(app, ["compare", "--run", "live1/plain", "--run", "live1/boxed", "--journal", str(j),
                            "--bank", str(tmp_path / "b.csv"), "--scorer", "kind", "--json"])
    assert r.exit_code == 0, r.output
    table = sources.read_sources(runs=["live1"], journal=j, bank=b, scorer="kind")
    assert table.groupby("scorer").size().to_dict() == {"exact": 20, "numeric": 20}
    r = runner.invoke(app, ["compare", "--run", "live1", "--journal", str(j), "--bank", str(tmp_path / "b.csv"),
                            "--scorer", "reference"])
    assert r.exit_code == 2 and "unknown scorer" in r.output and "Traceback" not in r.output
    b.loc[3, "kind"] = None
    with pytest.raises(AssayInputError, match="scorer column 'kind' is empty for ids q3"):
        sources.read_sources(runs=["live1"], journal=j, bank=b, scorer="kind")


def test_a_bank_of_plain_number_references_is_read_as_text(tmp_path):
    """A bank file whose references are plain numbers (24) stopped `assay audit` with "normalize expects a string or
    a number; got int64"; a bank's references are text wherever it is read."""
    b = _bank(numbers=True)
    b.to_csv(tmp_path / "b.csv", index=False)
    assert read_bank(tmp_path / "b.csv")["reference"].tolist()[:3] == ["1", "2", "3"]
    assert read_bank(b)["reference"].tolist()[:3] == ["1", "2", "3"]
    j = _live_run(tmp_path, scorer="exact", bank=b)
    run = audit.read_run("live1/boxed", bank=tmp_path / "b.csv", journal=j, scorer="exact")
    assert len(run) == 20 and run["reference"].map(type).eq(str).all()
    r = runner.invoke(app, ["audit", "live1/boxed", "--bank", str(tmp_path / "b.csv"), "--journal", str(j),
                            "--n", "5", "-o", str(tmp_path / "a.csv")])
    assert r.exit_code == 0, r.output


def test_an_answer_is_matched_by_its_prompt_or_its_chats_last_user_message_and_a_second_answer_is_refused(tmp_path):
    from assay.models import run_prompts
    from assay.models.journal import Journal
    import asyncio

    j = Journal(tmp_path / "j.sqlite")
    chats = [[{"role": "system", "content": "Be brief."}, {"role": "user", "content": p}] for p in _bank()["prompt"]]
    model = CallableModel(lambda p: "The answer is 3.", name="m")
    asyncio.run(run_prompts(model, chats[:5], journal=j, run_id="chat"))
    ans = sources.read_journal_answers("chat", bank=_bank(), journal=j)
    assert ans["id"].tolist() == ["q0", "q1", "q2", "q3", "q4"] and (ans["response"] == "The answer is 3.").all()
    # the same question asked again with other settings: two answers to q0, refused naming it
    other = CallableModel(lambda p: "The answer is 1.", name="m2")
    asyncio.run(run_prompts(other, chats[:1], journal=j, run_id="chat"))
    with pytest.raises(AssayInputError, match=r"run 'chat' holds more than one answer to question\(s\) q0"):
        sources.read_journal_answers("chat", bank=_bank(), journal=j)
    j.close()


def test_a_journal_written_by_main_before_the_notes_table_still_opens_and_resumes(tmp_path):
    """tests/fixtures/journals: a live comparison and a query written by main at c2f5a50 (schema 2: the draws kept
    as fake request rows). It opens, its draws read as notes, its answers read back, and the same comparison
    resumed asks nothing and gives the same verdicts and draws."""
    from assay.compare.live import query_until_resolved
    from assay.models.journal import Journal
    from test_compare import _answering as answering, _bank as bank

    path = tmp_path / "old.sqlite"
    shutil.copy(OLD, path)
    expected = json.loads(OLD.with_name("main-c2f5a50.expected.json").read_text())
    with Journal(path) as j:
        assert j.note("live1", "draws/1")["items"] == expected["draws"][:10]
        assert j.answer_count("live1") == 0 and len(j.records("live1")) == 0
        assert {r["run_id"]: r["n_records"] for r in j.runs()} == {"live1": 0, "live1/strong": 30, "live1/weak": 30,
                                                                   "live1/mid": 30, "q1": 12}
    models = {"strong": answering(0.95, "strong"), "weak": answering(0.1, "weak"), "mid": answering(0.55, "mid")}
    res = query_until_resolved(models, bank(60), scorer="numeric", journal=path, run_id="live1", budget=60,
                               batch=10, seed=3)
    assert sum(res.info["live"]["requests"].values()) == 0
    assert res.pairs["verdict"].tolist() == expected["pairs"]["verdict"]
    np.testing.assert_allclose(res.pairs["ci_low"], expected["pairs"]["ci_low"], rtol=1e-12)
    assert res.tables["draws"]["item"].tolist() == expected["draws"]
    table = sources.read_sources(runs=["live1"], journal=path, bank=bank(60), scorer="numeric")
    assert set(table["model"]) == {"live1/strong", "live1/weak", "live1/mid"}
    assert table.groupby("model").size().eq(30).all()


def test_runs_show_and_export_give_each_answer_its_id_score_extracted_answer_and_outcome(tmp_path):
    """`assay runs export/show` had no item id, score or extracted answer, and an empty outcome column: with the
    bank (given, or the file the run recorded) every record is scored as the run was; without one, said so."""
    j = _live_run(tmp_path)
    _bank().to_csv(tmp_path / "b.csv", index=False)
    r = runner.invoke(app, ["runs", "export", "live1/plain", "--journal", str(j), "--bank", str(tmp_path / "b.csv"),
                            "-o", str(tmp_path / "x.csv")])
    assert r.exit_code == 0, r.output
    x = pd.read_csv(tmp_path / "x.csv", dtype={"id": str})
    assert x["id"].notna().all() and set(x["outcome"]) == {"answered"} and x["scorer"].eq("numeric").all()
    assert x["score"].mean() == 0.5 and x["extracted"].notna().all()
    r = runner.invoke(app, ["runs", "show", "live1/plain", "--journal", str(j), "--bank", str(tmp_path / "b.csv"),
                            "--json", "--rows", "0"])
    out = json.loads(r.stdout)
    assert "scored with numeric (the scorer the run was scored with)" in out["run"]["scoring"]
    assert {"id", "score", "extracted", "outcome"} <= set(out["records"][0])
    # no bank recorded or given: the records keep their own outcomes, text ones 'unscored', and the run says why
    r = runner.invoke(app, ["runs", "show", "live1/plain", "--journal", str(j), "--json"])
    out = json.loads(r.stdout)
    assert out["run"]["scoring"].startswith("not scored") and {x["outcome"] for x in out["records"]} == {"unscored"}
