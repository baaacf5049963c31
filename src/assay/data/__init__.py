"""The data layer: read tables and logs, map columns, validate, and prepare each method's arrays.

* :mod:`.tables`: plain table files (CSV / TSV / Parquet / JSONL / JSON, optionally .gz), column mapping and the
  checks every method shares (:func:`map_columns`, :func:`check_scores`, :func:`check_unique`), budgets.
* :mod:`.release`: the public SIREN release folders.
* One module per method with its ``prepare`` step (tidy table -> the arrays its core takes): :mod:`.siren`,
  :mod:`.autoeval`, :mod:`.psdme` (FAQ's matrices: :mod:`.faq`).

:func:`read_table` reads any of them, and evaluation logs (lm-eval, inspect, HELM) through :mod:`assay.data.logs` (also importable as :mod:`assay.ingest`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import pandas as pd

from ..errors import AssayInputError
from .autoeval import merge_judge
from .release import read_siren_release
from .siren import SIREN_COLUMNS, SirenDesign, siren_design
from .tables import check_scores, check_unique, format_budget, map_columns, parse_budget, read_plain, write_table

__all__ = ["read_table", "read_plain", "map_columns", "check_scores", "check_unique", "read_siren_release",
           "SirenDesign", "siren_design", "SIREN_COLUMNS", "parse_budget", "format_budget", "merge_judge", "write_table"]

_LOG_FORMATS = ("lmeval", "inspect", "helm")


def read_table(
    path: str | Path, *, format: str | None = None, text_columns: Sequence[str] = ()
) -> pd.DataFrame:
    """Read a tidy table from CSV / TSV / Parquet / JSONL / JSON (or a SIREN release folder, or a log).

    Parameters
    ----------
    path : str or Path
        The file (or, for ``format="siren-release"``, the folder).
    format : {"csv", "tsv", "parquet", "jsonl", "json", "siren-release", "lmeval", "inspect", "helm"}, optional
        Overrides detection from the file name. lm-eval ``--log_samples`` folders / ``samples_*.jsonl``, inspect
        ``.eval`` / ``.json`` logs and HELM ``per_instance_stats.json`` are detected and read by
        :mod:`assay.data.logs` (default metric, filter and scorer; use ``assay ingest`` to choose them).
    text_columns : sequence of str
        Columns to read as text from CSV / TSV / JSON, so that ids such as "007" are not turned
        into the number 7 (and collide with an id "7").
    """
    p = Path(path)
    if not p.exists():
        raise AssayInputError(f"no such file or folder: {p}")
    kind = format if format in _LOG_FORMATS else "table"
    if format is None and (p.is_dir() or p.suffix in (".eval", ".json") or p.name.startswith("samples_")
                           or p.name == "per_instance_stats.json"):
        from .logs import detect_format

        try:
            kind = detect_format(p)
        except AssayInputError:  # e.g. a SIREN release folder: read below
            kind = "table"
    if kind != "table":
        from .logs import read_any

        return read_any(p, format=kind)
    return read_plain(p, format=format, text_columns=text_columns)
