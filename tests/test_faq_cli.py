"""`assay faq`: offline and live (fake OpenAI-compatible server on 127.0.0.1), factors save/load, errors."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit
from typer.testing import CliRunner

from assay.cli import app

sys.path.insert(0, str(Path(__file__).parent))
from fake_openai_server import FakeOpenAIServer, question  # noqa: E402

runner = CliRunner()
N = 60


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("faqcli")
    rng = np.random.default_rng(0)
    V = rng.normal(size=(N, 2))
    U = rng.normal(size=(90, 2))
    Z = (rng.random((90, N)) < expit(U @ V.T)).astype(int)
    items = [f"q{j}" for j in range(N)]
    h = pd.DataFrame(Z[:80], columns=items)
    h.insert(0, "model", [f"m{i}" for i in range(80)])
    h.to_csv(d / "hist.csv", index=False)
    n = pd.DataFrame(Z[80:83], columns=items)
    n.insert(0, "model", ["a", "b", "c"])
    n.to_csv(d / "new.csv", index=False)
    # live bank: the fake server always answers A + B; the reference is wrong (A + B + 1) where the "model" fails
    truth = Z[85]
    bank = pd.DataFrame({"id": items, "prompt": [question(j, 100) for j in range(N)],
                         "reference": [j + 100 + (0 if truth[j] else 1) for j in range(N)]})
    bank.to_json(d / "bank.jsonl", orient="records", lines=True)
    return d, truth


def invoke(*args):
    return runner.invoke(app, ["faq", *map(str, args)])


FIXED = ["--k", "2", "--weight-decay", "1"]


def test_offline_json(files):
    d, _ = files
    r = invoke("--history", d / "hist.csv", "--new", d / "new.csv", "--budget", 0.2, "--seed", 3, "--json", *FIXED)
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    est = out["estimates"]
    assert [e["model"] for e in est] == ["a", "b", "c"]
    assert all(e["ci_low"] <= e["estimate"] <= e["ci_high"] for e in est)
    assert out["params"]["n_queries"] == 12


def test_save_and_load_factors_give_the_same_answer(files, tmp_path):
    d, _ = files
    f = tmp_path / "factors.npz"
    a = invoke("--history", d / "hist.csv", "--new", d / "new.csv", "--budget", 15, "--seed", 1, "--json",
               "--save-factors", f, *FIXED)
    assert a.exit_code == 0 and f.exists()
    b = invoke("--history", d / "hist.csv", "--new", d / "new.csv", "--budget", 15, "--seed", 1, "--json", "--factors", f)
    assert b.exit_code == 0, b.output
    ea, eb = json.loads(a.stdout)["estimates"], json.loads(b.stdout)["estimates"]
    assert [x["estimate"] for x in ea] == [x["estimate"] for x in eb]


@pytest.mark.parametrize("args, msg", [
    (["--budget", "0.2"], "exactly one of --new"),
    (["--new", "NEW", "--items", "BANK", "--budget", "0.2"], "exactly one of --new"),
    (["--items", "BANK", "--budget", "0.2"], "needs --endpoint"),
    (["--new", "NEW", "--budget", "1.5"], "neither a fraction"),
    (["--new", "NEW", "--budget", "lots"], "neither a fraction"),
    (["--new", "NEW", "--until-width", "2"], "--until-width"),
    (["--new", "NEW", "--budget", "1"], "at least 2"),
    (["--new", "NEW", "--k", "2"], "go together"),
    (["--new", "nope.csv"], "no such file"),
])
def test_errors_exit_2(files, args, msg):
    d, _ = files
    args = [str(d / "new.csv") if a == "NEW" else str(d / "bank.jsonl") if a == "BANK" else a for a in args]
    r = runner.invoke(app, ["faq", "--history", str(d / "hist.csv"), *args, *([] if "--k" in args else FIXED)])
    assert r.exit_code == 2, r.output
    assert msg in r.output


@pytest.mark.parametrize("budget", ["500", "60", "1.0"])
def test_budget_of_the_whole_bank_is_exact(files, budget):
    d, _ = files
    r = invoke("--history", d / "hist.csv", "--new", d / "new.csv", "--budget", budget, "--seed", 0, "--json", *FIXED)
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    truth = pd.read_csv(d / "new.csv").set_index("model").mean(axis=1)
    for e in out["estimates"]:
        assert e["estimate"] == e["ci_low"] == e["ci_high"] == pytest.approx(truth[e["model"]], abs=1e-12)
        assert e["n_queries"] == N and e["interval"] == "exact"
    assert out["params"]["n_queries"] == N
    assert any("exact" in w for w in out["warnings"])


def test_budget_count_versus_fraction(files):
    d, _ = files
    a = json.loads(invoke("--history", d / "hist.csv", "--new", d / "new.csv", "--budget", "6", "--seed", 0, "--json",
                          *FIXED).stdout)
    b = json.loads(invoke("--history", d / "hist.csv", "--new", d / "new.csv", "--budget", "0.1", "--seed", 0, "--json",
                          *FIXED).stdout)
    assert a["params"]["n_queries"] == b["params"]["n_queries"] == 6  # 6 queries, and 10% of 60


def test_until_width(files):
    d, _ = files
    r = invoke("--history", d / "hist.csv", "--new", d / "new.csv", "--budget", "1.0", "--until-width", "0.3",
               "--min-queries", 5, "--seed", 0, "--json", *FIXED)
    assert r.exit_code == 0, r.output
    for e in json.loads(r.stdout)["estimates"]:
        assert e["interval"] == "anytime-valid"
        assert e["n_queries"] >= 5 and (e["width"] <= 0.3 or e["n_queries"] == N)


def test_mismatched_items_exit_2(files, tmp_path):
    d, _ = files
    new = pd.read_csv(d / "new.csv").rename(columns={"q5": "other"})
    new.to_csv(tmp_path / "bad.csv", index=False)
    r = invoke("--history", d / "hist.csv", "--new", tmp_path / "bad.csv", "--budget", 10, *FIXED)
    assert r.exit_code == 2 and "do not match" in r.output


def test_live_against_fake_server_and_resume(files, tmp_path):
    d, truth = files
    journal = tmp_path / "j.sqlite"
    with FakeOpenAIServer(retry_after=0) as srv:
        common = ["--history", d / "hist.csv", "--items", d / "bank.jsonl", "--endpoint", srv.base_url, "--model", "fake",
                  "--scorer", "numeric", "--budget", 20, "--seed", 7, "--journal", journal, "--json", *FIXED]
        r1 = invoke(*common)
        assert r1.exit_code == 0, r1.output
        o1 = json.loads(r1.stdout)
        first = srv.total
        assert first == o1["live"]["requests"] == o1["estimates"][0]["n_distinct"] > 0
        e = o1["estimates"][0]
        assert e["ci_low"] <= e["estimate"] <= e["ci_high"]
        assert abs(e["estimate"] - truth.mean()) < 0.5
        r2 = invoke(*common, "--run-id", o1["live"]["run_id"])
        assert r2.exit_code == 0, r2.output
        o2 = json.loads(r2.stdout)
        assert srv.total == first  # everything came from the journal
        assert o2["live"]["requests"] == 0 and o2["estimates"][0]["estimate"] == e["estimate"]
        # without --seed the run's own seed is reused: the same questions, nothing paid
        no_seed = [a for a in common if a not in ("--seed", 7)]
        r3 = invoke(*no_seed, "--run-id", o1["live"]["run_id"])
        assert r3.exit_code == 0, r3.output
        o3 = json.loads(r3.stdout)
        assert o3["seed"] == 7 and srv.total == first and o3["estimates"][0]["estimate"] == e["estimate"]
        # another seed, budget or factors would draw other questions: refused before any request
        for change, what in ((["--seed", "8"], "seed"), (["--budget", "21"], "n_queries"),
                             (["--uniform-mix", "0.3"], "params")):
            args = list(common)
            if change[0] in args:
                args[args.index(change[0]) + 1] = change[1]
            else:
                args += change
            r4 = invoke(*args, "--run-id", o1["live"]["run_id"])
            assert r4.exit_code == 2, r4.output
            assert "started with other FAQ settings" in r4.output and what in r4.output
            assert srv.total == first
        other_factors = [a if a != "2" else "1" for a in common]  # --k 1
        r5 = invoke(*other_factors, "--run-id", o1["live"]["run_id"])
        assert r5.exit_code == 2 and "factors" in r5.output and srv.total == first


def test_live_endpoint_failure_exit_3(files, tmp_path):
    d, _ = files
    with FakeOpenAIServer(retry_after=0) as srv:
        srv.plan_next(["500"] * 50)
        r = invoke("--history", d / "hist.csv", "--items", d / "bank.jsonl", "--endpoint", srv.base_url, "--model", "fake",
                   "--budget", 10, "--seed", 1, "--journal", tmp_path / "j.sqlite", "--max-retries", 1, "--timeout", 2, *FIXED)
    assert r.exit_code == 3, r.output
    assert "endpoint failed" in r.output


@pytest.mark.slow
def test_real_subprocess_under_ci(files):
    d, _ = files
    env = {**os.environ, "CI": "true"}
    p = subprocess.run([sys.executable, "-m", "assay.cli", "faq", "--history", str(d / "hist.csv"), "--new",
                        str(d / "new.csv"), "--budget", "0.1", "--seed", "0", *FIXED], capture_output=True, text=True,
                       env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "FAQ:" in p.stdout and "faq rounds" in p.stderr
    p = subprocess.run([sys.executable, "-m", "assay.cli", "faq", "--history", str(d / "hist.csv"), "--budget", "0.1"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 2 and "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1


def test_uniform_mix_and_the_delta_alias(files):
    """--uniform-mix is the policy's tau (no --tau any more); --delta is an alias of --alpha."""
    d, _ = files
    base = ["--history", d / "hist.csv", "--new", d / "new.csv", "--budget", 12, "--seed", 2, "--json", *FIXED]
    a = invoke(*base, "--uniform-mix", "0.3", "--alpha", "0.1")
    b = invoke(*base, "--uniform-mix", "0.3", "--delta", "0.1")
    assert a.exit_code == 0 and b.exit_code == 0, a.output + b.output
    oa, ob = json.loads(a.stdout), json.loads(b.stdout)
    assert oa["params"]["tau"] == 0.3 and oa["level"]["alpha"] == 0.1 and oa["estimates"] == ob["estimates"]
    assert oa["level"]["n_meaning"] and all({"ci_low", "ci_high"} <= set(e) for e in oa["estimates"])
    assert invoke(*base, "--tau", "0.3").exit_code == 2
    r = invoke(*base, "--uniform-mix", "0")
    assert r.exit_code == 2 and "--uniform-mix" in r.output
