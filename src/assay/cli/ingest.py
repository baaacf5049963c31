"""``assay ingest``: lm-eval / inspect / HELM logs into assay's tidy tables."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import typer

from ..errors import AssayInputError
from ._common import app, guard as _guard, out as _out


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
    """Read evaluation logs you already have into assay's tidy table (model, task, variant, item, epoch, metric, score)."""
    from ..data.logs import read_any

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
