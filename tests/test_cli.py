"""The `assay` command: JSON output, human output, exit codes, one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from assay import __version__
from assay.cli import app

runner = CliRunner()
LAW = Path(__file__).resolve().parents[2] / "shared" / "data" / "siren" / "law"
CELL_KEYS = {"system", "budget", "estimate", "ci_low", "ci_high", "band_low", "band_high", "se", "se_heldout",
             "se_selection", "pi_win"}


def tidy(tmp_path: Path, name: str = "scores.csv", rename: dict | None = None) -> Path:
    rng = np.random.default_rng(0)
    rows = []
    for system in ("A", "B"):
        for budget, K in ((0, 1), (1000, 3), (5000, 4)):
            for k in range(K):
                z = rng.random(120) < 0.5 + 0.05 * k
                rows += [(system, budget, f"p{k}", f"q{i:03d}", float(v)) for i, v in enumerate(z)]
    df = pd.DataFrame(rows, columns=["system", "budget", "artifact", "item", "score"])
    if rename:
        df = df.rename(columns=rename)
    path = tmp_path / name
    if name.endswith(".parquet"):
        df.to_parquet(path)
    else:
        df.to_csv(path, index=False)
    return path


def run(args: list[str]):
    return runner.invoke(app, args)


def test_version():
    res = run(["--version"])
    assert res.exit_code == 0 and res.stdout.strip() == f"assay {__version__}"


def test_siren_json_has_the_documented_shape(tmp_path):
    path = tidy(tmp_path)
    res = run(["siren", str(path), "--json", "--seed", "3", "--boot", "500", "--contrast", "A@1000 - A@0",
               "--contrast", "pairwise"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["method"] == "siren" and out["seed"] == 3 and out["n"] == 120
    assert len(out["cells"]) == 6 and CELL_KEYS <= set(out["cells"][0])
    assert out["contrasts"][0]["contrast"] == "A@1000 - A@0"
    assert {c["kind"] for c in out["contrasts"][1:]} == {"pairwise"}
    assert {"m1_naive_max", "m2_wald", "m3_single_split", "m4_rsplit_t", "shortlist_mean"} <= set(out["baselines"])
    # the same seed gives the same JSON
    again = run(["siren", str(path), "--json", "--seed", "3", "--boot", "500", "--contrast", "A@1000 - A@0",
                 "--contrast", "pairwise"])
    assert again.stdout == res.stdout


def test_siren_flag_words(tmp_path):
    """--temperature is the only name of the softmax temperature, --delta is an alias of --alpha, -o writes the
    JSON result."""
    path = tidy(tmp_path)
    base = ["siren", str(path), "--json", "--seed", "2", "--boot", "200"]
    res = run(base + ["--temperature", "0.5", "--alpha", "0.1"])
    assert res.exit_code == 0, res.output
    alias = run(base + ["--temperature", "0.5", "--delta", "0.1", "-o", str(tmp_path / "r.json")])
    assert alias.exit_code == 0 and alias.stdout == res.stdout
    assert json.loads((tmp_path / "r.json").read_text()) == json.loads(res.stdout)
    out = json.loads(res.stdout)
    assert out["params"]["temperature"] == 0.5 and out["level"]["alpha"] == 0.1
    assert run(base + ["--tau", "0.5"]).exit_code == 2


def test_siren_column_mapping_and_human_output(tmp_path):
    path = tidy(tmp_path, "s.parquet", rename={"system": "model", "score": "acc", "item": "doc_id"})
    res = run(["siren", str(path), "--system-col", "model", "--score-col", "acc", "--item-col", "doc_id",
               "--seed", "1", "--boot", "300", "--contrast", "tuned-vs-default", "--report", str(tmp_path / "r.html")])
    assert res.exit_code == 0, res.output
    assert "SIREN" in res.stdout and "naive max" in res.stdout and "tuned" not in res.stderr
    assert "A@1K - A@0" in res.stdout  # tuned-vs-default contrasts, compact budgets
    html = (tmp_path / "r.html").read_text()
    assert "<svg" in html and "simultaneous band" in html and "http" not in html.split("<svg", 1)[0]


@pytest.mark.parametrize(
    "mutate, needle",
    [
        (lambda df: df.assign(score=df.score.where(df.index != 5, 1.5)), "outside [0, 1]"),
        (lambda df: df.assign(score=df.score.where(df.index != 5, np.nan)), "missing"),
        (lambda df: pd.concat([df, df.iloc[[3]]]), "duplicate"),
        (lambda df: df.drop(index=[200]), "ragged"),
    ],
)
def test_bad_input_is_one_message_and_exit_2(tmp_path, mutate, needle):
    path = tidy(tmp_path)
    df = mutate(pd.read_csv(path))
    df.to_csv(path, index=False)
    res = run(["siren", str(path)])
    assert res.exit_code == 2
    assert needle in res.stderr and "Traceback" not in res.output
    assert res.stderr.strip().startswith("error:")


def test_drop_incomplete_recovers(tmp_path):
    path = tidy(tmp_path)
    df = pd.read_csv(path).drop(index=[200])
    df.to_csv(path, index=False)
    res = run(["siren", str(path), "--drop-incomplete", "--json", "--boot", "200", "--seed", "0"])
    assert res.exit_code == 0
    out = json.loads(res.stdout)
    assert out["n"] == 119 and out["design"]["dropped_items"] == 1


def test_unknown_things_exit_2(tmp_path):
    assert run(["siren", str(tmp_path / "nope.csv")]).exit_code == 2
    res = run(["siren", str(tidy(tmp_path)), "--contrast", "Z@1 - A@0"])
    assert res.exit_code == 2 and "unknown system 'Z'" in res.stderr
    assert run(["study", "siren-z"]).exit_code == 2
    assert run(["siren", str(tidy(tmp_path)), "--no-such-flag"]).exit_code == 2


def test_study_json_rows():
    res = run(["study", "siren-c", "--quick", "--json", "--seed", "5"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["params"]["study"] == "siren-c" and len(out["rows"]) == 11
    assert {"H_A", "H_B", "M", "bias_same_data_pp", "bias_siren_pp", "fwr_same_data"} <= set(out["rows"][0])


@pytest.mark.slow
def test_errors_have_no_traceback_in_a_real_process(tmp_path):
    """The installed entry point: exit code 2 and a single line on stderr, in a non-terminal (CI) run."""
    bad = tmp_path / "bad.csv"
    bad.write_text("artifact,item,score\na,1,0.5\na,2,7\n")
    env = dict(os.environ, CI="true")
    proc = subprocess.run([sys.executable, "-m", "assay.cli", "siren", str(bad)], capture_output=True, text=True,
                          env=env, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr and "row 1" in proc.stderr


@pytest.mark.slow
def test_study_progress_degrades_to_plain_lines(tmp_path):
    env = dict(os.environ, CI="true")
    proc = subprocess.run([sys.executable, "-m", "assay.cli", "study", "siren-b", "--quick", "--json"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0
    json.loads(proc.stdout)  # stdout is only the JSON
    assert "study siren-b:" in proc.stderr and "\x1b[" not in proc.stderr  # plain lines, no escape codes


@pytest.mark.skipif(not LAW.exists(), reason="../shared/data/siren/law not present")
def test_full_law_set_through_the_cli():
    res = run(["siren", str(LAW), "--temperature", "1.0", "--contrast", "tuned-vs-default", "--json", "--seed", "42"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert len(out["cells"]) == 110 and len(out["contrasts"]) == 88


def _autoeval_csv(tmp_path: Path) -> Path:
    from assay.datasets import synthetic_autoeval

    path = tmp_path / "ae.csv"
    synthetic_autoeval(seed=3, n=200).to_csv(path, index=False)
    return path


def test_autoeval_selection_json_and_gate(tmp_path):
    path = _autoeval_csv(tmp_path)
    res = run(["autoeval", str(path), "--risk-target", "0.1", "--select", "fst", "--order-by", "memory_gb",
               "--cost-col", "memory_gb", "--seed", "1", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["method"] == "autoeval" and out["selection"]["procedure"] == "fst"
    cert = out["selection"]["certified"]
    order = out["selection"]["order"]
    assert order == ["q12", "q10", "q8", "q6", "q4"] and cert == order[: len(cert)]  # FST: a prefix
    assert "q4" not in cert  # risk 0.30 is never certified at target 0.1
    assert len(out["paths"]["q12"]["log_e"]) == 200 and len(out["order"]["q12"]["labelled"]) == 200
    # nothing can be certified at a tiny target: the gate exits 1 and says so
    res = run(["autoeval", str(path), "--risk-target", "0.001", "--select", "holm", "--require-certified"])
    assert res.exit_code == 1 and "no candidate is certified" in res.output


def test_autoeval_two_files_and_bad_input(tmp_path):
    from assay.datasets import synthetic_autoeval

    df = synthetic_autoeval(seed=4, n=100)
    human = df[df.loss_human.notna()][["candidate", "item", "loss_human"]]
    judge = df[["candidate", "item", "loss_judge"]]
    human.to_csv(tmp_path / "h.csv", index=False)
    judge.to_csv(tmp_path / "j.csv", index=False)
    res = run(["autoeval", str(tmp_path / "h.csv"), "--judge", str(tmp_path / "j.csv"), "--risk-target", "0.1",
               "--seed", "0", "--json"])
    assert res.exit_code == 0, res.output
    assert {r["n"] for r in json.loads(res.stdout)["candidates"]} == {100}
    judge[judge.candidate != "q8"].to_csv(tmp_path / "j2.csv", index=False)
    res = run(["autoeval", str(tmp_path / "h.csv"), "--judge", str(tmp_path / "j2.csv"), "--risk-target", "0.1"])
    assert res.exit_code == 2 and "only in the human-label file: q8" in res.stderr
    res = run(["autoeval", str(tmp_path / "h.csv"), "--judge", str(tmp_path / "j.csv"), "--risk-target", "0.1",
               "--delta", "1.5"])
    assert res.exit_code == 2 and "--alpha (--delta) must be a number strictly between 0 and 1" in res.stderr
    res = run(["autoeval", str(tmp_path / "h.csv"), "--judge", str(tmp_path / "j.csv"), "--risk-target", "0.1",
               "--reliance-levels", "1"])
    assert res.exit_code == 2 and "--reliance-levels must be at least 2" in res.stderr


def test_autoeval_flags_alpha_delta_alias_reliance_levels_and_out(tmp_path):
    """--alpha is the error level (the paper's delta; --delta is an alias), --reliance-levels the number of rho
    values (--factors is gone: in ``assay faq`` it names a file), -o / --out the output file."""
    path = _autoeval_csv(tmp_path)
    base = ["autoeval", str(path), "--risk-target", "0.1", "--seed", "2", "--reliance-levels", "4"]
    a = run([*base, "--alpha", "0.05", "-o", str(tmp_path / "a.json")])
    d = run([*base, "--delta", "0.05", "--out", str(tmp_path / "d.json")])
    assert a.exit_code == 0 and d.exit_code == 0, a.output + d.output
    ja, jd = (json.loads((tmp_path / f).read_text()) for f in ("a.json", "d.json"))
    assert ja == jd and ja["level"]["delta"] == 0.05 and ja["params"]["factors"] == 4
    assert len(ja["params"]["rhos"]) == 4
    res = run(["autoeval", str(path), "--risk-target", "0.1", "--factors", "4"])
    assert res.exit_code == 2 and "No such option" in res.stderr


@pytest.mark.slow
def test_autoeval_study_json_rows():
    res = run(["study", "autoeval-example", "--quick", "--json", "--trials", "2"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)["rows"]
    sc = [r for r in rows if r["kind"] == "sample-complexity"]
    assert {r["method"] for r in sc} == {"r-eval", "r-autoeval", "r-autoeval+"}
    assert {r["betting"] for r in sc} == {"wsr", "up"}
    assert all({"gamma", "delta", "sample_complexity"} <= set(r) for r in sc)


def test_psdme_on_shipped_llmperf(tmp_path):
    from assay.datasets import path

    res = run(["psdme", path("llmperf"), "--kpi-col", "ttft_s", "--select", "top:5", "--failures", "worst",
               "--band", "berk-jones", "--gamma", "0.1,0.2", "--json", "--seed", "0"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    sel = [c for c in out["configs"] if c["selected"]]
    assert len(sel) == 5 and not any(c["config"].startswith("lepton") for c in sel)
    assert out["method_used"] == "ps-dme" and {"configs", "bands", "tradeoff"} <= set(out)
    # +inf latencies without the failure policy are an input error that says what to do
    res = run(["psdme", path("llmperf"), "--kpi-col", "ttft_s"])
    assert res.exit_code == 2 and "failures" in res.stderr
    res = run(["psdme", path("llmperf"), "--kpi-col", "ttft_s", "--failures", "worst", "--gamma", "1.5"])
    assert res.exit_code == 2 and "gammas" in res.stderr


def test_psdme_flags_alpha_delta_calibrator_tau_out(tmp_path):
    from assay.datasets import path

    base = ["psdme", path("llmperf"), "--kpi-col", "ttft_s", "--select", "below:0.45", "--failures", "worst",
            "--calibrator-tau", "0.4", "--json"]
    a = run(base + ["--alpha", "0.05", "-o", str(tmp_path / "r.json")])
    d = run(base + ["--delta", "0.05"])
    assert a.exit_code == 0 and d.exit_code == 0, a.output + d.output
    ja, jd = json.loads(a.stdout), json.loads(d.stdout)
    assert ja["level"]["delta"] == 0.05 and ja["tau"] == 0.4 and ja["params"]["calibrator"] == 0.4
    assert ja["configs"] == jd["configs"] and json.loads((tmp_path / "r.json").read_text())["configs"] == ja["configs"]
    assert isinstance(ja["warnings"], list) and "notes" not in ja
    res = run(["psdme", path("llmperf"), "--kpi-col", "ttft_s", "--failures", "worst", "--tau", "0.4"])
    assert res.exit_code == 2 and "--tau" in res.stderr


def test_psdme_auto_explains_its_choice(tmp_path):
    rng = np.random.default_rng(0)
    df = pd.concat([pd.DataFrame({"cfg": f"c{k}", "lat": rng.exponential(1 + 0.1 * k, 100)}) for k in range(30)])
    df.to_csv(tmp_path / "kpi.csv", index=False)
    res = run(["psdme", str(tmp_path / "kpi.csv"), "--config-col", "cfg", "--kpi-col", "lat", "--select", "top:5",
               "--method", "auto", "--json", "--seed", "1"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["method_used"] in ("bonferroni", "ss-dme") and "e ln(K/delta)" in out["method_reason"]
    res = run(["study", "psdme-ridge", "--trials", "3", "--json"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)["rows"]
    fcr = [r for r in rows if r["kind"] == "fcr"]
    assert {r["method"] for r in fcr} == {"ps-dme", "ss-dme", "bonferroni", "naive"}
    assert all({"n", "fcr", "width"} <= set(r) for r in fcr)


def test_query_scores_resumes_and_lists_runs(tmp_path, monkeypatch):
    from fake_openai_server import FakeOpenAIServer, question

    qs = [question(a, a + 1) for a in range(12)]
    refs = [str(2 * a + 1) for a in range(12)]
    pd.DataFrame({"id": [f"q{i}" for i in range(12)], "prompt": qs, "answer": refs}).to_csv(tmp_path / "p.csv", index=False)
    journal = tmp_path / "j.sqlite"
    monkeypatch.setenv("ASSAY_TEST_KEY", "sk-test-secret-999")
    with FakeOpenAIServer() as srv:
        args = ["query", str(tmp_path / "p.csv"), "--model", "fake", "--endpoint", srv.base_url,
                "--api-key-env", "ASSAY_TEST_KEY", "--journal", str(journal), "--run-id", "cli1",
                "--reference-col", "answer", "--scorer", "numeric", "-o", str(tmp_path / "out.parquet"), "--json"]
        res = run(args)
        assert res.exit_code == 0, res.output
        out = json.loads(res.stdout)
        assert out["run_id"] == "cli1" and out["scoring"]["accuracy"] == 1.0 and out["stats"]["cached"] == 0
        n_requests = sum(srv.counts.values()) if hasattr(srv, "counts") else None
        again = json.loads(run(args).stdout)  # the same run again: everything from the journal
        assert again["stats"]["cached"] == 12
        if n_requests is not None:
            assert sum(srv.counts.values()) == n_requests
    rows = pd.read_parquet(tmp_path / "out.parquet")
    assert list(rows["id"]) == [f"q{i}" for i in range(12)] and set(rows["status"]) == {"answered"}
    listing = run(["runs", "list", "--journal", str(journal), "--json"])
    assert listing.exit_code == 0 and "cli1" in listing.stdout
    assert b"sk-test-secret-999" not in journal.read_bytes()
    # the run recorded how it was scored and against what: read back without naming either (issue 52)
    from assay.audit import read_run

    back = read_run("cli1", journal=journal)
    assert len(back) == 12 and set(back["scorer"]) == {"numeric"} and back["score"].eq(1.0).all()
    r = run(["audit", "cli1", "--journal", str(journal), "--n", "3", "-o", str(tmp_path / "s.csv")])
    assert r.exit_code == 0, r.output
