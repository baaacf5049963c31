"""The Model interface, the OpenAI adapter and the runner, against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import email.utils
import logging
import pickle
import sys
import threading
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from fake_openai_server import FakeOpenAIServer, answer_for, is_correct, question  # noqa: E402

from assay.errors import AssayInputError  # noqa: E402
from assay.models import (  # noqa: E402
    CallableModel, Journal, Model, OpenAIChatModel, Response, RetryableError, RunResult, request_key, run, run_prompts,
)
from assay.models.openai_model import OpenAICompletionModel, parse_retry_after  # noqa: E402
from assay.models.runner import AdaptiveLimiter, RateLimiter  # noqa: E402

KEY_ENV = "ASSAY_TEST_KEY"
SECRET = "sk-test-secret-123"
FAST = dict(backoff_base=0.01, backoff_max=0.05)  # tiny backoff: tests stay fast


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)
    return SECRET


@pytest.fixture
def server():
    with FakeOpenAIServer(retry_after=0) as srv:
        yield srv


def model_for(srv, **kw) -> OpenAIChatModel:
    kw.setdefault("timeout", 5.0)
    return OpenAIChatModel("fake-model", base_url=srv.base_url, api_key_env=KEY_ENV, **kw)


# -- Response / protocol -------------------------------------------------------------------------

def test_response_round_trip_and_protocol(key, server):
    r = Response("hi", 0.5, 3, 1, "stop", None, attempts=2, cached=True)
    assert Response.from_dict(r.to_dict()) == r
    assert Response.from_dict({"text": "x", "latency_s": 1.0, "unknown": 1}).text == "x"
    assert isinstance(model_for(server), Model)
    assert isinstance(CallableModel(lambda p: p), Model)


def test_basic_answers_usage_latency(key, server):
    prompts = [question(i, 2 * i) for i in range(12)]
    res = run(model_for(server), prompts, concurrency=4)
    assert isinstance(res, RunResult) and len(res) == 12
    assert res.texts == [answer_for(p) for p in prompts]  # input order
    for r in res.responses:
        assert r.error is None and r.finish_reason == "stop" and r.attempts == 1 and not r.cached
        assert r.prompt_tokens == 5 and r.completion_tokens == 4 and 0 < r.latency_s < 5
    assert res.stats["done"] == 12 and res.stats["requests"] == 12 and res.stats["prompt_tokens"] == 60
    assert res.run_id


def test_chat_messages_system_prompt_and_params(key, server):
    m = model_for(server, system_prompt="be brief", seed=7, stop=["\n\n"], max_tokens=32,
                  extra_body={"top_k": 5})
    msgs = [{"role": "system", "content": "x"}, {"role": "user", "content": question(1, 1)}]
    res = run(m, [msgs, question(2, 2)])
    assert res.texts == [answer_for(question(1, 1)), answer_for(question(2, 2))]
    assert m.messages("q")[0] == {"role": "system", "content": "be brief"}
    p = m.params()
    assert p["seed"] == 7 and p["stop"] == ["\n\n"] and p["extra_body"] == {"top_k": 5}
    assert p["base_url"] == server.base_url and p["max_tokens"] == 32
    with pytest.raises(AssayInputError):
        m.messages(42)


def test_request_body_key_and_extra_body_reach_the_server(key, server):
    """The runner posts its own body through the SDK's client (not ``create``): the server still gets the key as a
    bearer token and every parameter, with ``extra_body`` merged over the body as the SDK merges it."""
    m = model_for(server, seed=3, max_tokens=16, stop=["\n\n"], extra_body={"top_k": 5, "temperature": 0.7})
    res = run(m, [question(4, 4)])
    assert res.texts == [answer_for(question(4, 4))]
    assert server.auth_headers == {f"Bearer {SECRET}"}
    assert server.last_body == {"model": "fake-model", "messages": [{"role": "user", "content": question(4, 4)}],
                                "temperature": 0.7, "max_tokens": 16, "seed": 3, "stop": ["\n\n"], "top_k": 5}


def test_clients_on_many_event_loops_load_the_ca_bundle_once(key, server, monkeypatch):
    """A client is made per event loop (FAQ's live querying runs a loop per question); they share the process's one
    TLS context, so the CA bundle (about 50 ms to load) is read once, not once per loop. Each loop's run still
    answers."""
    import ssl

    from assay.models import openai_model

    loads = []
    real = ssl.SSLContext.load_verify_locations

    def counted(self, *args, **kwargs):
        loads.append(1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", counted)
    monkeypatch.setattr(openai_model, "_TLS_CONTEXT", None)
    m = model_for(server)
    for i in range(4):
        assert run(m, [question(i, 1)]).texts == [answer_for(question(i, 1))]
    assert len(m._clients) <= 1 and len(loads) == 1


def test_completion_model_against_the_completions_path(key, server):
    m = OpenAICompletionModel("fake-model", base_url=server.base_url, api_key_env=KEY_ENV, timeout=5.0,
                              system_prompt="Sum.", stop=["\n"], max_tokens=8)
    res = run(m, [question(2, 5), question(3, 3)])
    assert res.texts == [answer_for(question(2, 5)), answer_for(question(3, 3))]
    assert res.responses[0].finish_reason == "stop" and res.responses[0].completion_tokens == 4
    # the two requests run concurrently: either may be the last the server saw
    assert server.last_body["prompt"] in {"Sum.\n\n" + question(2, 5), "Sum.\n\n" + question(3, 3)}
    assert server.last_body["stop"] == ["\n"] and server.last_body["max_tokens"] == 8


@pytest.mark.parametrize("reply, what", [
    ({"choices": []}, "no choices"), ([1, 2], "no choices"), ({"choices": [{"message": None}]}, "without a message"),
    ({"choices": [{"message": {"content": ["a", "b"]}}]}, "content is list"),
    ({"choices": ["text"]}, "no choices")])
def test_a_reply_of_another_shape_is_malformed(reply, what):
    m = OpenAIChatModel("m", base_url="http://127.0.0.1:9/v1", api_key_env=None)
    with pytest.raises(RetryableError, match=what):
        m._to_response(reply, 0.1)


def test_reply_fields_are_read_by_type():
    m = OpenAIChatModel("m", base_url="http://127.0.0.1:9/v1", api_key_env=None)
    r = m._to_response({"choices": [{"message": {"content": None}, "finish_reason": 3}],
                        "usage": {"prompt_tokens": True, "completion_tokens": 5}}, 0.1)
    assert r.text == "" and r.finish_reason is None and r.prompt_tokens is None and r.completion_tokens == 5
    r = m._to_response({"choices": [{"message": {"content": "", "refusal": "no"}, "finish_reason": "stop"}]}, 0.1)
    assert r.text is None and r.outcome == "refused" and r.detail == "refusal: no"


# -- failure modes ---------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["429", "503", "500", "malformed", "noshape", "drop"])
def test_failure_mode_is_retried_then_answered(key, server, mode):
    prompts = [question(i, 1) for i in range(6)]
    server.plan(prompts[2], [mode, mode])
    res = run(model_for(server), prompts, concurrency=3, **FAST)
    assert [is_correct(p, r.text) for p, r in zip(prompts, res.responses)] == [True] * 6
    assert res.responses[2].attempts == 3 and server.counts[prompts[2]] == 3
    assert res.stats["retries"] == 2 and res.stats["errors"] == 0
    assert all(server.counts[p] == 1 for k, p in enumerate(prompts) if k != 2)


def test_retries_exhausted_records_error_and_resume_asks_again(key, server, tmp_path):
    prompts = [question(1, 2), question(3, 4)]
    server.plan(prompts[0], ["503"] * 3)
    db = tmp_path / "j.sqlite"
    res = run(model_for(server), prompts, max_retries=2, journal=db, run_id="r", **FAST)
    bad = res.responses[0]
    assert bad.text is None and "gave up after 3 attempts" in bad.error and "503" in bad.error
    assert server.counts[prompts[0]] == 3 and res.stats["errors"] == 1
    m = model_for(server)
    with Journal(db) as j:
        assert j.get("r", request_key(m.name, prompts[0], m.params())) is None  # an error is not an answer
        assert j.get("r", request_key(m.name, prompts[1], m.params())) is not None
    again = run(m, prompts, journal=db, run_id="r", **FAST)
    assert again.texts == [answer_for(p) for p in prompts]
    assert again.responses[1].cached and not again.responses[0].cached
    assert server.counts[prompts[0]] == 4 and server.counts[prompts[1]] == 1


def test_permanent_4xx_is_not_retried(key, server):
    p = question(5, 5)
    server.plan(p, ["400"])
    res = run(model_for(server), [p], **FAST)
    assert res.responses[0].error.startswith("HTTP 400") and res.responses[0].text is None
    assert server.counts[p] == 1 and res.stats["retries"] == 0 and res.stats["errors"] == 1


def test_retry_after_is_honoured(key, server):
    server.retry_after = 1
    p = question(2, 3)
    server.plan(p, ["429"])
    t0 = time.perf_counter()
    res = run(model_for(server), [p], backoff_base=0.0, backoff_max=0.0)
    elapsed = time.perf_counter() - t0
    assert is_correct(p, res.texts[0]) and res.stats["throttled"] == 1
    assert 1.0 <= elapsed < 4.0


def test_parse_retry_after_forms():
    assert parse_retry_after({"retry-after": "3"}) == 3.0
    assert parse_retry_after({"retry-after": "0.5"}) == 0.5
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    now = time.time()
    date = email.utils.formatdate(now + 30, usegmt=True)
    assert 28 <= parse_retry_after({"retry-after": date}, now=now) <= 31
    assert parse_retry_after({"retry-after": email.utils.formatdate(now - 30, usegmt=True)}, now=now) == 0.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None and parse_retry_after(None) is None


def test_slow_response_times_out_and_is_retried(key, server):
    server.slow_s = 3.0
    p = question(7, 8)
    server.plan(p, ["slow"])
    t0 = time.perf_counter()
    # timeout 1 s: the fast second answer must not time out too when the machine is loaded (at 0.3 s a loaded CI
    # run saw a third attempt); the slow first answer (3 s) still does
    res = run(model_for(server, timeout=1.0), [p], **FAST)
    assert is_correct(p, res.texts[0]) and res.responses[0].attempts == 2
    assert res.stats["timeouts"] == 1 and time.perf_counter() - t0 < 2.5


def test_runner_timeout_on_a_callable():
    calls = {"n": 0}

    async def slow_then_fast(prompt):
        calls["n"] += 1
        if calls["n"] == 1:
            await asyncio.sleep(5)
        return prompt.upper()

    t0 = time.perf_counter()
    res = run(CallableModel(slow_then_fast, name="s"), ["abc"], timeout=0.2, **FAST)
    assert res.texts == ["ABC"] and res.stats["timeouts"] == 1 and time.perf_counter() - t0 < 2


def test_timeouts_exhausted_give_error(key, server):
    server.slow_s = 2.0
    p = question(1, 1)
    server.plan(p, ["slow"] * 2)
    res = run(model_for(server, timeout=0.2), [p], max_retries=1, **FAST)
    assert res.responses[0].error and "timed out" in res.responses[0].error


# -- concurrency, rate, adaptivity ----------------------------------------------------------------

def test_500_concurrent_requests_respect_the_cap(key):
    cap = 32
    prompts = [question(i, i + 1) for i in range(500)]
    with FakeOpenAIServer(delay_s=0.03) as srv:
        seen = []
        res = run(model_for(srv), prompts, concurrency=cap, progress=lambda s: seen.append(s["max_in_flight"]))
        assert res.texts == [answer_for(p) for p in prompts]
        assert srv.total == 500 and set(srv.counts.values()) == {1}
        assert srv.max_in_flight <= cap and res.stats["max_in_flight"] <= cap
        assert res.stats["max_in_flight"] == cap and srv.max_in_flight >= 8  # it really ran concurrently
        assert max(seen) <= cap and res.stats["done"] == 500


def test_rpm_limiter_bounds_the_rate(key, server):
    prompts = [question(i, 0) for i in range(7)]
    t0 = time.perf_counter()
    res = run(model_for(server), prompts, concurrency=7, rpm=600)  # one request every 0.1 s
    elapsed = time.perf_counter() - t0
    assert all(r.error is None for r in res.responses)
    assert 0.55 <= elapsed < 3.0


def test_rate_limiter_unit():
    async def go():
        rl = RateLimiter(rpm=1200, burst=3)  # 0.05 s apart after a burst of 3
        stamps = []
        for _ in range(7):
            await rl.acquire()
            stamps.append(time.monotonic())
        return stamps

    s = asyncio.run(go())
    assert s[2] - s[0] < 0.03
    assert s[-1] - s[0] >= 4 * 0.05 - 0.01


def test_adaptive_limiter_halves_once_per_round_and_recovers():
    async def go():
        lim = AdaptiveLimiter(8, recover_after=2)
        epochs = [await lim.acquire() for _ in range(8)]
        for e in epochs:  # a whole round of 429s halves once, not 8 times
            await lim.release(e, "throttled")
        assert lim.limit == 4 and lim.in_flight == 0
        e = await lim.acquire()
        await lim.release(e, "throttled")
        assert lim.limit == 2
        for _ in range(20):
            e = await lim.acquire()
            await lim.release(e, "ok")
        assert lim.limit == 8 and lim.min_limit == 2
        for _ in range(5):
            e = await lim.acquire()
            await lim.release(e, "throttled")
        assert lim.limit == 1  # never below 1

    asyncio.run(go())


def test_adaptive_concurrency_against_the_server(key):
    prompts = [question(i, 3) for i in range(80)]
    with FakeOpenAIServer(delay_s=0.005, retry_after=0) as srv:
        srv.plan_next(["429"] * 8)  # the first round is throttled
        res = run(model_for(srv), prompts, concurrency=8, recover_after=2, **FAST)
        assert res.texts == [answer_for(p) for p in prompts]
        assert res.stats["throttled"] == 8 and res.stats["retries"] == 8
        # halved once per round of concurrent requests: all 8 were in flight together, so once (4); on a loaded
        # machine a fast-jittered retry can reach the server before the last first-round request does and take one
        # of the 429s meant for that round, which is a second round (2). Never more, never no halving.
        assert res.stats["min_concurrency"] in (4, 2)
        assert res.stats["concurrency"] == 8      # and recovered
        assert srv.max_in_flight <= 8

        # without adaptivity the cap stays put
        srv.plan_next(["503"] * 4)
        res2 = run(model_for(srv), prompts[:10], concurrency=8, adaptive=False, **FAST)
        assert res2.stats["min_concurrency"] == 8 and all(r.error is None for r in res2.responses)


def test_progress_callback_reports_stats(key, server):
    seen = []
    run(model_for(server), [question(i, i) for i in range(5)], progress=seen.append)
    assert len(seen) == 5 and seen[-1]["done"] == 5 and seen[-1]["total"] == 5
    assert {"cached", "in_flight", "max_in_flight", "retries", "errors", "prompt_tokens",
            "completion_tokens"} <= set(seen[-1])


# -- the secret ---------------------------------------------------------------------------------------

def test_api_key_never_leaks(key, server, tmp_path, caplog, capsys):
    caplog.set_level(logging.DEBUG)
    for name in ("openai", "httpx", "httpx2", "httpcore", "httpcore2", "assay"):
        caplog.set_level(logging.DEBUG, logger=name)
    prompts = [question(i, 9) for i in range(6)]
    server.plan(prompts[0], ["429"])
    server.plan(prompts[1], ["401echo"])
    db = tmp_path / "journal.sqlite"
    m = model_for(server)
    res = run(m, prompts, journal=db, run_id="secret-run", **FAST)
    assert f"Bearer {SECRET}" in server.auth_headers  # the key was sent...
    assert res.responses[1].error and SECRET not in res.responses[1].error  # ...scrubbed from the echo
    assert res.responses[1].error.count("***") == 1
    for text in (repr(m), str(m), str(m.params()), str(vars(m)), repr(res), str(res.stats)):
        assert SECRET not in text
    m2 = pickle.loads(pickle.dumps(m))
    assert SECRET not in str(pickle.dumps(m)) and m2.params() == m.params()
    with Journal(db) as j:
        frame = j.records("secret-run")
        assert len(frame) == 6
        assert SECRET not in frame.to_csv()
    files = list(tmp_path.iterdir())
    assert any(f.name.endswith(".sqlite") for f in files)
    for f in files:  # the database and its -wal / -shm companions
        assert SECRET.encode() not in f.read_bytes(), f.name
    out = capsys.readouterr()
    assert SECRET not in caplog.text and SECRET not in out.out and SECRET not in out.err


def test_missing_key(monkeypatch, server):
    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(AssayInputError, match=KEY_ENV):
        OpenAIChatModel("gpt-4o-mini", base_url="https://api.openai.com/v1", api_key_env=KEY_ENV)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(AssayInputError, match="OPENAI_API_KEY"):
        OpenAIChatModel("gpt-4o-mini")  # default endpoint api.openai.com
    # local servers (vLLM, Ollama, llama.cpp) get a dummy key
    m = OpenAIChatModel("fake-model", base_url=server.base_url, api_key_env=KEY_ENV)
    assert run(m, [question(1, 2)]).texts == [answer_for(question(1, 2))]
    with pytest.raises(AssayInputError):
        OpenAIChatModel("x", base_url="ftp://host/v1")


# -- the callable adapter ----------------------------------------------------------------------------

def test_callable_sync_runs_in_a_thread():
    main = threading.get_ident()
    threads = set()

    def fn(prompt):
        threads.add(threading.get_ident())
        return answer_for(prompt)

    prompts = [question(i, 1) for i in range(5)]
    res = run(CallableModel(fn, name="rule"), prompts, concurrency=2)
    assert res.texts == [answer_for(p) for p in prompts] and main not in threads
    assert all(r.finish_reason == "stop" and r.latency_s >= 0 for r in res.responses)


def test_callable_async_errors_and_retryable():
    attempts = {}

    async def fn(prompt):
        attempts[prompt] = attempts.get(prompt, 0) + 1
        if prompt == "boom":
            raise KeyError("nope")
        if prompt == "flaky" and attempts[prompt] < 3:
            raise RetryableError(503, None, "busy")
        return f"<{prompt}>"

    res = asyncio.run(run_prompts(CallableModel(fn, name="a"), ["x", "boom", "flaky"], **FAST))
    assert res.texts == ["<x>", None, "<flaky>"]
    assert "KeyError" in res.responses[1].error and attempts["boom"] == 1
    assert res.responses[2].attempts == 3 and res.stats["throttled"] == 2
    with pytest.raises(AssayInputError):
        CallableModel(42)


def test_run_inside_a_loop_is_refused():
    async def go():
        run(CallableModel(str, name="s"), ["a"])

    with pytest.raises(AssayInputError, match="run_prompts"):
        asyncio.run(go())


def test_bad_arguments(key, server, tmp_path):
    m = CallableModel(str, name="s")
    for kw in ({"concurrency": 0}, {"max_retries": -1}, {"rpm": 0}, {"timeout": -1}):
        with pytest.raises(AssayInputError):
            run(m, ["a"], **kw)
    with pytest.raises(AssayInputError, match="Model interface"):
        run(object(), ["a"])
    # a bad prompt fails the run with the plain error (not an ExceptionGroup); answers so far are kept
    db = tmp_path / "j.sqlite"
    with pytest.raises(AssayInputError, match="chat messages"):
        run(model_for(server), [question(1, 1), 42], journal=db, run_id="bad", concurrency=1)
    with Journal(db) as j:
        assert j.run("bad")["status"] == "failed"


# -- the journal ---------------------------------------------------------------------------------------

def test_repeated_request_is_answered_from_the_journal(key, server, tmp_path):
    db = tmp_path / "j.sqlite"
    prompts = [question(i, 4) for i in range(8)]
    first = run(model_for(server), prompts, journal=db, run_id="a")
    assert server.total == 8 and not any(r.cached for r in first.responses)
    again = run(model_for(server), prompts, journal=db, run_id="a")
    assert server.total == 8  # nothing re-requested
    assert again.texts == first.texts and all(r.cached for r in again.responses)
    assert again.stats["cached"] == 8 and again.stats["requests"] == 0
    # another run: asks again unless reuse=True
    run(model_for(server), prompts[:2], journal=db, run_id="b", reuse=True)
    assert server.total == 8
    run(model_for(server), prompts[:2], journal=db, run_id="c")
    assert server.total == 10
    # different parameters are different requests
    run(model_for(server, temperature=0.7), prompts[:1], journal=db, run_id="a")
    assert server.total == 11
    with Journal(db) as j:
        assert {r["run_id"] for r in j.runs()} == {"a", "b", "c"}
        assert len(j.records("a")) == 9


def test_duplicate_prompts_in_one_batch_are_requested_once(key, server, tmp_path):
    p, q = question(1, 1), question(2, 2)
    res = run(model_for(server), [p, q, p, p], journal=tmp_path / "j.sqlite")
    assert res.texts == [answer_for(x) for x in (p, q, p, p)]
    assert server.counts[p] == 1 and [r.cached for r in res.responses] == [False, False, True, True]
    assert res.stats["done"] == 4 and res.stats["cached"] == 2


def test_journal_instance_and_async_api(key, server, tmp_path):
    async def go(j):
        m = model_for(server)
        try:
            return await run_prompts(m, [question(3, 3)], journal=j, run_id="x")
        finally:
            await m.aclose()

    with Journal(tmp_path / "j.sqlite") as j:
        res = asyncio.run(go(j))
        assert res.run_id == "x" and j.get("x", request_key("fake-model", question(3, 3), model_for(server).params()))
        assert j.run("x")["status"] == "done"


def test_timing_arguments_are_checked_before_anything_is_sent():
    from assay.models import CallableModel

    model = CallableModel(lambda p: "x", name="echo")
    for kw in ({"lease_s": "x"}, {"lease_s": -1}, {"backoff_base": "1"}, {"backoff_max": float("nan")},
               {"backoff_base": -0.5}):
        with pytest.raises(AssayInputError, match=next(iter(kw))):
            run(model, ["a"], **kw)


def test_a_stream_cut_short_is_retried_slower_never_an_empty_answer():
    """llama-cpp-python's server answers concurrent streamed requests with a role chunk and closes all but one:
    such a stream (no finish reason) is a transient failure that asks the runner to slow down, not an empty answer
    (which would be scored as wrong). A complete stream, even an empty one, is an answer."""
    import asyncio
    import time
    from types import SimpleNamespace as NS

    from assay.models import OpenAIChatModel
    from assay.models.base import RetryableError

    def chunk(content=None, finish=None, role=None):
        return NS(usage=None, choices=[NS(delta=NS(content=content, refusal=None, role=role), finish_reason=finish)])

    def client(*chunks):
        async def create(**kw):
            async def gen():
                for c in chunks:
                    yield c
            return gen()
        return NS(chat=NS(completions=NS(create=create)))

    m = OpenAIChatModel("x", base_url="http://127.0.0.1:9/v1", stream=True, api_key_env=None)
    with pytest.raises(RetryableError) as exc:
        asyncio.run(m._streamed(client(chunk(role="assistant")), {}, time.perf_counter()))
    assert exc.value.throttled and "finish reason" in exc.value.message
    with pytest.raises(RetryableError):  # text, then cut: still not the answer
        asyncio.run(m._streamed(client(chunk(role="assistant"), chunk("The ans")), {}, time.perf_counter()))
    r = asyncio.run(m._streamed(client(chunk(role="assistant"), chunk("4"), chunk(finish="stop")), {},
                                time.perf_counter()))
    assert r.text == "4" and r.finish_reason == "stop" and r.ttft_s is not None
    r = asyncio.run(m._streamed(client(chunk(role="assistant"), chunk(finish="stop")), {}, time.perf_counter()))
    assert r.text == "" and r.finish_reason == "stop"  # a complete empty answer is the model's, and kept


class _OneStreamAtATime:
    """A server like llama-cpp-python's: it serves one stream at a time and cuts every other stream in flight short
    (a :class:`RetryableError` with ``slow_down``, as the OpenAI adapter raises for a stream without a finish
    reason)."""

    name = "one-stream"

    def __init__(self) -> None:
        self.in_flight = 0
        self.cut = 0
        self.max_served_together = 0

    def params(self) -> dict:
        return {}

    async def generate(self, prompt):
        from assay.models import Response
        from assay.models.base import RetryableError

        self.in_flight += 1
        try:
            await asyncio.sleep(0.002)  # every request in flight overlaps the others for a while
            if self.in_flight > 1:
                self.cut += 1
                raise RetryableError(None, None, "the stream ended before the answer was complete", slow_down=True)
            self.max_served_together = max(self.max_served_together, self.in_flight)
            return Response(text=f"answer to {prompt}", latency_s=0.002, finish_reason="stop")
        finally:
            self.in_flight -= 1


def test_a_server_that_cuts_concurrent_streams_gets_one_at_a_time_and_no_request_is_given_up():
    """Asked at concurrency 4 with no retries allowed, every request is answered: each stream the server cuts while
    others are in flight lowers the cap for good (4 -> 1, where it stays instead of creeping back up into more cuts)
    and is asked again without counting against max_retries. Counting those cuts as failed attempts gave requests
    up (issue 37)."""
    m = _OneStreamAtATime()
    prompts = [f"q{i}" for i in range(24)]
    res = run(m, prompts, concurrency=4, max_retries=0, backoff_base=0.001, seed=0)
    assert all(r.error is None and r.text == f"answer to {p}" for r, p in zip(res.responses, prompts))
    assert m.cut >= 1 and res.stats["concurrency"] == 1 and res.stats["min_concurrency"] == 1
    assert res.stats["errors"] == 0 and res.stats["retries"] == m.cut
    # cut requests cost a request each, and the cap fell by one per cut until one at a time: a bounded number
    assert res.stats["requests"] == len(prompts) + m.cut and m.cut <= 3 + 3 * 4


def test_a_cut_stream_with_nothing_else_in_flight_is_an_ordinary_failed_attempt():
    """At concurrency 1 a stream cut short is not the server's concurrency limit: it counts against max_retries."""

    class AlwaysCut(_OneStreamAtATime):
        async def generate(self, prompt):
            from assay.models.base import RetryableError

            raise RetryableError(None, None, "the stream ended before the answer was complete", slow_down=True)

    res = run(AlwaysCut(), ["q"], concurrency=1, max_retries=2, backoff_base=0.001)
    assert res.responses[0].error is not None and res.responses[0].attempts == 3
    assert "gave up after 3 attempts" in res.responses[0].error
