"""FAQ: Factorized Active Querying (Wu, Nair & Candès 2026).

Estimate a new model's accuracy over a whole benchmark from a few adaptively chosen questions, with a
confidence interval that is valid whatever the factor model's quality (Proactive Active Inference).

Three layers: :mod:`assay.data.faq` turns answer tables into arrays (:func:`as_matrix`, ``prepare_answers``),
:func:`estimate` (= :func:`assay.faq.core.estimate`) is the core on arrays (factors, answers -> an
:class:`FAQEstimate`), and :func:`evaluate` / :func:`protocol` are the entry points on tables that package a Result.

>>> import assay.faq as faq
>>> res = faq.evaluate(history, new_answers, budget=0.05, seed=0)   # doctest: +SKIP
>>> res.estimates[["estimate", "ci_low", "ci_high"]]                # doctest: +SKIP
>>> low, high = res.confidence_interval()                           # doctest: +SKIP
"""

from ..data.faq import as_matrix
from . import api  # noqa: F401
from .api import FAQResult, evaluate, expect, resolve_budget
from .calibrate import Calibration
from .core import MIN_VALIDATED_QUERIES, FAQEstimate, FAQParams, estimate, plain_words, run_faq
from .factor import FactorFitWarning, FactorModel, OverfitWarning
from .fit import check_k, default_factor_model, factor_cache_dir, fit_factors  # noqa: F401  (check_k, factor_cache_dir)
from .posterior import FactorPosterior, fitted_factors
from .protocol import DEFAULT_GRID, FAQProtocolResult, model_splits, protocol  # last: the function shadows the module

__all__ = ["FactorModel", "OverfitWarning", "FactorFitWarning", "FAQParams", "run_faq", "estimate", "FAQEstimate",
           "evaluate", "expect", "plain_words", "Calibration", "protocol", "FAQResult", "FAQProtocolResult", "as_matrix", "resolve_budget", "DEFAULT_GRID",
           "default_factor_model", "fit_factors", "model_splits", "MIN_VALIDATED_QUERIES", "FactorPosterior",
           "fitted_factors"]
