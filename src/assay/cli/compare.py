"""``assay compare``: which of several models is better, which are tied, where each ranks, the claims holding together.

Sources are score tables and tool logs (inspect-ai, lm-eval, HELM), each optionally named ``NAME=PATH``; a question is a
(task, item); a task scored several ways is read with ``--log-scorer``. Live (``--endpoint``), models named
``NAME=SERVED`` with ``--system NAME=TEXT`` are asked questions of a bank until every pair is resolved."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer
from rich.table import Table

from ..errors import AssayInputError
from ._common import app, emit as _emit, guard as _guard, out as _out


def split_source(raw: str) -> tuple[str | None, Path]:
    """``NAME=PATH`` -> (NAME, PATH); a path that exists, or that has no ``=``, is a path with no name."""
    if Path(raw).exists() or "=" not in raw:
        return None, Path(raw)
    name, path = raw.split("=", 1)
    name = name.strip()
    if not name:
        raise AssayInputError(f"{raw!r}: NAME=PATH needs a name before '='")
    if not Path(path).exists():
        raise AssayInputError(f"{path}: no such file or directory (from {raw!r}: NAME=PATH)")
    return name, Path(path)


def _choose(t, path: Path, wanted: list[str], task: str = "task"):
    """One scorer per task of a log: an inspect scorer, an lm-eval (metric, filter) as ``METRIC,FILTER`` (``,none``
    left out), an ``assay ingest`` table's metric. A task with one keeps it; with several, exactly one of the
    ``--log-scorer`` values must pick one (a value matches a scorer's whole label, its metric or its filter); none
    given, or none or two matching, is refused with the task's scorers named."""
    import pandas as pd

    flt = t["filter"].fillna("none").astype(str) if "filter" in t.columns else "none"
    label = (t["metric"].astype(str) + "," + flt).str.replace(r",none$", "", regex=True)
    t = t.assign(_choice=label)
    keep = []
    for name, g in t.groupby(task, sort=False):
        offered = list(dict.fromkeys(g["_choice"]))
        pick = [c for c in offered if any(w in (c, *c.split(",", 1)) for w in wanted)] if wanted else []
        if len(offered) == 1 and len(pick) <= 1:
            pick = offered
        if len(pick) != 1:
            said = ("choose one with --log-scorer (METRIC,FILTER, or a metric or filter that settles it; give it "
                    "once per task that needs it)" if not wanted else
                    f"--log-scorer {' / '.join(wanted)} matches {len(pick) or 'none'} of them")
            raise AssayInputError(f"{path}: task {name!r} has {len(offered)} scorers ({'; '.join(offered)}); {said}")
        keep.append(g[g["_choice"] == pick[0]].assign(metric=pick[0]))
    return pd.concat(keep).drop(columns="_choice")


def _unused_scorers(frames, wanted: list[str]) -> None:
    """Every --log-scorer value must pick some task's scorer: one that matches none is a typo, refused, not ignored."""
    offered: set[str] = set()
    for f in frames:
        if "scorer" in f.columns:
            for label in f["scorer"].dropna().astype(str).unique():
                offered.update((label, *label.split(",", 1)))
    unused = [w for w in wanted if w not in offered]
    if unused:
        raise AssayInputError(f"--log-scorer {', '.join(unused)}: no task of these sources is scored that way (their "
                              f"scorers: {', '.join(sorted(x for x in offered if ',' not in x)) or 'none'})")


def _read_log(path: Path, fmt: str, log_scorer: list[str]):
    """A tool log as compare's long table: model, task, item, score, epoch, hash, scorer, log."""
    import pandas as pd

    from ..data import logs

    if fmt == "inspect":
        t = _choose(logs.read_inspect(path), path, log_scorer)
    elif fmt == "lmeval":
        t = _choose(logs.read_lmeval(path, choices="all"), path, log_scorer)
    else:
        if len(log_scorer) > 1:
            raise AssayInputError(f"{path}: a HELM run is read with one metric; got --log-scorer "
                                  f"{', '.join(log_scorer)}")
        t = logs.read_helm(path, metric=log_scorer[0] if log_scorer else "exact_match")
    f = pd.DataFrame({"model": t["model"].astype(str).to_numpy(), "task": t["task"].astype(str).to_numpy(),
                      "item": t["item"].astype(str).to_numpy(), "score": t["score"].to_numpy(),
                      "epoch": t["repeat"].to_numpy(), "scorer": t["metric"].astype(str).to_numpy(),
                      "log": t["log"].astype(str).to_numpy()})
    if "item_hash" in t and t["item_hash"].notna().any():
        f["hash"] = [None if h is None or h != h else f"{fmt}:{h}" for h in t["item_hash"]]
    return f


def _read_table(path: Path, *, model_col, item_col, score_col, cluster_col, epoch_col, task_col, log_scorer):
    """A score table as compare's long table; ``task`` (or --task-col), ``epoch`` / ``repeat`` (or --epoch-col) and
    an ``assay ingest`` table's ``metric`` / ``filter`` / ``item_hash`` are understood."""
    from ..data import read_plain

    t = read_plain(path, text_columns=tuple(c for c in (model_col, item_col, cluster_col, task_col) if c))
    if task_col is None and "task" in t.columns:
        task_col = "task"
    if epoch_col is None:
        epoch_col = next((c for c in ("epoch", "repeat") if c in t.columns), None)
    cols = {"model": model_col, "item": item_col, "score": score_col}
    for role, col in (("task", task_col), ("cluster", cluster_col), ("epoch", epoch_col)):
        if col:
            cols[role] = col
    missing = [c for c in cols.values() if c not in t.columns]
    if missing:
        raise AssayInputError(f"{path}: no column {', '.join(map(repr, missing))}; its columns are "
                              f"{', '.join(map(str, t.columns))} (map yours with --model-col, --item-col, "
                              "--score-col, --task-col, --cluster-col, --epoch-col)")
    if "metric" in t.columns:  # an assay ingest table: one scorer (metric, filter) per task
        t = _choose(t.assign(_task=t[task_col].astype(str) if task_col else ""), path, log_scorer, "_task")
    elif log_scorer:
        raise AssayInputError(f"{path}: --log-scorer picks a scorer of a tool log (or of a table's 'metric' column); "
                              "this table has no 'metric' column")
    f = t[list(cols.values())].rename(columns={v: k for k, v in cols.items()})
    if "item_hash" in t.columns and t["item_hash"].notna().any():
        src = t["source"].astype(str) if "source" in t.columns else "table"
        f["hash"] = [None if h is None or h != h else f"{s}:{h}" for s, h in zip(src, t["item_hash"])]
    if "metric" in t.columns:
        f["scorer"] = t["metric"].astype(str).to_numpy()
    return f


def read_scores(sources: list, *, model_col: str, item_col: str, score_col: str, cluster_col: Optional[str],
                epoch_col: Optional[str], runs: list[str], journal: Optional[Path], bank: Optional[Path] = None,
                scorer: str = "exact", task_col: Optional[str] = None, log_scorer: Optional[list] = None):
    """One long table (model, item, score[, task][, cluster][, epoch][, hash]) from score files, tool logs and
    journal runs. A source ``NAME=PATH`` names what it holds: one model -> NAME, several -> NAME/model. Two sources
    that hold the same model on the same questions (two runs of one model) are refused until named."""
    import pandas as pd

    from ..data import logs

    log_scorer = list(log_scorer or [])
    frames = []
    for raw in sources:
        name, path = split_source(str(raw))
        fmt = logs.detect_format(path)
        if fmt in ("lmeval", "inspect", "helm"):
            f = _read_log(path, fmt, log_scorer)
            _one_run_per_model(f, path)
        else:
            f = _read_table(path, model_col=model_col, item_col=item_col, score_col=score_col,
                            cluster_col=cluster_col, epoch_col=epoch_col, task_col=task_col, log_scorer=log_scorer)
        if name is not None:
            found = list(dict.fromkeys(f["model"].astype(str)))
            f["model"] = name if len(found) == 1 else name + "/" + f["model"].astype(str)
        f["source"] = str(raw)
        frames.append(f)
    _unused_scorers(frames, log_scorer)
    if runs:
        frames.append(_journal_scores(runs, journal, bank, scorer).assign(source="journal"))
    if not frames:
        raise AssayInputError("give at least one score file, log or --run RUN_ID")
    _distinct_sources(frames)
    table = pd.concat(frames, ignore_index=True, sort=False)
    if "task" in table.columns:
        table["task"] = table["task"].fillna("")
    return table


def _one_run_per_model(f, path: Path) -> None:
    """Within one source, a model must not answer one question in two log files (two runs of one model)."""
    if f["log"].nunique() < 2:
        return
    per = f.drop_duplicates(["model", "task", "item", "epoch", "log"]).groupby(
        ["model", "task", "item", "epoch"])["log"].nunique()
    twice = per[per > 1]
    if len(twice):
        model, task = twice.index[0][0], twice.index[0][1]
        files = sorted(set(f[(f["model"] == model) & (f["task"] == task)]["log"]))
        raise AssayInputError(f"{path}: model {model!r} answers task {task!r} in {len(files)} logs "
                              f"({', '.join(Path(x).name for x in files[:3])}): two runs of one model. Give each run "
                              "its own name: assay compare NAME1=LOG1 NAME2=LOG2 ...")


def _distinct_sources(frames) -> None:
    """Two sources holding the same model name on shared questions are two runs of one model: name them."""
    seen: dict = {}
    for f in frames:
        src = str(f["source"].iloc[0])
        for model, g in f.groupby("model", sort=False):
            keys = set(zip(g["task"], g["item"])) if "task" in g else set(g["item"])
            for other, okeys in seen.get(model, []):
                if keys & okeys:
                    raise AssayInputError(f"{other} and {src} both hold model {model!r} on the same questions (two "
                                          f"runs of one model?): name them, e.g. assay compare A={other} B={src}")
            seen.setdefault(model, []).append((src, keys))


def _journal_scores(runs: list[str], journal: Optional[Path], bank: Optional[Path], scorer: str):
    """Scores of journaled runs: each run's answers matched to the bank's questions by their prompt and scored
    against the bank's references (each run is one model, named by its run id). A bank that repeats an id or a
    prompt is refused (an answer could not be told apart); a prompt answered twice in one run is refused too."""
    import collections

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
    check_bank_unique(b, bank)
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
            seen = collections.Counter(i for i, _ in rows)
            if max(seen.values()) > 1:
                twice = sorted(str(b["id"].iloc[i]) for i, c in seen.items() if c > 1)
                raise AssayInputError(f"run {r!r} holds more than one answer to question(s) {', '.join(twice[:5])} "
                                      f"of {bank}: one answer per question is compared")
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


def check_bank_unique(b, where) -> None:
    """A bank's ids and prompts must each be unique: a repeated prompt cannot tell its answers apart."""
    from ..data.tables import describe_rows

    for col in ("id", "prompt"):
        dup = b[col].astype(str).duplicated(keep=False)
        if dup.any():
            rows = b.index[dup]
            first = str(b[col][dup].iloc[0])
            raise AssayInputError(f"{where}: the bank repeats a{'n' if col == 'id' else ''} {col} ({first[:60]!r} at "
                                  f"{describe_rows(rows)}); each question needs its own {col}"
                                  + (": the answers to a repeated prompt cannot be told apart" if col == "prompt"
                                     else ""))


def _print_compare(res, requires: list[tuple[bool, str]]) -> None:
    from ..compare.api import _count, _epochs_line

    p = res.params
    asked = res.models["n_asked"] if "n_asked" in res.models else None
    where = (f"asked {asked.min()}-{asked.max()} questions each of the bank's {res.info['bank_size']} (goal "
             f"{p['goal']}{'' if p.get('k') is None else ' k=' + str(p['k'])})" if asked is not None and "goal" in p
             else f"on {_count(res.n, 'question')} every model answered")
    _out.print(f"compare: {len(res.models)} models {where}; "
               f"{p['guarantee']} guarantee, delta = {res.level['delta']:g}"
               + (f", margin {p['margin']:g}" if p.get("margin") else "") + f", seed = {res.seed}", highlight=False)
    for line in res.info.get("sources", []):
        _out.print(f"source: {line}", highlight=False)
    if res.info.get("scorers"):
        _out.print("scorers: " + "; ".join(f"{k}: {v}" for k, v in res.info["scorers"].items()), highlight=False)
    epochs = _epochs_line(res.info.get("epochs") or {})
    if epochs:
        _out.print(epochs, highlight=False)
    _out.print(f"estimand: {res.info['estimand']}", highlight=False)
    adaptive = "goal" in res.info
    t = Table()
    cols = ("model", "estimate", "interval", "rank", "tier", "may be best") + (("asked", "left") if adaptive else ())
    for c in cols:
        t.add_column(c, justify="left" if c in ("model", "interval", "left") else "right")
    for r in res.models.sort_values(["tier", "estimate"], ascending=[True, False]).itertuples(index=False):
        rank = str(r.rank_low) if r.rank_low == r.rank_high else f"{r.rank_low}-{r.rank_high}"
        row = [str(r.model), f"{r.estimate:.4f}", f"[{r.ci_low:.4f}, {r.ci_high:.4f}]" + (" *" if r.exact else ""),
               rank, str(r.tier), "yes" if r.may_be_best else ""]
        if adaptive:
            row += [f"{int(r.n_asked):,}", f"round {int(r.left_round)}: {r.left_reason}"]
        t.add_row(*row)
    _out.print(t)
    t = Table()
    for c in ("a", "b", "mean(a) - mean(b)", "interval", "verdict",
              "more to resolve (est.)" if adaptive else "to resolve (est.)"):
        t.add_column(c, justify="left" if c in ("a", "b", "interval", "verdict") else "right")
    for r in res.pairs.itertuples(index=False):
        need = "" if r.items_to_resolve != r.items_to_resolve else (
            "no difference seen" if r.items_to_resolve == float("inf") else f"{int(r.items_to_resolve):,}")
        t.add_row(str(r.model_a), str(r.model_b), f"{r.estimate:+.4f}",
                  f"[{r.ci_low:+.4f}, {r.ci_high:+.4f}]" + (" *" if r.exact else ""), str(r.verdict), need)
    _out.print(t)
    if res.models["exact"].any() or res.pairs["exact"].any():
        _out.print("* exact: the whole bank asked" if adaptive else
                   "* exact binomial interval: fewer than 5 answers off the common value", highlight=False)
    if res.task_pairs is not None and len(res.task_pairs):
        _print_tasks(res)
    for s in res.statements()[(-2 if adaptive else -1):]:
        _out.print(s, highlight=False)
    rp = res.info.get("replay")
    if rp:
        _out.print(f"replay: {rp['asked']:,} questions asked in all; a uniform run of the same engine on the same seed "
                   f"asks {rp['asked_uniform']:,}", highlight=False)
    for w in res.warnings:
        _out.print(f"note: {w}", highlight=False)
    for ok, line in requires:
        _out.print(("require ok: " if ok else "require FAILED: ") + line, highlight=False)
    _out.print(f"Guarantee: {res.level['meaning']}.", highlight=False)


def _print_tasks(res) -> None:
    """Per task: each model's mean and interval (a column per task), and the pairs each task orders."""
    tm, tp = res.tasks, res.task_pairs
    tasks = list(dict.fromkeys(tm["task"]))
    t = Table(title="per task (simultaneous over the tasks)")
    t.add_column("model", justify="left")
    for task in tasks:
        n = int(tm[tm["task"] == task]["n_items"].iloc[0])
        t.add_column(f"{task} ({n})", justify="left")
    for model in res.models.sort_values(["tier", "estimate"], ascending=[True, False])["model"]:
        row = [str(model)]
        for task in tasks:
            r = tm[(tm["task"] == task) & (tm["model"] == model)].iloc[0]
            row.append(f"{r.estimate:.3f} [{r.ci_low:.3f}, {r.ci_high:.3f}]")
        t.add_row(*row)
    _out.print(t)
    for task in tasks:
        g = tp[tp["task"] == task]
        ordered = g[g["verdict"].isin(["a better", "b better"])]
        said = "; ".join((f"{r.model_a} > {r.model_b}" if r.verdict == "a better" else f"{r.model_b} > {r.model_a}")
                         + f" [{r.ci_low:+.3f}, {r.ci_high:+.3f}]" for r in ordered.itertuples(index=False))
        _out.print(f"task {task}: {len(ordered)} of {len(g)} pair(s) ordered" + (f": {said}" if said else ""),
                   highlight=False)


@app.command()
@_guard
def compare(
    sources: Optional[List[str]] = typer.Argument(None, help="Score files (CSV / Parquet / JSONL, one row per model and question), lm-eval --log_samples output, inspect-ai .eval logs or HELM per-instance files; NAME=PATH names what a source holds (one model: NAME; several: NAME/model)."),
    run: Optional[List[str]] = typer.Option(None, "--run", help="A journal run of scored answers (several allowed)."),
    journal: Optional[Path] = typer.Option(None, "--journal", help="The journal of --run (default $ASSAY_JOURNAL or ~/.cache/assay/journal.sqlite)."),
    bank: Optional[Path] = typer.Option(None, "--bank", help="With --run: the questions asked (id, prompt, reference), to score the run's answers."),
    scorer: str = typer.Option("exact", "--scorer", help="With --run or live: the scorer (exact, numeric, math, choice, label, contains) or a column of --bank naming each question's."),
    model_col: str = typer.Option("model", "--model-col", help="Column naming the model."),
    item_col: str = typer.Option("item", "--item-col", help="Column naming the question."),
    score_col: str = typer.Option("score", "--score-col", help="Column with the score."),
    task_col: Optional[str] = typer.Option(None, "--task-col", help="Column naming each question's task (default: 'task' when the table has it); a question is a (task, item)."),
    cluster_col: Optional[str] = typer.Option(None, "--cluster-col", help="Column naming each question's cluster (questions sampled in groups)."),
    epoch_col: Optional[str] = typer.Option(None, "--epoch-col", help="Column numbering repeated answers to one question, averaged first (default: 'epoch' or 'repeat' when the table has it)."),
    log_scorer: Optional[List[str]] = typer.Option(None, "--log-scorer", help="The scorer to read where a log's task has several: an inspect scorer, an lm-eval METRIC,FILTER (or a metric or filter that settles it), a HELM metric (default exact_match); once per task that needs one."),
    weight: str = typer.Option("questions", "--weight", help="Several tasks: weigh each question equally (questions) or each task equally (tasks) in the pooled comparison."),
    bounds: Optional[List[float]] = typer.Option(None, "--bounds", help="The scores' range LOW HIGH (default 0 1); give it twice: --bounds 0 --bounds 10."),
    guarantee: Optional[str] = typer.Option(None, "--guarantee", help="asymptotic (the default: paired, cluster-robust, simultaneous) or finite (finite-sample, anytime-valid; the only one live)."),
    delta: float = typer.Option(0.05, "--delta", "--alpha", help="Error level of each family of claims (default 0.05)."),
    margin: Optional[float] = typer.Option(None, "--margin", help="Equivalence margin: a pair whose interval contains 0 and lies inside +-margin is 'equivalent'."),
    require: Optional[List[str]] = typer.Option(None, "--require", help="A claim that must be certified, or exit 1: 'A>B', or 'A>=B-0.01' (A not worse than B by more than 0.01). Several allowed."),
    require_complete: bool = typer.Option(False, "--require-complete", help="Refuse when some model lacks questions another answered."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Seed of every random draw (the bootstrap; the finite guarantee's reading order; live, the order the bank is asked in)."),
    endpoint: Optional[List[str]] = typer.Option(None, "--endpoint", help="Live: ask the models (--model, several) questions of --bank until every pair is resolved; one endpoint for all, or one per --model."),
    model: Optional[List[str]] = typer.Option(None, "--model", help="Live: a model as its endpoint knows it (several); NAME=SERVED names it, so one served model can be asked twice (with two --system prompts)."),
    system: Optional[List[str]] = typer.Option(None, "--system", help="Live: a system prompt, NAME=TEXT for one --model, or TEXT for every model."),
    completions: Optional[List[str]] = typer.Option(None, "--completions", help="Live: a --model (its NAME) to ask through /v1/completions (a pretrained model)."),
    budget: Optional[int] = typer.Option(None, "--budget", help="Live or --replay: at most this many questions per model (live default 100; --replay default the whole bank)."),
    batch: int = typer.Option(10, "--batch", help="Live or --replay: questions asked per round before checking the goal."),
    goal: str = typer.Option("all", "--goal", help="Live or --replay: all (every pair ordered or equivalent within the margin), best (the best model certified) or top-k (with --k)."),
    k: Optional[int] = typer.Option(None, "--k", help="With --goal top-k: how many models the certified top set holds."),
    history: Optional[str] = typer.Option(None, "--history", help="Live or --replay: a past 0/1 score table on the bank's question ids (CSV/Parquet, wide or model,item,score) or a shipped FAQ pack: questions are drawn where it predicts the open pairs disagree."),
    replay_table: Optional[Path] = typer.Option(None, "--replay", help="Replay a complete score table (models x question ids, CSV/Parquet, wide or model,item,score) as live models: what asking would cost, against uniform draws, before paying."),
    max_tokens: int = typer.Option(64, "--max-tokens", help="Live: completion tokens per answer."),
    api_key_env: Optional[str] = typer.Option(None, "--api-key-env", help="Live: the NAME of the environment variable holding the key."),
    run_id: str = typer.Option("compare", "--run-id", help="Live: the journal run (rerun to resume; answers already paid for are read)."),
    policy: str = typer.Option("wrong", "--policy", help="Live: what an unparseable, too long or refused answer counts as: wrong or correct."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON on stdout."),
    out: Optional[Path] = typer.Option(None, "-o", "--out", help="Also write the JSON result to this file."),
    report: Optional[Path] = typer.Option(None, "--report", help="Also write a self-contained HTML report."),
) -> None:
    """Which of several models is better, which are tied, where each ranks: the claims hold together (the Guarantee
    line says which)."""
    from .. import compare as cmp

    if bounds is not None and len(bounds) != 2:
        raise AssayInputError(f"--bounds takes two numbers, LOW HIGH (--bounds 0 --bounds 10); got {bounds}")
    adaptive_only = [f for f, v in (("--goal", goal != "all"), ("--k", k is not None), ("--history", history),
                                    ("--batch", batch != 10)) if v]
    if replay_table is not None:
        if endpoint or model or sources or run:
            raise AssayInputError("--replay replays one complete score table; it does not take sources, --run, "
                                  "--endpoint or --model")
        from ..compare.live import replay

        rp = replay(replay_table, goal=goal, k=k, guarantee=guarantee or "finite", history=history, margin=margin,
                    delta=delta, batch=batch, budget=budget, seed=0 if seed is None else seed,
                    low=bounds[0] if bounds else None, high=bounds[1] if bounds else None)
        res = rp.result
        res.info["replay"]["asked_per_model"] = rp.asked.to_dict()
        res.info["replay"]["asked_uniform_per_model"] = rp.asked_uniform.to_dict()
    elif endpoint or model:
        res = _live(endpoint or [], model or [], completions or [], system or [], bank=bank, scorer=scorer,
                    budget=100 if budget is None else budget, batch=batch, max_tokens=max_tokens,
                    api_key_env=api_key_env, journal=journal, run_id=run_id, delta=delta, margin=margin,
                    seed=0 if seed is None else seed, policy=policy, goal=goal, k=k,
                    guarantee=guarantee or "finite", history=history)
    else:
        if adaptive_only or budget is not None:
            raise AssayInputError(f"{', '.join(adaptive_only + (['--budget'] if budget is not None else []))}: for "
                                  "asking models live (--endpoint, --model) or --replay; a score file is compared "
                                  "as it is")
        if system or completions:
            raise AssayInputError("--system and --completions are for asking models live (--endpoint, --model)")
        table = read_scores(list(sources or []), model_col=model_col, item_col=item_col, score_col=score_col,
                            cluster_col=cluster_col, epoch_col=epoch_col, runs=list(run or []), journal=journal,
                            bank=bank, scorer=scorer, task_col=task_col, log_scorer=list(log_scorer or []))
        res = cmp.evaluate(table, bounds=tuple(bounds) if bounds else (0.0, 1.0), guarantee=guarantee or "asymptotic",
                           delta=delta,
                           margin=margin, seed=seed, require_complete=require_complete, weight=weight)
        _describe_sources(res, table)
    checks = cmp.check_require(res, list(require or []))
    _emit(res, as_json, out, report, lambda: _print_compare(res, checks))
    if not all(ok for ok, _ in checks):
        raise typer.Exit(1)


def _describe_sources(res, table) -> None:
    """What each source held (its models as named) and which scorer each task was read with, for the header."""
    lines = []
    named = "source" in table.columns and (table["source"].nunique() > 1
                                           or any(split_source(str(x))[0] for x in table["source"].unique()))
    if named:
        for src, g in table.groupby("source", sort=False):
            models = list(dict.fromkeys(g["model"].astype(str)))
            lines.append(f"{src}: {', '.join(models[:6])}" + (" ..." if len(models) > 6 else ""))
    res.info["sources"] = lines
    if "scorer" in table.columns and "task" in table.columns:
        sc = table.dropna(subset=["scorer"]).drop_duplicates(["task", "scorer"])
        if len(sc):
            res.info["scorers"] = {str(t): ", ".join(sorted(set(g["scorer"].astype(str))))
                                   for t, g in sc.groupby("task", sort=False)}


def parse_live_models(models: list[str], systems: list[str]) -> tuple[dict[str, str], dict[str, str]]:
    """``--model NAME=SERVED`` / ``SERVED`` and ``--system NAME=TEXT`` / ``TEXT`` -> (name -> served model, name ->
    system prompt). A system prompt without a known NAME= applies to every model."""
    served: dict[str, str] = {}
    for m in models:
        name, _, model = m.partition("=") if "=" in m else (m, "", m)
        name, model = name.strip(), model.strip()
        if not name or not model:
            raise AssayInputError(f"--model {m!r}: give SERVED or NAME=SERVED")
        if name in served:
            raise AssayInputError(f"--model: {name!r} given twice; name each one (NAME=SERVED) to ask one served "
                                  "model twice, e.g. --model plain=smollm2 --model brief=smollm2")
        served[name] = model
    prompts: dict[str, str] = {}
    for s in systems:
        name, _, text = s.partition("=")
        if "=" in s and name.strip() in served:
            if name.strip() in prompts:
                raise AssayInputError(f"--system: {name.strip()!r} given twice")
            prompts[name.strip()] = text
        else:
            for n in served:
                if n in prompts:
                    raise AssayInputError(f"--system {s!r}: a system prompt for every model, but {n!r} has one")
                prompts[n] = s
    return served, prompts


def _live(endpoints: list[str], models: list[str], completions: list[str], systems: list[str], *, bank, scorer,
          budget, batch, max_tokens, api_key_env, journal, run_id, delta, margin, seed, policy, goal="all", k=None,
          guarantee="finite", history=None):
    """``assay compare --endpoint ... --model A --model B --bank FILE``: ask until the goal is met."""
    import sys

    from ..compare.live import query_until_resolved
    from ..models import OpenAIChatModel
    from ..models.journal import default_path
    from ..models.openai_model import OpenAICompletionModel, check_model

    if bank is None:
        raise AssayInputError("live: give --bank FILE, the questions to ask (id, prompt, reference)")
    served, prompts = parse_live_models(models, systems)
    if len(served) < 2:
        raise AssayInputError("live: give at least two --model (one served model twice: --model plain=smollm2 "
                              "--model brief=smollm2 --system brief=\"Answer with the answer only.\")")
    if len(endpoints) not in (1, len(served)):
        raise AssayInputError(f"live: give one --endpoint for every model, or one per --model ({len(served)}); got "
                              f"{len(endpoints)}")
    unknown = [c for c in completions if c not in served]
    if unknown:
        raise AssayInputError(f"--completions {', '.join(unknown)}: not a --model name ({', '.join(served)})")
    urls = endpoints * len(served) if len(endpoints) == 1 else endpoints
    made = {}
    for (name, model), url in zip(served.items(), urls):
        cls = OpenAICompletionModel if name in completions else OpenAIChatModel
        kw = {"system_prompt": prompts[name]} if name in prompts else {}
        if name in prompts and name in completions:
            raise AssayInputError(f"--system {name}=...: a model asked through /v1/completions has no system prompt")
        made[name] = cls(model, base_url=url, api_key_env=api_key_env, max_tokens=max_tokens, temperature=0.0, **kw)
        check_model(made[name])

    def progress(asked: int, total: int, unresolved: int) -> None:
        sys.stderr.write(f"compare: {asked}/{total} questions asked of the models in play, {unresolved} pair(s) the "
                         f"goal still needs\n")
        sys.stderr.flush()

    from ..data import read_plain

    table = read_plain(bank, text_columns=("id",))
    return query_until_resolved(made, table, scorer=scorer, policy=policy, journal=journal or default_path(),
                                run_id=run_id, delta=delta, margin=margin, budget=budget, batch=batch, seed=seed,
                                progress=progress, goal=goal, k=k, guarantee=guarantee, history=history)
