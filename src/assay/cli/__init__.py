"""The ``assay`` command: one module per command, each thin (parse arguments, call the library, print).

Exit codes: 0 ok, 1 a requested gate failed, 2 bad input, 3 model backend error. ``--json`` prints the result's
``to_json()`` on stdout and nothing else there; progress goes to stderr.

``assay --version`` answers before Typer, numpy or pandas are imported; the app and its commands load on first
use (``from assay.cli import app`` works as before).
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["app", "main"]


def main() -> None:
    """Console entry point."""
    if sys.argv[1:] in (["--version"], ["-V"]):
        from .._version import __version__

        sys.stdout.write(f"assay {__version__}\n")
        return
    from .commands import app

    app()


def __getattr__(name: str) -> Any:
    if name == "app":
        from .commands import app

        return app
    raise AttributeError(f"module 'assay.cli' has no attribute {name!r}")
