"""The ``assay`` command. Thin: parse arguments, call the library, print.

Exit codes: 0 ok, 1 a requested gate failed, 2 bad input, 3 model backend error. ``--json``
prints the result's ``to_json()`` on stdout and nothing else there; progress goes to stderr.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Callable, Optional

import typer
from rich.markup import escape
from rich.table import Table

from . import __version__
from .errors import AssayInputError
from .cli_guard import guard as _guard, masked_console

def _usage_error_one_line(exc) -> None:
    """Command-line usage errors (a bad option value, a missing option) as one ``error:`` line, like every other
    refusal of assay (typer would draw a box of several lines)."""
    if exc.__class__.__name__ == "NoArgsIsHelpError":
        return
    ctx = getattr(exc, "ctx", None)
    hint = f" (see: {ctx.command_path} --help)" if ctx is not None else ""
    sys.stderr.write(f"error: {exc.format_message()}{hint}\n")


try:  # typer prints usage errors through this function; one line instead
    import typer.rich_utils as _typer_rich

    _typer_rich.rich_format_error = _usage_error_one_line
except ImportError:  # pragma: no cover - typer without rich
    pass

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="assay: LLM evaluation with statistical guarantees.",
)

_out = masked_console(soft_wrap=False, width=200)




def _version(value: bool) -> None:
    if value:
        typer.echo(f"assay {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version and exit."),
) -> None:
    """assay: LLM evaluation with statistical guarantees."""


def _fmt_budget(b: Any) -> str:
    from .data import format_budget, parse_budget

    v = parse_budget(b)
    return "0 (default)" if v == 0 else format_budget(v, compact=True)


def _emit(result, as_json: bool, out: Optional[Path], report: Optional[Path], human: Callable[[], None]) -> None:
    from .models.journal import mask_secrets

    text = mask_secrets(result.to_json())  # the model's key and URL credentials never reach a file or stdout
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text + "\n")
    if report is not None:
        from .report import render_html

        report.parent.mkdir(parents=True, exist_ok=True)
        report.write_text(mask_secrets(render_html([result])))
    if as_json:
        sys.stdout.write(text + "\n")
    else:
        human()
        if out is not None:
            _out.print(f"result written to {out}")
        if report is not None:
            _out.print(f"report written to {report}")


def _print_siren(result) -> None:
    p = result.params
    level = 1 - result.level["alpha"]
    t = Table(title=f"SIREN: M = {result.n} items, R = {p['reps']}, selector {p['selector']}, tau = {p['temperature']}, "
                    f"seed = {result.seed}", title_justify="left")
    for col, just in (("system", "left"), ("budget", "right"), ("K", "right"), ("estimate", "right"),
                      (f"{level:.0%} CI", "right"), (f"{level:.0%} band", "right"), ("se held-out / sel.", "right"),
                      ("naive max", "right"), ("optimism", "right"), ("pi_win", "right")):
        t.add_column(col, justify=just)
    for r in result.cells.itertuples(index=False):
        t.add_row(str(r.system), _fmt_budget(r.budget), str(r.K), f"{r.estimate:.4f}",
                  f"[{r.ci_low:.4f}, {r.ci_high:.4f}]", f"[{r.band_low:.4f}, {r.band_high:.4f}]",
                  f"{r.se_heldout:.4f} / {r.se_selection:.4f}", f"{r.naive_max:.4f}", f"{r.optimism:+.4f}",
                  f"{r.pi_win:.2f}")
    _out.print(t)
    if not result.contrasts.empty:
        c = Table(title=f"Contrasts (paired on the same items, {level:.0%})", title_justify="left")
        for col in ("contrast", "estimate", "CI", "verdict (one contrast)", "simultaneous", "verdict (all at once)"):
            c.add_column(col, justify="left" if col.startswith(("contrast", "verdict")) else "right")
        for r in result.contrasts.itertuples(index=False):
            c.add_row(escape(str(r.contrast)), f"{r.estimate:+.4f}", f"[{r.ci_low:+.4f}, {r.ci_high:+.4f}]",
                      str(r.verdict_pointwise), f"[{r.simultaneous_low:+.4f}, {r.simultaneous_high:+.4f}]",
                      str(r.verdict_simultaneous))
        _out.print(c)
        _out.print("Scanning these contrasts for a finding? Read 'all at once' (the simultaneous interval holds for every "
                   "contrast together); 'one contrast' is valid only for a single contrast chosen before looking.",
                   highlight=False)
    for w in result.info.get("warnings", []):
        _out.print(f"[yellow]warning:[/] {w}")
    _out.print(
        f"CI: each cell's procedure-level score, {level:.0%}. Band: every cell at once, {level:.0%}. "
        "'naive max' is the best shortlisted artifact scored on the items that chose it; "
        "'optimism' = naive max - estimate.",
        highlight=False,
    )


@app.command()
@_guard
def siren(
    scores: Path = typer.Argument(..., help="Score table (CSV/TSV/Parquet/JSONL/JSON, optionally .gz) or a SIREN release folder."),
    format: Optional[str] = typer.Option(None, "--format", help="csv, tsv, parquet, jsonl, json or siren-release (default: from the name)."),
    system_col: str = typer.Option("system", help="Column naming the system (base model + pipeline)."),
    budget_col: str = typer.Option("budget", help="Column with the tuning budget; 0 = untuned default."),
    artifact_col: str = typer.Option("artifact", help="Column naming the shortlisted artifact (prompt / program)."),
    item_col: str = typer.Option("item", help="Column with the evaluation item id."),
    score_col: str = typer.Option("score", help="Column with the score in [0, 1]."),
    reps: int = typer.Option(10, "--reps", help="Repeated splits R."),
    score_fraction: float = typer.Option(0.5, "--score-fraction", help="Share of items in each split's scoring part (rho)."),
    selector: str = typer.Option("softmax", "--selector", help="softmax, hard or adaptive."),
    tau: float = typer.Option(0.1, "--tau", "--temperature", help="Softmax temperature on the score scale (0.1: soft argmax; 1.0: near-uniform)."),
    boot: int = typer.Option(2000, "--boot", help="Bootstrap draws B."),
    alpha: float = typer.Option(0.05, "--alpha", help="Miscoverage (0.05 -> 95% intervals)."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Random seed (recorded; drawn when absent)."),
    contrast: list[str] = typer.Option([], "--contrast", help="'A@1.5M - A@0', or tuned-vs-default, budget-gains, pairwise. Repeatable."),
    band: str = typer.Option("studentized", "--band", help="studentized or raw simultaneous band."),
    engine: str = typer.Option("exact", "--engine", help="Bootstrap draws: exact (Gaussian law of the multipliers) or multipliers (literal B x M)."),
    split_weights: str = typer.Option("eval_size", "--split-weights", help="eval_size or uniform."),
    instability_threshold: float = typer.Option(0.10, "--instability-threshold", help="pi_win threshold of the adaptive selector."),
    item_bootstrap: int = typer.Option(0, "--item-bootstrap", help="Also run the nonparametric item bootstrap with N replicates."),
    drop_incomplete: bool = typer.Option(False, "--drop-incomplete", help="Drop items with missing scores from every cell instead of failing."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON on stdout."),
    out: Optional[Path] = typer.Option(None, "--out", help="Also write the JSON result to this file."),
    report: Optional[Path] = typer.Option(None, "--report", help="Also write a self-contained HTML report."),
) -> None:
    """Selection-aware intervals for tuned systems (SIREN) over a (system x budget) grid."""
    from . import data, siren as siren_mod

    table = data.read_table(scores, format=format, text_columns=(system_col, artifact_col, item_col))
    result = siren_mod.evaluate(
        table,
        columns={"system": system_col, "budget": budget_col, "artifact": artifact_col, "item": item_col, "score": score_col},
        reps=reps, score_fraction=score_fraction, selector=selector, temperature=tau, n_boot=boot, alpha=alpha,
        seed=seed, contrasts=contrast, band=band, engine=engine, split_weights=split_weights,
        instability_threshold=instability_threshold, item_bootstrap_draws=item_bootstrap,
        on_missing="drop-items" if drop_incomplete else "error",
    )
    _emit(result, as_json, out, report, lambda: _print_siren(result))


def _print_autoeval(result) -> None:
    p = result.params
    t = Table(title=f"{p['method']} ({p['betting']}): certify risk < {p['risk_target']:g} at delta = "
                    f"{result.level['delta']:g}, seed = {result.seed}", title_justify="left")
    cols = ["candidate", "n", "N", "certified", "first n", "p-value", "risk upper", "human mean", "judge mean", "rho (weighted)"]
    has_ci = "ci_low" in result.candidates
    if has_ci:
        cols.insert(7, f"{1 - result.level['delta']:.0%} CI")
    if "cost" in result.candidates:
        cols.append("cost")
    for c in cols:
        t.add_column(c, justify="left" if c == "candidate" else "right")
    for r in result.candidates.to_dict(orient="records"):
        first = r.get("certified_at")
        cells = [str(r["candidate"]), str(r["n"]), str(r["N"]), "yes" if r["certified"] else "no",
                 "-" if first is None or first != first else str(int(first)), f"{r['p_value']:.4f}",
                 f"{r['risk_upper']:.4f}", f"{r['mean_human']:.4f}", f"{r['mean_judge']:.4f}", f"{r['rho_weighted']:.2f}"]
        if has_ci:
            cells.insert(7, f"[{r['ci_low']:.4f}, {r['ci_high']:.4f}]")
        if "cost" in r:
            cells.append(str(r["cost"]))
        t.add_row(*cells)
    _out.print(t)
    sel = result.info.get("selection") or {}
    if sel.get("procedure"):
        if sel.get("best") is None:
            _out.print(f"[bold]{sel['procedure']}: no candidate is certified[/] at delta = {result.level['delta']:g}; "
                       "nothing can be deployed with the guarantee.")
        else:
            _out.print(f"[bold]{sel['procedure']}:[/] certified {len(sel['certified'])} of {len(result.candidates)}; "
                       f"best = [bold]{escape(str(sel['best']))}[/]")
    elif sel.get("note"):
        _out.print(f"note: {escape(sel['note'])}")
    _out.print(f"Guarantee: {result.level['meaning']}.", highlight=False)
    for w in result.warnings:
        _out.print(f"note: {escape(w)}")


@app.command()
@_guard
def autoeval(
    data: Path = typer.Argument(..., help="Long table: candidate, item, loss_human (empty = unlabelled), loss_judge."),
    risk_target: float = typer.Option(..., "--risk-target", help="Risk level to certify (the paper's alpha)."),
    delta: float = typer.Option(0.1, "--delta", help="Error probability of the certificate (family-wise with --select)."),
    method: str = typer.Option("r-autoeval+", "--method", help="r-eval, r-autoeval or r-autoeval+."),
    betting: str = typer.Option("wsr", "--betting", help="wsr or up (universal portfolio)."),
    factors: int = typer.Option(10, "--factors", help="Reliance factors S of R-AutoEval+."),
    judge: Optional[Path] = typer.Option(None, "--judge", help="Separate judge-label file (candidate, item, loss_judge)."),
    select: Optional[str] = typer.Option(None, "--select", help="fst, bonferroni or holm: family-wise error <= delta."),
    order_by: Optional[str] = typer.Option(None, "--order-by", help="Per-candidate column giving the FST order (descending)."),
    ascending: bool = typer.Option(False, "--ascending", help="Sort --order-by ascending instead."),
    cost_col: Optional[str] = typer.Option(None, "--cost-col", help="Per-candidate cost; with --select, the cheapest certified is best."),
    interval: bool = typer.Option(False, "--interval", help="Also a two-sided interval for each risk."),
    candidate_col: str = typer.Option("candidate", help="Column naming the candidate model / prompt."),
    item_col: str = typer.Option("item", help="Column with the example id."),
    human_col: str = typer.Option("loss_human", help="Column with the human-label loss in [0, 1]."),
    judge_col: str = typer.Option("loss_judge", help="Column with the judge-label loss in [0, 1]."),
    no_shuffle: bool = typer.Option(False, "--no-shuffle", help="Keep the file's row order instead of a seeded shuffle."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Seed of the processing order (recorded)."),
    require_certified: bool = typer.Option(False, "--require-certified", help="Exit 1 when no candidate is certified."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON on stdout."),
    out: Optional[Path] = typer.Option(None, "--out", help="Also write the JSON result to this file."),
    report: Optional[Path] = typer.Option(None, "--report", help="Also write a self-contained HTML report."),
) -> None:
    """Certify risk < target with few human labels and many judge labels (R-AutoEval+)."""
    from . import autoeval as ae, data as d
    from .errors import GateFailed

    text = (candidate_col, item_col)
    table = d.read_table(data, text_columns=text)
    epoch_note = None
    if {"score_original", "score_human", "source"} <= set(table.columns) and human_col not in table.columns:
        # an inspect log: the scorer's original values are the judge labels, human score edits the human labels
        from .ingest import to_autoeval

        if table["metric"].nunique() > 1:
            raise AssayInputError(f"{data}: the log has several scorers ({', '.join(sorted(table['metric'].unique()))}); "
                                  "pick the judge's with: assay ingest LOG --scorer NAME -o table.parquet")
        converted = to_autoeval(table)
        epoch_note = converted.attrs.get("note")
        table = converted.rename(columns={"candidate": candidate_col, "item": item_col,
                                          "loss_human": human_col, "loss_judge": judge_col})
    if judge is not None:
        table = d.merge_judge(table, d.read_table(judge, text_columns=text), candidate=candidate_col, item=item_col,
                              human_col=human_col, judge_col=judge_col)
        columns = None
    else:
        columns = {"candidate": candidate_col, "item": item_col, "loss_human": human_col, "loss_judge": judge_col}
    result = ae.certify(table, risk_target=risk_target, delta=delta, method=method, betting=betting, factors=factors,
                        seed=seed, select=select, order_by=order_by, ascending=ascending, cost_col=cost_col,
                        interval=interval, shuffle=not no_shuffle, columns=columns)
    if epoch_note:
        result.info.setdefault("warnings", []).append(epoch_note)
    _emit(result, as_json, out, report, lambda: _print_autoeval(result))
    if require_certified and not result.certified:
        raise GateFailed("no candidate is certified (--require-certified)")


def _fmt_kpi(v: float) -> str:
    return "inf (none)" if v == float("inf") else f"{v:.4g}"


def _print_psdme(result) -> None:
    info = result.info
    p = result.params
    t = Table(title=f"PS-DME: method {info['method_used']} ({p['band']} bands), {info['selected_count']} of {info['K']} "
                    f"configurations selected, delta = {result.level['delta']:g}", title_justify="left")
    gcols = [c for c in result.configs.columns if c.startswith("kpi_")]
    for c in ["config", "n", "failures", "mean", "level", "width", *[f"guaranteed {c[4:]}" for c in gcols]]:
        t.add_column(c, justify="left" if c == "config" else "right")
    sel = result.configs[result.configs["selected"].astype(bool)]
    for r in sel.to_dict(orient="records"):
        t.add_row(str(r["config"]), str(r["n"]), str(r["failures"]), f"{r['mean']:.4g}", f"{r['level']:.3g}",
                  f"{r['width']:.4f}", *[_fmt_kpi(r[c]) for c in gcols])
    _out.print(t)
    for b in info.get("best", []):
        cfg = b["best_config"]
        _out.print(f"best guaranteed KPI at reliability {b['reliability']:g}: "
                   + (f"[bold]{b['best_kpi']:.4g}[/] ({cfg})" if cfg else "none (no band reaches that level)"))
    if info.get("method_reason"):
        _out.print(f"method: {info['method_reason']}", highlight=False)
    for n in info.get("notes", []):
        _out.print(f"note: {n}", highlight=False)
    _out.print(f"Guarantee: {result.level['meaning']}.", highlight=False)


@app.command()
@_guard
def psdme(
    kpi_file: Path = typer.Argument(..., help="Long table: one row per observation, a configuration column and a KPI column."),
    config_col: str = typer.Option("config", "--config-col", help="Column naming the configuration."),
    kpi_col: str = typer.Option("kpi", "--kpi-col", help="Column with the KPI (lower is better)."),
    select: str = typer.Option("all", "--select", help="all, top:K (K smallest means) or below:VALUE."),
    delta: float = typer.Option(0.1, "--delta", help="FCR level (family-wise error for bonferroni)."),
    method: str = typer.Option("ps-dme", "--method", help="ps-dme, ss-dme, bonferroni, naive or auto."),
    band: str = typer.Option("dkw", "--band", help="dkw or berk-jones."),
    tau: Optional[float] = typer.Option(None, "--tau", help="Pre-specified power-calibrator tau (default: optimal for |S| of top:K/all; for below:VALUE, optimal for --max-selected)."),
    max_selected: Optional[int] = typer.Option(None, "--max-selected", help="below:VALUE: the largest |S| you plan for, declared before the data (default K); fixes the calibrator."),
    split: float = typer.Option(0.5, "--split", help="SS-DME: fraction of each configuration's data used to select."),
    gamma: str = typer.Option("0.01,0.05,0.1", "--gamma", help="Failure probabilities for the guaranteed KPI."),
    failures: str = typer.Option("error", "--failures", help="error, or worst: +inf KPIs are failures worse than any value."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Seed (SS-DME split)."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON on stdout."),
    out: Optional[Path] = typer.Option(None, "--out", help="Also write the JSON result to this file."),
    report: Optional[Path] = typer.Option(None, "--report", help="Also write a self-contained HTML report."),
) -> None:
    """CDF bands and guaranteed KPIs for configurations pre-selected on the same data (PS-DME)."""
    from . import data as d, psdme as ps

    try:
        gammas = [float(x) for x in gamma.split(",") if x.strip()]
    except ValueError:
        raise AssayInputError(f"--gamma must be comma-separated numbers in (0, 1), got {gamma!r}") from None
    table = d.read_table(kpi_file, text_columns=(config_col,))
    result = ps.bands(table, select=select, delta=delta, method=method, band=band,
                      calibrator="optimal" if tau is None else tau, split=split, gammas=gammas, seed=seed,
                      max_selected=max_selected,
                      columns={"config": config_col, "kpi": kpi_col}, failures=failures)
    _emit(result, as_json, out, report, lambda: _print_psdme(result))


@app.command()
@_guard
def query(
    prompts: Path = typer.Argument(..., help="Prompts: CSV/TSV/Parquet/JSONL/JSON with a prompt column, or a .txt file (one per line)."),
    model: str = typer.Option(..., "--model", help="Model name as the endpoint knows it."),
    endpoint: Optional[str] = typer.Option(None, "--endpoint", help="OpenAI-compatible base URL, e.g. http://localhost:8000/v1 (vLLM), http://localhost:11434/v1 (Ollama); default $OPENAI_BASE_URL or OpenAI."),
    api_key_env: str = typer.Option("OPENAI_API_KEY", "--api-key-env", help="Environment variable holding the API key (never logged or journaled)."),
    concurrency: int = typer.Option(8, "--concurrency", help="Maximum requests in flight (backs off on 429/503, recovers)."),
    rpm: Optional[float] = typer.Option(None, "--rpm", help="Requests-per-minute limit."),
    timeout: float = typer.Option(60.0, "--timeout", help="Per-request timeout in seconds."),
    max_retries: int = typer.Option(6, "--max-retries", help="Retries per request (exponential backoff with jitter, Retry-After honoured)."),
    run_id: Optional[str] = typer.Option(None, "--run-id", help="Resume this run: answers already in the journal are not requested again."),
    journal: Optional[Path] = typer.Option(None, "--journal", help="SQLite journal (default $ASSAY_JOURNAL or ~/.cache/assay/journal.sqlite)."),
    temperature: float = typer.Option(0.0, "--temperature"),
    max_tokens: Optional[int] = typer.Option(None, "--max-tokens"),
    seed: Optional[int] = typer.Option(None, "--seed", help="Sampling seed sent to the endpoint."),
    system_prompt: Optional[str] = typer.Option(None, "--system", help="System message."),
    prompt_col: str = typer.Option("prompt", "--prompt-col"),
    id_col: str = typer.Option("id", "--id-col", help="Item id column (row numbers when absent)."),
    reference_col: Optional[str] = typer.Option(None, "--reference-col", help="Reference answers: score the responses."),
    scorer: str = typer.Option("exact", "--scorer", help="exact, numeric, choice or contains."),
    policy: str = typer.Option("missing", "--policy", help="Score of timeouts / failures / unparseable answers: missing, wrong or correct."),
    output: Optional[Path] = typer.Option(None, "-o", "--output", help="Write one row per prompt (CSV/Parquet/JSONL by extension)."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON summary (and rows) on stdout."),
) -> None:
    """Send prompts to an OpenAI-compatible endpoint through the crash-safe journal; optionally score them."""
    import pandas as pd

    from . import data as d
    from .errors import AssayBackendError
    from .models import OpenAIChatModel, run as run_model
    from .models.journal import default_path
    from .models.scoring import count_outcomes, make_scorer, score_response
    from .progress import progress_reporter

    if prompts.suffix.lower() == ".txt":
        if not prompts.exists():
            raise AssayInputError(f"no such file: {prompts}")
        lines = [ln for ln in prompts.read_text().splitlines() if ln.strip()]
        table = pd.DataFrame({prompt_col: lines})
    else:
        table = d.read_table(prompts, text_columns=(id_col,))
    if prompt_col not in table.columns:
        raise AssayInputError(f"no prompt column {prompt_col!r}; columns: {', '.join(map(str, table.columns))} (use --prompt-col)")
    if table[prompt_col].isna().any():
        raise AssayInputError(f"empty prompts at {d.describe_rows(table.index[table[prompt_col].isna()])}")
    ids = table[id_col].astype(str).tolist() if id_col in table.columns else [str(i) for i in range(len(table))]
    scorer_fn = make_scorer(scorer) if reference_col else None
    if reference_col and reference_col not in table.columns:
        raise AssayInputError(f"no reference column {reference_col!r}; columns: {', '.join(map(str, table.columns))}")
    llm = OpenAIChatModel(model, base_url=endpoint, api_key_env=api_key_env, temperature=temperature,
                          max_tokens=max_tokens, seed=seed, timeout=timeout, system_prompt=system_prompt)
    with progress_reporter(f"query {model}") as update:
        def progress(st: dict) -> None:
            tokens = (st.get("prompt_tokens") or 0) + (st.get("completion_tokens") or 0)
            update(st["done"], st["total"], f"{st['in_flight']} in flight, {st['retries']} retries, "
                                            f"{st['cached']} from journal, {tokens:,} tokens")

        result = run_model(llm, table[prompt_col].astype(str).tolist(), journal=journal or default_path(), run_id=run_id,
                           concurrency=concurrency, rpm=rpm, max_retries=max_retries, timeout=timeout,
                           progress=progress)
    sys.stderr.write(f"run id: {result.run_id} (resume with --run-id {result.run_id})\n")
    rows = pd.DataFrame([r.to_dict() for r in result.responses])
    rows.insert(0, "id", ids)
    rows.insert(1, "prompt", table[prompt_col].astype(str).tolist())
    summary: dict[str, Any] = {"run_id": result.run_id, "model": model, "endpoint": llm.base_url, "stats": result.stats}
    if scorer_fn is not None:
        outs = [score_response(r.text, r.error, ref, scorer_fn, policy=policy)
                for r, ref in zip(result.responses, table[reference_col].tolist())]
        rows["extracted"] = [o.extracted for o in outs]
        rows["status"] = [o.status for o in outs]
        rows["score"] = [o.final_score for o in outs]
        scored = [o.final_score for o in outs if o.final_score is not None]
        summary["scoring"] = {"scorer": scorer, "policy": policy, "counts": count_outcomes(outs),
                              "accuracy": (sum(scored) / len(scored)) if scored else None, "scored": len(scored)}
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        suffix = output.suffix.lower()
        if suffix in (".parquet", ".pq"):
            rows.to_parquet(output, index=False)
        elif suffix in (".jsonl", ".ndjson"):
            rows.to_json(output, orient="records", lines=True)
        else:
            rows.to_csv(output, index=False)
    if as_json:
        from .results import to_jsonable

        from .models.journal import mask_secrets

        sys.stdout.write(mask_secrets(json.dumps(to_jsonable({**summary, "rows": rows}), indent=2)) + "\n")
    else:
        st = result.stats
        _out.print(f"{st['done']} of {st['total']} answered ({st['cached']} from the journal, {st['retries']} retries, "
                   f"{st['errors']} errors), run id {result.run_id}", highlight=False)
        if "scoring" in summary:
            sc = summary["scoring"]
            acc = "n/a" if sc["accuracy"] is None else f"{sc['accuracy']:.4f}"
            _out.print(f"accuracy {acc} on {sc['scored']} scored ({sc['counts']}; policy {policy})", highlight=False)
        if output is not None:
            _out.print(f"rows written to {output}")
    if result.stats.get("errors"):
        raise AssayBackendError(f"{result.stats['errors']} requests failed after retries; rerun with --run-id "
                                f"{result.run_id} to retry only those")


_QUICK = {"trials": 200, "gt": 300, "n_boot": 200}


@app.command()
@_guard
def ingest(
    src: Path = typer.Argument(..., help="lm-eval --log_samples folder or samples_*.jsonl, inspect .eval/.json log(s), HELM run folder or per_instance_stats.json, or a CSV/Parquet/JSONL table."),
    fmt: str = typer.Option("auto", "--format", help="auto, lmeval, inspect, helm or table."),
    metric: Optional[str] = typer.Option(None, "--metric", help="lm-eval / HELM metric (default: the first scalar one / exact_match)."),
    filt: Optional[str] = typer.Option(None, "--filter", help="lm-eval filter (default: the first one per task)."),
    scorer: Optional[str] = typer.Option(None, "--scorer", help="inspect scorer (default: every scorer, one row each)."),
    split: Optional[str] = typer.Option(None, "--split", help="HELM split."),
    perturbation: Optional[str] = typer.Option(None, "--perturbation", help="HELM perturbation name (default: unperturbed)."),
    model: Optional[str] = typer.Option(None, "--model", help="Override the model name."),
    variant: Optional[str] = typer.Option(None, "--variant", help="Label of this prompt variant (default: task and few-shot)."),
    out: Optional[Path] = typer.Option(None, "-o", "--out", help="Write the tidy table: .parquet, .csv or .jsonl."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON summary on stdout."),
) -> None:
    """Read evaluation logs you already have into assay's tidy table (model, task, variant, item, repeat, metric, score)."""
    from .ingest import read_any

    kw = {"metric": metric, "filter": filt, "scorer": scorer, "split": split, "perturbation": perturbation,
          "model": model, "variant": variant}
    table = read_any(src, format=fmt, **kw)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        suf = out.suffix.lower()
        if suf in (".parquet", ".pq"):
            table.to_parquet(out, index=False)
        elif suf == ".csv":
            table.to_csv(out, index=False)
        elif suf == ".jsonl":
            table.to_json(out, orient="records", lines=True)
        else:
            raise AssayInputError(f"{out}: write .parquet, .csv or .jsonl")
    summary = {"rows": int(len(table)), "columns": list(map(str, table.columns))}
    for c in ("model", "task", "variant", "metric", "filter", "source"):
        if c in table.columns:
            summary[c] = sorted(map(str, table[c].dropna().unique()))[:50]
    if "score" in table.columns:
        summary["missing_scores"] = int(table["score"].isna().sum())
    if "score_human" in table.columns:
        summary["human_edits"] = int(table["score_human"].notna().sum())
    if as_json:
        sys.stdout.write(json.dumps(summary, indent=2) + "\n")
        return
    _out.print(f"{summary['rows']} rows; " + "; ".join(f"{k}: {', '.join(v[:6])}{' ...' if len(v) > 6 else ''}"
                                                    for k, v in summary.items() if isinstance(v, list) and k != "columns"))
    if "human_edits" in summary:
        _out.print(f"human score edits kept apart from the original values: {summary['human_edits']}")
    if out is not None:
        _out.print(f"table written to {out}")


@app.command()
@_guard
def report(
    results: list[Path] = typer.Argument(..., help="Result JSON files (--out of any command, or assay demo's results.json)."),
    out: Path = typer.Option(Path("report.html"), "-o", "--out", help="Output: .html (self-contained) or .md (Markdown for PRs)."),
    title: str = typer.Option("assay report", "--title", help="Page title."),
) -> None:
    """Render result JSON files as one self-contained HTML page (inline SVG, no network) or Markdown."""
    from .report import load_results, render_html, render_markdown

    loaded = []
    for path in results:
        if not path.exists():
            raise AssayInputError(f"{path}: no such file")
        try:
            obj = json.loads(path.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise AssayInputError(f"{path}: not JSON ({e})") from None
        try:
            loaded += load_results(obj)
        except AssayInputError as e:
            raise AssayInputError(f"{path}: {e}") from None
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.suffix.lower() in (".md", ".markdown"):
        out.write_text(render_markdown(loaded))
    else:
        out.write_text(render_html(loaded, title=title))
    _out.print(f"{len(loaded)} result(s) -> {out}")


@app.command()
@_guard
def study(
    name: str = typer.Argument(..., help="siren-a, siren-b, siren-c, autoeval-example, autoeval-quant, psdme-ridge, faq-leaderboard, faq-stopping, scope-sim."),
    trials: Optional[int] = typer.Option(None, "--trials", help="Monte Carlo trials per configuration (paper: 2000)."),
    gt: Optional[int] = typer.Option(None, "--gt", help="Replications for the ground-truth target (paper: 3000)."),
    boot: Optional[int] = typer.Option(None, "--boot", help="Bootstrap draws per trial (paper: 500)."),
    seed: int = typer.Option(0, "--seed", help="Root seed; child seeds are spawned per configuration."),
    workers: int = typer.Option(1, "--workers", help="Worker processes / Ray CPUs (results do not depend on it)."),
    executor: Optional[str] = typer.Option(None, "--executor", help="serial, processes or ray (default: processes when --workers > 1)."),
    address: Optional[str] = typer.Option(None, "--address", help="Ray cluster: 'auto' (the cluster this machine is in) or ray://host:10001 (default: a local Ray)."),
    quick: bool = typer.Option(False, "--quick", help="A small version for a smoke test (200 trials)."),
    as_json: bool = typer.Option(False, "--json", help="Print {\"rows\": [...], ...} as JSON on stdout."),
    out: Optional[Path] = typer.Option(None, "--out", help="Also write the JSON result to this file."),
) -> None:
    """Reproduce a paper's simulation study (coverage, width, optimism)."""
    from .progress import progress_reporter
    from .studies import available, run_study

    if name not in available():
        raise AssayInputError(f"unknown study {name!r}; available: {', '.join(available())}")
    kwargs: dict[str, Any] = dict(_QUICK) if quick else {}
    if trials is not None:
        kwargs["trials"] = trials
    if gt is not None:
        kwargs["gt"] = gt
    if boot is not None:
        kwargs["n_boot"] = boot
    if name == "siren-c" or name.startswith(("autoeval", "psdme")):
        kwargs.pop("gt", None)
    if name.startswith("psdme"):
        kwargs.pop("n_boot", None)
        if quick:
            kwargs["trials"] = 20
    if name.startswith("faq"):
        kwargs.pop("gt", None)
        kwargs.pop("n_boot", None)
        if quick and name == "faq-leaderboard":
            kwargs.update(trials=2, budgets=(0.025, 0.1), n_models=300, splits=2,
                          methods=("faq", "faq_paper", "uniform", "ht_uniform"))
        elif quick:
            kwargs.update(trials=1, widths=(0.15,), n_models=300, splits=2, fixed_budgets=(0.025, 0.05, 0.1))
    if name.startswith("scope"):
        kwargs.pop("gt", None)
        kwargs.pop("n_boot", None)
        if quick:
            kwargs.update(trials=2, cert_trials=20, budgets=(2000,), cert_budget=2000, region_budget=2000)
    if name.startswith("autoeval"):
        kwargs.pop("n_boot", None)
        if quick:
            kwargs.update(trials=10, grid=1000)
            if name == "autoeval-example":
                kwargs.update(n_max=20_000)
    from .parallel import use_executor

    if address is not None and executor not in (None, "ray"):
        raise AssayInputError("--address is for --executor ray")
    with use_executor(executor or ("ray" if address else None), address), progress_reporter(f"study {name}") as update, \
            progress_reporter("factor fit (per fold and candidate)") as fit_update:
        if name.startswith("faq"):
            kwargs["fit_progress"] = fit_update
        result = run_study(name, seed=seed, workers=workers, progress=update, **kwargs)
    result.info["executor"] = {"kind": executor or ("ray" if address else ("processes" if workers > 1 else "serial")),
                               "workers": workers, "address": address}

    def human() -> None:
        _out.print(result.summary(), highlight=False)

    _emit(result, as_json, out, None, human)


def _read_answers(path: Path, what: str):
    """A wide (model column or first column = model id, one column per item) or long (model, item, score) table,
    or an lm-eval / inspect / HELM log (read by assay.ingest)."""
    import pandas as pd

    from . import data as d

    table = d.read_table(path, text_columns=("model", "item"))
    if "source" in table.columns and {"model", "item", "score", "task"} <= set(table.columns):
        # an lm-eval / inspect / HELM log read by assay.ingest: first repeat, items keyed by task when several
        t = table[table["repeat"] == table["repeat"].min()] if "repeat" in table.columns else table
        if "metric" in t.columns and t["metric"].nunique() > 1:
            t = t[t["metric"] == t["metric"].iloc[0]]
        item = t["item"] if t["task"].nunique() == 1 else t["task"] + "/" + t["item"]
        return pd.DataFrame({"model": t["model"].to_numpy(), "item": item.to_numpy(), "score": t["score"].to_numpy()})
    if {"model", "item", "score"} <= set(table.columns) and table.shape[1] <= 4:
        return table
    if table.shape[1] < 2:
        raise AssayInputError(f"{what} {path}: expected a model id column and one column per item, or long columns "
                              "model, item, score")
    key = "model" if "model" in table.columns else table.columns[0]
    table = table.set_index(key)
    table.index = table.index.astype(str)
    return table


def _print_faq(result) -> None:
    p = result.params
    level = 1 - result.level["alpha"]
    est = result.estimates
    kind = str(est["interval"].iloc[0]) if "interval" in est.columns and len(est) else "fixed-budget"
    t = Table(title=f"FAQ: {p['n_queries']} queries of {p['n_items']} questions ({p['n_queries'] / p['n_items']:.1%}) "
                    f"at most, {level:.0%} {kind} intervals for the accuracy over the whole bank, seed = {result.seed}",
              title_justify="left")
    cols = [c for c in ("model", "estimate", "low", "high", "width", "truth", "n_queries", "gain_vs_uniform")
            if c in est.columns]
    for c in cols:
        t.add_column(c, justify="left" if c == "model" else "right")
    for row in est[cols].itertuples(index=False):
        cells = []
        for c, v in zip(cols, row):
            if c == "gain_vs_uniform":
                cells.append("" if v != v else f"{v:.2f}x")
            elif isinstance(v, float):
                cells.append(f"{v:.4f}")
            else:
                cells.append(escape(str(v)))
        t.add_row(*cells)
    _out.print(t)
    f = result.info.get("factors", {})
    _out.print(f"factors: k = {f.get('k')}, weight_decay = {f.get('weight_decay')}, train log-loss "
               f"{f.get('train_logloss', float('nan')):.3f}, held-out {f.get('heldout_logloss', float('nan')):.3f}"
               + (f" (cached fit: {f.get('cache')})" if f.get("cache") not in (None, "not used") else ""))
    _out.print("gain_vs_uniform: how many uniformly sampled questions each asked question was worth (estimated)")
    for w in result.warnings:
        _out.print(f"note: {escape(w)}")


def _parse_budget(text: str):
    """--budget: '0.05' or '1.0' is a fraction of the bank, '67' a number of queries."""
    import re

    t = text.strip()
    if re.fullmatch(r"[0-9]+", t):
        return int(t)
    try:
        return float(t)
    except ValueError:
        raise AssayInputError(f"--budget {text!r} is neither a fraction of the bank (0.05, 1.0) nor a number of "
                              "queries (67)") from None


@app.command()
@_guard
def faq(
    history: Path = typer.Option(..., "--history", help="Historical 0/1 answers: wide (model id column + one column per item; empty = missing) or long (model, item, score)."),
    new: Optional[Path] = typer.Option(None, "--new", help="Offline: the new model(s)' answers on every item (same formats)."),
    items: Optional[Path] = typer.Option(None, "--items", help="Live: item bank (CSV/JSONL/...) with id, prompt and reference columns."),
    budget: str = typer.Option("0.05", "--budget", help="A fraction of the bank (0.05; 1.0 = every question) or a number of queries (67). N or more = every question once, exact."),
    until_width: Optional[float] = typer.Option(None, "--until-width", help="Stop as soon as the (anytime-valid) interval is at most this wide; --budget is then the most to spend."),
    min_queries: int = typer.Option(20, "--min-queries", help="With --until-width: never stop before this many queries."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Seed of FAQ's draws (recorded; a resumed live run reuses its own)."),
    alpha: float = typer.Option(0.05, "--alpha", help="1 - confidence level."),
    tau: Optional[float] = typer.Option(None, "--tau", help="Uniform mixing (every question keeps probability >= tau/N; default 0.5)."),
    beta0: Optional[float] = typer.Option(None, "--beta0", help="Tempering exponent of the oracle scores (default 1)."),
    rho: Optional[float] = typer.Option(None, "--rho", help="Active-learning share of the budget (default 0 = off)."),
    gamma: Optional[float] = typer.Option(None, "--gamma", help="Tempering warm-up share of the budget (default 0)."),
    design: Optional[str] = typer.Option(None, "--design", help="wor (default: without replacement), wr (the paper's Algorithm 1) or naive-wor (the paper's invalid ablation)."),
    variance: Optional[str] = typer.Option(None, "--variance", help="conservative (default), increments, model or paper (eq. 8, --design wr)."),
    quantile: Optional[str] = typer.Option(None, "--quantile", help="t (default) or normal."),
    factors: Optional[Path] = typer.Option(None, "--factors", help="Load fitted factors (.npz from --save-factors): no fitting."),
    save_factors: Optional[Path] = typer.Option(None, "--save-factors", help="Save the fitted factors to this .npz."),
    k: Optional[int] = typer.Option(None, "--k", help="Fixed latent dimension (skips cross-validation; needs --weight-decay)."),
    weight_decay: Optional[float] = typer.Option(None, "--weight-decay", help="Fixed L2 prior precision (with --k)."),
    cache: bool = typer.Option(True, "--cache/--no-cache", help="Reuse the default factor fit cached under a hash of the history ($ASSAY_CACHE_DIR or ~/.cache/assay)."),
    endpoint: Optional[str] = typer.Option(None, "--endpoint", help="Live: OpenAI-compatible base URL."),
    model: Optional[str] = typer.Option(None, "--model", help="Live: model name as the endpoint knows it."),
    api_key_env: str = typer.Option("OPENAI_API_KEY", "--api-key-env", help="Environment variable holding the API key."),
    scorer: str = typer.Option("exact", "--scorer", help="Live: exact, numeric, choice or contains."),
    policy: str = typer.Option("wrong", "--policy", help="Live: unparseable answers count as wrong, or missing (stop)."),
    journal: Optional[Path] = typer.Option(None, "--journal", help="Live: SQLite journal (default $ASSAY_JOURNAL or ~/.cache/assay/journal.sqlite)."),
    run_id: Optional[str] = typer.Option(None, "--run-id", help="Live: resume this run (its seed, budget and factors must match; the seed is reused when omitted)."),
    timeout: float = typer.Option(60.0, "--timeout", help="Live: per-request timeout in seconds."),
    max_retries: int = typer.Option(6, "--max-retries", help="Live: retries per request."),
    temperature: float = typer.Option(0.0, "--temperature"),
    max_tokens: Optional[int] = typer.Option(None, "--max-tokens"),
    system_prompt: Optional[str] = typer.Option(None, "--system", help="Live: system message."),
    id_col: str = typer.Option("id", "--id-col"),
    prompt_col: str = typer.Option("prompt", "--prompt-col"),
    reference_col: str = typer.Option("reference", "--reference-col"),
    queries_out: Optional[Path] = typer.Option(None, "--queries", help="Write the asked questions (model, round, item, answer, q, phi)."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON on stdout."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Also write the JSON result to this file."),
    report: Optional[Path] = typer.Option(None, "--report", help="Also write a self-contained HTML report."),
) -> None:
    """A new model's accuracy on the whole benchmark from a few adaptively chosen questions (FAQ)."""
    from . import faq as faq_mod
    from .faq.io import load_factors, save_factors as write_factors
    from .progress import progress_reporter

    if (new is None) == (items is None):
        raise AssayInputError("give exactly one of --new (offline: the new model's answers) or --items (live: an item "
                              "bank queried through --endpoint/--model)")
    if items is not None and (endpoint is None or model is None):
        raise AssayInputError("live mode (--items) needs --endpoint and --model")
    if (k is None) != (weight_decay is None):
        raise AssayInputError("--k and --weight-decay go together (a fixed factor model); omit both to cross-validate")
    bud = _parse_budget(budget)
    hist = _read_answers(history, "history")
    fm = None
    if factors is not None:
        fm = load_factors(factors)
    elif k is not None:
        fm = faq_mod.FactorModel(k=k, weight_decay=weight_decay, seed=0)
    prm = dict(tau=tau, beta0=beta0, rho=rho, gamma=gamma, variance=variance, quantile=quantile, design=design)
    answerer = None
    if new is not None:
        target = _read_answers(new, "new")
    else:
        from .faq.live import LiveAnswerer
        from .models import OpenAIChatModel
        from .models.journal import default_path

        llm = OpenAIChatModel(model, base_url=endpoint, api_key_env=api_key_env, temperature=temperature,
                              max_tokens=max_tokens, timeout=timeout, system_prompt=system_prompt)
        answerer = LiveAnswerer(llm, items, scorer=scorer, policy=policy, journal=journal or default_path(),
                                run_id=run_id, timeout=timeout, max_retries=max_retries, id_col=id_col,
                                prompt_col=prompt_col, reference_col=reference_col)
        target = answerer
    with progress_reporter("factor fit (per fold and candidate)") as fit_update, progress_reporter("faq rounds") as update:
        try:
            result = faq_mod.evaluate(hist, target, budget=bud, seed=seed, alpha=alpha, factors=fm, cache=cache,
                                      until_width=until_width, min_queries=min_queries, progress=update,
                                      fit_progress=fit_update, items=answerer.items if answerer else None, **prm)
        finally:
            if answerer is not None and answerer.run_id:
                sys.stderr.write(f"run id: {answerer.run_id} (resume with --run-id {answerer.run_id}); "
                                 f"{answerer.n_requests} requests, {answerer.n_cached} from the journal\n")
    if answerer is not None:
        result.info["live"] = {"run_id": answerer.run_id, "requests": answerer.n_requests, "cached": answerer.n_cached,
                               "endpoint": answerer.model.base_url, "model": model, "scorer": scorer, "policy": policy}
    if save_factors is not None:
        write_factors(result.factors_, save_factors)
        sys.stderr.write(f"factors saved to {save_factors}\n")
    if queries_out is not None:
        queries_out.parent.mkdir(parents=True, exist_ok=True)
        q = result.tables["queries"]
        if queries_out.suffix.lower() in (".parquet", ".pq"):
            q.to_parquet(queries_out, index=False)
        else:
            q.to_csv(queries_out, index=False)
    _emit(result, as_json, out, report, lambda: _print_faq(result))


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
    delta: float = typer.Option(0.01, "--delta", help="Error probability of all bounds and certificates together."),
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
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON on stdout."),
    out: Optional[Path] = typer.Option(None, "--out", help="Also write the JSON result to this file."),
    report: Optional[Path] = typer.Option(None, "--report", help="Also write a self-contained HTML report."),
) -> None:
    """Certify where a model is reliably weak in a procedurally generated benchmark (QuickScope / COUP+)."""
    import numpy as np

    from . import quickscope as qs
    from .progress import progress_reporter
    from .quickscope.run import result_from_search

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
        from .quickscope.simulate import get_world, run_simulated

        world = get_world(simulate)
        sp = qs.SearchSpace.from_yaml(space) if space is not None else world.space()
        if space is not None:
            # the simulated truth reads the world's own parameters: a space without them cannot be simulated
            probe = sp.sample(1, np.random.default_rng(seed))[0]
            try:
                world.truth(probe)
            except (KeyError, TypeError, ValueError) as e:
                want = ", ".join(p.name for p in world.space().params)
                raise AssayInputError(f"the space {str(space)!r} does not fit the simulated world {simulate!r} "
                                      f"({type(e).__name__}: {e}); its parameters are: {want}") from None
        search = qs.Search(sp, seed=seed, **sp_params)
        with progress_reporter("scope tickets") as update:
            while search.tickets_told < budget:
                run_simulated(search, world.truth, min(budget, search.tickets_told + 50 * batch), batch=batch,
                              seed=np.random.default_rng([seed, search.tickets_told]))
                update(search.tickets_told, budget)
        arms = search.arms()
        truth = [world.truth(c) for c in search.configs]
        top_tab = search.top(top)
        top_tab["truth"] = [truth[i] for i in top_tab["arm"]]
        params = {**vars(search.params), "budget": budget, "batch": batch, "utility": "error", "world": simulate,
                  "seed": seed}
        result = result_from_search(search, params=params, top=top)
        result.tables["top"] = top_tab
        cert = arms[arms["certified"]]
        result.info["simulated"] = {"world": simulate,
                                    "false_certifications": int(sum(truth[i] < search.tau for i in cert["arm"]))}
    else:
        from .benchmarks import get_generator
        from .models import OpenAIChatModel
        from .models.journal import default_path

        gen = get_generator(generator)
        sp = qs.SearchSpace.from_yaml(space) if space is not None else gen.space()
        llm = OpenAIChatModel(model, base_url=endpoint, api_key_env=api_key_env, temperature=temperature,
                              max_tokens=max_tokens, timeout=timeout, system_prompt=system_prompt)
        with progress_reporter("scope tickets") as update:
            result = qs.run(sp, gen, llm, budget=budget, batch=batch, seed=seed, utility=utility,
                            journal=journal or default_path(), run_id=run_id, concurrency=concurrency, timeout=timeout,
                            max_retries=max_retries, progress=update, **sp_params)
        sys.stderr.write(f"run id: {result.info.get('run_id')} (resume with --run-id {result.info.get('run_id')} "
                         f"--seed {seed})\n")
    _emit(result, as_json, out, report, lambda: _out.print(result.summary(), highlight=False))


@app.command()
@_guard
def demo(
    out: Path = typer.Option(Path("demo-out"), "--out", help="Folder for results.json and report.html."),
    seed: int = typer.Option(0, "--seed", help="Random seed."),
    as_json: bool = typer.Option(False, "--json", help="Print results.json on stdout."),
) -> None:
    """Run every method on data shipped inside the package; write DIR/results.json and DIR/report.html."""
    import time

    import numpy as np

    from . import autoeval as ae, faq as faq_mod, psdme as ps, quickscope as qs, siren as siren_mod
    from .datasets import load_llmperf, load_siren_law, simulated_faq, synthetic_autoeval
    from .quickscope.run import result_from_search
    from .quickscope.simulate import get_world, run_simulated
    from .report import render_html

    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    steps = 5

    def step(k: int, what: str) -> None:
        sys.stderr.write(f"demo {k}/{steps}: {what} ({time.perf_counter() - t0:.0f} s)\n")
        sys.stderr.flush()

    step(1, "SIREN on MMLU-Pro Law (shipped, MIT)")
    sres = siren_mod.evaluate(load_siren_law(), seed=seed, contrasts=["tuned-vs-default", "pairwise"], temperature=0.1)
    step(2, "R-AutoEval+ on a simulation (5 quantized models, judge 90% accurate)")
    ares = ae.certify(synthetic_autoeval(seed), risk_target=0.1, delta=0.1, select="fst", order_by="memory_gb",
                      cost_col="memory_gb", seed=seed, interval=True)
    ares.info["data"] = "simulation (synthetic losses; no licensed real data ships for R-AutoEval+)"
    step(3, "PS-DME on LLMPerf latencies (shipped, Apache-2.0)")
    pres = ps.bands(load_llmperf(), select="top:5", delta=0.1, method="ps-dme", band="berk-jones",
                    gammas=(0.05, 0.1, 0.2), columns={"kpi": "ttft_s"}, failures="worst", seed=seed)
    step(4, "FAQ: simulated answers from the paper's MMLU-Pro math factors (shipped, Apache-2.0), factors refitted by assay")
    hist, new, truth = simulated_faq(seed, n_history=300, n_new=5)
    fres = faq_mod.evaluate(hist, new, budget=0.05, seed=seed,
                            factors=faq_mod.FactorModel(k=8, weight_decay=3.0, seed=seed))
    fres.estimates["truth"] = truth.to_numpy()
    fres.info["data"] = ("simulation: 0/1 answers drawn from sigmoid(U V^T) with the FAQ paper's fitted MMLU-Pro math "
                         "factors; 300 historical and 5 new simulated models")
    step(5, "QuickScope on a simulated model over the DyVal space (known error rates)")
    world = get_world("dyval-ceiling")
    search = qs.Search(world.space(), seed=seed, certify=0.9)
    run_simulated(search, world.truth, 3000, batch=20, seed=np.random.default_rng(seed))
    qres = result_from_search(search, params={**vars(search.params), "budget": 3000, "batch": 20, "utility": "error",
                                              "world": "dyval-ceiling", "seed": seed})
    qres.tables["top"]["truth"] = [world.truth(search.configs[i]) for i in qres.tables["top"]["arm"]]
    qres.info["data"] = "simulation: a model whose error rate on each DyVal template is a known function (no LLM)"
    allres = [sres, ares, pres, fres, qres]
    results = {"siren": sres.to_dict(), "autoeval": ares.to_dict(), "psdme": pres.to_dict(), "faq": fres.to_dict(),
               "quickscope": qres.to_dict()}
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    (out / "report.html").write_text(render_html(allres, title="assay demo"))
    sys.stderr.write(f"demo done in {time.perf_counter() - t0:.0f} s\n")
    if as_json:
        sys.stdout.write(json.dumps(results, indent=2) + "\n")
        return
    _out.print("[bold]SIREN on MMLU-Pro Law (3 models, DSPy tuner, 4 budgets + default; shipped data)[/]")
    _print_siren(sres)
    _out.print("\n[bold]R-AutoEval+ model selection (SIMULATION: 5 quantized models, judge 90% accurate)[/]")
    _print_autoeval(ares)
    _out.print("\n[bold]PS-DME: guaranteed time-to-first-token of the 5 fastest LLM APIs (LLMPerf; shipped data)[/]")
    _print_psdme(pres)
    _out.print("\n[bold]FAQ: accuracy over 1,351 MMLU-Pro math questions from 5% of them (SIMULATED answers from the "
               "paper's factors)[/]")
    _print_faq(fres)
    _out.print("\n[bold]QuickScope: certified-hard DyVal templates of a SIMULATED model (3,000 calls)[/]")
    _out.print(qres.summary(), highlight=False)
    _out.print(f"\nwrote {out / 'results.json'}\nreport: {(out / 'report.html').resolve()}")


@app.command()
@_guard
def datasets(
    path: Optional[str] = typer.Option(None, "--path", help="Print only the file path of this data set."),
) -> None:
    """List the data sets shipped inside the package (or print one's path)."""
    from . import datasets as ds

    if path is not None:
        typer.echo(ds.path(path))
        return
    t = Table(title="Shipped data sets", title_justify="left")
    for col in ("name", "description", "path"):
        t.add_column(col)
    for name, (_, desc) in ds.SHIPPED.items():
        t.add_row(name, desc, ds.path(name))
    _out.print(t)


def _mount_runs() -> None:
    from .models.cli_runs import runs_app

    app.add_typer(runs_app, name="runs", help="Inspect model-query journals: list, show, export.")


_mount_runs()


def main() -> None:
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
