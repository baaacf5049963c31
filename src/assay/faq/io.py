"""Save and load fitted FAQ factor models (``.npz``), so a CV fit is paid once (answer files are read by
:func:`assay.data.faq.read_answers`, re-exported here)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..errors import AssayInputError
from .factor import FactorModel

__all__ = ["save_factors", "load_factors", "read_answers", "history_items"]

from ..data.faq import history_items, read_answers  # noqa: E402  (answer files are read by the data layer)

_ARRAYS = ("U_", "V_", "b_", "prior_mean_", "prior_cov_", "empty_rows_", "empty_cols_")
_SCALARS = ("k_", "weight_decay_", "bias", "train_logloss_", "heldout_logloss_", "baseline_logloss_",
            "overfit_warning_", "n_observed_", "n_iter_", "converged_")


def save_factors(fm: FactorModel, path: str | Path) -> Path:
    """Write a fitted FactorModel to ``path`` (.npz): factors, prior, item ids and the fit's diagnostics.

    Parameters
    ----------
    fm : FactorModel
        A fitted factor model.
    path : str or Path
        Where to write; missing parent folders are created.

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    AssayInputError
        If ``fm`` is not fitted.
    """
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
    """Read a FactorModel written by :func:`save_factors`; it can be passed as ``factors=`` to FAQ.

    Parameters
    ----------
    path : str or Path
        A .npz file written by :func:`save_factors`.

    Returns
    -------
    FactorModel
        The fitted factor model (without cross-validation results).

    Raises
    ------
    AssayInputError
        If the file does not exist or is not a factors file written by assay.
    """
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
