"""Method-free mathematics (pure numpy / scipy, no I/O). Never imports a method module."""

from . import multiple
from .multiple import bonferroni, fixed_sequence, holm

__all__ = ["multiple", "bonferroni", "fixed_sequence", "holm"]
