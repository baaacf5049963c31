"""``assay psdme``: KPI distribution bands for pre-selected configurations (PS-DME)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from ..errors import AssayInputError
from ._common import app, emit as _emit, guard as _guard, out as _out


def _fmt_kpi(v: float) -> str:
    return "inf (none)" if v == float("inf") else f"{v:.4g}"


def _print_psdme(result) -> None:
    info = result.info
    p = result.params
    kpi = p.get("kpi", "kpi")
    _out.print(f"PS-DME on {kpi}: method {info['method_used']} ({p['band']} bands), {info['selected_count']} of "
               f"{info['K']} configurations selected, delta = {result.level['delta']:g}, seed = {result.seed}")
    t = Table()
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
        _out.print(f"best guaranteed {kpi} at reliability {b['reliability']:g}: "
                   + (f"{b['best_kpi']:.4g} ({cfg})" if cfg else "none (no band reaches that level)"))
    if info.get("method_reason"):
        _out.print(f"method: {info['method_reason']}", highlight=False)
    for w in result.warnings:
        _out.print(f"note: {w}", highlight=False)
    _out.print(f"Guarantee: {result.level['meaning']}.", highlight=False)


@app.command()
@_guard
def psdme(
    kpi_file: Path = typer.Argument(..., help="Long table: one row per observation, a configuration column and a KPI column."),
    config_col: str = typer.Option("config", "--config-col", help="Column naming the configuration."),
    kpi_col: str = typer.Option("kpi", "--kpi-col", help="Column with the KPI (lower is better)."),
    select: str = typer.Option("all", "--select", help="all, top:K (K smallest means) or below:VALUE."),
    delta: float = typer.Option(0.1, "--delta", "--alpha", help="Error level: the paper's delta, the FCR of the selected bands (family-wise error of all bands for bonferroni); --alpha is an alias."),
    method: str = typer.Option("ps-dme", "--method", help="ps-dme, ss-dme, bonferroni, naive or auto."),
    band: str = typer.Option("dkw", "--band", help="dkw or berk-jones."),
    calibrator_tau: Optional[float] = typer.Option(None, "--calibrator-tau", help="PS-DME's power calibrator f(p) = (1 - tau) p^-tau, tau in (0, 1), fixed in advance (default: optimal for |S| of top:K/all; for below:VALUE, optimal for --max-selected)."),
    max_selected: Optional[int] = typer.Option(None, "--max-selected", help="below:VALUE: the largest |S| you plan for, declared before the data (default K); fixes the calibrator."),
    split: float = typer.Option(0.5, "--split", help="SS-DME: fraction of each configuration's data used to select."),
    gamma: str = typer.Option("0.01,0.05,0.1", "--gamma", help="Failure probabilities for the guaranteed KPI."),
    failures: str = typer.Option("error", "--failures", help="error, or worst: +inf KPIs are failures worse than any value."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Seed (SS-DME split)."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON on stdout."),
    out: Optional[Path] = typer.Option(None, "-o", "--out", help="Also write the JSON result to this file."),
    report: Optional[Path] = typer.Option(None, "--report", help="Also write a self-contained HTML report."),
) -> None:
    """CDF bands and guaranteed KPIs for configurations pre-selected on the same data (PS-DME)."""
    from .. import data as d, psdme as ps

    try:
        gammas = [float(x) for x in gamma.split(",") if x.strip()]
    except ValueError:
        raise AssayInputError(f"--gamma must be comma-separated numbers in (0, 1), got {gamma!r}") from None
    table = d.read_table(kpi_file, text_columns=(config_col,))
    result = ps.bands(table, select=select, delta=delta, method=method, band=band,
                      calibrator="optimal" if calibrator_tau is None else calibrator_tau, split=split, gammas=gammas, seed=seed,
                      max_selected=max_selected,
                      columns={"config": config_col, "kpi": kpi_col}, failures=failures)
    _emit(result, as_json, out, report, lambda: _print_psdme(result))
