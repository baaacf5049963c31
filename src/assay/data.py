"""Tidy long tables: read CSV / Parquet / JSONL, map columns, validate, pivot.

Every method takes a tidy long table (one row per scored unit) whose column names are
configurable. This module reads such tables from files, renames the user's columns to assay's
canonical names, validates them (duplicate keys, NaN, out-of-range values, ragged designs) and
pivots them into the arrays a method needs. Problems raise :class:`~assay.errors.AssayInputError`
naming the rows and saying what would be accepted. Missing data stays missing: it is never
silently turned into 0.

Readers: ``.csv``, ``.tsv``, ``.parquet`` / ``.pq``, ``.jsonl`` / ``.ndjson``, ``.json`` (a list
of records), each optionally gzip-compressed (``.gz``), plus the directory layout of the public
SIREN release (``tensor_a_B<budget>.npy`` + ``col_b.npy`` per model; see
:func:`read_siren_release`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from .errors import AssayInputError, describe_rows

__all__ = [
    "read_table",
    "map_columns",
    "check_scores",
    "check_unique",
    "read_siren_release",
    "SirenDesign",
    "siren_design",
    "SIREN_COLUMNS",
    "parse_budget",
]

SIREN_COLUMNS = ("system", "budget", "artifact", "item", "score")

_FORMATS = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "json",
}


def _detect_format(path: Path) -> str:
    if path.is_dir():
        if _looks_like_siren_release(path):
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


def read_table(
    path: str | Path, *, format: str | None = None, text_columns: Sequence[str] = ()
) -> pd.DataFrame:
    """Read a tidy table from CSV / TSV / Parquet / JSONL / JSON (or a SIREN release folder).

    Parameters
    ----------
    path : str or Path
        The file (or, for ``format="siren-release"``, the folder).
    format : {"csv", "tsv", "parquet", "jsonl", "json", "siren-release", "lmeval", "inspect", "helm"}, optional
        Overrides detection from the file name. lm-eval ``--log_samples`` folders / ``samples_*.jsonl``, inspect
        ``.eval`` / ``.json`` logs and HELM ``per_instance_stats.json`` are detected and read by
        :mod:`assay.ingest` (default metric, filter and scorer; use ``assay ingest`` to choose them).
    text_columns : sequence of str
        Columns to read as text from CSV / TSV / JSON, so that ids such as "007" are not turned
        into the number 7 (and collide with an id "7").
    """
    p = Path(path)
    if not p.exists():
        raise AssayInputError(f"no such file or folder: {p}")
    kind = format if format in ("lmeval", "inspect", "helm") else "table"
    if format is None and (p.is_dir() or p.suffix in (".eval", ".json") or p.name.startswith("samples_")
                           or p.name == "per_instance_stats.json"):
        from .ingest import detect_format

        try:
            kind = detect_format(p)
        except AssayInputError:  # e.g. a SIREN release folder: handled below
            kind = "table"
    if kind != "table":
        from .ingest import read_any

        return read_any(p, format=kind)
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

    ``mapping`` maps canonical name -> the user's column name (``None`` or the canonical name
    itself means "already called that"). Columns named in ``required`` must exist afterwards.
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
) -> pd.Series:
    """Validate a numeric column: numbers only, finite, inside ``[low, high]``.

    Returns the column as float64. NaN is an error unless ``allow_missing`` (then it stays NaN).
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
            f"{describe_rows(finite.index[out])} (e.g. {examples}). Rescale the scores to "
            f"[{low:g}, {high:g}] (e.g. divide by the maximum possible score)."
        )
    return values


def check_unique(df: pd.DataFrame, keys: Sequence[str], *, what: str = "score") -> None:
    """Each combination of ``keys`` must appear at most once."""
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
    """Budgets are numbers where possible ("1.5M" -> 1.5e6, "500k" -> 5e5); other labels stay text."""
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
    """Budget as text: ``1500000`` -> "1500000", or with ``compact`` -> "1.5M" (parse_budget reads both)."""
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


@dataclass
class SirenDesign:
    """A validated SIREN score design: one ``M x K`` array per (system, budget) cell.

    All cells share the same items, in ``items`` order, so that one split design and one
    multiplier per item serve the whole grid.
    """

    items: list[str]
    cells: list[tuple[str, float | str]]
    scores: dict[tuple[str, float | str], np.ndarray]
    artifacts: dict[tuple[str, float | str], list[str]]
    dropped_items: list[str] = field(default_factory=list)

    @property
    def n_items(self) -> int:
        return len(self.items)

    @property
    def systems(self) -> list[str]:
        seen: dict[str, None] = {}
        for s, _ in self.cells:
            seen.setdefault(s, None)
        return list(seen)

    def budgets(self, system: str) -> list[float | str]:
        return [b for s, b in self.cells if s == system]


def _budget_sort_key(b: float | str) -> tuple[int, Any]:
    return (0, b) if not isinstance(b, str) else (1, b)


def siren_design(
    table: pd.DataFrame,
    *,
    columns: Mapping[str, str | None] | None = None,
    on_missing: str = "error",
    min_items: int = 4,
) -> SirenDesign:
    """Validate a tidy SIREN table and pivot it into one ``M x K`` score array per cell.

    Columns (canonical names; map yours with ``columns={"score": "acc", ...}``): ``system``,
    ``budget`` (the untuned default is budget ``0`` with one artifact), ``artifact``, ``item``,
    ``score`` in [0, 1]. ``system`` and ``budget`` may be absent (one system / one budget).

    Parameters
    ----------
    on_missing : {"error", "drop-items"}
        What to do with NaN scores and items that some (system, budget, artifact) lacks: raise
        (default), or drop those items from every cell (recorded in ``dropped_items``).
    """
    if on_missing not in ("error", "drop-items"):
        raise AssayInputError(f"on_missing must be 'error' or 'drop-items', got {on_missing!r}")
    mapping = {c: None for c in SIREN_COLUMNS}
    mapping.update(columns or {})
    df = map_columns(table, mapping, required=("artifact", "item", "score"))
    df = df.copy()
    if "system" not in df.columns:
        df["system"] = "system"
    if "budget" not in df.columns:
        df["budget"] = 1.0
    if df.empty:
        raise AssayInputError("the score table is empty: nothing to evaluate.")
    for c in ("system", "artifact", "item"):
        if df[c].isna().any():
            raise AssayInputError(
                f"column {c!r} is empty at {describe_rows(df.index[df[c].isna()])}; every row needs a {c}."
            )
        df[c] = df[c].astype(str)
        blank = df[c].str.strip() == ""
        if blank.any():
            raise AssayInputError(
                f"column {c!r} is blank at {describe_rows(df.index[blank])}; every row needs a non-empty {c}."
            )
    if df["budget"].isna().any():
        raise AssayInputError(
            f"column 'budget' is empty at {describe_rows(df.index[df['budget'].isna()])}; "
            "use 0 for the untuned default."
        )
    uniq = pd.unique(df["budget"])
    parsed = {b: parse_budget(b) for b in uniq}
    if len({type(v) for v in parsed.values()}) > 1:
        texts = [repr(b) for b, v in parsed.items() if isinstance(v, str)][:3]
        raise AssayInputError(
            f"column 'budget' mixes numbers and labels ({', '.join(texts)}); use numbers (suffixes K, M, B "
            "allowed, e.g. 1.5M) or labels throughout, with 0 for the untuned default."
        )
    df["budget"] = df["budget"].map(parsed).astype(object if isinstance(next(iter(parsed.values())), str) else float)
    keys = ["system", "budget", "artifact", "item"]
    check_unique(df, keys)
    df["score"] = check_scores(df, "score", allow_missing=(on_missing == "drop-items"))

    all_items = pd.Index(pd.unique(df["item"]))
    groups = df.groupby(["system", "budget", "artifact"], sort=False)["item"]
    counts = groups.size()
    dropped: set[str] = set()
    if (counts != len(all_items)).any():
        short = counts[counts != len(all_items)]
        if on_missing == "error":
            lines = []
            for (s, b, a), n in short.head(5).items():
                have = set(df.loc[(df.system == s) & (df.budget == b) & (df.artifact == a), "item"])
                missing = [i for i in all_items if i not in have][:3]
                lines.append(
                    f"system={s!r} budget={format_budget(b)} artifact={a!r} has {n} of "
                    f"{len(all_items)} items (missing e.g. {', '.join(map(repr, missing))})"
                )
            more = len(short) - len(lines)
            raise AssayInputError(
                "ragged design: SIREN needs every artifact of every (system, budget) scored on the "
                "same items, because one split design and one multiplier per item serve the whole "
                "grid. " + "; ".join(lines) + (f"; and {more} more" if more > 0 else "") +
                ". Score the missing items or drop them everywhere (on_missing='drop-items')."
            )
        have_all = df.groupby("item")[["system", "budget", "artifact"]].apply(
            lambda g: len(g.drop_duplicates())
        )
        dropped |= set(have_all.index[have_all < len(counts)])
    if df["score"].isna().any():
        dropped |= set(df.loc[df["score"].isna(), "item"])
    if dropped:
        df = df[~df["item"].isin(dropped)]
    items = [i for i in all_items if i not in dropped]
    if len(items) < min_items:
        raise AssayInputError(
            f"only {len(items)} complete items remain; SIREN needs at least {min_items} "
            "(each split needs items on both sides, and intervals need many more)."
        )

    system_order = {s: k for k, s in enumerate(pd.unique(df["system"]))}
    pairs = df[["system", "budget"]].drop_duplicates()
    cells = sorted(
        zip(pairs["system"], pairs["budget"]),
        key=lambda sb: (system_order[sb[0]], _budget_sort_key(sb[1])),
    )
    item_pos = pd.Index(items)
    scores: dict[tuple[str, float | str], np.ndarray] = {}
    artifacts: dict[tuple[str, float | str], list[str]] = {}
    for (s, b), g in df.groupby(["system", "budget"], sort=False):
        arts = list(pd.unique(g["artifact"]))
        Z = np.empty((len(items), len(arts)), dtype=float)
        rows = item_pos.get_indexer(g["item"])
        cols = pd.Index(arts).get_indexer(g["artifact"])
        Z[rows, cols] = g["score"].to_numpy()
        scores[(s, b)] = Z
        artifacts[(s, b)] = arts
    return SirenDesign(items=items, cells=cells, scores=scores, artifacts=artifacts,
                       dropped_items=sorted(dropped))


# -- the public SIREN release layout ------------------------------------------------------------

_TENSOR = re.compile(r"tensor_a_B(\d+)\.npy$")


def _looks_like_siren_release(path: Path) -> bool:
    return any(True for _ in path.glob("tensor_a_B*.npy")) or any(
        True for _ in path.glob("*/tensor_a_B*.npy")
    ) or any(True for _ in path.glob("*/*/tensor_a_B*.npy"))


def _model_dirs(path: Path) -> list[Path]:
    return sorted({p.parent for p in path.rglob("tensor_a_B*.npy")})


def _load_npy(f: Path) -> np.ndarray:
    try:
        return np.load(f, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise AssayInputError(f"could not read {f} as a numpy array: {exc}") from exc


def read_siren_release(path: str | Path) -> pd.DataFrame:
    """Read score tensors in the layout of the public SIREN release into a tidy table.

    Each model folder holds ``tensor_a_B<budget>.npy`` (items x shortlist, 0/1) and ``col_b.npy``
    (the untuned default prompt on the same items). ``path`` may be one model folder, a tuner
    folder of model folders, or a folder of tuner folders. Systems are named after the model
    folder (a trailing ``_law`` / ``_math`` is kept), prefixed by the tuner folder when several
    tuners are read (``dspy/Qwen_Qwen3-8B_law``). The default prompt becomes budget 0 with the
    single artifact ``default``. Items are the row positions ``"0" .. "M-1"`` (the release
    ships no item ids; rows are aligned across models and tuners).
    """
    root = Path(path)
    dirs = _model_dirs(root)
    if not dirs:
        raise AssayInputError(f"no tensor_a_B*.npy files under {root}")
    tuners = {d.parent for d in dirs}
    frames = []
    for d in dirs:
        name = d.name if len(tuners) == 1 else f"{d.parent.name}/{d.name}"
        files = list(d.glob("tensor_a_B*.npy"))
        odd = [f.name for f in files if not _TENSOR.fullmatch(f.name)]
        if odd:
            raise AssayInputError(
                f"{d}: cannot read the budget from {', '.join(odd)}; tensor files must be named "
                "tensor_a_B<integer budget>.npy (e.g. tensor_a_B1500000.npy)"
            )
        files.sort(key=lambda p: int(_TENSOR.fullmatch(p.name).group(1)))
        blocks: list[tuple[float, np.ndarray, list[str]]] = []
        for f in files:
            arr = _load_npy(f)
            if arr.ndim != 2:
                raise AssayInputError(f"{f} should be a 2-D items x artifacts array, has shape {arr.shape}")
            budget = float(_TENSOR.fullmatch(f.name).group(1))
            blocks.append((budget, arr, [f"a{k}" for k in range(arr.shape[1])]))
        col_b = d / "col_b.npy"
        if col_b.exists():
            b = _load_npy(col_b)
            if b.ndim != 1:
                raise AssayInputError(f"{col_b} should be a 1-D array of item scores, has shape {b.shape}")
            blocks.insert(0, (0.0, b.reshape(-1, 1), ["default"]))
        m = {blk[1].shape[0] for blk in blocks}
        if len(m) != 1:
            raise AssayInputError(f"{d}: tensors disagree on the number of items ({sorted(m)})")
        for budget, arr, names in blocks:
            M, K = arr.shape
            frames.append(
                pd.DataFrame(
                    {
                        "system": name,
                        "budget": budget,
                        "artifact": np.repeat(np.array(names, dtype=object)[None, :], M, axis=0).ravel(),
                        "item": np.repeat(np.arange(M).astype(str), K),
                        "score": arr.astype(float).ravel(),
                    }
                )
            )
    return pd.concat(frames, ignore_index=True)


def merge_judge(
    human: pd.DataFrame,
    judge: pd.DataFrame,
    *,
    candidate: str = "candidate",
    item: str = "item",
    human_col: str = "loss_human",
    judge_col: str = "loss_judge",
) -> pd.DataFrame:
    """Join a human-label file and a judge-label file into R-AutoEval+'s long table.

    Rows only in the judge file become unlabelled (``loss_human`` NaN); every candidate must appear
    in both files.
    """
    h = map_columns(human, {"candidate": candidate, "item": item, "loss_human": human_col},
                    required=("candidate", "item", "loss_human"))
    j = map_columns(judge, {"candidate": candidate, "item": item, "loss_judge": judge_col},
                    required=("candidate", "item", "loss_judge"))
    for frame in (h, j):
        for c in ("candidate", "item"):
            frame[c] = frame[c].astype(str)
    ch, cj = set(h["candidate"]), set(j["candidate"])
    if ch != cj:
        only_h = sorted(ch - cj)[:5]
        only_j = sorted(cj - ch)[:5]
        raise AssayInputError(
            "the two files name different candidates: "
            + (f"only in the human-label file: {', '.join(only_h)}; " if only_h else "")
            + (f"only in the judge file: {', '.join(only_j)}" if only_j else "")
        )
    for name, frame in (("human-label", h), ("judge", j)):
        dup = frame.duplicated(["candidate", "item"], keep=False)
        if dup.any():
            raise AssayInputError(f"the {name} file repeats (candidate, item) at {describe_rows(frame.index[dup])}")
    extra = [c for c in h.columns if c not in ("candidate", "item", "loss_human") and c not in j.columns]
    return h[["candidate", "item", "loss_human", *extra]].merge(
        j[["candidate", "item", "loss_judge"]], on=["candidate", "item"], how="outer"
    )
