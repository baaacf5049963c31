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

Bands are DKW (eq. 9, Massart's constant) or Berk-Jones with an exact critical value (App. F; much
narrower in the tails, which is where high-reliability guarantees live). Both are evaluated on both
sides of every jump of the ECDF. The guaranteed KPI at reliability 1 - gamma is
X*_k(gamma) = inf{x : L_k(x) >= 1 - gamma} (eq. 18): +inf when the band never reaches 1 - gamma
(the result says so). The best guaranteed KPI over the selection and the whole trade-off curve over
gamma are reported.

Theorem 1 needs the calibrator fixed before the data. Choosing the optimal tau from |S| is therefore done only
when |S| is fixed by the rule itself ("all", "top:K"). For a rule whose |S| depends on the data ("below:VALUE",
a callable) the "optimal" calibrator takes its tau from K and a DECLARED maximum selection size
``max_selected`` (default K), fixed before any KPI is seen; the level then follows the realised |S| through that
fixed calibrator (alpha = f_tau^{-1}(K / (delta |S|))), which Theorem 1 covers. (An earlier version tuned tau on
the realised |S| of a data-dependent rule and still printed "for any selection rule".) Failures (requests
that errored) must not be read as fast responses: give them KPI = +inf and ``failures="worst"``,
which counts them as mass above every finite x.

Layers
------
* :func:`assay.data.psdme.prepare`: the (config, kpi) table -> one sorted sample per configuration.
* :func:`core`: the mathematics on arrays (no pandas): selection (eq. 3), per-band level (eq. 11, 14), bands
  (eq. 10, 13, 42) and guaranteed KPIs (eq. 18), returned as a :class:`PsdmeCore`. Its parts are public too:
  :func:`select_configurations`, :func:`split_samples`, :func:`levels`, :func:`cdf_bands`, :func:`guaranteed_kpi`.
* :func:`bands`: the entry for a table; it checks the arguments, resolves the seed, prepares, runs the core and
  packages a :class:`PsdmeResult` with :func:`assay.results.build`.
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any, Iterable, Mapping, NamedTuple, Sequence

import numpy as np
import pandas as pd

from .data.psdme import FAILURE_POLICIES, prepare
from .errors import AssayInputError
from .results import Result, build
from .seeds import resolve_seed
from .stats import bands as bd
from .stats import calibrate as cal

__all__ = ["bands", "core", "PsdmeCore", "PsdmeResult", "select_configurations", "split_samples", "levels",
           "cdf_bands", "guaranteed_kpi", "narrowest_method", "prepare", "METHODS", "CORE_METHODS", "BANDS",
           "DEFAULT_GAMMAS"]

METHODS = ("ps-dme", "ss-dme", "bonferroni", "naive", "auto")
CORE_METHODS = ("ps-dme", "ss-dme", "bonferroni", "naive")  # "auto" is a choice among these, made by bands()
BANDS = ("dkw", "berk-jones")
DEFAULT_GAMMAS = (0.01, 0.05, 0.1)
_BAND_ALIASES = {"bj": "berk-jones", "berk_jones": "berk-jones"}

_TOP = r"(?:top[:\-]?|top-k by mean:?)(\d+)"
_BELOW = r"below[:=]?\s*([-+]?\d*\.?\d+(?:[eE][-+]?\d+)?)"


# --------------------------------------------------------------------------------------------
# Argument checks shared by the core and the entry
# --------------------------------------------------------------------------------------------


def _is_number(v: Any) -> bool:
    return not isinstance(v, bool) and isinstance(v, (int, float, np.integer, np.floating))


def _check_delta(delta: Any) -> float:
    if not _is_number(delta) or not (0 < delta < 1):
        raise AssayInputError(f"delta must be a number strictly between 0 and 1, got {delta!r}")
    return float(delta)


def _check_band(band: Any) -> str:
    band = _BAND_ALIASES.get(band, band)
    if band not in BANDS:
        raise AssayInputError(f"band must be 'dkw' or 'berk-jones', got {band!r}")
    return band


def _check_gammas(gammas: Iterable[float]) -> np.ndarray:
    try:
        g = np.asarray(list(gammas), dtype=float)
    except (TypeError, ValueError):
        raise AssayInputError(f"gammas must be numbers in (0, 1), got {gammas!r}") from None
    if g.size == 0 or np.any(~np.isfinite(g)) or np.any((g <= 0) | (g >= 1)):
        raise AssayInputError(f"gammas must be numbers in (0, 1), got {list(gammas)!r}")
    return g


def _check_samples(samples: Any, what: str = "samples") -> np.ndarray | list[np.ndarray]:
    """A (K, n) float array, or a list of K one-dimensional float arrays (n_k may differ)."""
    if isinstance(samples, np.ndarray) and samples.ndim == 2:
        out: np.ndarray | list[np.ndarray] = np.asarray(samples, dtype=float)
        rows = [out] if out.size else []
        empty = out.shape[0] == 0 or out.shape[1] == 0
    else:
        try:
            out = [np.asarray(v, dtype=float) for v in samples]
        except (TypeError, ValueError):
            raise AssayInputError(f"{what} must be a list of 1-D arrays of numbers or a 2-D array") from None
        if any(v.ndim != 1 for v in out):
            raise AssayInputError(f"{what} must be a list of 1-D arrays of numbers or a 2-D array")
        rows = out
        empty = not out or any(v.size == 0 for v in out)
    if empty:
        raise AssayInputError(f"{what} needs at least one configuration, each with at least one observation")
    if any(not np.isfinite(v).all() and (np.isnan(v).any() or np.isneginf(v).any()) for v in rows):
        raise AssayInputError(f"{what} contain NaN or -inf (a failed request may be +inf)")
    return out


# --------------------------------------------------------------------------------------------
# Selection (eq. 3) and SS-DME's split
# --------------------------------------------------------------------------------------------


def _fixed_size(rule: Any, K: int) -> int | None:
    """|S| when the rule fixes it before the data ("all": K, "top:k": min(k, K)); None when the data decide."""
    if callable(rule):
        return None
    if rule is None or str(rule).strip().lower() == "all":
        return K
    m = re.fullmatch(_TOP, str(rule).strip().lower())
    return min(int(m.group(1)), K) if m else None


def _means(samples: np.ndarray | Sequence[np.ndarray]) -> list[float]:
    """Sample mean of every configuration; +inf for one with a failure (+inf KPI)."""
    if isinstance(samples, np.ndarray) and samples.ndim == 2:
        return np.where(np.isfinite(samples).all(axis=1), samples.mean(axis=1), math.inf).tolist()
    return [float(np.mean(v)) if np.isfinite(v).all() else math.inf for v in samples]


def select_configurations(rule: Any, samples: np.ndarray | Sequence[np.ndarray],
                          names: Sequence[str] | None = None) -> np.ndarray:
    """The selected set K-hat = S(D) of the paper (eq. 3), as indices into ``samples``.

    Parameters
    ----------
    rule : "all" | "top:K" | "below:VALUE" | callable
        ``all`` keeps every configuration; ``top:K`` the K smallest sample means (ties by position);
        ``below:VALUE`` every configuration whose sample mean is below VALUE (a configuration with a failure,
        KPI = +inf, has mean +inf). A callable receives ``{name: copy of its sample}`` (names, or the indices
        0..K-1 when ``names`` is None) and returns the names to keep, in the order to report them.
    samples : (K, n) array or list of K 1-D arrays
        The data the rule looks at (D, or D^sel for SS-DME).
    names : sequence of str, optional
        One name per configuration (what a callable rule sees and returns).

    Returns
    -------
    ndarray of int
        Indices of the selected configurations, in the rule's order (for ``top:K``, by increasing mean).
    """
    K = len(samples)
    keys = list(names) if names is not None else list(range(K))
    if callable(rule):
        index = {c: i for i, c in enumerate(keys)}
        chosen = list(rule({c: np.array(v, dtype=float) for c, v in zip(keys, samples)}))
        unknown = [c for c in chosen if c not in index]
        if unknown:
            raise AssayInputError(f"the selection returned unknown configurations: {', '.join(map(str, unknown[:5]))}")
        kept = dict.fromkeys(str(c) for c in chosen) if names is not None else dict.fromkeys(int(c) for c in chosen)
        return np.array([index[c] for c in kept], dtype=int)
    if rule is None or rule == "all":
        return np.arange(K)
    text = str(rule).strip().lower()
    m = re.fullmatch(_TOP, text)
    if m:
        k = int(m.group(1))
        if k < 1:
            raise AssayInputError("top:k needs k >= 1")
        means = _means(samples)
        if any(math.isnan(v) for v in means):  # e.g. overflowing sums: keep Python's ordering of the keys
            order = sorted(range(K), key=lambda i: (means[i], i))
        else:  # the same order (by mean, ties by position), vectorised
            order = np.argsort(np.asarray(means), kind="stable")
        return np.asarray(order[: min(k, K)], dtype=int)
    m = re.fullmatch(_BELOW, text)
    if m:
        v = float(m.group(1))
        means = _means(samples)
        return np.array([i for i in range(K) if means[i] < v], dtype=int)
    raise AssayInputError(
        f"unknown selection {rule!r}: use 'all', 'top:K' (K smallest means), 'below:VALUE' (mean below VALUE) "
        "or a callable taking {config: array} and returning configuration names"
    )


def split_samples(samples: Sequence[np.ndarray], split: float,
                  rng: np.random.Generator) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """SS-DME's partition of every D_k into D_k^sel and D_k^eval (Sec. 3.1), at random.

    For each configuration in turn, one permutation ``rng.permutation(n_k)``; its first
    m_k = round(split * n_k) points (kept in [1, n_k - 1]) select, the others build the band.

    Returns
    -------
    (select_samples, eval_samples) : two lists of sorted arrays, in the order of ``samples``.
    """
    if not _is_number(split) or not (0 < float(split) < 1):
        raise AssayInputError(f"split must be a number in (0, 1), got {split!r}")
    sel, ev = [], []
    for v in samples:
        v = np.asarray(v, dtype=float)
        if v.ndim != 1 or v.size < 2:
            raise AssayInputError("split_samples needs 1-D samples with at least 2 observations each")
        perm = rng.permutation(len(v))
        m = min(max(int(round(split * len(v))), 1), len(v) - 1)
        sel.append(np.sort(v[perm[:m]]))
        ev.append(np.sort(v[perm[m:]]))
    return sel, ev


# --------------------------------------------------------------------------------------------
# Levels and the method choice
# --------------------------------------------------------------------------------------------


def levels(K: int, selected: int, delta: float, calibrator: Any = "optimal") -> dict[str, float]:
    """Per-band miscoverage alpha of each method, from the design (K, |S|, delta) and the calibrator only.

    ``naive`` and ``ss-dme``: delta (eq. 11); ``bonferroni``: delta / K; ``ps-dme``: alpha = f^{-1}(K / (delta |S|))
    (eq. 14), with the power calibrator f_tau (eq. 12) at its optimal tau (eq. 17; alpha = exp(W_{-1}(-delta |S| /
    (e K)))) for ``"optimal"``, at a given tau for a number, or the numerical generalised inverse of a calibrator
    function. NaN for ps-dme when |S| = 0.
    """
    for name, v, lo in (("K", K, 1), ("selected", selected, 0)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
            raise AssayInputError(f"{name} must be an integer >= {lo} (configurations); got {v!r}")
    if selected > K:
        raise AssayInputError(f"selected ({selected}) cannot exceed K ({K})")
    if not _is_number(delta) or not 0 < delta < 1:
        raise AssayInputError(f"delta must be a number strictly between 0 and 1; got {delta!r}")
    if _is_number(calibrator) and not 0 < float(calibrator) < 1:
        raise AssayInputError(f"a calibrator tau must be in (0, 1); got {calibrator!r}")
    out = {"naive": delta, "ss-dme": delta, "bonferroni": delta / K}
    if selected == 0:
        out["ps-dme"] = float("nan")
    elif calibrator in (None, "optimal"):
        out["ps-dme"] = cal.optimal_power_level(K, selected, delta)
    elif isinstance(calibrator, (int, float)) and not isinstance(calibrator, bool):
        out["ps-dme"] = cal.power_level(K, selected, delta, float(calibrator))
    elif callable(calibrator):
        out["ps-dme"] = float(cal.generalized_inverse(calibrator, K / (delta * selected)))
    else:
        raise AssayInputError(f"calibrator must be 'optimal', a tau in (0, 1) or a calibrator function, got {calibrator!r}")
    return out


def narrowest_method(K: int, selected: int, delta: float, n: float, split: float, calibrator: Any = "optimal") -> tuple[str, str]:
    """The valid method with the narrowest DKW band, from the design alone; and the reason.

    Compares the DKW half-widths (eq. 11, 14) of ps-dme and bonferroni on n observations with ss-dme's on
    (1 - split) n (Lemma 2, eq. 15; Bonferroni is narrower than the optimal PS-DME when |S| < e ln(K / delta)).
    """
    lv = levels(K, selected, delta, calibrator)  # validates K, selected, delta, calibrator
    for name, v in (("n", n), ("split", split)):
        if not _is_number(v) or not math.isfinite(v):
            raise AssayInputError(f"{name} must be a finite number; got {v!r}")
    if n <= 0:
        raise AssayInputError(f"n (observations per configuration) must be positive; got {n!r}")
    if not 0 < split < 1:
        raise AssayInputError(f"split must be in (0, 1); got {split!r}")
    if selected == 0:
        return "ps-dme", "nothing selected"
    width = {
        "ps-dme": math.sqrt(math.log(2 / lv["ps-dme"]) / (2 * n)),
        "bonferroni": math.sqrt(math.log(2 / lv["bonferroni"]) / (2 * n)),
        "ss-dme": math.sqrt(math.log(2 / delta) / (2 * max(1.0, (1 - split) * n))),
    }
    best = min(width, key=width.get)
    thr = math.e * math.log(K / delta)
    reason = (
        f"DKW half-widths at n = {n:g}: ps-dme {width['ps-dme']:.4f}, bonferroni {width['bonferroni']:.4f}, "
        f"ss-dme (split {split:g}) {width['ss-dme']:.4f}; Bonferroni beats PS-DME when |S| = {selected} < "
        f"e ln(K/delta) = {thr:.1f}"
    )
    return best, reason


def _fix_calibrator(select: Any, K: int, delta: float, calibrator: Any,
                    max_selected: Any) -> tuple[Any, int | None, int | None]:
    """The calibrator, fixed before the data as Theorem 1 requires: (calibrator, |S| fixed by the rule or None,
    declared maximum |S| or None).

    "optimal" stays "optimal" when the rule fixes |S| ("all", "top:K"); for a rule whose |S| depends on the data
    it becomes the power calibrator whose tau is optimal (eq. 17) for the declared ``max_selected`` (default K).
    """
    fixed = _fixed_size(select, K)
    if calibrator in (None, "optimal") and fixed is None:
        if max_selected is None:
            max_selected = K
        if isinstance(max_selected, bool) or not isinstance(max_selected, (int, np.integer)) or not 1 <= max_selected <= K:
            raise AssayInputError(f"max_selected must be an integer in [1, K = {K}]; got {max_selected!r}")
        return float(cal.optimal_power_tau(K, int(max_selected), delta)), fixed, int(max_selected)
    if calibrator not in (None, "optimal") and max_selected is not None:
        raise AssayInputError("max_selected only applies to the 'optimal' calibrator of a data-dependent selection")
    return calibrator, fixed, None


# --------------------------------------------------------------------------------------------
# Bands (eq. 10, 13, 42) and guaranteed KPIs (eq. 18)
# --------------------------------------------------------------------------------------------


_FAIL = np.finfo(float).max  # stands in for a failure (+inf): above every finite KPI, still counted in n


def cdf_bands(samples: np.ndarray | Sequence[np.ndarray], alpha: float, band: str = "dkw") -> bd.CDFBand:
    """Simultaneous-in-x CDF bands [L_k(x), U_k(x)] at miscoverage ``alpha``, one row per sample.

    ``band="dkw"``: F-hat_k -+ eps_k with eps_k = sqrt(ln(2 / alpha) / (2 n_k)) (eq. 10a-b / 13a-b, 11 / 14);
    ``"berk-jones"``: the KL inversion with the exact critical value q_{n_k}(1 - alpha) (App. F, eq. 40-42).
    A +inf observation (a failure) counts as mass above every finite x, and comes back as +inf in ``x``.
    Rows may have different n_k (a list of 1-D arrays).
    """
    band = _check_band(band)
    if isinstance(samples, np.ndarray) and samples.ndim == 2:
        x = np.where(np.isposinf(samples), _FAIL, samples) if np.isposinf(samples).any() else samples
    else:
        m = max(len(s) for s in samples)
        x = np.full((len(samples), m), np.nan)
        for i, s in enumerate(samples):
            x[i, : len(s)] = np.where(np.isposinf(s), _FAIL, s)
    b = bd.dkw_band(x, alpha) if band == "dkw" else bd.bj_band(x, alpha)
    if not (b.x == _FAIL).any():
        return b
    return dataclasses.replace(b, x=np.where(b.x == _FAIL, np.inf, b.x))  # failures reported as +inf again


def guaranteed_kpi(band: bd.CDFBand, gammas: Sequence[float] | np.ndarray) -> np.ndarray:
    """X*_k(gamma) = inf{x : L_k(x) >= 1 - gamma} (eq. 18), shape (rows of ``band``, len(gammas)).

    +inf where the lower band never reaches 1 - gamma (no KPI can be guaranteed at that reliability).
    """
    gammas = np.asarray(gammas, dtype=float)
    lower = np.where(np.isnan(band.x), -np.inf, band.lower)
    x = band.x
    out = np.full((x.shape[0], len(gammas)), np.inf)
    for j, g in enumerate(gammas):
        ok = lower >= (1.0 - g) - 1e-12
        has = ok.any(axis=1)
        first = ok.argmax(axis=1)
        vals = x[np.arange(x.shape[0]), first]
        out[has, j] = vals[has]
    return out


# --------------------------------------------------------------------------------------------
# The core
# --------------------------------------------------------------------------------------------


class PsdmeCore(NamedTuple):
    """What :func:`core` returns (paper notation; K configurations, selected set K-hat of size |K-hat|)."""

    method: str
    """The method whose per-band level is used: ps-dme, ss-dme, bonferroni or naive."""
    selected: np.ndarray
    """Indices k in K-hat = S(D^sel) (eq. 3), in the rule's order; rows of ``band`` and ``x_star`` follow it."""
    alpha: float
    """Per-band miscoverage: delta (ss-dme, naive; eq. 11), f^{-1}(K / (delta |K-hat|)) (ps-dme; eq. 14), delta / K
    (bonferroni)."""
    levels: dict
    """alpha of every method at this design (:func:`levels`)."""
    band: bd.CDFBand | None
    """L_k, U_k of the selected configurations on both sides of every jump (eq. 10, 13, 42); None if K-hat is
    empty."""
    width: np.ndarray
    """Per selected configuration: eps_k (DKW, eq. 11 / 14) or the BJ critical value q_{n_k}(1 - alpha) (eq. 40)."""
    gammas: np.ndarray
    """The failure probabilities gamma of ``x_star``."""
    x_star: np.ndarray
    """X*_k(gamma) (eq. 18), shape (|K-hat|, len(gammas)); +inf where the band never reaches 1 - gamma."""
    best: np.ndarray
    """min over K-hat of X*_k(gamma), per gamma (+inf when no selected band reaches 1 - gamma, or K-hat is empty)."""
    best_index: np.ndarray
    """The index k attaining ``best`` (first in ``selected`` order), -1 where ``best`` is +inf."""
    tau: float | None
    """The power calibrator's tau (eq. 12) behind ps-dme's level; None for a calibrator function or empty K-hat."""


def core(
    samples: np.ndarray | Sequence[np.ndarray],
    select_samples: np.ndarray | Sequence[np.ndarray] | None = None,
    *,
    delta: float,
    select: Any = "all",
    method: str = "ps-dme",
    band: str = "dkw",
    calibrator: Any = "optimal",
    max_selected: int | None = None,
    gammas: Iterable[float] = DEFAULT_GAMMAS,
    names: Sequence[str] | None = None,
    design_levels: Mapping[str, float] | None = None,
) -> PsdmeCore:
    """Post-selection CDF bands and guaranteed KPIs on arrays (PS-DME Sec. 3, eq. 3, 10-18; App. F).

    Selects K-hat = S(D^sel) with the rule ``select`` (eq. 3), sets the per-band level of ``method`` (eq. 11, 14),
    builds the bands of the selected configurations on ``samples`` (eq. 10 / 13 DKW, eq. 42 Berk-Jones) and reads
    the guaranteed KPI X*_k(gamma) = inf{x : L_k(x) >= 1 - gamma} off each (eq. 18). FCR <= delta (eq. 8):
    Theorem 1 (ps-dme, full data, any selection rule, calibrator fixed in advance), Lemma 1 (ss-dme, disjoint
    selection data); bonferroni covers all K bands with probability >= 1 - delta; naive has no guarantee.

    Parameters
    ----------
    samples : (K, n) array or list of K 1-D arrays
        The data D_k the bands are built on (eq. 1; D_k^eval for ss-dme). KPI, lower is better; +inf = failure.
    select_samples : same form, optional
        The data the rule selects on: D_k^sel for ss-dme (required; see :func:`split_samples`), else ``samples``.
    delta : float
        FCR level (family-wise error of all K bands for bonferroni).
    select : "all" | "top:K" | "below:VALUE" | callable
        The selection rule (:func:`select_configurations`).
    method : {"ps-dme", "ss-dme", "bonferroni", "naive"}
    band : {"dkw", "berk-jones"}
    calibrator : "optimal" | float | callable
        PS-DME's e-calibrator: the power family (eq. 12) at its optimal tau (eq. 17), at a given tau, or any
        calibrator function.
    max_selected : int, optional
        For a rule whose |K-hat| depends on the data and the "optimal" calibrator: the largest |K-hat| planned for,
        declared before the data (default K); tau is optimal for it and fixed in advance, as Theorem 1 needs.
    gammas : iterable of float
        Failure probabilities gamma in (0, 1) of the guaranteed KPIs.
    names : sequence of str, optional
        Configuration names, for a callable rule.
    design_levels : mapping, optional
        :func:`levels` already computed for this design (K, |K-hat|, delta, calibrator), to skip recomputing them.

    Returns
    -------
    PsdmeCore
    """
    delta = _check_delta(delta)
    if method not in CORE_METHODS:
        raise AssayInputError(f"method must be one of {', '.join(CORE_METHODS)} (bands() also takes 'auto'), "
                              f"got {method!r}")
    band = _check_band(band)
    g = _check_gammas(gammas)
    samples = _check_samples(samples)
    K = len(samples)
    if select_samples is None:
        if method == "ss-dme":
            raise AssayInputError("ss-dme needs select_samples: a selection split disjoint from samples "
                                  "(see split_samples)")
        select_samples = samples
    else:
        select_samples = _check_samples(select_samples, "select_samples")
        if len(select_samples) != K:
            raise AssayInputError(f"select_samples has {len(select_samples)} configurations, samples {K}")
    if names is not None and len(names) != K:
        raise AssayInputError(f"names has {len(names)} entries for {K} configurations")
    calibrator, _, _ = _fix_calibrator(select, K, delta, calibrator, max_selected)

    S = select_configurations(select, select_samples, names)
    lv = levels(K, len(S), delta, calibrator) if design_levels is None else dict(design_levels)
    alpha = lv[method]
    if len(S):
        rows = samples[S] if isinstance(samples, np.ndarray) else [samples[i] for i in S]
        b = cdf_bands(rows, alpha, band)
        xs = guaranteed_kpi(b, g)
        best = xs.min(axis=0)
        best_index = np.where(np.isfinite(best), S[xs.argmin(axis=0)], -1)
        width = np.asarray(b.width)
    else:
        b, width = None, np.empty(0)
        xs = np.full((0, g.size), np.inf)
        best, best_index = np.full(g.size, np.inf), np.full(g.size, -1)
    tau = (cal.optimal_power_tau(K, len(S), delta) if (len(S) and calibrator in (None, "optimal")) else
           (float(calibrator) if isinstance(calibrator, (int, float)) else None))
    return PsdmeCore(method=method, selected=S, alpha=alpha, levels=lv, band=b, width=width, gammas=g, x_star=xs,
                     best=best, best_index=best_index, tau=tau)


# --------------------------------------------------------------------------------------------
# The result and the entry
# --------------------------------------------------------------------------------------------


class PsdmeResult(Result):
    """Bands and guaranteed KPIs for the selected configurations.

    Tables: ``configs`` (main: one row per configuration, selected or not), ``bands`` (the band at
    both sides of every data point of every selected configuration), ``tradeoff`` (best guaranteed
    KPI over the selection as a function of gamma), ``grid`` (the bands on a user grid, when asked).
    """

    method = "psdme"
    main_table = "configs"

    @classmethod
    def _table_names(cls) -> tuple[str, ...]:
        return ("configs", "bands", "tradeoff", "grid")

    @property
    def configs(self) -> pd.DataFrame:
        return self.tables["configs"]

    @property
    def selected(self) -> list[str]:
        t = self.configs
        return [str(c) for c in t.loc[t["selected"].astype(bool), "config"]]

    def _no_interval_hint(self) -> str:
        return ("PS-DME reports CDF bands (table 'bands': lower / upper on both sides of every data point) and "
                "guaranteed KPIs (columns kpi_* of 'configs'), not intervals")

    def _restore(self) -> None:
        # results written before the warnings moved to info["warnings"] kept them under "notes"
        if "notes" in self.info and "warnings" not in self.info:
            self.info["warnings"] = list(self.info.pop("notes") or [])

    def summary(self) -> str:
        p = self.params
        lines = [
            f"PS-DME (assay {self.version}): method {self.info.get('method_used')} ({p.get('band')} bands), "
            f"{len(self.selected)} of {len(self.configs)} configurations selected, delta {self.level.get('delta')}",
        ]
        if self.info.get("method_reason"):
            lines.append(f"why: {self.info['method_reason']}")
        sel = self.configs[self.configs["selected"].astype(bool)]
        lines.append(sel.drop(columns=["selected"]).to_string(index=False, float_format=lambda x: f"{x:.4g}"))
        return "\n".join(lines)


def _mean(v: np.ndarray) -> float:
    return float(np.mean(v)) if np.isfinite(v).all() else math.inf


def bands(
    table: pd.DataFrame,
    *,
    select: Any = "all",
    delta: float = 0.1,
    method: str = "ps-dme",
    band: str = "dkw",
    calibrator: Any = "optimal",
    split: float = 0.5,
    gammas: Iterable[float] = DEFAULT_GAMMAS,
    tradeoff_points: int = 99,
    seed: int | np.random.Generator | None = None,
    columns: Mapping[str, str] | None = None,
    failures: str = "error",
    include_bands: bool = True,
    grid: Sequence[float] | None = None,
    max_selected: int | None = None,
) -> PsdmeResult:
    """Post-selection CDF bands and guaranteed KPIs (PS-DME, SS-DME, Bonferroni, naive; eq. 8-18).

    Parameters
    ----------
    table : DataFrame
        Columns ``config, kpi`` (one row per observation; lower is better). Rename with ``columns``.
    select : "all" | "top:K" | "below:VALUE" | callable
        The pre-selection rule, applied to the data the method selects on (all of it, or the
        selection split for SS-DME). A callable receives ``{config: sorted KPI array}`` and returns
        configuration names.
    delta : float, default 0.1
        FCR level (for ``bonferroni`` the family-wise error of all K bands).
    method : {"ps-dme", "ss-dme", "bonferroni", "naive", "auto"}
    band : {"dkw", "berk-jones"}
    calibrator : "optimal" | float | callable
        PS-DME's p-to-e calibrator: the power family at its optimal tau (eq. 17), at a given tau, or any
        calibrator function (its generalised inverse is taken numerically).
    split : float, default 0.5
        SS-DME's fraction of each configuration's observations used for selection.
    gammas : iterable of float
        Failure probabilities gamma at which to report the guaranteed KPI X*(gamma).
    tradeoff_points : int, default 99
        Further gammas, evenly spaced in [0.001, 0.5], for the ``tradeoff`` table (0: only ``gammas``).
    seed : int, numpy Generator or None
        Seeds SS-DME's random split (methods ``ss-dme`` and ``auto``); None draws one and records it.
    failures : {"error", "worst"}
        What +inf KPIs mean: an error (default), or failed requests counted as worse than every value.
    include_bands : bool, default True
        Report the band at both sides of every data point (table ``bands``).
    grid : sequence of float, optional
        Also report each selected band on these x values (table ``grid``: the right-continuous values
        L(x), U(x) and the left limits just before x).
    max_selected : int, optional
        For a selection whose size depends on the data ("below:VALUE", a callable) and the "optimal"
        calibrator: the largest |S| you plan for, declared before the data (default K). The calibrator's tau is
        optimal for that size and fixed in advance, as Theorem 1 requires (module docstring).

    Returns
    -------
    PsdmeResult
        ``n`` counts the observations of the first configuration (each configuration's count is column ``n`` of
        ``configs``); warnings (empty selection, unreachable reliabilities, naive) are in ``result.warnings``.
    """
    delta, band, g, grid_x = _check_arguments(delta, method, band, split, failures, gammas, grid)
    if isinstance(tradeoff_points, bool) or not isinstance(tradeoff_points, (int, np.integer)) or tradeoff_points < 0:
        raise AssayInputError(f"tradeoff_points must be a whole number >= 0 (0: no trade-off curve); got {tradeoff_points!r}")
    seed = resolve_seed(seed)

    data = prepare(table, columns=columns, failures=failures)
    names, samples = list(data), list(data.values())
    K = len(names)
    calibrator, fixed, declared = _fix_calibrator(select, K, delta, calibrator, max_selected)

    # SS-DME splits each configuration's observations (a seeded random part selects); auto chooses the method from
    # the design (K, |S| of the full-data selection, delta, n, split), before any band is built
    sel_samples = eval_samples = samples
    if method in ("ss-dme", "auto"):
        split_sel, split_eval = split_samples(samples, split, seed.rng())
    chosen, reason = method, ""
    if method == "auto":
        S_full = select_configurations(select, samples, names)
        n_typ = float(np.median([len(samples[i]) for i in (S_full if len(S_full) else range(K))]))
        chosen, reason = narrowest_method(K, len(S_full), delta, n_typ, split, calibrator)
    if chosen == "ss-dme":
        sel_samples, eval_samples = split_sel, split_eval

    # the core, on the gammas asked for and the trade-off grid
    grid_g = np.linspace(0.001, 0.5, tradeoff_points) if tradeoff_points else np.array([])
    fit = core(eval_samples, sel_samples if chosen == "ss-dme" else None, delta=delta, select=select,
               method=chosen, band=band, calibrator=calibrator, gammas=np.concatenate([g, grid_g]), names=names)

    tables = _tables(fit, names, data, dict(zip(names, eval_samples)), dict(zip(names, sel_samples)), g,
                     grid_x, include_bands)
    tau_basis, guarantee = _guarantee(chosen, delta, K, fixed, declared, calibrator)
    info = {
        "method_used": chosen,
        "method_reason": reason,
        "K": K,
        "selected_count": len(fit.selected),
        "levels": fit.levels,
        "tau": fit.tau,
        "tau_basis": tau_basis,
        "bonferroni_threshold": math.e * math.log(K / delta),
        "best": [{"gamma": float(gam), "reliability": float(1 - gam), "best_kpi": float(fit.best[j]),
                  "best_config": names[fit.best_index[j]] if fit.best_index[j] >= 0 else None}
                 for j, gam in enumerate(g)],
        "guarantee": guarantee,
    }
    params = {"select": select if not callable(select) else getattr(select, "__name__", "callable"),
              "method": method, "band": band, "calibrator": calibrator if not callable(calibrator) else "callable",
              "split": float(split), "gammas": g.tolist(), "failures": failures,
              "kpi": (columns or {}).get("kpi", "kpi")}  # the KPI column's own name (it carries the unit)
    return build(PsdmeResult, params=params, n=len(samples[0]),
                 n_meaning="observations of the first configuration (column n of configs has each one's)",
                 meaning=guarantee, seed=seed, tables=tables, delta=delta, warnings=_warnings(fit, g, chosen),
                 info=info)


def _check_arguments(delta, method, band, split, failures, gammas, grid):
    """bands()'s argument checks: (delta, band, gammas, grid) normalised, or an AssayInputError."""
    delta = _check_delta(delta)
    if method not in METHODS:
        raise AssayInputError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    band = _check_band(band)
    if not _is_number(split) or not (0 < float(split) < 1):
        raise AssayInputError(f"split must be a number in (0, 1), got {split!r}")
    if failures not in FAILURE_POLICIES:
        raise AssayInputError(f"failures must be 'error' or 'worst', got {failures!r}")
    g = _check_gammas(gammas)
    grid_x = None
    if grid is not None:
        try:
            grid_x = np.asarray(list(grid), dtype=float)
        except (TypeError, ValueError):
            raise AssayInputError("grid must be a sequence of numbers") from None
        if grid_x.ndim != 1 or grid_x.size == 0 or not np.all(np.isfinite(grid_x)):
            raise AssayInputError("grid must be a non-empty 1-D sequence of finite numbers")
    return delta, band, g, grid_x


def _guarantee(chosen: str, delta: float, K: int, fixed: int | None, declared: int | None,
               calibrator: Any) -> tuple[str | None, str]:
    """How the calibrator was fixed (None when given) and what the bands guarantee, in words."""
    if declared is not None:
        tau_basis = (f"tau = {calibrator:.4f}, optimal for K = {K} and the declared maximum |S| = {declared}, "
                     "fixed before the data (the selection's size depends on the data)")
    elif calibrator in (None, "optimal"):
        tau_basis = f"tau optimal for K = {K} and |S| = {fixed}, which the rule fixes before the data"
    else:
        tau_basis = None
    if chosen == "ps-dme" and fixed is not None and tau_basis:
        return tau_basis, (f"FCR <= {delta:g} over the selected bands, for any selection rule keeping |S| = {fixed} "
                           "(the calibrator was set from that size)")
    return tau_basis, {
        "ps-dme": (f"FCR <= {delta:g} over the selected bands, for any selection rule (the calibrator, "
                   + (f"tau = {float(calibrator):.4f}, " if isinstance(calibrator, float) else "")
                   + "was fixed before the data)"),
        "ss-dme": f"FCR <= {delta:g} (selection on a split disjoint from the bands)",
        "bonferroni": f"all K = {K} bands cover simultaneously with probability >= {1 - delta:g}",
        "naive": "none after selection",
    }[chosen]


def _warnings(fit: PsdmeCore, g: np.ndarray, chosen: str) -> list[str]:
    """What the reader must see beside the numbers: empty selection, unreachable reliabilities, naive bands."""
    out = []
    if len(fit.selected):
        for j, gam in enumerate(g):
            if not np.isfinite(fit.best[j]):
                out.append(f"no selected configuration can guarantee any KPI at reliability {1 - gam:g}: "
                           "its band never reaches that level (more data or a lower reliability)")
    else:
        out.append("the selection is empty: no bands, and the false coverage proportion is 0 by definition")
    if chosen == "naive":
        out.append("naive in-sample bands carry NO guarantee after selection; shown for comparison only")
    return out


def _tables(fit: PsdmeCore, names: list[str], data: dict[str, np.ndarray], eval_data: dict[str, np.ndarray],
            sel_data: dict[str, np.ndarray], g: np.ndarray, grid_x: np.ndarray | None,
            include_bands: bool) -> dict[str, pd.DataFrame]:
    """configs (main), tradeoff, grid (when asked), bands (when asked), from the core's arrays."""
    S = [names[i] for i in fit.selected]
    b, xs = fit.band, fit.x_star
    rows = []
    band_rows: list[pd.DataFrame] = []
    grid_table = None
    if S:
        if grid_x is not None:
            lo_g, hi_g = b.at(grid_x)
            lo_l, hi_l = b.at(np.nextafter(grid_x, -np.inf))
            grid_table = pd.DataFrame({
                "config": np.repeat(np.array(S, dtype=object), grid_x.size), "x": np.tile(grid_x, len(S)),
                "lower": lo_g.ravel(), "upper": hi_g.ravel(), "lower_left": lo_l.ravel(), "upper_left": hi_l.ravel()})
        for i, c in enumerate(S):
            v = eval_data[c]
            row = {"config": c, "selected": True, "n": int(len(v)), "n_select": int(len(sel_data[c])),
                   "mean": _mean(v), "failures": int(np.isposinf(v).sum()), "level": fit.alpha,
                   "width": float(fit.width[i])}
            for j, gam in enumerate(g):
                row[f"kpi_{1 - gam:g}"] = float(xs[i, j])
            rows.append(row)
            if include_bands:
                n_i = len(v)
                band_rows.append(pd.DataFrame({
                    "config": c, "x": b.x[i, :n_i], "ecdf": np.searchsorted(v, v, side="right") / n_i,
                    "lower_left": b.lower_left[i, :n_i], "upper_left": b.upper_left[i, :n_i],
                    "lower": b.lower[i, :n_i], "upper": b.upper[i, :n_i]}))
        col = xs.min(axis=0)
        arg = xs.argmin(axis=0)
        trade = pd.DataFrame({"gamma": fit.gammas, "reliability": 1 - fit.gammas, "best_kpi": col,
                              "best_config": [S[a] if np.isfinite(col[k]) else None for k, a in enumerate(arg)]})
        trade = trade.sort_values("gamma").drop_duplicates("gamma").reset_index(drop=True)
    else:
        trade = pd.DataFrame({"gamma": [], "reliability": [], "best_kpi": [], "best_config": []})
    for c in names:
        if c not in S:
            v = data[c]
            rows.append({"config": c, "selected": False, "n": int(len(v)), "n_select": int(len(sel_data[c])),
                         "mean": _mean(v), "failures": int(np.isposinf(v).sum()), "level": float("nan"),
                         "width": float("nan")})
    tables = {"configs": pd.DataFrame(rows), "tradeoff": trade}
    if grid_x is not None:
        tables["grid"] = grid_table if grid_table is not None else pd.DataFrame(
            {c: [] for c in ("config", "x", "lower", "upper", "lower_left", "upper_left")})
    if include_bands:
        tables["bands"] = pd.concat(band_rows, ignore_index=True) if band_rows else pd.DataFrame(
            {c: [] for c in ("config", "x", "ecdf", "lower_left", "upper_left", "lower", "upper")})
    return tables
