"""compare: which of several models is better, which are tied, where each one ranks, with every claim holding at once.

* :func:`evaluate`: a long table of scores -> :class:`CompareResult` (tables ``models`` and ``pairs``);
* :mod:`assay.compare.core`: the two guarantees on arrays (``asymptotic``: paired, cluster-robust, simultaneous by a
  studentized max-t bootstrap; ``finite``: anytime-valid betting confidence sequences), verdicts, rank intervals and
  tiers.
"""

from .api import CompareResult, check_require, evaluate, parse_require
from .core import GUARANTEES

__all__ = ["evaluate", "CompareResult", "check_require", "parse_require", "GUARANTEES"]
