"""`assay compare --endpoint ...` as a user runs it twice (issue 53), against the fake OpenAI server on 127.0.0.1:
each live compare gets a default journal run of its own (the same command resumes it, other settings start another
instead of being refused for the shared id `compare`), and a round says it is moving while the models answer."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd
from typer.testing import CliRunner

from assay.cli import app

sys.path.insert(0, str(Path(__file__).parent))
from fake_openai_server import FakeOpenAIServer, question  # noqa: E402


def test_each_live_compare_has_its_own_default_run_and_a_round_reports_its_answers(tmp_path):
    bank = pd.DataFrame({"id": [f"q{i}" for i in range(24)], "prompt": [question(i, 2 * i) for i in range(24)],
                         "reference": [str(3 * i) for i in range(24)]})
    bank.to_csv(tmp_path / "bank.csv", index=False)
    runner = CliRunner()
    with FakeOpenAIServer() as srv:
        base = ["compare", "--endpoint", srv.base_url, "--model", "a=fake", "--model", "b=fake", "--system",
                "b=Be brief.", "--bank", str(tmp_path / "bank.csv"), "--scorer", "numeric", "--batch", "12",
                "--journal", str(tmp_path / "j.sqlite"), "--api-key-env", "NO_KEY_NEEDED", "--json"]
        r = runner.invoke(app, base, env={"CI": "true", "NO_KEY_NEEDED": "x"})
        assert r.exit_code == 0, r.output
        first = r.stderr.split("journal run ")[1].split()[0]
        assert first.startswith("compare-") and "(--run-id to name it)" in r.stderr
        # within a round, each model's answers are reported as they come (every 10th and the last)
        assert "compare: a answered 3/12 of this round" in r.stderr and "a answered 12/12" in r.stderr
        sent = srv.total
        again = runner.invoke(app, base, env={"CI": "true", "NO_KEY_NEEDED": "x"})
        assert again.exit_code == 0 and f"journal run {first} " in again.stderr and srv.total == sent  # resumed
        other = runner.invoke(app, [*base, "--margin", "0.2"], env={"CI": "true", "NO_KEY_NEEDED": "x"})
        assert other.exit_code == 0, other.output  # other settings: another run, not "give another run_id"
        assert other.stderr.split("journal run ")[1].split()[0] != first
        named = runner.invoke(app, [*base, "--run-id", first, "--margin", "0.3"],
                              env={"CI": "true", "NO_KEY_NEEDED": "x"})
        assert named.exit_code == 2 and "--run-id" in named.output and "run_id=" not in named.output
    out = json.loads(r.stdout)
    assert out["scope"] == "bank" and out["outcomes"]["a"]["answered"] >= 12
