"""``assay siren``: selection-aware intervals for tune-then-deploy (SIREN)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from ._common import app, emit as _emit, fmt_budget as _fmt_budget, guard as _guard, out as _out


def _print_siren(result) -> None:
    p = result.params
    level = 1 - result.level["alpha"]
    _out.print(f"SIREN: M = {result.n} items, R = {p['reps']}, selector {p['selector']}, temperature = {p['temperature']:g}, "
                    f"seed = {result.seed}")
    t = Table()
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
            c.add_row(str(r.contrast), f"{r.estimate:+.4f}", f"[{r.ci_low:+.4f}, {r.ci_high:+.4f}]",
                      str(r.verdict_pointwise), f"[{r.simultaneous_low:+.4f}, {r.simultaneous_high:+.4f}]",
                      str(r.verdict_simultaneous))
        _out.print(c)
        _out.print("Scanning these contrasts for a finding? Read 'all at once' (the simultaneous interval holds for every "
                   "contrast together); 'one contrast' is valid only for a single contrast chosen before looking.",
                   highlight=False)
    for w in result.info.get("warnings", []):
        _out.print(f"warning: {w}")
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
    temperature: float = typer.Option(0.1, "--temperature", help="Softmax temperature on the score scale (0.1: soft argmax; 1.0: near-uniform)."),
    boot: int = typer.Option(2000, "--boot", help="Bootstrap draws B."),
    alpha: float = typer.Option(0.05, "--delta", "--alpha", help="Error level: miscoverage of each interval and of the band (0.05 -> 95%; the paper's alpha, --alpha is an alias)."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Random seed (recorded; drawn when absent)."),
    contrast: list[str] = typer.Option([], "--contrast", help="'A@1.5M - A@0', or tuned-vs-default, budget-gains, pairwise. Repeatable."),
    band: str = typer.Option("studentized", "--band", help="studentized or raw simultaneous band."),
    engine: str = typer.Option("exact", "--engine", help="Bootstrap draws: exact (Gaussian law of the multipliers) or multipliers (literal B x M)."),
    split_weights: str = typer.Option("eval_size", "--split-weights", help="eval_size or uniform."),
    instability_threshold: float = typer.Option(0.10, "--instability-threshold", help="pi_win threshold of the adaptive selector."),
    item_bootstrap: int = typer.Option(0, "--item-bootstrap", help="Also run the nonparametric item bootstrap with N replicates."),
    drop_incomplete: bool = typer.Option(False, "--drop-incomplete", help="Drop items with missing scores from every cell instead of failing."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON on stdout."),
    out: Optional[Path] = typer.Option(None, "-o", "--out", help="Also write the JSON result to this file."),
    report: Optional[Path] = typer.Option(None, "--report", help="Also write a self-contained HTML report."),
) -> None:
    """Selection-aware intervals for tuned systems (SIREN) over a (system x budget) grid."""
    from .. import data, siren as siren_mod

    table = data.read_table(scores, format=format, text_columns=(system_col, artifact_col, item_col))
    result = siren_mod.evaluate(
        table,
        columns={"system": system_col, "budget": budget_col, "artifact": artifact_col, "item": item_col, "score": score_col},
        reps=reps, score_fraction=score_fraction, selector=selector, temperature=temperature, n_boot=boot, alpha=alpha,
        seed=seed, contrasts=contrast, band=band, engine=engine, split_weights=split_weights,
        instability_threshold=instability_threshold, item_bootstrap_draws=item_bootstrap,
        on_missing="drop-items" if drop_incomplete else "error",
    )
    _emit(result, as_json, out, report, lambda: _print_siren(result))
