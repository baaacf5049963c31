"""The one error guard shared by every Typer command of the ``assay`` CLI."""

from __future__ import annotations

import functools
import sys
from typing import Any, Callable

import typer

from .errors import AssayError

__all__ = ["guard", "masked_console"]


class _MaskingStream:
    """A text stream that masks secrets (the model's key, URL credentials) in everything written through it."""

    def __init__(self, stream) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        from .models.journal import mask_secrets

        return self._stream.write(mask_secrets(text))

    def flush(self) -> None:
        self._stream.flush()

    def isatty(self) -> bool:
        return bool(getattr(self._stream, "isatty", lambda: False)())

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


class _StdoutProxy:
    """Resolves sys.stdout at write time (tests replace it), masking what passes."""

    def write(self, text: str) -> int:
        return _MaskingStream(sys.stdout).write(text)

    def flush(self) -> None:
        sys.stdout.flush()

    def isatty(self) -> bool:
        return bool(getattr(sys.stdout, "isatty", lambda: False)())


def masked_console(**kwargs):
    """The CLI's console: rich output on stdout, with secrets masked."""
    from rich.console import Console

    return Console(file=_StdoutProxy(), **kwargs)


def guard(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn assay's deliberate errors into one message on stderr and the documented exit code."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except AssayError as exc:
            from .models.journal import mask_secrets

            # plain write: no wrapping, no markup interpretation of the message; never a secret
            sys.stderr.write(f"error: {mask_secrets(str(exc))}\n")
            raise typer.Exit(code=exc.exit_code) from None

    return wrapper
