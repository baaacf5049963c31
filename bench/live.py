"""Every live path with real budgets against the local real model (``make live``; not CI).

Starts llama-cpp-python servers on 127.0.0.1 (SmolLM2-135M-Instruct for the model under test, Gemma 3 270M
pretrained as the judge, through /v1/completions), runs each step through assay's public functions with a journal
under ``--out`` (so an interrupted run resumes), and prints the numbers that docs/live.md reports.

Steps (``--steps``, default all):

* ``history``: a FAQ history of real generations: 21 variants of the served model (system prompt x few-shot x
  temperature / seed) answer 200 items of the shipped ``basics`` bank (50 of each shape); their raw answers go to
  ``OUT/history_answers.parquet`` (scored with the current scorers when read, so better extraction rules rescore
  without asking again), and ``tests/fixtures/live_history.parquet`` when ``--fixture`` is given.
* ``history_gemma``: a second family for that history: Gemma 3 270M (pretrained, /v1/completions) on the same items,
  greedy and at temperature 0.8 with two seeds;
* ``query``: ``assay query`` on the whole basics bank (303 items), with every outcome counted;
* ``scope``: ``assay scope`` on DyVal (context window 2048) and on reasoning-gym's chain_sum, 100 tickets each;
* ``judge``: ``assay judge`` (Gemma 3 270M, few-shot rubric, /v1/completions) on the query step's answers, then
  ``assay autoeval`` with a third of them human-labelled (here: the reference-based score), against R-Eval alone;
* ``psdme``: ``assay psdme`` on streamed latencies (ttft and total) of three serving configurations (max tokens
  16 / 64 / 256), 60 requests each, recorded in the journal;
* ``faq``: FAQ on the history of the ``history`` step, holding out each variant in turn (its recorded answers are
  the truth, so coverage and saving are measured), at budgets of 10% and 25%;
* ``eval``: ``assay eval`` with every section on three configurations of the served model (docs/eval.md): a first
  pass, human labels on a third of the shared sample, and a second pass that asks only the judge;

Every number is printed and collected in ``OUT/summary.json``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
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


def assay(*args, check: bool = True) -> subprocess.CompletedProcess:
    """Run the ``assay`` command line (the one users run) and echo its human output."""
    cmd = [sys.executable, "-m", "assay.cli", *map(str, args)]
    print("$ assay " + " ".join(map(str, args)), flush=True)
    res = subprocess.run(cmd, capture_output=True, text=True)
    print(res.stdout[-4000:], flush=True)
    if check and res.returncode != 0:
        raise SystemExit(f"assay failed ({res.returncode}): {res.stderr[-3000:]}")
    return res


def step_query(url: str, out: Path) -> dict:
    from assay.datasets import path

    assay("query", path("basics"), "--model", "smollm2", "--endpoint", url, "--reference-col", "reference",
          "--scorer", "scorer", "--max-tokens", 64, "--concurrency", 2, "--journal", out / "journal.sqlite",
          "--run-id", "live-query", "-o", out / "answers.parquet")
    rows = pd.read_parquet(out / "answers.parquet")
    by_shape = rows.assign(shape=rows["id"].str.split("-").str[0]).groupby("shape")
    return {"n": len(rows), "accuracy": float(rows["score"].mean()),
            "outcomes": rows["status"].value_counts().to_dict(),
            "accuracy_by_shape": by_shape["score"].mean().round(4).to_dict(),
            "unparseable_by_shape": by_shape["status"].apply(lambda s: int((s == "unparseable").sum())).to_dict()}


def step_scope(url: str, out: Path) -> dict:
    res = {}
    r = assay("scope", "--generator", "dyval", "--endpoint", url, "--model", "smollm2", "--budget", 100, "--batch", 20,
              "--certify", 0.9, "--context-window", 2048, "--max-tokens", 64, "--concurrency", 2, "--seed", 0,
              "--journal", out / "journal.sqlite", "--run-id", "live-scope-dyval", "-o", out / "scope_dyval.json")
    d = json.loads((out / "scope_dyval.json").read_text())
    res["dyval"] = {"tickets": d["tickets"], "pool": d["pool"], "certified": d["n_certified"],
                    "failures": d["failures"], "seconds": d["seconds"]}
    space = out / "chain_sum.yaml"
    space.write_text("parameters:\n  terms: {type: integer, low: 2, high: 6}\n  digits: {type: integer, low: 1, high: 4}\n")
    assay("scope", "--generator", "reasoning_gym:chain_sum", "--space", space, "--endpoint", url, "--model", "smollm2",
          "--budget", 100, "--batch", 20, "--certify", 0.9, "--max-tokens", 64, "--concurrency", 2, "--seed", 0,
          "--journal", out / "journal.sqlite", "--run-id", "live-scope-rg", "-o", out / "scope_rg.json")
    d = json.loads((out / "scope_rg.json").read_text())
    res["chain_sum"] = {"tickets": d["tickets"], "pool": d["pool"], "certified": d["n_certified"],
                        "failures": d["failures"], "seconds": d["seconds"]}
    return res


def step_judge(judge_url: str, out: Path) -> dict:
    import numpy as np

    rows = pd.read_parquet(out / "answers.parquet")
    rng = np.random.default_rng(0)
    rows["candidate"] = "smollm2"
    rows["loss_human"] = np.where(rng.random(len(rows)) < 1 / 3, 1.0 - rows["score"], np.nan)
    rows.to_parquet(out / "to_judge.parquet")
    assay("judge", out / "to_judge.parquet", "--model", "gemma3", "--endpoint", judge_url, "--completions",
          "--rubric", "fewshot", "--human-col", "loss_human", "--journal", out / "journal.sqlite", "--run-id",
          "live-judge", "--concurrency", 2, "-o", out / "judged.csv")
    lab = pd.read_csv(out / "judged.csv")
    truth = 1.0 - rows["score"].to_numpy()
    res = {"n": len(lab), "outcomes": lab["outcome"].value_counts().to_dict(),
           "judge_agrees_with_reference": float((lab["loss_judge"].round() == truth).mean()),
           "true_risk": float(truth.mean())}
    for method in ("r-eval", "r-autoeval+"):
        for target in (0.6, 0.7, 0.8, 0.9):
            r = assay("autoeval", out / "judged.csv", "--risk-target", target, "--method", method, "--seed", 0,
                      "--json", check=False)
            c = json.loads(r.stdout)["candidates"][0]
            res[f"{method}@{target}"] = {"certified": bool(c["certified"]), "risk_upper": c["risk_upper"],
                                         "n": c["n"], "N": c["N"]}
    return res


def step_psdme(url: str, out: Path) -> dict:
    from assay.datasets import load_basics

    bank = load_basics().groupby("shape").head(15)
    bank.to_csv(out / "psdme_bank.csv", index=False)
    runs = []
    for mt in (16, 64, 256):
        rid = f"live-psdme-max{mt}"
        assay("query", out / "psdme_bank.csv", "--model", "smollm2", "--endpoint", url, "--stream", "--max-tokens", mt,
              "--concurrency", 1, "--journal", out / "journal.sqlite", "--run-id", rid)
        runs.append(rid)
    assay("runs", "export", *runs, "--journal", out / "journal.sqlite", "-o", out / "latency.csv")
    res = {}
    for kpi in ("ttft_s", "latency_s"):
        r = assay("psdme", out / "latency.csv", "--config-col", "run_id", "--kpi-col", kpi, "--seed", 0, "--json")
        res[kpi] = json.loads(r.stdout)
    return {k: {"n": v["n"], "guaranteed": v.get("configs", v.get("table"))} for k, v in res.items()}


EVAL_CONFIGS = [("brief", "Answer briefly.", 32), ("plain", None, 48), ("expert", SYSTEMS["expert"], 64)]


def step_eval(urls: list[str], judge_url: str, out: Path, sample: int = 60, faq_budget: int = 30,
              scope_budget: int = 40) -> dict:
    """``assay eval`` as a user runs it: three configurations of the served model (system prompt and max tokens),
    every section, on the 200 basics questions of the shipped history; the human labels are written after a first
    pass (a third of the sampled answers, graded by the bank's scorer standing in for a human), and the second pass
    asks only the judge's verdicts. Configuration k is served by ``urls[k % len(urls)]``. Not streamed:
    llama-cpp-python's server reports no token counts in a stream, and tokens and cost are KPIs here (the time to
    the first token is measured by the ``psdme`` step). The window is declared as 1,024 tokens, so DyVal keeps the
    templates whose prompts fit it (one server thread prefills a 1,800-token prompt in about 15 s)."""
    from assay.eval.spec import load_campaign
    from assay.eval.sample import campaign_run_id

    d = out / "eval"
    d.mkdir(parents=True, exist_ok=True)
    hist = ROOT / "examples" / "basics_history.parquet"
    bank = history_bank()
    bank.to_csv(d / "bank.csv", index=False)
    models = []
    for k, (name, system, max_tokens) in enumerate(EVAL_CONFIGS):
        models.append("\n".join(x for x in [
            "[[model]]", f'name = "{name}"', f'endpoint = "{urls[k % len(urls)]}"', 'model = "smollm2"',
            f'system = "{system}"' if system else "", f"max_tokens = {max_tokens}",
            "price_in = 0.05", "price_out = 0.10", "context_window = 1024", "concurrency = 2", "timeout = 120", ""]
            if x != ""))
    labels = d / "human.csv"
    if not labels.exists():
        pd.DataFrame({"model": [], "item": [], "loss_human": []}).to_csv(labels, index=False)
    (d / "campaign.toml").write_text("\n".join([
        "[campaign]", 'name = "smollm2-live"', "seed = 0", 'out = "report"', 'journal = "journal.sqlite"', "",
        *models, "[bank]", 'path = "bank.csv"', 'scorer_col = "scorer"', f"sample = {sample}", "",
        "[faq]", f'history = "{hist}"', f"budget = {faq_budget}", "",
        "[scope]", 'generator = "dyval"', f"budget = {scope_budget}", "certify = 0.5", "",
        "[judge]", f'endpoint = "{judge_url}"', 'model = "gemma3"', "completions = true", 'rubric = "fewshot"',
        'human_labels = "human.csv"', "risk_target = 0.9", "",
        "[kpi]", 'metrics = ["latency_s", "completion_tokens", "cost"]', 'select = "best_mean"', "",
        "[siren]", "budgets = [1, 2, 3]", "splits = 50", ""]))
    toml = d / "campaign.toml"
    t0 = time.perf_counter()
    assay("eval", "--plan", toml)
    assay("eval", toml)
    first = time.perf_counter() - t0
    rep = json.loads((d / "report" / "report.json").read_text())
    sample_rows = pd.DataFrame(rep["sample"])
    if not pd.read_csv(labels).shape[0]:
        import numpy as np

        rng = np.random.default_rng(0)
        items = sorted(sample_rows["item"].unique())
        chosen = set(rng.choice(items, size=len(items) // 3, replace=False))
        lab = sample_rows[sample_rows["item"].isin(chosen)]
        pd.DataFrame({"model": lab["model"], "item": lab["item"], "loss_human": 1.0 - lab["score"]}).to_csv(
            labels, index=False)
    t1 = time.perf_counter()
    assay("eval", toml)
    second = time.perf_counter() - t1
    rep = json.loads((d / "report" / "report.json").read_text())
    c = load_campaign(toml)
    return {"run_id": campaign_run_id(c), "first_pass_s": round(first, 1), "second_pass_s": round(second, 1),
            "summary": rep["summary"], "costs": rep["costs"],
            "skipped": {k: v["skipped"] for k, v in rep["sections"].items() if v["skipped"]}}


def scored_history(out: Path) -> pd.DataFrame:
    """The history step's answers scored now (models x items, 0/1), from OUT or the test fixture."""
    from assay.datasets import load_basics
    from assay.models.scoring import score_rows

    path = out / "history_answers.parquet"
    if not path.exists():
        path = ROOT / "tests" / "fixtures" / "live_history.parquet"
    answers = pd.read_parquet(path)
    bank = load_basics().set_index("id").loc[answers["item"]]
    outs = score_rows(answers["text"], bank["reference"], list(bank["scorer"]), outcomes=answers["outcome"],
                      prompts=list(bank["prompt"]))
    answers["score"] = [o.final_score for o in outs]
    answers["status"] = [o.status for o in outs]
    return answers


def step_faq(out: Path, seeds: int = 40, budgets=(0.1, 0.25)) -> dict:
    """FAQ on real variants: hold out each prompt template (its three sampling settings together: a family
    split), fit on the others, and estimate each held-out variant's accuracy on the 200 items from a budget, over
    ``seeds`` seeds; the variant's recorded answers are the truth."""
    import numpy as np

    import assay

    answers = scored_history(out)
    wide = answers.pivot(index="model", columns="item", values="score")
    family = wide.index.str.rsplit("-", n=1).str[0]
    rows = []
    for fam in sorted(set(family)):
        hist, new = wide[family != fam], wide[family == fam]
        for budget in budgets:
            for seed in range(seeds):
                r = assay.faq.evaluate(hist, new, budget=budget, seed=seed)
                est = r.estimates
                for rec in est.to_dict("records"):
                    rows.append({"family": fam, "model": rec["model"], "budget": budget, "seed": seed,
                                 "estimate": rec["estimate"], "ci_low": rec["ci_low"], "ci_high": rec["ci_high"],
                                 "truth": rec["truth"], "gain": rec.get("gain_vs_uniform", np.nan)})
    df = pd.DataFrame(rows)
    df["covered"] = (df["ci_low"] <= df["truth"]) & (df["truth"] <= df["ci_high"])
    df["width"] = df["ci_high"] - df["ci_low"]
    df.to_csv(out / "faq_variants.csv", index=False)
    res = {"variants": int(wide.shape[0]), "items": int(wide.shape[1]), "families": int(len(set(family))),
           "mean_accuracy": float(wide.to_numpy().mean()), "runs_per_budget": int(len(df) / len(budgets))}
    n_items = wide.shape[1]
    for budget, g in df.groupby("budget"):
        cov = float(g["covered"].mean())
        # realised saving: the variance of the uniform sample mean (without replacement) over FAQ's mean squared
        # error, per held-out variant (its MSE over the seeds), averaged over variants
        n = int(round(budget * n_items))
        per = g.groupby("model").apply(lambda h: pd.Series({
            "mse": float(((h["estimate"] - h["truth"]) ** 2).mean()),
            "uniform_var": float(h["truth"].iloc[0] * (1 - h["truth"].iloc[0]) / n * (n_items - n) / (n_items - 1))}))
        ratio = (per["uniform_var"] / per["mse"].clip(lower=1e-12)).replace([np.inf], np.nan)
        res[f"budget_{budget}"] = {"queries": n, "coverage": round(cov, 4),
                                   "mc_se": round(float(np.sqrt(cov * (1 - cov) / len(g))), 4),
                                   "mean_width": round(float(g["width"].mean()), 4),
                                   "estimated_gain_vs_uniform": round(float(g["gain"].mean()), 3),
                                   "realised_ess_ratio_median": round(float(ratio.median()), 3)}
    print(json.dumps(res, indent=2))
    return res


def step_history_gemma(urls: list[str], out: Path, max_tokens: int = 32) -> pd.DataFrame:
    """A second family for the FAQ history: Gemma 3 270M (pretrained) answers the same 200 items through
    /v1/completions ("Question: ...\nAnswer:", stopped at a blank line), greedy and at temperature 0.8 with two
    seeds; appended to OUT/history_answers.parquet."""
    import asyncio

    from assay.models import OpenAICompletionModel, run_prompts
    from assay.models.journal import Journal

    bank = history_bank()
    journal = Journal(out / "journal.sqlite")
    rows = []

    async def one(name: str, temp: float, seed, url: str) -> None:
        model = OpenAICompletionModel("gemma3", base_url=url, temperature=temp, seed=seed, max_tokens=max_tokens,
                                      stop=["\n\n", "Question:"], timeout=120)
        res = await run_prompts(model, [f"Question: {p}\nAnswer:" for p in bank["prompt"]], journal=journal,
                                run_id=f"history-{name}", concurrency=1)
        await model.aclose()
        for item, r in zip(bank["id"], res.responses):
            rows.append({"model": name, "item": item, "text": r.text, "outcome": r.outcome, "error": r.error})
        print(f"  {name}: {res.stats['done']} answers ({res.stats['cached']} from the journal)", flush=True)

    async def main() -> None:
        todo = [(f"gemma3-base-{t}", temp, seed) for t, temp, seed in SAMPLING]
        async def worker(url):
            while todo:
                await one(*todo.pop(0), url)
        await asyncio.gather(*(worker(u) for u in urls))

    asyncio.run(main())
    journal.close()
    new = pd.DataFrame(rows)
    path = out / "history_answers.parquet"
    old = pd.read_parquet(path) if path.exists() else pd.DataFrame()
    old = old[~old["model"].isin(new["model"])] if len(old) else old
    df = pd.concat([old, new]).sort_values(["model", "item"]).reset_index(drop=True)
    df.to_parquet(path, index=False)
    return df


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "live-out")
    ap.add_argument("--steps", default="history,history_gemma,query,scope,judge,psdme,faq,eval")
    ap.add_argument("--servers", type=int, default=2, help="model-under-test servers (one thread each)")
    ap.add_argument("--urls", default=None, help="use running servers (comma-separated base URLs) instead")
    ap.add_argument("--judge-url", default=None, help="use a running judge server (base URL) instead")
    ap.add_argument("--fixture", action="store_true", help="also write tests/fixtures/live_history.parquet")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    from contextlib import ExitStack

    from live_server import LiveServer, smollm2_path

    from live_server import gemma3_path

    summary_path = args.out / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    with ExitStack() as stack:
        urls = args.urls.split(",") if args.urls else [
            stack.enter_context(LiveServer(smollm2_path(), alias="smollm2")).base_url for _ in range(args.servers)]
        steps = args.steps.split(",")
        if "history" in steps:
            df = step_history(urls, args.out)
            if args.fixture:
                df.to_parquet(ROOT / "tests" / "fixtures" / "live_history.parquet", index=False)
        if "history_gemma" in steps:
            gurls = args.judge_url.split(",") if args.judge_url else [
                stack.enter_context(LiveServer(gemma3_path(), alias="gemma3")).base_url for _ in range(2)]
            df = step_history_gemma(gurls, args.out)
            if args.fixture:
                df.to_parquet(ROOT / "tests" / "fixtures" / "live_history.parquet", index=False)
        for name, fn in (("query", step_query), ("scope", step_scope), ("psdme", step_psdme)):
            if name in steps:
                summary[name] = fn(urls[0], args.out)
        judge_urls: list[str] = [args.judge_url] if args.judge_url else []

        def judge_url() -> str:  # one judge server for every step that needs one
            if not judge_urls:
                judge_urls.append(stack.enter_context(LiveServer(gemma3_path(), alias="gemma3")).base_url)
            return judge_urls[0]

        if "judge" in steps:
            summary["judge"] = step_judge(judge_url(), args.out)
        if "faq" in steps:
            summary["faq"] = step_faq(args.out)
        if "eval" in steps:
            summary["eval"] = step_eval(urls, judge_url(), args.out)
        summary_path.write_text(json.dumps(summary, indent=2, default=str))
    print(json.dumps(summary, indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
