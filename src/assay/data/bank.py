"""A bank of questions to ask models: ids, prompts, references and optionally each question's scorer and its answer
choices. Read here once, for every method and campaign section that asks questions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import AssayInputError

__all__ = ["read_bank", "check_bank", "as_reference"]


def read_bank(bank: Any, *, id_col: str = "id", prompt_col: str = "prompt", reference_col: str = "reference",
              scorer_col: str | None = None, choices_col: str | None = None, label: str = "") -> pd.DataFrame:
    """The item bank as a DataFrame indexed by item id (str).

    The result has ``prompt`` and ``reference`` columns, ``scorer`` when ``scorer_col`` names a column holding each
    item's scorer, and ``choices`` (text) when ``choices_col`` names the column of each question's answer choices
    (none may be empty).

    Parameters
    ----------
    bank : DataFrame, str or Path
        The bank as a table, or the path of a table file (read with :func:`assay.data.read_table`, ids as text).
    id_col : str, default "id"
        Column of the item ids (unique).
    prompt_col : str, default "prompt"
        Column of the prompts (none may be empty).
    reference_col : str, default "reference"
        Column of the reference answers.
    scorer_col : str, optional
        Column holding each item's scorer.
    choices_col : str, optional
        Column of each question's answer choices.
    label : str, default ""
        Prefixes the argument names in errors (a campaign passes ``"<file>: [bank]."``).

    Returns
    -------
    DataFrame
        Indexed by item id, with ``prompt``, ``reference`` (as text: a file's ``24`` is ``"24"``; a list of
        acceptable answers stays a list, of texts) and, when asked for, ``scorer`` and ``choices``.

    Raises
    ------
    AssayInputError
        When the bank is not a table, lacks a column, repeats an id, or has an empty prompt, reference, scorer or
        choices cell.

    Examples
    --------
    >>> import pandas as pd
    >>> bank = pd.DataFrame({"id": [1, 2], "prompt": ["2+2?", "3+3?"], "reference": ["4", "6"]})
    >>> print(read_bank(bank).to_string())
      prompt reference
    1   2+2?         4
    2   3+3?         6
    """
    if isinstance(bank, (str, Path)):
        from . import read_table

        bank = read_table(bank, text_columns=(id_col, prompt_col, reference_col))
    if not isinstance(bank, pd.DataFrame):
        raise AssayInputError(f"the item bank must be a table with {id_col}, {prompt_col}, {reference_col} columns")
    dup = bank.columns[bank.columns.duplicated()]
    if len(dup):
        raise AssayInputError(f"the item bank has the column {dup[0]!r} twice")
    missing = [c for c in (id_col, prompt_col, reference_col) if c not in bank.columns]
    if missing:
        raise AssayInputError(f"the item bank has no column(s) {', '.join(map(repr, missing))}; columns: "
                              f"{', '.join(map(str, bank.columns))}. Rename yours to {id_col}, {prompt_col} and "
                              f"{reference_col} (from Python: id_col= / prompt_col= / reference_col=)")
    ids = bank[id_col].astype(str)
    dup = ids[ids.duplicated()]
    if len(dup):
        raise AssayInputError(f"the item bank has duplicate ids, e.g. {dup.iloc[0]!r} ({len(dup)} duplicates)")
    if bank[prompt_col].isna().any():
        raise AssayInputError(f"the item bank has empty prompts for ids {', '.join(ids[bank[prompt_col].isna()].head(3))}")
    refs = bank[reference_col]
    empty = refs.map(lambda r: r is None or (isinstance(r, float) and r != r)).to_numpy(bool)
    if empty.any():
        raise AssayInputError(f"the item bank has no reference for ids {', '.join(ids[empty].head(3))}: every question "
                              "needs its reference answer")
    out = pd.DataFrame({"prompt": bank[prompt_col].astype(str).to_numpy(),
                        "reference": [as_reference(r) for r in refs]}, index=ids.to_numpy())
    if scorer_col is not None:
        if bank[scorer_col].isna().any():
            raise AssayInputError(f"the item bank's scorer column {scorer_col!r} is empty for ids "
                                  f"{', '.join(ids[bank[scorer_col].isna()].head(3))}")
        out["scorer"] = bank[scorer_col].astype(str).to_numpy()
    if choices_col is not None:
        if choices_col not in bank.columns:
            raise AssayInputError(f"{label}choices_col {choices_col!r} is not a column of the bank; columns: "
                                  f"{', '.join(map(str, bank.columns))}")
        empty = bank[choices_col].isna().to_numpy()
        if empty.any():
            raise AssayInputError(f"{label}choices_col {choices_col!r} is empty for ids {', '.join(ids[empty][:3])}")
        out["choices"] = bank[choices_col].astype(str).to_numpy()
    return out


def as_reference(r: Any) -> Any:
    """A reference as text: a number as it is written (``24``, ``0.5``: integral floats without ``.0``), a numpy
    scalar as its Python value; a list of acceptable answers as a list of texts.

    Examples
    --------
    >>> import numpy as np
    >>> as_reference(np.int64(24)), as_reference(2.0), as_reference(0.1), as_reference(["A", 3])
    ('24', '2', '0.1', ['A', '3'])
    """
    if isinstance(r, (list, tuple)):
        return [as_reference(x) for x in r]
    if hasattr(r, "item") and not isinstance(r, str):
        r = r.item()
    if isinstance(r, bool):
        return str(r)
    if isinstance(r, float):
        return str(int(r)) if r.is_integer() and abs(r) < 1e15 else repr(r)
    return str(r)


def check_bank(b: pd.DataFrame, where: Any = "the bank") -> None:
    """A bank's ids and prompts must each be unique: the answers to a repeated prompt cannot be told apart (an answer
    is matched to its question by its prompt). Refused naming the rows."""

    for col, values in (("id", pd.Series(b.index.astype(str))), ("prompt", b["prompt"].astype(str))):
        dup = values.duplicated(keep=False).to_numpy()
        if dup.any():
            rows = b.index[dup]
            first = str(values[dup].iloc[0])
            raise AssayInputError(f"{where}: the bank repeats a{'n' if col == 'id' else ''} {col} ({first[:60]!r} for "
                                  f"{'ids ' + ', '.join(map(str, rows[:6]))}); each question needs its own {col}"
                                  + (": the answers to a repeated prompt cannot be told apart" if col == "prompt"
                                     else ""))
