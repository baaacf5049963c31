"""SIREN: selection-aware intervals for tune-then-deploy procedures.

Paper: Xu, Zhang, Sun, Zhou, Cao, Aggarwal, "Towards Reliable LLM Evaluation: Correcting the
Winner's Curse in Adaptive Benchmarking" (``papers/siren.txt``), Sections 2-4, Appendix B, C.1.

A tuner searched prompts / programs for each system at each budget and kept a frozen shortlist
of K artifacts. Each artifact was then scored on the same pool of M evaluation items. SIREN
estimates, for every (system, budget) cell, the fresh-data score of the *procedure* "select
among the shortlist on data, then deploy", not the score of the winner on the data that chose it:

* R repeated splits of the item pool into a scoring part D_r (size floor(rho M)) and a held-out
  part E_r (the rest); S_r, T_r are the artifacts' means on D_r and E_r (eq. 4-5).
* A selector turns S_r into weights q_r = g(S_r) over the shortlist; Y_r = q_r' T_r; the
  estimate is theta~ = sum_r omega_r Y_r (eq. 6).
* Each item's first-order contribution (eq. 24) adds its held-out effect and its effect through
  the selector's derivative (:mod:`.splits` gives the formula, the selectors and the temperature).
* A Gaussian multiplier bootstrap with ONE multiplier per item, shared by every cell of the
  grid (eq. 72), gives pointwise intervals, a simultaneous band over the whole grid and
  intervals for pre-specified linear contrasts (tuned vs default, equal-budget system
  comparisons, cross-budget gains). See :mod:`assay.stats.bootstrap` for the two equivalent
  engines that draw it.

Layers
------
:func:`evaluate` is three steps, each usable on its own:

1. :func:`prepare` (from :mod:`assay.data.siren`): a tidy table, a dict of arrays or one array ->
   :class:`~assay.data.SirenDesign`, one items x artifacts array per cell on shared items;
2. :func:`split_design` draws the splits, :func:`core` takes the arrays and the splits and returns a
   :class:`SirenEstimate` (theta~, psi, Omega_hat, bootstrap draws, intervals, band; no pandas), and
   :func:`contrast_core` turns it into :class:`SirenContrasts` for a contrast matrix W;
3. :func:`assay.results.build` packages the numbers into a :class:`SirenResult`.

:func:`repeated_split` is the batched estimator underneath :func:`core` (N independent problems at once),
which the simulation studies and the item bootstrap call directly.

Package layout
--------------
* :mod:`.splits`: the split design, the selectors (softmax, hard, adaptive), the temperature and the
  repeated-split estimator with its item contributions (Sections 2-3, eq. 4-6, 24).
* :mod:`.array_core`: :func:`core`, the grid of cells sharing items -> :class:`SirenEstimate` (eq. 72-76),
  streamed over blocks of items; cells with one artifact.
* :mod:`.contrasts`: :class:`Contrast`, the contrast expressions and families, and :func:`contrast_core`.
* :mod:`.comparators`: the baselines of Section 4 (:func:`baselines`, :func:`item_bootstrap`).
* :mod:`.api`: :func:`evaluate` and :class:`SirenResult`.

(The core and the baselines are not in modules called ``core`` and ``baselines``: those are the names of the
functions :func:`assay.siren.core` and :func:`assay.siren.baselines`, which a submodule of that name would shadow.)
"""

from ..data.siren import prepare
from .api import SirenResult, evaluate
from .array_core import MIN_TEMPERATURE, SirenEstimate, core  # noqa: F401  (MIN_TEMPERATURE: public, not in __all__)
from .comparators import baselines, item_bootstrap
from .contrasts import (  # noqa: F401  (CONTRAST_*, contrast_family, parse_contrast: public, not in __all__)
    CONTRAST_COLUMNS,
    CONTRAST_FAMILIES,
    Contrast,
    SirenContrasts,
    contrast_core,
    contrast_family,
    parse_contrast,
)
from .splits import SELECTORS, repeated_split, split_design, split_sizes  # noqa: F401  (split_sizes: not in __all__)

__all__ = [
    "evaluate",
    "prepare",
    "core",
    "contrast_core",
    "SirenEstimate",
    "SirenContrasts",
    "SirenResult",
    "Contrast",
    "split_design",
    "repeated_split",
    "baselines",
    "item_bootstrap",
    "SELECTORS",
]
