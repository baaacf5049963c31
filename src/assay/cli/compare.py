"""``assay compare``: which of several models is better, which are tied, where each ranks, every claim at once."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer
from rich.table import Table

from ..errors import AssayInputError
from ._common import app, emit as _emit, guard as _guard, out as _out


def read_scores(sources: list[Path], *, model_col: str, item_col: str, score_col: str, cluster_col: Optional[str],
                epoch_col: Optional[str], runs: list[str], journal: Optional[Path], bank: Optional[Path] = None,
                scorer: str = "exact"):
    """One long table (model, item, score[, cluster][, epoch]) from score files, tool logs and journal runs."""
    import pandas as pd

    from ..data import logs, read_plain

    frames = []
    for src in sources:
        fmt = logs.detect_format(src)
        if fmt in ("lmeval", "inspect", "helm"):
            t = logs.read_any(src, format=fmt)
            # one question per (task, item): items of different tasks in one log do not collide
            item = (t["task"].astype(str) + "/" + t["item"].astype(str)) if t["task"].nunique() > 1 else t["item"]
            f = pd.DataFrame({"model": t["model"].astype(str), "item": item.astype(str), "score": t["score"]})
            if "repeat" in t and t["repeat"].notna().any():
                f["epoch"] = t["repeat"]
            frames.append(f)
            continue
        t = read_plain(src, text_columns=tuple(c for c in (model_col, item_col, cluster_col) if c))
        cols = {"model": model_col, "item": item_col, "score": score_col}
        if cluster_col:
            cols["cluster"] = cluster_col
        if epoch_col:
            cols["epoch"] = epoch_col
        missing = [c for c in cols.values() if c not in t.columns]
        if missing:
            raise AssayInputError(f"{src}: no column {', '.join(map(repr, missing))}; its columns are "
                                  f"{', '.join(map(str, t.columns))} (map yours with --model-col, --item-col, "
                                  "--score-col, --cluster-col, --epoch-col)")
        frames.append(t[list(cols.values())].rename(columns={v: k for k, v in cols.items()}))
    if runs:
        frames.append(_journal_scores(runs, journal, bank, scorer))
    if not frames:
        raise AssayInputError("give at least one score file, log or --run RUN_ID")
    table = pd.concat(frames, ignore_index=True, sort=False)
    return table


def _journal_scores(runs: list[str], journal: Optional[Path], bank: Optional[Path], scorer: str):
    """Scores of journaled runs: each run's answers matched to the bank's questions by their prompt and scored
    against the bank's references (each run is one model, named by its run id)."""
    import pandas as pd

    from ..data import read_plain
    from ..models.journal import Journal, default_path
    from ..models.scoring import score_response

    if bank is None:
        raise AssayInputError("--run needs --bank FILE: the questions the run asked (id, prompt, reference and "
                              "optionally a scorer column) to score its answers against")
    b = read_plain(bank, text_columns=("id",))
    missing = [c for c in ("id", "prompt", "reference") if c not in b.columns]
    if missing:
        raise AssayInputError(f"{bank}: no column {', '.join(map(repr, missing))}; a bank has id, prompt, reference")
    by_prompt = {str(p): i for i, p in enumerate(b["prompt"])}
    j = Journal(journal or default_path())
    try:
        frames = []
        for r in runs:
            rec = j.records(r)
            if rec.empty:
                raise AssayInputError(f"run {r!r} has no records in the journal {j.path}")
            rows = [(by_prompt.get(str(p)), t) for p, t in zip(rec["prompt"], rec.itertuples(index=False))]
            rows = [(i, t) for i, t in rows if i is not None and t.error is None]
            if not rows:
                raise AssayInputError(f"none of run {r!r}'s prompts is a prompt of {bank}: give the bank it asked")
            out = []
            for i, t in rows:
                sc = b["scorer"].iloc[i] if scorer in b.columns else scorer
                o = score_response(t.text, None, b["reference"].iloc[i], str(sc), outcome=t.outcome,
                                   prompt=b["prompt"].iloc[i], finish_reason=t.finish_reason)
                out.append({"model": r, "item": str(b["id"].iloc[i]), "score": o.final_score})
            frames.append(pd.DataFrame(out))
    finally:
        j.close()
    return pd.concat(frames, ignore_index=True)


def _print_compare(res, requires: list[tuple[bool, str]]) -> None:
    p = res.params
    _out.print(f"compare: {len(res.models)} models on {res.n} questions every model answered; {p['guarantee']} "
               f"guarantee, delta = {res.level['delta']:g}" + (f", margin {p['margin']:g}" if p.get("margin") else "")
               + f", seed = {res.seed}", highlight=False)
    _out.print(f"estimand: {res.info['estimand']}", highlight=False)
    t = Table()
    for c in ("model", "estimate", "interval", "rank", "tier", "may be best"):
        t.add_column(c, justify="left" if c in ("model", "interval") else "right")
    for r in res.models.sort_values(["tier", "estimate"], ascending=[True, False]).itertuples(index=False):
        rank = str(r.rank_low) if r.rank_low == r.rank_high else f"{r.rank_low}-{r.rank_high}"
        t.add_row(str(r.model), f"{r.estimate:.4f}", f"[{r.ci_low:.4f}, {r.ci_high:.4f}]", rank, str(r.tier),
                  "yes" if r.may_be_best else "")
    _out.print(t)
    t = Table()
    for c in ("a", "b", "mean(a) - mean(b)", "simultaneous interval", "verdict", "questions", "to resolve (est.)"):
        t.add_column(c, justify="left" if c in ("a", "b", "simultaneous interval", "verdict") else "right")
    for r in res.pairs.itertuples(index=False):
        need = "" if r.items_to_resolve != r.items_to_resolve else (
            "no difference seen" if r.items_to_resolve == float("inf") else f"{int(r.items_to_resolve):,}")
        t.add_row(str(r.model_a), str(r.model_b), f"{r.estimate:+.4f}", f"[{r.ci_low:+.4f}, {r.ci_high:+.4f}]",
                  str(r.verdict), str(r.n_items), need)
    _out.print(t)
    for s in res.statements()[-1:]:
        _out.print(s, highlight=False)
    for w in res.warnings:
        _out.print(f"note: {w}", highlight=False)
    for ok, line in requires:
        _out.print(("require ok: " if ok else "require FAILED: ") + line, highlight=False)
    _out.print(f"Guarantee: {res.level['meaning']}.", highlight=False)


@app.command()
@_guard
def compare(
    sources: Optional[List[Path]] = typer.Argument(None, help="Score files (CSV / Parquet / JSONL, one row per model and question), lm-eval --log_samples output, inspect-ai .eval logs or HELM per-instance files."),
    run: Optional[List[str]] = typer.Option(None, "--run", help="A journal run of scored answers (several allowed)."),
    journal: Optional[Path] = typer.Option(None, "--journal", help="The journal of --run (default $ASSAY_JOURNAL or ~/.cache/assay/journal.sqlite)."),
    bank: Optional[Path] = typer.Option(None, "--bank", help="With --run: the questions asked (id, prompt, reference), to score the run's answers."),
    scorer: str = typer.Option("exact", "--scorer", help="With --run: the scorer (exact, numeric, choice, label, contains) or a column of --bank naming each question's."),
    model_col: str = typer.Option("model", "--model-col", help="Column naming the model."),
    item_col: str = typer.Option("item", "--item-col", help="Column naming the question."),
    score_col: str = typer.Option("score", "--score-col", help="Column with the score."),
    cluster_col: Optional[str] = typer.Option(None, "--cluster-col", help="Column naming each question's cluster (questions sampled in groups)."),
    epoch_col: Optional[str] = typer.Option(None, "--epoch-col", help="Column numbering repeated answers to one question (averaged first)."),
    bounds: Optional[List[float]] = typer.Option(None, "--bounds", help="The scores' range LOW HIGH (default 0 1); give it twice: --bounds 0 --bounds 10."),
    guarantee: str = typer.Option("asymptotic", "--guarantee", help="asymptotic (paired, cluster-robust, simultaneous) or finite (finite-sample, anytime-valid)."),
    delta: float = typer.Option(0.05, "--delta", "--alpha", help="Error level of every claim at once (default 0.05)."),
    margin: Optional[float] = typer.Option(None, "--margin", help="Equivalence margin: a pair whose interval contains 0 and lies inside +-margin is 'equivalent'."),
    require: Optional[List[str]] = typer.Option(None, "--require", help="A claim that must be certified, or exit 1: 'A>B', or 'A>=B-0.01' (A not worse than B by more than 0.01). Several allowed."),
    require_complete: bool = typer.Option(False, "--require-complete", help="Refuse when some model lacks questions another answered."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Seed of every random draw (the bootstrap; the finite guarantee's reading order; live, the order the bank is asked in)."),
    endpoint: Optional[List[str]] = typer.Option(None, "--endpoint", help="Live: ask the models (--model, several) questions of --bank until every pair is resolved; one endpoint for all, or one per --model."),
    model: Optional[List[str]] = typer.Option(None, "--model", help="Live: a model name as its endpoint knows it (several)."),
    completions: Optional[List[str]] = typer.Option(None, "--completions", help="Live: a --model to ask through /v1/completions (a pretrained model)."),
    budget: int = typer.Option(100, "--budget", help="Live: at most this many questions per model."),
    batch: int = typer.Option(10, "--batch", help="Live: questions asked per round before checking whether every pair is resolved."),
    max_tokens: int = typer.Option(64, "--max-tokens", help="Live: completion tokens per answer."),
    api_key_env: Optional[str] = typer.Option(None, "--api-key-env", help="Live: the NAME of the environment variable holding the key."),
    run_id: str = typer.Option("compare", "--run-id", help="Live: the journal run (rerun to resume; answers already paid for are read)."),
    policy: str = typer.Option("wrong", "--policy", help="Live: what an unparseable, too long or refused answer counts as: wrong or correct."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON on stdout."),
    out: Optional[Path] = typer.Option(None, "-o", "--out", help="Also write the JSON result to this file."),
    report: Optional[Path] = typer.Option(None, "--report", help="Also write a self-contained HTML report."),
) -> None:
    """Which of several models is better, which are tied, where each ranks: every claim holds at once."""
    from .. import compare as cmp

    if bounds is not None and len(bounds) != 2:
        raise AssayInputError(f"--bounds takes two numbers, LOW and HIGH (--bounds 0 --bounds 10); got {bounds}")
    if endpoint or model:
        res = _live(endpoint or [], model or [], completions or [], bank=bank, scorer=scorer, budget=budget,
                    batch=batch, max_tokens=max_tokens, api_key_env=api_key_env, journal=journal, run_id=run_id,
                    delta=delta, margin=margin, seed=0 if seed is None else seed, policy=policy)
        checks = cmp.check_require(res, list(require or []))
        _emit(res, as_json, out, report, lambda: _print_compare(res, checks))
        if not all(ok for ok, _ in checks):
            raise typer.Exit(1)
        return
    table = read_scores(list(sources or []), model_col=model_col, item_col=item_col, score_col=score_col,
                        cluster_col=cluster_col, epoch_col=epoch_col, runs=list(run or []), journal=journal,
                        bank=bank, scorer=scorer)
    res = cmp.evaluate(table, bounds=tuple(bounds) if bounds else (0.0, 1.0), guarantee=guarantee, delta=delta,
                       margin=margin, seed=seed, require_complete=require_complete)
    checks = cmp.check_require(res, list(require or []))
    if checks:
        res.info["require"] = [{"claim": line.split(":")[0], "certified": ok, "detail": line} for ok, line in checks]
    _emit(res, as_json, out, report, lambda: _print_compare(res, checks))
    if not all(ok for ok, _ in checks):
        raise typer.Exit(1)


def _live(endpoints: list[str], models: list[str], completions: list[str], *, bank, scorer, budget, batch, max_tokens,
          api_key_env, journal, run_id, delta, margin, seed, policy):
    """``assay compare --endpoint ... --model A --model B --bank FILE``: ask until every pair is resolved."""
    import sys

    from ..compare.live import query_until_resolved
    from ..models import OpenAIChatModel
    from ..models.journal import default_path
    from ..models.openai_model import OpenAICompletionModel, check_model

    if bank is None:
        raise AssayInputError("live: give --bank FILE, the questions to ask (id, prompt, reference)")
    if len(models) < 2:
        raise AssayInputError("live: give at least two --model")
    if len(set(models)) != len(models):
        raise AssayInputError(f"live: each --model once; got {', '.join(models)}")
    if len(endpoints) not in (1, len(models)):
        raise AssayInputError(f"live: give one --endpoint for every model, or one per --model ({len(models)}); got "
                              f"{len(endpoints)}")
    unknown = [c for c in completions if c not in models]
    if unknown:
        raise AssayInputError(f"--completions {', '.join(unknown)}: not a --model")
    urls = endpoints * len(models) if len(endpoints) == 1 else endpoints
    made = {}
    for name, url in zip(models, urls):
        cls = OpenAICompletionModel if name in completions else OpenAIChatModel
        made[name] = cls(name, base_url=url, api_key_env=api_key_env, max_tokens=max_tokens, temperature=0.0)
        check_model(made[name])

    def progress(asked: int, total: int, unresolved: int) -> None:
        sys.stderr.write(f"compare: {asked}/{total} questions asked of each model, {unresolved} pair(s) unresolved\n")
        sys.stderr.flush()

    from ..data import read_plain

    table = read_plain(bank, text_columns=("id",))
    return query_until_resolved(made, table, scorer=scorer, policy=policy, journal=journal or default_path(),
                                run_id=run_id, delta=delta, margin=margin, budget=budget, batch=batch, seed=seed,
                                progress=progress)
