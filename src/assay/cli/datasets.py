"""``assay datasets``: the data sets shipped inside the package."""

from __future__ import annotations

from typing import Optional

import typer
from rich.table import Table

from ._common import app, guard as _guard, out as _out


@app.command()
@_guard
def datasets(
    path: Optional[str] = typer.Option(None, "--path", help="Print only the file path of this data set."),
) -> None:
    """List the data sets shipped inside the package (or print one's path)."""
    from .. import datasets as ds

    if path is not None:
        typer.echo(ds.path(path))
        return
    t = Table(title="Shipped data sets", title_justify="left")
    for col in ("name", "description", "path"):
        t.add_column(col)
    for name, (_, desc) in ds.SHIPPED.items():
        t.add_row(name, desc, ds.path(name))
    _out.print(t)
