"""Errors that assay raises at its public boundary.

Two kinds, each with its own CLI exit code (see DESIGN.md):

* :class:`AssayInputError` (exit 2): the data or the arguments are wrong. The message names the
  offending column / row / value and says what would be accepted.
* :class:`AssayBackendError` (exit 3): a model endpoint failed (timeout, garbage, refusal).

Both derive from :class:`AssayError`, so ``except AssayError`` catches everything assay raises on
purpose. They also derive from ``ValueError`` / ``RuntimeError`` so that generic callers that
already handle those keep working.
"""

from __future__ import annotations

__all__ = ["AssayError", "AssayInputError", "AssayBackendError", "GateFailed"]


class AssayError(Exception):
    """Base class of every error assay raises on purpose."""

    exit_code = 1


class AssayInputError(AssayError, ValueError):
    """Bad data or bad arguments; the message says what is wrong and what would be accepted."""

    exit_code = 2


class AssayBackendError(AssayError, RuntimeError):
    """A model backend (endpoint, callable) failed in a way assay cannot recover from."""

    exit_code = 3


class GateFailed(AssayError):
    """A gate the user asked for (e.g. ``--require-certified``) did not pass (exit 1)."""

    exit_code = 1


def describe_rows(index, limit: int = 5) -> str:
    """Render a short list of row labels for an error message ("rows 3, 7, 9 and 12 more")."""
    labels = [str(i) for i in list(index)]
    if not labels:
        return "no rows"
    head = ", ".join(labels[:limit])
    more = len(labels) - limit
    word = "row" if len(labels) == 1 else "rows"
    return f"{word} {head}" + (f" and {more} more" if more > 0 else "") + " (0-based)"
