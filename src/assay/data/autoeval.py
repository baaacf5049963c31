"""R-AutoEval+'s data layer: join human and judge labels into one long table."""

from __future__ import annotations

import pandas as pd

from ..errors import AssayInputError, describe_rows
from .tables import map_columns

__all__ = ["merge_judge"]


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
