"""Kill a run with SIGKILL mid-way, restart it with the same run id: nothing completed is lost or re-asked.

The fake OpenAI server runs in this process (loopback only); the run happens in a child process,
which is killed with SIGKILL once the journal holds at least 15 answers, then started again with
the same run id. Afterwards: every prompt is answered, every prompt answered before the kill was
requested exactly once, only requests in flight or answered and not yet committed at the kill (at most the
concurrency) were requested twice, and the final statistics equal those of an uninterrupted run in a fresh journal.
Two speeds: slow answers (50 ms, concurrency 4) and the fast ones of a local server (5 ms, concurrency 16), where
group commits are in flight on the journal's commit thread when the kill lands.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from fake_openai_server import FakeOpenAIServer, answer_for, is_correct, question  # noqa: E402
from watch import Child, wait_for  # noqa: E402

from assay.models import Journal, OpenAIChatModel, request_key, run  # noqa: E402

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL (POSIX)")

N, CONCURRENCY, KILL_AFTER = 60, 4, 15
KEY_ENV = "ASSAY_TEST_KEY"

CHILD = r"""
import json, sys
from assay.models import OpenAIChatModel, run
base_url, db, out, n, conc = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
sys.path.insert(0, sys.argv[6])
from fake_openai_server import question
prompts = [question(i, 3 * i + 1) for i in range(n)]
model = OpenAIChatModel("fake-model", base_url=base_url, api_key_env="ASSAY_TEST_KEY", timeout=10.0)
res = run(model, prompts, journal=db, run_id="r1", concurrency=conc, seed=0, backoff_base=0.01)
with open(out, "w") as f:
    json.dump({"texts": res.texts, "cached": [r.cached for r in res.responses],
               "errors": [r.error for r in res.responses], "stats": res.stats}, f)
"""


def prompts_list(n: int = N) -> list[str]:
    return [question(i, 3 * i + 1) for i in range(n)]


def summary(prompts, texts) -> dict:
    """The run's final statistics: the answers and the accuracy scored against the rule."""
    correct = [is_correct(p, t) for p, t in zip(prompts, texts)]
    return {"texts": list(texts), "accuracy": sum(correct) / len(correct), "n": len(correct)}


def completed_keys(db: Path, keys: list[str]) -> set[int]:
    with Journal(db) as j:
        return {i for i, k in enumerate(keys) if j.get("r1", k) is not None}


def count_answers(j: Journal) -> int:
    if not j.has_run("r1"):
        return 0
    recs = j.records("r1")
    return int(recs["error"].isna().sum())


@pytest.mark.slow
@pytest.mark.parametrize(("N", "CONCURRENCY", "KILL_AFTER", "delay_s"),
                         [(N, CONCURRENCY, KILL_AFTER, 0.05), (400, 16, 100, 0.005)], ids=["slow", "fast"])
def test_sigkill_mid_run_then_resume(tmp_path, monkeypatch, N, CONCURRENCY, KILL_AFTER, delay_s):
    monkeypatch.setenv(KEY_ENV, "sk-test-secret-123")
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    db = tmp_path / "journal.sqlite"
    out = tmp_path / "out.json"
    prompts = prompts_list(N)
    env = {**os.environ, KEY_ENV: "sk-test-secret-123"}
    children: list[Child] = []

    def start(base_url: str) -> Child:
        c = Child([sys.executable, str(script), base_url, str(db), str(out), str(N), str(CONCURRENCY),
                   str(Path(__file__).parent)], env=env)
        children.append(c)
        return c

    with FakeOpenAIServer(delay_s=delay_s) as srv:  # slow: 60 prompts / 4 in flight * 0.05 s = 0.75 s of work
        try:
            model = OpenAIChatModel("fake-model", base_url=srv.base_url, api_key_env=KEY_ENV)
            keys = [request_key(model.name, p, model.params()) for p in prompts]

            # 1. start, wait for >= KILL_AFTER answers in the journal, SIGKILL
            watcher = Journal(db)  # creates the file; the child opens the same one (WAL: readers never block it)
            try:
                child = start(srv.base_url)
                wait_for(lambda: count_answers(watcher) >= KILL_AFTER, what=f"{KILL_AFTER} answers in the journal",
                         timeout=60, child=child)
            finally:
                watcher.close()
            child.kill9(timeout=10)
            assert child.proc.returncode == -signal.SIGKILL
            assert not out.exists()

            done_before = completed_keys(db, keys)
            assert KILL_AFTER <= len(done_before) < N, len(done_before)
            counts_at_kill = dict(srv.counts)
            assert all(counts_at_kill.get(prompts[i]) == 1 for i in done_before)
            # the server is done with the dead child's requests (it writes their answers to closed sockets)
            wait_for(lambda: srv.in_flight == 0, what="the server idle after the kill", timeout=30)

            # 2. restart with the same run id
            child2 = start(srv.base_url)
            assert child2.wait(timeout=60) == 0, child2.tail()
            resumed = json.loads(out.read_text())

            # every prompt answered, correctly
            assert all(e is None for e in resumed["errors"])
            assert resumed["texts"] == [answer_for(p) for p in prompts]
            # answers completed before the kill came from the journal, were never asked again
            assert {i for i, c in enumerate(resumed["cached"]) if c} == done_before
            assert resumed["stats"]["cached"] == len(done_before)
            assert resumed["stats"]["requests"] == N - len(done_before)
            for i in done_before:
                assert srv.counts[prompts[i]] == 1, prompts[i]
            # only requests in flight at the kill can have been asked twice, at most `concurrency` of them
            twice = [i for i in range(N) if srv.counts[prompts[i]] > 1]
            assert all(srv.counts[prompts[i]] == 2 for i in twice)
            assert not set(twice) & done_before and len(twice) <= CONCURRENCY
            assert all(srv.counts[p] >= 1 for p in prompts)
            assert sum(srv.counts.values()) == N + len(twice)
            with Journal(db) as j:
                assert len(j.records("r1")) == N and j.run("r1")["status"] == "done"

            # 3. an uninterrupted run with the same seed, fresh journal: same final statistics
            fresh = run(OpenAIChatModel("fake-model", base_url=srv.base_url, api_key_env=KEY_ENV, timeout=10.0),
                        prompts, journal=tmp_path / "fresh.sqlite", run_id="r1", concurrency=CONCURRENCY, seed=0)
            assert fresh.stats["cached"] == 0 and fresh.stats["errors"] == 0
            assert summary(prompts, resumed["texts"]) == summary(prompts, fresh.texts)
            assert summary(prompts, fresh.texts)["accuracy"] == 1.0
            with Journal(db) as a, Journal(tmp_path / "fresh.sqlite") as b:
                ra, rb = a.records("r1"), b.records("r1")
                assert sorted(zip(ra["key"], ra["text"])) == sorted(zip(rb["key"], rb["text"]))
                assert int(ra["completion_tokens"].sum()) == int(rb["completion_tokens"].sum())
        finally:
            for c in children:
                c.__exit__(None, None, None)
