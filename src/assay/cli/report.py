"""``assay report``: an HTML or Markdown report from saved results."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from ..errors import AssayInputError
from ._common import app, guard as _guard, out as _out


@app.command()
@_guard
def report(
    results: list[Path] = typer.Argument(..., help="Result JSON files (--out of any command, or assay demo's results.json), or the run id of an `assay eval` campaign."),
    out: Path = typer.Option(Path("report.html"), "-o", "--out", help="Output: .html (self-contained) or .md (Markdown for PRs)."),
    title: str = typer.Option("assay report", "--title", help="Page title."),
    journal: Optional[Path] = typer.Option(None, "--journal", help="With a campaign run id: its journal (default $ASSAY_JOURNAL or ~/.cache/assay/journal.sqlite)."),
) -> None:
    """Render result JSON files as one self-contained HTML page (inline SVG, no network) or Markdown; or rebuild an
    `assay eval` campaign's report offline from its run id."""
    from ..report import load_results, render_html, render_markdown

    if len(results) == 1 and (str(results[0]).startswith("eval-") and not results[0].exists()
                              or _is_campaign(results[0])):
        return _campaign_report(results[0], journal, out)
    loaded = []
    for path in results:
        if not path.exists():
            raise AssayInputError(f"{path}: no such file")
        try:
            obj = json.loads(path.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise AssayInputError(f"{path}: not JSON ({e})") from None
        try:
            got = load_results(obj)
        except AssayInputError as e:
            raise AssayInputError(f"{path}: {e}") from None
        for r in got:  # each section says the file it came from
            r.info["source_file"] = path.name
        loaded += got
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.suffix.lower() in (".md", ".markdown"):
        out.write_text(render_markdown(loaded))
    else:
        out.write_text(render_html(loaded, title=title))
    _out.print(f"{len(loaded)} result(s) -> {out}")


def _is_campaign(path: Path) -> bool:
    if not path.is_file() or path.suffix.lower() != ".json":
        return False
    with path.open("rb") as fh:
        return b'"kind": "assay-eval"' in fh.read(200)


def _campaign_report(which: Path, journal: Optional[Path], out: Path) -> None:
    from ..eval.campaign import CampaignResult, report_of_run
    from ..report.campaign import render_campaign_html, render_campaign_markdown

    if which.exists():
        res = CampaignResult.from_dict(json.loads(which.read_text()))
    else:
        res = report_of_run(str(which), journal)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_campaign_markdown(res) if out.suffix.lower() in (".md", ".markdown")
                   else render_campaign_html(res))
    _out.print(f"campaign {res.run_id} -> {out}")
