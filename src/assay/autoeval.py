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
R-AutoEval rho = 1 (PPI, eq. 8), and R-AutoEval+ a grid 0 = rho_1 < ... < rho_S = 1 (eq. 9, S = 10)
whose e-processes (eq. 12) are mixed by exponential weights (eq. 11, 13). The null "R > risk_target"
is rejected, and the candidate certified, when the mixture wealth reaches 1/delta at some step
(Ville, eq. 19): P(certify | R > risk_target) <= delta, whatever the judge's quality. The mixture's
sample complexity is at most the best rho's (Theorem 3, eq. 18), so a useless judge costs at most
log S in evidence compared with human labels alone.

Model selection with family-wise error <= delta (:mod:`assay.stats.multiple`): fixed-sequence testing
in a given order (each test at delta, stop at the first failure), Bonferroni (each at delta / K), or
Holm (step-down on the anytime p-values p = min(1, 1 / max_i E_i), bets tuned at delta / K). The
certified candidate with the lowest user-given cost is reported as the best; when nothing is certified
the result says so (the paper's released code silently fell back to the largest model).

The data order is arbitrary but matters for a sequential test: by default a seeded random
permutation of the items (shared by all candidates), recorded in the result for auditing.

Layers
------
* :func:`assay.data.autoeval.prepare`: the long table -> per-candidate arrays in processing order;
* :func:`core`: one candidate's test on numpy arrays (no pandas), in the paper's notation, built from
  :func:`effective_observations` (eq. 10) and :func:`mixture_e_process` (eq. 11-13);
* :func:`certify`: check the parameters, resolve the seed, prepare, run the core per candidate, apply
  the family-wise procedure, and package the :class:`AutoEvalResult` with :func:`assay.results.build`.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, NamedTuple, Sequence

import numpy as np
import pandas as pd

from . import checks
from .data.autoeval import AUTOEVAL_COLUMNS, prepare
from .errors import AssayInputError
from .results import Result, Statement, build, fmt
from .seeds import resolve_seed
from .stats import betting as bt
from .stats import multiple

__all__ = ["certify", "core", "Certificate", "AutoEvalResult", "effective_observations", "mixture_e_process",
           "reliance_factors", "METHODS", "SELECTIONS", "COLUMNS"]

METHODS = ("r-eval", "r-autoeval", "r-autoeval+")
SELECTIONS = ("fst", "bonferroni", "holm")
COLUMNS = AUTOEVAL_COLUMNS


def reliance_factors(method: str, factors: int = 10) -> np.ndarray:
    """The reliance factors rho_s of a method.

    [0] (R-Eval), [1] (R-AutoEval), linspace(0, 1, S) (R-AutoEval+, eq. 9, S = ``factors`` >= 2).

    Parameters
    ----------
    method : {"r-eval", "r-autoeval", "r-autoeval+"}
        The estimation method.
    factors : int, default 10
        S, the number of reliance factors of R-AutoEval+ (at least 2: it includes rho = 0 and 1); ignored by the
        other methods.

    Returns
    -------
    ndarray (S,)
        The reliance factors rho_s, in [0, 1].

    Raises
    ------
    AssayInputError
        If ``method`` is unknown, or for R-AutoEval+ if ``factors`` is not an integer >= 2.

    Examples
    --------
    >>> reliance_factors("r-autoeval+", 5).tolist()
    [0.0, 0.25, 0.5, 0.75, 1.0]
    >>> reliance_factors("r-eval").tolist()
    [0.0]
    """
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
    """Effective observations q_{s,i} = l^f_{s,i} (eq. 10; eq. 8 at rho = 1) for every rho_s.

    Labelled example i is paired with the i-th block of r = floor(N / n) unlabelled judge losses:
    q_{s,i} = rho_s * (mean of block i) + human_i - rho_s * judge_labelled_i.

    Parameters
    ----------
    human : ndarray (n,)
        Human (ground-truth) losses of the n labelled examples.
    judge_labelled : ndarray (n,)
        The judge's losses on the same n labelled examples.
    judge_unlabelled : ndarray (N,)
        The judge's losses on the N unlabelled examples.
    rhos : ndarray (S,)
        The S values rho_s of the judge's weight (rho = 0: human labels only; rho = 1: eq. 8).

    Returns
    -------
    q : ndarray (S, n)
        q_{s,i} in [-rho_s, 1 + rho_s], unbiased for the risk.
    r : int
        Unlabelled examples per labelled one.
    unused : int
        N - r n unlabelled examples left over.

    Examples
    --------
    >>> import numpy as np
    >>> q, r, unused = effective_observations(np.array([1., 0., 1.]), np.array([1., 1., 0.]),
    ...                                       np.array([1., 0., 1., 1., 0., 0., 1.]), np.array([0., 0.5, 1.]))
    >>> q.round(4).tolist(), r, unused
    ([[1.0, 0.0, 1.0], [0.75, 0.0, 1.0], [0.5, 0.0, 1.0]], 2, 1)
    """
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


def mixture_e_process(
    q: np.ndarray,
    rhos: np.ndarray,
    *,
    risk_target: float,
    delta: float,
    betting: str = "wsr",
    horizon: int | None = None,
    grid: int = 10_000,
) -> tuple[np.ndarray, np.ndarray]:
    """The e-processes of the test of H0: R > ``risk_target``, per reliance factor and mixed.

    Parameters
    ----------
    q : ndarray (..., S, n)
        Effective observations (:func:`effective_observations`); row s lies in [-rho_s, 1 + rho_s].
    rhos : ndarray (S,)
        The reliance factors.
    risk_target : float
        alpha of the paper.
    delta : float
        Level the WSR bets are tuned to (eq. 21: log(1/delta)); UP bets do not depend on it.
    betting : {"wsr", "up"}
        Waudby-Smith-Ramdas bets (eq. 21-22, c = 3/4) or the universal portfolio (eq. 20) on ``grid`` points.
    horizon : int, optional
        n of eq. 21 (the fixed-n schedule); None uses the anytime schedule i log(i + 1).

    Returns
    -------
    log_e_s : ndarray (..., S, n)
        log E_{s,i}, the wealth of each factor alone (eq. 12).
    log_e : ndarray (..., n)
        log E_i of R-AutoEval+ (eq. 11 with the weights of eq. 13 and w_{s,0} = 1/S), which equals
        log sum_s w_{s,0} E_{s,i}.
    """
    rhos = np.asarray(rhos, dtype=float)
    log_e_s = bt.e_process(q, risk_target, lo=-rhos, hi=1.0 + rhos, betting=betting, delta=delta, horizon=horizon,
                           grid=grid)
    return log_e_s, bt.mixture_log_wealth(log_e_s)


class Certificate(NamedTuple):
    """One candidate's R-AutoEval+ test (:func:`core`)."""

    rhos: np.ndarray  #: (S,) reliance factors rho_s (eq. 9)
    r: int  #: unlabelled examples per labelled one, floor(N / n)
    unused_unlabelled: int  #: N - r n unlabelled examples not used
    log_e_s: np.ndarray  #: (S, n) log E_{s,i}, each factor's e-process (eq. 12)
    log_e: np.ndarray  #: (n,) log E_i, the mixture e-process (eq. 11, 13)
    weights: np.ndarray  #: (S,) weights w_{s,n+1} over rho after the last example (eq. 13)
    rho_weighted: float  #: sum_s w_{s,n+1} rho_s: how much the test relies on the judge at the end
    p_value: float  #: anytime p-value min(1, 1 / max_i E_i)
    certified: bool  #: H0: R > risk_target rejected (eq. 19): p_value <= delta
    certified_at: float  #: first i (1-based) with E_i >= 1/delta; NaN when not certified
    risk_upper: float  #: (1 - delta) upper confidence bound on R (NaN when bounds=False)
    ci_low: float  #: two-sided (1 - delta) interval for R, lower end (NaN unless interval=True)
    ci_high: float  #: upper end of that interval


def _check_betting(betting: Any, grid: Any) -> None:
    if betting not in ("wsr", "up"):
        raise AssayInputError(f"betting must be 'wsr' or 'up', got {betting!r}")
    if isinstance(grid, bool) or not isinstance(grid, (int, np.integer)) or grid < 10:
        raise AssayInputError(f"grid must be an integer >= 10, got {grid!r}")


def _losses(name: str, v: Any, size: int | None = None) -> np.ndarray:
    arr = np.asarray(v, dtype=float)
    if arr.ndim != 1:
        raise AssayInputError(f"{name} must be a one-dimensional array of losses, got shape {arr.shape}")
    if size is not None and arr.size != size:
        raise AssayInputError(f"{name} has {arr.size} values, but loss_human has {size}")
    if not np.isfinite(arr).all() or (arr < 0).any() or (arr > 1).any():
        raise AssayInputError(f"{name} must hold losses in [0, 1] (no NaN)")
    return arr


def core(
    loss_human: np.ndarray,
    judge_labelled: np.ndarray | None = None,
    judge_unlabelled: np.ndarray | None = None,
    *,
    risk_target: float,
    delta: float = 0.1,
    method: str = "r-autoeval+",
    factors: int = 10,
    betting: str = "wsr",
    grid: int = 10_000,
    bounds: bool = True,
    interval: bool = False,
) -> Certificate:
    """R-Eval / R-AutoEval / R-AutoEval+ for one candidate on arrays (Algorithm 1 of the paper).

    The examples are processed in the order given (:func:`certify` shuffles them first).

    1. effective observations q_{s,i} for each reliance factor rho_s (eq. 10, 9);
    2. each factor's e-process E_{s,i} = prod_{j<=i} (1 - lambda_{s,j} (q_{s,j} - alpha)) (eq. 12) with WSR
       (eq. 21-22, horizon n) or UP (eq. 20) bets;
    3. the mixture E_i with exponential weights w_{s,i} proportional to w_{s,0} E_{s,i-1} (eq. 11, 13);
    4. Ville's test max_i E_i >= 1/delta (eq. 19), i.e. the anytime p-value min(1, 1 / max_i E_i) <= delta,
       with P(certified | R > alpha) <= delta (eq. 2);
    5. optionally the (1 - delta) upper confidence bound on R (the smallest target the test rejects, bets
       free of the target: cap 1/(hi - lo), App. E.5) and a two-sided interval (hedged capital process).

    Parameters
    ----------
    loss_human : array (n,)
        Human losses l_i of the labelled examples, in [0, 1].
    judge_labelled : array (n,), optional
        Judge losses l~_i on the same examples. Not needed (ignored) for ``method="r-eval"``.
    judge_unlabelled : array (N,), optional
        Judge losses of the unlabelled examples, N >= n. Not needed (ignored) for ``method="r-eval"``.
    risk_target : float
        alpha of the paper, strictly between 0 and 1.
    delta : float, default 0.1
        Error level of the test (and of the bounds).
    method : {"r-eval", "r-autoeval", "r-autoeval+"}
    factors : int, default 10
        S, the number of reliance factors of R-AutoEval+ (uniform initial weights).
    betting : {"wsr", "up"}
    grid : int, default 10,000
        Bet grid of the universal portfolio; bounds use at most 2,000 points (any grid gives a valid bound).
    bounds : bool, default True
        Compute ``risk_upper``.
    interval : bool, default False
        Compute ``ci_low`` / ``ci_high``.

    Returns
    -------
    Certificate
    """
    risk_target = checks.level(risk_target, "risk_target")
    delta = checks.level(delta, "delta")
    _check_betting(betting, grid)
    rhos = reliance_factors(method, factors)
    human = _losses("loss_human", loss_human)
    n = human.size
    if n == 0:
        raise AssayInputError("loss_human is empty: the test needs at least one labelled example")
    if rhos.max() > 0:
        if judge_labelled is None or judge_unlabelled is None:
            raise AssayInputError(f"{method} needs judge_labelled and judge_unlabelled (or use method='r-eval')")
        jl = _losses("judge_labelled", judge_labelled, n)
        ju = _losses("judge_unlabelled", judge_unlabelled)
        if ju.size < n:
            raise AssayInputError(f"judge_unlabelled has {ju.size} values for {n} labelled examples; {method} pairs "
                                  "each labelled example with r = floor(N/n) >= 1 judge-labelled ones")
    else:  # R-Eval: rho = 0, the judge plays no part
        jl, ju = np.zeros(n), np.zeros(0)
    q, r, unused = effective_observations(human, jl, ju, rhos)
    lo, hi = -rhos, 1.0 + rhos
    log_e_s, log_e = mixture_e_process(q, rhos, risk_target=risk_target, delta=delta, betting=betting, horizon=n,
                                       grid=grid)
    _, first = bt.ville(log_e[None, :], delta)
    p_value = float(min(1.0, math.exp(-log_e.max())))
    passed = multiple.rejects(p_value, delta)
    weights = np.exp(log_e_s[:, -1] - log_e_s[:, -1].max())
    weights /= weights.sum()
    bgrid = min(grid, 2000)
    ucb = bt.upper_bound(q, lo, hi, delta=delta, betting=betting, horizon=n, grid=bgrid, tol=1e-5) if bounds else float("nan")
    if interval:
        ci_low, ci_high = bt.hedged_interval(q, lo, hi, delta=delta, betting=betting, horizon=n, grid=bgrid, tol=1e-5)
    else:
        ci_low = ci_high = float("nan")
    return Certificate(
        rhos=rhos, r=r, unused_unlabelled=unused, log_e_s=log_e_s, log_e=log_e, weights=weights,
        rho_weighted=float(weights @ rhos), p_value=p_value, certified=passed,
        certified_at=float(first[0] + 1) if (passed and first[0] >= 0) else float("nan"),
        risk_upper=ucb, ci_low=ci_low, ci_high=ci_high,
    )


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

    def _no_interval_hint(self) -> str:
        return ("it has intervals only when certify() ran with interval=True (CLI: --interval); risk_upper is "
                "each candidate's one-sided upper bound")

    def statements(self) -> list[Statement]:
        """One sentence per candidate: certified or not at the risk target, with the p-value (adjusted under a
        selection procedure), the upper bound when it is below the target, and which is the cheapest certified."""
        sel = self.info.get("selection", {})
        proc, best = sel.get("procedure"), sel.get("best")
        target, delta = float(self.params["risk_target"]), float(self.level["delta"])
        level = f"family-wise error <= {delta:g} ({proc})" if proc else f"error <= {delta:g}"
        out = []
        for _, r in self.candidates.iterrows():
            up = r.get("risk_upper", float("nan"))
            p = r.get("p_adjusted", r.get("p_value"))
            bound = up is not None and np.isfinite(up) and up < target
            out.append(Statement(
                f"risk below {target:g} ({int(r['n'])} answers labelled by humans, {int(r['N'])} by the judge only): "
                f"{'certified' if bool(r['certified']) else 'not certified'} ({'adjusted ' if proc else ''}p = "
                f"{fmt(p, 4)})"
                # the upper bound is at the Bonferroni level: Holm may certify where it does not reach
                + (f"; risk at most {fmt(up)}" if bound else "")
                + ("; the cheapest certified configuration" if best is not None and str(r["candidate"]) == str(best)
                   else ""), str(r["candidate"]), level))
        return out

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
    seed : int, numpy Generator or None
        Seed of the processing order (resolved once, recorded; None draws one and records it).
    select : {"fst", "bonferroni", "holm"} or None
        Family-wise-error procedure over the candidates (:mod:`assay.stats.multiple`).
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
    columns : mapping, optional
        Canonical name -> your column name.

    Returns
    -------
    AutoEvalResult
        Main table ``candidates``, one row per candidate (see :func:`core` for the numbers); ``n`` counts
        labelled examples (``level["n_meaning"]``); ``info``: ``selection``, ``paths`` (log e-values and final
        weights), ``order`` (item ids in processing order).

    Examples
    --------
    Two candidates, 200 answers graded by people and 2,000 more by a judge that agrees with them 90% of the time: is
    each one's risk below 0.1?

    >>> import numpy as np, pandas as pd
    >>> from assay import autoeval
    >>> rng = np.random.default_rng(0)
    >>> rows = []
    >>> for cand, risk in (("small", 0.05), ("large", 0.3)):
    ...     loss = (rng.random(2200) < risk).astype(float)
    ...     judge = np.where(rng.random(2200) < 0.9, loss, 1 - loss)
    ...     rows.append(pd.DataFrame({"candidate": cand, "item": np.arange(2200), "loss_judge": judge,
    ...                               "loss_human": np.r_[loss[:200], [np.nan] * 2000]}))
    >>> res = autoeval.certify(pd.concat(rows), risk_target=0.1, delta=0.1, seed=0)
    >>> print(res.candidates[["candidate", "certified", "risk_upper"]].round(3).to_string(index=False))
    candidate  certified  risk_upper
        small       True       0.095
        large      False       0.321
    """
    # 1. parameters
    risk_target = checks.level(risk_target, "risk_target")
    delta = checks.level(delta, "delta")
    _check_betting(betting, grid)
    if select is not None and select not in SELECTIONS:
        raise AssayInputError(f"select must be one of {', '.join(SELECTIONS)} or None, got {select!r}")
    rhos = reliance_factors(method, factors)
    if select == "fst" and order is None and order_by is None:
        raise AssayInputError("fixed-sequence testing needs an order: give order=[...] or order_by=COLUMN")
    # 2. the seed, once
    seed_ = resolve_seed(seed)
    # 3. table -> per-candidate arrays in processing order
    prep = prepare(table, uses_judge=bool(rhos.max() > 0), method=method, columns=columns,
                   order_by=order_by if (select == "fst" and order is None) else None, cost_col=cost_col,
                   shuffle=shuffle, rng=seed_.rng())
    candidates = prep.candidates
    K = len(candidates)
    if select == "fst":
        if order is not None:
            missing = [c for c in order if c not in candidates]
            if missing:
                raise AssayInputError(f"order names unknown candidates: {', '.join(map(str, missing[:5]))}")
            seq = [str(c) for c in order]
        else:
            seq = list(prep.order_key.sort_values(ascending=ascending, kind="stable").index)
        level = delta
    else:
        seq = candidates
        level = delta / K if select in ("bonferroni", "holm") else delta
    costs = prep.costs

    # 4. the core, per candidate
    rows, paths, orders = [], {}, {}
    for cand in candidates:
        d = prep.data[cand]
        c = core(d.loss_human, d.judge_labelled, d.judge_unlabelled, risk_target=risk_target, delta=level,
                 method=method, factors=factors, betting=betting, grid=grid, bounds=bounds, interval=interval)
        rows.append(_candidate_row(cand, d, c, level, interval, None if costs is None else costs[cand]))
        paths[cand] = {"log_e": c.log_e.tolist(), "weights": c.weights.tolist()}
        orders[cand] = {"labelled": d.labelled_items, "unlabelled": d.unlabelled_items}

    # 5. the family-wise procedure
    table_out = pd.DataFrame(rows)
    selection = _selection(table_out, select, seq, delta, costs is not None)

    # 6. the result
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
    meaning = (
        f"P(a candidate whose risk exceeds {risk_target:g} is certified) <= {delta:g}"
        + (" jointly over all candidates (family-wise)" if select else " for each candidate")
        + "; risk_upper is a (1 - test_level) upper confidence bound on the risk"
    )
    same_n = table_out["n"].nunique() == 1
    n_meaning = ("labelled (human-scored) examples per candidate" if same_n else
                 "labelled (human-scored) examples of the first candidate; they differ between candidates (column n)")
    return build(AutoEvalResult, params=params, n=int(table_out["n"].iloc[0]), n_meaning=n_meaning, meaning=meaning,
                 seed=seed_, tables={"candidates": table_out}, delta=delta,
                 info={"selection": selection, "paths": paths, "order": orders})



def _candidate_row(cand: str, d: Any, c: "Certificate", level: float, interval: bool, cost: Any) -> dict[str, Any]:
    """One row of the ``candidates`` table from a candidate's arrays and its :class:`Certificate`."""
    row = {
        "candidate": cand,
        "n": len(d.loss_human),
        "N": d.n_unlabelled,
        "r": c.r,
        "unused_unlabelled": c.unused_unlabelled,
        "certified": c.certified,
        "certified_at": c.certified_at,
        "p_value": c.p_value,
        "e_value_max": float(np.exp(min(c.log_e.max(), 700.0))),
        "e_value_final": float(np.exp(min(c.log_e[-1], 700.0))),
        "risk_upper": c.risk_upper,
        "test_level": level,
        "mean_human": float(d.loss_human.mean()),
        "mean_judge": d.mean_judge,
        "rho_weighted": c.rho_weighted,
    }
    if interval:
        row["ci_low"], row["ci_high"] = c.ci_low, c.ci_high
    if cost is not None:
        row["cost"] = cost
    return row


def _selection(table_out: pd.DataFrame, select: str | None, seq: Sequence[str], delta: float,
               has_costs: bool) -> dict[str, Any]:
    """Apply the family-wise procedure to ``table_out`` (its ``certified`` column, in place) and say what may be
    deployed: with a procedure, the cheapest certified candidate (or the last of the fixed sequence); without one,
    no ``best`` at all (see :func:`certify`)."""
    if select is not None:
        cert = _select(table_out.set_index("candidate"), select, seq, delta)
        table_out["certified"] = table_out["candidate"].isin(cert)
        # certified exactly when p_adjusted <= delta; under Holm a candidate may be certified at a larger level than
        # the Bonferroni test_level its certified_at and risk_upper use (those stay valid for all candidates at once)
        names = table_out["candidate"].tolist()
        pos = {c: i for i, c in enumerate(names)}
        table_out["p_adjusted"] = multiple.adjusted(table_out["p_value"].to_numpy(float), select,
                                                    order=[pos[c] for c in seq] if select == "fst" else None)
        selection: dict[str, Any] = {"procedure": select, "order": list(seq), "certified": cert}
        if not cert:
            selection["best"] = None
            selection["note"] = "no candidate is certified at this delta; nothing can be deployed with the guarantee"
        elif has_costs:
            sub = table_out[table_out["candidate"].isin(cert)]
            selection["best"] = str(sub.sort_values(["cost"], kind="stable").iloc[0]["candidate"])
        else:
            selection["best"] = cert[-1] if select == "fst" else cert[0]
        return selection
    if has_costs:
        # a "best" picked among candidates each tested at delta on its own is not covered by any guarantee: with
        # K candidates at the target, SOME candidate is certified far more often than delta (24% for K = 5 at
        # delta = 0.1 in the Monte Carlo test). Only a family-wise procedure licenses a pick.
        cert = table_out.loc[table_out["certified"], "candidate"].tolist()
        return {"procedure": None, "certified": cert, "best": None,
                "note": ("no best candidate without a family-wise procedure: each candidate was tested at "
                         f"delta = {delta:g} on its own, so choosing the cheapest certified one carries no "
                         "guarantee (the chance that some candidate at the target is certified grows with "
                         "the number of candidates); use select='holm', 'bonferroni' or 'fst'")}
    return {}

def _passes(p: float, level: float) -> bool:
    """p <= level with the relative slack of :func:`assay.stats.multiple.rejects` (so that E = 1/delta exactly,
    up to rounding, passes): the same rule for single tests and for the selection procedures."""
    return bool(multiple.rejects(p, level))


def _select(t: pd.DataFrame, procedure: str, seq: Sequence[str], delta: float) -> list[str]:
    """Candidates certified by the family-wise procedure from each candidate's anytime p-value (column
    ``p_value`` of ``t``, indexed by candidate), listed in ``seq`` order."""
    names = list(t.index)
    p = t["p_value"].to_numpy(dtype=float)
    if procedure == "fst":
        pos = {c: i for i, c in enumerate(names)}
        mask = multiple.fixed_sequence(p, delta, order=[pos[c] for c in seq])
    elif procedure == "bonferroni":
        mask = multiple.bonferroni(p, delta)
    elif procedure == "holm":
        mask = multiple.holm(p, delta)
    else:
        raise AssayInputError(f"select must be one of {', '.join(SELECTIONS)}, got {procedure!r}")
    chosen = {c for c, m in zip(names, mask) if m}
    return [c for c in seq if c in chosen]
