"""Every live path with real budgets against the local real model (``make live``; not CI).

Starts llama-cpp-python servers on 127.0.0.1 (SmolLM2-135M-Instruct for the model under test, Gemma 3 270M
pretrained as the judge, through /v1/completions), runs each step through assay's public functions with a journal
under ``--out`` (so an interrupted run resumes), and prints the numbers that docs/live.md reports.

Steps (``--steps``, default all):

* ``history``: a FAQ history of real generations: 21 variants of the served model (system prompt x few-shot x
  temperature / seed) answer 200 items of the shipped ``basics`` bank (50 of each shape); their raw answers go to
  ``OUT/history_answers.parquet`` (scored with the current scorers when read, so better extraction rules rescore
  without asking again), and ``tests/fixtures/live_history.parquet`` when ``--fixture`` is given.
* further steps are added by their sections below.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

SYSTEMS = {"plain": None, "helpful": "You are a helpful assistant.", "brief": "Answer briefly.",
           "expert": "You are a careful expert in arithmetic and general knowledge. Answer exactly as asked."}
FEWSHOT = [{"role": "user", "content": "What is 3 + 4? Give the final answer as a number after 'Answer:'."},
           {"role": "assistant", "content": "Answer: 7"},
           {"role": "user", "content": "True or False: A cat is a bird. Answer True or False."},
           {"role": "assistant", "content": "False"}]
SAMPLING = [("t0", 0.0, None), ("t08s1", 0.8, 1), ("t08s2", 0.8, 2)]


def variants() -> list[dict]:
    """21 variants: 7 prompt templates (4 system prompts x 0 or 2 worked examples, less expert with examples) x 3
    sampling settings (greedy, and temperature 0.8 with two seeds)."""
    out = []
    for sname, system in SYSTEMS.items():
        for shots in (0, 2):
            if sname == "expert" and shots:
                continue
            for tname, temp, seed in SAMPLING:
                out.append({"variant": f"smollm2-{sname}-{shots}shot-{tname}", "system": system, "shots": shots,
                            "temperature": temp, "seed": seed})
    return out


def messages(prompt: str, v: dict) -> list[dict]:
    msgs = [{"role": "system", "content": v["system"]}] if v["system"] else []
    if v["shots"]:
        msgs += FEWSHOT
    return msgs + [{"role": "user", "content": prompt}]


def history_bank() -> pd.DataFrame:
    """The FAQ history's bank: the first 50 items of each shape of ``basics`` (200 items)."""
    from assay.datasets import load_basics

    return load_basics().groupby("shape", sort=False).head(50).reset_index(drop=True)


def step_history(urls: list[str], out: Path, max_tokens: int = 48) -> pd.DataFrame:
    import asyncio

    from assay.models import OpenAIChatModel, run_prompts
    from assay.models.journal import Journal

    bank = history_bank()
    journal = Journal(out / "journal.sqlite")
    vs = variants()
    rows = []

    async def one(v: dict, url: str) -> None:
        model = OpenAIChatModel("smollm2", base_url=url, temperature=v["temperature"], seed=v["seed"],
                                max_tokens=max_tokens, timeout=120)
        res = await run_prompts(model, [messages(p, v) for p in bank["prompt"]], journal=journal,
                                run_id=f"history-{v['variant']}", concurrency=1)
        await model.aclose()
        for item, r in zip(bank["id"], res.responses):
            rows.append({"model": v["variant"], "item": item, "text": r.text, "outcome": r.outcome, "error": r.error})
        print(f"  {v['variant']}: {res.stats['done']} answers ({res.stats['cached']} from the journal)", flush=True)

    async def worker(queue: list[dict], url: str) -> None:
        while queue:
            await one(queue.pop(0), url)

    async def main() -> None:
        queue = list(vs)
        await asyncio.gather(*(worker(queue, u) for u in urls))

    t0 = time.perf_counter()
    asyncio.run(main())
    journal.close()
    df = pd.DataFrame(rows).sort_values(["model", "item"]).reset_index(drop=True)
    df.to_parquet(out / "history_answers.parquet", index=False)
    print(f"history: {df['model'].nunique()} variants x {df['item'].nunique()} items in {time.perf_counter() - t0:.0f} s")
    return df


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "live-out")
    ap.add_argument("--steps", default="history")
    ap.add_argument("--servers", type=int, default=2, help="model-under-test servers (one thread each)")
    ap.add_argument("--urls", default=None, help="use running servers (comma-separated base URLs) instead")
    ap.add_argument("--fixture", action="store_true", help="also write tests/fixtures/live_history.parquet")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    from contextlib import ExitStack

    from live_server import LiveServer, smollm2_path

    with ExitStack() as stack:
        urls = args.urls.split(",") if args.urls else [
            stack.enter_context(LiveServer(smollm2_path(), alias="smollm2")).base_url for _ in range(args.servers)]
        steps = args.steps.split(",")
        if "history" in steps:
            df = step_history(urls, args.out)
            if args.fixture:
                df.to_parquet(ROOT / "tests" / "fixtures" / "live_history.parquet", index=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
