"""The data layer of ``compare``: a long table of scores (model, item, score, optional cluster and epoch) ->
the matrix of epoch-averaged scores of every model on the questions they all answered.

Validation names the rows: a score outside the bounds, NaN, a duplicate (model, item, epoch), an item placed in two
clusters, a model with no question in common with another. Models are compared on the questions every one of them
answered (:attr:`CompareDesign.S`); how many questions each pair shares is kept (:attr:`CompareDesign.shared`) and
``require_complete`` refuses a table where some model lacks a question another answered.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ..errors import AssayInputError
from .tables import check_scores, check_unique, map_columns

__all__ = ["CompareDesign", "prepare_compare", "COMPARE_COLUMNS"]

#: canonical column names of compare's long table
COMPARE_COLUMNS = ("model", "item", "score", "cluster", "epoch")


@dataclass(frozen=True)
class CompareDesign:
    """What the compare core needs, from one tidy table.

    ``S``: models x questions, each question's score averaged over its epochs, on the questions every model
    answered (``items``); ``clusters``: one integer code per question (``None``: each question is its own cluster);
    ``shared``: models x models, the questions each pair both answered; ``low``, ``high``: the score bounds."""

    models: list[str]
    items: list[str]
    S: np.ndarray
    clusters: np.ndarray | None
    cluster_labels: list[str] | None
    shared: np.ndarray
    n_items_any: int
    epochs: dict[str, float]
    low: float
    high: float
    notes: list[str] = field(default_factory=list)

    @property
    def n_units(self) -> int:
        return len(self.items) if self.clusters is None else int(self.clusters.max()) + 1


def _bounds(bounds) -> tuple[float, float]:
    try:
        low, high = (float(b) for b in bounds)
    except (TypeError, ValueError):
        raise AssayInputError(f"bounds must be two numbers LOW HIGH with LOW < HIGH; got {bounds!r}") from None
    if not (np.isfinite(low) and np.isfinite(high) and low < high):
        raise AssayInputError(f"bounds must be two finite numbers LOW HIGH with LOW < HIGH; got {bounds!r}")
    return low, high


def prepare_compare(table: pd.DataFrame, *, columns: Mapping[str, str] | None = None,
                    bounds: Sequence[float] = (0.0, 1.0), require_complete: bool = False) -> CompareDesign:
    """Validate a long table of scores and pivot it to models x the questions every model answered.

    ``columns`` maps compare's names (``model``, ``item``, ``score``, ``cluster``, ``epoch``) to the table's;
    ``cluster`` and ``epoch`` are optional. Epochs of one (model, question) are averaged first.

    Parameters
    ----------
    table : DataFrame
        One row per (model, question[, epoch]) score.
    columns : mapping, optional
        Compare's column names -> the table's.
    bounds : sequence of two floats, default (0.0, 1.0)
        The score range [low, high]; every score must lie in it.
    require_complete : bool, default False
        Refuse a table where some model lacks questions others answered (otherwise the comparison uses the questions
        every model answered, with a note).

    Returns
    -------
    CompareDesign
        The models x shared questions matrix ``S``, the cluster codes and labels (or None), each pair's count of
        shared questions, the mean epochs per model and the notes.

    Raises
    ------
    AssayInputError
        On an unknown column role, a missing or duplicate cell, a score outside the range, a question in more than one
        cluster, fewer than 2 models, two models without a question in common, fewer than 2 shared questions or
        clusters, or incomplete models with ``require_complete``.

    Examples
    --------
    >>> import pandas as pd
    >>> table = pd.DataFrame({"model": ["A"] * 3 + ["B"] * 3, "item": ["q1", "q2", "q3"] * 2,
    ...                       "score": [1, 1, 0, 0, 1, 0]})
    >>> design = prepare_compare(table)
    >>> print(design.models, design.items, design.S.tolist())
    ['A', 'B'] ['q1', 'q2', 'q3'] [[1.0, 1.0, 0.0], [0.0, 1.0, 0.0]]
    """
    low, high = _bounds(bounds)
    mapping = dict(columns or {})
    unknown = set(mapping) - set(COMPARE_COLUMNS)
    if unknown:
        raise AssayInputError(f"unknown column role(s) {sorted(unknown)}; accepted: {', '.join(COMPARE_COLUMNS)}")
    df = map_columns(table, {c: mapping.get(c) for c in COMPARE_COLUMNS if c in mapping or c in ("model", "item",
                                                                                                   "score")},
                     required=("model", "item", "score"))
    if df.empty:
        raise AssayInputError("the table has no rows: nothing to compare")
    df = df.copy()
    for c in ("model", "item"):
        if df[c].isna().any():
            rows = df.index[df[c].isna()]
            raise AssayInputError(f"column {c!r} is missing at rows {list(rows[:5])}: every score needs a {c}")
        df[c] = df[c].astype(str)
    has_epoch = "epoch" in df.columns
    has_cluster = "cluster" in df.columns
    df["score"] = check_scores(df, "score", low=low, high=high, what="score",
                               missing_hint="a score must be a number; drop the rows of questions not answered")
    check_unique(df, ["model", "item"] + (["epoch"] if has_epoch else []), what="score")
    if has_cluster:
        if df["cluster"].isna().any():
            rows = df.index[df["cluster"].isna()]
            raise AssayInputError(f"column 'cluster' is missing at rows {list(rows[:5])}: give every question its "
                                  "cluster, or leave the column out (each question is then its own cluster)")
        df["cluster"] = df["cluster"].astype(str)
        per_item = df.groupby("item")["cluster"].nunique()
        split = per_item[per_item > 1]
        if len(split):
            raise AssayInputError(f"question(s) {', '.join(map(repr, split.index[:3]))} are in more than one cluster; "
                                  "a question belongs to one cluster")
    g = df.groupby(["model", "item"], sort=False)["score"]
    mean = g.mean()
    counts = g.size()
    models = list(dict.fromkeys(df["model"]))
    if len(models) < 2:
        raise AssayInputError(f"compare needs at least 2 models; the table has {len(models)} ({', '.join(models)})")
    wide = mean.unstack("item").reindex(models)
    present = wide.notna().to_numpy()
    shared = present.astype(np.int64) @ present.T.astype(np.int64)
    K = len(models)
    for a in range(K):
        for b in range(a + 1, K):
            if shared[a, b] == 0:
                raise AssayInputError(f"models {models[a]!r} and {models[b]!r} have no question in common: a paired "
                                      "comparison needs questions both answered")
    full = present.all(axis=0)
    notes = []
    if not full.all():
        lacking = [m for m, row in zip(models, present) if not row.all()]
        if require_complete:
            raise AssayInputError(f"{len(lacking)} model(s) lack questions others answered ({', '.join(lacking[:5])}): "
                                  f"{int(full.sum())} of {present.shape[1]} questions are answered by every model "
                                  "(--require-complete refuses this; drop it to compare on the shared questions)")
        notes.append(f"{int(full.sum())} of {present.shape[1]} questions are answered by every model; the comparison "
                     f"uses those (model(s) lacking some: {', '.join(lacking[:5])}); each pair's shared count is in "
                     "the pairs table")
    items = [str(i) for i in wide.columns[full]]
    if len(items) < 2:
        raise AssayInputError(f"only {len(items)} question(s) are answered by every model: compare needs at least 2")
    S = wide.loc[:, full].to_numpy(dtype=np.float64)
    clusters = labels = None
    if has_cluster:
        first = df.drop_duplicates("item").set_index("item")["cluster"]
        codes, uniques = pd.factorize(first.reindex(items), sort=False)
        clusters, labels = codes.astype(np.int64), [str(u) for u in uniques]
        if len(labels) < 2:
            raise AssayInputError("every shared question is in one cluster: a cluster-robust comparison needs at "
                                  "least 2 clusters")
    epochs = {m: float(v) for m, v in counts.groupby(level="model").mean().items()} if has_epoch else {}
    return CompareDesign(models=models, items=items, S=S, clusters=clusters, cluster_labels=labels, shared=shared,
                         n_items_any=int(present.shape[1]), epochs=epochs, low=low, high=high, notes=notes)
