"""``assay report``: an HTML or Markdown report from saved results."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from ..errors import AssayInputError
from ._common import app, guard as _guard, out as _out


@app.command()
@_guard
def report(
    results: list[Path] = typer.Argument(..., help="Result JSON files (--out of any command, or assay demo's results.json)."),
    out: Path = typer.Option(Path("report.html"), "-o", "--out", help="Output: .html (self-contained) or .md (Markdown for PRs)."),
    title: str = typer.Option("assay report", "--title", help="Page title."),
) -> None:
    """Render result JSON files as one self-contained HTML page (inline SVG, no network) or Markdown."""
    from ..report import load_results, render_html, render_markdown

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
