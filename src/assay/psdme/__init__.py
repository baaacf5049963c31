"""PS-DME: CDF confidence bands and guaranteed KPIs for configurations pre-selected on the same data.

Paper: Farzaneh and Simeone, "Post-Selection Distributional Model Evaluation" (``papers/ps-dme.txt``),
Sections 2-5, Appendices D-G.

K configurations each have n_k i.i.d. observations of a KPI where lower is better (latency,
loss). A selection rule S looks at the data and keeps a subset of promising configurations; for
each kept one we want a band [L_k(x), U_k(x)] that contains its true CDF F_k for every x, with
false coverage rate FCR = E[#{k in S : band misses F_k} / max(|S|, 1)] <= delta (eq. 8).

The methods:

* ``ps-dme`` (in-sample, eq. 13-14): the DKW p-value of configuration k is turned into an e-value by
  a calibrator f; e-BY reports the bands of level alpha = f^{-1}(K / (delta |S|)) for the selected
  configurations, which controls the FCR for ANY selection rule on the full data (Theorem 1). With
  the power calibrator at its optimal tau (eq. 17), alpha* = exp(W_{-1}(-delta |S| / (e K))).
* ``ss-dme`` (sample splitting, eq. 10-11): a fraction ``split`` of each configuration's data
  chooses, the rest builds bands at level delta. Valid for any rule; fewer observations per band.
* ``bonferroni``: bands at level delta / K for every configuration, full data: simultaneous
  (family-wise) coverage of all K bands, hence of any selection. An e-BY instance with a step
  calibrator; narrower than PS-DME when |S| < e ln(K / delta).
* ``naive`` (N-PS-DME): full data, level delta, no correction. Reported for comparison only; it
  carries NO guarantee after selection (the paper's Fig. 2 and our study show it failing).
* ``auto``: the narrowest valid method, decided before looking at the KPI values beyond the
  selection: from K, |S|, delta, n and ``split`` only (DKW widths are functions of those; for BJ the
  same comparison of levels and sample sizes is used).

Failures (requests that errored) must not be read as fast responses: give them KPI = +inf and
``failures="worst"``, which counts them as mass above every finite x.

Layers
------
* :func:`assay.data.psdme.prepare`: the (config, kpi) table -> one sorted sample per configuration.
* :func:`core`: the mathematics on arrays (no pandas): selection (eq. 3), per-band level (eq. 11, 14), bands
  (eq. 10, 13, 42) and guaranteed KPIs (eq. 18), returned as a :class:`PsdmeCore`. Its parts are public too:
  :func:`select_configurations`, :func:`split_samples`, :func:`levels`, :func:`cdf_bands`, :func:`guaranteed_kpi`.
* :func:`bands`: the entry for a table; it checks the arguments, resolves the seed, prepares, runs the core and
  packages a :class:`PsdmeResult` with :func:`assay.results.build`.

Package layout
--------------
* :mod:`.checks`: the method and band names and the argument checks shared by the core and the entry.
* :mod:`.selection`: the selection rules (eq. 3) and SS-DME's split (Sec. 3.1).
* :mod:`.fcr`: the per-band level of each method, the e-value calibrator fixed before the data (eq. 11-17,
  Theorem 1), and the narrowest valid method (Lemma 2).
* :mod:`.cdf`: DKW and Berk-Jones CDF bands and the guaranteed KPIs (eq. 9-10, 13, 18, 42).
* :mod:`.array_core`: :func:`core` and :class:`PsdmeCore`.
* :mod:`.api`: :func:`bands` and :class:`PsdmeResult`.

(The core and the levels are not in modules called ``core``, ``levels`` or ``bands``: those are the names of the
functions :func:`assay.psdme.core`, :func:`assay.psdme.levels` and :func:`assay.psdme.bands`, which a submodule of
that name would shadow.)
"""

from ..data.psdme import prepare
from .api import PsdmeResult, bands, dkw_needed
from .array_core import PsdmeCore, core
from .cdf import cdf_bands, guaranteed_kpi
from .arguments import BANDS, CORE_METHODS, DEFAULT_GAMMAS, METHODS
from .fcr import levels, narrowest_method
from .selection import select_configurations, split_samples

__all__ = ["bands", "core", "dkw_needed", "PsdmeCore", "PsdmeResult", "select_configurations", "split_samples", "levels",
           "cdf_bands", "guaranteed_kpi", "narrowest_method", "prepare", "METHODS", "CORE_METHODS", "BANDS",
           "DEFAULT_GAMMAS"]
