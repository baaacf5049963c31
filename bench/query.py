"""Benchmark: the query runner (journal, claims, retries) against the raw ``openai.AsyncOpenAI`` client.

Same loopback fake OpenAI server (tests/fake_openai_server.py, 127.0.0.1, 5 ms per answer, in a process of its own
like a real endpoint, so its CPU does not compete with the client's), same prompts, same concurrency (8). THE BASELINE is the raw client: ``asyncio.gather`` over ``chat.completions.create`` under a
semaphore of 8, measured in the same run. Measured: the runner with a journal (every answer committed with
fsync before it is used, per-request claims, group commit on a writer thread), and without a journal.
``ratio`` = runner-with-journal throughput / raw throughput (target >= 0.9). Each case is run ``--repeats`` times
(fresh journal each time) and the median is kept. The last line is a JSON object.

Usage::

    python bench/query.py            # 600 prompts, 3 repeats
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


def raw(base_url: str, prompts: list[str], concurrency: int) -> float:
    import openai

    async def main() -> float:
        client = openai.AsyncOpenAI(base_url=base_url, api_key="sk-bench-dummy-key", max_retries=0, timeout=30.0)
        sem = asyncio.Semaphore(concurrency)

        async def one(p: str) -> str:
            async with sem:
                r = await client.chat.completions.create(model="fake", messages=[{"role": "user", "content": p}],
                                                         temperature=0.0)
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=600)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--delay", type=float, default=0.005, help="server delay per answer, seconds")
    args = ap.parse_args()
    times: dict[str, list[float]] = {"raw": [], "runner_journal": [], "runner_no_journal": []}
    import subprocess

    child = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(Path(__file__).resolve().parents[1] / "tests"), str(args.delay)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        base_url = child.stdout.readline().strip()
        cases = {"raw": lambda p: raw(base_url, p, args.concurrency),
                 "runner_journal": lambda p: runner(base_url, p, args.concurrency, True),
                 "runner_no_journal": lambda p: runner(base_url, p, args.concurrency, False)}
        names = list(cases)
        raw(base_url, [question(i, 7) for i in range(50)], args.concurrency)  # warm-up (imports, sockets)
        for rep in range(args.repeats):
            prompts = [question(i, rep * 100_000 + 13) for i in range(args.n)]  # fresh prompts: nothing cached
            for name in names[rep % 3:] + names[:rep % 3]:  # rotate the order: no case always runs first
                times[name].append(cases[name](prompts))
    finally:
        child.stdin.close()
        child.wait(timeout=30)
    med = {k: statistics.median(v) for k, v in times.items()}
    thr = {k: args.n / v for k, v in med.items()}
    ratio = thr["runner_journal"] / thr["raw"]
    ratio_nj = thr["runner_no_journal"] / thr["raw"]
    print(f"{'case':<34} {'median s':>9} {'req/s':>8}")
    for k in times:
        print(f"{k:<34} {med[k]:9.3f} {thr[k]:8.1f}")
    print(f"runner with journal / raw client: {ratio:.2f}x (target >= 0.9); without journal: {ratio_nj:.2f}x")
    print(json.dumps({"n": args.n, "concurrency": args.concurrency, "raw_s": round(med["raw"], 3),
                      "runner_journal_s": round(med["runner_journal"], 3),
                      "runner_no_journal_s": round(med["runner_no_journal"], 3), "ratio": round(ratio, 3),
                      "ratio_no_journal": round(ratio_nj, 3)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
