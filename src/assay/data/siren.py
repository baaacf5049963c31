"""SIREN's data layer: validate a tidy (system, budget, artifact, item, score) table and pivot it into one
items x artifacts array per (system, budget) cell (:func:`prepare`, :func:`siren_design`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np
import pandas as pd

from ..errors import AssayInputError, describe_rows
from .tables import check_scores, check_unique, format_budget, map_columns, parse_budget

__all__ = ["SirenDesign", "prepare", "siren_design", "SIREN_COLUMNS", "score_array"]

SIREN_COLUMNS = ("system", "budget", "artifact", "item", "score")


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
    df = _siren_frame(table, columns)
    _check_labels(df)
    _parse_budgets(df)
    keys = ["system", "budget", "artifact", "item"]
    check_unique(df, keys)
    df["score"] = check_scores(df, "score", allow_missing=(on_missing == "drop-items"))

    all_items = pd.Index(pd.unique(df["item"]))
    dropped = _dropped_items(df, all_items, on_missing)
    if dropped:
        df = df[~df["item"].isin(dropped)]
    items = [i for i in all_items if i not in dropped]
    if len(items) < min_items:
        raise AssayInputError(
            f"only {len(items)} complete items remain; SIREN needs at least {min_items} "
            "(each split needs items on both sides, and intervals need many more)."
        )
    cells, scores, artifacts = _cell_arrays(df, items)
    return SirenDesign(items=items, cells=cells, scores=scores, artifacts=artifacts,
                       dropped_items=sorted(dropped))


def _siren_frame(table: pd.DataFrame, columns: Mapping[str, str | None] | None) -> pd.DataFrame:
    """A copy of the table with canonical column names, one system and one budget where those columns are absent."""
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
    return df


def _check_labels(df: pd.DataFrame) -> None:
    """Require a non-blank system, artifact and item (made strings, in place) and a budget on every row."""
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


def _parse_budgets(df: pd.DataFrame) -> None:
    """Replace the budget column, in place, by parsed budgets: all numbers or all labels."""
    uniq = pd.unique(df["budget"])
    parsed = {b: parse_budget(b) for b in uniq}
    if len({type(v) for v in parsed.values()}) > 1:
        texts = [repr(b) for b, v in parsed.items() if isinstance(v, str)][:3]
        raise AssayInputError(
            f"column 'budget' mixes numbers and labels ({', '.join(texts)}); use numbers (suffixes K, M, B "
            "allowed, e.g. 1.5M) or labels throughout, with 0 for the untuned default."
        )
    df["budget"] = df["budget"].map(parsed).astype(object if isinstance(next(iter(parsed.values())), str) else float)


def _dropped_items(df: pd.DataFrame, all_items: pd.Index, on_missing: str) -> set[str]:
    """The items to drop everywhere (some cell lacks them, or a score is missing); a ragged design is refused
    unless ``on_missing="drop-items"``."""
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
    return dropped


def _cell_arrays(df: pd.DataFrame, items: list[str]):
    """The cells in order (system order of appearance, then budget) and each cell's items x artifacts scores and
    artifact names."""
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
    return cells, scores, artifacts


def prepare(
    table: Any,
    *,
    columns: Mapping[str, str | None] | None = None,
    on_missing: str = "error",
) -> SirenDesign:
    """SIREN's ``prepare`` step: whatever the caller holds -> a validated :class:`SirenDesign`.

    Parameters
    ----------
    table : DataFrame, mapping, ndarray or SirenDesign
        * a tidy long DataFrame (``system, budget, artifact, item, score``; see :func:`siren_design`, which
          ``columns`` and ``on_missing`` are passed to);
        * a mapping ``{(system, budget): Z}`` or ``{system: Z}`` (budget 1) where ``Z`` is an items x artifacts
          array of scores in [0, 1] (a 1-D array is one artifact), every cell on the same items in the same
          order; artifacts are named ``a0, a1, ...`` and items ``0 .. M-1``. Float, integer and bool arrays are
          kept without a copy (0/1 scores stored as int8 or bool take an eighth of the memory of float64);
        * one items x artifacts array (a single cell ``("system", 1.0)``);
        * a :class:`SirenDesign`, returned as it is.

    Returns
    -------
    SirenDesign
        One ``M x K_c`` array per cell, cells in the order given (tables: system order of appearance, then
        budget).
    """
    if isinstance(table, SirenDesign):
        return table
    if isinstance(table, pd.DataFrame):
        return siren_design(table, columns=columns, on_missing=on_missing)
    if isinstance(table, np.ndarray):
        table = {("system", 1.0): table}
    if isinstance(table, Mapping):
        return _design_from_arrays(table)
    raise AssayInputError(f"cannot evaluate a {type(table).__name__}: give a tidy DataFrame, a dict of arrays or an array")


def score_array(Z: Any) -> np.ndarray:
    """A cell's scores without a float64 copy of compact storage: float and integer arrays are kept as given (0/1
    scores held as int8 take an eighth of the memory of float64), bool is viewed as uint8 (no copy), anything else
    is converted to float64. SIREN's estimator converts a block of items at a time."""
    Z = np.asarray(Z)
    if Z.dtype == np.bool_:
        return Z.view(np.uint8)
    if Z.dtype.kind in "iuf":
        return Z
    return np.asarray(Z, dtype=float)


def _design_from_arrays(table: Mapping[Any, Any]) -> SirenDesign:
    scores: dict[tuple[str, float | str], np.ndarray] = {}
    arts: dict[tuple[str, float | str], list[str]] = {}
    cells: list[tuple[str, float | str]] = []
    M = None
    for key, Z in table.items():
        if isinstance(key, tuple) and len(key) != 2:
            raise AssayInputError(f"cell key {key!r}: use (system, budget) or a system name")
        system, budget = key if isinstance(key, tuple) else (key, 1.0)
        budget = parse_budget(budget)
        try:
            Z = score_array(Z)
        except (TypeError, ValueError) as exc:
            raise AssayInputError(f"cell {key!r}: scores must be numbers in [0, 1] ({exc})") from None
        if Z.ndim == 1:
            Z = Z[:, None]
        if Z.ndim != 2:
            raise AssayInputError(f"cell {key!r}: expected an items x artifacts array, got shape {Z.shape}")
        if M is None:
            M = Z.shape[0]
        if Z.shape[0] != M:
            raise AssayInputError(
                f"ragged design: cell {key!r} has {Z.shape[0]} items, the first cell has {M}; every cell needs the same items"
            )
        if not np.all(np.isfinite(Z)):
            bad = np.argwhere(~np.isfinite(Z))[:3].tolist()
            raise AssayInputError(f"cell {key!r} has NaN/inf scores at (item, artifact) {bad}; scores must be in [0, 1]")
        if (Z < 0).any() or (Z > 1).any():
            bad = np.argwhere((Z < 0) | (Z > 1))[:3].tolist()
            raise AssayInputError(f"cell {key!r} has scores outside [0, 1] at (item, artifact) {bad}")
        cell = (str(system), budget)
        if cell in scores:
            raise AssayInputError(f"duplicate cell {cell!r}")
        scores[cell], arts[cell] = Z, [f"a{k}" for k in range(Z.shape[1])]
        cells.append(cell)
    if not cells:
        raise AssayInputError("no cells given")
    if M < 4:
        raise AssayInputError(f"only {M} items; SIREN needs at least 4")
    return SirenDesign(items=list(map(str, range(M))), cells=cells, scores=scores, artifacts=arts)
