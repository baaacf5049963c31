"""``assay study``: the papers' simulation studies."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from .. import checks
from ..errors import AssayInputError
from ._common import app, emit as _emit, guard as _guard, out as _out

_QUICK = {"trials": 200, "gt": 300, "n_boot": 200}


@app.command()
@_guard
def study(
    name: str = typer.Argument(..., help="siren-a, siren-b, siren-c, autoeval-example, autoeval-quant, psdme-ridge, faq-leaderboard, faq-stopping, scope-sim."),
    trials: Optional[int] = typer.Option(None, "--trials", help="Monte Carlo trials per configuration (paper: 2000)."),
    gt: Optional[int] = typer.Option(None, "--gt", help="Replications for the ground-truth target (paper: 3000)."),
    boot: Optional[int] = typer.Option(None, "--boot", help="Bootstrap draws per trial (paper: 500)."),
    seed: int = typer.Option(0, "--seed", help="Root seed; child seeds are spawned per configuration."),
    workers: int = typer.Option(1, "--workers", help="Worker processes / Ray CPUs (results do not depend on it)."),
    executor: Optional[str] = typer.Option(None, "--executor", help="serial, processes or ray (default: processes when --workers > 1)."),
    address: Optional[str] = typer.Option(None, "--address", help="Ray cluster: 'auto' (the cluster this machine is in) or ray://host:10001 (default: a local Ray)."),
    quick: bool = typer.Option(False, "--quick", help="A small version for a smoke test (200 trials)."),
    M: Optional[list[int]] = typer.Option(None, "--M", help="One cell: items M (repeat for several; siren-a/b/c, psdme-ridge)."),
    K: Optional[list[int]] = typer.Option(None, "--K", help="One cell: artifacts / configurations K (siren-a, psdme-ridge)."),
    R: Optional[list[int]] = typer.Option(None, "--R", help="One cell: repeated splits R (siren-a/b/c)."),
    betting: Optional[list[str]] = typer.Option(None, "--betting", help="One cell: betting strategy wsr or up (autoeval-example, autoeval-quant)."),
    deltas: Optional[str] = typer.Option(None, "--deltas", help="Comma-separated error levels, e.g. 0.1,0.05 (autoeval-example)."),
    matrix: Optional[str] = typer.Option(None, "--matrix", help="faq-*: the leaderboard matrix: mmlu_pro_math (default), tiny_v1, bbh_tracking, or a CSV path."),
    new: Optional[Path] = typer.Option(None, "--new", help="faq-*: evaluate the models of this CSV (same questions) with the whole matrix as history (e.g. a size shift)."),
    calibrate: bool = typer.Option(True, "--calibrate/--no-calibrate", help="faq-leaderboard: FAQ's interval calibrated on held-out families of each history (default) or the full floor with Student t."),
    fallback: Optional[float] = typer.Option(None, "--fallback", help="faq-leaderboard: level of the test that sends a model to uniform sampling (0 = off; default 0.05)."),
    methods: Optional[str] = typer.Option(None, "--methods", help="faq-leaderboard: comma-separated methods (faq,faq_paper,uniform,ht_uniform,aipw,ai_factor)."),
    as_json: bool = typer.Option(False, "--json", help="Print {\"rows\": [...], ...} as JSON on stdout."),
    out: Optional[Path] = typer.Option(None, "-o", "--out", help="Also write the JSON result to this file."),
) -> None:
    """Reproduce a paper's simulation study (coverage, width, optimism)."""
    from ..progress import progress_reporter
    from ..studies import available, run_study

    if name not in available():
        raise AssayInputError(f"unknown study {name!r}; available: {', '.join(available())}")
    kwargs: dict[str, Any] = dict(_QUICK) if quick else {}
    if trials is not None:
        kwargs["trials"] = trials
    if gt is not None:
        kwargs["gt"] = gt
    if boot is not None:
        kwargs["n_boot"] = boot
    if name == "siren-c" or name.startswith(("autoeval", "psdme")):
        kwargs.pop("gt", None)
    if name.startswith("psdme"):
        kwargs.pop("n_boot", None)
        if quick:
            kwargs["trials"] = 20
    if name.startswith("faq"):
        kwargs.pop("gt", None)
        kwargs.pop("n_boot", None)
        if quick and name == "faq-leaderboard":
            kwargs.update(trials=2, budgets=(0.025, 0.1), n_models=300, splits=2,
                          methods=("faq", "faq_paper", "uniform", "ht_uniform"))
        elif quick:
            kwargs.update(trials=1, widths=(0.15,), n_models=300, splits=2, fixed_budgets=(0.025, 0.05, 0.1))
        if matrix is not None:
            kwargs["path"] = matrix
        if new is not None:
            kwargs["new_path"] = new
        if name == "faq-leaderboard":
            kwargs["calibrate"] = calibrate
            if fallback is not None:
                kwargs["fallback"] = fallback
            if methods:
                kwargs["methods"] = tuple(m.strip() for m in methods.split(",") if m.strip())
    elif matrix is not None or new is not None or fallback is not None or methods or not calibrate:
        raise AssayInputError("--matrix, --new, --fallback, --methods and --no-calibrate are for the faq-* studies")
    if name.startswith("scope"):
        kwargs.pop("gt", None)
        kwargs.pop("n_boot", None)
        if quick:
            kwargs.update(trials=2, cert_trials=20, budgets=(2000,), cert_budget=2000, region_budget=2000)
    if name.startswith("autoeval"):
        kwargs.pop("n_boot", None)
        if quick:
            kwargs.update(trials=10, grid=1000)
            if name == "autoeval-example":
                kwargs.update(n_max=20_000)
    kwargs.update(_cells(name, {"--M": M, "--K": K, "--R": R, "--betting": betting, "--deltas": _floats(deltas)}))
    from ..parallel import use_executor

    if address is not None and executor not in (None, "ray"):
        raise AssayInputError("--address is for --executor ray")
    with use_executor(executor or ("ray" if address else None), address), progress_reporter(f"study {name}") as update, \
            progress_reporter("factor fit (per fold and candidate)") as fit_update:
        if name.startswith("faq"):
            kwargs["fit_progress"] = fit_update
        result = run_study(name, seed=seed, workers=workers, progress=update, **kwargs)
    result.info["executor"] = {"kind": executor or ("ray" if address else ("processes" if workers > 1 else "serial")),
                               "workers": workers, "address": address}

    def human() -> None:
        _print_study(result)

    _emit(result, as_json, out, None, human)


def _cell(v: Any, integral: bool) -> str:
    import math

    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return str(int(v)) if integral else f"{v:.4f}"
    return str(v)


def _print_study(result) -> None:
    """A study's rows as a table: integer counts as integers, empty columns left out, the notes as a legend."""
    import numpy as np
    import pandas as pd
    from rich.table import Table
    from rich.text import Text

    from ..report import integral_columns

    rows = result.rows
    rows = rows.loc[:, ~rows.isna().all()]
    name = result.params.get("study", "study")
    _out.print(Text(f"{name}: {result.params.get('trials')} trials per row, seed = {result.seed}"))
    t = Table()
    for c in rows.columns:
        t.add_column(Text(str(c)), justify="right" if pd.api.types.is_numeric_dtype(rows[c]) else "left")
    # a column is printed as integers when every value in it is a whole number (counts, sizes), else with 4 decimals
    integral = integral_columns(rows)
    for rec in rows.to_dict("records"):
        t.add_row(*[Text(_cell(v.item() if isinstance(v, np.generic) else v, integral[c])) for c, v in rec.items()])
    _out.print(t)
    for k, v in result.info.items():
        if k not in ("notes", "warnings"):
            _out.print(Text(f"{k}: {v}"))
    for w in result.warnings:
        _out.print(Text(f"warning: {w}"))
    for n in result.info.get("notes", []):
        _out.print(Text(f"note: {n}"))


# A single cell instead of the whole grid: each flag maps to the study's plural parameter (a list of values) or, when
# the study only has the singular one, to that (one value).
_CELL_PARAMS = {"--M": ("Ms", "M"), "--K": ("Ks", "K"), "--R": ("Rs", "R"), "--betting": ("bettings", "betting"),
                "--deltas": ("deltas", "delta")}


def _floats(text: Optional[str]) -> Optional[list[float]]:
    if text is None:
        return None
    try:
        vals = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise AssayInputError(f"--deltas takes comma-separated numbers such as 0.1,0.05; got {text!r}") from None
    if not vals:
        raise AssayInputError(f"--deltas takes comma-separated numbers such as 0.1,0.05; got {text!r}")
    return [checks.level(v, "each of --deltas") for v in vals]


def _cells(name: str, given: dict[str, Optional[list]]) -> dict[str, Any]:
    import inspect

    from ..studies import STUDIES

    params = inspect.signature(STUDIES[name]).parameters
    kwargs: dict[str, Any] = {}
    for flag, values in given.items():
        if not values:
            continue
        plural, singular = _CELL_PARAMS[flag]
        if plural in params:
            kwargs[plural] = tuple(values)
        elif singular in params:
            if len(values) != 1:
                raise AssayInputError(f"study {name} takes one value of {flag}; got {len(values)}")
            kwargs[singular] = values[0]
        else:
            fits = [n for n, fn in sorted(STUDIES.items())
                    if plural in inspect.signature(fn).parameters or singular in inspect.signature(fn).parameters]
            raise AssayInputError(f"{flag} does not apply to study {name}; it applies to: {', '.join(fits)}")
    return kwargs
