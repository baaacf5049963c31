"""R-AutoEval+: certify that a model's risk is below a target with few human labels and many
LLM-judge labels, with a finite-sample guarantee.

Paper: Park, Zecchin, Simeone, "Adaptive Prediction-Powered AutoEval with Reliability and
Efficiency Guarantees" (``papers/r-autoeval-plus.txt``), Sections 2-4, Appendices B, C, E.

For each candidate model: n labelled examples with the human loss l_i and the judge's loss
l~_i on the same example, and N unlabelled examples with the judge's loss only. Each labelled
example is paired with r = floor(N / n) unlabelled ones (its own block, in processing order; the
N - r n left over are not used and are reported). With a reliance factor rho (eq. 10),

    q_{rho,i} = rho * mean(judge losses of block i) + l_i - rho * l~_i   in [-rho, 1 + rho],

an unbiased estimate of the risk R for every rho. R-Eval uses rho = 0 (human labels only),
R-AutoEval rho = 1 (PPI), and R-AutoEval+ a grid 0 = rho_1 < ... < rho_S = 1 (S = 10) whose
e-processes are mixed by exponential weights (eq. 11-13). The null "R > risk_target" is rejected,
and the candidate certified, when the mixture wealth reaches 1/delta at some step (Ville, eq. 19):
P(certify | R > risk_target) <= delta, whatever the judge's quality. The mixture's sample
complexity is at most the best rho's (Theorem 3), so a useless judge costs at most a factor
log S in evidence compared with human labels alone.

Model selection with family-wise error <= delta: fixed-sequence testing in a given order (each
test at delta, stop at the first failure), Bonferroni (each at delta / K), or Holm (step-down on
the anytime p-values p = min(1, 1 / max_i E_i), bets tuned at delta / K). The certified candidate
with the lowest user-given cost is reported as the best; when nothing is certified the result
says so (the paper's released code silently fell back to the largest model).

The data order is arbitrary but matters for a sequential test: by default a seeded random
permutation of the items (shared by all candidates), recorded in the result for auditing.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from .data import check_scores, map_columns
from .errors import AssayInputError, describe_rows
from .seeds import resolve_seed
from .results import Result
from .stats import betting as bt

__all__ = ["certify", "AutoEvalResult", "effective_observations", "METHODS", "reliance_factors"]

METHODS = ("r-eval", "r-autoeval", "r-autoeval+")
SELECTIONS = ("fst", "bonferroni", "holm")
COLUMNS = ("candidate", "item", "loss_human", "loss_judge")


def reliance_factors(method: str, factors: int = 10) -> np.ndarray:
    """rho grid: [0] (R-Eval), [1] (R-AutoEval), linspace(0, 1, S) (R-AutoEval+, eq. 9)."""
    if method == "r-eval":
        return np.array([0.0])
    if method == "r-autoeval":
        return np.array([1.0])
    if method == "r-autoeval+":
        if isinstance(factors, bool) or not isinstance(factors, (int, np.integer)) or factors < 2:
            raise AssayInputError(f"factors must be an integer >= 2 (it includes rho = 0 and 1), got {factors!r}")
        return np.linspace(0.0, 1.0, int(factors))
    raise AssayInputError(f"method must be one of {', '.join(METHODS)}, got {method!r}")


def effective_observations(
    human: np.ndarray, judge_labelled: np.ndarray, judge_unlabelled: np.ndarray, rhos: np.ndarray
) -> tuple[np.ndarray, int, int]:
    """q_{s,i} (eq. 10) for every rho_s: array (S, n); also r and the number of unused unlabelled."""
    n = len(human)
    N = len(judge_unlabelled)
    r = N // n if n else 0
    if r > 0:
        block = judge_unlabelled[: r * n].reshape(n, r).mean(axis=1)
    else:
        block = np.zeros(n)
    rhos = np.asarray(rhos, dtype=float)[:, None]
    q = rhos * block[None, :] + human[None, :] - rhos * judge_labelled[None, :]
    return q, r, N - r * n


class AutoEvalResult(Result):
    """Per-candidate certificates (table ``candidates``), e-value paths and the selection."""

    method = "autoeval"
    main_table = "candidates"

    @property
    def candidates(self) -> pd.DataFrame:
        return self.tables["candidates"]

    @property
    def certified(self) -> list[str]:
        t = self.candidates
        return [str(c) for c in t.loc[t["certified"].astype(bool), "candidate"]]

    @property
    def best(self) -> str | None:
        return self.info.get("selection", {}).get("best")

    def path(self, candidate: str) -> np.ndarray:
        """The e-value path E_1..E_n of one candidate."""
        return np.exp(np.asarray(self.info["paths"][candidate]["log_e"], dtype=float))

    def _restore(self) -> None:
        return None

    def summary(self) -> str:
        p = self.params
        sel = self.info.get("selection", {})
        lines = [
            f"{p.get('method')} ({p.get('betting')}) (assay {self.version}): risk target {p.get('risk_target')}, "
            f"delta {self.level.get('delta')}, seed {self.seed}",
            self.candidates.to_string(index=False, float_format=lambda x: f"{x:.4f}"),
        ]
        if sel:
            if sel.get("best") is None:
                lines.append(f"selection ({sel.get('procedure')}): no candidate is certified")
            else:
                lines.append(f"selection ({sel.get('procedure')}): best = {sel['best']} among {len(sel['certified'])} certified")
        return "\n".join(lines)


def _candidate_attribute(df: pd.DataFrame, col: str) -> pd.Series:
    per = df.groupby("candidate", sort=False)[col].nunique(dropna=False)
    bad = per[per > 1]
    if len(bad):
        raise AssayInputError(
            f"column {col!r} must have one value per candidate, but candidate {bad.index[0]!r} has {int(bad.iloc[0])}"
        )
    return df.groupby("candidate", sort=False)[col].first()


def _check_level(name: str, v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not (0 < float(v) < 1):
        raise AssayInputError(f"{name} must be a number strictly between 0 and 1, got {v!r}")
    return float(v)


def certify(
    table: pd.DataFrame,
    *,
    risk_target: float,
    delta: float = 0.1,
    method: str = "r-autoeval+",
    betting: str = "wsr",
    factors: int = 10,
    seed: int | np.random.Generator | None = None,
    select: str | None = None,
    order: Sequence[str] | None = None,
    order_by: str | None = None,
    ascending: bool = False,
    cost_col: str | None = None,
    interval: bool = False,
    shuffle: bool = True,
    grid: int = 10_000,
    bounds: bool = True,
    columns: Mapping[str, str] | None = None,
) -> AutoEvalResult:
    """Certify R = E[loss] < ``risk_target`` per candidate (R-Eval / R-AutoEval / R-AutoEval+).

    Parameters
    ----------
    table : DataFrame
        Columns ``candidate, item, loss_human, loss_judge``: one row per (candidate, example);
        ``loss_human`` is NaN on unlabelled rows; ``loss_judge`` must be present on every row. Losses
        in [0, 1]. Rename yours with ``columns``.
    risk_target : float
        The alpha of the paper: the risk level to certify (0 < alpha < 1).
    delta : float, default 0.1
        Error probability: P(certify a candidate whose risk exceeds the target) <= delta (with
        ``select``: the family-wise error over all candidates).
    method : {"r-eval", "r-autoeval", "r-autoeval+"}
    betting : {"wsr", "up"}
        Waudby-Smith-Ramdas bets (eq. 21, horizon n, c = 3/4) or the universal portfolio (eq. 20) on a
        ``grid``-point bet grid.
    factors : int, default 10
        S, the number of reliance factors of R-AutoEval+ (uniform initial weights).
    select : {"fst", "bonferroni", "holm"} or None
        Family-wise-error procedure over the candidates.
    order, order_by, ascending
        Order for fixed-sequence testing: an explicit list of candidates, or a per-candidate column
        sorted descending (e.g. bit-width) unless ``ascending``.
    cost_col : str, optional
        Per-candidate cost (memory, prompt length, tokens): with ``select``, the certified candidate with the
        lowest cost is reported as ``best``. Without ``select`` there is no ``best`` (each candidate was tested on
        its own at delta, which does not license picking one); ``info["selection"]["note"]`` says so.
    interval : bool
        Also a two-sided (1 - delta) interval for each candidate's risk (hedged capital process).
    shuffle : bool, default True
        Process items in a seeded random order of the item ids, shared by all candidates
        (recorded in ``info["order"]``); False processes each candidate's rows in table order.
    grid : int, default 10,000
        Bet grid of the universal portfolio. Bounds (``risk_upper``, intervals) with UP use at most
        2,000 grid points: each bound needs ~20 passes over the data, and any grid gives a valid
        bound (only its tightness changes).
    bounds : bool, default True
        Compute ``risk_upper`` (skip it in large simulation studies).
    """
    risk_target = _check_level("risk_target", risk_target)
    delta = _check_level("delta", delta)
    if betting not in ("wsr", "up"):
        raise AssayInputError(f"betting must be 'wsr' or 'up', got {betting!r}")
    if select is not None and select not in SELECTIONS:
        raise AssayInputError(f"select must be one of {', '.join(SELECTIONS)} or None, got {select!r}")
    if isinstance(grid, bool) or not isinstance(grid, (int, np.integer)) or grid < 10:
        raise AssayInputError(f"grid must be an integer >= 10, got {grid!r}")
    rhos = reliance_factors(method, factors)
    uses_judge = bool(rhos.max() > 0)

    mapping = {c: None for c in COLUMNS}
    mapping.update(columns or {})
    df = map_columns(table, mapping, required=("candidate", "item", "loss_human") + (("loss_judge",) if uses_judge else ()))
    if df.empty:
        raise AssayInputError("the table is empty: nothing to certify")
    df = df.copy()
    for c in ("candidate", "item"):
        if df[c].isna().any():
            raise AssayInputError(f"column {c!r} is empty at {describe_rows(df.index[df[c].isna()])}")
        df[c] = df[c].astype(str)
    if df.duplicated(["candidate", "item"]).any():
        rows = df.index[df.duplicated(["candidate", "item"], keep=False)]
        raise AssayInputError(f"duplicate (candidate, item) rows at {describe_rows(rows)}; each example once per candidate")
    df["loss_human"] = check_scores(df, "loss_human", allow_missing=True, what="loss")
    if "loss_judge" in df.columns:
        df["loss_judge"] = check_scores(
            df, "loss_judge", allow_missing=not uses_judge, what="loss",
            missing_hint="every row needs the judge's loss (labelled rows for the bias correction, unlabelled "
                         "rows as the judge's evidence); fill it or remove those rows",
        )
    elif uses_judge:
        raise AssayInputError("method uses judge labels but the table has no loss_judge column")

    candidates = list(pd.unique(df["candidate"]))
    recorded_seed, ss = resolve_seed(seed)
    rng = np.random.default_rng(ss)

    # FWER procedure: per-candidate test levels and processing order
    K = len(candidates)
    if select == "fst":
        if order is not None:
            missing = [c for c in order if c not in candidates]
            if missing:
                raise AssayInputError(f"order names unknown candidates: {', '.join(map(str, missing[:5]))}")
            seq = [str(c) for c in order]
        elif order_by is not None:
            if order_by not in df.columns:
                raise AssayInputError(f"order_by column {order_by!r} is not in the table; columns: {', '.join(df.columns)}")
            key = _candidate_attribute(df, order_by)
            seq = list(key.sort_values(ascending=ascending, kind="stable").index)
        else:
            raise AssayInputError("fixed-sequence testing needs an order: give order=[...] or order_by=COLUMN")
        levels = {c: delta for c in candidates}
    elif select in ("bonferroni", "holm"):
        seq = candidates
        levels = {c: delta / K for c in candidates}
    else:
        seq = candidates
        levels = {c: delta for c in candidates}
    if cost_col and cost_col not in df.columns:
        raise AssayInputError(f"cost column {cost_col!r} is not in the table; columns: {', '.join(map(str, df.columns))}")
    costs = _candidate_attribute(df, cost_col) if cost_col else None

    # Processing order: a seeded permutation of the item ids, shared by all candidates (so the
    # same example is at the same step for every candidate), or each candidate's own table order.
    if shuffle:
        items = pd.unique(df["item"])
        rank = pd.Series(np.arange(len(items)), index=items[rng.permutation(len(items))])
        df["_rank"] = df["item"].map(rank).to_numpy()
    else:
        df["_rank"] = np.arange(len(df))

    rows: list[dict[str, Any]] = []
    paths: dict[str, Any] = {}
    orders: dict[str, Any] = {}
    groups = dict(tuple(df.sort_values("_rank", kind="stable").groupby("candidate", sort=False)))
    for cand in candidates:
        g = groups[cand]
        lab = g[g["loss_human"].notna()]
        unl = g[g["loss_human"].isna()]
        n, N = len(lab), len(unl)
        if n == 0:
            raise AssayInputError(f"candidate {cand!r} has no labelled rows (loss_human is NaN everywhere)")
        if uses_judge:
            if lab["loss_judge"].isna().any():
                raise AssayInputError(
                    f"candidate {cand!r}: judge loss missing on labelled rows {describe_rows(lab.index[lab['loss_judge'].isna()])}; "
                    "the bias correction needs both losses on every labelled example"
                )
            if N < n:
                raise AssayInputError(
                    f"candidate {cand!r} has {N} unlabelled rows for {n} labelled ones; {method} pairs each "
                    "labelled example with r = floor(N/n) >= 1 judge-labelled ones. Add unlabelled rows or use method='r-eval'."
                )
        human = lab["loss_human"].to_numpy()
        jl = lab["loss_judge"].to_numpy() if uses_judge else np.zeros(n)
        ju = unl["loss_judge"].to_numpy() if uses_judge else np.zeros(0)
        q, r, unused = effective_observations(human, jl, ju, rhos)
        lo, hi = -rhos, 1.0 + rhos
        lvl = levels[cand]
        log_e_s = bt.e_process(q, risk_target, lo=lo, hi=hi, betting=betting, delta=lvl, horizon=n, grid=grid)
        log_e = bt.mixture_log_wealth(log_e_s)
        _, first = bt.ville(log_e[None, :], lvl)
        p_value = float(min(1.0, math.exp(-log_e.max())))
        passed = _passes(p_value, lvl)
        weights_end = np.exp(log_e_s[:, -1] - log_e_s[:, -1].max())
        weights_end /= weights_end.sum()
        bgrid = min(grid, 2000)
        ucb = bt.upper_bound(q, lo, hi, delta=lvl, betting=betting, horizon=n, grid=bgrid, tol=1e-5) if bounds else float("nan")
        row = {
            "candidate": cand,
            "n": n,
            "N": N,
            "r": r,
            "unused_unlabelled": unused,
            "certified": passed,
            "certified_at": float(first[0] + 1) if (passed and first[0] >= 0) else float("nan"),
            "p_value": p_value,
            "e_value_max": float(np.exp(min(log_e.max(), 700.0))),
            "e_value_final": float(np.exp(min(log_e[-1], 700.0))),
            "risk_upper": ucb,
            "test_level": lvl,
            "mean_human": float(human.mean()),
            "mean_judge": float(unl["loss_judge"].mean()) if (N and "loss_judge" in unl) else float("nan"),
            "rho_weighted": float(weights_end @ rhos),
        }
        if interval:
            lo_ci, hi_ci = bt.hedged_interval(q, lo, hi, delta=lvl, betting=betting, horizon=n, grid=bgrid, tol=1e-5)
            row["ci_low"], row["ci_high"] = lo_ci, hi_ci
        if costs is not None:
            row["cost"] = costs[cand]
        rows.append(row)
        paths[cand] = {"log_e": log_e.tolist(), "weights": weights_end.tolist()}
        orders[cand] = {"labelled": lab["item"].tolist(), "unlabelled": unl["item"].tolist()}

    table_out = pd.DataFrame(rows)
    selection: dict[str, Any] = {}
    if select is not None:
        cert = _select(table_out.set_index("candidate"), select, seq, delta)
        table_out["certified"] = table_out["candidate"].isin(cert)
        selection = {"procedure": select, "order": seq, "certified": cert}
        if cert:
            if costs is not None:
                sub = table_out[table_out["candidate"].isin(cert)]
                best = str(sub.sort_values(["cost"], kind="stable").iloc[0]["candidate"])
            else:
                best = cert[-1] if select == "fst" else cert[0]
            selection["best"] = best
        else:
            selection["best"] = None
            selection["note"] = "no candidate is certified at this delta; nothing can be deployed with the guarantee"
    elif costs is not None:
        # a "best" picked among candidates each tested at delta on its own is not covered by any guarantee: with
        # K candidates at the target, SOME candidate is certified far more often than delta (24% for K = 5 at
        # delta = 0.1 in the Monte Carlo test). Only a family-wise procedure licenses a pick.
        cert = table_out.loc[table_out["certified"], "candidate"].tolist()
        selection = {"procedure": None, "certified": cert, "best": None,
                     "note": ("no best candidate without a family-wise procedure: each candidate was tested at "
                              f"delta = {delta:g} on its own, so choosing the cheapest certified one carries no "
                              "guarantee (the chance that some candidate at the target is certified grows with "
                              "the number of candidates); use select='holm', 'bonferroni' or 'fst'")}

    params = {
        "risk_target": risk_target,
        "method": method,
        "betting": betting,
        "factors": int(len(rhos)),
        "rhos": rhos.tolist(),
        "select": select,
        "order_by": order_by,
        "ascending": ascending,
        "cost_col": cost_col,
        "interval": interval,
        "shuffle": shuffle,
        "grid": int(grid) if betting == "up" else None,
        "wsr": {"c": bt.C_WSR, "mu0": bt.MU0, "var0": bt.VAR0, "horizon": "n (labelled examples)"} if betting == "wsr" else None,
    }
    level = {
        "delta": delta,
        "meaning": (
            f"P(a candidate whose risk exceeds {risk_target:g} is certified) <= {delta:g}"
            + (" jointly over all candidates (family-wise)" if select else " for each candidate")
            + "; risk_upper is a (1 - test_level) upper confidence bound on the risk"
        ),
        "n_meaning": "labelled examples of the first candidate",
    }
    info = {"selection": selection, "paths": paths, "order": orders}
    return AutoEvalResult(params=params, level=level, n=int(table_out["n"].iloc[0]), seed=recorded_seed,
                          tables={"candidates": table_out}, info=info)


def _passes(p: float, level: float) -> bool:
    """p <= level, with a relative slack of 1e-9 so that E = 1/delta exactly (up to rounding) passes,
    the same rule for single tests and for the selection procedures."""
    return bool(p <= level * (1.0 + 1e-9))


def _select(t: pd.DataFrame, procedure: str, seq: Sequence[str], delta: float) -> list[str]:
    """Candidates certified by the FWER procedure, from each candidate's anytime p-value."""
    p = t["p_value"]
    K = len(t)
    if procedure == "fst":
        out = []
        for c in seq:
            if _passes(p[c], delta):
                out.append(c)
            else:
                break
        return out
    if procedure == "bonferroni":
        return [c for c in seq if _passes(p[c], delta / K)]
    # Holm step-down
    out = []
    for k, c in enumerate(p.sort_values(kind="stable").index):
        if _passes(p[c], delta / (K - k)):
            out.append(c)
        else:
            break
    return [c for c in seq if c in out]
