"""Benchmark: the query runner (journal, claims, retries) against the raw ``openai.AsyncOpenAI`` client.

Same loopback fake OpenAI server (tests/fake_openai_server.py, 127.0.0.1, 5 ms per answer by default: the speed of a
local vLLM or llama.cpp server with a small model, where evaluation runs are largest), in a process of its own like a
real endpoint, so its CPU does not compete with the client's; same prompts; same concurrency. Every concurrency in
``--concurrency`` (default 8 and 64) is measured in one run.

THE BASELINE is the raw client: ``asyncio.gather`` over ``chat.completions.create`` under a semaphore of the same
size, measured in the same run. A second baseline, ``raw_post``, is the same loop through the request path the runner
uses (the SDK client's ``post`` of a plain JSON body, the reply read with ``json.loads``, skipping ``create``'s typed
parameters and its pydantic reply): against it the runner's own cost, journal included, shows like for like.
Measured against them: the runner with a journal at its default durability
(every answer is committed to the journal's write-ahead log before it is used or its slot is given back, so a
``kill -9`` re-asks at most ``concurrency`` requests; the fsync runs on a thread, at most every 100 ms), and the runner without a journal. ``ratio`` = runner-with-
journal throughput / raw throughput (target >= 0.9 at both concurrencies); ``ratio_vs_post`` the same against
``raw_post``; ``journal_ratio`` = with journal / without. Each case runs ``--repeats`` times in a
rotated order (fresh journal and fresh prompts each time, nothing served from a cache); ``ratio`` is the median over
repeats of the ratio within a repeat (the runs of a repeat are adjacent in time, so the drift of a shared machine
cancels), printed with its quartiles; the median times are printed too; the
client's CPU seconds per request are printed too (the client is CPU-bound at 5 ms answers on this machine, so the
ratio of CPU is the steadier figure when other work shares the cores). The last line is a JSON object.

Usage::

    python bench/query.py                       # 500 prompts, concurrency 8 and 64, 11 repeats
    python bench/query.py --concurrency 8 --delay 0.2 --n 400
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from fake_openai_server import question  # noqa: E402

from assay.models import OpenAIChatModel, run  # noqa: E402


SERVER = r"""
import sys
sys.path.insert(0, sys.argv[1])
from fake_openai_server import FakeOpenAIServer
with FakeOpenAIServer(retry_after=0, delay_s=float(sys.argv[2])) as srv:
    print(srv.base_url, flush=True)
    sys.stdin.read()  # until the benchmark closes our stdin
"""


def raw(base_url: str, prompts: list[str], concurrency: int, post: bool = False) -> float:
    import openai

    async def main() -> float:
        client = openai.AsyncOpenAI(base_url=base_url, api_key="sk-bench-dummy-key", max_retries=0, timeout=30.0)
        sem = asyncio.Semaphore(concurrency)

        async def one(p: str) -> str:
            body = {"model": "fake", "messages": [{"role": "user", "content": p}], "temperature": 0.0}
            async with sem:
                if post:
                    return json.loads(await client.post("/chat/completions", cast_to=str, body=body))[
                        "choices"][0]["message"]["content"]
                r = await client.chat.completions.create(**body)
                return r.choices[0].message.content

        t = time.perf_counter()
        out = await asyncio.gather(*(one(p) for p in prompts))
        dt = time.perf_counter() - t
        await client.close()
        assert all(out)
        return dt

    return asyncio.run(main())


def runner(base_url: str, prompts: list[str], concurrency: int, journal: bool) -> float:
    model = OpenAIChatModel("fake", base_url=base_url, api_key_env=None, timeout=30.0)
    with tempfile.TemporaryDirectory() as d:
        t = time.perf_counter()
        res = run(model, prompts, journal=(Path(d) / "j.sqlite") if journal else None, concurrency=concurrency)
        dt = time.perf_counter() - t
    assert all(r.error is None for r in res.responses)
    return dt


def timed(fn, prompts: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process) of one call."""
    c, t = time.process_time(), time.perf_counter()
    fn(prompts)
    return time.perf_counter() - t, time.process_time() - c


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[8, 64])
    ap.add_argument("--repeats", type=int, default=11)
    ap.add_argument("--delay", type=float, default=0.005, help="server delay per answer, seconds")
    args = ap.parse_args()
    import subprocess

    child = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(Path(__file__).resolve().parents[1] / "tests"), str(args.delay)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    summary: dict = {"n": args.n, "delay_s": args.delay, "repeats": args.repeats, "by_concurrency": {}}
    try:
        base_url = child.stdout.readline().strip()
        print(f"{args.n} prompts, {args.delay * 1000:g} ms per answer, median of {args.repeats} repeats")
        print(f"{'concurrency':>11} {'case':<20} {'median s':>9} {'req/s':>8} {'CPU ms/req':>11}")
        for conc in args.concurrency:
            cases = {"raw": lambda p, c=conc: raw(base_url, p, c),
                     "raw_post": lambda p, c=conc: raw(base_url, p, c, post=True),
                     "runner_journal": lambda p, c=conc: runner(base_url, p, c, True),
                     "runner_no_journal": lambda p, c=conc: runner(base_url, p, c, False)}
            names = list(cases)
            raw(base_url, [question(i, 7) for i in range(50)], conc)  # warm-up (imports, sockets)
            wall: dict[str, list[float]] = {k: [] for k in names}
            cpu: dict[str, list[float]] = {k: [] for k in names}
            for rep in range(args.repeats):
                k = rep % len(names)
                for j, name in enumerate(names[k:] + names[:k]):  # rotate: no case always runs first
                    prompts = [question(i, conc * 1_000_000 + rep * 1000 + j * 100 + 13) for i in range(args.n)]
                    w, c = timed(cases[name], prompts)
                    wall[name].append(w)
                    cpu[name].append(c)
            med = {k: statistics.median(v) for k, v in wall.items()}
            cpu_ms = {k: statistics.median(v) / args.n * 1000 for k, v in cpu.items()}
            for k in names:
                print(f"{conc:>11} {k:<20} {med[k]:9.3f} {args.n / med[k]:8.1f} {cpu_ms[k]:11.3f}")
            # the ratio of each repeat's adjacent runs, then the median: a shared machine's drift cancels in a pair
            per = sorted(r / j for r, j in zip(wall["raw"], wall["runner_journal"]))
            per_nj = sorted(r / j for r, j in zip(wall["raw"], wall["runner_no_journal"]))
            per_post = sorted(r / j for r, j in zip(wall["raw_post"], wall["runner_journal"]))
            per_j = sorted(n / j for n, j in zip(wall["runner_no_journal"], wall["runner_journal"]))
            ratio, ratio_nj = statistics.median(per), statistics.median(per_nj)
            ratio_post, journal_ratio = statistics.median(per_post), statistics.median(per_j)
            q1, q3 = per[len(per) // 4], per[(3 * len(per)) // 4]
            print(f"{conc:>11} runner with journal / raw client: {ratio:.2f}x (quartiles {q1:.2f}-{q3:.2f}; target "
                  f">= 0.9); without journal: {ratio_nj:.2f}x; CPU per request "
                  f"{cpu_ms['raw'] / cpu_ms['runner_journal']:.2f}x")
            print(f"{conc:>11} like for like: runner with journal / raw client's post path: {ratio_post:.2f}x; "
                  f"with journal / without: {journal_ratio:.2f}x (journal CPU "
                  f"{cpu_ms['runner_journal'] - cpu_ms['runner_no_journal']:.2f} ms per answer)")
            summary["by_concurrency"][str(conc)] = {
                "raw_s": round(med["raw"], 3), "runner_journal_s": round(med["runner_journal"], 3),
                "runner_no_journal_s": round(med["runner_no_journal"], 3), "ratio": round(ratio, 3),
                "raw_post_s": round(med["raw_post"], 3), "ratio_vs_post": round(ratio_post, 3),
                "journal_ratio": round(journal_ratio, 3),
                "ratio_no_journal": round(ratio_nj, 3), "ratio_quartiles": [round(q1, 3), round(q3, 3)],
                "cpu_ms_per_request": {k: round(v, 3) for k, v in cpu_ms.items()},
                "cpu_ratio": round(cpu_ms["raw"] / cpu_ms["runner_journal"], 3)}
    finally:
        child.stdin.close()
        child.wait(timeout=30)
    summary["ratio_min"] = min(v["ratio"] for v in summary["by_concurrency"].values())
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
