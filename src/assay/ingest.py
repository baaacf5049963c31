"""Evaluation logs (lm-evaluation-harness, inspect-ai, HELM) into assay's tidy tables.

The readers live in the data layer, :mod:`assay.data.logs`; ``assay.ingest`` is the name users import them by.
"""

from .data.logs import *  # noqa: F401,F403
from .data.logs import __all__  # noqa: F401
