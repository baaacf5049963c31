"""The data layer of ``compare``: a long table of scores (model, item, score, optional task, cluster, epoch and
question hash) -> the matrix of epoch-averaged scores of every model on the questions they all answered.

A question is keyed by (task, item): two tasks never share a question, whatever their item ids (inspect numbers the
samples of every task 1..N). Validation names the rows: a score outside the bounds, NaN, a duplicate
(model, task, item, epoch), an item placed in two clusters, a key whose question text differs between rows (its hash),
a model with no question in common with another. Models are compared on the questions every one of them answered
(:attr:`CompareDesign.S`); how many each answered is kept (:attr:`CompareDesign.answered`) and ``require_complete``
refuses a table where some model lacks a question another answered.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from ..errors import AssayInputError
from .tables import check_scores, describe_rows, map_columns

__all__ = ["CompareDesign", "prepare_compare", "COMPARE_COLUMNS"]

#: canonical column names of compare's long table
COMPARE_COLUMNS = ("model", "item", "score", "task", "cluster", "epoch", "hash")


@dataclass(frozen=True)
class CompareDesign:
    """What the compare core needs, from one tidy table.

    ``S``: models x questions, each question's score averaged over its epochs, on the questions every model
    answered (``items``, shown as ``task/item`` when there are tasks); ``tasks``: each question's task code into
    ``task_labels`` (None: no task column); ``clusters``: one integer code per question (``None``: each question is its
    own cluster); ``shared``: models x models, the questions each pair both answered; ``answered``: per model, the
    questions it answered; ``epochs``: per model, the mean epochs per question; ``low``, ``high``: the score bounds."""

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
    tasks: np.ndarray | None = None
    task_labels: list[str] | None = None
    answered: dict[str, int] = field(default_factory=dict)

    @property
    def n_units(self) -> int:
        return len(self.items) if self.clusters is None else int(self.clusters.max()) + 1

    @property
    def n_tasks(self) -> int:
        return 1 if self.task_labels is None else len(self.task_labels)


def _bounds(bounds) -> tuple[float, float]:
    try:
        low, high = (float(b) for b in bounds)
    except (TypeError, ValueError):
        raise AssayInputError(f"bounds must be two numbers LOW HIGH with LOW < HIGH; got {bounds!r}") from None
    if not (np.isfinite(low) and np.isfinite(high) and low < high):
        raise AssayInputError(f"bounds must be two finite numbers LOW HIGH with LOW < HIGH; got {bounds!r}")
    return low, high


def _check_hashes(df: pd.DataFrame, keys: list[str]) -> None:
    """A question's text (its hash) must be the same wherever its key appears: a key whose hash differs between rows
    is two different questions under one id (two datasets, or a changed dataset), refused with the rows."""
    h = df["hash"]
    known = df[h.notna()].copy()
    if known.empty:
        return
    known["hash"] = known["hash"].astype(str)
    # hashes are compared within one scheme ("inspect:...", "lmeval:..."): two tools hash differently
    known["scheme"] = known["hash"].str.split(":", n=1).str[0]
    counts = known.groupby(keys + ["scheme"], sort=False)["hash"].nunique()
    bad = counts[counts > 1]
    if len(bad):
        key = bad.index[0][:-1]
        sel = np.ones(len(known), bool)
        for k, v in zip(keys, key):
            sel &= (known[k] == v).to_numpy()
        rows = known.index[sel]
        shown = ", ".join(f"{m} ({hh[:18]})" for m, hh in zip(known.loc[rows, "model"], known.loc[rows, "hash"]))
        raise AssayInputError(
            f"question {'/'.join(map(str, key))!r} is not the same question in every source: its text differs "
            f"({shown}; {describe_rows(rows)}). Two datasets (or two versions of one) use the same ids; compare only "
            f"logs of the same questions ({len(bad)} such question(s) in all)")


def prepare_compare(table: pd.DataFrame, *, columns: Mapping[str, str] | None = None,
                    bounds: Sequence[float] = (0.0, 1.0), require_complete: bool = False) -> CompareDesign:
    """Validate a long table of scores and pivot it to models x the questions every model answered.

    ``columns`` maps compare's names (``model``, ``item``, ``score``, ``task``, ``cluster``, ``epoch``, ``hash``) to
    the table's; all but the first three are optional. A question is keyed by (task, item). Epochs of one
    (model, question) are averaged first.

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
        The models x shared questions matrix ``S``, the task and cluster codes and labels (or None), each pair's
        count of shared questions, each model's count answered, the mean epochs per model and the notes.

    Raises
    ------
    AssayInputError
        On an unknown column role, a missing or duplicate cell, a score outside the range, a question in more than one
        cluster, a question whose text differs between rows, fewer than 2 models, two models without a question in
        common, fewer than 2 shared questions or clusters, or incomplete models with ``require_complete``.

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
    df = _validated(table, columns, low, high)
    keys = (["task"] if "task" in df.columns else []) + ["item"]
    if "hash" in df.columns:
        _check_hashes(df, keys)
    if "cluster" in df.columns:
        _check_clusters(df, keys)
    has_task = "task" in df.columns
    df["_key"] = df["task"] + "\x1f" + df["item"] if has_task else df["item"]
    g = df.groupby(["model", "_key"], sort=False)["score"]
    mean, counts = g.mean(), g.size()
    models = list(dict.fromkeys(df["model"]))
    if len(models) < 2:
        raise AssayInputError(f"compare needs at least 2 models; the table has {len(models)} ({', '.join(models)})")
    wide = mean.unstack("_key").reindex(models)
    present = wide.notna().to_numpy()
    shared = _shared(present, models, has_task)
    full, answered, notes = _complete(present, models, require_complete)
    cols = wide.columns[full]
    if len(cols) < 2:
        raise AssayInputError(f"only {len(cols)} question(s) are answered by every model: compare needs at least 2")
    S = wide.loc[:, full].to_numpy(dtype=np.float64)
    first = df.drop_duplicates("_key").set_index("_key")
    items, tasks, task_labels, clusters, labels = _labels(first, cols, has_task, "cluster" in df.columns)
    per_model = counts.groupby(level="model").mean()
    epochs = {m: float(per_model[m]) for m in models} if "epoch" in df.columns else {}
    return CompareDesign(models=models, items=items, S=S, clusters=clusters, cluster_labels=labels, shared=shared,
                         n_items_any=int(present.shape[1]), epochs=epochs, low=low, high=high, notes=notes,
                         tasks=tasks, task_labels=task_labels, answered=answered)


def _validated(table: pd.DataFrame, columns, low: float, high: float) -> pd.DataFrame:
    """The table under compare's column names, keys as text, scores checked in [low, high], no duplicate
    (model, question[, epoch])."""
    mapping = dict(columns or {})
    unknown = set(mapping) - set(COMPARE_COLUMNS)
    if unknown:
        raise AssayInputError(f"unknown column role(s) {sorted(unknown)}; accepted: {', '.join(COMPARE_COLUMNS)}")
    df = map_columns(table, {c: mapping.get(c) for c in COMPARE_COLUMNS if c in mapping or c in ("model", "item",
                                                                                                   "score")},
                     required=("model", "item", "score"))
    if df.empty:
        raise AssayInputError("the table has no rows: nothing to compare")
    df = df.reset_index(drop=True)
    has_task = "task" in df.columns
    for c in ("model", "item") + (("task",) if has_task else ()):
        if df[c].isna().any():
            rows = df.index[df[c].isna()]
            raise AssayInputError(f"column {c!r} is missing at {describe_rows(rows)}: every score needs a {c}")
        df[c] = df[c].astype(str)
    has_epoch = "epoch" in df.columns
    keys = (["task"] if has_task else []) + ["item"]
    df["score"] = check_scores(df, "score", low=low, high=high, what="score",
                               missing_hint="a score must be a number; drop the rows of questions not answered",
                               range_hint=(f"Give the scores' range with bounds=(low, high) (it is [{low:g}, {high:g}] "
                                           "now), or rescale the scores."))
    dup = df.duplicated(subset=["model"] + keys + (["epoch"] if has_epoch else []), keep=False)
    if dup.any():
        rows = df.index[dup]
        first = df.loc[rows[0]]
        key = "/".join(str(first[k]) for k in keys)
        raise AssayInputError(
            f"duplicate scores: model {first['model']!r} has more than one score for question {key!r}"
            + (f" in epoch {first['epoch']}" if has_epoch else "")
            + f" ({describe_rows(rows)}): two runs of one model, a log with several scorers, or repeated answers. "
            "Name each run (NAME=PATH sources, or {name: path}), choose a scorer (log_scorer=), or number the repeats "
            "(columns={'epoch': 'YOUR_COLUMN'})")
    return df


def _check_clusters(df: pd.DataFrame, keys: list[str]) -> None:
    """Every question has a cluster, and one: cluster labels are read within their task (in place)."""
    if df["cluster"].isna().any():
        rows = df.index[df["cluster"].isna()]
        raise AssayInputError(f"column 'cluster' is missing at {describe_rows(rows)}: give every question its "
                              "cluster, or leave the column out (each question is then its own cluster)")
    df["cluster"] = df["cluster"].astype(str)
    if "task" in df.columns:  # a cluster never crosses tasks: its label is read within its task
        df["cluster"] = df["task"] + "\x1f" + df["cluster"]
    per_item = df.groupby(keys)["cluster"].nunique()
    split = per_item[per_item > 1]
    if len(split):
        shown = ", ".join(repr("/".join(k) if isinstance(k, tuple) else k) for k in split.index[:3])
        raise AssayInputError(f"question(s) {shown} are in more than one cluster; a question belongs to one cluster")


def _shared(present: np.ndarray, models: list[str], has_task: bool) -> np.ndarray:
    """Models x models, the questions each pair both answered; a pair with none is refused."""
    shared = present.astype(np.int64) @ present.T.astype(np.int64)
    K = len(models)
    for a in range(K):
        for b in range(a + 1, K):
            if shared[a, b] == 0:
                raise AssayInputError(f"models {models[a]!r} and {models[b]!r} have no question in common: a paired "
                                      "comparison needs questions both answered"
                                      + (" (a question is a task and an item: are they scored on the same tasks?)"
                                         if has_task else ""))
    return shared


def _complete(present: np.ndarray, models: list[str], require_complete: bool):
    """The questions every model answered, each model's count, and the note when some lack questions (refused with
    ``require_complete``)."""
    full = present.all(axis=0)
    answered = {m: int(row.sum()) for m, row in zip(models, present)}
    notes = []
    if not full.all():
        lacking = [f"{m} ({answered[m]})" for m, row in zip(models, present) if not row.all()]
        if require_complete:
            raise AssayInputError(f"{len(lacking)} model(s) lack questions others answered ({', '.join(lacking[:5])}): "
                                  f"{int(full.sum())} of {present.shape[1]} questions are answered by every model "
                                  "(require_complete= refuses this; drop it to compare on the shared questions)")
        notes.append(f"{int(full.sum())} of {present.shape[1]} questions are answered by every model, and every "
                     f"estimate uses those {int(full.sum())}; model(s) that lack some (questions answered): "
                     f"{', '.join(lacking[:5])}" + (" ..." if len(lacking) > 5 else ""))
    return full, answered, notes


def _labels(first: pd.DataFrame, cols, has_task: bool, has_cluster: bool):
    """The shared questions' shown ids (``task/item`` with tasks), task codes and labels, cluster codes and labels."""
    tasks = task_labels = None
    if has_task:
        tcodes, tuniq = pd.factorize(first["task"].reindex(cols), sort=False)
        tasks, task_labels = tcodes.astype(np.int64), [str(u) for u in tuniq]
        items = [f"{t}/{i}" for t, i in zip(first["task"].reindex(cols), first["item"].reindex(cols))]
    else:
        items = [str(i) for i in cols]
    clusters = labels = None
    if has_cluster:
        codes, uniques = pd.factorize(first["cluster"].reindex(cols), sort=False)
        clusters, labels = codes.astype(np.int64), [str(u).split("\x1f")[-1] for u in uniques]
        if len(labels) < 2:
            raise AssayInputError("every shared question is in one cluster: a cluster-robust comparison needs at "
                                  "least 2 clusters")
    return items, tasks, task_labels, clusters, labels


def read_score_table(obj: Any, what: str) -> Any:
    """A score table given as a file (CSV, TSV, Parquet, JSONL) read into a DataFrame; anything else returned as
    given. A wide table written with its index (an unnamed, or a text, first column beside no ``model, item, score``
    columns) gets that column back as its index: the model names. Used for a replay table and a history
    (:mod:`assay.compare.live`)."""
    import os

    if not isinstance(obj, (str, os.PathLike)):
        return obj
    from pathlib import Path

    from .tables import read_plain

    p = Path(obj).expanduser()
    if not p.exists():
        raise AssayInputError(f"{what}: no file {str(p)!r}")
    df = read_plain(p)
    first = df.columns[0] if len(df.columns) else None
    if first is not None and (str(first).startswith("Unnamed") or (
            not {"model", "item", "score"} <= set(df.columns) and df[first].dtype == object)):
        df = df.set_index(first)
        df.index.name = None
    return df

