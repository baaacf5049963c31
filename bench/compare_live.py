"""assay compare asking real models until every pair is resolved, on the shipped basics bank (docs/compare.md,
"Asking until resolved"; not CI: about 10 minutes on 2 cores).

Starts llama-cpp-python servers on 127.0.0.1 for SmolLM2-135M-Instruct (two configurations: plain, and with the
system prompt "Answer with the answer only.") and the pretrained Gemma 3 270M (through /v1/completions), asks the
303-question bank in rounds of 20 (16 completion tokens, seed 0, delta 0.05, no margin) until every pair is ordered,
then reads the same journal again at smaller budgets (nothing is asked twice) to show each pair's interval and the
planning estimate ``items_to_resolve`` along the way. Journal under ``--out``.

    python bench/compare_live.py --out /tmp/compare-live
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

CHECKPOINTS = (40, 80, 160, 240, 280)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("compare-live"))
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)

    from live_server import LiveServer, gemma3_path, smollm2_path

    from assay.compare.live import query_until_resolved
    from assay.datasets import load_basics
    from assay.models import OpenAIChatModel
    from assay.models.openai_model import OpenAICompletionModel

    bank = load_basics()
    # the servers take free ports, and the endpoint is part of every journaled request: a second run of this script
    # asks again (within one run, the checkpoints are read back from the journal)
    with LiveServer(smollm2_path(), alias="smollm2") as lm, LiveServer(gemma3_path(), alias="gemma3") as lj:
        models = {
            "smollm2-plain": OpenAIChatModel("smollm2", base_url=lm.base_url, max_tokens=16, api_key_env=None),
            "smollm2-brief": OpenAIChatModel("smollm2", base_url=lm.base_url, max_tokens=16, api_key_env=None,
                                             system_prompt="Answer with the answer only."),
            "gemma3": OpenAICompletionModel("gemma3", base_url=lj.base_url, max_tokens=16, api_key_env=None),
        }
        kw = dict(scorer="scorer", journal=a.out / "journal.sqlite", run_id="compare-live", batch=20, seed=a.seed,
                  concurrency=2, timeout=120)
        t = time.time()
        res = query_until_resolved(models, bank, budget=len(bank), **kw,
                                   progress=lambda n, tot, u: print(f"{n}/{tot} asked, {u} pair(s) unresolved "
                                                                    f"[{time.time() - t:.0f} s]", flush=True))
        print(res.summary())
        for st in res.statements():
            print(st)
        print(f"\nquestions asked: {res.params['queried']} of {len(bank)}; {res.info['live']['stopped']}")
        print("\nthe last pair to be ordered, along the way (read back from the journal):")
        pair = res.pairs.iloc[0]
        print("asked  estimate  ci_low  ci_high  items_to_resolve")
        for n in CHECKPOINTS:
            if n >= res.params["queried"]:
                break
            part = query_until_resolved(models, bank, budget=n, **kw)
            assert sum(part.info["live"]["requests"].values()) == 0  # every answer from the journal
            p = part.pairs[(part.pairs.model_a == pair.model_a) & (part.pairs.model_b == pair.model_b)].iloc[0]
            print(f"{n:5d}  {p.estimate:8.3f}  {p.ci_low:6.2f}  {p.ci_high:7.2f}  {p.items_to_resolve:16,.0f}")
        print(f"{res.params['queried']:5d}  {pair.estimate:8.3f}  {pair.ci_low:6.2f}  {pair.ci_high:7.2f}  "
              f"{pair.verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
