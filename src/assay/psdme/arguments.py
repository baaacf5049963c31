"""PS-DME's names and argument checks, shared by the core on arrays and the entry on tables.

The method, band and failure-probability names (:data:`METHODS`, :data:`CORE_METHODS`, :data:`BANDS`,
:data:`DEFAULT_GAMMAS`) and the checks of PS-DME's own arguments (the band, the gammas, the samples); each raises an
:class:`~assay.errors.AssayInputError` that says what was expected. Error levels are checked by
:func:`assay.checks.level`, as everywhere.
"""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from ..errors import AssayInputError

METHODS = ("ps-dme", "ss-dme", "bonferroni", "naive", "auto")
CORE_METHODS = ("ps-dme", "ss-dme", "bonferroni", "naive")  # "auto" is a choice among these, made by bands()
BANDS = ("dkw", "berk-jones")
DEFAULT_GAMMAS = (0.01, 0.05, 0.1)
_BAND_ALIASES = {"bj": "berk-jones", "berk_jones": "berk-jones"}


def _is_number(v: Any) -> bool:
    return not isinstance(v, bool) and isinstance(v, (int, float, np.integer, np.floating))


def _check_band(band: Any) -> str:
    band = _BAND_ALIASES.get(band, band)
    if band not in BANDS:
        raise AssayInputError(f"band must be 'dkw' or 'berk-jones', got {band!r}")
    return band


def _check_gammas(gammas: Iterable[float]) -> np.ndarray:
    try:
        g = np.asarray(list(gammas), dtype=float)
    except (TypeError, ValueError):
        raise AssayInputError(f"gammas must be numbers in (0, 1), got {gammas!r}") from None
    if g.size == 0 or np.any(~np.isfinite(g)) or np.any((g <= 0) | (g >= 1)):
        raise AssayInputError(f"gammas must be numbers in (0, 1), got {list(gammas)!r}")
    return g


def _check_samples(samples: Any, what: str = "samples") -> np.ndarray | list[np.ndarray]:
    """A (K, n) float array, or a list of K one-dimensional float arrays (n_k may differ)."""
    if isinstance(samples, np.ndarray) and samples.ndim == 2:
        out: np.ndarray | list[np.ndarray] = np.asarray(samples, dtype=float)
        rows = [out] if out.size else []
        empty = out.shape[0] == 0 or out.shape[1] == 0
    else:
        try:
            out = [np.asarray(v, dtype=float) for v in samples]
        except (TypeError, ValueError):
            raise AssayInputError(f"{what} must be a list of 1-D arrays of numbers or a 2-D array") from None
        if any(v.ndim != 1 for v in out):
            raise AssayInputError(f"{what} must be a list of 1-D arrays of numbers or a 2-D array")
        rows = out
        empty = not out or any(v.size == 0 for v in out)
    if empty:
        raise AssayInputError(f"{what} needs at least one configuration, each with at least one observation")
    if any(not np.isfinite(v).all() and (np.isnan(v).any() or np.isneginf(v).any()) for v in rows):
        raise AssayInputError(f"{what} contain NaN or -inf (a failed request may be +inf)")
    return out
