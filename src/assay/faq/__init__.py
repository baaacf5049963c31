"""FAQ: adaptive evaluation of a new model from a few questions (Wu, Nair, Candes 2026)."""

from .factor import FactorModel

__all__ = ["FactorModel"]
