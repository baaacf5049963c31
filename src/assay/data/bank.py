"""A bank of questions to ask models: ids, prompts, references and optionally each question's scorer and its answer
choices. Read here once, for every method and campaign section that asks questions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import AssayInputError

__all__ = ["read_bank"]


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
        Indexed by item id, with ``prompt``, ``reference`` and, when asked for, ``scorer`` and ``choices``.

    Raises
    ------
    AssayInputError
        When the bank is not a table, lacks a column, repeats an id, or has an empty prompt, scorer or choices cell.

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

        bank = read_table(bank, text_columns=(id_col,))
    if not isinstance(bank, pd.DataFrame):
        raise AssayInputError(f"the item bank must be a table with {id_col}, {prompt_col}, {reference_col} columns")
    missing = [c for c in (id_col, prompt_col, reference_col) if c not in bank.columns]
    if missing:
        raise AssayInputError(f"the item bank has no column(s) {', '.join(map(repr, missing))}; columns: "
                              f"{', '.join(map(str, bank.columns))} (name yours with id_col= / prompt_col= / reference_col=)")
    ids = bank[id_col].astype(str)
    dup = ids[ids.duplicated()]
    if len(dup):
        raise AssayInputError(f"the item bank has duplicate ids, e.g. {dup.iloc[0]!r} ({len(dup)} duplicates)")
    if bank[prompt_col].isna().any():
        raise AssayInputError(f"the item bank has empty prompts for ids {', '.join(ids[bank[prompt_col].isna()].head(3))}")
    out = pd.DataFrame({"prompt": bank[prompt_col].astype(str).to_numpy(), "reference": bank[reference_col].to_numpy()},
                       index=ids.to_numpy())
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
