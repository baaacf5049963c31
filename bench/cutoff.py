"""How often real local models are cut off by the completion-token limit, at 64 / 128 / 256 / 512 tokens: the data
behind assay's default ``max_tokens`` (not CI: about 32 minutes on 2 cores shared with other work, nearly all of it
Gemma's 100 answers of 512 tokens; a rerun reads everything from the journal and takes a few seconds).

Four configurations ("prompt styles"), all greedy (temperature 0), as ``assay compare --endpoint`` asks them:

* ``smollm2-plain``: SmolLM2-135M-Instruct through /v1/chat/completions, no system prompt;
* ``smollm2-answer-only``: the same with the system prompt "Answer with the answer only.";
* ``smollm2-reason``: the same with "Reason step by step, then give the final answer in \\boxed{}.";
* ``gemma3-completions``: the pretrained Gemma 3 270M through /v1/completions, the bare question as the prompt.

Two banks: a seeded random sample of 60 of the 303 shipped ``basics`` questions (``--sample``; 60 is enough: none
cut off of 60 puts the true share below 5% with 95% confidence, the rule of three), scored with its ``scorer``
column; and the 40 maths questions of ``bench/data/maths40.csv`` (written for this project), scored with the ``math``
scorer.

Each question is asked ONCE, at 512 completion tokens. Under greedy decoding the answer at a limit L is the first L
tokens of the answer at 512, so whether it would have been cut off at L is read from the 512 answer: llama.cpp's
server reports ``finish_reason`` "length" at L exactly when the answer has at least L tokens (it stops after the
L-th token before it can see an end-of-text token), i.e. ``completion_tokens >= L``. The rule is checked on one
configuration (``smollm2-plain`` on the maths bank, whose answers' lengths straddle 64): the 15 questions whose 512
answers are nearest 64 tokens are asked again at 64, and the derived flags are compared with the server's, the 64
texts with the 512 texts' beginnings.

Printed and written to ``OUT/cutoff.json`` per bank x configuration x limit: the share cut off; the right answers a
limit would lose (of the answers scored right at 512, those of at least L tokens: a cut-off answer, not re-scored);
median and 90th-percentile completion tokens; seconds per answer (the server's service time: each server serves one
request at a time and is asked 2 at a time, so an answer's time is its end minus the later of its start and the end
of the answer before it; at L < 512 scaled by min(tokens, L) / tokens, an estimate checked against the 64 re-ask).
Configurations still cut off at 512 on more than a fifth of a bank's questions "run on at any limit"; the recommended
default is the smallest limit at which every other (bank, configuration) has at most 5% of its answers cut off.

Two llama-cpp-python servers at most at once (one thread each), each asked with concurrency 2; journal under
``--out`` (request keys name the model file, not the server's port, so a rerun pays nothing).

    python bench/cutoff.py --out /tmp/cutoff
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from assay.models import OpenAIChatModel
from assay.models.openai_model import OpenAICompletionModel

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

LIMITS = (64, 128, 256, 512)
MAX_TOKENS = 512
RUNS_ON = 0.20  # still cut off at 512 on more than this share: runs on at any limit
TOLERATED = 0.05  # the share cut off a default limit may leave
VERIFY_N, VERIFY_LIMIT = 15, 64
VERIFY_BANK, VERIFY_CONFIG = "maths40", "smollm2-plain"  # its answers' lengths straddle 64 tokens
#: the port is not part of the journal key: a rerun on new servers reads the same answers
UNUSED_URL = "http://127.0.0.1:9/v1"
MODEL_FILES = {"smollm2": "SmolLM2-135M-Instruct.Q4_1.gguf", "gemma3": "gemma-3-270m-q4_k_m.gguf"}
CONFIGS = {
    "smollm2-plain": ("smollm2", None),
    "smollm2-answer-only": ("smollm2", "Answer with the answer only."),
    "smollm2-reason": ("smollm2", "Reason step by step, then give the final answer in \\boxed{}."),
    "gemma3-completions": ("gemma3", None),
}


class _Timed:
    """A model whose journal key names its model file instead of its server's address, and that keeps the client's
    (start, end) of every answer it gets from its server."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.spans: dict[str, tuple[float, float]] = {}

    def params(self) -> dict:
        return {**super().params(), "base_url": f"llama-cpp-python:{MODEL_FILES[self.name]}"}

    async def generate(self, prompt):
        t0 = time.monotonic()
        r = await super().generate(prompt)
        if r.ok:
            self.spans[json.dumps(prompt)] = (t0, time.monotonic())
        return r


class TimedChat(_Timed, OpenAIChatModel):
    pass


class TimedCompletion(_Timed, OpenAICompletionModel):
    pass


def make_model(config: str, url: str, max_tokens: int = MAX_TOKENS):
    served, system = CONFIGS[config]
    cls = TimedCompletion if served == "gemma3" else TimedChat
    return cls(served, base_url=url, api_key_env=None, temperature=0.0, max_tokens=max_tokens, system_prompt=system,
               timeout=900)


def load_banks(sample: int, seed: int) -> dict[str, pd.DataFrame]:
    from assay.datasets import load_basics

    basics = load_basics().sample(n=sample, random_state=seed).sort_values("id").reset_index(drop=True)
    maths = pd.read_csv(ROOT / "bench" / "data" / "maths40.csv", dtype=str).assign(scorer="math")
    return {"basics": basics[["id", "prompt", "reference", "scorer"]], "maths40": maths}


def service_times(spans: list[tuple[float, float]]) -> list[float]:
    """Each answer's service time on a server that serves one request at a time, in order of the answers' ends."""
    out, prev = [], float("-inf")
    for start, end in sorted(spans, key=lambda s: s[1]):
        out.append(end - max(start, prev))
        prev = end
    return out


@dataclass
class Job:
    bank: str
    config: str
    prompts: pd.DataFrame  # id, prompt
    max_tokens: int = MAX_TOKENS
    run_id: str = ""
    responses: list = field(default_factory=list)
    asked: int = 0
    service: list = field(default_factory=list)

    def __post_init__(self) -> None:
        tag = "" if self.max_tokens == MAX_TOKENS else f"-verify{self.max_tokens}"
        self.run_id = f"cutoff{tag}-{self.bank}-{self.config}"

    @property
    def served(self) -> str:
        return CONFIGS[self.config][0]

    def pending(self, journal) -> int:
        from assay.models.journal import request_key

        m = make_model(self.config, UNUSED_URL, self.max_tokens)
        keys = [request_key(m.name, p, m.params()) for p in self.prompts["prompt"]]
        return len(keys) - len(journal.completed_keys(self.run_id, keys))

    async def run(self, journal, url: str) -> None:
        from assay.models import run_prompts

        model = make_model(self.config, url, self.max_tokens)
        prompts = list(self.prompts["prompt"])
        res = await run_prompts(model, prompts, journal=journal, run_id=self.run_id, concurrency=2, timeout=900)
        await model.aclose()
        self.responses = res.responses
        self.asked = len(model.spans)
        # service times of the answers asked now, kept beside them (a rerun asks nothing and reads them back)
        keyed = {k: s for k, s in zip(sorted(model.spans, key=lambda k: model.spans[k][1]),
                                      service_times(list(model.spans.values())))}
        for item, p in zip(self.prompts["id"], prompts):
            name = f"service_s/{item}"
            if json.dumps(p) in keyed and journal.note(self.run_id, name) is None:
                journal.set_note(self.run_id, name, round(keyed[json.dumps(p)], 4))
        self.service = [journal.note(self.run_id, f"service_s/{item}") for item in self.prompts["id"]]


def frame(job: Job, bank: pd.DataFrame) -> pd.DataFrame:
    """One row per question: tokens, finish reason, text, score at the job's limit, service seconds."""
    from assay.models.scoring import score_rows

    rs = job.responses
    errors = [r.error for r in rs]
    outs = score_rows([r.text for r in rs], bank["reference"], list(bank["scorer"]), prompts=bank["prompt"],
                      finish_reasons=[r.finish_reason for r in rs], outcomes=[r.outcome for r in rs], errors=errors)
    return pd.DataFrame({"id": bank["id"], "tokens": [r.completion_tokens for r in rs],
                         "finish": [r.finish_reason for r in rs], "text": [r.text for r in rs],
                         "status": [o.status for o in outs], "right": [o.final_score == 1.0 for o in outs],
                         "error": errors, "service_s": job.service})


def cut_at(tokens: pd.Series, finish: pd.Series, limit: int) -> pd.Series:
    """Cut off at ``limit``, read from the answer at 512: the server says "length" at L when the answer has >= L
    tokens (and at 512 when it said so)."""
    return (tokens >= limit) | ((limit == MAX_TOKENS) & (finish == "length"))


def summarise(df: pd.DataFrame) -> dict:
    t = df["tokens"].astype(float)
    right = df["right"]
    s = df["service_s"].astype(float)
    out = {"n": len(df), "right_at_512": int(right.sum()), "accuracy_at_512": round(float(right.mean()), 4),
           "errors": int(df["error"].notna().sum()), "seconds_per_answer_at_512": round(float(s.mean()), 3),
           "statuses_at_512": df["status"].value_counts().to_dict(), "limits": {}}
    for L in LIMITS:
        cut = cut_at(t, df["finish"], L)
        lost = right & cut if L < MAX_TOKENS else right & False
        capped = t.clip(upper=L)
        est = (s * capped / t.clip(lower=1)).mean()
        out["limits"][str(L)] = {
            "cut_off": int(cut.sum()), "cut_off_share": round(float(cut.mean()), 4),
            "exactly_L_tokens": int((t == L).sum()),
            "right_lost": int(lost.sum()),
            "right_lost_share_of_right": round(float(lost.sum() / right.sum()), 4) if right.sum() else None,
            "median_tokens": float(np.median(capped)), "p90_tokens": float(np.percentile(capped, 90)),
            "seconds_per_answer": round(float(est), 3),
            "seconds_per_answer_kind": "measured" if L == MAX_TOKENS else "estimated (service time x min(t, L) / t)"}
    return out


def pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def markdown(results: dict, runs_on: list[tuple[str, str]]) -> str:
    lim = [str(L) for L in LIMITS]
    head = ("| bank | configuration | n | right at 512 | " + " | ".join(f"cut off at {L}" for L in lim)
            + " | " + " | ".join(f"right lost at {L}" for L in lim[:-1])
            + " | median tokens | p90 tokens | s/answer at 512 |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for bank, per in results.items():
        for config, r in per.items():
            ls = r["limits"]
            mark = " (runs on)" if (bank, config) in runs_on else ""
            lines.append(
                f"| {bank} | {config}{mark} | {r['n']} | {r['right_at_512']} ({pct(r['accuracy_at_512'])}) | "
                + " | ".join(pct(ls[L]["cut_off_share"]) for L in lim) + " | "
                + " | ".join(f"{ls[L]['right_lost']}/{r['right_at_512']}" for L in lim[:-1]) + " | "
                + f"{ls['512']['median_tokens']:.0f} | {ls['512']['p90_tokens']:.0f} | "
                + f"{r['seconds_per_answer_at_512']:.2f} |")
    lines += ["", ("Seconds per answer by limit (512 measured; below it estimated from each answer's service time x "
                   "min(tokens, L) / tokens):"), "",
              "| bank | configuration | " + " | ".join(f"s/answer at {L}" for L in lim) + " |",
              "|---|---|" + "---|" * len(lim)]
    for bank, per in results.items():
        for config, r in per.items():
            lines.append(f"| {bank} | {config} | "
                         + " | ".join(f"{r['limits'][L]['seconds_per_answer']:.2f}" for L in lim) + " |")
    return "\n".join(lines)


def verify(plain: pd.DataFrame, job64: Job) -> dict:
    """The derived cut-off flags at 64 against the server's, on the questions asked again at 64."""
    ask = plain.set_index("id").loc[list(job64.prompts["id"])]
    real = pd.Series([r.finish_reason == "length" for r in job64.responses], index=ask.index)
    tok64 = pd.Series([r.completion_tokens for r in job64.responses], index=ask.index)
    text64 = [r.text or "" for r in job64.responses]
    derived = cut_at(ask["tokens"].astype(float), ask["finish"], VERIFY_LIMIT)
    strict = ask["tokens"] > VERIFY_LIMIT  # the rule without the boundary: more than L tokens
    prefix = [str(full or "").startswith(t) for full, t in zip(ask["text"], text64)]
    est = (ask["service_s"].astype(float) * ask["tokens"].clip(upper=VERIFY_LIMIT) / ask["tokens"].clip(lower=1))
    return {"configuration": VERIFY_CONFIG, "bank": VERIFY_BANK, "n": len(ask), "limit": VERIFY_LIMIT,
            "tokens_at_512": [int(x) for x in ask["tokens"]],
            "really_cut_off": int(real.sum()), "derived_cut_off": int(derived.sum()),
            "exactly_L_tokens": int((ask["tokens"] == VERIFY_LIMIT).sum()),
            "derived_agrees": int((derived == real).sum()),
            "more_than_L_rule_agrees": int((strict == real).sum()),
            "tokens_agree": int((tok64 == ask["tokens"].clip(upper=VERIFY_LIMIT)).sum()),
            "text_is_prefix_of_512": int(sum(prefix)),
            "seconds_per_answer_measured_at_64": round(float(np.mean(job64.service)), 3),
            "seconds_per_answer_estimated_at_64": round(float(est.mean()), 3)}


async def run_all(jobs: list[Job], journal, after: dict) -> None:
    """Two workers, each with at most one server (of the model its job needs, started when needed)."""
    from live_server import LiveServer, gemma3_path, smollm2_path

    paths = {"smollm2": smollm2_path, "gemma3": gemma3_path}
    queue = list(jobs)

    async def worker(k: int) -> None:
        server = None
        try:
            while queue:
                chain = [queue.pop(0)]
                while chain:
                    job = chain.pop(0)
                    url = UNUSED_URL
                    if job.pending(journal):
                        if server is None or server.alias != job.served:
                            if server is not None:
                                await asyncio.to_thread(server.stop)
                            path = await asyncio.to_thread(paths[job.served])
                            server = LiveServer(path, alias=job.served)
                            try:
                                await asyncio.to_thread(server.start)
                            except RuntimeError as e:
                                raise SystemExit(f"the llama server ({job.served}) failed to start: {e}") from None
                        url = server.base_url
                    t = time.time()
                    await job.run(journal, url)
                    print(f"[worker {k}] {job.run_id}: {job.asked} asked, {len(job.responses) - job.asked} from the "
                          f"journal, {time.time() - t:.0f} s", flush=True)
                    if job.run_id in after:
                        chain.append(after[job.run_id](job))
        finally:
            if server is not None:
                server.stop()

    await asyncio.gather(worker(1), worker(2))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("cutoff-out"))
    ap.add_argument("--sample", type=int, default=60, help="basics questions (a seeded random sample)")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    from assay.models.journal import Journal

    t0 = time.time()
    banks = load_banks(a.sample, a.seed)
    # longest first: Gemma runs on to 512 tokens on nearly every question
    order = ["gemma3-completions", "smollm2-reason", "smollm2-plain", "smollm2-answer-only"]
    jobs = [Job(b, c, banks[b][["id", "prompt"]]) for c in order for b in ("basics", "maths40")]
    frames: dict[tuple[str, str], pd.DataFrame] = {}
    verify_job: list[Job] = []

    def then_verify(job: Job) -> Job:
        df = frame(job, banks[job.bank])
        frames[(job.bank, job.config)] = df
        near = df.assign(d=(df["tokens"] - VERIFY_LIMIT).abs()).sort_values(["d", "id"]).head(VERIFY_N)
        v = Job(job.bank, job.config, banks[job.bank].set_index("id").loc[near["id"], ["prompt"]].reset_index(),
                max_tokens=VERIFY_LIMIT)
        verify_job.append(v)
        return v

    journal = Journal(a.out / "journal.sqlite")
    try:
        asyncio.run(run_all(jobs, journal, {f"cutoff-{VERIFY_BANK}-{VERIFY_CONFIG}": then_verify}))
    finally:
        journal.close()
    wall = time.time() - t0

    results: dict[str, dict] = {b: {} for b in banks}
    for job in jobs:
        df = frames.get((job.bank, job.config))
        df = frame(job, banks[job.bank]) if df is None else df
        results[job.bank][job.config] = summarise(df)
        frames[(job.bank, job.config)] = df
    results = {b: {c: results[b][c] for c in CONFIGS} for b in results}
    check = verify(frames[(VERIFY_BANK, VERIFY_CONFIG)], verify_job[0])
    runs_on = [(b, c) for b in results for c in CONFIGS if results[b][c]["limits"]["512"]["cut_off_share"] > RUNS_ON]
    rest = [(b, c) for b in results for c in CONFIGS if (b, c) not in runs_on]
    chosen = next((L for L in LIMITS if all(results[b][c]["limits"][str(L)]["cut_off_share"] <= TOLERATED
                                            for b, c in rest)), None)
    per_bank = {b: next((L for L in LIMITS if all(results[b][c]["limits"][str(L)]["cut_off_share"] <= TOLERATED
                                                  for bb, c in rest if bb == b)), None) for b in results}
    cost = ({f"{b}/{c}": results[b][c]["limits"][str(chosen)]["seconds_per_answer"] for b, c in rest}
            if chosen else {})
    table = markdown(results, runs_on)
    print(table)
    print(f"\nruns on at any limit (cut off at 512 on more than {pct(RUNS_ON)} of a bank): "
          + (", ".join(f"{c} on {b}" for b, c in runs_on) or "none"))
    c, n = check, check["n"]
    print(f"\nverification ({c['configuration']} on {c['bank']}, the {n} questions nearest {VERIFY_LIMIT} tokens, "
          f"asked again at {VERIFY_LIMIT}): {c['derived_agrees']}/{n} derived flags (>= L tokens) agree with the "
          f"server's ({c['really_cut_off']} really cut off, {c['derived_cut_off']} derived, {c['exactly_L_tokens']} "
          f"with exactly {VERIFY_LIMIT} tokens at 512); the > L rule {c['more_than_L_rule_agrees']}/{n}; token counts "
          f"{c['tokens_agree']}/{n}; text a prefix of the 512 answer {c['text_is_prefix_of_512']}/{n}; s/answer at "
          f"{VERIFY_LIMIT} measured {c['seconds_per_answer_measured_at_64']:.2f}, estimated "
          f"{c['seconds_per_answer_estimated_at_64']:.2f}")
    if chosen:
        print(f"\nrecommended default: {chosen} tokens (the smallest limit at which every (bank, configuration) that "
              f"does not run on has at most {pct(TOLERATED)} of its answers cut off); seconds per answer there: "
              + ", ".join(f"{k} {v:.2f}" for k, v in cost.items()))
        print("the same rule on one bank alone: " + ", ".join(f"{b} {L}" for b, L in per_bank.items()))
    else:
        print(f"\nno limit up to {MAX_TOKENS} leaves every configuration that does not run on within {pct(TOLERATED)}")
    print(f"\nwall time {wall:.0f} s")
    (a.out / "cutoff.json").write_text(json.dumps({
        "settings": {"limits": LIMITS, "asked_at": MAX_TOKENS, "basics_sample": a.sample, "seed": a.seed,
                     "temperature": 0, "concurrency_per_server": 2, "runs_on_above": RUNS_ON,
                     "tolerated_cut_off": TOLERATED, "configurations": {k: {"model": v[0], "system": v[1]}
                                                                        for k, v in CONFIGS.items()}},
        "results": results, "runs_on": [f"{c} on {b}" for b, c in runs_on], "verification": check,
        "recommended_max_tokens": chosen, "recommended_per_bank": per_bank,
        "seconds_per_answer_at_recommended": cost, "wall_s": round(wall, 1),
        "markdown": table}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
