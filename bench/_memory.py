"""Memory measurements the benchmarks share: run as ``python bench/NAME.py``, the script's folder is on the path."""

from __future__ import annotations

import gc
import resource
import sys
import tracemalloc
from typing import Callable


def peak_mb(fn: Callable[[], object]) -> float:
    """Peak memory (MB) that one call of ``fn`` allocates above what is held before it (inputs excluded):
    tracemalloc, which sees numpy's array buffers as well as Python objects. Run untimed (tracing slows Python)."""
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        fn()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return (peak - base) / 1e6


def maxrss_mb() -> float:
    """This process's maximum resident set size so far (MB; Linux reports KB, macOS bytes)."""
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return r / 1e6 if sys.platform == "darwin" else r / 1e3
