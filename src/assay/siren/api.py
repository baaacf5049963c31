"""SIREN's entry point on tables, :func:`evaluate`, and the :class:`SirenResult` it returns.

:func:`evaluate` checks the arguments, resolves the seed, prepares the design (:func:`assay.data.siren.prepare`),
draws the splits, runs the core (:func:`assay.siren.array_core.core`) and the contrasts
(:mod:`assay.siren.contrasts`) and the baselines (:mod:`assay.siren.comparators`), and packages the numbers with
:func:`assay.results.build`, together with the warnings a reader must see beside them (unstable hard selection,
degenerate cells, a temperature below the selection noise, intervals outside [0, 1]).
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from ..data import SirenDesign, parse_budget
from ..data.siren import prepare
from .. import checks
from ..errors import AssayInputError
from ..results import Result, Statement, build, fmt, level_alias
from ..seeds import resolve_seed
from .array_core import SirenEstimate, _check_core_params, _is_real, core
from .comparators import _baseline_rows
from .contrasts import (
    CONTRAST_COLUMNS,
    _contrast_matrix,
    _contrasts_table,
    _label,
    _resolve_contrasts,
    contrast_core,
)
from .splits import split_design, split_sizes


class SirenResult(Result):
    """SIREN estimates per (system, budget) cell with pointwise CIs, a simultaneous band,
    contrasts and baselines.

    Tables: ``cells`` (main), ``contrasts``. ``baselines`` maps a baseline name to its rows.
    """

    method = "siren"
    main_table = "cells"

    @classmethod
    def _table_names(cls) -> tuple[str, ...]:
        return ("cells", "contrasts")

    @property
    def cells(self) -> pd.DataFrame:
        return self.tables["cells"]

    @property
    def contrasts(self) -> pd.DataFrame:
        """Contrast estimates and intervals (an empty frame with the usual columns when none)."""
        if "contrasts" not in self.tables:
            self.tables["contrasts"] = pd.DataFrame({c: [] for c in CONTRAST_COLUMNS})
        return self.tables["contrasts"]

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        d.setdefault("contrasts", [])
        return d

    def _restore(self) -> None:
        con = self.tables.get("contrasts")
        if con is not None and con.empty and len(con.columns) == 0:
            del self.tables["contrasts"]  # recreated with its columns by .contrasts
        for recs in self.info.get("baselines", {}).values():
            for r in recs:
                for k in ("estimate", "ci_low", "ci_high"):
                    if r.get(k) is None:
                        r[k] = float("nan")

    @property
    def baselines(self) -> dict[str, list[dict[str, Any]]]:
        return self.info.get("baselines", {})

    def baselines_frame(self) -> pd.DataFrame:
        rows = [dict(method=k, **r) for k, recs in self.baselines.items() for r in recs]
        return pd.DataFrame(rows)

    def cell(self, system: str, budget: Any) -> dict[str, Any]:
        b = parse_budget(budget)
        t = self.cells
        hit = t[(t["system"] == system) & (t["budget"].map(parse_budget) == b)]
        if hit.empty:
            raise AssayInputError(f"no cell system={system!r} budget={budget!r}")
        return hit.iloc[0].to_dict()

    def statements(self) -> list[Statement]:
        """One sentence per cell: what deploying the search's pick at that budget scores on fresh items. When the
        search is over named configurations (``info["search"]["order"]``, as a campaign records), it names them."""
        order = self.info.get("search", {}).get("order")
        conf = f"{self.confidence:.0%}"
        out = []
        for _, r in self.cells.iterrows():
            b = r["budget"]
            b = f"{b:g}" if isinstance(b, (int, float, np.integer, np.floating)) else str(b)
            if order is not None:
                b = int(float(b))
                who = (f"the first configuration alone ({order[0]}, no search)" if b == 1 else
                       f"a search over the first {b} configurations ({', '.join(order[:b])}) deploys one that")
                subject = f"search@{b}"
            else:
                who, subject = f"{r['system']} tuned at budget {b}", f"{r['system']}@{b}"
            out.append(Statement(f"{who} scores [{fmt(r['ci_low'])}, {fmt(r['ci_high'])}] on fresh items (estimate "
                                 f"{fmt(r['estimate'])})", subject,
                                 f"about {conf} (selection-aware, asymptotic)"))
        return out

    def summary(self) -> str:
        lv = self.level
        lines = [
            f"SIREN (assay {self.version}): {len(self.cells)} cells, M = {self.n} items, "
            f"R = {self.params.get('reps')}, selector = {self.params.get('selector')}, "
            f"tau = {self.params.get('temperature')}, seed = {self.seed}",
            f"{1 - lv.get('alpha', 0.05):.0%} pointwise intervals; simultaneous band over the grid "
            f"({self.info.get('band', {}).get('type', '')}, critical value "
            f"{self.info.get('band', {}).get('critical', float('nan')):.3f})",
        ]
        cols = ["system", "budget", "K", "estimate", "ci_low", "ci_high", "band_low", "band_high", "naive_max"]
        lines.append(self.cells[[c for c in cols if c in self.cells]].to_string(index=False, float_format=lambda x: f"{x:.4f}"))
        if not self.contrasts.empty:
            lines.append("contrasts:")
            lines.append(self.contrasts[["contrast", "estimate", "ci_low", "ci_high"]].to_string(index=False, float_format=lambda x: f"{x:+.4f}"))
        for w in self.info.get("warnings", []):
            lines.append(f"warning: {w}")
        return "\n".join(lines)


def _selection_noise(Z: np.ndarray, m_score: int) -> float:
    """Standard deviation of the scoring-split difference between a cell's two best artifacts (by full mean):
    how much their selection scores move from split to split. A softmax temperature far below it makes the
    selection a hard switch driven by noise, where the linearised (delta-method) interval is unreliable."""
    if Z.shape[1] < 2 or m_score < 1:
        return 0.0
    top = np.argsort(-Z.mean(axis=0), kind="stable")[:2]
    d = Z[:, top[0]].astype(float) - Z[:, top[1]]  # float: scores may be stored as uint8 / int8
    return float(d.std(ddof=1) / math.sqrt(m_score)) if Z.shape[0] > 1 else 0.0


def _check_params(reps, score_fraction, n_boot, alpha, temperature, selector, band, engine, threshold) -> None:
    checks.positive_int(reps, "reps")
    checks.level(score_fraction, "score_fraction")
    _check_core_params(n_boot, alpha, temperature, selector, band, engine, threshold)


def evaluate(
    table: Any,
    *,
    reps: int = 10,
    score_fraction: float = 0.5,
    selector: str = "softmax",
    temperature: float = 0.1,
    split_weights: str | Sequence[float] = "eval_size",
    n_boot: int = 2000,
    alpha: float = 0.05,
    contrasts: Iterable[Any] = (),
    seed: int | np.random.Generator | None = None,
    columns: Mapping[str, str] | None = None,
    on_missing: str = "error",
    delta: float | None = None,
    band: str = "studentized",
    engine: str = "exact",
    instability_threshold: float = 0.10,
    item_bootstrap_draws: int = 0,
    include_baselines: bool = True,
) -> SirenResult:
    """Selection-aware estimates and intervals for every (system, budget) cell (SIREN, eq. 6, 24, 72).

    The three layers: :func:`prepare` (table -> :class:`SirenDesign`), :func:`split_design` and :func:`core`
    (arrays -> :class:`SirenEstimate`), :func:`contrast_core` for the contrasts, then
    :func:`assay.results.build`.

    Parameters
    ----------
    table : DataFrame, dict of arrays, SirenDesign or array
        Tidy long table with columns ``system, budget, artifact, item, score`` (rename yours with
        ``columns``), or ``{(system, budget): items x artifacts array}``.
    reps : int, default 10
        Number of repeated splits R.
    score_fraction : float, default 0.5
        rho: the scoring part of each split has floor(rho M) items, the held-out part the rest.
    selector : {"softmax", "hard", "adaptive"}, default "softmax"
        See :mod:`assay.siren.splits`.
    temperature : float, default 0.1
        Softmax temperature tau on the score scale. 0.1 is a soft argmax on accuracies; 1.0 is
        nearly uniform averaging of the shortlist. Recorded in the result.
    split_weights : "eval_size" | "uniform" | sequence, default "eval_size"
        omega_r proportional to |E_r| (equal here, since every split has the same size), equal,
        or given.
    n_boot : int, default 2000
        Bootstrap draws B.
    alpha : float, default 0.05
        Miscoverage: 0.05 gives 95% pointwise intervals and a 95% simultaneous band.
    delta : float, optional
        assay's common name for the error level (DESIGN: ``delta`` in every function); when given it is used as
        ``alpha``.
    contrasts : iterable
        Expressions (``"A@1.5M - A@0"``), families (``"tuned-vs-default"``, ``"budget-gains"``,
        ``"pairwise"``), dicts ``{"A@1.5M": 1, "A@0": -1}`` or :class:`Contrast` objects.
    seed : int, Generator or None
        Randomness for the splits and the bootstrap (recorded; None draws and records one).
    band : {"studentized", "raw"}, default "studentized"
        Simultaneous band from the quantile of max_c |G*_c| / sd_c (equal pointwise level in every
        cell) or of max_c |G*_c| (the paper's raw form: equal half-widths).
    engine : {"exact", "multipliers"}, default "exact"
        How the multiplier draws are generated; same law (see :mod:`assay.stats.bootstrap`).
    instability_threshold : float, default 0.10
        pi_win threshold of the adaptive selector.
    item_bootstrap_draws : int, default 0
        If > 0, also run the nonparametric item bootstrap with this many replicates per cell.
    include_baselines : bool, default True
        Compute M1-M4 and the shortlist mean.

    Returns
    -------
    SirenResult
        Main table ``cells`` (one row per cell; ``n`` = the M evaluation items shared by every cell).

    Examples
    --------
    Three models' prompts tuned by DSPy at growing budgets on MMLU-Pro Law (shipped): what deploying the tuned prompt
    scores on fresh items, against the optimistic report of the best prompt found (``naive_max``).

    >>> import assay
    >>> from assay.datasets import load_siren_law
    >>> res = assay.siren.evaluate(load_siren_law(), temperature=0.1, reps=10, seed=0)
    >>> print(res.cells[["system", "budget", "estimate", "naive_max"]].head(3).round(2).to_string(index=False))
      system    budget  estimate  naive_max
    Qwen3-8B       0.0      0.34       0.34
    Qwen3-8B  500000.0      0.35       0.36
    Qwen3-8B 1500000.0      0.35       0.37
    """
    alpha = level_alias(alpha, delta, 0.05)
    _check_params(reps, score_fraction, n_boot, alpha, temperature, selector, band, engine, instability_threshold)
    seed = resolve_seed(seed)
    design = prepare(table, columns=columns, on_missing=on_missing)
    empty_families: list[str] = []
    contrast_list = _resolve_contrasts(contrasts, design.cells, empty_families)
    if not contrast_list and empty_families:
        raise AssayInputError(f"the contrast families {', '.join(map(repr, empty_families))} are empty for this table "
                              "('pairwise' compares systems at the same budget; 'tuned-vs-default' needs a budget-0 "
                              "cell and a tuned budget for the same system)")
    M = design.n_items
    rng_split, rng_boot, rng_item = (np.random.default_rng(s) for s in seed.spawn(3))
    in_score = split_design(M, reps, score_fraction, rng_split)
    tau = float(temperature) if _is_real(temperature) else float("nan")  # unused by "hard"
    sel_kw = dict(selector=selector, temperature=tau, split_weights=split_weights,
                  instability_threshold=instability_threshold)

    fit = core([design.scores[c] for c in design.cells], in_score, alpha=alpha, rng=rng_boot, n_boot=n_boot,
               band=band, engine=engine, labels=[_label(c) for c in design.cells], **sel_kw)
    tables = {"cells": _cells_table(design.cells, fit)}
    contrast_info: dict[str, Any] = {}
    if contrast_list:
        con = contrast_core(fit, _contrast_matrix(contrast_list, design.cells), alpha=alpha)
        tables["contrasts"] = _contrasts_table(contrast_list, con)
        contrast_info = {"critical_simultaneous": con.critical_simultaneous}

    m, l = split_sizes(M, score_fraction)
    params = {
        "reps": int(reps),
        "score_fraction": float(score_fraction),
        "selector": selector,
        "temperature": tau,
        "split_weights": split_weights if isinstance(split_weights, str) else list(map(float, split_weights)),
        "n_boot": int(n_boot),
        "band": band,
        "engine": engine,
        "instability_threshold": float(instability_threshold),
        "item_bootstrap_draws": int(item_bootstrap_draws),
        "on_missing": on_missing,
    }
    info = {
        "design": {"items": M, "score_size": m, "heldout_size": l, "cells": len(design.cells),
                   "dropped_items": len(design.dropped_items)},
        "band": {"type": band, "critical": fit.band_critical, "level": 1 - alpha},
        "contrast_band": contrast_info,
        "baselines": _baseline_rows(design, in_score, alpha, include_baselines, int(item_bootstrap_draws),
                                    rng_item, sel_kw),
    }
    return build(
        SirenResult,
        params=params,
        n=M,
        n_meaning="evaluation items shared by every cell",
        meaning=(
            f"each [ci_low, ci_high] covers its cell's procedure-level score with probability "
            f"about {1 - alpha:.0%} (asymptotic, given the frozen shortlist); [band_low, band_high] "
            f"cover every cell at once with probability about {1 - alpha:.0%}"
        ),
        seed=seed,
        tables=tables,
        alpha=alpha,
        warnings=[*(f"contrast family {f!r} has no member in this table ('pairwise' compares different systems at "
                    "the same budget; 'tuned-vs-default' needs a budget-0 cell and a tuned budget of the same system): "
                    "left out" for f in empty_families),
                  *_warnings(design, fit, tau, instability_threshold, m)],
        info=info,
    )


def _cells_table(cells: Sequence[tuple[str, float | str]], fit: SirenEstimate) -> dict[str, Any]:
    return {
        "system": [c[0] for c in cells],
        "budget": [c[1] for c in cells],
        "K": fit.K,
        "selector": fit.selector,
        "estimate": fit.theta,
        "ci_low": fit.ci_low,
        "ci_high": fit.ci_high,
        "band_low": fit.band_low,
        "band_high": fit.band_high,
        "se": fit.se,
        "se_heldout": fit.se_heldout,
        "se_selection": fit.se_selection,
        "pi_win": fit.pi_win,
        "eff_artifacts": fit.eff_artifacts,
        "naive_max": fit.naive_max,
        "optimism": fit.naive_max - fit.theta,
    }


def _warnings(design: SirenDesign, fit: SirenEstimate, tau: float, threshold: float, m_score: int) -> list[str]:
    """The sentences a reader must see beside the numbers: unstable hard selection, degenerate cells, a
    temperature below the selection noise, intervals reaching outside [0, 1]."""
    cells = design.cells
    out: list[str] = []
    for j in np.flatnonzero((fit.selector == "hard") & (fit.pi_win > threshold)):
        out.append(
            f"{_label(cells[j])}: hard selection with winner instability pi_win = {fit.pi_win[j]:.2f} > "
            f"{threshold}: the interval ignores the winner jumping between splits and can "
            "undercover (use selector='softmax')."
        )
    variance = np.diag(fit.omega)
    for j, cell in enumerate(cells):
        Z = design.scores[cell]
        if np.ptp(Z) == 0 or variance[j] <= 1e-24:
            # judged on the data (a constant cell with K > 1 leaves float residue ~1e-33 in the variance)
            out.append(
                f"{_label(cell)}: every item has the same score, so the interval has zero width; the "
                "normal approximation says nothing here (score more items or report an exact binomial bound)."
            )
        elif fit.selector[j] == "softmax" and tau < 0.25 * _selection_noise(Z, m_score):
            out.append(
                f"{_label(cell)}: temperature {tau:g} is far below the split-to-split noise of the two best "
                f"artifacts' selection scores ({_selection_noise(Z, m_score):.3g}): the softmax acts as a hard switch "
                "driven by noise, and its linearised interval is unreliable (it can reach outside the scores' "
                "range). Use a temperature of at least that noise, or selector='hard' / 'adaptive'."
            )
    for j in np.flatnonzero((fit.ci_low < -1e-9) | (fit.ci_high > 1 + 1e-9)):
        out.append(f"{_label(cells[j])}: the interval [{fit.ci_low[j]:.3f}, {fit.ci_high[j]:.3f}] reaches "
                   "outside the scores' range [0, 1]; the normal approximation is strained for this cell")
    return out
