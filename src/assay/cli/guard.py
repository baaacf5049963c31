"""The one error guard shared by every Typer command of the ``assay`` CLI."""

from __future__ import annotations

import functools
import sys
from typing import Any, Callable

import typer

from ..errors import AssayError

__all__ = ["guard", "masked_console", "cli_words"]

# the library's error messages speak Python (parameter names); the CLI says the same in its own words
_COLUMN_FLAGS = {"loss_human": "--human-col", "loss_judge": "--judge-col"}
_PARAM_FLAGS = {"on_missing='drop-items'": "--drop-incomplete", "run_id=None": "no --run-id",
                "give order=[...] or order_by=COLUMN": "give --order-by COLUMN",
                "calibrator": "--calibrator-tau", "id_col": "--id-col", "prompt_col": "--prompt-col",
                "reference_col": "--reference-col"}


#: library parameters that the CLI takes under a flag of the same name, when a message gives them a number
_NUMERIC_FLAGS = {n: "--" + n.replace("_", "-") for n in (
    "weight_decay", "k", "budget", "until_width", "min_queries", "n_boot", "reps", "score_fraction", "risk_target",
    "batch", "top", "n0", "seed", "concurrency", "timeout", "max_retries", "rpm")}
_NUMERIC_FLAGS.update({"temperature": "--temperature", "calibrator": "--calibrator-tau"})


def cli_words(message: str) -> str:
    """Translate a library error message into CLI terms: ``columns={'loss_judge': 'YOUR_COLUMN'}`` ->
    ``--judge-col YOUR_COLUMN``, ``method='r-eval'`` -> ``--method r-eval``, ``on_missing='drop-items'`` ->
    ``--drop-incomplete``, ``budget=`` -> ``--budget``."""
    import re

    def columns(m: re.Match) -> str:
        pairs = re.findall(r"'([^']+)':\s*'YOUR_COLUMN'", m.group(0))
        return " ".join(f"{_COLUMN_FLAGS.get(c, '--' + c.replace('_', '-') + '-col')} YOUR_COLUMN" for c in pairs)

    out = re.sub(r"columns=\{[^}]*\}", columns, message)
    for py, flag in _PARAM_FLAGS.items():
        if "=" in py or "None" in py:
            out = out.replace(py, flag)
    out = re.sub(r"\b(calibrator|id_col|prompt_col|reference_col)=(?:'([^']*)'|([\w.-]+))?",
                 lambda m: _PARAM_FLAGS[m.group(1)] + (f" {m.group(2) or m.group(3)}" if (m.group(2) or m.group(3)) else ""),
                 out)
    out = re.sub(r"\b(%s)=(-?[0-9][0-9.eE+-]*)" % "|".join(_NUMERIC_FLAGS),
                 lambda m: f"{_NUMERIC_FLAGS[m.group(1)]} {m.group(2)}", out)
    out = re.sub(r"\b(until_width|min_queries)\b(?!=)", lambda m: "--" + m.group(1).replace("_", "-"), out)
    out = re.sub(r"\b([a-z][a-z_]*)='([^']*)'", lambda m: f"--{m.group(1).replace('_', '-')} {m.group(2)}", out)
    out = re.sub(r"\b([a-z][a-z_]*)=(?=[\s,.;)]|$)", lambda m: f"--{m.group(1).replace('_', '-')}", out)
    return out


class _MaskingStream:
    """A text stream that masks secrets (the model's key, URL credentials) in everything written through it."""

    def __init__(self, stream) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        from ..models.secrets import mask_secrets

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
        import warnings

        from ..models.secrets import mask_secrets

        # Python warnings (a file path and line, advice in Python's terms) never reach a CLI user raw: assay's own
        # are printed once each as "warning: ..." in the CLI's words; third-party numerical chatter is dropped
        # (every number a command prints carries its own notes)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                return fn(*args, **kwargs)
            except AssayError as exc:
                # plain write: no wrapping, no markup interpretation of the message; never a secret
                sys.stderr.write(f"error: {mask_secrets(cli_words(str(exc)))}\n")
                raise typer.Exit(code=exc.exit_code) from None
            finally:
                seen: set[str] = set()
                for w in caught:
                    # assay's own advice is a UserWarning raised from its code; numpy's RuntimeWarnings are not shown
                    if not (issubclass(w.category, UserWarning) and _from_assay(w.filename)):
                        continue
                    text = mask_secrets(cli_words(str(w.message)))
                    if text not in seen:
                        seen.add(text)
                        sys.stderr.write(f"warning: {text}\n")

    return wrapper


def _from_assay(filename: str) -> bool:
    from pathlib import Path

    try:
        return Path(filename).resolve().is_relative_to(Path(__file__).resolve().parents[1])
    except (OSError, ValueError):
        return False
