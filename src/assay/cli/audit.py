"""``assay audit``: check a few of a run's answers by hand, and get an accuracy that holds when the grader misreads."""

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
def audit(
    run: str = typer.Argument(..., help="The run: a scored table (CSV/Parquet/JSONL with id, response, reference, score) or a journal run id (with --bank)."),
    bank: Optional[Path] = typer.Option(None, "--bank", help="The questions (id, prompt, reference, optional scorer): a journal run's answers are matched to them by prompt; a table's references and prompts come from it."),
    scorer: Optional[str] = typer.Option(None, "--scorer", help="Score the run with this scorer (default: a table's score column; a journal run: the scorer it was scored with, else the bank's scorer column, else exact)."),
    journal: Optional[Path] = typer.Option(None, "--journal", help="SQLite journal of a journal run (default $ASSAY_JOURNAL or ~/.cache/assay/journal.sqlite)."),
    n: Optional[int] = typer.Option(None, "--n", help="How many answers to draw for a person to check."),
    seed: int = typer.Option(0, "--seed", help="Seed of the draws."),
    out: Optional[Path] = typer.Option(None, "-o", "--out", help="Write the sheet to check (.csv, .parquet or .jsonl) and its plan beside it (<name>.plan.json); never overwritten."),
    labels: Optional[Path] = typer.Option(None, "--labels", help="Read a checked sheet back (human: 1 right, 0 wrong, blank: not checked; the rows before the first blank count)."),
    delta: float = typer.Option(0.05, "--delta", help="Error level of the interval (0.05: 95%)."),
    floor: float = typer.Option(0.5, "--floor", help="Share of every draw kept uniform: each answer left keeps probability at least floor / answers left."),
    weight: float = typer.Option(2.0, "--weight", help="How much more likely a flagged answer (readers disagree, several values, cut off, no answer) is drawn."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON summary on stdout."),
) -> None:
    """Draw answers of a run for a person to check (--n, -o), then read the checks back (--labels): the run's true
    accuracy with a finite-sample interval, and the grader's false-positive and false-negative rates. Both steps name
    the grader audited (and where it came from) and how the run's answers ended."""
    from .. import audit as a
    from ..data.audit import plan_path, read_run

    if (labels is None) == (n is None):
        raise AssayInputError("give --n N -o SHEET to draw answers to check, or --labels SHEET to read the checks back")
    table = read_run(run if not Path(run).exists() else Path(run), bank=bank, scorer=scorer, journal=journal)
    if labels is None:
        if out is None:
            raise AssayInputError("give -o SHEET: where to write the answers to check")
        sheet = a.sample(table, n, seed=seed, floor=floor, weight=weight, out=out)
        plan, about = sheet.attrs["plan"], sheet.attrs["run"]
        summary = {"sheet": str(out), "plan": str(plan_path(out)), "drawn": int(len(sheet)), "N": plan["N"],
                   "grader_accuracy": plan["grader_accuracy"], "flagged": plan["signals"], **about}
        if as_json:
            sys.stdout.write(json.dumps(summary, indent=2) + "\n")
            return
        again = "".join(f" {flag} {v}" for flag, v in (("--bank", bank), ("--scorer", scorer), ("--journal", journal))
                        if v is not None)
        sig = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in plan["signals"].items() if k != "flagged")
        _out.print(f"{len(sheet)} of {plan['N']} answers drawn to {out} (plan: {plan_path(out)}); "
                   f"{plan['signals']['flagged']} answers flagged ({sig}) are drawn {weight:g}x as often.\n"
                   f"grader audited: {about['grader']['said']}; {about['outcomes']['said']}", highlight=False)
        for w in about["warnings"]:
            _out.print(f"note: {w}", highlight=False)
        _out.print("Fill the 'human' column in order (1 right, 0 wrong); stop at any row; then run "
                   f"assay audit {run}{again} --labels {out}", highlight=False)
        return
    res = a.evaluate(table, labels, delta=delta)
    if as_json:
        sys.stdout.write(res.to_json() + "\n")
        return
    _out.print(res.summary(), highlight=False)
    for w in res.warnings:
        _out.print(f"note: {w}", highlight=False)
