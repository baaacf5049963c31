"""Tidy long tables: read CSV / TSV / Parquet / JSONL / JSON, map columns, validate.

Every method takes a tidy long table (one row per scored unit) whose column names are configurable. This module
reads such tables from files, renames the user's columns to assay's canonical names and validates them (duplicate
keys, NaN, out-of-range values). Problems raise :class:`~assay.errors.AssayInputError` naming the rows and saying
what would be accepted. Missing data stays missing: it is never silently turned into 0.

It never imports a method or a log reader: :mod:`assay.data.logs` builds on it, and :func:`assay.data.read_table`
dispatches between the two.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from ..errors import AssayInputError, describe_rows
from .release import looks_like_siren_release, read_siren_release

__all__ = ["read_plain", "map_columns", "check_scores", "check_unique", "parse_budget", "format_budget", "FORMATS"]

_FORMATS = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "json",
}
FORMATS = ("csv", "tsv", "parquet", "jsonl", "json", "siren-release")


def _detect_format(path: Path) -> str:
    if path.is_dir():
        if looks_like_siren_release(path):
            return "siren-release"
        raise AssayInputError(
            f"{path} is a directory that assay cannot read: expected a file (.csv, .tsv, .parquet, "
            ".jsonl, .json, optionally .gz) or a SIREN release folder holding tensor_a_B*.npy files."
        )
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
    if suffixes and suffixes[-1] in _FORMATS:
        return _FORMATS[suffixes[-1]]
    raise AssayInputError(
        f"cannot tell the format of {path.name!r} from its name: use one of "
        f"{', '.join(sorted(_FORMATS))} (optionally .gz) or pass format=..."
    )


def read_plain(path: str | Path, *, format: str | None = None, text_columns: Sequence[str] = ()) -> pd.DataFrame:
    """Read a plain table file (CSV / TSV / Parquet / JSONL / JSON, optionally .gz) or a SIREN release folder.

    The format comes from the file name unless ``format`` is given; evaluation logs are read by
    :func:`assay.data.read_table` through :mod:`assay.ingest` instead.

    Parameters
    ----------
    path : str or Path
        The file or folder.
    format : str, optional
        One of ``csv``, ``tsv``, ``parquet``, ``jsonl``, ``json``, ``siren-release``.
    text_columns : sequence of str, default ()
        Columns read as text (e.g. ids that look like numbers), for the text formats.

    Returns
    -------
    DataFrame
        The table as read.

    Raises
    ------
    AssayInputError
        When the path does not exist, the format is unknown, or the parser fails.
    """
    p = Path(path)
    if not p.exists():
        raise AssayInputError(f"no such file or folder: {p}")
    fmt = (format or _detect_format(p)).lower()
    dtype = {c: str for c in text_columns} or None
    try:
        if fmt == "csv":
            return pd.read_csv(p, dtype=dtype)
        if fmt == "tsv":
            return pd.read_csv(p, sep="\t", dtype=dtype)
        if fmt == "parquet":
            return pd.read_parquet(p)
        if fmt == "jsonl":
            return pd.read_json(p, lines=True, dtype=dtype if dtype else True)
        if fmt == "json":
            return pd.read_json(p, dtype=dtype if dtype else True)
        if fmt == "siren-release":
            return read_siren_release(p)
    except AssayInputError:
        raise
    except (ValueError, OSError, UnicodeDecodeError) as exc:  # parser errors from pandas / pyarrow
        raise AssayInputError(f"could not read {p} as {fmt}: {exc}") from exc
    raise AssayInputError(
        f"unknown format {format!r}: use csv, tsv, parquet, jsonl, json or siren-release"
    )


def map_columns(
    df: pd.DataFrame, mapping: Mapping[str, str | None], *, required: Iterable[str] = ()
) -> pd.DataFrame:
    """Rename the user's columns to assay's canonical names.

    Parameters
    ----------
    df : DataFrame
        The user's table; its column names must be unique.
    mapping : mapping of str to str or None
        Canonical name -> the user's column name (``None`` or the canonical name itself means "already called that").
    required : iterable of str, default ()
        Canonical columns that must exist afterwards.

    Returns
    -------
    DataFrame
        The table with the columns renamed.

    Raises
    ------
    AssayInputError
        When ``df`` is not a DataFrame, repeats a column name, lacks a mapped column, or lacks a required one.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"system": ["A", "B"], "question": ["q1", "q1"], "acc": [1.0, 0.5]})
    >>> out = map_columns(df, {"model": "system", "item": "question", "score": "acc"}, required=("model", "item"))
    >>> print(out.columns.tolist())
    ['model', 'item', 'score']
    """
    if not isinstance(df, pd.DataFrame):
        raise AssayInputError(f"expected a pandas DataFrame, got {type(df).__name__}")
    dup = df.columns[df.columns.duplicated()]
    if len(dup):
        raise AssayInputError(f"the table has several columns named {', '.join(map(repr, dict.fromkeys(map(str, dup))))}; "
                              "every column name must be unique (rename or drop the extra ones)")
    rename: dict[str, str] = {}
    for canonical, user in mapping.items():
        src = user or canonical
        if src == canonical:
            continue
        if src not in df.columns:
            raise AssayInputError(
                f"column {src!r} (mapped to {canonical!r}) is not in the table; "
                f"its columns are: {', '.join(map(str, df.columns))}"
            )
        rename[src] = canonical
    out = df.rename(columns=rename)
    missing = [c for c in required if c not in out.columns]
    if missing:
        hint = ", ".join(f"{c!r}: 'YOUR_COLUMN'" for c in missing)
        raise AssayInputError(
            f"the table has no column {', '.join(map(repr, missing))}; its columns are: "
            f"{', '.join(map(str, df.columns))}. Name yours with columns={{{hint}}}."
        )
    return out


def check_scores(
    df: pd.DataFrame,
    column: str,
    *,
    low: float = 0.0,
    high: float = 1.0,
    allow_missing: bool = False,
    what: str = "score",
    missing_hint: str | None = None,
    range_hint: str | None = None,
) -> pd.Series:
    """Validate a numeric column: numbers only, finite, inside ``[low, high]``.

    NaN is an error unless ``allow_missing`` (then it stays NaN).

    Parameters
    ----------
    df : DataFrame
        The table.
    column : str
        The column to check.
    low, high : float, default 0.0 and 1.0
        The allowed range.
    allow_missing : bool, default False
        Accept NaN.
    what : str, default "score"
        Names the column's role in error messages.
    missing_hint : str, optional
        What the error about missing values advises (default: fill them, remove those rows, or drop incomplete items).
    range_hint : str, optional
        What the error about a value outside the range advises (default: rescale the scores to the range).

    Returns
    -------
    Series
        The column as float64.

    Raises
    ------
    AssayInputError
        On a non-numeric, missing (unless allowed), infinite or out-of-range value, naming the rows.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"acc": [1.0, 0.5]})
    >>> print(check_scores(df, "acc").tolist())
    [1.0, 0.5]
    >>> check_scores(df, "acc", high=0.8)
    Traceback (most recent call last):
    ...
    assay.errors.AssayInputError: score column 'acc' is outside [0, 0.8] at row 0 (0-based) (e.g. 1). Rescale ...
    """
    raw = df[column]
    values = pd.to_numeric(raw, errors="coerce")
    bad_type = values.isna() & raw.notna()
    if bad_type.any():
        rows = df.index[bad_type]
        examples = ", ".join(repr(v) for v in raw[bad_type].head(3).tolist())
        raise AssayInputError(
            f"{what} column {column!r} has non-numeric values at {describe_rows(rows)} "
            f"(e.g. {examples}); expected numbers in [{low:g}, {high:g}]."
        )
    values = values.astype(float)
    if not allow_missing and values.isna().any():
        rows = df.index[values.isna()]
        hint = missing_hint or (
            "fill them, remove those rows, or drop incomplete items (on_missing='drop-items')"
        )
        raise AssayInputError(f"{what} column {column!r} is missing (NaN/empty) at {describe_rows(rows)}; {hint}.")
    finite = values.dropna()
    inf = ~np.isfinite(finite)
    if inf.any():
        raise AssayInputError(
            f"{what} column {column!r} is infinite at {describe_rows(finite.index[inf])}; "
            f"expected numbers in [{low:g}, {high:g}]."
        )
    out = (finite < low) | (finite > high)
    if out.any():
        examples = ", ".join(f"{v:g}" for v in finite[out].head(3).tolist())
        raise AssayInputError(
            f"{what} column {column!r} is outside [{low:g}, {high:g}] at "
            f"{describe_rows(finite.index[out])} (e.g. {examples}). "
            + (range_hint or f"Rescale the scores to [{low:g}, {high:g}] (e.g. divide by the maximum possible score).")
        )
    return values


def check_unique(df: pd.DataFrame, keys: Sequence[str], *, what: str = "score") -> None:
    """Each combination of ``keys`` must appear at most once.

    Parameters
    ----------
    df : DataFrame
        The table.
    keys : sequence of str
        The columns whose combination must be unique.
    what : str, default "score"
        Names the rows' role in the error message.

    Returns
    -------
    None

    Raises
    ------
    AssayInputError
        When a combination repeats, naming the rows.

    Examples
    --------
    >>> import pandas as pd
    >>> check_unique(pd.DataFrame({"model": ["A", "A"], "item": ["q1", "q1"]}), ["model", "item"])
    Traceback (most recent call last):
    ...
    assay.errors.AssayInputError: duplicate scores for the same (model, item) at rows 0, 1 (0-based) ...
    """
    dup = df.duplicated(subset=list(keys), keep=False)
    if dup.any():
        rows = df.index[dup]
        first = df.loc[rows[0], list(keys)].to_dict()
        raise AssayInputError(
            f"duplicate {what}s for the same ({', '.join(keys)}) at {describe_rows(rows)} "
            f"(e.g. {first}); each combination must appear once. Average repeats beforehand or "
            f"add a distinguishing column."
        )


_SUFFIX = {"k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9}


def parse_budget(value: Any) -> float | str:
    """Budgets are numbers where possible ("1.5M" -> 1.5e6, "500k" -> 5e5); other labels stay text.

    Parameters
    ----------
    value : Any
        A number or a label.

    Returns
    -------
    float or str
        The budget as a float, or the stripped label.

    Examples
    --------
    >>> parse_budget("1.5M"), parse_budget("500k"), parse_budget("full")
    (1500000.0, 500000.0, 'full')
    """
    if isinstance(value, (int, np.integer)):
        return float(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    text = str(value).strip()
    m = re.fullmatch(r"([-+]?\d*\.?\d+(?:[eE][-+]?\d+)?)\s*([kKmMbBgG]?)", text)
    if m:
        return float(m.group(1)) * _SUFFIX.get(m.group(2).lower(), 1.0)
    return text


def format_budget(value: float | str, compact: bool = False) -> str:
    """Budget as text: ``1500000`` -> "1500000", or with ``compact`` -> "1.5M" (parse_budget reads both).

    Parameters
    ----------
    value : float or str
        The budget; text is returned as it is.
    compact : bool, default False
        Write thousands, millions and billions with a K, M or B suffix when exact.

    Returns
    -------
    str
        The budget as text.

    Examples
    --------
    >>> format_budget(1500000), format_budget(1500000, compact=True)
    ('1500000', '1.5M')
    """
    if isinstance(value, str):
        return value
    v = float(value)
    if compact:
        for div, suf in ((1e9, "B"), (1e6, "M"), (1e3, "K")):
            if abs(v) >= div and (v / div) == float(f"{v / div:g}"):
                return f"{v / div:g}{suf}"
    if v.is_integer():
        return str(int(v))
    return f"{v:g}"


def write_table(table: pd.DataFrame, path: str | Path) -> Path:
    """Write ``table`` by the file's extension: Parquet (``.parquet``, ``.pq``), JSON lines (``.jsonl``,
    ``.ndjson``), else CSV. Parent folders are created. Returns the path."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    suffix = p.suffix.lower()
    if suffix in (".parquet", ".pq"):
        table.to_parquet(p, index=False)
    elif suffix in (".jsonl", ".ndjson"):
        table.to_json(p, orient="records", lines=True)
    else:
        table.to_csv(p, index=False)
    return p
