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
    """Every Monte Carlo count given (trials, gt, n_boot, n_max, ...) is a positive integer; n_boot >= 20."""
    for k, v in kw.items():
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise AssayInputError(f"{k} must be a positive integer, got {v!r}")
    if kw.get("n_boot", 100) < 20:
        raise AssayInputError(f"n_boot must be at least 20, got {kw['n_boot']}")


def register(name: str) -> Callable[[Callable[..., StudyResult]], Callable[..., StudyResult]]:
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
    """Run the study registered as ``name`` (e.g. ``"siren-a"``)."""
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
