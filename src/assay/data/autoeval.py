"""R-AutoEval+'s data layer: join human and judge labels into one long table (:func:`merge_judge`) and turn
that table into per-candidate arrays in processing order (:func:`prepare`), the input of
:func:`assay.autoeval.core`."""

from __future__ import annotations

from typing import Any, Mapping, NamedTuple

import numpy as np
import pandas as pd

from ..errors import AssayInputError, describe_rows
from .tables import check_scores, map_columns

__all__ = ["merge_judge", "prepare", "AutoEvalData", "CandidateData", "AUTOEVAL_COLUMNS"]

#: canonical columns of R-AutoEval+'s long table
AUTOEVAL_COLUMNS = ("candidate", "item", "loss_human", "loss_judge")


class CandidateData(NamedTuple):
    """One candidate's losses in processing order (what :func:`assay.autoeval.core` takes).

    ``judge_labelled`` / ``judge_unlabelled`` are zeros / empty when the method does not use the judge (R-Eval).
    """

    candidate: str
    loss_human: np.ndarray  #: (n,) human losses l_i of the labelled examples
    judge_labelled: np.ndarray  #: (n,) judge losses l~_i on the same examples
    judge_unlabelled: np.ndarray  #: (N,) judge losses of the unlabelled examples (empty without a judge)
    n_unlabelled: int  #: N, the rows without a human label (counted with or without a judge)
    mean_judge: float  #: mean judge loss on the unlabelled rows (NaN when there are none or no judge column)
    labelled_items: list[str]  #: item ids of the labelled examples, in processing order
    unlabelled_items: list[str]  #: item ids of the unlabelled examples, in processing order


class AutoEvalData(NamedTuple):
    """A validated R-AutoEval+ table: per-candidate arrays and the per-candidate attributes asked for."""

    candidates: list[str]  #: in order of first appearance in the table
    data: dict[str, CandidateData]
    order_key: pd.Series | None  #: the ``order_by`` column, one value per candidate (or None)
    costs: pd.Series | None  #: the ``cost_col`` column, one value per candidate (or None)
    columns: list[str]  #: the table's columns after mapping (for messages)


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

    Parameters
    ----------
    human : DataFrame
        The human labels: one row per (candidate, item) with a human loss; other columns are kept.
    judge : DataFrame
        The judge labels: one row per (candidate, item) with a judge loss.
    candidate : str, default "candidate"
        Name of the candidate column in both files.
    item : str, default "item"
        Name of the item column in both files.
    human_col : str, default "loss_human"
        Name of the human loss column in ``human``.
    judge_col : str, default "loss_judge"
        Name of the judge loss column in ``judge``.

    Returns
    -------
    DataFrame
        Columns ``candidate, item, loss_human``, the human file's other columns, and ``loss_judge``; candidate and
        item ids as strings.

    Raises
    ------
    AssayInputError
        When a column is missing, the two files name different candidates, or a file repeats a (candidate, item).

    Examples
    --------
    >>> import pandas as pd
    >>> human = pd.DataFrame({"candidate": ["A", "A", "B"], "item": ["q1", "q2", "q1"], "loss_human": [0.0, 1.0, 0.0]})
    >>> judge = pd.DataFrame({"candidate": ["A", "A", "B", "B"], "item": ["q1", "q2", "q1", "q2"],
    ...                       "loss_judge": [0.0, 1.0, 1.0, 0.0]})
    >>> print(merge_judge(human, judge).to_string(index=False))
    candidate item  loss_human  loss_judge
            A   q1         0.0         0.0
            A   q2         1.0         1.0
            B   q1         0.0         1.0
            B   q2         NaN         0.0
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


def _candidate_attribute(df: pd.DataFrame, col: str) -> pd.Series:
    per = df.groupby("candidate", sort=False)[col].nunique(dropna=False)
    bad = per[per > 1]
    if len(bad):
        raise AssayInputError(
            f"column {col!r} must have one value per candidate, but candidate {bad.index[0]!r} has {int(bad.iloc[0])}"
        )
    return df.groupby("candidate", sort=False)[col].first()


def prepare(
    table: pd.DataFrame,
    *,
    uses_judge: bool = True,
    method: str = "r-autoeval+",
    columns: Mapping[str, str] | None = None,
    order_by: str | None = None,
    cost_col: str | None = None,
    shuffle: bool = True,
    rng: np.random.Generator | None = None,
) -> AutoEvalData:
    """Validate R-AutoEval+'s long table and split it into per-candidate arrays in processing order.

    Parameters
    ----------
    table : DataFrame
        Columns ``candidate, item, loss_human, loss_judge`` (renamed from yours with ``columns``): one row per
        (candidate, example); ``loss_human`` NaN on unlabelled rows; losses in [0, 1].
    uses_judge : bool, default True
        Whether the method reads the judge's losses (False for R-Eval: ``loss_judge`` may then be absent or
        incomplete, and the judge arrays come back as zeros / empty).
    method : str
        Named in the message when a candidate has fewer unlabelled than labelled rows.
    columns : mapping, optional
        Canonical name -> your column name.
    order_by, cost_col : str, optional
        Per-candidate columns to return (one value per candidate is required).
    shuffle : bool, default True
        Process the items in a random order of the item ids drawn from ``rng`` (one permutation shared by every
        candidate, so an example is at the same step for all of them); False keeps each candidate's rows in
        table order.
    rng : numpy Generator
        Needed when ``shuffle``; exactly one permutation is drawn from it.

    Returns
    -------
    AutoEvalData
    """
    mapping: dict[str, Any] = {c: None for c in AUTOEVAL_COLUMNS}
    mapping.update(columns or {})
    df = map_columns(table, mapping, required=("candidate", "item", "loss_human") + (("loss_judge",) if uses_judge else ()))
    if df.empty:
        raise AssayInputError("the table is empty: nothing to certify")
    df = df.copy()
    for c in ("candidate", "item"):
        if df[c].isna().any():
            raise AssayInputError(f"column {c!r} is empty at {describe_rows(df.index[df[c].isna()])}")
        df[c] = df[c].astype(str)
    if df.duplicated(["candidate", "item"]).any():
        rows = df.index[df.duplicated(["candidate", "item"], keep=False)]
        raise AssayInputError(f"duplicate (candidate, item) rows at {describe_rows(rows)}; each example once per candidate")
    df["loss_human"] = check_scores(df, "loss_human", allow_missing=True, what="loss")
    if "loss_judge" in df.columns:
        df["loss_judge"] = check_scores(
            df, "loss_judge", allow_missing=not uses_judge, what="loss",
            missing_hint="every row needs the judge's loss (labelled rows for the bias correction, unlabelled "
                         "rows as the judge's evidence); fill it or remove those rows",
        )
    elif uses_judge:
        raise AssayInputError("method uses judge labels but the table has no loss_judge column")
    candidates = list(pd.unique(df["candidate"]))

    order_key = None
    if order_by is not None:
        if order_by not in df.columns:
            raise AssayInputError(f"order_by column {order_by!r} is not in the table; columns: {', '.join(df.columns)}")
        order_key = _candidate_attribute(df, order_by)
    if cost_col and cost_col not in df.columns:
        raise AssayInputError(f"cost column {cost_col!r} is not in the table; columns: {', '.join(map(str, df.columns))}")
    costs = _candidate_attribute(df, cost_col) if cost_col else None

    if shuffle:
        if rng is None:
            raise AssayInputError("shuffle=True needs a random generator (rng) for the processing order")
        items = pd.unique(df["item"])
        rank = pd.Series(np.arange(len(items)), index=items[rng.permutation(len(items))])
        df["_rank"] = df["item"].map(rank).to_numpy()
    else:
        df["_rank"] = np.arange(len(df))

    groups = dict(tuple(df.sort_values("_rank", kind="stable").groupby("candidate", sort=False)))
    data: dict[str, CandidateData] = {}
    for cand in candidates:
        g = groups[cand]
        lab = g[g["loss_human"].notna()]
        unl = g[g["loss_human"].isna()]
        n, N = len(lab), len(unl)
        if n == 0:
            raise AssayInputError(f"candidate {cand!r} has no labelled rows (loss_human is NaN everywhere)")
        if uses_judge:
            if lab["loss_judge"].isna().any():
                raise AssayInputError(
                    f"candidate {cand!r}: judge loss missing on labelled rows {describe_rows(lab.index[lab['loss_judge'].isna()])}; "
                    "the bias correction needs both losses on every labelled example"
                )
            if N < n:
                raise AssayInputError(
                    f"candidate {cand!r} has {N} unlabelled rows for {n} labelled ones; {method} pairs each "
                    "labelled example with r = floor(N/n) >= 1 judge-labelled ones. Add unlabelled rows or use method='r-eval'."
                )
        data[cand] = CandidateData(
            candidate=cand,
            loss_human=lab["loss_human"].to_numpy(),
            judge_labelled=lab["loss_judge"].to_numpy() if uses_judge else np.zeros(n),
            judge_unlabelled=unl["loss_judge"].to_numpy() if uses_judge else np.zeros(0),
            n_unlabelled=N,
            mean_judge=float(unl["loss_judge"].mean()) if (N and "loss_judge" in unl) else float("nan"),
            labelled_items=lab["item"].tolist(),
            unlabelled_items=unl["item"].tolist(),
        )
    return AutoEvalData(candidates=candidates, data=data, order_key=order_key, costs=costs,
                        columns=[str(c) for c in df.columns if c != "_rank"])
