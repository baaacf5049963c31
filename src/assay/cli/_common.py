"""What every ``assay`` command shares: the Typer app, the masked console, the error guard and ``emit``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable, Optional

import typer

from .._version import __version__
from .guard import guard, masked_console

__all__ = ["app", "out", "emit", "fmt_budget", "guard"]


def _usage_error_one_line(exc) -> None:
    """Command-line usage errors (a bad option value, a missing option) as one ``error:`` line, like every other
    refusal of assay (typer would draw a box of several lines)."""
    if exc.__class__.__name__ == "NoArgsIsHelpError":
        return
    ctx = getattr(exc, "ctx", None)
    hint = f" (see: {ctx.command_path} --help)" if ctx is not None else ""
    sys.stderr.write(f"error: {exc.format_message()}{hint}\n")


try:  # typer prints usage errors through this function; one line instead
    import typer.rich_utils as _typer_rich

    _typer_rich.rich_format_error = _usage_error_one_line
except ImportError:  # pragma: no cover - typer without rich
    pass

try:  # flags show as flags in --help (typer 0.29 with click 8.5 labels every one of them "<bool>")
    from typer.core import TyperOption as _TyperOption

    _display_type_rich = _TyperOption.display_type_rich

    def _flag_without_type(self, ctx):
        if getattr(self, "is_flag", False) and self.metavar is None:
            return None
        return _display_type_rich(self, ctx)

    _TyperOption.display_type_rich = _flag_without_type
except (ImportError, AttributeError):  # pragma: no cover - other typer versions render flags plainly
    pass

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="assay: LLM evaluation with statistical guarantees.",
)

#: stdout for people: secrets masked, no soft wrapping of long table rows, and no markup: user-supplied names such
#: as ``my-model[v2]`` print literally (styles are given with ``style=``, never inside the text)
out = masked_console(soft_wrap=False, width=200, markup=False)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"assay {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version and exit."),
) -> None:
    """assay: LLM evaluation with statistical guarantees."""


def fmt_budget(b: Any) -> str:
    from ..data import format_budget, parse_budget

    v = parse_budget(b)
    return "0 (default)" if v == 0 else format_budget(v, compact=True)


def emit(result, as_json: bool, out_path: Optional[Path], report: Optional[Path], human: Callable[[], None]) -> None:
    """Write the result where it was asked for: ``--out`` (JSON), ``--report`` (HTML), ``--json`` (stdout), else
    the human summary ``human()`` on stdout."""
    from ..models.secrets import mask_secrets

    text = mask_secrets(result.to_json())  # the model's key and URL credentials never reach a file or stdout
    if out_path is not None:
        out_path.parent.mkdir(parents=True, exist_ok=True)
        out_path.write_text(text + "\n")
    if report is not None:
        from ..report import render_html

        report.parent.mkdir(parents=True, exist_ok=True)
        report.write_text(mask_secrets(render_html([result])))
    if as_json:
        sys.stdout.write(text + "\n")
    else:
        human()
        if out_path is not None:
            out.print(f"result written to {out_path}")
        if report is not None:
            out.print(f"report written to {report}")
