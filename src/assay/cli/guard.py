"""The one error guard shared by every Typer command of the ``assay`` CLI."""

from __future__ import annotations

import functools
import sys
from typing import Any, Callable

import typer

from ..errors import AssayError

__all__ = ["guard", "masked_console", "cli_words", "command_options"]

# The library's error messages speak Python (argument names); the command line says the same with the options of the
# command that is running, and never names an option that command does not have. The special forms below map a
# library phrase to an option; ``name=`` and ``name=value`` map to ``--name`` when the command has it. A phrase in
# "(from Python: ...)" holds arguments only Python has: it is said with the command's options when it has all of them,
# and left out otherwise.
_COLUMN_FLAGS = {"loss_human": "--human-col", "loss_judge": "--judge-col"}
_PHRASES = {"on_missing='drop-items'": "--drop-incomplete", "run_id=None": "--run-id",
            "give order=[...] or order_by=COLUMN": "--order-by", "bounds=(low, high)": "--bounds"}
_RENAMED = {"calibrator": "--calibrator-tau", "max_memory": "--max-memory", "log_scorer": "--log-scorer",
            "runs": "--run"}


def command_options(command: Any = None) -> dict[str, str] | None:
    """A command's options (each Python parameter name -> its long flag), or None when no command is given.

    ``command`` is the command's function (its parameters' ``typer.Option`` defaults name the flags) or a click
    command (its ``params``; typer ships its own copy of click, so parameters are recognised by their ``opts``, not
    by click's classes)."""
    import inspect

    if command is None:
        return None
    out: dict[str, str] = {}

    def add(name: str, decls) -> None:
        decls = [d for d in (decls or ()) if isinstance(d, str) and d.startswith("-")]
        if not decls:
            return
        longs = [d for d in decls if d.startswith("--")] or decls
        out[name] = longs[0]
        for d in decls:
            out.setdefault(d.lstrip("-").replace("-", "_"), longs[0])

    if hasattr(command, "params"):
        for p in command.params:
            if getattr(p, "param_type_name", None) == "option":
                add(p.name, getattr(p, "opts", ()))
        return out
    for name, p in inspect.signature(command).parameters.items():
        add(name, getattr(p.default, "param_decls", None))
    return out


def cli_words(message: str, options: dict[str, str] | None = None) -> str:
    """Translate a library error message into the command's terms (``options``: :func:`command_options`; None: every
    option assay's commands have, for a message said outside a command): ``columns={'loss_judge': 'YOUR_COLUMN'}`` ->
    ``--judge-col YOUR_COLUMN``, ``method='r-eval'`` -> ``--method r-eval``, ``budget=`` -> ``--budget``; an argument
    the command has no option for stays as Python says it."""
    import re

    flags = set(options.values()) if options is not None else None

    def has(flag: str) -> bool:
        return flags is None or flag in flags

    def flag_of(name: str) -> str | None:
        f = _RENAMED.get(name) or (options or {}).get(name) or "--" + name.replace("_", "-")
        return f if has(f) else None

    def columns(m: re.Match) -> str:
        pairs = re.findall(r"'([^']+)':\s*'YOUR_COLUMN'", m.group(0))
        said = [(_COLUMN_FLAGS.get(c, "--" + c.replace("_", "-") + "-col"), c) for c in pairs]
        if all(has(f) for f, _ in said):
            return " ".join(f"{f} YOUR_COLUMN" for f, _ in said)
        return m.group(0)

    def from_python(m: re.Match) -> str:
        names = re.findall(r"\b([a-z][a-z_]*)=", m.group(1))
        if names and all(flag_of(n) for n in names):
            return " (" + re.sub(r"\b([a-z][a-z_]*)=", lambda x: flag_of(x.group(1)), m.group(1)) + ")"
        return ""

    out = re.sub(r"\s*\(from Python: ([^)]*)\)", from_python, message)
    out = re.sub(r"columns=\{[^}]*\}", columns, out)
    for py, flag in _PHRASES.items():
        if has(flag):
            out = out.replace(py, {"--run-id": "no --run-id", "--order-by": "give --order-by COLUMN",
                                   "--bounds": "--bounds LOW HIGH"}.get(flag, flag))

    def named(m: re.Match) -> str:
        f = flag_of(m.group(1))
        if f is None:
            return m.group(0)
        value = m.group(2) if m.group(2) is not None else m.group(3)
        return f + (f" {value}" if value else "")

    out = re.sub(r"\b([a-z][a-z_]*)=(?:'([^']*)'|(-?[0-9][\w.+-]*)|(?=[\s,.;)/]|$))", named, out)
    out = re.sub(r"\b(until_width|min_queries)\b(?!=)", lambda m: flag_of(m.group(1)) or m.group(0), out)
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
                sys.stderr.write(f"error: {mask_secrets(cli_words(str(exc), command_options(fn)))}\n")
                raise typer.Exit(code=exc.exit_code) from None
            finally:
                seen: set[str] = set()
                for w in caught:
                    # assay's own advice is a UserWarning raised from its code; numpy's RuntimeWarnings are not shown
                    if not (issubclass(w.category, UserWarning) and _from_assay(w.filename)):
                        continue
                    text = mask_secrets(cli_words(str(w.message), command_options(fn)))
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
