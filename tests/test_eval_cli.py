"""`assay eval` on the command line: --plan, a run and its report, --json, `assay report RUN_ID`, and kill -9 at two
points of a campaign followed by --resume, which must end with the uninterrupted run's numbers and pay for at most
`concurrency` requests twice per kill (issue 25).

The killed runs are processes of their own (``python -m assay.cli``); every other command runs in this process through
Typer's test runner (:func:`_assay`): the same command line, without a fresh interpreter loading SciPy, pandas and
matplotlib again (about 1.5 s a command, most of this module's time when each was a process)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.cli import app

sys.path.insert(0, str(Path(__file__).parent))
from fake_openai_server import FakeOpenAIServer  # noqa: E402
from watch import Child, journal_count, wait_for  # noqa: E402
from test_eval_campaign import _files  # noqa: E402

# slow (make check leaves it out): whole campaigns in subprocesses
pytestmark = pytest.mark.slow

CONCURRENCY = 2


def _toml(tmp_path: Path, url: str, name: str = "cli", sample: int = 20, faq_budget: int = 12) -> Path:
    _files(tmp_path)
    text = f"""
[campaign]
name = "{name}"
seed = 3
out = "{name}-report"

[[model]]
name = "short"
endpoint = "{url}"
model = "fake"
max_tokens = 16
concurrency = {CONCURRENCY}

[[model]]
name = "long"
endpoint = "{url}"
model = "fake"
template = "Think. {{question}}"
concurrency = {CONCURRENCY}

[bank]
path = "bank.csv"
scorer = "numeric"
sample = {sample}

[faq]
history = "history.csv"
budget = {faq_budget}
calibrate = false

[judge]
endpoint = "{url}"
model = "judge"
human_labels = "human.csv"
risk_target = 0.5

[kpi]
metrics = ["completion_tokens", "latency_s"]

[siren]
budgets = [1, 2]
splits = 10
"""
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    return path


def _assay(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    """`assay ARGS` with CI=true, in this process: its exit code, stdout and stderr. An exception that escaped the
    command (a traceback on a terminal) fails the test whatever the exit code."""
    r = CliRunner(env={"CI": "true"}).invoke(app, list(args))
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise AssertionError(f"assay {' '.join(args)} raised {r.exception!r}:\n{r.stdout}\n{r.stderr}") from r.exception
    p = subprocess.CompletedProcess(["assay", *args], r.exit_code, r.stdout, r.stderr)
    if check and p.returncode != 0:
        raise AssertionError(f"assay {' '.join(args)} exited {p.returncode}:\n{p.stdout}\n{p.stderr}")
    return p


def test_plan_asks_nothing_and_a_run_writes_the_report(tmp_path):
    with FakeOpenAIServer(retry_after=0) as srv:
        toml = _toml(tmp_path, srv.base_url)
        plan = _assay("eval", "--plan", str(toml))
        assert srv.total == 0
        assert "short" in plan.stdout and "sample" in plan.stdout and "nothing has been asked" in plan.stdout
        pj = json.loads(_assay("eval", "--plan", "--json", str(toml)).stdout)
        assert {r["section"] for r in pj["rows"]} == {"faq", "sample"} and pj["sample_size"] == 20
        assert len(pj["sample_items"]) == 20 and "the shared sample's items" in plan.stdout
        journal = tmp_path / "j.sqlite"
        run = _assay("eval", str(toml), "--journal", str(journal))
        assert srv.total > 0
    folder = tmp_path / "cli-report"
    assert {p.name for p in folder.iterdir()} >= {"report.html", "report.json", "report.md"}
    rep = json.loads((folder / "report.json").read_text())
    assert rep["kind"] == "assay-eval" and rep["campaign"]["campaign"]["name"] == "cli"
    assert rep["versions"]["assay"] and rep["seed"] == 3 and rep["run_id"].startswith("eval-cli-")
    # plain lines under CI, one per unit at least, and the summary table
    assert "eval faq short" in run.stderr and "done" in run.stderr
    assert "accuracy on all 40 questions" in run.stdout
    # the report rebuilt offline from the run id alone
    md = tmp_path / "again.md"
    _assay("report", rep["run_id"], "--journal", str(journal), "-o", str(md))
    assert md.read_text() == (folder / "report.md").read_text()
    bad = _assay("report", "eval-nope", "--journal", str(journal), check=False)
    assert bad.returncode != 0 and "not in the journal" in bad.stderr and "Traceback" not in bad.stderr


def _records(journal: Path, like: str) -> int:
    return journal_count(journal, "SELECT COUNT(*) FROM records WHERE run_id LIKE ? AND error IS NULL", (like,))


def _kill_when(child: Child, journal: Path, like: str, n: int, deadline_s: float = 240) -> None:
    wait_for(lambda: _records(journal, like) >= n, what=f"{n} records in {like}", timeout=deadline_s, child=child)
    child.kill9()


def _numbers(report: Path) -> str:
    """The statistical content of a report (everything but measured latencies, costs in seconds and versions)."""
    rep = json.loads(report.read_text())
    keep = {"summary": [s for s, sec in zip(rep["summary"]["statement"], rep["summary"]["section"]) if sec != "kpi"]}
    for name, sec in rep["sections"].items():
        for key, r in sec["results"].items():
            if name == "kpi" and key == "latency_s":
                continue
            main = {"faq": "estimates", "judge": "candidates", "kpi": "configs", "siren": "cells"}[name]
            keep[f"{name}/{key}"] = r[main]
    return json.dumps(keep, sort_keys=True)


#: the kill test's campaign: four runs of it (one uninterrupted, two killed, the last resume), so a smaller one; the
#: kills still land mid-FAQ (5 of 2 x 8 answers) and mid-sample (6 of 2 x 10)
SMALL = {"sample": 10, "faq_budget": 8}


def test_kill_9_twice_and_resume_gives_the_uninterrupted_result_paying_at_most_concurrency_twice(tmp_path):
    with FakeOpenAIServer(retry_after=0, delay_s=0.05) as srv:
        clean = tmp_path / "clean"
        clean.mkdir()
        _assay("eval", str(_toml(clean, srv.base_url, "k", **SMALL)), "--journal", str(clean / "j.sqlite"))
        uninterrupted = srv.total

        work = tmp_path / "work"
        work.mkdir()
        toml = _toml(work, srv.base_url, "k", **SMALL)
        journal = work / "j.sqlite"
        before = srv.total
        env = {**os.environ, "CI": "true"}
        cmd = [sys.executable, "-m", "assay.cli", "eval", str(toml), "--journal", str(journal)]
        with Child(cmd, env=env) as child:
            _kill_when(child, journal, "eval-k-%/faq", 5)  # mid-FAQ (one question at a time)
            run_id = next(line.split("run id ")[1].split(" ")[0] for line in child.stderr().splitlines()
                          if "run id" in line)
        with Child([sys.executable, "-m", "assay.cli", "eval", "--resume", run_id, "--journal", str(journal)],
                   env=env) as child:
            _kill_when(child, journal, "eval-k-%/sample", 6)  # mid-sample (CONCURRENCY requests in flight)
        _assay("eval", "--resume", run_id, "--journal", str(journal))
        paid = srv.total - before
    # nothing lost, at most `concurrency` requests paid twice per kill (FAQ asks one at a time)
    assert uninterrupted <= paid <= uninterrupted + 1 + CONCURRENCY
    # the same numbers as the uninterrupted run
    assert _numbers(work / "k-report" / "report.json") == _numbers(clean / "k-report" / "report.json")
    with sqlite3.connect(journal) as con:
        assert con.execute("SELECT status FROM runs WHERE run_id = ?", (run_id,)).fetchone()[0] == "done"


def test_bad_campaigns_get_one_clear_line(tmp_path):
    (tmp_path / "bad.toml").write_text('[campaign]\nname = "x"\n[[model]]\nname = "a"\n')
    p = _assay("eval", str(tmp_path / "bad.toml"), check=False)
    assert p.returncode != 0 and "Traceback" not in p.stderr and "[[model]]" in p.stderr
    p = _assay("eval", check=False)
    assert p.returncode != 0 and "--resume" in p.stderr


def test_the_live_display_keeps_one_row_per_section_and_model(capsys):
    """On a terminal, one table: a row per (section, model) with done / budget, the current width and the status."""
    from assay.cli.eval import _Display
    from assay.eval.campaign import Event

    with _Display(interactive=True) as d:
        d(Event("faq", "short", 3, 12))
        d(Event("faq", "short", 12, 12, width=0.31))
        d(Event("sample", "short", 5, 20))
        d(Event("judge", "judge", status="skipped", note="no human labels"))
        table = d._table()
    assert [c.header for c in table.columns] == ["section", "model", "done / budget", "width", "status"]
    assert table.row_count == 3
    cells = [list(c._cells) for c in table.columns]
    assert cells[2][0] == "12 / 12" and cells[3][0] == "0.310" and cells[4][2] == "skipped: no human labels"


def test_without_a_terminal_every_running_section_speaks_at_least_every_heartbeat(capsys):
    """Plain lines (CI, a pipe): a section that reports nothing for a while (a slow model in the middle of a batch)
    still gets a line every heartbeat, with done / budget, its current figure and the elapsed time; a section that
    has finished stops speaking."""
    from assay.cli.eval import _Display
    from assay.eval.campaign import Event

    seen = []
    with _Display(interactive=False, heartbeat=0.2) as d:
        d(Event("scope", "greedy", 3, 40, note="0 certified so far"))
        d(Event("faq", "greedy", 20, 20, width=0.21, status="done"))

        def lines():
            seen.append(capsys.readouterr().err)
            return sum(ln.startswith("eval scope greedy: 3/40 running (0 certified so far)")
                       for ln in "".join(seen).splitlines()) >= 3

        wait_for(lines, what="three lines of the quiet scope section", timeout=30, interval=0.05)
    out = "".join(seen) + capsys.readouterr().err
    assert all(ln.rstrip().endswith(" s]") for ln in out.splitlines() if ln.startswith("eval "))
    assert sum(ln.startswith("eval faq greedy") for ln in out.splitlines()) == 1  # done: said once


def test_the_scope_section_reports_each_answer_with_its_certified_count(tmp_path):
    """QuickScope's status callback fires as each answer of a batch arrives (not only when the batch is told), with
    the certified count: what the campaign's display shows while a batch of 20 is asked of a slow model."""
    from assay import quickscope as qs
    from assay.benchmarks import get_generator

    gen = get_generator("dyval")
    seen = []
    qs.run(gen.space(), gen, lambda prompt: "Answer: 1", budget=8, batch=4, seed=0, certify=0.5,
           on_status=seen.append, journal=tmp_path / "j.sqlite", concurrency=1)
    answered = [s["answered"] for s in seen]
    assert answered[:4] == [1, 2, 3, 4] and max(answered) == 8 and answered == sorted(answered)
    assert all({"tickets", "budget", "certified", "pool"} <= set(s) for s in seen) and seen[-1]["tickets"] == 8
