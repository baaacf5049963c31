"""FAQ factor packs: the FAQ paper's fitted factors for the two Open LLM Leaderboard v2 question banks.

A pack holds the question factors ``V`` (questions x 64) and the historical models' factors ``U`` (models x 64)
of the paper's final fit on its fully observed history (Apache-2.0; README.md in this folder), plus the question
index (the lm-eval task and ``doc_id`` of every column). With a pack, a model that has the leaderboard's per-sample
results ("details") for a bank can run FAQ on it with no history of its own::

    from assay import faq
    from assay.datasets import faq_pack_factors, read_faq_pack_answers

    fm = faq_pack_factors("faq-leaderboard-v2")
    answers = read_faq_pack_answers("details/", "faq-leaderboard-v2")   # 0/1, in the pack's column order
    res = faq.evaluate(fm, answers, budget=0.05, seed=0)

The prior of a new model's factor is the mean and the sample covariance (ddof 1) of the rows of ``U``, as in the
paper. The paper's factor model has no per-question intercept.
"""

from __future__ import annotations

from importlib import resources

import numpy as np
import pandas as pd

from ..data.leaderboard import bank_index, read_details
from ..errors import AssayInputError

__all__ = ["FAQ_PACKS", "faq_packs", "load_faq_pack", "faq_pack_index", "faq_pack_factors", "read_faq_pack_answers"]

#: pack name -> (file, bank of :mod:`assay.data.leaderboard`, release folder, description)
FAQ_PACKS: dict[str, tuple[str, str, str, str]] = {
    "faq-mmlu-pro": (
        "faq_pack_mmlu_pro.npz", "mmlu-pro", "mmlu-pro",
        "FAQ pack: the paper's fitted factors for Open LLM Leaderboard v2 MMLU-Pro (12,032 questions x K=64, "
        "prior from 2,212 models; Apache-2.0); assay faq --factors faq-mmlu-pro",
    ),
    "faq-leaderboard-v2": (
        "faq_pack_leaderboard_v2.npz", "leaderboard-v2", "bbh+gpqa+ifeval+math+musr",
        "FAQ pack: the paper's fitted factors for Open LLM Leaderboard v2 BBH+GPQA+IFEval+MATH-hard+MuSR "
        "(38 tasks, 9,574 questions x K=64, prior from 2,211 models; Apache-2.0); assay faq --factors "
        "faq-leaderboard-v2",
    ),
}

#: the paper's fit (fully observed history): K = 64, AdamW weight decay 0.1 on U and V, 2,000 full-batch steps
_K, _WEIGHT_DECAY, _STEPS = 64, 0.1, 2000


def faq_packs() -> list[str]:
    """Names of the FAQ packs shipped inside the package.

    Returns
    -------
    list of str
        The keys of :data:`FAQ_PACKS`.

    Examples
    --------
    >>> faq_packs()
    ['faq-mmlu-pro', 'faq-leaderboard-v2']
    """
    return list(FAQ_PACKS)


def _entry(name: str) -> tuple[str, str, str, str]:
    if not isinstance(name, str) or name not in FAQ_PACKS:
        raise AssayInputError(f"no FAQ pack {name!r}; known packs: {', '.join(FAQ_PACKS)} (assay datasets lists them)")
    return FAQ_PACKS[name]


def load_faq_pack(name: str) -> dict:
    """A pack's arrays.

    Parameters
    ----------
    name : str
        One of :func:`faq_packs`.

    Returns
    -------
    dict of str to ndarray
        ``V`` (N x 64 float32, one row per question, in column order), ``U`` (models x 64 float32), ``task`` and
        ``doc_id`` (N, the question index), ``subtask``, ``size``, ``metric`` (one per lm-eval task, in order: its
        number of questions and the 0/1 per-sample field it is scored by), ``item`` (N ids ``<task>/<doc_id>``),
        ``prior_mean`` (64) and ``prior_cov`` (64 x 64, float64).

    Raises
    ------
    AssayInputError
        If there is no pack of that name.
    """
    file = _entry(name)[0]
    with resources.files(__package__).joinpath(file).open("rb") as fh:
        with np.load(fh, allow_pickle=False) as z:
            out = {k: z[k] for k in z.files}
    U = out["U"].astype(np.float64)
    out["item"] = np.array([f"{t}/{d}" for t, d in zip(out["task"], out["doc_id"])])
    out["prior_mean"] = U.mean(axis=0)
    out["prior_cov"] = np.cov(U, rowvar=False, ddof=1)
    return out


def faq_pack_index(name: str) -> pd.DataFrame:
    """The pack's question index, one row per column of ``V``.

    Parameters
    ----------
    name : str
        One of :func:`faq_packs`.

    Returns
    -------
    DataFrame
        ``column``, ``task`` (the lm-eval task), ``doc_id``, ``item`` (``<task>/<doc_id>``, FAQ's item id) and
        ``metric`` (the 0/1 per-sample field).

    Raises
    ------
    AssayInputError
        If there is no pack of that name.
    """
    return bank_index(_entry(name)[1])


def faq_pack_factors(name: str):
    """A fitted :class:`assay.faq.FactorModel` from a pack.

    To pass as ``history`` (or ``factors=``) to :func:`assay.faq.evaluate`: ``V_`` the question factors, ``U_``
    the paper's historical models, the prior from ``U_``, no per-question intercept, item ids ``<task>/<doc_id>``.
    Without a history FAQ's interval is the conservative Student t one (it cannot be calibrated, and says so).

    Parameters
    ----------
    name : str
        One of :func:`faq_packs`.

    Returns
    -------
    FactorModel
        The fitted model (``pack_`` is ``name``; the log-losses are NaN, as the paper reports none).

    Raises
    ------
    AssayInputError
        If there is no pack of that name.
    """
    from ..faq.factor import FactorModel

    _, bank, _, _ = _entry(name)
    z = load_faq_pack(name)
    fm = FactorModel(k=_K, weight_decay=_WEIGHT_DECAY, bias=False, seed=0)
    fm.U_ = z["U"].astype(np.float64)
    fm.V_ = z["V"].astype(np.float64)
    fm.b_ = np.zeros(len(fm.V_))
    fm.prior_mean_, fm.prior_cov_ = z["prior_mean"], z["prior_cov"]
    fm.empty_rows_ = np.array([], dtype=int)
    fm.empty_cols_ = np.array([], dtype=int)
    fm.k_, fm.weight_decay_ = _K, _WEIGHT_DECAY
    # the paper reports validation accuracy, not log-losses; the history itself is not part of the release
    fm.train_logloss_ = fm.heldout_logloss_ = fm.baseline_logloss_ = float("nan")
    fm.overfit_warning_ = False
    fm.n_observed_ = int(fm.U_.shape[0] * fm.V_.shape[0])
    fm.n_iter_, fm.converged_ = _STEPS, None
    fm.row_labels_ = [f"{name}/history/{i}" for i in range(len(fm.U_))]
    fm.col_labels_ = [str(i) for i in z["item"]]
    fm.cv_results_ = None
    fm.pack_ = name
    return fm


def read_faq_pack_answers(path, name: str, *, model: str | None = None) -> pd.Series:
    """A new model's 0/1 answers on a pack's bank, in the pack's column order, from its leaderboard details.

    The details are lm-eval ``samples_leaderboard_<task>_<date>.jsonl`` files or the same rows as Parquet / CSV:
    see :func:`assay.data.leaderboard.read_details`.

    Parameters
    ----------
    path : str, path-like or list of them
        A directory (searched recursively), a file, or a list of them (:func:`assay.data.leaderboard.read_details`).
    name : str
        The pack (:func:`faq_packs`), e.g. ``"faq-leaderboard-v2"``.
    model : str or None, optional
        The model id; None (the default) for ``model_name`` of a ``results_*.json`` beside the files, else the
        folder name.

    Returns
    -------
    pandas.Series
        0.0 / 1.0, index = the bank's item ids (``<task>/<doc_id>``) in the pack's column order, name = the model id.

    Raises
    ------
    AssayInputError
        When ``name`` is not a shipped pack, or the details do not cover the bank (a task has no file, a ``doc_id``
        is missing, repeated or outside the task, a value is not 0/1, or the task's field is absent).
    """
    return read_details(path, _entry(name)[1], model=model)

