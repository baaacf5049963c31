"""``assay scope``: certify where a model is reliably weak (QuickScope)."""

from __future__ import annotations

import inspect
import sys
from pathlib import Path
from typing import Optional

import typer

from ..errors import AssayInputError
from ._common import app, emit as _emit, guard as _guard, out as _out


def _num(v, fmt: str = ".3f") -> str:
    """A table cell: integers as integers, floats as floats, missing as blank."""
    import math

    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    if isinstance(v, bool):
        return "yes" if v else ""
    if isinstance(v, int) or (isinstance(v, float) and v.is_integer() and fmt != ".3f"):
        return str(int(v))
    if isinstance(v, float):
        return format(v, fmt)
    return str(v)


def _print_scope(result, rows: int = 15) -> None:
    """The top configurations as a table (configuration parameters, tickets, estimate, bounds, certificate)."""
    import numpy as np
    import pandas as pd
    from rich.table import Table
    from rich.text import Text

    i, p = result.info, result.params
    level = 1 - float(result.level["delta"])
    tau = i.get("tau")
    head = (f"QuickScope: {i.get('tickets')} tickets, {i.get('pool')} configurations tried, {i.get('n_certified')} "
            + (f"certified at tau = {tau:g}" if tau is not None else "certified (no certificate threshold: --certify)")
            + f", seed = {result.seed}")
    top = result.table.head(rows)
    fixed = ["n", "estimate", "ci_low", "ci_high", "certified", "certified_at_ticket", "truth"]
    hidden = {"arm", "key", "origin", *fixed}
    names = [c for c in top.columns if c not in hidden and not top[c].isna().all()]
    _out.print(Text(head))
    t = Table()
    for c in names:
        t.add_column(Text(str(c)), justify="right" if pd.api.types.is_numeric_dtype(top[c]) else "left")
    t.add_column("n", justify="right")
    what = "error rate" if p.get("utility", "error") == "error" else "mean utility"
    t.add_column(what, justify="right")
    t.add_column(f"{level:.0%} bounds (all at once)", justify="right")
    t.add_column("certified at", justify="right")
    has_truth = "truth" in top.columns
    if has_truth:
        t.add_column("truth (sim.)", justify="right")
    for r in top.to_dict("records"):
        cert = f"ticket {int(r['certified_at_ticket'])}" if r.get("certified") else ""
        cells = [Text(_num(r[c].item() if isinstance(r[c], np.generic) else r[c], ".3g")) for c in names]
        cells += [str(int(r["n"])), f"{r['estimate']:.3f}", f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}]", cert]
        if has_truth:
            cells.append(f"{r['truth']:.3f}")
        t.add_row(*cells)
    _out.print(t)
    fails = i.get("failures") or {}
    if any(fails.values()):
        from ..models.outcomes import LABELS

        _out.print(Text("not answered as asked: " + ", ".join(f"{v} {LABELS.get(k, k.replace('_', ' '))}"
                                                             for k, v in fails.items() if v)))
    if "simulated" in i:
        _out.print(Text(f"simulated world {i['simulated']['world']}: {i['simulated']['false_certifications']} "
                        "false certificate(s) (a certified configuration whose true error rate is below tau)"))
    for w in result.warnings:
        _out.print(Text(f"warning: {w}"))
    _out.print(Text(f"Rows: configurations ranked by their lower bound; '{what}' is the mean over the configuration's tickets; the "
                    f"bounds hold for every configuration at every time together with probability >= {level:.0%}; a "
                    "configuration is certified once its lower bound reaches tau."))


@app.command()
@_guard
def scope(
    generator: str = typer.Option("dyval", "--generator", help="Question generator: dyval, grid, reasoning_gym:<task> (optional extra)."),
    space: Optional[Path] = typer.Option(None, "--space", help="Search space YAML/JSON (default: the generator's own space)."),
    endpoint: Optional[str] = typer.Option(None, "--endpoint", help="OpenAI-compatible base URL of the model under test."),
    model: Optional[str] = typer.Option(None, "--model", help="Model name as the endpoint knows it."),
    simulate: Optional[str] = typer.Option(None, "--simulate", help="No LLM: a simulated world with a known error rate (dyval, dyval-ceiling, grid, plateau)."),
    budget: int = typer.Option(20000, "--budget", help="Model calls (tickets) to spend."),
    batch: int = typer.Option(20, "--batch", help="Tickets per batch, evaluated concurrently (App. A)."),
    certify: Optional[float] = typer.Option(None, "--certify", help="Certify and remove a configuration once its LCB >= tau."),
    adaptive: Optional[float] = typer.Option(None, "--adaptive", help="Adaptive certification (LUCB-K, rising threshold) from tau."),
    repulsion: float = typer.Option(0.0, "--repulsion", help="Repulsion strength alpha away from certified configurations (needs a certificate threshold)."),
    utility: str = typer.Option("error", "--utility", help="error (1 - correct) or cwe (complexity-weighted error)."),
    delta: float = typer.Option(0.01, "--delta", "--alpha", help="Error level: probability that any bound or certificate is wrong (the paper's delta; --alpha is an alias)."),
    n0: int = typer.Option(50, "--n0", help="Initial random configurations."),
    exploration: float = typer.Option(1.0, "--exploration", help="c in the expansion rule eps'^2 < c * gamma."),
    seed: int = typer.Option(0, "--seed", help="Seed of the search and of every generated question (reuse it to resume)."),
    top: int = typer.Option(50, "--top", help="Configurations kept in the result's top table."),
    journal: Optional[Path] = typer.Option(None, "--journal", help="SQLite journal (default $ASSAY_JOURNAL or ~/.cache/assay/journal.sqlite)."),
    run_id: Optional[str] = typer.Option(None, "--run-id", help="Resume this run (with the same --seed)."),
    api_key_env: str = typer.Option("OPENAI_API_KEY", "--api-key-env", help="Environment variable holding the API key."),
    concurrency: int = typer.Option(8, "--concurrency", help="Requests in flight."),
    timeout: float = typer.Option(120.0, "--timeout", help="Per-request timeout in seconds (paper: 120)."),
    max_retries: int = typer.Option(4, "--max-retries", help="Retries per request before it is recorded as failed."),
    temperature: float = typer.Option(0.0, "--temperature"),
    max_tokens: Optional[int] = typer.Option(None, "--max-tokens"),
    system_prompt: Optional[str] = typer.Option(None, "--system", help="System message."),
    context_window: Optional[int] = typer.Option(None, "--context-window", help="The model's context window in tokens: the generator's space keeps templates whose prompts fit (dyval); prompts that still do not fit count as the model's failure (too_long)."),
    policy: str = typer.Option("wrong", "--policy", help="What an unparseable, too long or refused answer counts as: wrong (default), correct, or missing (utility of a failure, the paper's App. B.3)."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON on stdout."),
    out: Optional[Path] = typer.Option(None, "-o", "--out", help="Also write the JSON result to this file."),
    report: Optional[Path] = typer.Option(None, "--report", help="Also write a self-contained HTML report."),
) -> None:
    """Certify where a model is reliably weak in a procedurally generated benchmark (QuickScope / COUP+)."""
    from .. import quickscope as qs
    from ..progress import progress_reporter

    if certify is not None and adaptive is not None:
        raise AssayInputError("give at most one of --certify and --adaptive")
    if (simulate is None) == (endpoint is None and model is None):
        raise AssayInputError("give either --endpoint and --model (query a model) or --simulate WORLD (no LLM)")
    if simulate is None and (endpoint is None or model is None):
        raise AssayInputError("querying a model needs both --endpoint and --model")
    if batch < 1:
        raise AssayInputError(f"--batch must be at least 1 ticket; got {batch}")
    if budget < 1:
        raise AssayInputError(f"--budget must be at least 1 ticket; got {budget}")
    if budget < batch:
        raise AssayInputError(f"--budget ({budget}) is smaller than one --batch ({batch})")
    if top < 1:
        raise AssayInputError(f"--top must be at least 1 configuration; got {top}")
    if utility not in ("error", "cwe"):
        raise AssayInputError(f"--utility must be error or cwe; got {utility!r}")
    if space is not None and not space.exists():
        raise AssayInputError(f"no search space file {str(space)!r}")
    sp_params = dict(delta=delta, n0=n0, exploration=exploration, repulsion=repulsion,
                     certify=adaptive if adaptive is not None else certify,
                     strategy="adaptive" if adaptive is not None else "remove")
    if simulate is not None:
        from ..benchmarks.worlds import get_world
        from ..quickscope.simulate import simulate as run_world

        world = get_world(simulate)
        sp = qs.SearchSpace.from_yaml(space) if space is not None else None
        with progress_reporter("scope tickets") as update:
            result = run_world(world, budget=budget, batch=batch, seed=seed, top=top, space=sp, progress=update,
                               **sp_params)
    else:
        from ..benchmarks import get_generator
        from ..models import OpenAIChatModel
        from ..models.journal import default_path

        from ..models.openai_model import check_model

        gen = get_generator(generator)
        if space is not None:
            sp = qs.SearchSpace.from_yaml(space)
        elif context_window is not None and "context_window" in inspect.signature(gen.space).parameters:
            sp = gen.space(context_window=context_window, reserve=max_tokens or 256)
        else:
            sp = gen.space()
        llm = OpenAIChatModel(model, base_url=endpoint, api_key_env=api_key_env, temperature=temperature,
                              max_tokens=max_tokens, timeout=timeout, system_prompt=system_prompt,
                              context_window=context_window)
        check_model(llm)
        with progress_reporter("scope tickets") as update:
            result = qs.run(sp, gen, llm, budget=budget, batch=batch, seed=seed, utility=utility,
                            journal=journal or default_path(), run_id=run_id, concurrency=concurrency, timeout=timeout,
                            max_retries=max_retries, progress=update, policy=policy, **sp_params)
        sys.stderr.write(f"run id: {result.info.get('run_id')} (resume with --run-id {result.info.get('run_id')} "
                         f"--seed {seed})\n")
    _emit(result, as_json, out, report, lambda: _print_scope(result))
