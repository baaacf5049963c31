"""FAQ's data layer: 0/1 answer tables -> the arrays FAQ's core takes (:func:`prepare_answers`,
:func:`prepare_protocol`).

A history is a models x items table of 0/1 answers (NaN = missing): a wide table (one row per model, the index,
and one column per item), a long ``model, item, score`` table, or an array. New models' answers come in the same
forms, without missing values (the estimand is the accuracy over every question), and are matched to the
history's items by id (as strings), in any column order.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, NamedTuple, Sequence

import numpy as np
import pandas as pd

from ..errors import AssayInputError

__all__ = ["FAQMatrix", "FAQAnswers", "FAQProtocolData", "as_matrix", "align_items", "prepare_answers", "int8_bytes",
           "prepare_protocol", "read_answers", "history_items"]


class FAQMatrix(NamedTuple):
    """A validated 0/1 matrix with its ids; unpacks as ``values, rows, items = as_matrix(...)``."""

    values: np.ndarray  # (rows, items) float: 0, 1, or NaN for missing
    rows: list[str]  # model ids
    items: list[str]  # item ids, as strings


class FAQAnswers(NamedTuple):
    """New models' answers with the columns in the history's item order."""

    Z: np.ndarray  # (M, N) 0/1
    models: list[str]  # the M model ids


class FAQProtocolData(NamedTuple):
    """What :func:`assay.faq.protocol` works on: the history and, when given, separate new models."""

    H: np.ndarray  # (models, N) history, NaN = missing
    rows: list[str]  # history model ids
    items: list[str]  # the N item ids
    Z_new: np.ndarray | None  # (M, N) new models' answers in the history's item order, or None (split the history)
    new_rows: list[str] | None  # their ids


def as_matrix(obj: Any, what: str, *, columns: Mapping[str, str] | None = None,
              allow_missing: bool = True) -> FAQMatrix:
    """A models x items 0/1 table (wide, long or an array) -> :class:`FAQMatrix` (values, row ids, item ids).

    Parameters
    ----------
    obj : a wide DataFrame (one row per model, the index; one column per item), a long DataFrame with the
        columns ``model, item, score`` (other names through ``columns``), a Series (one model), or an array.
    what : the table's name in error messages ("history", "new").
    columns : ``{"model": ..., "item": ..., "score": ...}`` names of a long table's columns.
    allow_missing : whether NaN (a missing answer) is accepted; a model with no answer at all never is.

    Returns
    -------
    FAQMatrix
        ``values`` (float, 0 / 1 / NaN), ``rows`` and ``items`` (ids as strings, each unique).
    """
    cols = {"model": "model", "item": "item", "score": "score", **dict(columns or {})}
    if isinstance(obj, pd.Series):
        obj = obj.to_frame().T
    if isinstance(obj, pd.DataFrame):
        if {cols["model"], cols["item"], cols["score"]} <= set(obj.columns) and obj.shape[1] <= 4:
            df = obj[[cols["model"], cols["item"], cols["score"]]].copy()
            df.columns = ["model", "item", "score"]
            df["model"] = df["model"].astype(str)
            df["item"] = df["item"].astype(str)
            dup = df.duplicated(["model", "item"], keep=False)
            if dup.any():
                r = df[dup].iloc[0]
                raise AssayInputError(f"{what}: {int(dup.sum())} duplicate (model, item) rows, e.g. model "
                                      f"{r['model']!r}, item {r['item']!r}; keep one score per pair")
            score = pd.to_numeric(df["score"], errors="coerce")
            bad = score.isna() & df["score"].notna()
            if bad.any():
                raise AssayInputError(f"{what}: score {df.loc[bad, 'score'].iloc[0]!r} is not a number; scores must be 0 or 1")
            df["score"] = score
            wide = df.pivot(index="model", columns="item", values="score")
            obj = wide
        rows = [str(r) for r in obj.index]
        items = [str(c) for c in obj.columns]
        numeric = all(pd.api.types.is_numeric_dtype(t) or pd.api.types.is_bool_dtype(t) for t in obj.dtypes)
        if numeric:  # the common case (a Parquet / CSV of 0/1): one conversion, no column-by-column pass
            H = obj.to_numpy(dtype=float, na_value=np.nan)
        else:
            try:
                H = obj.apply(pd.to_numeric, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
            except (TypeError, ValueError) as e:  # pragma: no cover - apply/to_numeric already coerced
                raise AssayInputError(f"{what}: values must be numeric 0/1 ({e})") from None
            raw = obj.to_numpy(dtype=object)
            coerced = np.isnan(H) & pd.notna(raw)
            if coerced.any():
                i, j = (int(a[0]) for a in np.nonzero(coerced))
                raise AssayInputError(f"{what}: cell (model {rows[i]!r}, item {items[j]!r}) = {raw[i, j]!r} is not a "
                                      "number; values must be 0, 1 or missing")
    else:
        try:
            H = np.asarray(obj, dtype=float)
        except (TypeError, ValueError) as e:
            raise AssayInputError(f"{what} must be a numeric models x items array or table with values 0/1 ({e})") from None
        if H.ndim == 1:
            H = H[None, :]
        if H.ndim != 2:
            raise AssayInputError(f"{what} must be 2-D (models x items), got shape {H.shape}")
        rows = [str(i) for i in range(H.shape[0])]
        items = [str(j) for j in range(H.shape[1])]
    if H.shape[0] == 0 or H.shape[1] == 0:
        raise AssayInputError(f"{what} is empty (shape {H.shape})")
    if len(set(items)) != len(items):
        dups = pd.Series(items)[pd.Series(items).duplicated()].unique()[:3]
        raise AssayInputError(f"{what}: duplicate item ids {', '.join(map(repr, dups))}")
    if len(set(rows)) != len(rows):
        dups = pd.Series(rows)[pd.Series(rows).duplicated()].unique()[:3]
        raise AssayInputError(f"{what}: duplicate model ids {', '.join(map(repr, dups))}")
    bad = ~(np.isnan(H) | (H == 0) | (H == 1))
    if bad.any():
        i, j = (int(a[0]) for a in np.nonzero(bad))
        raise AssayInputError(f"{what}: cell (model {rows[i]!r}, item {items[j]!r}) = {H[i, j]!r}; values must be 0 or 1 "
                              f"(binary correctness; {int(bad.sum())} bad cell(s))")
    if not allow_missing and np.isnan(H).any():
        i, j = (int(a[0]) for a in np.nonzero(np.isnan(H)))
        raise AssayInputError(f"{what}: missing answer for model {rows[i]!r}, item {items[j]!r} "
                              f"({int(np.isnan(H).sum())} missing); the estimand is the accuracy over the whole bank, so "
                              "offline evaluation needs every answer (query the rest live, or drop those items everywhere)")
    all_missing_rows = np.isnan(H).all(axis=1)
    if all_missing_rows.any():
        raise AssayInputError(f"{what}: model {rows[int(np.flatnonzero(all_missing_rows)[0])]!r} has no observed answer "
                              f"({int(all_missing_rows.sum())} such row(s)); drop it")
    return FAQMatrix(H, rows, items)


def align_items(items_hist: Sequence[str], items_new: Sequence[str], what: str) -> np.ndarray:
    """Column positions in the new table of each history item, so that ``Z[:, align_items(...)]`` is in the
    history's item order.

    Every item must appear in both lists (the estimand is the accuracy over the whole bank); otherwise
    :class:`~assay.errors.AssayInputError` names the items missing on each side, with ``what`` naming the new table.
    """
    pos = {it: j for j, it in enumerate(items_new)}
    missing = [it for it in items_hist if it not in pos]
    extra = set(items_new) - set(items_hist)
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"{len(missing)} history item(s) absent from {what} (e.g. {', '.join(map(repr, missing[:3]))})")
        if extra:
            parts.append(f"{len(extra)} item(s) of {what} not in the history (e.g. {', '.join(map(repr, sorted(extra)[:3]))})")
        raise AssayInputError("item ids of the history and " + what + " do not match: " + "; ".join(parts))
    return np.array([pos[it] for it in items_hist])


def prepare_answers(new: Any, items: Sequence[str], *, what: str = "new", label: str | None = None) -> FAQAnswers:
    """New models' answers (wide / long table, Series for one model, or array) -> :class:`FAQAnswers`.

    Every answer must be present (0 or 1) and the items must be exactly ``items`` (the history's), in any order;
    ``what`` names the table in messages about its cells, ``label`` (default ``what``) in a mismatch of items.
    """
    Z, models, new_items = as_matrix(new, what, allow_missing=False)
    return FAQAnswers(Z[:, align_items(items, new_items, label or what)], models)


def prepare_protocol(history: Any, new_models: Any = None) -> FAQProtocolData:
    """The validation protocol's inputs -> :class:`FAQProtocolData` (the history may have missing answers; new
    models may not)."""
    H, rows, items = as_matrix(history, "history")
    if new_models is None:
        return FAQProtocolData(H, rows, items, None, None)
    Z, new_rows = prepare_answers(new_models, items, what="new_models")
    return FAQProtocolData(H, rows, items, Z, new_rows)


def read_answers(path: str | Path, what: str = "answers"):
    """Models' 0/1 answers from a file: a wide table (a ``model`` column, or the first column, is the model id; one
    column per item), a long one (``model, item, score``), or an lm-eval / inspect / HELM log (read by
    :mod:`assay.ingest`). ``what`` names the file in errors. The form :func:`assay.faq.evaluate` takes."""
    import pandas as pd

    from . import read_table

    path = Path(path)
    table = read_table(path, text_columns=("model", "item"))
    if "source" in table.columns and {"model", "item", "score", "task"} <= set(table.columns):
        # an lm-eval / inspect / HELM log read by assay.ingest: first repeat, items keyed by task when several
        t = table[table["repeat"] == table["repeat"].min()] if "repeat" in table.columns else table
        if "metric" in t.columns and t["metric"].nunique() > 1:
            t = t[t["metric"] == t["metric"].iloc[0]]
        item = t["item"] if t["task"].nunique() == 1 else t["task"] + "/" + t["item"]
        return pd.DataFrame({"model": t["model"].to_numpy(), "item": item.to_numpy(), "score": t["score"].to_numpy()})
    if {"model", "item", "score"} <= set(table.columns) and table.shape[1] <= 4:
        return table
    if table.shape[1] < 2:
        raise AssayInputError(f"{what} {path}: expected a model id column and one column per item, or long columns "
                              "model, item, score")
    key = "model" if "model" in table.columns else table.columns[0]
    table = table.set_index(key)
    table.index = table.index.astype(str)
    return table


def history_items(hist) -> list[str]:
    """The question ids of an FAQ history as :func:`read_answers` returns it (long or wide)."""
    if isinstance(hist, pd.DataFrame) and {"model", "item", "score"} <= set(hist.columns):
        return list(dict.fromkeys(hist["item"].astype(str)))
    return [str(x) for x in hist.columns]


def int8_bytes(H: np.ndarray, rows_per_block: int = 256):
    """The bytes of ``H`` as int8 with -1 for NaN (what the cache keys hash), built in blocks of rows, so a large
    history never gets a second models x items float64 copy for it."""
    parts = []
    for i in range(0, H.shape[0], rows_per_block):
        blk = H[i:i + rows_per_block]
        parts.append(np.where(np.isnan(blk), -1, blk).astype(np.int8).tobytes())
    return b"".join(parts)
