"""assay: LLM evaluation with statistical guarantees.

One data model, six methods, one command line:

* :mod:`assay.siren` (SIREN): selection-aware intervals for tune-then-deploy procedures;
* :mod:`assay.autoeval` (R-AutoEval+): risk certificates from few human and many LLM-judge labels;
* :mod:`assay.faq` (FAQ): a new model's benchmark accuracy from a few actively chosen questions;
* :mod:`assay.psdme` (PS-DME): KPI distribution bands for configurations pre-selected on the same data;
* :mod:`assay.quickscope` (QuickScope): certified-hard regions of a generated benchmark;
* :mod:`assay.compare`: which of several models is better, which are tied, where each ranks, the claims holding together.

Around them: :mod:`assay.data` (reading and validating tables; :mod:`assay.ingest` reads lm-eval / inspect / HELM
logs), :mod:`assay.models` (querying models, journaled), :mod:`assay.stats` (method-free mathematics),
:mod:`assay.results` (the Result every method returns), :mod:`assay.report`, :mod:`assay.studies`.

``import assay`` is cheap: every submodule loads on first use (``assay.faq.protocol`` works right after
``import assay``), so ``assay --version`` answers without importing numpy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__

#: public submodules, loaded on first attribute access
_SUBMODULES = ("autoeval", "benchmarks", "compare", "data", "datasets", "errors", "faq", "ingest", "models", "parallel",
               "progress", "psdme", "quickscope", "report", "results", "seeds", "siren", "stats", "studies")
#: names re-exported at the top level -> the submodule that defines them
_NAMES = {"AssayError": "errors", "AssayInputError": "errors", "AssayBackendError": "errors",
          "Interval": "results", "Result": "results", "read_table": "data"}

__all__ = ["__version__", *_NAMES, *_SUBMODULES]

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from . import (autoeval, benchmarks, compare, data, datasets, errors, faq, ingest, models, parallel, progress,  # noqa: F401
                   psdme, quickscope, report, results, seeds, siren, stats, studies)  # noqa: F401
    from .data import read_table  # noqa: F401
    from .errors import AssayBackendError, AssayError, AssayInputError  # noqa: F401
    from .results import Interval, Result  # noqa: F401


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        module = importlib.import_module(f".{name}", __name__)
        globals()[name] = module
        return module
    if name in _NAMES:
        value = getattr(importlib.import_module(f".{_NAMES[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'assay' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
