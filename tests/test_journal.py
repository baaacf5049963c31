"""The request journal: round trips, first answer wins, resume, secrets, WAL, SIGKILL, concurrency, CLI."""

from __future__ import annotations

import json
import queue
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from assay.errors import AssayInputError
from assay.cli.runs import runs_app
from assay.models.journal import (DEFAULT_PATH, RECORD_COLUMNS, Bump, Claim, Finish, Journal, Put, Release,
                                  default_path, request_key)

runner = CliRunner()
SRC = str(Path(__file__).resolve().parents[1] / "src")


def req(i: int, model: str = "m", **params) -> tuple[str, dict, dict]:
    params = {"temperature": 0.0, "max_tokens": 16, **params}
    prompt = f"question {i}"
    key = request_key(model, prompt, params)
    request = {"model": model, "prompt": prompt, "params": params}
    response = {"text": f"answer {i}", "finish_reason": "stop", "latency_s": 0.1 * (i + 1),
                "usage": {"prompt_tokens": 10 + i, "completion_tokens": 2}}
    return key, request, response


@pytest.fixture
def jpath(tmp_path: Path) -> Path:
    return tmp_path / "journal.sqlite"


def db_bytes(path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in path.parent.glob(path.name + "*") if p.is_file())


def test_put_get_round_trip(jpath):
    with Journal(jpath) as j:
        run = j.start_run(meta={"purpose": "test"})
        assert len(run.split("-")) == 3 and len(run.split("-")[2]) == 6
        key, request, response = req(0)
        assert j.get(run, key) is None
        j.put(run, key, request, response)
        assert j.get(run, key) == response
        assert j.get("other-run", key) is None
        assert j.lookup_any(key) == response
        assert j.lookup_any("0" * 64) is None


def test_first_answer_wins_and_errors_are_retryable(jpath):
    with Journal(jpath) as j:
        run = j.start_run("r")
        key, request, response = req(1)
        j.put(run, key, request, response)
        j.put(run, key, request, {"text": "a different, later answer"})
        assert j.get(run, key)["text"] == "answer 1"
        # an error is recorded but is not a completed answer: get ignores it, a later answer replaces it
        k2, r2, resp2 = req(2)
        j.put(run, k2, r2, {"error": "timeout after 30 s"})
        assert j.get(run, k2) is None and j.lookup_any(k2) is None
        assert j.runs()[0]["n_errors"] == 1
        j.put(run, k2, r2, resp2)
        assert j.get(run, k2) == resp2
        j.put(run, k2, r2, {"error": "late error"})
        assert j.get(run, k2) == resp2
        assert j.runs()[0]["n_errors"] == 0


def test_operations_are_typed_and_put_is_a_one_operation_batch(jpath):
    """put says what a batch's Put says; a Finish releases its owner's claim only for an error and adds its counters;
    a Claim on an answered key is "done"; anything but an operation object is refused by name."""
    with Journal(jpath) as j:
        key, request, response = req(1)
        assert j.put("r", key, request, response) == "stored"
        assert j.put("r", key, request, {"text": "later"}) == "duplicate"
        k2, r2, _ = req(2)
        assert j.batch([Claim("r", k2, "me:1:a", 60.0), Claim("r", key, "me:1:a", 60.0)]) == ["claimed", "done"]
        assert j.batch([Claim("r", k2, "other:2:b", 60.0)]) == ["busy"]
        # an error: stored for the record, counted, and the claim released for the next asker
        assert j.batch([Finish("r", k2, r2, {"error": "timeout"}, {"requests": 2, "timeouts": 1}, "me:1:a")]) == [
            "stored"]
        assert j.batch([Claim("r", k2, "other:2:b", 60.0)]) == ["claimed"]
        j.batch([Release("r", k2, "other:2:b"), Bump("r", {"requests": 1})])
        assert j.batch([Claim("r", k2, "third:3:c", 60.0)]) == ["claimed"]
        assert j.counters("r") == {"duplicates": 1, "requests": 3, "timeouts": 1}
        with pytest.raises(AssayInputError, match="unknown journal operation .*Put, Finish"):
            j.batch([("put", "r", key, request, response)])


def test_resume_by_id_keeps_records(jpath):
    with Journal(jpath) as j:
        run = j.start_run(meta={"a": 1})
        for i in range(3):
            j.put(run, *req(i))
        j.finish_run(run, "interrupted")
    with Journal(jpath) as j:
        assert j.start_run(run, meta={"b": 2}) == run
        assert len(j.records(run)) == 3
        info = {r["run_id"]: r for r in j.runs()}[run]
        assert info["status"] == "running" and info["meta"] == {"a": 1, "b": 2}
        key, request, response = req(1)
        assert j.get(run, key) == response
        new = j.start_run()
        assert new != run and len(j.records(new)) == 0


def test_request_key_canonical():
    a = request_key("m", "p", {"temperature": 0.5, "max_tokens": 10})
    assert a == request_key("m", "p", {"max_tokens": 10, "temperature": 0.5})
    assert len(a) == 64 and int(a, 16) >= 0
    assert a != request_key("m", "p", {"temperature": 0.6, "max_tokens": 10})
    assert a != request_key("m", "p", {"temperature": 0.5, "max_tokens": 11})
    assert a != request_key("m", "q", {"temperature": 0.5, "max_tokens": 10})
    assert a != request_key("m2", "p", {"temperature": 0.5, "max_tokens": 10})
    # secrets do not change the key; nested chat prompts hash in key order too
    assert a == request_key("m", "p", {"temperature": 0.5, "max_tokens": 10, "api_key": "sk-1", "Authorization": "x"})
    msgs1 = [{"role": "user", "content": "hi"}]
    msgs2 = [{"content": "hi", "role": "user"}]
    assert request_key("m", msgs1, {}) == request_key("m", msgs2, {})
    assert request_key("m", "p", {}) == request_key("m", "p", None)


def test_secrets_never_reach_the_file(jpath, monkeypatch):
    env_secret = "envsecret-0123456789abcdef"
    monkeypatch.setenv("ASSAY_API_KEY", env_secret)
    with Journal(jpath) as j:
        run = j.start_run(meta={"api_key": "sk-secret", "headers": {"Authorization": "Bearer sk-secret"}, "x": 1})
        key, request, response = req(0, api_key="sk-secret", token="sk-secret")
        request["headers"] = {"Authorization": "Bearer sk-secret", "X-Api-Key": "sk-secret"}
        request["note"] = f"called with {env_secret}"
        j.put(run, key, request, response)
        j.put(run, "k-err", request, {"error": f"401 for key {env_secret}"})
        blob = db_bytes(jpath)
        assert jpath.with_name(jpath.name + "-wal").exists()
        assert b"sk-secret" not in blob and env_secret.encode() not in blob
        stored = j.records(run)
        assert "max_tokens" in stored["params"][0] and "api_key" not in stored["request"][0]
    blob = db_bytes(jpath)
    assert b"sk-secret" not in blob and env_secret.encode() not in blob
    assert b"question 0" in blob  # the search would have seen the data


def test_wal_mode_on(jpath):
    Journal(jpath).close()
    con = sqlite3.connect(jpath)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"runs", "records"} <= tables
    con.close()
    with Journal(jpath) as j:
        assert j.conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL


CHILD = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {src!r})
    from assay.models.journal import Journal
    j = Journal({path!r})
    run = j.start_run("killed")
    for i in range({n}):
        j.put(run, f"k{{i}}", {{"prompt": f"q{{i}}"}}, {{"text": f"a{{i}}"}})
        print(i, flush=True)
    print("done", flush=True)
    time.sleep(120)
""")


class _Lines:
    """Lines of a child's stdout via a reader thread (select() misses lines already in Python's buffer)."""

    def __init__(self, child) -> None:
        self.child = child
        self.q: queue.Queue = queue.Queue()
        threading.Thread(target=self._pump, args=(child.proc.stdout,), daemon=True).start()

    def _pump(self, stream) -> None:
        for line in stream:
            self.q.put(line.decode(errors="replace").strip())
        self.q.put(None)

    def next(self, deadline: float) -> str:
        try:
            line = self.q.get(timeout=max(0.01, deadline - time.monotonic()))
        except queue.Empty:
            raise AssertionError(f"timed out waiting for the child; its stderr:\n{self.child.tail()}") from None
        if line is None:
            self.child.proc.wait(timeout=10)
            raise AssertionError(f"child exited early ({self.child.poll()}); its stderr:\n{self.child.tail()}")
        return line


def _spawn(path: Path, n: int):
    from watch import Child

    return Child([sys.executable, "-c", CHILD.format(src=SRC, path=str(path), n=n)], stdout=subprocess.PIPE)


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_put_survives_sigkill(jpath):
    with _spawn(jpath, 50) as child:
        deadline, lines = time.monotonic() + 60, _Lines(child)
        while lines.next(deadline) != "done":
            pass
        child.kill9(timeout=10)
        assert child.proc.returncode == -signal.SIGKILL
    with Journal(jpath) as j:
        df = j.records("killed")
        assert len(df) == 50 and set(df["key"]) == {f"k{i}" for i in range(50)}
        assert j.get("killed", "k49") == {"text": "a49"}


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_sigkill_mid_run_loses_no_acknowledged_answer(jpath):
    with _spawn(jpath, 100_000) as child:
        deadline, lines = time.monotonic() + 60, _Lines(child)
        last = -1
        while last < 30:
            last = int(lines.next(deadline))
        child.kill9(timeout=10)
    with Journal(jpath) as j:
        keys = set(j.records("killed")["key"])
        assert {f"k{i}" for i in range(last + 1)} <= keys


def test_two_writers_threads_do_not_lose_records(jpath):
    Journal(jpath).close()
    errors: list[BaseException] = []

    def write(tag: str) -> None:
        try:
            with Journal(jpath) as j:
                for i in range(100):
                    j.put("shared", f"{tag}{i}", {"prompt": i}, {"text": str(i)})
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(t,)) for t in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors
    with Journal(jpath) as j:
        assert len(j.records("shared")) == 200


def test_two_writer_processes_do_not_lose_records(jpath):
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {SRC!r})
        from assay.models.journal import Journal
        tag = sys.argv[1]
        with Journal({str(jpath)!r}) as j:
            for i in range(100):
                j.put("shared", f"{{tag}}{{i}}", {{"prompt": i}}, {{"text": str(i)}})
    """)
    procs = [subprocess.Popen([sys.executable, "-c", code, tag], stderr=subprocess.PIPE, text=True) for tag in "abcd"]
    for p in procs:
        _, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
    with Journal(jpath) as j:
        df = j.records("shared")
        assert len(df) == 400 and df["key"].is_unique


def test_same_journal_shared_by_threads(jpath):
    with Journal(jpath) as j:
        run = j.start_run()

        def write(off: int) -> None:
            for i in range(50):
                j.put(run, f"k{off + i}", {"prompt": i}, {"text": "x"})

        threads = [threading.Thread(target=write, args=(k * 1000,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert len(j.records(run)) == 200


def test_runs_counts_and_records_frame(jpath):
    with Journal(jpath) as j:
        r1 = j.start_run("r1", meta={"model": "m"})
        for i in range(4):
            j.put(r1, *req(i))
        j.put(r1, "bad", {"model": "m", "prompt": "boom"}, {"error": {"code": 500}, "latency_s": 1.5})
        r2 = j.start_run("r2")
        j.finish_run(r1)
        runs = {r["run_id"]: r for r in j.runs()}
        assert set(runs) == {r1, r2}
        assert runs[r1]["n_records"] == 5 and runs[r1]["n_errors"] == 1 and runs[r1]["status"] == "done"
        assert runs[r1]["tokens"] == sum(10 + i + 2 for i in range(4))
        assert runs[r2]["n_records"] == 0 and runs[r2]["tokens"] == 0
        df = j.records(r1)
        assert list(df.columns) == RECORD_COLUMNS
        assert list(df["prompt"][:4]) == [f"question {i}" for i in range(4)]
        assert list(df["text"][:4]) == [f"answer {i}" for i in range(4)]
        assert df["finish_reason"][0] == "stop" and df["model"][0] == "m"
        assert df["total_tokens"][1] == 13 and pd.isna(df["total_tokens"][4])
        assert df["latency_s"][4] == 1.5 and json.loads(df["error"][4]) == {"code": 500}
        assert pd.isna(df["error"][0]) and pd.isna(df["text"][4])
        assert j.records(r2).empty and list(j.records(r2).columns) == RECORD_COLUMNS


def test_chat_shaped_response(jpath):
    with Journal(jpath) as j:
        msgs = [{"role": "user", "content": "2+2?"}]
        resp = {"choices": [{"message": {"role": "assistant", "content": "4"}, "finish_reason": "length"}],
                "usage": {"prompt_tokens": 5, "completion_tokens": 1}}
        j.put("c", request_key("m", msgs, {}), {"model": "m", "messages": msgs, "params": {}}, resp)
        df = j.records("c")
        assert df["text"][0] == "4" and df["finish_reason"][0] == "length" and "2+2?" in df["prompt"][0]


def test_unknown_run_and_bad_files(jpath, tmp_path):
    with Journal(jpath) as j:
        j.start_run("alpha")
        with pytest.raises(AssayInputError, match=r"unknown run id 'nope'.*alpha"):
            j.records("nope")
        with pytest.raises(AssayInputError, match="nope"):
            j.finish_run("nope")
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(b"this is not a database at all, just some bytes " * 100)
    with pytest.raises(AssayInputError, match="bad.sqlite"):
        Journal(bad)
    with pytest.raises(AssayInputError, match="folder"):
        Journal(tmp_path)


def test_default_path(monkeypatch, tmp_path):
    assert isinstance(DEFAULT_PATH, Path)
    monkeypatch.setenv("ASSAY_JOURNAL", str(tmp_path / "sub" / "j.sqlite"))
    assert default_path() == tmp_path / "sub" / "j.sqlite"
    with Journal() as j:
        assert j.path == tmp_path / "sub" / "j.sqlite" and j.path.exists()
    monkeypatch.delenv("ASSAY_JOURNAL")
    assert default_path() == Path.home() / ".cache" / "assay" / "journal.sqlite"


# -- CLI -------------------------------------------------------------------------------------------------


@pytest.fixture
def filled(jpath) -> Path:
    with Journal(jpath) as j:
        j.start_run("run-1", meta={"model": "m"})
        for i in range(12):
            j.put("run-1", *req(i))
        j.put("run-1", "bad", {"model": "m", "prompt": "boom"}, {"error": "HTTP 500"})
        j.finish_run("run-1")
        j.start_run("run-2")
    return jpath


def test_cli_list(filled):
    res = runner.invoke(runs_app, ["list", "--journal", str(filled)])
    assert res.exit_code == 0, res.output
    assert "run-1" in res.stdout and "run-2" in res.stdout and "records" in res.stdout
    res = runner.invoke(runs_app, ["list", "--journal", str(filled), "--json"])
    assert res.exit_code == 0, res.output
    runs = {r["run_id"]: r for r in json.loads(res.stdout)}
    assert runs["run-1"]["n_records"] == 13 and runs["run-1"]["n_errors"] == 1 and runs["run-2"]["n_records"] == 0


def test_cli_list_missing_journal(tmp_path):
    res = runner.invoke(runs_app, ["list", "--journal", str(tmp_path / "none.sqlite"), "--json"])
    assert res.exit_code == 0 and json.loads(res.stdout) == []
    assert not (tmp_path / "none.sqlite").exists()


def test_cli_show(filled):
    res = runner.invoke(runs_app, ["show", "run-1", "--journal", str(filled)])
    assert res.exit_code == 0, res.output
    assert "question 0" in res.stdout and "answer 0" in res.stdout and "First 10 of 13" in res.stdout
    res = runner.invoke(runs_app, ["show", "run-1", "--journal", str(filled), "--json", "--rows", "3"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["run"]["n_records"] == 13 and out["run"]["models"] == ["m"] and len(out["records"]) == 3
    assert out["records"][0]["text"] == "answer 0"


@pytest.mark.parametrize("fmt", ["parquet", "csv", "jsonl"])
def test_cli_export(filled, tmp_path, fmt):
    out = tmp_path / f"out.{fmt}"
    res = runner.invoke(runs_app, ["export", "run-1", "--format", fmt, "-o", str(out), "--journal", str(filled)])
    assert res.exit_code == 0, res.output
    df = {"parquet": pd.read_parquet, "csv": pd.read_csv,
          "jsonl": lambda p: pd.read_json(p, lines=True)}[fmt](out)
    # the records' columns, then each answer's question id, score, extracted answer and scorer (no bank here:
    # unscored, the outcome column says so)
    assert len(df) == 13 and list(df.columns) == [*RECORD_COLUMNS, "id", "score", "extracted", "scorer"]
    assert set(df["outcome"]) <= {"unscored", "timeout", "transport", "refused", "too_long"}
    assert df["text"][0] == "answer 0" and df["prompt_tokens"][3] == 13
    assert json.loads(df["response"][0])["text"] == "answer 0"


def test_cli_unknown_run_exit_2(filled, tmp_path):
    for cmd in (["show", "nope"], ["export", "nope", "-o", str(tmp_path / "x.parquet")]):
        res = runner.invoke(runs_app, [*cmd, "--journal", str(filled)])
        assert res.exit_code == 2
        assert res.stderr.startswith("error:") and "nope" in res.stderr and "run-1" in res.stderr
        assert "Traceback" not in res.output
    res = runner.invoke(runs_app, ["show", "run-1", "--journal", str(tmp_path / "missing.sqlite")])
    assert res.exit_code == 2 and "no journal" in res.stderr
    res = runner.invoke(runs_app, ["export", "run-1", "--format", "xlsx", "-o", str(tmp_path / "x"),
                                   "--journal", str(filled)])
    assert res.exit_code == 2 and "xlsx" in res.stderr
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(b"garbage" * 1000)
    res = runner.invoke(runs_app, ["list", "--journal", str(bad)])
    assert res.exit_code == 2 and "bad.sqlite" in res.stderr
