"""FAQ: Factorized Active Querying (Wu, Nair & Candès 2026).

Estimate a new model's accuracy over a whole benchmark from a few adaptively chosen questions, with a
confidence interval that is valid whatever the factor model's quality (Proactive Active Inference).

>>> import assay.faq as faq
>>> res = faq.evaluate(history, new_answers, budget=0.05, seed=0)   # doctest: +SKIP
>>> res.estimates[["estimate", "low", "high"]]                      # doctest: +SKIP
"""

from . import api
from .api import (DEFAULT_GRID, MIN_VALIDATED_QUERIES, FAQProtocolResult, FAQResult, as_matrix, default_factor_model,
                  evaluate, fit_factors, model_splits, protocol, resolve_budget)
from .core import FAQParams, run_faq
from .factor import FactorFitWarning, FactorModel, OverfitWarning

__all__ = ["FactorModel", "OverfitWarning", "FactorFitWarning", "FAQParams", "run_faq", "evaluate", "protocol",
           "FAQResult", "FAQProtocolResult", "as_matrix", "resolve_budget", "DEFAULT_GRID", "default_factor_model",
           "fit_factors", "model_splits", "MIN_VALIDATED_QUERIES"]
