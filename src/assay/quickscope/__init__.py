"""QuickScope: certify where a model is reliably weak in a procedurally generated benchmark.

* :class:`SearchSpace` (:mod:`.space`): integer / float / categorical / constant parameters, conditions,
  forbidden combinations, YAML; uniform sampling of valid configurations.
* :class:`Search` (:mod:`.coup`): COUP+ ask/tell search with anytime KL bounds, certification, adaptive
  certification (LUCB-K), repulsion and Frozen-LCB batching.
* :func:`run` (:mod:`.run`): drive a search against a model through the journal (resumable); :class:`ScopeResult`.
* :mod:`.simulate`: worlds with a known truth for validation (``assay study scope-sim``).
"""

from .coup import COUPParams, Search, Ticket
from .run import ScopeResult, make_utility, run
from .space import Categorical, Constant, Float, Integer, SearchSpace

__all__ = ["SearchSpace", "Integer", "Float", "Categorical", "Constant", "Search", "COUPParams", "Ticket",
           "run", "ScopeResult", "make_utility"]
