"""``assay runs list | show RUN | export RUN``: inspect the request journal.

Mounted by ``assay.cli`` as ``app.add_typer(runs_app, name="runs")``. Thin: open the journal, print.
Errors print one ``error: ...`` line on stderr and exit with the error's code (2: bad input).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Optional

import typer
from rich.table import Table
from rich.text import Text

from ..errors import AssayInputError
from .guard import guard as _guard, masked_console
from ..models.journal import Journal, default_path
from ..models.secrets import mask_secrets

__all__ = ["runs_app"]

runs_app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Inspect the request journal: list runs, show one, export its records.",
)

_out = masked_console(soft_wrap=False, width=200)

_JOURNAL_HELP = "Journal file (default: $ASSAY_JOURNAL, else ~/.cache/assay/journal.sqlite)."
_FORMATS = ("parquet", "csv", "jsonl")
_SUFFIX_FORMAT = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl"}




_BANK_HELP = ("The questions the run asked (id, prompt, reference): each answer gets its id, score and extracted "
              "answer (default: the bank file the run recorded, when it still exists).")
_SCORER_HELP = "Score with this scorer (default: the one the run was scored with, else the bank's scorer column, else exact)."


def _scored(j, run: str, bank: Optional[Path], scorer: Optional[str]):
    """The run's records with each answer's id, score, extracted answer and outcome, and how they were scored."""
    from ..data.sources import score_records

    return score_records(j, run, j.records(run), bank=bank, scorer=scorer)


def _open(journal: Optional[Path], must_exist: bool = True) -> Journal | None:
    path = Path(journal).expanduser() if journal is not None else default_path()
    if not path.exists():
        if must_exist:
            raise AssayInputError(f"no journal at {path}; pass --journal PATH or set ASSAY_JOURNAL")
        return None
    return Journal(path)


def _cell(v: Any, width: int | None = None) -> Text:
    s = "" if v is None or (isinstance(v, float) and v != v) else str(v)
    try:
        import pandas as pd

        if v is pd.NA:
            s = ""
    except Exception:  # pragma: no cover
        pass
    s = s.replace("\n", " ")
    if width is not None and len(s) > width:
        s = s[: width - 1] + "…"
    return Text(s)


def _short_time(t: str | None) -> str:
    # ISO UTC with microseconds -> "YYYY-mm-dd HH:MM:SS"
    return "" if not t else t[:19].replace("T", " ")


@runs_app.command("list")
@_guard
def list_runs(
    journal: Optional[Path] = typer.Option(None, "--journal", help=_JOURNAL_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print the runs as a JSON list on stdout."),
) -> None:
    """List the runs in the journal, oldest first."""
    j = _open(journal, must_exist=False)
    runs = [] if j is None else j.runs()
    path = default_path() if journal is None else Path(journal).expanduser()
    if j is not None:
        j.close()
    if as_json:
        sys.stdout.write(mask_secrets(json.dumps(runs, indent=2, ensure_ascii=False)) + "\n")
        return
    if not runs:
        _out.print(Text(f"no runs in {path}"))
        return
    t = Table(title=f"Runs in {path}", title_justify="left")
    for col, just in (("run id", "left"), ("created (UTC)", "left"), ("updated (UTC)", "left"), ("status", "left"),
                      ("records", "right"), ("errors", "right"), ("tokens", "right")):
        t.add_column(col, justify=just)
    for r in runs:
        t.add_row(_cell(r["run_id"]), _cell(_short_time(r["created"])), _cell(_short_time(r["updated"])),
                  _cell(r["status"]), str(r["n_records"]), str(r["n_errors"]), f"{r['tokens']:,}")
    _out.print(t)


@runs_app.command("show")
@_guard
def show(
    run: str = typer.Argument(..., help="Run id (see `assay runs list`)."),
    rows: int = typer.Option(10, "--rows", help="How many records to show (0: all)."),
    journal: Optional[Path] = typer.Option(None, "--journal", help=_JOURNAL_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print {\"run\": {...}, \"records\": [...]} as JSON on stdout."),
    bank: Optional[Path] = typer.Option(None, "--bank", help=_BANK_HELP),
    scorer: Optional[str] = typer.Option(None, "--scorer", help=_SCORER_HELP),
) -> None:
    """Summary of one run and its first records, each with its question id, score, extracted answer and outcome."""
    if rows < 0:
        raise AssayInputError(f"--rows must be >= 0 (0: all), got {rows}")
    j = _open(journal)
    try:
        summary = j.run(run)
        df, scored = _scored(j, run, bank, scorer)
    finally:
        j.close()
    head = df if rows == 0 else df.head(rows)
    lat = df["latency_s"].dropna()
    summary = dict(summary)
    summary["models"] = sorted({str(m) for m in df["model"].dropna()})
    summary["latency_s_median"] = float(lat.median()) if len(lat) else None
    summary["scoring"] = scored
    if as_json:
        recs = json.loads(head.drop(columns=["request", "response"]).to_json(orient="records", force_ascii=False))
        sys.stdout.write(mask_secrets(json.dumps({"run": summary, "records": recs}, indent=2, ensure_ascii=False)) + "\n")
        return
    s = Table(title=f"Run {run}", title_justify="left", show_header=False)
    s.add_column("field")
    s.add_column("value")
    for name, value in (("status", summary["status"]), ("created (UTC)", _short_time(summary["created"])),
                        ("updated (UTC)", _short_time(summary["updated"])), ("records", summary["n_records"]),
                        ("errors", summary["n_errors"]),
                        ("tokens", f"{summary['tokens']:,} ({summary['prompt_tokens']:,} prompt + "
                                   f"{summary['completion_tokens']:,} completion)"),
                        ("models", ", ".join(summary["models"]) or "-"),
                        ("requests sent", summary.get("requests_sent", 0)),
                        ("paid, thrown away", f"{summary.get('thrown_away_timeouts', 0)} timed out (the server may have "
                                              f"completed and billed them), {summary.get('thrown_away_duplicates', 0)} "
                                              "duplicate answers"),
                        ("median latency", "-" if summary["latency_s_median"] is None
                         else f"{summary['latency_s_median']:.3f} s"),
                        ("scoring", scored),
                        ("meta", json.dumps(summary["meta"], ensure_ascii=False, sort_keys=True))):
        s.add_row(_cell(name), _cell(value, 150))
    _out.print(s)
    if head.empty:
        _out.print(Text("no records yet"))
        return
    t = Table(title=f"First {len(head)} of {len(df)} records" if len(head) < len(df) else f"All {len(df)} records",
              title_justify="left")
    for col, just in (("id", "left"), ("prompt", "left"), ("text", "left"), ("extracted", "left"), ("score", "right"),
                      ("outcome", "left"), ("finish", "left"), ("latency s", "right"), ("tokens", "right"),
                      ("error", "left")):
        t.add_column(col, justify=just)
    for r in head.itertuples(index=False):
        t.add_row(_cell(r.id, 12), _cell(r.prompt, 40), _cell(r.text, 40), _cell(r.extracted, 16),
                  _cell("" if r.score is None or r.score != r.score else f"{float(r.score):g}"), _cell(r.outcome, 12),
                  _cell(r.finish_reason, 10), _cell("" if r.latency_s != r.latency_s else f"{r.latency_s:.3f}"),
                  _cell(r.total_tokens), _cell(r.error, 40))
    _out.print(t)


@runs_app.command("export")
@_guard
def export(
    run: list[str] = typer.Argument(..., help="Run id(s) (see `assay runs list`); several runs go into one table, told apart by run_id (e.g. serving configurations for `assay psdme --config-col run_id --kpi-col ttft_s`)."),
    out: Path = typer.Option(..., "-o", "--out", help="Output file."),
    format: Optional[str] = typer.Option(None, "--format", help="parquet, csv or jsonl (default: from the file name, else parquet)."),
    journal: Optional[Path] = typer.Option(None, "--journal", help=_JOURNAL_HELP),
    bank: Optional[Path] = typer.Option(None, "--bank", help=_BANK_HELP),
    scorer: Optional[str] = typer.Option(None, "--scorer", help=_SCORER_HELP),
) -> None:
    """Export runs' records (one row per request: its question id, text, extracted answer, score, outcome,
    latency_s, ttft_s, tokens) to Parquet, CSV or JSONL."""
    fmt = (format or _SUFFIX_FORMAT.get(out.suffix.lower(), "parquet")).lower()
    if fmt not in _FORMATS:
        raise AssayInputError(f"unknown --format {format!r}; use one of {', '.join(_FORMATS)}")
    import pandas as pd

    j = _open(journal)
    try:
        frames = [_scored(j, r, bank, scorer)[0] for r in run]
    finally:
        j.close()
    df = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    for col in df.columns:  # journals written before URL redaction may hold credentials in stored URLs
        if df[col].dtype == object:
            df[col] = df[col].map(lambda v: mask_secrets(v) if isinstance(v, str) else v)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        if fmt == "parquet":
            df.to_parquet(out, index=False)
        elif fmt == "csv":
            df.to_csv(out, index=False)
        else:
            df.to_json(out, orient="records", lines=True, force_ascii=False)
    except OSError as exc:
        raise AssayInputError(f"cannot write {out}: {exc}") from None
    _out.print(Text(f"exported {len(df)} records of run{'s' if len(run) > 1 else ''} {', '.join(run)} to {out} ({fmt})"))
