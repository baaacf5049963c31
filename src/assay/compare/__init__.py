"""compare: which of several models is better, which are tied, where each one ranks, with the claims holding
together (the pair claims, with their verdicts, ranks and tiers, as one family; the model intervals as a second one
under the asymptotic guarantee, the same one under the finite guarantee).

* :func:`evaluate`: a long table of scores -> :class:`CompareResult` (tables ``models`` and ``pairs``; with several
  tasks ``tasks`` and ``task_pairs``);
* :mod:`assay.compare.core`: the two guarantees on arrays (``asymptotic``: paired, cluster-robust, simultaneous by a
  studentized max-t bootstrap, exact where the data are degenerate; ``finite``: anytime-valid betting confidence
  sequences), verdicts, rank intervals and tiers.
"""

from .api import CompareResult, check_require, evaluate, parse_require
from .core import GUARANTEES

__all__ = ["evaluate", "CompareResult", "check_require", "parse_require", "GUARANTEES"]
