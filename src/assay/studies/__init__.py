"""Monte Carlo studies that reproduce the papers' simulation tables.

Each study is a function ``fn(*, trials, seed, workers, progress, **options) -> StudyResult``
registered under a name (``assay study NAME``). A study splits its work into tasks (one per
configuration), gives each task a child seed spawned from the root seed, and runs them through
:mod:`assay.parallel`, so its numbers do not depend on the number of workers.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..errors import AssayInputError
from ..results import Result

__all__ = ["StudyResult", "STUDIES", "run_study", "register", "check_counts"]

STUDIES: dict[str, Callable[..., "StudyResult"]] = {}


class StudyResult(Result):
    """Rows of a simulation study: each row carries its parameters and its figures."""

    method = "study"
    main_table = "rows"

    @property
    def rows(self):
        return self.tables["rows"]

    def summary(self) -> str:
        name = self.params.get("study", "study")
        head = f"{name} (assay {self.version}): {self.params.get('trials')} trials per row, seed = {self.seed}"
        notes = [f"note: {n}" for n in self.info.get("notes", [])]
        extra = [f"{k}: {v}" for k, v in self.info.items() if k != "notes"]
        return "\n".join([head, self.rows.to_string(index=False, float_format=lambda x: f"{x:.4f}"), *extra, *notes])


def check_counts(**kw: int) -> None:
    """Check that every Monte Carlo count given (trials, gt, n_boot, n_max, ...) is a positive integer; n_boot >= 20.

    Parameters
    ----------
    **kw : int
        The counts, by name (the name appears in the error message).

    Raises
    ------
    AssayInputError
        When a count is not a positive integer (a bool included), or ``n_boot`` is below 20.

    Examples
    --------
    >>> check_counts(trials=10, n_boot=20)
    >>> check_counts(n_boot=10)
    Traceback (most recent call last):
    ...
    assay.errors.AssayInputError: n_boot must be at least 20, got 10
    """
    for k, v in kw.items():
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise AssayInputError(f"{k} must be a positive integer, got {v!r}")
    if kw.get("n_boot", 100) < 20:
        raise AssayInputError(f"n_boot must be at least 20, got {kw['n_boot']}")


def register(name: str) -> Callable[[Callable[..., StudyResult]], Callable[..., StudyResult]]:
    """Register a study function under ``name`` in :data:`STUDIES` (a decorator factory).

    Parameters
    ----------
    name : str
        The study's name, as :func:`run_study` and the command line take it (e.g. ``"siren-a"``); a later
        registration under the same name replaces the earlier one.

    Returns
    -------
    callable
        A decorator that stores the study function in :data:`STUDIES` and returns it unchanged.
    """
    def deco(fn: Callable[..., StudyResult]) -> Callable[..., StudyResult]:
        STUDIES[name] = fn
        return fn

    return deco


def _load() -> None:
    """Import the study modules (each registers its studies)."""
    from . import siren as _siren  # noqa: F401

    from . import autoeval as _autoeval  # noqa: F401
    from . import autoeval_real as _autoeval_real  # noqa: F401
    from . import psdme as _psdme  # noqa: F401
    from . import faq as _faq  # noqa: F401
    from . import quickscope as _quickscope  # noqa: F401


def run_study(name: str, **kwargs: Any) -> StudyResult:
    """Run the study registered as ``name`` (e.g. ``"siren-a"``).

    Parameters
    ----------
    name : str
        The study's registered name (a key of :data:`STUDIES`, once the study modules are imported).
    **kwargs : Any
        Passed to the study function (``trials``, ``seed``, ...).

    Returns
    -------
    StudyResult
        The study's result; ``level["n_meaning"]`` says what n counts (Monte Carlo trials per row unless the
        study says otherwise), and ``info["seed_source"]`` is ``"generator"`` when a seed was given but not
        recorded.

    Raises
    ------
    AssayInputError
        When no study is registered as ``name`` (the message lists those available).
    """
    _load()
    if name not in STUDIES:
        raise AssayInputError(f"unknown study {name!r}; available: {', '.join(sorted(STUDIES))}")
    result = STUDIES[name](**kwargs)
    # one vocabulary: n and what it counts, and where an unrecorded seed came from
    result.level.setdefault("n_meaning", "Monte Carlo trials per row (column trials where rows differ)")
    if result.seed is None and kwargs.get("seed") is not None:
        result.info.setdefault("seed_source", "generator")
    return result


def available() -> list[str]:
    _load()
    return sorted(STUDIES)
