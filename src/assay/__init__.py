"""assay: LLM evaluation with statistical guarantees.

Methods live in their own modules (``assay.siren``, ...); errors in ``assay.errors``.
"""

__version__ = "0.1.0"

from .errors import AssayBackendError, AssayError, AssayInputError  # noqa: E402
from .results import Interval, Result  # noqa: E402
from . import siren  # noqa: E402

__all__ = ["__version__", "AssayError", "AssayInputError", "AssayBackendError", "Interval", "Result", "siren"]
