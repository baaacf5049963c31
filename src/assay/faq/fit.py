"""The history side of FAQ: the factor model assay fits when none is given, its on-disk cache, and what the
history predicts at a budget.

:func:`evaluate` / :func:`expect` (:mod:`assay.faq.api`) and :func:`protocol` (:mod:`assay.faq.protocol`) all start
from a history: they need factors fitted on it (:func:`default_factor_model`, fitted by :func:`fit_factors` and
cached under a hash of the history in :func:`factor_cache_dir`, or the caller's own :class:`FactorModel`, whose
latent dimension :func:`check_k` vets first), and, for a fixed budget, the calibration learnt on held-out families
of that history (:mod:`assay.faq.calibrate`), cached beside the fit. This module holds those steps so that both
entry points share them; none of it draws a question.
"""

from __future__ import annotations

import hashlib
import os
import warnings
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from ..data.faq import FAQMatrix, align_items, as_matrix, int8_bytes, observed, to_codes
from ..errors import AssayInputError
from .core import FAQParams
from .factor import FactorModel, default_groups

__all__ = ["default_factor_model", "fit_factors", "factor_cache_dir", "check_k", "PARALLEL_CV_ENTRIES"]

#: from this many observed history entries on, the default fit's cross-validation runs on 2 processes (the paper's
#: 2,212 x 12,032 history has 26.6 million; the 755 x 1,351 leaderboard one 1 million, where a process costs more
#: than it saves)
PARALLEL_CV_ENTRIES = 4_000_000

#: bump when the default factor fit changes, so cached fits from older versions are not reused
_FIT_VERSION = "faq-factors-5"


def default_factor_model(seed: int = 0, shape: tuple[int, int] | None = None) -> FactorModel:
    """The factor model assay fits when none is given.

    Model-level 3-fold cross-validation (``cv_by="models"``, whole families held out) over k in {2, 4, 8, 16}
    (those the history supports: (models + items) k at most 1/20 of the observed entries, k at most a quarter
    of min(models, items)) and lambda in {1, 3, 10}, with a per-item intercept, warm starts along lambda and
    early stopping in the CV fits. On the 755 x 1,351 leaderboard history it picks k = 8, lambda = 3.

    Parameters
    ----------
    seed : int, optional
        Seed of the cross-validation and the fits (default 0).
    shape : tuple of int or None, optional
        (models, items) or (models, items, observed entries) of the history, to keep only the k it supports
        (k = 1 if none); a large history also runs the CV in 2 processes (same numbers). None keeps every k.

    Returns
    -------
    FactorModel
        An unfitted factor model with these settings.
    """
    ks: tuple[int, ...] = (2, 4, 8, 16)
    n_jobs = 1
    if shape is not None:
        m, n, nobs = shape[0], shape[1], (shape[2] if len(shape) > 2 else shape[0] * shape[1])
        ks = tuple(k for k in ks if (m + n) * k * 20 <= nobs and 4 * k <= min(m, n)) or (1,)
        if nobs >= PARALLEL_CV_ENTRIES:
            n_jobs = 2  # same numbers as one process (FactorModel n_jobs); only the time changes
    return FactorModel(cv=3, cv_by="models", ks=ks, lambdas=(1.0, 3.0, 10.0), bias=True, seed=seed, max_iter=300,
                       cv_tol=1e-5, n_jobs=n_jobs)


def factor_cache_dir() -> Path:
    """Where fitted default factors are cached: ``$ASSAY_CACHE_DIR/factors`` or ``~/.cache/assay/factors``.

    Returns
    -------
    Path
        The cache directory (not created here).
    """
    root = os.environ.get("ASSAY_CACHE_DIR")
    base = Path(root).expanduser() if root else Path.home() / ".cache" / "assay"
    return base / "factors"


def _history_hash(H: np.ndarray, rows: Sequence[str], items: Sequence[str], settings: str) -> str:
    h = hashlib.sha256()
    h.update(_FIT_VERSION.encode())
    h.update(settings.encode())
    h.update(int8_bytes(H))
    h.update(repr(H.shape).encode())
    h.update("\x1f".join(map(str, rows)).encode())
    h.update("\x1e".join(map(str, items)).encode())
    return h.hexdigest()[:24]


def fit_factors(H: np.ndarray, rows: Sequence[str], items: Sequence[str], *, cache: bool = True,
                progress: Callable | None = None) -> tuple[FactorModel, dict]:
    """Fit :func:`default_factor_model` on a history matrix (or load it from the cache) -> (model, info).

    The fit is a function of the history alone (fixed internal seed, model families from the ``owner/`` part of
    the row ids), so it is cached under a hash of the history and its ids: the second run on the same history
    starts at once. ``info`` says whether the cache was used and where.

    Parameters
    ----------
    H : ndarray
        The history, models x items: float with NaN = missing, or int8 codes with -1 = missing
        (``as_matrix(..., codes=True)``).
    rows : sequence of str
        The history's model ids.
    items : sequence of str
        The history's item ids.
    cache : bool, default True
        Read the fit from the cache and write it there (a cache that cannot be written is reported, not an error).
    progress : callable, optional
        Progress callback of the fit.

    Returns
    -------
    tuple
        (the fitted :class:`FactorModel`, info ``{"cache": "hit" / "miss" / "not written (...)", "path", "key"}``).

    Raises
    ------
    AssayInputError
        When the history cannot support the model's number of factors.
    """
    from .io import load_factors, save_factors

    H = to_codes(H)  # held as int8 from here on (the cache key hashes the same bytes either way)
    nobs = int((H >= 0).sum())
    fm = default_factor_model(0, (H.shape[0], H.shape[1], nobs))
    settings = repr(sorted((k, v) for k, v in vars(fm).items() if k != "n_jobs"))  # n_jobs: same numbers
    key = _history_hash(H, rows, items, settings)
    path = factor_cache_dir() / f"{key}.npz"
    if cache and path.exists():
        try:
            cached = load_factors(path)
            if [str(c) for c in cached.col_labels_] == [str(c) for c in items]:
                return cached, {"cache": "hit", "path": str(path), "key": key}
        except AssayInputError:
            pass  # an unreadable cache entry is refitted and overwritten
    check_k(fm, H)
    groups = default_groups(rows)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # grid-edge notes are reported through summary()
        fm.fit(FAQMatrix(H, list(rows), list(items)), groups=groups, progress=progress)
    info = {"cache": "miss", "path": None, "key": key}
    if cache:
        # written whole under a name of this process's, then renamed: a process reading the cache (or fitting the
        # same history at the same time) never sees half a file
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        try:
            save_factors(fm, tmp)
            os.chmod(tmp, 0o600)
            tmp.replace(path)
            info["path"] = str(path)
        except OSError as e:  # a read-only home is not a reason to fail the evaluation
            tmp.unlink(missing_ok=True)
            info["cache"] = f"not written ({e.strerror or e})"
    return fm, info


def _factors(history, factors, *, cache=True, progress=None) -> tuple[FactorModel, np.ndarray | None, list[str], dict]:
    """Fitted factor model, the history matrix (aligned to the factors' items), its item ids and fit info."""
    if isinstance(history, FactorModel):
        factors, history = history, None
    if factors is not None and not isinstance(factors, FactorModel):
        raise AssayInputError(f"factors must be a FactorModel (fitted or not); got {type(factors).__name__}")
    H = None
    items = rows = None
    if history is not None:
        H, rows, items = as_matrix(history, "history", codes=True)  # int8 codes, -1 = missing
    info: dict = {"cache": "not used", "rows": rows}
    if factors is None:
        if H is None:
            raise AssayInputError("give a history to fit the factor model on, or a fitted FactorModel")
        factors, info = fit_factors(H, rows, items, cache=cache, progress=progress)
        info["rows"] = rows
    elif not hasattr(factors, "V_"):
        if H is None:
            raise AssayInputError("give a history to fit the factor model on, or a fitted FactorModel")
        check_k(factors, H)
        factors.fit(FAQMatrix(H, rows, items), progress=progress)
    fitted_items = [str(c) for c in factors.col_labels_]
    if items is not None and items != fitted_items:
        if sorted(items) != sorted(fitted_items):
            raise AssayInputError("the fitted factors and the history have different item ids")
        order = align_items(fitted_items, items, "the history")
        H = H[:, order]
    note = _unobserved_note(factors)
    if note:
        warnings.warn(note, stacklevel=3)
    return factors, H, fitted_items, info


def _unobserved_note(fm: FactorModel) -> str | None:
    empty = getattr(fm, "empty_cols_", np.array([], dtype=int))
    if not len(empty):
        return None
    return (f"{len(empty)} item(s) were never observed in the history; their predictions are 0.5 and FAQ samples "
            "them by the uniform mixing only")


def check_k(fm: FactorModel, H: np.ndarray) -> None:
    """Refuse latent dimensions the history cannot identify.

    The rule: k <= min(models, items) and at least as many observed entries as free parameters
    ((models + items) k).

    Parameters
    ----------
    fm : FactorModel
        The factor model; its ``ks`` are checked when it cross-validates, else its ``k``.
    H : ndarray
        The (models, items) history; only observed entries count, and only models and items with one.

    Raises
    ------
    AssayInputError
        If some k is more than the history supports; the message says which k would fit.
    """
    ks = list(fm.ks) if fm.cv is not None else [fm.k]
    obs = observed(H)
    m = int(obs.any(axis=1).sum())
    n = int(obs.any(axis=0).sum())
    nobs = int(obs.sum())
    too_big = [int(k) for k in ks if int(k) > min(m, n) or (m + n) * int(k) > nobs]
    if too_big:
        limit = min(min(m, n), nobs // max(m + n, 1))
        fix = (f"use k <= {limit}" if limit >= 1 else
               "it cannot fit any factor model: give the answers of more historical models")
        raise AssayInputError(f"latent dimension k = {', '.join(map(str, too_big))} is more than this history supports "
                              f"({m} models, {n} items, {nobs} observed entries); {fix}")


# ----------------------------------------------------------------------------------------------------
# what the history predicts at a budget (the calibration, cached beside the fit)


def _expectation(H, info: dict, fm: FactorModel, n_b: int, prm: FAQParams, alpha: float, *, cache: bool,
                 progress=None):
    """(Calibration or None, its summary dict or None, cache state): what the history says about this budget."""
    from .calibrate import cached_calibration

    rows = info.get("rows")
    if H is None or rows is None or n_b >= H.shape[1]:
        return None, None, "no history"
    cal, state = cached_calibration(H, rows, fm, info.get("key"), n_b, prm,
                                    cache_dir=factor_cache_dir() if cache else None, progress=progress)
    if cal is None:
        return None, None, state
    summ = cal.summary(alpha, prm.variance if prm.variance in cal.se else "conservative")
    summ["cache"] = state
    return cal, summ, state


def _learnt(cal, alpha: float, variance: str) -> dict:
    """The core's keywords for what the calibration learnt (a critical value, or the conservative rule's floor)."""
    got = cal.learnt(alpha, variance)
    return {"calibrated_crit": got["crit"] if np.isfinite(got["crit"]) else None,
            "calibrated_floor": got["floor"] if np.isfinite(got["floor"]) else None}
