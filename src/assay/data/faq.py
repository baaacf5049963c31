"""FAQ's data layer: 0/1 answer tables -> the arrays FAQ's core takes (:func:`prepare_answers`,
:func:`prepare_protocol`).

A history is a models x items table of 0/1 answers (NaN = missing): a wide table (one row per model, the index,
and one column per item), a long ``model, item, score`` table, or an array. New models' answers come in the same
forms, without missing values (the estimand is the accuracy over every question), and are matched to the
history's items by id (as strings), in any column order.

Inside FAQ a validated history is held as int8 *codes*: 0, 1, and :data:`MISSING` (-1) for a missing answer
(``as_matrix(..., codes=True)``, :func:`to_codes`): 25 MB at the paper's 2,112 x 12,032, where a float64 copy
with NaN is 203 MB. Tables are validated and converted a block of rows at a time, so no models x items float64
copy of a history is made on the way (except for a wide table with non-numeric cells, which is coerced whole).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, NamedTuple, Sequence

import numpy as np
import pandas as pd

from ..errors import AssayInputError

__all__ = ["FAQMatrix", "scan_blocks", "FAQAnswers", "FAQProtocolData", "as_matrix", "align_items", "prepare_answers", "int8_bytes",
           "prepare_protocol", "read_answers", "history_items", "to_codes", "observed", "MISSING"]

#: the int8 code of a missing answer in a history held as codes (0, 1, MISSING)
MISSING = -1

#: rows per block when a table is validated and converted (256 x 12,032 float64 is 25 MB)
_ROWS = 256


class FAQMatrix(NamedTuple):
    """A validated 0/1 matrix with its ids; unpacks as ``values, rows, items = as_matrix(...)``."""

    values: np.ndarray  # (rows, items) float: 0, 1, or NaN for missing; with codes=True int8: 0, 1, or MISSING (-1)
    rows: list[str]  # model ids
    items: list[str]  # item ids, as strings


class FAQAnswers(NamedTuple):
    """New models' answers with the columns in the history's item order."""

    Z: np.ndarray  # (M, N) 0/1
    models: list[str]  # the M model ids


class FAQProtocolData(NamedTuple):
    """What :func:`assay.faq.protocol` works on: the history and, when given, separate new models."""

    H: np.ndarray  # (models, N) history, NaN = missing (float); with codes=True int8 codes, MISSING (-1) = missing
    rows: list[str]  # history model ids
    items: list[str]  # the N item ids
    Z_new: np.ndarray | None  # (M, N) new models' answers in the history's item order, or None (split the history)
    new_rows: list[str] | None  # their ids


def to_codes(H: np.ndarray) -> np.ndarray:
    """A history's int8 codes (0, 1, :data:`MISSING` = -1) from a float array with NaN for missing.

    Converted a block of rows at a time (no second models x items float64 array); an int8 array is taken to be codes
    already and returned as it is. The values are not checked: give it validated histories (:func:`as_matrix`).

    Parameters
    ----------
    H : ndarray (models, items)
        A history as float (0, 1, NaN for missing), integer or int8 codes.

    Returns
    -------
    ndarray of int8 (models, items)
        The codes.

    Examples
    --------
    >>> import numpy as np
    >>> to_codes(np.array([[1.0, np.nan], [0.0, 1.0]])).tolist()
    [[1, -1], [0, 1]]
    """
    H = np.asarray(H)
    if H.dtype == np.int8:
        return H
    if H.dtype.kind in "biu":
        return H.astype(np.int8)
    C = np.empty(H.shape, dtype=np.int8)
    for i in range(0, H.shape[0], _ROWS):
        blk = H[i:i + _ROWS]
        np.copyto(C[i:i + _ROWS], np.where(np.isnan(blk), MISSING, blk), casting="unsafe")
    return C


def observed(H: np.ndarray) -> np.ndarray:
    """The observed-entry mask (bool) of a history as float (NaN = missing) or int8 codes (:data:`MISSING`).

    Parameters
    ----------
    H : ndarray (models, items)
        A history as float or int8 codes.

    Returns
    -------
    ndarray of bool (models, items)
        True where the entry is observed.

    Examples
    --------
    >>> import numpy as np
    >>> observed(np.array([[1.0, np.nan], [0.0, 1.0]])).tolist()
    [[True, False], [True, True]]
    """
    H = np.asarray(H)
    return H >= 0 if H.dtype == np.int8 else ~np.isnan(H)


def _from_codes(C: np.ndarray) -> np.ndarray:
    """int8 codes -> float64 with NaN for missing (the public form of ``FAQMatrix.values``)."""
    H = C.astype(np.float64)
    H[C < 0] = np.nan
    return H


class _Scan(NamedTuple):
    """What a block-wise validation found: the codes and the first offending cells with their counts."""

    codes: np.ndarray  # int8, MISSING = -1 (meaningless where bad cells were found)
    bad: tuple | None  # (i, j, value) of the first cell that is not 0 / 1 / NaN, row-major order
    n_bad: int
    missing: tuple | None  # (i, j) of the first missing cell
    n_missing: int
    empty_rows: np.ndarray  # bool per row: no observed cell


def scan_blocks(shape: tuple[int, int], block) -> _Scan:
    """Validate and convert a models x items table given as ``block(i0, i1) -> float64 rows i0:i1``, a block of rows
    at a time: only one block of float64 rows is alive at once."""
    m, n = shape
    C = np.empty((m, n), dtype=np.int8)
    bad = missing = None
    n_bad = n_missing = 0
    empty = np.zeros(m, dtype=bool)
    for i in range(0, m, _ROWS):
        H = block(i, min(i + _ROWS, m))
        nan = np.isnan(H)
        one = H == 1
        b = ~(nan | one | (H == 0))
        if b.any():
            n_bad += int(b.sum())
            if bad is None:
                r, c = (int(a[0]) for a in np.nonzero(b))
                bad = (i + r, c, H[r, c])
        if nan.any():
            n_missing += int(nan.sum())
            if missing is None:
                r, c = (int(a[0]) for a in np.nonzero(nan))
                missing = (i + r, c)
            empty[i:i + H.shape[0]] = nan.all(axis=1)
        blk = C[i:i + H.shape[0]]
        np.copyto(blk, one, casting="unsafe")
        blk[nan] = MISSING
    return _Scan(C, bad, n_bad, missing, n_missing, empty)


def _frame_block(df: pd.DataFrame):
    return lambda i0, i1: df.iloc[i0:i1].to_numpy(dtype=float, na_value=np.nan)


def _array_block(A: np.ndarray):
    return lambda i0, i1: A[i0:i1].astype(np.float64)


def _long_codes(df: pd.DataFrame, what: str) -> FAQMatrix:
    """A validated long ``model, item, score`` table (ids as strings, scores numeric or NaN) -> the codes of its wide
    form (models and items in sorted order, as ``DataFrame.pivot`` gives them; an absent pair is missing), without
    building the wide float64 table."""
    r_code, r_ids = pd.factorize(df["model"], sort=True)
    c_code, c_ids = pd.factorize(df["item"], sort=True)
    rows = [str(r) for r in r_ids]
    items = [str(c) for c in c_ids]
    score = df["score"].to_numpy(dtype=float, na_value=np.nan)
    if len(rows) == 0 or len(items) == 0:
        raise AssayInputError(f"{what} is empty (shape {(len(rows), len(items))})")
    nan = np.isnan(score)
    bad = ~(nan | (score == 0) | (score == 1))
    if bad.any():
        # the first bad cell of the wide table in row-major order, as the wide check reports it
        sel = np.flatnonzero(bad)
        f = sel[np.lexsort((c_code[sel], r_code[sel]))[0]]
        raise AssayInputError(f"{what}: cell (model {rows[r_code[f]]!r}, item {items[c_code[f]]!r}) = "
                              f"{np.float64(score[f])!r}; values must be 0 or 1 (binary correctness; {int(bad.sum())} "
                              "bad cell(s))")
    C = np.full((len(rows), len(items)), MISSING, dtype=np.int8)
    ok = ~nan
    C[r_code[ok], c_code[ok]] = score[ok].astype(np.int8)
    return FAQMatrix(C, rows, items)


def as_matrix(obj: Any, what: str, *, columns: Mapping[str, str] | None = None,
              allow_missing: bool = True, codes: bool = False) -> FAQMatrix:
    """A models x items 0/1 table (wide, long or an array) -> :class:`FAQMatrix` (values, row ids, item ids).

    Parameters
    ----------
    obj : a wide DataFrame (one row per model, the index; one column per item), a long DataFrame with the
        columns ``model, item, score`` (other names through ``columns``), a Series (one model), an array, or an
        :class:`FAQMatrix` (already validated: returned in the form asked for).
    what : the table's name in error messages ("history", "new").
    columns : ``{"model": ..., "item": ..., "score": ...}`` names of a long table's columns.
    allow_missing : whether NaN (a missing answer) is accepted; a model with no answer at all never is.
    codes : False (default): ``values`` is float64 (0 / 1 / NaN). True: int8 codes (0 / 1 / :data:`MISSING` = -1),
        an eighth of the memory (what FAQ holds internally). Either way the table is validated a block of rows
        at a time, without a whole models x items float64 copy (except a wide table with non-numeric cells).

    Returns
    -------
    FAQMatrix
        ``values`` (float, 0 / 1 / NaN; or int8 codes), ``rows`` and ``items`` (ids as strings, each unique).
    """
    if isinstance(obj, FAQMatrix):
        return _revalidated(obj, what, allow_missing, codes)
    cols = {"model": "model", "item": "item", "score": "score", **dict(columns or {})}
    long_done = block = None
    if isinstance(obj, pd.Series):
        obj = obj.to_frame().T
    if isinstance(obj, pd.DataFrame):
        if {cols["model"], cols["item"], cols["score"]} <= set(obj.columns) and obj.shape[1] <= 4:
            long_done = _long_table(obj, cols, what)
            rows, items = long_done.rows, long_done.items
            shape = long_done.values.shape
        else:
            rows, items, shape, block = _wide_table(obj, what)
    else:
        rows, items, shape, block = _array_table(obj, what)
    _check_ids(what, shape, rows, items)
    if long_done is not None:
        C, n_missing, first_missing, empty_rows = _missing_codes(long_done.values)
    else:
        C, n_missing, first_missing, empty_rows = _scanned_codes(what, shape, block, rows, items)
    _check_answered(what, rows, items, allow_missing, n_missing, first_missing, empty_rows)
    return FAQMatrix(C if codes else _from_codes(C), rows, items)


def _revalidated(obj: FAQMatrix, what: str, allow_missing: bool, codes: bool) -> FAQMatrix:
    """An already validated :class:`FAQMatrix` in the form asked for (missing answers refused if not allowed)."""
    C = to_codes(obj.values)
    if not allow_missing and (C < 0).any():
        i, j = (int(a[0]) for a in np.nonzero(C < 0))
        raise AssayInputError(f"{what}: missing answer for model {obj.rows[i]!r}, item {obj.items[j]!r} "
                              f"({int((C < 0).sum())} missing); the estimand is the accuracy over the whole bank, "
                              "so offline evaluation needs every answer (query the rest live, or drop those items "
                              "everywhere)")
    return FAQMatrix(C if codes else _from_codes(C), list(obj.rows), list(obj.items))


def _long_table(obj: pd.DataFrame, cols: Mapping[str, str], what: str) -> FAQMatrix:
    """A long ``model, item, score`` table (columns named by ``cols``) checked (one numeric score per pair) -> codes."""
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
    return _long_codes(df, what)


def _wide_table(obj: pd.DataFrame, what: str):
    """A wide table's row ids, item ids, shape and row-block reader (non-numeric cells coerced, a non-number
    refused)."""
    rows = [str(r) for r in obj.index]
    items = [str(c) for c in obj.columns]
    numeric = all(pd.api.types.is_numeric_dtype(t) or pd.api.types.is_bool_dtype(t) for t in obj.dtypes)
    if not numeric:
        try:
            num = obj.apply(pd.to_numeric, errors="coerce")
        except (TypeError, ValueError) as e:  # pragma: no cover - apply/to_numeric already coerced
            raise AssayInputError(f"{what}: values must be numeric 0/1 ({e})") from None
        raw = obj.to_numpy(dtype=object)
        coerced = num.isna().to_numpy() & pd.notna(raw)
        if coerced.any():
            i, j = (int(a[0]) for a in np.nonzero(coerced))
            raise AssayInputError(f"{what}: cell (model {rows[i]!r}, item {items[j]!r}) = {raw[i, j]!r} is not "
                                  "a number; values must be 0, 1 or missing")
        del raw, coerced
        obj = num
    return rows, items, obj.shape, _frame_block(obj)


def _array_table(obj: Any, what: str):
    """An array's row ids, item ids, shape and row-block reader (a 1-D array is one model)."""
    try:
        A = np.asarray(obj)
        if A.dtype.kind not in "biuf":
            A = np.asarray(obj, dtype=float)
    except (TypeError, ValueError) as e:
        raise AssayInputError(f"{what} must be a numeric models x items array or table with values 0/1 ({e})") from None
    if A.ndim == 1:
        A = A[None, :]
    if A.ndim != 2:
        raise AssayInputError(f"{what} must be 2-D (models x items), got shape {A.shape}")
    rows = [str(i) for i in range(A.shape[0])]
    items = [str(j) for j in range(A.shape[1])]
    return rows, items, A.shape, _array_block(A)


def _check_ids(what: str, shape: tuple[int, int], rows: list[str], items: list[str]) -> None:
    """Refuse an empty table and duplicate item or model ids."""
    if shape[0] == 0 or shape[1] == 0:
        raise AssayInputError(f"{what} is empty (shape {shape})")
    if len(set(items)) != len(items):
        dups = pd.Series(items)[pd.Series(items).duplicated()].unique()[:3]
        raise AssayInputError(f"{what}: duplicate item ids {', '.join(map(repr, dups))}")
    if len(set(rows)) != len(rows):
        dups = pd.Series(rows)[pd.Series(rows).duplicated()].unique()[:3]
        raise AssayInputError(f"{what}: duplicate model ids {', '.join(map(repr, dups))}")


def _missing_codes(C: np.ndarray):
    """Codes with their missing count, first missing cell and rows without an observed answer."""
    miss = C < 0
    n_missing = int(miss.sum())
    first_missing = tuple(int(a[0]) for a in np.nonzero(miss)) if n_missing else None
    empty_rows = miss.all(axis=1)
    return C, n_missing, first_missing, empty_rows


def _scanned_codes(what: str, shape: tuple[int, int], block, rows: list[str], items: list[str]):
    """A wide table or array scanned a block of rows at a time into codes (a value other than 0 / 1 / NaN refused),
    with its missing count, first missing cell and rows without an observed answer."""
    sc = scan_blocks(shape, block)
    if sc.bad is not None:
        i, j, v = sc.bad
        raise AssayInputError(f"{what}: cell (model {rows[i]!r}, item {items[j]!r}) = {np.float64(v)!r}; values "
                              f"must be 0 or 1 (binary correctness; {sc.n_bad} bad cell(s))")
    return sc.codes, sc.n_missing, sc.missing, sc.empty_rows


def _check_answered(what: str, rows: list[str], items: list[str], allow_missing: bool, n_missing: int,
                    first_missing: tuple | None, empty_rows: np.ndarray) -> None:
    """Refuse missing answers when they are not allowed, and a model with no observed answer."""
    if not allow_missing and n_missing:
        i, j = first_missing
        raise AssayInputError(f"{what}: missing answer for model {rows[i]!r}, item {items[j]!r} "
                              f"({n_missing} missing); the estimand is the accuracy over the whole bank, so "
                              "offline evaluation needs every answer (query the rest live, or drop those items everywhere)")
    if empty_rows.any():
        raise AssayInputError(f"{what}: model {rows[int(np.flatnonzero(empty_rows)[0])]!r} has no observed answer "
                              f"({int(empty_rows.sum())} such row(s)); drop it")


def align_items(items_hist: Sequence[str], items_new: Sequence[str], what: str) -> np.ndarray:
    """Column positions in the new table of each history item.

    With them, ``Z[:, align_items(...)]`` is in the history's item order. Every item must appear in both lists (the
    estimand is the accuracy over the whole bank); otherwise :class:`~assay.errors.AssayInputError` names the items
    missing on each side, with ``what`` naming the new table.

    Parameters
    ----------
    items_hist : sequence of str
        The history's item ids, in its order.
    items_new : sequence of str
        The new table's item ids, in its column order.
    what : str
        The new table's name in the error message.

    Returns
    -------
    ndarray
        Integer positions in ``items_new``, one per history item.

    Raises
    ------
    AssayInputError
        When the two lists do not hold the same items.

    Examples
    --------
    >>> print(align_items(["a", "b", "c"], ["c", "a", "b"], "new").tolist())
    [1, 2, 0]
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

    Every answer must be present (0 or 1) and the items must be exactly ``items`` (the history's), in any order.

    Parameters
    ----------
    new : DataFrame, Series or array
        The answers, in any form :func:`as_matrix` reads.
    items : sequence of str
        The history's item ids; the answers' columns are put in this order.
    what : str, default "new"
        Names the table in messages about its cells.
    label : str, optional
        Names the table in a mismatch of items (default ``what``).

    Returns
    -------
    FAQAnswers
        The (M, N) 0/1 answers in the history's item order and the M model ids.

    Raises
    ------
    AssayInputError
        When an answer is missing or not 0/1, or the items differ from ``items``.

    Examples
    --------
    >>> import pandas as pd
    >>> answers = prepare_answers(pd.DataFrame({"b": [1, 0], "a": [0, 1]}, index=["m1", "m2"]), ["a", "b"])
    >>> print(answers.Z.tolist(), answers.models)
    [[0.0, 1.0], [1.0, 0.0]] ['m1', 'm2']
    """
    Z, models, new_items = as_matrix(new, what, allow_missing=False)
    return FAQAnswers(Z[:, align_items(items, new_items, label or what)], models)


def prepare_protocol(history: Any, new_models: Any = None, *, codes: bool = False) -> FAQProtocolData:
    """The validation protocol's inputs -> :class:`FAQProtocolData`.

    The history may have missing answers; new models may not.

    Parameters
    ----------
    history : DataFrame, Series or array
        The history's models x items 0/1 answers, in any form :func:`as_matrix` reads.
    new_models : DataFrame, Series or array, optional
        Separate new models' answers on the same items; None: the protocol splits the history.
    codes : bool, default False
        The history as int8 codes (:func:`as_matrix`), as :func:`assay.faq.protocol` holds it.

    Returns
    -------
    FAQProtocolData
        The history, its model and item ids, and the new models' answers and ids (None when not given).

    Raises
    ------
    AssayInputError
        When a table is invalid or the new models' items differ from the history's.

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> data = prepare_protocol(pd.DataFrame({"a": [1, 0, 1], "b": [0, np.nan, 1]}, index=["h1", "h2", "h3"]))
    >>> print(data.H.tolist(), data.rows, data.items, data.Z_new)
    [[1.0, 0.0], [0.0, nan], [1.0, 1.0]] ['h1', 'h2', 'h3'] ['a', 'b'] None
    """
    H, rows, items = as_matrix(history, "history", codes=codes)
    if new_models is None:
        return FAQProtocolData(H, rows, items, None, None)
    Z, new_rows = prepare_answers(new_models, items, what="new_models")
    return FAQProtocolData(H, rows, items, Z, new_rows)


def read_answers(path: str | Path, what: str = "answers"):
    """Models' 0/1 answers from a file, in the form :func:`assay.faq.evaluate` takes.

    The file is a wide table (a ``model`` column, or the first column, is the model id; one column per item), a long
    one (``model, item, score``), or an lm-eval / inspect / HELM log (read by :mod:`assay.ingest`).

    Parameters
    ----------
    path : str or Path
        The file.
    what : str, default "answers"
        Names the file in errors.

    Returns
    -------
    DataFrame
        A long table (``model``, ``item``, ``score``; for a log, its first epoch, items keyed ``task/item`` when it
        holds several tasks) or a wide one (indexed by model id as text, one column per item).

    Raises
    ------
    AssayInputError
        If a wide table has fewer than two columns.
    """
    import pandas as pd

    from . import read_table

    path = Path(path)
    table = read_table(path, text_columns=("model", "item"))
    if "source" in table.columns and {"model", "item", "score", "task"} <= set(table.columns):
        # an lm-eval / inspect / HELM log read by assay.ingest: first epoch, items keyed by task when several
        ep = "epoch" if "epoch" in table.columns else "repeat" if "repeat" in table.columns else None
        t = table[table[ep] == table[ep].min()] if ep else table
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
    """The question ids of an FAQ history as :func:`read_answers` returns it (long or wide).

    Parameters
    ----------
    hist : DataFrame
        A long (``model``, ``item``, ``score``) or wide (one column per item) history.

    Returns
    -------
    list of str
        The item ids, in first-seen order.
    """
    if isinstance(hist, pd.DataFrame) and {"model", "item", "score"} <= set(hist.columns):
        return list(dict.fromkeys(hist["item"].astype(str)))
    return [str(x) for x in hist.columns]


def int8_bytes(H: np.ndarray, rows_per_block: int = 256):
    r"""The bytes of ``H`` as int8 with -1 for NaN (what the cache keys hash).

    Built in blocks of rows, so a large history never gets a second models x items float64 copy for it. A history
    already held as int8 codes (:data:`MISSING` = -1) gives the same bytes as its float form: its own.

    Parameters
    ----------
    H : ndarray (models, items)
        A history as float (NaN for missing) or int8 codes.
    rows_per_block : int, default 256
        Rows converted at a time.

    Returns
    -------
    bytes
        The int8 bytes, in row-major order.

    Examples
    --------
    >>> import numpy as np
    >>> int8_bytes(np.array([[1.0, np.nan], [0.0, 1.0]]))
    b'\x01\xff\x00\x01'
    """
    if H.dtype == np.int8:
        return np.ascontiguousarray(H).tobytes()
    parts = []
    for i in range(0, H.shape[0], rows_per_block):
        blk = H[i:i + rows_per_block]
        parts.append(np.where(np.isnan(blk), -1, blk).astype(np.int8).tobytes())
    return b"".join(parts)
