"""``assay compare``: which of several models is better, which are tied, where each ranks, the claims holding together.

Sources are score tables and tool logs (inspect-ai, lm-eval, HELM), each optionally named ``NAME=PATH``; a question is a
(task, item); a task scored several ways is read with ``--log-scorer``. Live (``--endpoint``), models named
``NAME=SERVED`` with ``--system NAME=TEXT`` are asked questions of a bank until every pair is resolved."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import List, Optional

import typer
from rich.table import Table

from ..errors import AssayInputError
from ._common import app, emit as _emit, guard as _guard, out as _out


def _print_compare(res, requires: list[tuple[bool, str]]) -> None:
    from ..compare import claims
    from ..compare.api import epochs_line, plural

    p = res.params
    asked = res.models["n_asked"] if "n_asked" in res.models else None
    where = (f"asked {asked.min()}-{asked.max()} questions each of the bank's {res.info['bank_size']} (goal "
             f"{p['goal']}{'' if p.get('k') is None else ' k=' + str(p['k'])})" if asked is not None and "goal" in p
             else f"on {plural(res.n, 'question')} every model answered")
    _out.print(f"compare: {len(res.models)} models {where}; "
               f"{p['guarantee']} guarantee, delta = {res.level['delta']:g}"
               + (f", margin {p['margin']:g}" if p.get("margin") else "") + f", seed = {res.seed}", highlight=False)
    for line in res.info.get("sources", []):
        _out.print(f"source: {line}", highlight=False)
    for run, how in (res.info.get("graders") or {}).items():
        _out.print(f"graded: {run} with {how}", highlight=False)
    if res.info.get("scorers"):
        _out.print("scorers: " + "; ".join(f"{k}: {v}" for k, v in res.info["scorers"].items()), highlight=False)
    epochs = epochs_line(res.info.get("epochs") or {})
    if epochs:
        _out.print(epochs, highlight=False)
    _out.print(f"estimand: {res.info['estimand']}", highlight=False)
    if res.info.get("history"):
        _out.print(f"history: {res.info['history']} (FAQ's factor model weights the draws towards the questions it "
                   "predicts the open pairs disagree on)", highlight=False)
    adaptive = "goal" in res.info
    t = Table()
    outcomes = res.info.get("outcomes") or {}
    cols = (("model", "estimate", "interval", "rank", "tier", "may be best") + (("asked", "left") if adaptive else ())
            + (("answers",) if any(v is not None for v in outcomes.values()) else ()))
    for c in cols:
        t.add_column(c, justify="left" if c in ("model", "interval", "left") else "right")
    for r in res.models.sort_values(["tier", "estimate"], ascending=[True, False]).itertuples(index=False):
        rank = str(r.rank_low) if r.rank_low == r.rank_high else f"{r.rank_low}-{r.rank_high}"
        row = [str(r.model), f"{r.estimate:.4f}", f"[{r.ci_low:.4f}, {r.ci_high:.4f}]" + (" *" if r.exact else ""),
               rank, str(r.tier), "yes" if r.may_be_best else ""]
        if adaptive:
            row += [f"{int(r.n_asked):,}", f"round {int(r.left_round)}: {r.left_reason}"]
        if "answers" in cols:
            row.append(claims.outcome_words(outcomes.get(str(r.model)), compact=True))
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
    for s in res.statements():
        if s.subject in ("all", "goal", "population"):
            _out.print(s, highlight=False)
    rp = res.info.get("replay")
    if rp:
        _out.print(claims.replay_words(rp), highlight=False)
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
    scorer: Optional[str] = typer.Option(None, "--scorer", help="With --run or live: the scorer (exact, numeric, math, choice, label, contains) or a column of --bank naming each question's (--run default: what the run recorded, else exact; live default exact)."),
    model_col: str = typer.Option("model", "--model-col", help="Column naming the model."),
    item_col: str = typer.Option("item", "--item-col", help="Column naming the question."),
    score_col: str = typer.Option("score", "--score-col", help="Column with the score."),
    task_col: Optional[str] = typer.Option(None, "--task-col", help="Column naming each question's task (default: 'task' when the table has it); a question is a (task, item)."),
    cluster_col: Optional[str] = typer.Option(None, "--cluster-col", help="Column naming each question's cluster (questions sampled in groups)."),
    epoch_col: Optional[str] = typer.Option(None, "--epoch-col", help="Column numbering repeated answers to one question, averaged first (default: 'epoch' or 'repeat' when the table has it)."),
    log_scorer: Optional[List[str]] = typer.Option(None, "--log-scorer", help="The scorer to read where a log's task has several: an inspect scorer, an lm-eval METRIC,FILTER (or a metric or filter that settles it), a HELM metric (default exact_match); once per task that needs one."),
    weight: str = typer.Option("questions", "--weight", help="Several tasks: weigh each question equally (questions) or each task equally (tasks) in the pooled comparison."),
    bounds: Optional[List[float]] = typer.Option(None, "--bounds", help="The scores' range LOW HIGH (default 0 1); give it twice: --bounds 0 --bounds 10."),
    guarantee: Optional[str] = typer.Option(None, "--guarantee", help="asymptotic (the default: paired, cluster-robust, simultaneous), exact (finite-sample at the number of questions you have: exact tests, e.g. McNemar's; for small banks) or finite (finite-sample and anytime-valid; live and --replay use it by default)."),
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
    max_tokens: int = typer.Option(512, "--max-tokens", help="Live: completion tokens per answer (512: the smallest limit that cut off at most 5% of the shipped models' answers on maths and the basics bank; bench/cutoff.py)."),
    replays: int = typer.Option(5, "--replays", help="--replay: how many seeds to replay (seed, seed + 1, ...): the questions asked vary with the draws; the mean, spread and the history's effect are reported."),
    max_memory: float = typer.Option(4.0, "--max-memory", help="Live or --replay: refuse up front a run whose estimated peak memory is above this many GB (the finite guarantee keeps a grid of bets per pair)."),
    api_key_env: Optional[str] = typer.Option(None, "--api-key-env", help="Live: the NAME of the environment variable holding the key."),
    run_id: Optional[str] = typer.Option(None, "--run-id", help="Live: the journal run (rerun to resume; answers already paid for are read). Default: compare- and a digest of the models, bank and settings, so the same command resumes and other settings start a new run."),
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
                    low=bounds[0] if bounds else None, high=bounds[1] if bounds else None,
                    max_memory=_gb(max_memory), progress=_progress, replays=replays)
        res = rp.result
        res.info["replay"]["asked_per_model"] = rp.asked.to_dict()
        res.info["replay"]["asked_uniform_per_model"] = rp.asked_uniform.to_dict()
    elif endpoint or model:
        res = _live(endpoint or [], model or [], completions or [], system or [], bank=bank, scorer=scorer or "exact",
                    budget=100 if budget is None else budget, batch=batch, max_tokens=max_tokens,
                    api_key_env=api_key_env, journal=journal, run_id=run_id, delta=delta, margin=margin,
                    seed=0 if seed is None else seed, policy=policy, goal=goal, k=k,
                    guarantee=guarantee or "finite", history=history, max_memory=_gb(max_memory))
    else:
        if adaptive_only or budget is not None:
            raise AssayInputError(f"{', '.join(adaptive_only + (['--budget'] if budget is not None else []))}: for "
                                  "asking models live (--endpoint, --model) or --replay; a score file is compared "
                                  "as it is")
        if system or completions:
            raise AssayInputError("--system and --completions are for asking models live (--endpoint, --model)")
        columns = {role: col for role, col, default in (("model", model_col, "model"), ("item", item_col, "item"),
                                                         ("score", score_col, "score"), ("task", task_col, None),
                                                         ("cluster", cluster_col, None), ("epoch", epoch_col, None))
                   if col is not None and col != default}
        res = cmp.evaluate(list(sources or []), columns=columns, bounds=tuple(bounds) if bounds else (0.0, 1.0),
                           guarantee=guarantee or "asymptotic", delta=delta, margin=margin, seed=seed,
                           require_complete=require_complete, weight=weight, log_scorer=list(log_scorer or []),
                           runs=list(run or []), journal=journal, bank=bank, scorer=scorer)
    checks = cmp.check_require(res, list(require or []))
    _emit(res, as_json, out, report, lambda: _print_compare(res, checks))
    if not all(ok for ok, _ in checks):
        raise typer.Exit(1)


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


def _gb(x: float) -> float:
    if not (isinstance(x, (int, float)) and x > 0):
        raise AssayInputError(f"--max-memory takes a number of GB > 0; got {x!r}")
    return float(x) * 1024**3


def _progress(asked: int, total: int, unresolved: int) -> None:
    """One line on stderr after each round of a live run or a replay."""
    import sys

    sys.stderr.write(f"compare: {asked}/{total} questions asked of the models in play, {unresolved} pair(s) the goal "
                     "still needs\n")
    sys.stderr.flush()


def default_run_id(made: dict, completions, bank, **settings) -> str:
    """``compare-`` and 10 hex digits of a digest of the models (name, served model, endpoint, system prompt, token
    limit, endpoint kind), the bank file's bytes and the settings that decide the draws."""
    import hashlib
    import json

    h = hashlib.sha256()
    for name, m in made.items():
        h.update(json.dumps([name, getattr(m, "model", None), getattr(m, "base_url", None),
                             getattr(m, "system_prompt", None), getattr(m, "max_tokens", None), name in completions],
                            default=str).encode())
    try:
        h.update(Path(bank).read_bytes())
    except OSError:
        h.update(str(bank).encode())
    h.update(json.dumps(settings, sort_keys=True, default=str).encode())
    return f"compare-{h.hexdigest()[:10]}"


def _answered():
    """Within a round, a line on stderr each time a model has answered another fifth of its questions (a round of
    slow models takes minutes; nothing else would be said until it ends)."""
    import math

    def tell(model: str, done: int, of: int) -> None:
        if done == of or done % max(1, math.ceil(of / 5)) == 0:
            sys.stderr.write(f"compare: {model} answered {done}/{of} of this round\n")
            sys.stderr.flush()

    return tell


def _live(endpoints: list[str], models: list[str], completions: list[str], systems: list[str], *, bank, scorer,
          budget, batch, max_tokens, api_key_env, journal, run_id, delta, margin, seed, policy, goal="all", k=None,
          guarantee="finite", history=None, max_memory=None):
    """``assay compare --endpoint ... --model A --model B --bank FILE``: ask until the goal is met."""

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

    if run_id is None:  # the same command resumes its run; other settings start their own
        run_id = default_run_id(made, completions, bank, scorer=scorer, policy=policy, goal=goal, k=k,
                                guarantee=guarantee, margin=margin, delta=delta, batch=batch, seed=seed,
                                history=history)
        sys.stderr.write(f"compare: journal run {run_id} (--run-id to name it)\n")
    return query_until_resolved(made, bank, scorer=scorer, policy=policy, journal=journal or default_path(),
                                run_id=run_id, delta=delta, margin=margin, budget=budget, batch=batch, seed=seed,
                                progress=_progress, goal=goal, k=k, guarantee=guarantee, history=history,
                                max_memory=max_memory, answered=_answered())
