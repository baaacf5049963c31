"""Save and load fitted FAQ factor models (``.npz``), so a CV fit is paid once; read answer files
(:func:`read_answers`, :func:`history_items`)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..errors import AssayInputError
from .factor import FactorModel

__all__ = ["save_factors", "load_factors", "read_answers", "history_items"]

_ARRAYS = ("U_", "V_", "b_", "prior_mean_", "prior_cov_", "empty_rows_", "empty_cols_")
_SCALARS = ("k_", "weight_decay_", "bias", "train_logloss_", "heldout_logloss_", "baseline_logloss_",
            "overfit_warning_", "n_observed_", "n_iter_", "converged_")


def save_factors(fm: FactorModel, path: str | Path) -> Path:
    """Write a fitted FactorModel to ``path`` (.npz): factors, prior, item ids and the fit's diagnostics."""
    if not hasattr(fm, "V_"):
        raise AssayInputError("the factor model is not fitted; nothing to save")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = {k: (v.item() if isinstance(v, np.generic) else v) for k in _SCALARS for v in [getattr(fm, k)]}
    meta["col_labels_"] = [str(c) for c in fm.col_labels_]
    meta["row_labels_"] = [str(r) for r in fm.row_labels_]
    with open(path, "wb") as f:
        np.savez_compressed(f, **{k: np.asarray(getattr(fm, k)) for k in _ARRAYS}, meta=np.array(json.dumps(meta)))
    return path


def load_factors(path: str | Path) -> FactorModel:
    """Read a FactorModel written by :func:`save_factors`; it can be passed as ``factors=`` to FAQ."""
    path = Path(path)
    if not path.exists():
        raise AssayInputError(f"no such factors file: {path}")
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in _ARRAYS}
            meta = json.loads(str(z["meta"]))
    except (OSError, KeyError, ValueError) as e:
        raise AssayInputError(f"{path} is not a factors file written by assay ({e})") from None
    fm = FactorModel(k=int(meta["k_"]), weight_decay=float(meta["weight_decay_"]), bias=bool(meta["bias"]))
    for k, v in arrays.items():
        setattr(fm, k, v)
    for k in _SCALARS:
        setattr(fm, k, meta[k])
    fm.col_labels_ = meta["col_labels_"]
    fm.row_labels_ = meta["row_labels_"]
    fm.cv_results_ = None
    return fm


def read_answers(path: str | Path, what: str = "answers"):
    """Models' 0/1 answers from a file: a wide table (a ``model`` column, or the first column, is the model id; one
    column per item), a long one (``model, item, score``), or an lm-eval / inspect / HELM log (read by
    :mod:`assay.ingest`). ``what`` names the file in errors. The form :func:`assay.faq.evaluate` takes."""
    import pandas as pd

    from .. import data as d

    path = Path(path)
    table = d.read_table(path, text_columns=("model", "item"))
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
    import pandas as pd

    if isinstance(hist, pd.DataFrame) and {"model", "item", "score"} <= set(hist.columns):
        return list(dict.fromkeys(hist["item"].astype(str)))
    return [str(x) for x in hist.columns]
