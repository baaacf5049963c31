"""QuickScope: certify where a model is reliably weak in a procedurally generated benchmark (work in progress).

So far: search spaces (:mod:`assay.quickscope.space`) and the anytime KL bounds (:mod:`assay.stats.bounds`).
"""

from .space import Categorical, Constant, Float, Integer, SearchSpace

__all__ = ["SearchSpace", "Integer", "Float", "Categorical", "Constant"]
