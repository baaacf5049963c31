"""The two Open LLM Leaderboard v2 question banks of the FAQ paper, and a reader of a model's leaderboard details.

A bank is a list of lm-eval subtasks, each with its number of questions and the per-sample 0/1 field the
leaderboard scored it by. Its questions (the columns of a factor pack, :mod:`assay.datasets`) run subtask by
subtask in the listed order and, inside a subtask, by ``doc_id`` 0, 1, ..., size - 1. Item ids are
``<task>/<doc_id>``, e.g. ``leaderboard_bbh_navigate/17``.

:func:`read_details` turns a model's per-sample results on a bank (lm-eval ``--log_samples`` JSONL, or the same
rows as Parquet / CSV, such as the leaderboard's ``<org>__<model>-details`` datasets) into a 0/1 Series in the
bank's question order, the form :func:`assay.faq.evaluate` takes for a new model.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from ..errors import AssayInputError
from .logs import jsonl_samples

__all__ = ["BANKS", "bank_names", "bank_subtasks", "bank_index", "read_details", "details_task"]

_BBH = [
    ("boolean_expressions", 250), ("causal_judgement", 187), ("date_understanding", 250),
    ("disambiguation_qa", 250), ("formal_fallacies", 250), ("geometric_shapes", 250), ("hyperbaton", 250),
    ("logical_deduction_five_objects", 250), ("logical_deduction_seven_objects", 250),
    ("logical_deduction_three_objects", 250), ("movie_recommendation", 250), ("navigate", 250),
    ("object_counting", 250), ("penguins_in_a_table", 146), ("reasoning_about_colored_objects", 250),
    ("ruin_names", 250), ("salient_translation_error_detection", 250), ("snarks", 178),
    ("sports_understanding", 250), ("temporal_sequences", 250), ("tracking_shuffled_objects_five_objects", 250),
    ("tracking_shuffled_objects_seven_objects", 250), ("tracking_shuffled_objects_three_objects", 250),
    ("web_of_lies", 250),
]
_MATH = [("algebra", 307), ("counting_and_prob", 123), ("geometry", 132), ("intermediate_algebra", 280),
         ("num_theory", 154), ("prealgebra", 193), ("precalculus", 135)]

#: bank -> ((lm-eval task, number of questions, the 0/1 per-sample field), ...) in column order. The order and
#: sizes are those of the FAQ paper's release (``data/data_helpers.py``; its aggregators sort each subtask's
#: rows by ``doc_id``); the fields are the ones its aggregators read.
BANKS: dict[str, tuple[tuple[str, int, str], ...]] = {
    "mmlu-pro": (("leaderboard_mmlu_pro", 12032, "acc"),),
    "leaderboard-v2": tuple(
        [(f"leaderboard_bbh_{t}", n, "acc_norm") for t, n in _BBH]
        + [(f"leaderboard_gpqa_{t}", n, "acc_norm") for t, n in (("diamond", 198), ("extended", 546), ("main", 448))]
        + [("leaderboard_ifeval", 541, "prompt_level_loose_acc")]
        + [(f"leaderboard_math_{t}_hard", n, "exact_match") for t, n in _MATH]
        + [(f"leaderboard_musr_{t}", n, "acc_norm") for t, n in
           (("murder_mysteries", 250), ("object_placements", 256), ("team_allocation", 250))]
    ),
}


def bank_names() -> list[str]:
    """The names of the question banks.

    Returns
    -------
    list of str
        ``mmlu-pro`` and ``leaderboard-v2``.

    Examples
    --------
    >>> bank_names()
    ['mmlu-pro', 'leaderboard-v2']
    """
    return list(BANKS)


def bank_subtasks(bank: str) -> tuple[tuple[str, int, str], ...]:
    """The (task, size, field) triples of a bank (``mmlu-pro`` or ``leaderboard-v2``; a ``faq-`` prefix is accepted).

    Parameters
    ----------
    bank : str
        The bank's name.

    Returns
    -------
    tuple of (str, int, str)
        Per lm-eval task, its name, its number of questions and the 0/1 per-sample field it is scored by.

    Raises
    ------
    AssayInputError
        If there is no bank of that name.

    Examples
    --------
    >>> bank_subtasks("faq-mmlu-pro")
    (('leaderboard_mmlu_pro', 12032, 'acc'),)
    """
    key = bank[4:] if isinstance(bank, str) and bank.startswith("faq-") else bank
    if key not in BANKS:
        raise AssayInputError(f"no question bank {bank!r}; known: {', '.join(BANKS)} (FAQ packs: "
                              f"{', '.join('faq-' + b for b in BANKS)})")
    return BANKS[key]


def bank_index(bank: str) -> pd.DataFrame:
    """One row per question of the bank.

    Parameters
    ----------
    bank : str
        The bank's name (see :func:`bank_subtasks`).

    Returns
    -------
    DataFrame
        In column order: ``column`` (0..N-1), ``task`` (the lm-eval task), ``doc_id`` (0-based inside the task),
        ``item`` (``<task>/<doc_id>``, the FAQ item id) and ``metric`` (the 0/1 per-sample field the leaderboard
        scored it by).

    Raises
    ------
    AssayInputError
        If there is no bank of that name.

    Examples
    --------
    >>> bank_index("mmlu-pro")["item"].iloc[1]
    'leaderboard_mmlu_pro/1'
    """
    subs = bank_subtasks(bank)
    task = np.concatenate([np.full(n, t, dtype=object) for t, n, _ in subs])
    doc = np.concatenate([np.arange(n) for _, n, _ in subs])
    metric = np.concatenate([np.full(n, m, dtype=object) for _, n, m in subs])
    item = [f"{t}/{d}" for t, d in zip(task, doc)]
    return pd.DataFrame({"column": np.arange(len(doc)), "task": task, "doc_id": doc, "item": item, "metric": metric})


def details_task(path: str | Path, tasks: Iterable[str]) -> str | None:
    """The task of ``tasks`` a details file belongs to, read from its path.

    The innermost path component that names one (``samples_leaderboard_bbh_navigate_2024-06-26T....jsonl``, or a Hub
    config folder such as ``org__model__leaderboard_bbh_navigate/latest/0000.parquet``); the longest name wins, so a
    task whose name extends another's is read whole.

    Parameters
    ----------
    path : str or Path
        The details file.
    tasks : Iterable of str
        The task names.

    Returns
    -------
    str or None
        The task; None when no component names one.

    Examples
    --------
    >>> details_task("out/samples_leaderboard_bbh_navigate_2024-06-26T10.jsonl",
    ...              ["leaderboard_bbh", "leaderboard_bbh_navigate"])
    'leaderboard_bbh_navigate'
    """
    names = sorted(tasks, key=len, reverse=True)
    pat = re.compile(r"(?<![A-Za-z0-9])(" + "|".join(map(re.escape, names)) + r")(?![A-Za-z0-9])")
    for part in reversed(Path(path).parts):
        # the alternation lists longer names first, so a task whose name extends another's is read whole
        hits = [m.group(1) for m in pat.finditer(part)]
        if hits:
            return max(hits, key=len)
    return None


_DATE = re.compile(r"_(\d{4}-\d{2}-\d{2}T[0-9\-.:]+)\.\w+$")


def _files(paths: Sequence[Path]) -> list[Path]:
    out: list[Path] = []
    for p in paths:
        if not p.exists():
            raise AssayInputError(f"{p}: no such file or directory")
        if p.is_dir():
            out += sorted(f for ext in ("*.jsonl", "*.parquet", "*.csv") for f in p.rglob(ext))
        else:
            out.append(p)
    return out


def _read_rows(f: Path, metric: str) -> pd.DataFrame:
    """``doc_id``, ``score`` (and ``filter`` when present) of one details file."""
    suffix = f.suffix.lower()
    try:
        if suffix == ".jsonl":
            recs = []
            for rec in jsonl_samples(f):
                recs.append({"doc_id": rec.get("doc_id"), "score": rec.get(metric, _MISSING),
                             "filter": rec.get("filter", "none")})
            df = pd.DataFrame(recs, columns=["doc_id", "score", "filter"])
            if len(df) and (df["score"].map(lambda v: v is _MISSING)).all():
                keys = sorted(k for k in rec if not isinstance(rec[k], (dict, list)))
                raise AssayInputError(f"{f}: no field {metric!r}, the 0/1 field this task is scored by (the lines "
                                      f"have {', '.join(keys)})")
            df["score"] = [None if v is _MISSING else v for v in df["score"]]
            if len(df) and df["doc_id"].isna().any():
                raise AssayInputError(f"{f}: a line without doc_id")
            return df
        if suffix == ".parquet":
            df = pd.read_parquet(f)
        elif suffix == ".csv":
            df = pd.read_csv(f)
        else:
            raise AssayInputError(f"{f}: details must be lm-eval JSONL, Parquet or CSV files")
    except (OSError, ValueError) as e:
        if isinstance(e, AssayInputError):
            raise
        raise AssayInputError(f"{f}: cannot read it ({e})") from None
    missing = [c for c in ("doc_id", metric) if c not in df.columns]
    if missing:
        raise AssayInputError(f"{f}: no column {', '.join(map(repr, missing))} (needs doc_id and {metric!r}, the 0/1 "
                              f"field this task is scored by; it has {', '.join(map(str, df.columns[:12]))})")
    out = pd.DataFrame({"doc_id": df["doc_id"].to_numpy(), "score": df[metric].to_numpy()})
    out["filter"] = df["filter"].astype(str).to_numpy() if "filter" in df.columns else "none"
    return out


_MISSING = object()


def _score(v) -> float:
    if v is _MISSING or v is None:
        return np.nan
    if isinstance(v, (bool, np.bool_)):
        return float(v)
    if isinstance(v, (int, float, np.integer, np.floating)):
        return float(v)
    if isinstance(v, str) and v.strip().lower() in ("true", "false", "0", "1", "0.0", "1.0"):
        return 1.0 if v.strip().lower() in ("true", "1", "1.0") else 0.0
    return np.nan


def read_details(path, bank: str, *, model: str | None = None) -> pd.Series:
    """One model's 0/1 answers on a bank, from its per-sample results, in the bank's question order.

    Parameters
    ----------
    path : a directory (searched recursively for ``*.jsonl``, ``*.parquet``, ``*.csv``), a file, or a list of
        them: lm-eval ``--log_samples`` files ``samples_leaderboard_<task>_<date>.jsonl`` (what the leaderboard's
        ``open-llm-leaderboard/<org>__<model>-details`` datasets hold), or tables with the same rows (``doc_id``
        and the task's field) under a path that names the task (the Hub's Parquet export
        ``<org>__<model>__leaderboard_<task>/latest/*.parquet``). Files of other tasks are ignored. When a task
        has several dated files (several runs), the newest is read, as the leaderboard's ``latest`` split does.
    bank : ``mmlu-pro`` / ``leaderboard-v2`` (or the pack names ``faq-mmlu-pro`` / ``faq-leaderboard-v2``).
    model : the model id (default: ``model_name`` of a ``results_*.json`` beside the files, else the folder
        name).

    Each task's 0/1 field is the one the FAQ paper's factors were fitted on: ``acc`` (MMLU-Pro), ``acc_norm``
    (BBH, GPQA, MuSR), ``prompt_level_loose_acc`` (IFEval), ``exact_match`` (MATH-hard). A task logged with
    several lm-eval filters keeps the first filter seen.

    Returns
    -------
    pandas.Series
        0.0 / 1.0, index = the bank's item ids (``<task>/<doc_id>``) in column order, name = the model id.

    Raises
    ------
    AssayInputError
        a task of the bank has no file, a ``doc_id`` is missing, repeated or outside the task, a value is not
        0/1, or the task's field is absent.
    """
    subs = bank_subtasks(bank)
    paths = [Path(p) for p in (path if isinstance(path, (list, tuple)) else [path])]
    files = _files(paths)
    tasks = {t: (n, m) for t, n, m in subs}
    found: dict[str, list[Path]] = {}
    for f in files:
        t = details_task(f, tasks)
        if t is not None:
            found.setdefault(t, []).append(f)
    absent = [t for t in tasks if t not in found]
    if absent:
        have = ", ".join(sorted(found)) or "none"
        raise AssayInputError(
            f"{', '.join(map(str, paths))}: no details for {len(absent)} of the {len(tasks)} task(s) of bank "
            f"{bank!r}: {', '.join(absent)} ({sum(tasks[t][0] for t in absent)} questions). FAQ estimates the "
            f"accuracy over every question of the bank, so it needs the model's answers on all of them (found: "
            f"{have}). Files are matched by a path naming the task, e.g. samples_{absent[0]}_<date>.jsonl")
    values = []
    chosen: list[Path] = []
    for t, (n, metric) in tasks.items():
        fs = found[t]
        if len(fs) > 1:
            dated = [(m.group(1), f) for f in fs for m in [_DATE.search(f.name)] if m]
            if len(dated) != len(fs):
                raise AssayInputError(f"task {t}: {len(fs)} files ({', '.join(map(str, fs[:3]))}) and no run date in "
                                      "their names to pick the newest; keep one")
            fs = [max(dated, key=lambda d: d[0])[1]]
        f = fs[0]
        chosen.append(f)
        rows = _read_rows(f, metric)
        if len(rows) and rows["filter"].nunique() > 1:
            rows = rows[rows["filter"] == rows["filter"].iloc[0]]
        doc = pd.to_numeric(rows["doc_id"], errors="coerce")
        if doc.isna().any() or (doc != doc.round()).any():
            raise AssayInputError(f"{f}: doc_id {rows['doc_id'][doc.isna() | (doc != doc.round())].iloc[0]!r} is "
                                  "not an integer")
        doc = doc.astype(int).to_numpy()
        dup = pd.Series(doc).duplicated().to_numpy()
        if dup.any():
            d0 = int(doc[dup][0])
            raise AssayInputError(f"{f}: doc_id {d0} appears {int((doc == d0).sum())} times; keep one result per "
                                  "question")
        out = (doc < 0) | (doc >= n)
        if out.any():
            raise AssayInputError(f"{f}: doc_id {int(doc[out][0])} is outside task {t}, which has doc_id 0..{n - 1} "
                                  f"in this bank ({int(out.sum())} such row(s)); the details are of another version of "
                                  "the task")
        if len(doc) < n:
            miss = np.setdiff1d(np.arange(n), doc)
            more = ", ..." if len(miss) > 5 else ""
            raise AssayInputError(f"{f}: {len(miss)} of the {n} questions of task {t} have no result (doc_id "
                                  f"{', '.join(map(str, miss[:5]))}{more}); FAQ needs every answer of the bank (run "
                                  "the task without --limit)")
        sc = np.array([_score(v) for v in rows["score"]])
        bad = ~np.isin(sc, (0.0, 1.0))
        if bad.any():
            raise AssayInputError(f"{f}: {metric} = {rows['score'].iloc[int(np.flatnonzero(bad)[0])]!r} at doc_id "
                                  f"{int(doc[bad][0])}; the answers must be 0/1 ({int(bad.sum())} bad value(s))")
        v = np.empty(n)
        v[doc] = sc
        values.append(v)
    idx = bank_index(bank)
    return pd.Series(np.concatenate(values), index=pd.Index(idx["item"], name="item"), name=_model_name(model, chosen))


def _model_name(model: str | None, files: list[Path]) -> str:
    if model:
        return str(model)
    for d in dict.fromkeys(f.parent for f in files):
        for r in sorted(d.glob("results_*.json"), reverse=True):
            try:
                meta = json.loads(r.read_text())
            except (OSError, ValueError):
                continue
            if isinstance(meta, dict) and meta.get("model_name"):
                return str(meta["model_name"])
    parent = files[0].parent.name if files else ""
    return parent if parent and parent not in ("latest", ".") else "new"
