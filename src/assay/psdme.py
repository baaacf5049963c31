"""PS-DME: CDF confidence bands and guaranteed KPIs for configurations pre-selected on the same data.

Paper: Farzaneh and Simeone, "Post-Selection Distributional Model Evaluation" (``papers/ps-dme.txt``),
Sections 2-5, Appendices D-G.

K configurations each have n_k i.i.d. observations of a KPI where lower is better (latency,
loss). A selection rule S looks at the data and keeps a subset of promising configurations; for
each kept one we want a band [L_k(x), U_k(x)] that contains its true CDF F_k for every x, with
false coverage rate FCR = E[#{k in S : band misses F_k} / max(|S|, 1)] <= delta (eq. 8).

Methods
-------
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
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from .data import map_columns
from .errors import AssayInputError, describe_rows
from .seeds import resolve_seed
from .results import Result
from .stats import bands as bd
from .stats import calibrate as cal

__all__ = ["bands", "PsdmeResult", "METHODS", "narrowest_method", "levels"]

METHODS = ("ps-dme", "ss-dme", "bonferroni", "naive", "auto")
BANDS = ("dkw", "berk-jones")
DEFAULT_GAMMAS = (0.01, 0.05, 0.1)


# --------------------------------------------------------------------------------------------
# Data and selection
# --------------------------------------------------------------------------------------------


def _arrays(table: pd.DataFrame, columns: Mapping[str, str] | None, failures: str) -> dict[str, np.ndarray]:
    mapping = {"config": None, "kpi": None}
    mapping.update(columns or {})
    df = map_columns(table, mapping, required=("config", "kpi"))
    if df.empty:
        raise AssayInputError("the KPI table is empty")
    if df["config"].isna().any():
        raise AssayInputError(f"column 'config' is empty at {describe_rows(df.index[df['config'].isna()])}")
    kpi = pd.to_numeric(df["kpi"], errors="coerce")
    bad = kpi.isna() & df["kpi"].notna()
    if bad.any():
        raise AssayInputError(f"column 'kpi' has non-numeric values at {describe_rows(df.index[bad])}")
    if kpi.isna().any():
        raise AssayInputError(
            f"column 'kpi' is missing at {describe_rows(df.index[kpi.isna()])}; remove those rows, or record a "
            "failed request as +inf with failures='worst'"
        )
    kpi = kpi.astype(float)
    if np.isneginf(kpi).any():
        raise AssayInputError(f"column 'kpi' is -inf at {describe_rows(df.index[np.isneginf(kpi)])}")
    if np.isposinf(kpi).any() and failures != "worst":
        raise AssayInputError(
            f"column 'kpi' is +inf at {describe_rows(df.index[np.isposinf(kpi)])}; if these are failures "
            "(errored requests), pass failures='worst' to count them as worse than "
            "every finite value"
        )
    out: dict[str, np.ndarray] = {}
    for cfg, g in kpi.groupby(df["config"].astype(str), sort=False):
        out[str(cfg)] = np.sort(g.to_numpy())
    small = [c for c, v in out.items() if len(v) < 2]
    if small:
        raise AssayInputError(
            f"configurations with fewer than 2 observations: {', '.join(small[:5])}; a CDF band needs data"
        )
    return out


def _fixed_size(rule: Any, K: int) -> int | None:
    """|S| when the rule fixes it before the data ("all": K, "top:k": min(k, K)); None when the data decide."""
    if callable(rule):
        return None
    if rule is None or str(rule).strip().lower() == "all":
        return K
    m = re.fullmatch(r"(?:top[:\-]?|top-k by mean:?)(\d+)", str(rule).strip().lower())
    return min(int(m.group(1)), K) if m else None


def _select(rule: Any, data: dict[str, np.ndarray]) -> list[str]:
    names = list(data)
    means = {c: (float(np.mean(v)) if np.isfinite(v).all() else math.inf) for c, v in data.items()}
    if callable(rule):
        chosen = list(rule({c: v.copy() for c, v in data.items()}))
        unknown = [c for c in chosen if c not in data]
        if unknown:
            raise AssayInputError(f"the selection returned unknown configurations: {', '.join(map(str, unknown[:5]))}")
        return list(dict.fromkeys(str(c) for c in chosen))
    if rule is None or rule == "all":
        return names
    text = str(rule).strip().lower()
    m = re.fullmatch(r"(?:top[:\-]?|top-k by mean:?)(\d+)", text)
    if m:
        k = int(m.group(1))
        if k < 1:
            raise AssayInputError("top:k needs k >= 1")
        order = sorted(names, key=lambda c: (means[c], names.index(c)))
        return order[: min(k, len(names))]
    m = re.fullmatch(r"below[:=]?\s*([-+]?\d*\.?\d+(?:[eE][-+]?\d+)?)", text)
    if m:
        v = float(m.group(1))
        return [c for c in names if means[c] < v]
    raise AssayInputError(
        f"unknown selection {rule!r}: use 'all', 'top:K' (K smallest means), 'below:VALUE' (mean below VALUE) "
        "or a callable taking {config: array} and returning configuration names"
    )


# --------------------------------------------------------------------------------------------
# Levels and the method choice
# --------------------------------------------------------------------------------------------


def levels(K: int, selected: int, delta: float, calibrator: Any = "optimal") -> dict[str, float]:
    """Per-band miscoverage alpha of each method, as a function of the design only."""
    for name, v, lo in (("K", K, 1), ("selected", selected, 0)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
            raise AssayInputError(f"{name} must be an integer >= {lo} (configurations); got {v!r}")
    if selected > K:
        raise AssayInputError(f"selected ({selected}) cannot exceed K ({K})")
    if isinstance(delta, bool) or not isinstance(delta, (int, float, np.integer, np.floating)) or not 0 < delta < 1:
        raise AssayInputError(f"delta must be a number strictly between 0 and 1; got {delta!r}")
    if isinstance(calibrator, (int, float, np.integer, np.floating)) and not isinstance(calibrator, bool) \
            and not 0 < float(calibrator) < 1:
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
    """The valid method with the narrowest DKW band, from the design alone; and the reason."""
    lv = levels(K, selected, delta, calibrator)  # validates K, selected, delta, calibrator
    for name, v in (("n", n), ("split", split)):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not math.isfinite(v):
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


_FAIL = np.finfo(float).max  # stands in for a failure (+inf): above every finite KPI, still counted in n


def _band(samples: Sequence[np.ndarray], alpha: float, band: str):
    m = max(len(s) for s in samples)
    x = np.full((len(samples), m), np.nan)
    for i, s in enumerate(samples):
        x[i, : len(s)] = np.where(np.isposinf(s), _FAIL, s)
    if band == "dkw":
        b = bd.dkw_band(x, alpha)
    else:
        b = bd.bj_band(x, alpha)
    return dataclasses.replace(b, x=np.where(b.x == _FAIL, np.inf, b.x))  # failures reported as +inf again


def _guaranteed(band, gammas: np.ndarray) -> np.ndarray:
    """X*_k(gamma) = inf{x : L_k(x) >= 1 - gamma} (eq. 18) per row and gamma; +inf if never reached."""
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


class PsdmeResult(Result):
    """Bands and guaranteed KPIs for the selected configurations.

    Tables: ``configs`` (main: one row per configuration, selected or not), ``bands`` (the band at
    both sides of every data point of every selected configuration), ``tradeoff`` (best guaranteed
    KPI over the selection as a function of gamma).
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
    """
    if isinstance(delta, bool) or not isinstance(delta, (int, float, np.integer, np.floating)) or not (0 < delta < 1):
        raise AssayInputError(f"delta must be a number strictly between 0 and 1, got {delta!r}")
    delta = float(delta)
    if method not in METHODS:
        raise AssayInputError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    band = {"bj": "berk-jones", "berk_jones": "berk-jones"}.get(band, band)
    if band not in BANDS:
        raise AssayInputError(f"band must be 'dkw' or 'berk-jones', got {band!r}")
    if isinstance(split, bool) or not isinstance(split, (int, float, np.integer, np.floating)) or not (0 < float(split) < 1):
        raise AssayInputError(f"split must be a number in (0, 1), got {split!r}")
    if failures not in ("error", "worst"):
        raise AssayInputError(f"failures must be 'error' or 'worst', got {failures!r}")
    try:
        g = np.asarray(list(gammas), dtype=float)
    except (TypeError, ValueError):
        raise AssayInputError(f"gammas must be numbers in (0, 1), got {gammas!r}") from None
    if g.size == 0 or np.any(~np.isfinite(g)) or np.any((g <= 0) | (g >= 1)):
        raise AssayInputError(f"gammas must be numbers in (0, 1), got {list(gammas)!r}")

    data = _arrays(table, columns, failures)
    names = list(data)
    K = len(names)
    fixed = _fixed_size(select, K)
    tau_basis = None
    if calibrator in (None, "optimal") and fixed is None:
        if max_selected is None:
            max_selected = K
        if isinstance(max_selected, bool) or not isinstance(max_selected, (int, np.integer)) or not 1 <= max_selected <= K:
            raise AssayInputError(f"max_selected must be an integer in [1, K = {K}]; got {max_selected!r}")
        calibrator = float(cal.optimal_power_tau(K, int(max_selected), delta))
        tau_basis = (f"tau = {calibrator:.4f}, optimal for K = {K} and the declared maximum |S| = {int(max_selected)}, "
                     "fixed before the data (the selection's size depends on the data)")
    elif calibrator in (None, "optimal"):
        tau_basis = f"tau optimal for K = {K} and |S| = {fixed}, which the rule fixes before the data"
    elif max_selected is not None:
        raise AssayInputError("max_selected only applies to the 'optimal' calibrator of a data-dependent selection")
    recorded_seed, ss = resolve_seed(seed)
    rng = np.random.default_rng(ss)

    # SS-DME splits each configuration's observations (a seeded random part for selection).
    sel_data, eval_data = data, data
    if method in ("ss-dme", "auto"):
        split_sel, split_eval = {}, {}
        for c, v in data.items():
            perm = rng.permutation(len(v))
            m = int(round(split * len(v)))
            m = min(max(m, 1), len(v) - 1)
            split_sel[c] = np.sort(v[perm[:m]])
            split_eval[c] = np.sort(v[perm[m:]])
    chosen_method, reason = method, ""
    if method == "auto":
        # |S| from the full-data selection (what PS-DME / Bonferroni would use)
        S_full = _select(select, data)
        n_typ = float(np.median([len(data[c]) for c in S_full])) if S_full else float(np.median([len(v) for v in data.values()]))
        chosen_method, reason = narrowest_method(K, len(S_full), delta, n_typ, split, calibrator)
    if chosen_method == "ss-dme":
        sel_data, eval_data = split_sel, split_eval
    S = _select(select, sel_data)
    lv = levels(K, len(S), delta, calibrator)
    alpha = lv[chosen_method]

    rows = []
    band_rows: list[pd.DataFrame] = []
    best = np.full(len(g), np.inf)
    best_cfg: list[Any] = [None] * len(g)
    grid_g = np.linspace(0.001, 0.5, tradeoff_points) if tradeoff_points else np.array([])
    allg = np.concatenate([g, grid_g])
    grid_table = None
    if grid is not None:
        try:
            grid_x = np.asarray(list(grid), dtype=float)
        except (TypeError, ValueError):
            raise AssayInputError("grid must be a sequence of numbers") from None
        if grid_x.ndim != 1 or grid_x.size == 0 or not np.all(np.isfinite(grid_x)):
            raise AssayInputError("grid must be a non-empty 1-D sequence of finite numbers")
    if S:
        b = _band([eval_data[c] for c in S], alpha, "dkw" if band == "dkw" else "bj")
        xs = _guaranteed(b, allg)
        if grid is not None:
            lo_g, hi_g = b.at(grid_x)
            lo_l, hi_l = b.at(np.nextafter(grid_x, -np.inf))
            grid_table = pd.DataFrame({
                "config": np.repeat(np.array(S, dtype=object), grid_x.size), "x": np.tile(grid_x, len(S)),
                "lower": lo_g.ravel(), "upper": hi_g.ravel(), "lower_left": lo_l.ravel(), "upper_left": hi_l.ravel()})
        for i, c in enumerate(S):
            v = eval_data[c]
            row = {"config": c, "selected": True, "n": int(len(v)), "n_select": int(len(sel_data[c])),
                   "mean": float(np.mean(v)) if np.isfinite(v).all() else math.inf,
                   "failures": int(np.isposinf(v).sum()), "level": alpha,
                   "width": float(b.width[i])}
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
        best = col[: len(g)]
        best_cfg = [S[a] if np.isfinite(col[k]) else None for k, a in enumerate(arg[: len(g)])]
        trade = pd.DataFrame({"gamma": allg, "reliability": 1 - allg, "best_kpi": col,
                              "best_config": [S[a] if np.isfinite(col[k]) else None for k, a in enumerate(arg)]})
        trade = trade.sort_values("gamma").drop_duplicates("gamma").reset_index(drop=True)
    else:
        trade = pd.DataFrame({"gamma": [], "reliability": [], "best_kpi": [], "best_config": []})
    for c in names:
        if c not in S:
            v = data[c]
            rows.append({"config": c, "selected": False, "n": int(len(v)), "n_select": int(len(sel_data[c])),
                         "mean": float(np.mean(v)) if np.isfinite(v).all() else math.inf,
                         "failures": int(np.isposinf(v).sum()), "level": float("nan"), "width": float("nan")})
    configs = pd.DataFrame(rows)
    notes = []
    if S:
        for j, gam in enumerate(g):
            if not np.isfinite(best[j]):
                notes.append(f"no selected configuration can guarantee any KPI at reliability {1 - gam:g}: "
                             "its band never reaches that level (more data or a lower reliability)")
    else:
        notes.append("the selection is empty: no bands, and the false coverage proportion is 0 by definition")
    if chosen_method == "naive":
        notes.append("naive in-sample bands carry NO guarantee after selection; shown for comparison only")
    thr = math.e * math.log(K / delta)
    info = {
        "method_used": chosen_method,
        "method_reason": reason,
        "K": K,
        "selected_count": len(S),
        "levels": lv,
        "tau": (cal.optimal_power_tau(K, len(S), delta) if (S and calibrator in (None, "optimal")) else
                (float(calibrator) if isinstance(calibrator, (int, float)) else None)),
        "tau_basis": tau_basis,
        "bonferroni_threshold": thr,
        "best": [{"gamma": float(gam), "reliability": float(1 - gam), "best_kpi": float(best[j]),
                  "best_config": best_cfg[j]} for j, gam in enumerate(g)],
        "notes": notes,
        "guarantee": (
            {"ps-dme": (f"FCR <= {delta:g} over the selected bands, for any selection rule keeping |S| = {fixed} "
                        "(the calibrator was set from that size)" if (fixed is not None and tau_basis) else
                        f"FCR <= {delta:g} over the selected bands, for any selection rule (the calibrator, "
                        + (f"tau = {float(calibrator):.4f}, " if isinstance(calibrator, float) else "")
                        + "was fixed before the data)"),
             "ss-dme": f"FCR <= {delta:g} (selection on a split disjoint from the bands)",
             "bonferroni": f"all K = {K} bands cover simultaneously with probability >= {1 - delta:g}",
             "naive": "none after selection"}[chosen_method]
        ),
    }
    tables = {"configs": configs, "tradeoff": trade}
    if grid is not None:
        tables["grid"] = grid_table if grid_table is not None else pd.DataFrame(
            {c: [] for c in ("config", "x", "lower", "upper", "lower_left", "upper_left")})
    if include_bands:
        tables["bands"] = pd.concat(band_rows, ignore_index=True) if band_rows else pd.DataFrame(
            {c: [] for c in ("config", "x", "ecdf", "lower_left", "upper_left", "lower", "upper")})
    params = {"select": select if not callable(select) else getattr(select, "__name__", "callable"),
              "method": method, "band": band, "calibrator": calibrator if not callable(calibrator) else "callable",
              "split": float(split), "gammas": g.tolist(), "failures": failures}
    level = {"delta": delta, "meaning": info["guarantee"],
             "n_meaning": "observations of the first configuration"}
    return PsdmeResult(params=params, level=level, n=int(len(data[names[0]])), seed=recorded_seed,
                       tables=tables, info=info)
