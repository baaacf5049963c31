"""The one error guard shared by every Typer command of the ``assay`` CLI."""

from __future__ import annotations

import functools
import sys
from typing import Any, Callable

import typer

from .errors import AssayError

__all__ = ["guard"]


def guard(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn assay's deliberate errors into one message on stderr and the documented exit code."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except AssayError as exc:
            # plain write: no wrapping, no markup interpretation of the message
            sys.stderr.write(f"error: {exc}\n")
            raise typer.Exit(code=exc.exit_code) from None

    return wrapper
