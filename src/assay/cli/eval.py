"""``assay eval``: one campaign file, every method, one run id, one journal, one report."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from ..errors import AssayInputError
from ._common import app, guard as _guard, out as _out


def _print_plan(p) -> None:
    _out.print(f"plan of campaign {p.campaign} (fingerprint {p.fingerprint}): bank of {p.bank_size} questions"
               + (f", shared uniform sample of {p.sample_size}" if p.sample_size else ""), highlight=False)
    t = Table()
    for col in ("model", "section", "requests (at most)", "prompt tokens (est.)", "completion tokens (at most)",
                "dollars (at most)", "note"):
        t.add_column(col, justify="left" if col in ("model", "section", "note") else "right")
    for r in p.rows:
        t.add_row(r.model, r.section, str(r.requests), str(r.prompt_tokens), str(r.completion_tokens),
                  f"{r.dollars:.4f}", r.note)
    for model, tot in p.totals().items():
        t.add_row(model, "total", str(tot["requests"]), str(tot["prompt_tokens"]), str(tot["completion_tokens"]),
                  f"{tot['dollars']:.4f}", "")
    _out.print(t)
    if p.judge_requests:
        _out.print(f"judge: {p.judge_requests} grading requests", highlight=False)
    if p.sample_items:
        _out.print(f"the shared sample's items (human labels are for these; all of them with --json): "
                   f"{', '.join(p.sample_items[:8])}{', ...' if len(p.sample_items) > 8 else ''}", highlight=False)
    for s, why in p.skipped.items():
        _out.print(f"skipped {s}: {why}", highlight=False)
    for n in p.notes:
        _out.print(f"note: {n}", highlight=False)
    _out.print("nothing has been asked; run without --plan to start", highlight=False)


#: with no terminal, each running (section, model) prints a line at least this often (seconds), whether or not its
#: section reported progress in between: a slow model never leaves a log silent for minutes
HEARTBEAT_S = 30.0


class _Display:
    """One live display of the campaign (a rich table on a terminal) or plain lines (CI, pipes): per section and
    model, requests or rounds done of the total, the interval width when there is one, and the status.

    Plain lines: a line per (section, model) when it starts, finishes or has news (a note), at most every 5 s in
    between; and a heartbeat thread prints every running row that has been quiet for ``heartbeat`` seconds (done /
    budget, the section's current figure, elapsed), so there is a line at least every ``heartbeat`` seconds."""

    def __init__(self, interactive: bool, heartbeat: float = HEARTBEAT_S) -> None:
        import threading

        self.rows: dict[tuple[str, str], dict] = {}
        self.live = None
        self.last: dict[tuple[str, str], float] = {}
        self.t0 = time.monotonic()
        self.heartbeat = float(heartbeat)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None
        if interactive:
            from rich.live import Live

            from ..progress import stderr_console

            self.live = Live(self._table(), console=stderr_console(), refresh_per_second=4, transient=False)

    def __enter__(self) -> "_Display":
        import threading

        if self.live is not None:
            self.live.__enter__()
        else:
            self._beat = threading.Thread(target=self._heartbeat, name="assay-eval-heartbeat", daemon=True)
            self._beat.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._beat is not None:
            self._beat.join(timeout=5)
        if self.live is not None:
            self.live.update(self._table())
            self.live.__exit__(*exc)

    def _table(self) -> Table:
        t = Table(title="assay eval", title_justify="left")
        for col in ("section", "model", "done / budget", "width", "status"):
            t.add_column(col)
        for (section, subject), r in self.rows.items():
            total = "" if r["total"] is None else f" / {r['total']}"
            width = "" if r["width"] is None else f"{r['width']:.3f}"
            t.add_row(section, subject, f"{r['done']}{total}", width, r["status"] + (f": {r['note']}" if r["note"] else ""))
        return t

    def _line(self, key: tuple[str, str], row: dict, status: str, now: float) -> None:
        total = "" if row["total"] is None else f"/{row['total']}"
        width = "" if row["width"] is None else f", width {row['width']:.3f}"
        note = f" ({row['note']})" if row["note"] else ""
        self.last[key] = now
        print(f"eval {key[0]} {key[1]}: {row['done']}{total}{width} {status}{note} [{now - self.t0:.0f} s]",
              file=sys.stderr, flush=True)

    def _heartbeat(self) -> None:
        tick = min(5.0, self.heartbeat / 2)
        while not self._stop.wait(tick):
            now = time.monotonic()
            with self._lock:
                for key, row in self.rows.items():
                    if row["status"] == "running" and now - self.last.get(key, 0.0) >= self.heartbeat:
                        self._line(key, row, "running", now)

    def __call__(self, e) -> None:
        key = (e.section, e.subject)
        with self._lock:
            row = self.rows.setdefault(key, {"done": 0, "total": None, "width": None, "status": "running", "note": ""})
            row.update(done=e.done or row["done"], total=e.total if e.total is not None else row["total"],
                       width=e.width if e.width is not None else row["width"], status=e.status,
                       note=e.note[:120] if e.note else row["note"])
            if self.live is not None:
                self.live.update(self._table())
                return
            now = time.monotonic()
            if e.status != "running" or now - self.last.get(key, 0.0) >= 5.0 or (e.note and e.note != row.get("said")):
                row["said"] = e.note
                self._line(key, row, e.status, now)


def _print_summary(res, folder: Path | None) -> None:
    t = Table(title=f"campaign {res.campaign['campaign']['name']} (run {res.run_id})", title_justify="left")
    for col in ("subject", "section", "statement", "level", "requests", "tokens", "model s"):
        t.add_column(col, justify="right" if col in ("requests", "tokens", "model s") else "left")
    for r in res.summary.itertuples(index=False):
        t.add_row(str(r.subject), r.section, r.statement, r.level, str(r.requests), str(r.tokens), f"{r.seconds:.1f}")
    _out.print(t)
    if folder is not None:
        _out.print(f"report: {folder / 'report.html'} (also report.md, report.json); rebuild it offline with "
                   f"`assay report {res.run_id}`", highlight=False)


@app.command("eval")
@_guard
def eval_(
    campaign: Optional[Path] = typer.Argument(None, help="The campaign file (TOML; see examples/campaign.toml)."),
    plan: bool = typer.Option(False, "--plan", help="Print what the campaign will ask and what it may cost, then stop: nothing is asked."),
    resume: Optional[str] = typer.Option(None, "--resume", help="Finish this run (its campaign is read from the journal); answers already paid for are read, not asked."),
    journal: Optional[Path] = typer.Option(None, "--journal", help="The journal (default: the campaign's journal, else $ASSAY_JOURNAL or ~/.cache/assay/journal.sqlite)."),
    out: Optional[Path] = typer.Option(None, "-o", "--out", help="Report folder (default: the campaign's out)."),
    backend: str = typer.Option("serial", "--backend", "--executor", help="serial, or ray: the per-model sections run in parallel on Ray, the same numbers (--executor is an alias, as in assay study)."),
    workers: Optional[int] = typer.Option(None, "--workers", help="With --backend ray: units in flight at once (default: one per (section, model), at most 8)."),
    address: Optional[str] = typer.Option(None, "--address", help="With --backend ray: an existing cluster ('auto' or ray://host:10001); default a local one."),
    as_json: bool = typer.Option(False, "--json", help="Print the result (or the plan) as JSON on stdout."),
) -> None:
    """Run a campaign: FAQ, QuickScope, the judge's risk certificate, KPI bands and SIREN on one or more models."""
    from ..eval import campaign as camp
    from ..eval.plan import plan as make_plan
    from ..eval.spec import load_campaign
    from ..models.secrets import mask_secrets
    from ..progress import interactive

    if (campaign is None) == (resume is None):
        raise AssayInputError("give a campaign file, or --resume RUN_ID (not both)")
    if backend not in ("serial", "ray"):
        raise AssayInputError(f"--backend must be serial or ray; got {backend!r}")
    c = load_campaign(campaign) if campaign is not None else camp.load_campaign_of_run(resume, journal)
    if plan:
        p = make_plan(c)
        if as_json:
            sys.stdout.write(json.dumps(p.to_dict(), indent=2) + "\n")
        else:
            _print_plan(p)
        return
    if resume is None:
        sys.stderr.write(f"campaign {c.name}: run id {camp.campaign_run_id(c)} (after an interruption: "
                         f"assay eval --resume {camp.campaign_run_id(c)})\n")
    with _Display(interactive()) as display:
        res = camp.run(c, journal=journal if journal is not None else c.journal, backend=backend, address=address,
                       workers=workers, progress=display)
    folder = camp.write_report(res, out or c.out)
    if as_json:
        sys.stdout.write(mask_secrets(json.dumps(res.to_dict(), indent=2, allow_nan=False)) + "\n")
        return
    _print_summary(res, folder)
