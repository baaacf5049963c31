"""PS-DME's entry point on tables, :func:`bands`, and the :class:`PsdmeResult` it returns.

:func:`bands` checks the arguments, resolves the seed, prepares the samples (:func:`assay.data.psdme.prepare`),
splits them for SS-DME, chooses the method for ``method="auto"`` (:func:`assay.psdme.fcr.narrowest_method`), runs the
core (:func:`assay.psdme.array_core.core`) and packages the tables (``configs``, ``bands``, ``tradeoff``, ``grid``),
the guarantee in words and the warnings with :func:`assay.results.build`.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from ..data.psdme import FAILURE_POLICIES, prepare
from .. import checks
from ..errors import AssayInputError
from ..results import Result, Statement, build, fmt
from ..seeds import resolve_seed
from .array_core import PsdmeCore, core
from .arguments import (
    DEFAULT_GAMMAS,
    METHODS,
    _check_band,
    _check_gammas,
    _is_number,
)
from .fcr import _fix_calibrator, narrowest_method
from .selection import select_configurations, split_samples


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

    def statements(self) -> list[Statement]:
        """One sentence per selected configuration: the guaranteed KPI at the first quantile level (or why there is
        no finite one), at the false-coverage rate the selection is controlled at."""
        t, p = self.configs, self.params
        kpi, delta = p.get("kpi", "kpi"), float(self.level["delta"])
        gcols = [col for col in t.columns if col.startswith("kpi_")]
        target = 1.0 - float(p["gammas"][0])
        qlev = f"{target:.0%}"
        out = []
        for _, r in t[t["selected"].astype(bool)].iterrows():
            g = float(r[gcols[0]]) if gcols else float("nan")
            text = (f"{kpi}: {qlev} of requests at most {fmt(g, 4)}" if np.isfinite(g) else
                    f"{kpi}: no finite {qlev} guarantee from {int(r.get('n', 0) or 0)} requests: too few for this "
                    f"level (the DKW band at delta = {delta:g} needs {dkw_needed(delta, target)} per configuration, a "
                    "selection more)")
            out.append(Statement(text, str(r["config"]),
                                 f"false-coverage rate <= {delta:g} (selection: {p.get('select')})"))
        return out

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


def dkw_needed(delta: float, target: float) -> int:
    """Observations per configuration from which the DKW band always gives a finite guaranteed KPI.

    That is, from this many observations the DKW band at level ``delta`` always gives a finite guaranteed
    KPI at quantile level ``target``: its half-width sqrt(ln(2/delta) / 2n) must fall below 1 - target.

    Parameters
    ----------
    delta : float
        Miscoverage level of the DKW band.
    target : float
        Quantile level of the KPI, in (0, 1).

    Returns
    -------
    int
        The smallest number of observations n = floor(ln(2/delta) / (2 (1 - target)^2)) + 1.

    Examples
    --------
    >>> dkw_needed(0.05, 0.9)
    185
    """
    return int(np.floor(np.log(2.0 / delta) / (2.0 * (1.0 - target) ** 2))) + 1


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
        optimal for that size and fixed in advance, as Theorem 1 requires (:mod:`assay.psdme.fcr`).

    Returns
    -------
    PsdmeResult
        ``n`` counts the observations of the first configuration (each configuration's count is column ``n`` of
        ``configs``); warnings (empty selection, unreachable reliabilities, naive) are in ``result.warnings``.

    Examples
    --------
    Three serving configurations' latencies; the one with the lowest mean latency is picked on the same data, and
    its guaranteed 90% latency accounts for that choice.

    >>> import numpy as np, pandas as pd
    >>> from assay import psdme
    >>> rng = np.random.default_rng(0)
    >>> lat = pd.DataFrame({"config": np.repeat(["a", "b", "c"], 2000),
    ...                     "kpi": rng.gamma(2.0, np.repeat([0.5, 0.6, 1.0], 2000))})
    >>> res = psdme.bands(lat, select="top:1", delta=0.1, gammas=(0.1,), seed=0)
    >>> print(res.configs[["config", "selected", "mean", "kpi_0.9"]].round(2).to_string(index=False))
    config  selected  mean  kpi_0.9
         a      True  1.01     2.32
         b     False  1.22      NaN
         c     False  2.01      NaN
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
    delta = checks.level(delta)
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
    band_rows: list[dict[str, np.ndarray]] = []
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
                band_rows.append({
                    "config": np.full(n_i, c, dtype=object), "x": b.x[i, :n_i],
                    "ecdf": np.searchsorted(v, v, side="right") / n_i,
                    "lower_left": b.lower_left[i, :n_i], "upper_left": b.upper_left[i, :n_i],
                    "lower": b.lower[i, :n_i], "upper": b.upper[i, :n_i]})
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
        # one frame from the configurations' columns joined (a frame per configuration, then concat, cost more
        # than the bands in a Monte Carlo study)
        tables["bands"] = pd.DataFrame({k: np.concatenate([r[k] for r in band_rows]) for k in band_rows[0]}) \
            if band_rows else pd.DataFrame(
            {c: [] for c in ("config", "x", "ecdf", "lower_left", "upper_left", "lower", "upper")})
    return tables
