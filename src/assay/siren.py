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
  the selector's derivative:
      psi_i = sum_r omega_r [ 1{i in E_r} (M/|E_r|) q_r'(Z_i - T_r)
                             + 1{i in D_r} (M/|D_r|) T_r' Dg(S_r) (Z_i - S_r) ].
  Actual split sizes are used, so odd M is exact (M = 1001 -> |D| = 500, |E| = 501).
* A Gaussian multiplier bootstrap with ONE multiplier per item, shared by every cell of the
  grid (eq. 72), gives pointwise intervals, a simultaneous band over the whole grid and
  intervals for pre-specified linear contrasts (tuned vs default, equal-budget system
  comparisons, cross-budget gains). See :mod:`assay.stats.bootstrap` for the two equivalent
  engines that draw it.

Selectors
---------
``"softmax"`` (default): q = softmax(S / tau). Its Jacobian is (diag(q) - q q') / tau, so the
selection term is c_r'(Z_i - S_r) with c_r = q_r * (T_r - Y_r) / tau: O(K) per split, never a
K x K matrix.

``"hard"``: argmax of S_r (exact ties share the weight equally). Its derivative is zero almost
everywhere, so psi keeps only the held-out term; near ties this misses the variance of the
winner jumping between splits and undercovers (Study B).

``"adaptive"``: per cell, hard when the winner instability pi_win <= ``instability_threshold``
(0.10), softmax otherwise. pi_win = 1 - (share of splits won by the modal winner); with ties the
splits' votes are split equally. With R <= 9 the threshold 0.10 means "every split agrees".

Temperature
-----------
``temperature`` (tau) is on the scale of the scores (accuracies in [0, 1]) and decides what is
being estimated. With tau = 0.1 (the paper's simulations, our default), a 0.05 accuracy lead
gives an artifact exp(0.5) = 1.6 times the weight: a soft argmax. With tau = 1.0 (the paper's
real-data runs) the weights are within a few percent of uniform and theta~ is essentially the
average held-out score of the whole shortlist, not of a tuned winner. The result reports tau and
the effective number of artifacts 1 / sum_k q_k^2 per cell so the reader can see which regime
applies.

Cells with one artifact (the untuned default, budget 0) involve no selection: their estimate is
the plain mean over all M items (the limit of the repeated-split estimator as R grows; same
expectation, no items discarded) with contribution psi_i = Z_i - mean.

Baselines (Section 4): M1 naive max of full-pool means; M2 = M1 with a Wald interval on the same
items; M3 single split (argmax on D_1, Wald on E_1); M4 R-split argmax with a Student-t interval
on the split spread (df = R - 1, as the paper describes it; the released code used a normal
quantile instead); the mean of the shortlist (Wald on item row means); and optionally a
nonparametric item bootstrap (resample items with replacement and rerun the whole repeated-split
pipeline; percentile interval, because duplicated items that straddle D and E recreate a small
winner's curse inside each replicate and bias a symmetric interval).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats as _st

from .data import SirenDesign, format_budget, parse_budget, siren_design
from .errors import AssayInputError
from .seeds import resolve_seed
from .results import Result
from .stats import bootstrap as boot

__all__ = [
    "evaluate",
    "SirenResult",
    "Contrast",
    "split_design",
    "repeated_split",
    "baselines",
    "item_bootstrap",
    "SELECTORS",
]

SELECTORS = ("softmax", "hard", "adaptive")
CONTRAST_COLUMNS = ("contrast", "kind", "estimate", "se", "ci_low", "ci_high", "simultaneous_low",
                    "simultaneous_high", "verdict_pointwise", "verdict_simultaneous")
CONTRAST_FAMILIES = ("tuned-vs-default", "budget-gains", "pairwise")


# --------------------------------------------------------------------------------------------
# Split design and the vectorised repeated-split core
# --------------------------------------------------------------------------------------------


def split_sizes(M: int, score_fraction: float) -> tuple[int, int]:
    """(|D_r|, |E_r|) = (floor(rho M), M - floor(rho M)), each at least 1."""
    m = int(math.floor(score_fraction * M))
    m = min(max(m, 1), M - 1)
    return m, M - m


def split_design(
    M: int, reps: int, score_fraction: float, rng: np.random.Generator, *, batch: int | None = None
) -> np.ndarray:
    """Random scoring-set membership, shape ``(R, M)`` (or ``(batch, R, M)``), True = in D_r.

    Each split draws a uniformly random subset of size floor(rho M) independently of the others
    (the k-th smallest of M uniforms marks the subset: O(M) per split, no sort).
    """
    m, _ = split_sizes(M, score_fraction)
    shape = (reps, M) if batch is None else (batch, reps, M)
    u = rng.random(shape)
    kth = np.partition(u, m - 1, axis=-1)[..., m - 1 : m]
    return u <= kth


def _split_weights(split_weights: str | Sequence[float], l: np.ndarray) -> np.ndarray:
    R = l.shape[-1]
    if isinstance(split_weights, str):
        if split_weights == "eval_size":
            return l / l.sum(axis=-1, keepdims=True)
        if split_weights == "uniform":
            return np.full(l.shape, 1.0 / R)
        raise AssayInputError(
            f"split_weights must be 'eval_size', 'uniform' or {R} non-negative numbers, got {split_weights!r}"
        )
    w = np.asarray(split_weights, dtype=float)
    if w.shape != (R,) or not np.all(np.isfinite(w)) or (w < 0).any() or w.sum() <= 0:
        raise AssayInputError(f"split_weights must be {R} non-negative numbers with a positive sum, got {split_weights!r}")
    return np.broadcast_to(w / w.sum(), l.shape)


def _hard_weights(S: np.ndarray) -> np.ndarray:
    top = S.max(axis=-1, keepdims=True)
    is_max = S >= top - 1e-12
    return is_max / is_max.sum(axis=-1, keepdims=True)


def repeated_split(
    Z: np.ndarray,
    in_score: np.ndarray,
    *,
    selector: str = "softmax",
    temperature: float = 0.1,
    split_weights: str | Sequence[float] = "eval_size",
    instability_threshold: float = 0.10,
    influence: bool = True,
) -> dict[str, np.ndarray]:
    """The repeated-split estimator (eq. 6) and its item contributions (eq. 24), batched.

    Parameters
    ----------
    Z : array (N, M, K) or (M, K)
        Scores in [0, 1]: N independent problems (trials, cells with equal K), M items,
        K artifacts.
    in_score : bool array (N, R, M), (R, M) or (1, R, M)
        Scoring-set membership; the held-out set is the complement.

    Returns
    -------
    dict with ``theta`` (N,), ``Y`` (N, R), ``q`` (N, R, K), ``pi_win`` (N,), ``hard`` (N,) bool
    (which selector the adaptive rule used), ``eff_k`` (N,) mean effective number of artifacts,
    and when ``influence``: ``psi_heldout`` and ``psi_selection`` (N, M).
    """
    single = Z.ndim == 2
    Z = np.asarray(Z, dtype=float)
    if single:
        Z = Z[None]
    D = np.asarray(in_score)
    if D.ndim == 2:
        D = D[None]
    D = D.astype(float)
    N, M, K = Z.shape
    m = D.sum(axis=-1)  # (N|1, R)
    l = M - m
    DZ = D @ Z  # (N, R, K)
    S = DZ / m[..., None]
    T = (Z.sum(axis=-2)[:, None, :] - DZ) / l[..., None]  # held-out part = complement of D
    omega = _split_weights(split_weights, np.broadcast_to(l, S.shape[:2]))  # (N, R)

    q_hard = _hard_weights(S)
    votes = q_hard.mean(axis=1)  # (N, K)
    pi_win = 1.0 - votes.max(axis=-1)
    if selector == "softmax":
        use_hard = np.zeros(N, dtype=bool)
    elif selector == "hard":
        use_hard = np.ones(N, dtype=bool)
    elif selector == "adaptive":
        use_hard = pi_win <= instability_threshold + 1e-12
    else:
        raise AssayInputError(f"selector must be one of {', '.join(SELECTORS)}, got {selector!r}")

    if selector != "hard":
        if not (temperature > 0 and np.isfinite(temperature)):
            raise AssayInputError(f"temperature must be a positive number, got {temperature!r}")
        x = S / temperature
        x = np.exp(x - x.max(axis=-1, keepdims=True))
        q_soft = x / x.sum(axis=-1, keepdims=True)
        q = np.where(use_hard[:, None, None], q_hard, q_soft)
    else:
        q = q_hard
    Y = (q * T).sum(axis=-1)  # (N, R)
    theta = (omega * Y).sum(axis=-1)
    out = {
        "theta": theta,
        "Y": Y,
        "q": q,
        "S": S,
        "T": T,
        "pi_win": pi_win,
        "hard": use_hard,
        "eff_k": (1.0 / (q**2).sum(axis=-1)).mean(axis=-1),
        "omega": omega,
    }
    if not influence:
        return out

    # Selection term: T' Dg(S) Gamma^S = c'(Z_i - S) with c = q (T - Y) / tau (softmax), 0 (hard).
    if selector != "hard":
        c = q_soft * (T - Y[..., None]) / temperature
        c = np.where(use_hard[:, None, None], 0.0, c)
    else:
        c = np.zeros_like(q)
    scale_E = omega * M / l  # (N, R)
    scale_D = omega * M / m
    # psi_E_i = sum_r sE_r 1{i in E_r} (Z_i'q_r - Y_r) = Z_i' (Et @ (sE q))_i - (Et @ (sE Y))_i, and
    # likewise for the selection term: BLAS products, no (N, M, R) temporaries.
    Dt = np.ascontiguousarray(np.swapaxes(D, -1, -2))  # (N|1, M, R)
    Et = 1.0 - Dt
    cS = (c * S).sum(axis=-1)  # (N, R)
    psi_E = np.einsum("nmk,nmk->nm", Z, Et @ (scale_E[..., None] * q)) - (Et @ (scale_E * Y)[..., None])[..., 0]
    psi_D = np.einsum("nmk,nmk->nm", Z, Dt @ (scale_D[..., None] * c)) - (Dt @ (scale_D * cS)[..., None])[..., 0]
    out["psi_heldout"] = psi_E
    out["psi_selection"] = psi_D
    return out


# --------------------------------------------------------------------------------------------
# Baselines
# --------------------------------------------------------------------------------------------


def baselines(Z: np.ndarray, in_score: np.ndarray, alpha: float = 0.05) -> dict[str, tuple[float, float, float]]:
    """The paper's reporting baselines for one cell: name -> (estimate, ci_low, ci_high).

    ``m1_naive_max`` has no interval (NaN); ``m2_wald`` is M1 with a Wald interval on the same
    items (sample variance, ddof 0: exactly p(1-p) for 0/1 scores); ``m3_single_split`` uses the
    first split of the design; ``m4_rsplit_t`` a Student-t interval (df = R - 1) on the split
    spread of the held-out means of the per-split argmax (NaN interval when R = 1);
    ``shortlist_mean`` the mean of all K artifacts with a Wald interval on item row means.
    """
    Z = np.asarray(Z, dtype=float)
    M, K = Z.shape
    z = _st.norm.ppf(1 - alpha / 2)
    col = Z.mean(axis=0)
    k1 = int(np.argmax(col))
    m1 = float(col[k1])
    se2 = float(Z[:, k1].std()) / math.sqrt(M)
    D = np.asarray(in_score, dtype=bool)
    E = ~D
    S = (D.astype(float) @ Z) / D.sum(axis=1, keepdims=True)
    T = (E.astype(float) @ Z) / E.sum(axis=1, keepdims=True)
    qh = _hard_weights(S)
    Y = (qh * T).sum(axis=1)
    held0 = Z[E[0]] @ qh[0]
    se3 = float(held0.std()) / math.sqrt(len(held0))
    R = len(Y)
    m4 = float(Y.mean())
    if R > 1:
        h4 = _st.t.ppf(1 - alpha / 2, R - 1) * float(Y.std(ddof=1)) / math.sqrt(R)
    else:
        h4 = float("nan")
    rows = Z.mean(axis=1)
    sm = float(rows.mean())
    se_sm = float(rows.std()) / math.sqrt(M)
    return {
        "m1_naive_max": (m1, float("nan"), float("nan")),
        "m2_wald": (m1, m1 - z * se2, m1 + z * se2),
        "m3_single_split": (float(Y[0]), float(Y[0]) - z * se3, float(Y[0]) + z * se3),
        "m4_rsplit_t": (m4, m4 - h4, m4 + h4),
        "shortlist_mean": (sm, sm - z * se_sm, sm + z * se_sm),
    }


def item_bootstrap(
    Z: np.ndarray,
    in_score: np.ndarray,
    n_boot: int,
    rng: np.random.Generator,
    *,
    alpha: float = 0.05,
    batch: int = 128,
    **core: Any,
) -> dict[str, Any]:
    """Nonparametric item bootstrap: resample items with replacement, rerun the whole pipeline.

    The split design is applied by position to each resample (the resampled rows are in random
    order, so this is a fresh random split of the resample). Replicates are computed in batches
    (vectorised, not a Python loop per replicate). Returns the replicate estimates and the
    percentile interval.
    """
    Z = np.asarray(Z, dtype=float)
    M = Z.shape[0]
    draws = np.empty(n_boot)
    for start in range(0, n_boot, batch):
        b = min(batch, n_boot - start)
        idx = rng.integers(0, M, size=(b, M))
        res = repeated_split(Z[idx], in_score, influence=False, **core)
        draws[start : start + b] = res["theta"]
    lo, hi = np.quantile(draws, [alpha / 2, 1 - alpha / 2])
    return {"draws": draws, "ci_low": float(lo), "ci_high": float(hi)}


# --------------------------------------------------------------------------------------------
# Contrasts
# --------------------------------------------------------------------------------------------


@dataclass
class Contrast:
    """A pre-specified linear contrast sum_c w_c theta_c over (system, budget) cells."""

    name: str
    weights: dict[tuple[str, float | str], float]
    kind: str = "custom"


_TERM = re.compile(r"^(?:(?P<coef>[-+]?\d*\.?\d+(?:[eE][-+]?\d+)?)\s*\*\s*)?(?P<cell>.+)$")


def _find_cell(ref: str, cells: Sequence[tuple[str, float | str]], expr: str) -> tuple[str, float | str]:
    if "@" not in ref:
        raise AssayInputError(
            f"contrast {expr!r}: term {ref!r} should be SYSTEM@BUDGET (e.g. 'gpt@1.5M - gpt@0')"
        )
    system, budget_text = ref.rsplit("@", 1)
    system = system.strip()
    budget = parse_budget(budget_text.strip())
    systems = list(dict.fromkeys(s for s, _ in cells))
    if system not in systems:
        raise AssayInputError(
            f"contrast {expr!r}: unknown system {system!r}; systems are: {', '.join(systems)}"
        )
    if (system, budget) not in cells:
        have = ", ".join(format_budget(b) for s, b in cells if s == system)
        raise AssayInputError(
            f"contrast {expr!r}: system {system!r} has no budget {budget_text.strip()!r}; its budgets are: {have}"
        )
    return system, budget


def parse_contrast(expr: str, cells: Sequence[tuple[str, float | str]]) -> Contrast:
    """Parse ``"[c*]SYSTEM@BUDGET (+|-) [c*]SYSTEM@BUDGET ..."``.

    Operators must have spaces around them, so system names may contain ``-``. Budgets accept
    suffixes (``500K``, ``1.5M``); the default is budget ``0``.
    """
    text = expr.strip()
    if not text:
        raise AssayInputError("empty contrast expression")
    sign = 1.0
    if text[0] in "+-" and not re.match(r"^[-+]\d", text):
        sign = -1.0 if text[0] == "-" else 1.0
        text = text[1:].strip()
    parts = re.split(r"\s+([+-])\s+", text)
    signs = [sign] + [(-1.0 if op == "-" else 1.0) for op in parts[1::2]]
    weights: dict[tuple[str, float | str], float] = {}
    for sgn, term in zip(signs, parts[0::2]):
        m = _TERM.match(term.strip())
        coef = float(m.group("coef")) if m and m.group("coef") else 1.0
        cell = _find_cell(m.group("cell").strip() if m else term, cells, expr)
        weights[cell] = weights.get(cell, 0.0) + sgn * coef
    if all(w == 0 for w in weights.values()):
        raise AssayInputError(f"contrast {expr!r} has all weights zero")
    return Contrast(name=expr.strip(), weights=weights)


def _label(cell: tuple[str, float | str]) -> str:
    return f"{cell[0]}@{format_budget(cell[1], compact=True)}"


def _is_default(budget: float | str) -> bool:
    return not isinstance(budget, str) and budget == 0


def contrast_family(kind: str, cells: Sequence[tuple[str, float | str]]) -> list[Contrast]:
    """Built-in families: tuned vs default, consecutive-budget gains, equal-budget system pairs."""
    systems = list(dict.fromkeys(s for s, _ in cells))
    out: list[Contrast] = []
    if kind == "tuned-vs-default":
        for s in systems:
            budgets = [b for t, b in cells if t == s]
            if not any(_is_default(b) for b in budgets):
                continue
            for b in budgets:
                if not _is_default(b):
                    a, d = (s, b), (s, 0.0)
                    out.append(Contrast(f"{_label(a)} - {_label(d)}", {a: 1.0, d: -1.0}, kind))
    elif kind == "budget-gains":
        for s in systems:
            budgets = [b for t, b in cells if t == s and not _is_default(b)]
            for b0, b1 in zip(budgets, budgets[1:]):
                a, c = (s, b1), (s, b0)
                out.append(Contrast(f"{_label(a)} - {_label(c)}", {a: 1.0, c: -1.0}, kind))
    elif kind == "pairwise":
        budgets = list(dict.fromkeys(b for _, b in cells))
        for b in budgets:
            have = [s for s in systems if (s, b) in cells]
            for i, s1 in enumerate(have):
                for s2 in have[i + 1 :]:
                    a, c = (s1, b), (s2, b)
                    out.append(Contrast(f"{_label(a)} - {_label(c)}", {a: 1.0, c: -1.0}, kind))
    else:
        raise AssayInputError(f"unknown contrast family {kind!r}; use one of {', '.join(CONTRAST_FAMILIES)}")
    return out


def _resolve_contrasts(spec: Iterable[Any], cells: Sequence[tuple[str, float | str]]) -> list[Contrast]:
    if isinstance(spec, (str, Contrast)):
        spec = [spec]
    out: list[Contrast] = []
    for item in spec:
        if isinstance(item, Contrast):
            for cell in item.weights:
                if cell not in cells:
                    raise AssayInputError(f"contrast {item.name!r} refers to unknown cell {cell!r}")
            out.append(item)
        elif isinstance(item, str) and item.strip() in CONTRAST_FAMILIES:
            fam = contrast_family(item.strip(), cells)
            if not fam:
                raise AssayInputError(
                    f"contrast family {item!r} is empty for this table (e.g. 'tuned-vs-default' needs "
                    "a budget-0 default cell and a tuned budget for the same system)"
                )
            out.extend(fam)
        elif isinstance(item, str):
            out.append(parse_contrast(item, cells))
        elif isinstance(item, Mapping):
            weights = {}
            for ref, w in item.items():
                cell = ref if isinstance(ref, tuple) else _find_cell(str(ref), cells, str(item))
                weights[(cell[0], parse_budget(cell[1]))] = float(w)
            c = Contrast(" + ".join(f"{w:g}*{_label(k)}" for k, w in weights.items()), weights)
            out.append(_resolve_contrasts([c], cells)[0])
        else:
            raise AssayInputError(f"cannot read contrast {item!r}: give an expression string, a family name or a dict")
    return out


# --------------------------------------------------------------------------------------------
# Result
# --------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------
# The public entry point
# --------------------------------------------------------------------------------------------


def _as_design(table: Any, columns, on_missing) -> SirenDesign:
    if isinstance(table, SirenDesign):
        return table
    if isinstance(table, pd.DataFrame):
        return siren_design(table, columns=columns, on_missing=on_missing)
    if isinstance(table, np.ndarray):
        table = {("system", 1.0): table}
    if isinstance(table, Mapping):
        scores, arts, cells = {}, {}, []
        M = None
        for key, Z in table.items():
            if isinstance(key, tuple) and len(key) != 2:
                raise AssayInputError(f"cell key {key!r}: use (system, budget) or a system name")
            system, budget = key if isinstance(key, tuple) else (key, 1.0)
            budget = parse_budget(budget)
            try:
                Z = np.asarray(Z, dtype=float)
            except (TypeError, ValueError) as exc:
                raise AssayInputError(f"cell {key!r}: scores must be numbers in [0, 1] ({exc})") from None
            if Z.ndim == 1:
                Z = Z[:, None]
            if Z.ndim != 2:
                raise AssayInputError(f"cell {key!r}: expected an items x artifacts array, got shape {Z.shape}")
            if M is None:
                M = Z.shape[0]
            if Z.shape[0] != M:
                raise AssayInputError(
                    f"ragged design: cell {key!r} has {Z.shape[0]} items, the first cell has {M}; every cell needs the same items"
                )
            if not np.all(np.isfinite(Z)):
                bad = np.argwhere(~np.isfinite(Z))[:3].tolist()
                raise AssayInputError(f"cell {key!r} has NaN/inf scores at (item, artifact) {bad}; scores must be in [0, 1]")
            if (Z < 0).any() or (Z > 1).any():
                bad = np.argwhere((Z < 0) | (Z > 1))[:3].tolist()
                raise AssayInputError(f"cell {key!r} has scores outside [0, 1] at (item, artifact) {bad}")
            cell = (str(system), budget)
            if cell in scores:
                raise AssayInputError(f"duplicate cell {cell!r}")
            scores[cell], arts[cell] = Z, [f"a{k}" for k in range(Z.shape[1])]
            cells.append(cell)
        if not cells:
            raise AssayInputError("no cells given")
        if M < 4:
            raise AssayInputError(f"only {M} items; SIREN needs at least 4")
        return SirenDesign(items=list(map(str, range(M))), cells=cells, scores=scores, artifacts=arts)
    raise AssayInputError(f"cannot evaluate a {type(table).__name__}: give a tidy DataFrame, a dict of arrays or an array")


def _is_real(x: Any) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_)) and math.isfinite(float(x))


#: temperatures below this are refused: no mean score resolves differences that fine, and the softmax's derivative
#: (1 / tau) overflows into infinite or NaN intervals
MIN_TEMPERATURE = 1e-8


def _selection_noise(Z: np.ndarray, m_score: int) -> float:
    """Standard deviation of the scoring-split difference between a cell's two best artifacts (by full mean):
    how much their selection scores move from split to split. A softmax temperature far below it makes the
    selection a hard switch driven by noise, where the linearised (delta-method) interval is unreliable."""
    if Z.shape[1] < 2 or m_score < 1:
        return 0.0
    top = np.argsort(-Z.mean(axis=0), kind="stable")[:2]
    d = Z[:, top[0]] - Z[:, top[1]]
    return float(d.std(ddof=1) / math.sqrt(m_score)) if Z.shape[0] > 1 else 0.0


def _check_params(reps, score_fraction, n_boot, alpha, temperature, selector, band, engine, threshold) -> None:
    for name, v in (("score_fraction", score_fraction), ("alpha", alpha), ("instability_threshold", threshold)):
        if not _is_real(v):
            raise AssayInputError(f"{name} must be a number, got {v!r}")
    if isinstance(reps, bool) or not isinstance(reps, (int, np.integer)) or reps < 1:
        raise AssayInputError(f"reps must be a positive integer, got {reps!r}")
    if not (0 < score_fraction < 1):
        raise AssayInputError(f"score_fraction must be in (0, 1), got {score_fraction!r}")
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 100:
        raise AssayInputError(f"n_boot must be an integer >= 100 (quantiles need draws), got {n_boot!r}")
    if not (0 < alpha < 1):
        raise AssayInputError(f"alpha must be in (0, 1) (0.05 gives 95% intervals), got {alpha!r}")
    if selector not in SELECTORS:
        raise AssayInputError(f"selector must be one of {', '.join(SELECTORS)}, got {selector!r}")
    if selector != "hard" and not (_is_real(temperature) and temperature > 0):
        raise AssayInputError(f"temperature must be a positive number on the score scale (e.g. 0.1), got {temperature!r}")
    if selector != "hard" and temperature < MIN_TEMPERATURE:
        raise AssayInputError(f"temperature {temperature!r} is below {MIN_TEMPERATURE:g}, far finer than any difference "
                              "between mean scores: the softmax is then an argmax whose derivative overflows. For "
                              "argmax selection use selector='hard' (or 'adaptive'); otherwise a temperature such as 0.1")
    if band not in ("studentized", "raw"):
        raise AssayInputError(f"band must be 'studentized' or 'raw', got {band!r}")
    if engine not in ("exact", "multipliers"):
        raise AssayInputError(f"engine must be 'exact' or 'multipliers', got {engine!r}")
    if not (0 <= threshold < 1):
        raise AssayInputError(f"instability_threshold must be in [0, 1), got {threshold!r}")


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
    band: str = "studentized",
    engine: str = "exact",
    instability_threshold: float = 0.10,
    item_bootstrap_draws: int = 0,
    include_baselines: bool = True,
) -> SirenResult:
    """Selection-aware estimates and intervals for every (system, budget) cell (SIREN, eq. 6, 24, 72).

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
        See the module docstring.
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
    """
    _check_params(reps, score_fraction, n_boot, alpha, temperature, selector, band, engine, instability_threshold)
    design = _as_design(table, columns, on_missing)
    M = design.n_items
    recorded_seed, ss = resolve_seed(seed)
    rng_split, rng_boot, rng_item = (np.random.default_rng(s) for s in ss.spawn(3))
    in_score = split_design(M, reps, score_fraction, rng_split)
    m, l = split_sizes(M, score_fraction)
    tau = float(temperature) if _is_real(temperature) else float("nan")  # unused by "hard"
    core = dict(selector=selector, temperature=tau, split_weights=split_weights,
                instability_threshold=instability_threshold)

    cells = design.cells
    C = len(cells)
    theta = np.empty(C)
    psi_E = np.empty((M, C))
    psi_D = np.empty((M, C))
    K_of = np.array([design.scores[c].shape[1] for c in cells])
    selector_used = np.empty(C, dtype=object)
    pi_win = np.zeros(C)
    eff_k = np.ones(C)
    naive_max = np.array([design.scores[c].mean(axis=0).max() for c in cells])

    # Cells with one artifact: no selection, the full-pool mean (see the module docstring).
    for j in np.flatnonzero(K_of == 1):
        z = design.scores[cells[j]][:, 0]
        theta[j] = z.mean()
        psi_E[:, j] = z - theta[j]
        psi_D[:, j] = 0.0
        selector_used[j] = "none"
    # Cells with K > 1, batched by K through the vectorised core (memory-bounded chunks).
    per = max(1, 4_000_000 // (M * max(int(K_of.max()), reps)))
    for K in sorted(set(K_of[K_of > 1].tolist())):
        idx = np.flatnonzero(K_of == K)
        for start in range(0, len(idx), per):
            js = idx[start : start + per]
            res = repeated_split(np.stack([design.scores[cells[j]] for j in js]), in_score, **core)
            theta[js] = res["theta"]
            psi_E[:, js] = res["psi_heldout"].T
            psi_D[:, js] = res["psi_selection"].T
            selector_used[js] = np.where(res["hard"], "hard", "softmax")
            pi_win[js] = res["pi_win"]
            eff_k[js] = res["eff_k"]

    warnings: list[str] = []
    for j in np.flatnonzero((selector_used == "hard") & (pi_win > instability_threshold)):
        warnings.append(
            f"{_label(cells[j])}: hard selection with winner instability pi_win = {pi_win[j]:.2f} > "
            f"{instability_threshold}: the interval ignores the winner jumping between splits and can "
            "undercover (use selector='softmax')."
        )
    base: dict[str, list[dict[str, Any]]] = {}
    if include_baselines or item_bootstrap_draws:
        for cell in cells:
            Z = design.scores[cell]
            if include_baselines:
                for name, (est, lo, hi) in baselines(Z, in_score, alpha).items():
                    base.setdefault(name, []).append(
                        {"system": cell[0], "budget": cell[1], "estimate": est, "ci_low": lo, "ci_high": hi}
                    )
            if item_bootstrap_draws:
                ib = item_bootstrap(Z, in_score, int(item_bootstrap_draws), rng_item, alpha=alpha, **core)
                base.setdefault("item_bootstrap", []).append(
                    {"system": cell[0], "budget": cell[1], "estimate": float(ib["draws"].mean()),
                     "ci_low": ib["ci_low"], "ci_high": ib["ci_high"]}
                )

    psi = boot.center(psi_E + psi_D)
    omega_hat = boot.covariance(psi)
    if not (np.isfinite(theta).all() and np.isfinite(omega_hat).all()):
        bad = [_label(cells[j]) for j in np.flatnonzero(~np.isfinite(theta) | ~np.isfinite(np.diag(omega_hat)))]
        raise AssayInputError(f"the estimate or its variance is not finite for {', '.join(bad[:3])}: at temperature "
                              f"{tau:g} the softmax's derivative overflows (near-tied artifacts); use a larger "
                              "temperature (e.g. 0.1) or selector='hard' / 'adaptive'")
    m_score, _ = split_sizes(M, score_fraction)
    for j, cell in enumerate(cells):
        Z = design.scores[cell]
        if np.ptp(Z) == 0 or np.diag(omega_hat)[j] <= 1e-24:
            # judged on the data (a constant cell with K > 1 leaves float residue ~1e-33 in the variance)
            warnings.append(
                f"{_label(cell)}: every item has the same score, so the interval has zero width; the "
                "normal approximation says nothing here (score more items or report an exact binomial bound)."
            )
        elif selector_used[j] == "softmax" and tau < 0.25 * _selection_noise(Z, m_score):
            warnings.append(
                f"{_label(cell)}: temperature {tau:g} is far below the split-to-split noise of the two best "
                f"artifacts' selection scores ({_selection_noise(Z, m_score):.3g}): the softmax acts as a hard switch "
                "driven by noise, and its linearised interval is unreliable (it can reach outside the scores' "
                "range). Use a temperature of at least that noise, or selector='hard' / 'adaptive'."
            )
    G = boot.draw(psi, n_boot, rng_boot, engine=engine)
    root = math.sqrt(M)
    sd = np.sqrt(np.clip(np.diag(omega_hat), 0.0, None))
    half = boot.pointwise_critical(G, alpha) / root
    for j in np.flatnonzero((theta - half < -1e-9) | (theta + half > 1 + 1e-9)):
        warnings.append(f"{_label(cells[j])}: the interval [{theta[j] - half[j]:.3f}, {theta[j] + half[j]:.3f}] reaches "
                        "outside the scores' range [0, 1]; the normal approximation is strained for this cell")
    scale = sd if band == "studentized" else np.ones(C)
    crit = boot.simultaneous_critical(G, alpha, scale=scale)
    band_half = crit * scale / root
    cells_cols = (
        {
            "system": [c[0] for c in cells],
            "budget": [c[1] for c in cells],
            "K": K_of,
            "selector": selector_used,
            "estimate": theta,
            "ci_low": theta - half,
            "ci_high": theta + half,
            "band_low": theta - band_half,
            "band_high": theta + band_half,
            "se": sd / root,
            "se_heldout": np.linalg.norm(boot.center(psi_E), axis=0) / M,
            "se_selection": np.linalg.norm(boot.center(psi_D), axis=0) / M,
            "pi_win": pi_win,
            "eff_artifacts": eff_k,
            "naive_max": naive_max,
            "optimism": naive_max - theta,
        }
    )

    contrast_list = _resolve_contrasts(contrasts, cells)
    if contrast_list:
        index = {c: j for j, c in enumerate(cells)}
        W = np.zeros((len(contrast_list), C))
        for i, con in enumerate(contrast_list):
            for cell, w in con.weights.items():
                W[i, index[cell]] += w
        ci = boot.contrast_inference(theta, W, G, omega_hat, M, alpha)
        est = ci["estimate"]
        con_df = {
            "contrast": [c.name for c in contrast_list],
            "kind": [c.kind for c in contrast_list],
            "estimate": est,
            "se": ci["se"],
            "ci_low": est - ci["half"],
            "ci_high": est + ci["half"],
            "simultaneous_low": est - ci["half_simultaneous"],
            "simultaneous_high": est + ci["half_simultaneous"],
        }
        # one verdict per interval: the pointwise one answers a single contrast chosen in advance; a reader who
        # scans several contrasts for a finding must use the simultaneous one (it holds for all at once)
        for kind, lo, hi in (("pointwise", "ci_low", "ci_high"), ("simultaneous", "simultaneous_low", "simultaneous_high")):
            con_df[f"verdict_{kind}"] = np.where(con_df[lo] > 0, "positive",
                                                 np.where(con_df[hi] < 0, "negative", "inconclusive"))
        contrast_info = {"critical_simultaneous": float(ci["critical_simultaneous"])}
    else:
        con_df = None
        contrast_info = {}

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
        "design": {"items": M, "score_size": m, "heldout_size": l, "cells": C,
                   "dropped_items": len(design.dropped_items)},
        "band": {"type": band, "critical": crit, "level": 1 - alpha},
        "contrast_band": contrast_info,
        "baselines": base,
        "warnings": warnings,
    }
    level = {
        "alpha": float(alpha),
        "meaning": (
            f"each [ci_low, ci_high] covers its cell's procedure-level score with probability "
            f"about {1 - alpha:.0%} (asymptotic, given the frozen shortlist); [band_low, band_high] "
            f"cover every cell at once with probability about {1 - alpha:.0%}"
        ),
        "n_meaning": "evaluation items shared by every cell",
    }
    return SirenResult(params=params, level=level, n=M, seed=recorded_seed,
                       tables={"cells": cells_cols} if con_df is None else {"cells": cells_cols, "contrasts": con_df},
                       info=info)
