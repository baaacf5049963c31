"""``assay autoeval``: risk certificates from few human and many judge labels (R-AutoEval+)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from .. import checks
from ..errors import AssayInputError
from ._common import app, emit as _emit, guard as _guard, out as _out


def _print_autoeval(result) -> None:
    p = result.params
    _out.print(f"{p['method']} ({p['betting']}): certify risk < {p['risk_target']:g} at delta = "
                    f"{result.level['delta']:g}, seed = {result.seed}")
    t = Table()
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
            _out.print(f"{sel['procedure']}: no candidate is certified at delta = {result.level['delta']:g}; "
                       "nothing can be deployed with the guarantee.")
        else:
            _out.print(f"{sel['procedure']}: certified {len(sel['certified'])} of {len(result.candidates)}; "
                       f"best = {sel['best']}")
    elif sel.get("note"):
        _out.print(f"note: {sel['note']}")
    _out.print(f"Guarantee: {result.level['meaning']}.", highlight=False)
    for w in result.warnings:
        _out.print(f"note: {w}")


@app.command()
@_guard
def autoeval(
    data: Path = typer.Argument(..., help="Long table: candidate, item, loss_human (empty = unlabelled), loss_judge."),
    risk_target: float = typer.Option(..., "--risk-target", help="Risk level to certify (the paper's alpha)."),
    alpha: float = typer.Option(0.1, "--delta", "--alpha",
                                help="Error level, the paper's delta: P(a model whose risk exceeds --risk-target is "
                                     "certified) <= this (family-wise with --select). --alpha is accepted as the same "
                                     "option for symmetry with the other commands; the paper's alpha is --risk-target."),
    method: str = typer.Option("r-autoeval+", "--method", help="r-eval, r-autoeval or r-autoeval+."),
    betting: str = typer.Option("wsr", "--betting", help="wsr or up (universal portfolio)."),
    reliance_levels: int = typer.Option(10, "--reliance-levels",
                                        help="S, the number of reliance factors rho = 0..1 of r-autoeval+ (>= 2)."),
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
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Also write the JSON result to this file."),
    report: Optional[Path] = typer.Option(None, "--report", help="Also write a self-contained HTML report."),
) -> None:
    """Certify risk < target with few human labels and many judge labels (R-AutoEval+)."""
    from .. import autoeval as ae, data as d
    from ..errors import GateFailed

    # the two renamed options are checked here so that a refusal names the option that was typed
    checks.level(alpha, "--alpha (--delta)")
    if reliance_levels < 2:
        raise AssayInputError(f"--reliance-levels must be at least 2 (it includes rho = 0 and 1), got {reliance_levels}")
    text = (candidate_col, item_col)
    table = d.read_table(data, text_columns=text)
    epoch_note = None
    if {"score_original", "score_human", "source"} <= set(table.columns) and human_col not in table.columns:
        # an inspect log: the scorer's original values are the judge labels, human score edits the human labels
        from ..data.logs import to_autoeval

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
    result = ae.certify(table, risk_target=risk_target, delta=alpha, method=method, betting=betting, factors=reliance_levels,
                        seed=seed, select=select, order_by=order_by, ascending=ascending, cost_col=cost_col,
                        interval=interval, shuffle=not no_shuffle, columns=columns)
    if epoch_note:
        result.info.setdefault("warnings", []).append(epoch_note)
    _emit(result, as_json, out, report, lambda: _print_autoeval(result))
    if require_certified and not result.certified:
        raise GateFailed("no candidate is certified (--require-certified)")
