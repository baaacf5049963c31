"""Every live path against a REAL language model: SmolLM2-135M-Instruct served by llama-cpp-python on 127.0.0.1
(the ``live`` fixture of conftest.py), with Gemma 3 270M (pretrained, through /v1/completions) as the judge.

Budgets and answer lengths are small so that CI stays in minutes (12 to 16 tokens where the check does not read the
answer's content; the one server thread spends the tests' time generating them); ``make live`` runs the same
commands with real budgets (docs/live.md). A real small model answers badly and messily: these tests check that every answer is accounted
for (answered, unparseable, too long, refused), that none of that stops a run or is read as the endpoint being
down, that nothing is lost or paid twice across a kill -9, and that the numbers printed are the ones computed.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from assay.cli import app

sys.path.insert(0, str(Path(__file__).parent))
from watch import Child, journal_count, wait_for  # noqa: E402

# one worker runs every test of a real model: its llama.cpp servers (session fixtures) load once, not on each worker
# slow (make check leaves it out): a real model server
pytestmark = [pytest.mark.slow, pytest.mark.live, pytest.mark.xdist_group("live")]
runner = CliRunner()
#: the shared answers (2 per answer shape; answered and unparseable ones): the judge tests grade them with Gemma,
#: about 0.45 s a verdict on the one server thread, so 8 rather than 24 (24 cost 7 s to answer and 11 s to judge)
N_ITEMS = 8


def cli(args: list[str]):
    res = runner.invoke(app, [str(a) for a in args])
    return res


def bank_subset(tmp_path: Path, per_shape: int = 10) -> Path:
    from assay.datasets import load_basics

    b = load_basics().groupby("shape", sort=False).head(per_shape)
    path = tmp_path / "bank.csv"
    b.to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def answered(live_model, tmp_path_factory):
    """8 items of the shipped bank (2 per answer shape) asked of the real model through `assay query`."""
    d = tmp_path_factory.mktemp("live-query")
    bank = bank_subset(d, N_ITEMS // 4)
    args = ["query", bank, "--model", live_model.alias, "--endpoint", live_model.base_url, "--journal",
            d / "j.sqlite", "--run-id", "q1", "--reference-col", "reference", "--scorer", "scorer",
            "--max-tokens", "16", "--concurrency", "2", "-o", d / "answers.parquet"]
    first = cli(args)
    return d, args, first


# -- query ---------------------------------------------------------------------------------------------------


def test_query_on_the_shipped_bank_counts_every_outcome(answered):
    d, args, res = answered
    assert res.exit_code == 0, res.output
    rows = pd.read_parquet(d / "answers.parquet")
    assert len(rows) == N_ITEMS and rows["status"].notna().all()
    counts = rows["status"].value_counts().to_dict()
    # every answer is accounted for in the outcome vocabulary, and unparseable answers are scored as wrong
    assert set(counts) <= {"answered", "unparseable", "too_long", "refused"}
    assert (rows.loc[rows["status"] != "answered", "score"] == 0).all()
    acc = rows["score"].mean()
    line = next(ln for ln in res.stdout.splitlines() if ln.startswith("accuracy"))
    assert line.startswith(f"accuracy {acc:.4f} on {N_ITEMS} scored")
    n_unp = counts.get("unparseable", 0)
    assert f"{n_unp} unparseable" in line and "too long for the model" in line and "scored as wrong" in line
    # the same run again: every answer from the journal, nothing sent
    again = cli([*args, "--json"])
    assert again.exit_code == 0, again.output
    out = json.loads(again.stdout)
    assert out["stats"]["cached"] == N_ITEMS and out["stats"]["requests"] == 0
    assert out["scoring"]["accuracy"] == pytest.approx(acc)


def test_maths_answers_of_the_real_model_scored_by_value_then_audited(live_model, tmp_path):
    """`assay query --scorer math` on symbolic questions (the real model's LaTeX, cut-offs and rambling), then
    `assay audit` on its scored answers: every answer is accounted for, the sheet is drawn and read back. 32 tokens an
    answer (48 took 5.4 s, 32 took 3.1 s): the answers still ramble in LaTeX and are cut off."""
    bank = pd.DataFrame({"id": [f"m{i}" for i in range(6)],
                         "prompt": ["What is $\\frac{1}{2} + \\frac{1}{4}$? Put your final answer in \\boxed{}.",
                                    "Simplify $\\sqrt{8}$.", "What is the area of a circle with radius 1?",
                                    "Write 0.25 as a percentage.", "What are the coordinates of the origin?",
                                    "Expand $(x + 1)^2$."],
                         "reference": ["\\frac{3}{4}", "2\\sqrt{2}", "\\pi", "25\\%", "(0, 0)", "x^2 + 2x + 1"]})
    bank.to_csv(tmp_path / "bank.csv", index=False)
    res = cli(["query", tmp_path / "bank.csv", "--model", live_model.alias, "--endpoint", live_model.base_url,
               "--journal", tmp_path / "j.sqlite", "--reference-col", "reference", "--scorer", "math",
               "--max-tokens", "32", "--concurrency", "2", "-o", tmp_path / "answers.csv", "--json"])
    assert res.exit_code == 0, res.output
    sc = json.loads(res.stdout)["scoring"]
    assert sum(sc["counts"].values()) == 6 and set(k for k, v in sc["counts"].items() if v) <= {
        "answered", "unparseable", "too_long", "refused"}
    rows = pd.read_csv(tmp_path / "answers.csv", dtype={"id": str})
    assert rows["score"].notna().all() and set(rows["score"]) <= {0.0, 1.0}
    res = cli(["audit", tmp_path / "answers.csv", "--n", "4", "--seed", "1", "-o", tmp_path / "audit.csv"])
    assert res.exit_code == 0, res.output
    sheet = pd.read_csv(tmp_path / "audit.csv", dtype=str, keep_default_na=False)
    grader = dict(zip(rows["id"], rows["score"]))
    sheet["human"] = [str(int(grader[i])) for i in sheet["id"]]  # a person who agrees with the grader
    sheet.to_csv(tmp_path / "audit.csv", index=False)
    res = cli(["audit", tmp_path / "answers.csv", "--labels", tmp_path / "audit.csv", "--json"])
    assert res.exit_code == 0, res.output
    est = json.loads(res.stdout)["estimate"][0]
    assert est["n_checked"] == 4 and est["errors_seen"] == 0 and est["ci_low"] < est["ci_high"]
    assert est["raw"] == pytest.approx(rows["score"].mean())


def test_policy_missing_says_what_it_left_out(answered, tmp_path):
    d, args, _ = answered
    # its own output file: the module's answers.parquet, which later tests read, keeps the default policy's scores
    # (found by `make shuffle`, seed 19281: run first, this test left NaN scores there for the others)
    out = args.index("-o") + 1
    res = cli([*args[:out], tmp_path / "missing.parquet", *args[out + 1:], "--policy", "missing", "--json"])
    assert res.exit_code == 0, res.output
    sc = json.loads(res.stdout)["scoring"]
    n_fail = sum(v for k, v in sc["counts"].items() if k != "answered")
    assert sc["scored"] == N_ITEMS - n_fail and "left out of the accuracy" in sc["headline"]
    assert pd.read_parquet(tmp_path / "missing.parquet")["score"].isna().sum() == n_fail
    assert pd.read_parquet(d / "answers.parquet")["score"].notna().all()  # the shared answers are untouched


def test_a_prompt_too_long_for_the_model_is_its_failure_not_an_outage(live_model, tmp_path):
    from assay.models import OpenAIChatModel, run

    prompts = ["What is 2 + 2?", "word " * 3000, "Name a colour."]
    model = OpenAIChatModel(live_model.alias, base_url=live_model.base_url, max_tokens=16)
    res = run(model, prompts, journal=tmp_path / "j.sqlite", run_id="long", max_retries=3)
    long = res.responses[1]
    assert long.outcome == "too_long" and long.error is None and long.attempts == 1  # not retried
    assert "context" in long.detail.lower()
    assert res.responses[0].text and res.responses[2].text
    assert res.stats["too_long"] == 1 and res.stats["errors"] == 0 and res.stats["requests"] == 3
    # journaled as the model's answer on that item: a resumed run asks nothing again
    again = run(model, prompts, journal=tmp_path / "j.sqlite", run_id="long")
    assert again.stats["cached"] == 3 and again.stats["requests"] == 0
    assert again.responses[1].outcome == "too_long"
    # with the window known, the server's tokenizer finds it before sending
    known = OpenAIChatModel(live_model.alias, base_url=live_model.base_url, max_tokens=16, context_window=2048)
    res = run(known, prompts, max_retries=0)
    assert res.responses[1].outcome == "too_long" and res.responses[1].detail.startswith("found before sending")
    assert res.responses[0].outcome is None and res.responses[0].text


def test_bad_input_model_name_and_endpoint(live_model, tmp_path):
    bank = bank_subset(tmp_path, 1)
    res = cli(["query", bank, "--model", "no-such-model", "--endpoint", live_model.base_url,
               "--journal", tmp_path / "j.sqlite"])
    assert res.exit_code == 2 and "does not serve a model called 'no-such-model'" in res.output
    assert "smollm2" in res.output
    # an endpoint that is not OpenAI-compatible (a plain HTTP server answering HTML)
    import http.server
    import threading

    class Html(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = b"<html>hello</html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Html)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        res = cli(["query", bank, "--model", "x", "--endpoint", f"http://127.0.0.1:{srv.server_address[1]}/v1",
                   "--journal", tmp_path / "j.sqlite"])
    finally:
        srv.shutdown()
    assert res.exit_code == 2 and "not an OpenAI-compatible endpoint" in res.output


# -- scope ---------------------------------------------------------------------------------------------------


def test_scope_reasoning_gym_runs_its_whole_budget(live_model, tmp_path):
    # two batches of 3 (the first the n0 exploration): 6 answers took 2.4 s here, 12 took 6.4 s
    space = tmp_path / "space.yaml"
    space.write_text("parameters:\n  terms: {type: integer, low: 2, high: 4}\n  digits: {type: integer, low: 1, high: 2}\n")
    res = cli(["scope", "--generator", "reasoning_gym:chain_sum", "--space", space, "--endpoint", live_model.base_url,
               "--model", live_model.alias, "--budget", 6, "--batch", 3, "--n0", 3, "--certify", 0.9,
               "--max-tokens", 12, "--concurrency", 2, "--seed", 1, "--journal", tmp_path / "j.sqlite"])
    assert res.exit_code == 0, res.output
    assert "6 tickets" in res.stdout
    assert "certified at tau = 0.9" in res.stdout


# -- judge and R-AutoEval+ -------------------------------------------------------------------------------------


def test_judge_then_autoeval_on_real_labels(answered, live_judge, tmp_path):
    d, _, res = answered
    assert res.exit_code == 0
    rows = pd.read_parquet(d / "answers.parquet")
    rng = np.random.default_rng(0)
    rows["candidate"] = "smollm2"
    rows["loss_human"] = np.where(rng.random(len(rows)) < 0.5, 1.0 - rows["score"], np.nan)  # half labelled
    rows.to_parquet(tmp_path / "to_judge.parquet")
    args = ["judge", tmp_path / "to_judge.parquet", "--model", live_judge.alias, "--endpoint", live_judge.base_url,
            "--completions", "--rubric", "fewshot", "--human-col", "loss_human", "--journal", tmp_path / "j.sqlite",
            "--run-id", "judge1", "--concurrency", 2, "-o", tmp_path / "judged.csv"]
    res = cli(args)
    assert res.exit_code == 0, res.output
    lab = pd.read_csv(tmp_path / "judged.csv")
    assert len(lab) == N_ITEMS and lab["loss_judge"].between(0, 1).all()
    assert set(lab["outcome"]) <= {"answered", "unparseable", "too_long", "refused", "not sent"}
    assert (lab.loc[lab["outcome"] == "unparseable", "loss_judge"] == 1).all()
    again = cli([*args, "--json"])  # resumed: every verdict from the journal
    assert json.loads(again.stdout)["stats"]["requests"] == 0
    # R-AutoEval+ on those labels: a certificate only where the human labels alone would support it at this level
    target = 0.95
    res = cli(["autoeval", tmp_path / "judged.csv", "--risk-target", target, "--seed", 0, "--json"])
    assert res.exit_code == 0, res.output
    cand = json.loads(res.stdout)["candidates"][0]
    human_risk = float(rows["loss_human"].mean())
    if human_risk > target:
        assert not cand["certified"]
    assert cand["n"] == int(rows["loss_human"].notna().sum())


# -- PS-DME on latencies measured live ----------------------------------------------------------------------------


def test_psdme_on_live_latencies(live_model, tmp_path):
    # 4 prompts (one per answer shape) a configuration: each streamed answer costs about 0.2 s before its first token
    # on the one server thread, whatever its length (8 prompts took 7 s)
    bank = bank_subset(tmp_path, 1)
    journal = tmp_path / "j.sqlite"
    for name, max_tokens in (("short", 4), ("medium", 12), ("long", 24)):
        res = cli(["query", bank, "--model", live_model.alias, "--endpoint", live_model.base_url, "--stream",
                   "--max-tokens", max_tokens, "--journal", journal, "--run-id", name, "--concurrency", 1])
        assert res.exit_code == 0, res.output
    res = cli(["runs", "export", "short", "medium", "long", "--journal", journal, "-o", tmp_path / "lat.csv"])
    assert res.exit_code == 0, res.output
    lat = pd.read_csv(tmp_path / "lat.csv")
    assert len(lat) == 12 and (lat["ttft_s"] > 0).all() and (lat["latency_s"] >= lat["ttft_s"]).all()
    res = cli(["psdme", tmp_path / "lat.csv", "--config-col", "run_id", "--kpi-col", "latency_s", "--seed", 0,
               "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    configs = pd.DataFrame(out["configs"])
    assert sorted(configs["config"]) == ["long", "medium", "short"] and (configs["n"] == 4).all()


# -- crash safety: kill -9 in the middle of live runs, resume, nothing lost or paid twice -------------------------


def _records(journal: Path, run_id: str) -> int:
    return journal_count(journal, "SELECT COUNT(*) FROM records WHERE run_id = ? AND error IS NULL", (run_id,))


def _sent(journal: Path, run_id: str) -> int:
    return journal_count(journal, "SELECT value FROM counters WHERE run_id = ? AND name = 'requests'", (run_id,))


def _kill_midway(cmd: list[str], journal: Path, run_id: str, after: int, env: dict) -> None:
    with Child(cmd, env=env) as child:
        wait_for(lambda: _records(journal, run_id) >= after, what=f"{after} answers of {run_id} in the journal",
                 timeout=240, child=child)
        child.kill9()


def _resume_and_check(cmd: list[str], journal: Path, run_id: str, expected: int) -> dict:
    """The killed command run again to its end, in this process (the kill -9 hit the child; what resumes is the same
    command line reading the same journal, and this process has its modules loaded already)."""
    before_records, before_sent = _records(journal, run_id), _sent(journal, run_id)
    assert 0 < before_records < expected
    done = runner.invoke(app, [*cmd[3:], "--json"], env={"CI": "1"})
    assert done.exit_code == 0, done.output[-3000:]
    after_records, after_sent = _records(journal, run_id), _sent(journal, run_id)
    assert after_records == expected  # nothing lost: every distinct request has its answer
    # nothing paid twice: the resumed process sent exactly the requests whose answers were not yet journaled
    assert after_sent - before_sent == after_records - before_records
    return json.loads(done.stdout)


def test_kill_9_during_a_live_scope_run_then_resume(live_model, tmp_path):
    """A DyVal search on the real model, killed after 3 of its 6 answers (the first batch of 3) and resumed: it runs
    its whole budget, every answer is accounted for, nothing is lost or paid twice, and the result equals an
    uninterrupted run with the same seed. The model declares a 256-token window, so the DyVal space keeps the 48
    smallest templates, whose prompts fit it (at 512, 960 templates and prompts about twice as long, which the one
    server thread spent most of the test reading); 16 tokens an answer are enough for what is checked (every answer
    is accounted for, a cut-off one counts as wrong). 6 answers rather than 10: two batches still, the kill between
    or inside them."""
    journal = tmp_path / "j.sqlite"
    env = {**os.environ, "CI": "1"}
    cmd = [sys.executable, "-m", "assay.cli", "scope", "--generator", "dyval", "--endpoint", live_model.base_url,
           "--model", live_model.alias, "--budget", "6", "--batch", "3", "--n0", "3", "--certify", "0.9",
           "--context-window", "256", "--max-tokens", "16", "--concurrency", "2", "--seed", "0", "--journal",
           str(journal), "--run-id", "scope-k9"]
    _kill_midway(cmd, journal, "scope-k9", after=3, env=env)
    out = _resume_and_check(cmd, journal, "scope-k9", expected=6)
    assert out["tickets"] == 6
    ev = pd.DataFrame(out["evaluations"])
    assert len(ev) == 6 and set(ev["status"]) <= {"answered", "unparseable", "too_long", "refused"}
    # unparseable / too long answers are the model's wrong answers (utility 1), never an outage
    assert (ev.loc[ev["status"] != "answered", "utility"] == 1).all()
    assert out["n_certified"] >= 0 and out["params"]["policy"] == "wrong"
    # the resumed run equals an uninterrupted one with the same seed (same tickets, same answers from the journal)
    again = cli([*cmd[3:], "--json"])  # in this process: the answers come from the journal, nothing is asked
    assert again.exit_code == 0, again.output[-3000:]
    again = json.loads(again.stdout)
    assert again["top"] == out["top"] and again["evaluations"] == out["evaluations"]


def test_kill_9_during_a_live_judge_run_then_resume(answered, live_judge, tmp_path):
    """The judge on 6 of the real answers, killed after 3 verdicts and resumed: every verdict is in the journal once,
    none paid twice, and the labels file has every row."""
    d, _, _ = answered
    rows = pd.read_parquet(d / "answers.parquet").iloc[:6]
    rows.to_parquet(tmp_path / "to_judge.parquet")
    journal = tmp_path / "j.sqlite"
    env = {**os.environ, "CI": "1"}
    cmd = [sys.executable, "-m", "assay.cli", "judge", str(tmp_path / "to_judge.parquet"), "--model",
           live_judge.alias, "--endpoint", live_judge.base_url, "--completions", "--rubric", "fewshot", "--journal",
           str(journal), "--run-id", "judge-k9", "--concurrency", "2", "-o", str(tmp_path / "judged.csv")]
    n_sent = int(rows["text"].fillna("").str.strip().ne("").sum())
    assert n_sent > 3  # the kill comes before the end
    _kill_midway(cmd, journal, "judge-k9", after=3, env=env)
    out = _resume_and_check(cmd, journal, "judge-k9", expected=n_sent)
    assert out["stats"]["cached"] >= 3
    assert len(pd.read_csv(tmp_path / "judged.csv")) == len(rows)


def test_the_server_fixture_reports_a_dead_server(tmp_path):
    """A server that dies is reported with its exit signal and the tail of its log, not as a connection error."""
    from live_server import LiveServer, live_available, smollm2_path

    if live_available():
        pytest.skip(live_available())
    srv = LiveServer(smollm2_path(), alias="doomed").start()
    try:
        os.killpg(srv.proc.pid, signal.SIGSEGV)
        srv.proc.wait(timeout=10)
        with pytest.raises(RuntimeError, match="SIGSEGV"):
            srv.check()
    finally:
        srv.stop()
    # and the runner tells the dead server from a slow one
    from assay.models import OpenAIChatModel, run

    res = run(OpenAIChatModel("doomed", base_url=srv.base_url), ["hi"], max_retries=1, backoff_base=0.01)
    assert res.responses[0].outcome == "transport" and "nothing is listening" in res.responses[0].error


# -- FAQ: a history made of real generations, and a live run with anytime stopping -------------------------------

HISTORY = Path(__file__).parent / "fixtures" / "live_history.parquet"


def history_matrix() -> tuple[pd.DataFrame, pd.DataFrame]:
    """The recorded answers of 24 variants (21 of the served model, 3 of Gemma) on 200 items of the basics bank (``make live``),
    scored now with the current scorers: (long table model/item/score, the bank)."""
    from assay.datasets import load_basics
    from assay.models.scoring import score_rows

    answers = pd.read_parquet(HISTORY)
    bank = load_basics().set_index("id")
    b = bank.loc[answers["item"]]
    outs = score_rows(answers["text"], b["reference"], list(b["scorer"]), outcomes=answers["outcome"],
                      prompts=list(b["prompt"]))
    answers["score"] = [o.final_score for o in outs]
    return answers[["model", "item", "score"]], bank.loc[sorted(answers["item"].unique())].reset_index()


def test_faq_live_with_anytime_stopping(live_model, tmp_path):
    if not HISTORY.exists():
        pytest.fail(f"{HISTORY} is missing: `python bench/live.py --steps history --fixture` records it")
    hist, bank = history_matrix()
    assert hist["model"].nunique() >= 20 and hist["item"].nunique() >= 200
    assert hist["model"].str.startswith("gemma3").any()  # a second family
    assert hist["score"].notna().all() and 0.05 < hist["score"].mean() < 0.95  # neither all wrong nor all right
    hist.to_csv(tmp_path / "history.csv", index=False)
    bank.to_csv(tmp_path / "bank.csv", index=False)
    # 8 tokens an answer: the run stops on its width after 11 questions of the 24 (3.3 s; with 16 tokens, 16
    # questions in 7 s), its answers a mix of parsed and unparseable ones, scored as wrong
    args = ["faq", "--history", tmp_path / "history.csv", "--items", tmp_path / "bank.csv", "--endpoint",
            live_model.base_url, "--model", live_model.alias, "--scorer", "scorer", "--system", "Be concise.",
            "--max-tokens", 8, "--budget", 24, "--until-width", 0.5, "--min-queries", 8, "--seed", 0,
            "--journal", tmp_path / "j.sqlite", "--run-id", "faq1", "--json"]
    res = cli(args)
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    est = out["estimates"][0]
    assert est["ci_low"] <= est["estimate"] <= est["ci_high"]
    n = int(est["n_queries"])
    assert 8 <= n <= 24
    live = out["live"]
    assert sum(live["outcomes"].values()) == n and "scored as wrong" in live["headline"]
    again = json.loads(cli(args).stdout)  # resumed: the same questions, every answer from the journal
    assert again["live"]["requests"] == 0 and again["estimates"][0]["estimate"] == est["estimate"]


def test_a_bank_whose_prompts_are_all_too_long_is_refused(live_model, tmp_path):
    pd.DataFrame({"id": ["a", "b"], "prompt": ["word " * 3000, "token " * 2500], "reference": ["1", "2"]}).to_csv(
        tmp_path / "long.csv", index=False)
    res = cli(["query", tmp_path / "long.csv", "--model", live_model.alias, "--endpoint", live_model.base_url,
               "--journal", tmp_path / "j.sqlite", "--reference-col", "reference"])
    assert res.exit_code == 2 and "every one of the 2 prompts is too long" in res.output


def test_concurrent_streams_on_llama_cpp_are_complete_answers(live_model):
    """llama-cpp-python's server cuts all but one of concurrent streamed requests short (a role chunk, then the end):
    the runner retries them at a lower concurrency, and every answer is complete (a finish reason, a time to the
    first token), none an empty answer scored as wrong."""
    from assay.models import OpenAIChatModel, run

    m = OpenAIChatModel(live_model.alias, base_url=live_model.base_url, max_tokens=12, stream=True, api_key_env=None)
    res = run(m, ["What is 2+2?", "Name a color.", "Name a fruit.", "Say hi."], concurrency=3, backoff_base=0.05)
    assert all(r.error is None and r.finish_reason in ("stop", "length") and r.ttft_s is not None and r.text
               for r in res.responses), [r.to_dict() for r in res.responses]
    assert res.stats["min_concurrency"] < 3  # the cut streams slowed the runner down
