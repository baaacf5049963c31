"""Registers every command on the app, in the order ``assay --help`` lists them (one module per command)."""

from __future__ import annotations

import importlib

from ._common import app
from .runs import runs_app

#: the order of ``assay --help``: the five methods' neighbours together, then the tools
COMMANDS = ("eval", "siren", "autoeval", "psdme", "compare", "query", "audit", "judge", "ingest", "report", "study", "faq", "scope",
            "demo", "datasets")

for _name in COMMANDS:
    importlib.import_module(f".{_name}", __package__)

app.add_typer(runs_app, name="runs", help="Inspect model-query journals: list, show, export.")

__all__ = ["app", "COMMANDS"]
