"""The query layer keeps secrets and money safe: URL credentials, keys under any variable name, private journal files,
two processes on one run id, and the cost of thrown-away requests. All against the loopback fake server."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).parent))
from fake_openai_server import FakeOpenAIServer, question  # noqa: E402

from assay.cli import app  # noqa: E402
from assay.models import Journal, OpenAIChatModel, run  # noqa: E402
from assay.models.journal import Put  # noqa: E402
from assay.models.secrets import mask_secrets, redact_url  # noqa: E402

runner = CliRunner()
URL_KEY = "urlpassword-7Q2X"
QUERY_KEY = "querytoken-9Z4W"
PLAIN_KEY = "plainvalue-not-a-pattern-5551"  # held in a variable whose name looks like nothing secret


def test_redact_url_and_mask():
    assert redact_url(f"http://user:{URL_KEY}@host:8000/v1") == "http://host:8000/v1"
    assert redact_url(f"https://h/v1?api-key={QUERY_KEY}&x=1") == "https://h/v1?api-key=***&x=1"
    assert redact_url(f"https://h/v1?api_key={QUERY_KEY}") == "https://h/v1?api_key=***"
    assert redact_url("http://localhost:8000/v1") == "http://localhost:8000/v1"
    text = f"failed: http://bob:{URL_KEY}@h/v1 and https://h/v1?key={QUERY_KEY}"
    masked = mask_secrets(text)
    assert URL_KEY not in masked and QUERY_KEY not in masked and "***" in masked


def test_url_credentials_never_stored_or_printed(tmp_path, monkeypatch):
    monkeypatch.setenv("ASSAY_JOURNAL", str(tmp_path / "j" / "journal.sqlite"))
    with FakeOpenAIServer(retry_after=0) as srv:
        host = srv.base_url.split("://", 1)[1]
        url = f"http://alice:{URL_KEY}@{host}"
        m = OpenAIChatModel("fake", base_url=url, api_key_env=None, timeout=5.0)
        assert URL_KEY not in repr(m) and URL_KEY not in json.dumps(m.params()) and m.base_url == srv.base_url
        bank = tmp_path / "q.csv"
        pd.DataFrame({"id": [f"p{i}" for i in range(5)], "prompt": [question(i, 1) for i in range(5)]}).to_csv(bank, index=False)
        r = runner.invoke(app, ["query", str(bank), "--model", "fake", "--endpoint", url, "--api-key-env", "NO_SUCH_VAR",
                                "--json", "-o", str(tmp_path / "rows.csv")])
        assert r.exit_code == 0, r.output
        assert srv.total == 5  # the credentials reached the server (as HTTP basic auth) and the answers came back
        run_id = json.loads(r.stdout)["run_id"]
        outputs = [r.output, (tmp_path / "rows.csv").read_text()]
        for args in (["runs", "list", "--json"], ["runs", "list"], ["runs", "show", run_id, "--json"],
                     ["runs", "show", run_id], ["runs", "export", run_id, "-o", str(tmp_path / "e.jsonl")]):
            rr = runner.invoke(app, args)
            assert rr.exit_code == 0, rr.output
            outputs.append(rr.output)
        outputs.append((tmp_path / "e.jsonl").read_text())
        for text in outputs:
            assert URL_KEY not in text
        for f in (tmp_path / "j").iterdir():  # the database and its -wal / -shm companions
            assert URL_KEY.encode() not in f.read_bytes(), f.name
        # a query-string key: refused by nothing, stored nowhere
        q = OpenAIChatModel("fake", base_url=f"{srv.base_url}?api-key={QUERY_KEY}", api_key_env=None)
        assert QUERY_KEY not in repr(q) and QUERY_KEY not in json.dumps(q.params())


def test_key_under_any_variable_name_is_masked_everywhere(tmp_path, monkeypatch):
    monkeypatch.setenv("MY_LLM_CRED", PLAIN_KEY)
    monkeypatch.setenv("ASSAY_JOURNAL", str(tmp_path / "journal.sqlite"))
    with FakeOpenAIServer(retry_after=0) as srv:
        p = [question(i, 2) for i in range(4)]
        srv.plan(p[0], ["401echo"])  # the server echoes the Authorization header back in its error
        bank = tmp_path / "q.csv"
        pd.DataFrame({"prompt": p}).to_csv(bank, index=False)
        r = runner.invoke(app, ["query", str(bank), "--model", "fake", "--endpoint", srv.base_url, "--api-key-env",
                                "MY_LLM_CRED", "--max-retries", "0", "--json", "-o", str(tmp_path / "rows.jsonl")])
        assert f"Bearer {PLAIN_KEY}" in srv.auth_headers  # it was the key
        texts = [r.output, (tmp_path / "rows.jsonl").read_text()]
        run_id = json.loads(r.stdout)["run_id"]
        texts.append(runner.invoke(app, ["runs", "show", run_id, "--json"]).output)
        for t in texts:
            assert PLAIN_KEY not in t
        for f in tmp_path.iterdir():
            if f.name.startswith("journal"):
                assert PLAIN_KEY.encode() not in f.read_bytes()
        # an error message that would quote it is masked too
        from assay.errors import AssayBackendError
        from assay.cli.guard import guard

        @guard
        def boom():
            raise AssayBackendError(f"endpoint said: bad key {PLAIN_KEY}")

        import typer
        import contextlib
        import io

        err = io.StringIO()
        with contextlib.redirect_stderr(err), pytest.raises(typer.Exit):
            boom()
        assert PLAIN_KEY not in err.getvalue() and "***" in err.getvalue()


def test_journal_files_are_private(tmp_path):
    path = tmp_path / "fresh" / "deeper" / "journal.sqlite"
    old = os.umask(0o022)
    try:
        with Journal(path) as j:
            j.put("r", "k" * 8, {"prompt": "x"}, {"text": "y"})
    finally:
        os.umask(old)
    for d in (tmp_path / "fresh", tmp_path / "fresh" / "deeper"):
        assert stat.S_IMODE(d.stat().st_mode) == 0o700, d
    for f in path.parent.iterdir():
        assert stat.S_IMODE(f.stat().st_mode) == 0o600, f.name
    # an existing journal left readable by others is tightened
    loose = tmp_path / "loose.sqlite"
    with Journal(loose):
        pass
    os.chmod(loose, 0o644)
    with Journal(loose):
        pass
    assert stat.S_IMODE(loose.stat().st_mode) == 0o600


CHILD = r"""
import json, sys
from assay.models import OpenAIChatModel, run
base_url, db, out, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
sys.path.insert(0, sys.argv[5])
from fake_openai_server import question
prompts = [question(i, 7) for i in range(n)]
model = OpenAIChatModel("fake-model", base_url=base_url, api_key_env=None, timeout=10.0)
res = run(model, prompts, journal=db, run_id="shared", concurrency=8, seed=0, backoff_base=0.01)
with open(out, "w") as f:
    json.dump({"errors": [r.error for r in res.responses], "cached": sum(r.cached for r in res.responses),
               "stats": res.stats}, f)
"""


@pytest.mark.slow
def test_two_processes_on_one_run_never_pay_twice(tmp_path):
    n = 300
    with FakeOpenAIServer(retry_after=0) as srv:
        srv.delay_s = 0.01
        db = tmp_path / "j.sqlite"
        procs = []
        for k in range(2):
            procs.append(subprocess.Popen([sys.executable, "-c", CHILD, srv.base_url, str(db), str(tmp_path / f"o{k}.json"),
                                           str(n), str(Path(__file__).parent)], stderr=subprocess.PIPE))
            time.sleep(0.2)
        for p in procs:
            _, err = p.communicate(timeout=300)
            assert p.returncode == 0, err.decode()[-2000:]
        outs = [json.loads((tmp_path / f"o{k}.json").read_text()) for k in range(2)]
        assert all(e is None for o in outs for e in o["errors"])
        # every prompt paid for at most once, apart from what was in flight when a lease changed hands (none here)
        assert srv.total <= n + 2 * 8
        assert srv.total >= n
        assert sum(o["stats"]["requests"] for o in outs) == srv.total
        assert max(srv.counts.values()) == 1  # no prompt asked twice
        assert sum(o["stats"]["waited_for_other_process"] for o in outs) > 0  # they did meet
        with Journal(db) as j:
            assert j.counters("shared")["requests"] == srv.total


def test_cost_of_thrown_away_requests_is_shown(tmp_path):
    with FakeOpenAIServer(retry_after=0) as srv:
        srv.slow_s = 1.0
        p = [question(i, 5) for i in range(6)]
        srv.plan(p[0], ["slow", "ok"])
        srv.plan(p[1], ["slow", "slow", "ok"])
        db = tmp_path / "j.sqlite"
        m = OpenAIChatModel("fake", base_url=srv.base_url, api_key_env=None, timeout=0.3)
        res = run(m, p, journal=db, run_id="cost", backoff_base=0.01, backoff_max=0.02)
        assert all(r.error is None for r in res.responses)
        with Journal(db) as j:
            c = j.counters("cost")
            s = j.run("cost")
        assert c["requests"] == 9 and c["timeouts"] == 3
        assert s["requests_sent"] == 9 and s["thrown_away_timeouts"] == 3 and s["thrown_away_duplicates"] == 0
        r = runner.invoke(app, ["runs", "show", "cost", "--journal", str(db)])
        assert r.exit_code == 0 and "requests sent" in r.output and "3 timed out" in r.output
        # a duplicate answer (another process answered first) is counted, never stored over the first
        with Journal(db) as j:
            key = j.records("cost")["key"].iloc[0]
            assert j.batch([Put("cost", key, {"prompt": "x"}, {"text": "late"})]) == ["duplicate"]
            assert j.counters("cost")["duplicates"] == 1
            assert j.get("cost", key)["text"] != "late"
