"""Preference data: on which question, which model was preferred to which, by whom.

The tidy table every preference method reads: one row per judgment, ``item`` (the question), ``model_a``,
``model_b``, ``preference`` (model_a's share of the win: 1, 0.5 for a tie, 0, or a judge's weighted value in
[0, 1]), and where known ``judge`` (who gave it: a judge model or a person), ``game`` (the position-swapped repeats
of one comparison: one cluster, never independent draws) and ``weight`` (a judgment counted several times, as
Arena-Hard-Auto counts a strong verdict as three wins; 1 by default).

:func:`read_preferences` reads that table, or:

* a **verdict column** of strings (``verdict=COLUMN``): ``A>>B`` / ``A>B`` (model_a preferred), ``A=B`` / ``tie`` /
  ``A~B`` (a tie), ``B>A`` / ``B>>A`` / ``A<B`` / ``A<<B`` (model_b preferred), case and spaces ignored. A strong
  verdict (``>>``) counts as ``strong_weight`` judgments (default 1: a strong win is a win; Arena-Hard-Auto's
  three-win weighting is ``strong_weight=3``, an option, never a silent default);
* **Chatbot Arena battles** (``model_a, model_b, winner`` with ``winner`` one of ``model_a``, ``model_b``, ``tie``,
  ``tie (bothbad)``; the item is ``question_id`` where present, else each battle its own);
* **AlpacaEval annotations** (``annotations.json``: ``instruction``, ``generator_1``, ``generator_2``,
  ``preference`` in [1, 2], 1 when ``output_1`` is preferred, 2 when ``output_2`` is, 1.5 a tie, and
  ``annotator``): the item is the instruction, model_a ``generator_1``, the preference ``2 - preference``.

A judgment the reader cannot use is counted, never silently dropped: an empty AlpacaEval preference (an annotation
that failed) is left out and counted in ``attrs["unparsed"]``; a model compared with itself, a preference outside
[0, 1] or an unknown verdict is refused, naming the row.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd

from ..errors import AssayInputError

__all__ = ["read_preferences", "parse_verdicts", "VERDICTS", "COLUMNS"]

#: the tidy table's columns (``judge``, ``game`` and ``weight`` where known)
COLUMNS = ("item", "model_a", "model_b", "preference", "judge", "game", "weight")

#: each verdict string (lower case, spaces removed) -> (model_a's share of the win, strong)
VERDICTS: dict[str, tuple[float, bool]] = {
    "a>>b": (1.0, True), "a>b": (1.0, False), "b<a": (1.0, False), "b<<a": (1.0, True),
    "a=b": (0.5, False), "a~b": (0.5, False), "tie": (0.5, False), "b=a": (0.5, False),
    "b>a": (0.0, False), "b>>a": (0.0, True), "a<b": (0.0, False), "a<<b": (0.0, True),
}

_ARENA_WINNER = {"model_a": 1.0, "model_b": 0.0, "tie": 0.5, "tie (bothbad)": 0.5}


def parse_verdicts(values: Any, *, strong_weight: float = 1.0, rows: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """Preferences and weights from verdict strings (module docstring): ``A>>B`` -> (1, strong_weight), ``A>B`` ->
    (1, 1), ``tie`` -> (0.5, 1), ...

    Parameters
    ----------
    values : sequence of str
        The verdicts.
    strong_weight : float, default 1
        How many judgments a strong verdict (``>>``) counts as (Arena-Hard-Auto: 3).
    rows : sequence, optional
        The rows' labels, for the error naming a bad one (default: 1, 2, ...).

    Returns
    -------
    tuple of ndarray
        (preference, weight), each (n,).

    Raises
    ------
    AssayInputError
        On an unknown verdict (naming its row), or a strong_weight that is not a number >= 1.

    Examples
    --------
    >>> p, w = parse_verdicts(["A>>B", "a > b", "Tie", "B>A"], strong_weight=3)
    >>> p.tolist(), w.tolist()
    ([1.0, 1.0, 0.5, 0.0], [3.0, 1.0, 1.0, 1.0])
    """
    if isinstance(strong_weight, bool) or not isinstance(strong_weight, (int, float)) or not (
            math.isfinite(strong_weight) and strong_weight >= 1):
        raise AssayInputError(f"strong_weight must be a number >= 1 (Arena-Hard-Auto counts a strong verdict as 3); "
                              f"got {strong_weight!r}")
    values = list(values)
    labels = list(rows) if rows is not None else list(range(1, len(values) + 1))
    pref = np.empty(len(values))
    weight = np.ones(len(values))
    for k, v in enumerate(values):
        got = VERDICTS.get(re.sub(r"\s+", "", str(v)).lower()) if isinstance(v, str) else None
        if got is None:
            raise AssayInputError(f"row {labels[k]}: unknown verdict {v!r}; write one of A>>B, A>B, A=B, tie, B>A, "
                                  "B>>A (model_a is A)")
        pref[k] = got[0]
        weight[k] = strong_weight if got[1] else 1.0
    return pref, weight


def _read(source: Any) -> pd.DataFrame:
    """A DataFrame, a list of records, or a file: CSV / TSV / Parquet / JSONL, or JSON (a list of records, as
    AlpacaEval's annotations.json)."""
    if isinstance(source, pd.DataFrame):
        return source.copy()
    if isinstance(source, list):
        return pd.DataFrame(source)
    path = Path(source)
    if not path.exists():
        raise AssayInputError(f"{path}: no such file")
    if path.suffix.lower() == ".json":
        try:
            data = json.loads(path.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise AssayInputError(f"{path}: not JSON ({e})") from None
        if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
            raise AssayInputError(f"{path}: expected a list of records (as AlpacaEval's annotations.json)")
        return pd.DataFrame(data)
    from .tables import read_plain

    return read_plain(path)


def _alpaca(t: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
    pref = pd.to_numeric(t["preference"], errors="coerce")
    bad = t["preference"].notna() & pref.isna()
    if bad.any():
        k = int(np.flatnonzero(bad.to_numpy())[0])
        raise AssayInputError(f"row {k + 1}: AlpacaEval preference {t['preference'].iloc[k]!r} is not a number in "
                              "[1, 2]")
    keep = pref.notna().to_numpy()
    out = pd.DataFrame({"item": t["instruction"].astype(str), "model_a": t["generator_1"], "model_b": t["generator_2"],
                        "preference": 2.0 - pref, "judge": t["annotator"] if "annotator" in t else None})
    return out[keep], {"empty preference (a failed annotation)": int((~keep).sum())}


def _arena(t: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
    w = t["winner"].astype(str).str.strip().str.lower()
    unknown = ~w.isin(list(_ARENA_WINNER))
    if unknown.any():
        k = int(np.flatnonzero(unknown.to_numpy())[0])
        raise AssayInputError(f"row {k + 1}: unknown winner {t['winner'].iloc[k]!r}; Chatbot Arena's are model_a, "
                              "model_b, tie and tie (bothbad)")
    item = t["question_id"].astype(str) if "question_id" in t else pd.Series([f"battle{i}" for i in range(len(t))])
    out = pd.DataFrame({"item": item.to_numpy(), "model_a": t["model_a"].to_numpy(), "model_b": t["model_b"].to_numpy(),
                        "preference": w.map(_ARENA_WINNER).to_numpy(),
                        "judge": t["judge"].to_numpy() if "judge" in t else None})
    return out, {}


def read_preferences(source: Any, *, columns: Mapping[str, str] | None = None, verdict: str | None = None,
                     strong_weight: float = 1.0) -> pd.DataFrame:
    """The tidy preference table (module docstring) from a table, a verdict column, Chatbot Arena battles or
    AlpacaEval annotations.

    Parameters
    ----------
    source : DataFrame, list of records or path
        The judgments.
    columns : mapping, optional
        The source's column for each tidy name (``{"item": "question_id", "model_a": "left", ...}``).
    verdict : str, optional
        A column of verdict strings (``A>B``, ``tie``, ...) to read the preference from.
    strong_weight : float, default 1
        How many judgments a strong verdict counts as (``verdict=`` only; Arena-Hard-Auto: 3).

    Returns
    -------
    DataFrame
        ``item``, ``model_a``, ``model_b`` (text), ``preference`` (float in [0, 1]), ``weight``, and ``judge`` /
        ``game`` where known; ``attrs["unparsed"]`` counts the judgments left out, by reason.

    Raises
    ------
    AssayInputError
        On a missing column, a missing item or model, a model compared with itself, a preference outside [0, 1] or
        an unknown verdict, each naming the (first) row.

    Examples
    --------
    >>> t = pd.DataFrame({"item": ["q1", "q1", "q2"], "model_a": ["x", "x", "y"], "model_b": ["y", "y", "x"],
    ...                   "verdict": ["A>>B", "B>A", "tie"]})
    >>> p = read_preferences(t, verdict="verdict", strong_weight=3)
    >>> p[["preference", "weight"]].to_dict("list")
    {'preference': [1.0, 0.0, 0.5], 'weight': [3.0, 1.0, 1.0]}
    """
    t = _read(source)
    if t.columns.duplicated().any():
        raise AssayInputError(f"column(s) {', '.join(sorted(set(map(str, t.columns[t.columns.duplicated()]))))} "
                              "appear more than once")
    t = t.rename(columns={v: k for k, v in (columns or {}).items()})
    unparsed: dict = {}
    if verdict is None and {"generator_1", "generator_2", "preference", "instruction"} <= set(t.columns):
        t, unparsed = _alpaca(t)
    elif verdict is None and {"model_a", "model_b", "winner"} <= set(t.columns) and "preference" not in t.columns:
        t, unparsed = _arena(t)
    elif verdict is not None:
        if verdict not in t.columns:
            raise AssayInputError(f"verdict={verdict!r}: no such column; the columns are "
                                  f"{', '.join(map(str, t.columns))}")
        t["preference"], t["weight"] = parse_verdicts(t[verdict], strong_weight=strong_weight,
                                                      rows=range(1, len(t) + 1))
    return _checked(t, unparsed)


def _checked(t: pd.DataFrame, unparsed: dict) -> pd.DataFrame:
    missing = [c for c in ("item", "model_a", "model_b", "preference") if c not in t.columns]
    if missing:
        raise AssayInputError(f"the preference table has no column(s) {', '.join(missing)}; it needs item, model_a, "
                              "model_b and preference (or verdict= naming a column of A>B / tie / B>A), or is "
                              "Chatbot Arena battles (model_a, model_b, winner) or AlpacaEval annotations; name yours "
                              "with columns={'item': 'YOUR_COLUMN', ...}")
    if t.empty:
        raise AssayInputError("the preference table has no judgments")
    rows = np.arange(1, len(t) + 1)
    for c in ("item", "model_a", "model_b"):
        empty = t[c].isna().to_numpy()
        if empty.any():
            raise AssayInputError(f"row {rows[empty][0]}: no {c}")
    out = pd.DataFrame({c: t[c].astype(str).to_numpy() for c in ("item", "model_a", "model_b")})
    same = (out["model_a"] == out["model_b"]).to_numpy()
    if same.any():
        k = int(np.flatnonzero(same)[0])
        raise AssayInputError(f"row {rows[k]}: model {out['model_a'].iloc[k]!r} is compared with itself")
    pref = pd.to_numeric(t["preference"], errors="coerce").to_numpy(dtype=float)
    bad = ~np.isfinite(pref) | (pref < 0) | (pref > 1)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        v = t["preference"].iloc[k]
        v = v.item() if isinstance(v, np.generic) else v
        raise AssayInputError(f"row {rows[k]}: preference {v!r} is not a number in [0, 1] "
                              "(model_a's share of the win: 1, 0.5 a tie, 0)")
    out["preference"] = pref
    weight = pd.to_numeric(t["weight"], errors="coerce").to_numpy(dtype=float) if "weight" in t else np.ones(len(t))
    if (~np.isfinite(weight) | (weight <= 0)).any():
        k = int(np.flatnonzero(~np.isfinite(weight) | (weight <= 0))[0])
        raise AssayInputError(f"row {rows[k]}: weight {float(weight[k])!r} is not a positive number")
    out["weight"] = weight
    for c in ("judge", "game"):
        if c in t.columns and t[c].notna().any():
            out[c] = t[c].astype(str).where(t[c].notna(), None).to_numpy()
    out.attrs["unparsed"] = {k: v for k, v in unparsed.items() if v}
    return out
