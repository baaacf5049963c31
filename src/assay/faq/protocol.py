"""The validation protocol: :func:`protocol` measures FAQ and its baselines on new models nothing was fitted or tuned on.

It answers a different question from :func:`assay.faq.evaluate` (what is this model's accuracy?): over many models
whose accuracy is known, do the intervals cover as promised, and how narrow are they? The history is cut into
model-level splits (:func:`model_splits`, whole families together); per split the factors (:mod:`assay.faq.fit`)
and, with ``tune=True``, the hyperparameters are chosen on that split's history only, then every method runs on
the split's new models for every budget and seed, in chunks spread over workers (:mod:`assay.parallel`), and the
coverage and width are summarised per (budget, method) in a :class:`FAQProtocolResult`.

What one call asked for is checked and resolved once into a frozen :class:`ProtocolSettings`, which the tuner,
the per-split fits and the jobs read, rather than a long list of positional arguments passed down.
"""

from __future__ import annotations

import itertools
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from ..data.faq import FAQMatrix, observed, prepare_protocol
from ..errors import AssayInputError
from ..results import Result, build, level_alias
from ..seeds import resolve_seed
from . import baselines as bl
from .api import resolve_budget
from .core import FAQParams, interval, plain_words, run_faq
from .params import _check_alpha, _check_flag, _params
from .factor import FactorModel, default_groups
from .fit import _expectation, _factors, _learnt, check_k, fit_factors

__all__ = ["protocol", "FAQProtocolResult", "model_splits", "DEFAULT_GRID"]

#: sampling hyperparameters searched by the validation tuner (``protocol(tune=True)``). The variance estimator
#: and quantile are NOT tuned: choosing them by validation coverage among many candidates picks whichever
#: estimator was lucky on the validation models.
DEFAULT_GRID: dict[str, tuple] = {
    "beta0": (1.0,),
    "rho": (0.0, 0.1),
    "gamma": (0.0,),
    "tau": (0.1, 0.3, 0.5, 0.8),
}
AIPW_GRID = {"policy": ("neyman", "2min"), "tau": (0.05, 0.25, 0.5, 0.75)}
AI_FACTOR_GRID = {"tau": (0.05, 0.25, 0.5, 0.75)}
METHODS = ("faq", "uniform", "ht_uniform", "aipw", "ai_factor")

#: the pseudo-variant under which a protocol job reports which models fell back to uniform sampling
FELL_BACK = "fell_back"

PAPER_FAQ = {"beta0": 1.0, "rho": 0.0, "gamma": 0.0, "tau": 0.05, "design": "wr", "variance": "paper",
             "quantile": "normal", "fallback": 0.0}

_METHOD_ORDER = {m: i for i, m in enumerate(["faq", "faq:cs", "faq:increments|t", "faq:conservative|normal",
                                              "faq_paper", "uniform", "ht_uniform", "aipw", "ai_factor"])}


@dataclass(frozen=True)
class ProtocolSettings:
    """What one :func:`protocol` call asked for, checked and resolved: read by the tuner, the per-split factor
    fits and the jobs run on the new models."""

    budgets: Sequence[float | int]  # as given (they label the rows)
    n_b_list: list[int]  # the same budgets in queries
    methods: list[str]  # the two uniform references first, then the methods asked for
    alpha: float
    base_faq: FAQParams  # FAQ's settings when they are not tuned
    params: Mapping[str, Any]  # fixed settings per method ({"faq": FAQParams(...), "aipw": {...}})
    grids: Mapping[str, Mapping[str, Sequence]]  # the tuner's candidates per method (default grids when absent)
    tune: bool
    val_seeds: int
    split_by: Any
    factors: FactorModel | None  # unfitted settings refitted per split, fitted factors, or None (the default fit)
    cache: bool
    calibrate: bool
    faq_variants: tuple[str, ...]  # FAQ's other intervals reported on the same draws
    chunk: int
    workers: int
    fit_progress: Callable | None = None


class FAQProtocolResult(Result):
    """Coverage, mean width and ESS per (budget, method) on new models never used to fit or tune anything.

    Tables: ``table`` (main), ``per_model`` (coverage of each new model per budget and method, with its split),
    ``tuning`` (every validation candidate with its coverage and width, the chosen one flagged; empty without
    tuning). ESS columns: ``ess_vs_uniform_mean`` = (mean width of uniform sampling with the sample mean and a
    Wilson interval / mean width of the method)^2, per (split, seed), averaged; ``ess_vs_ht_uniform`` the same
    against the paper's Horvitz-Thompson "uniform" (Bernoulli sampling, zero predictor), whose variance
    (1 - pi) theta / n is larger than a sample mean's, so ESS against it is larger.
    """

    method = "faq-protocol"
    main_table = "table"

    @classmethod
    def _table_names(cls) -> tuple[str, ...]:
        return ("table", "per_model", "tuning")

    def _no_interval_hint(self) -> str:
        return ("it reports the coverage and mean width of each method's intervals per budget; the intervals of "
                "one model come from assay.faq.evaluate")

    def summary(self) -> str:
        t = self.table
        cols = [c for c in ("budget", "n_queries", "method", "coverage", "coverage_se", "mean_width",
                            "ess_vs_uniform_mean", "ess_vs_ht_uniform") if c in t]
        return (f"FAQ protocol (assay {self.version}): {self.params.get('n_new')} new models "
                f"({self.params.get('n_splits')} model-level split(s)) x {self.params.get('n_seeds')} seeds, "
                f"{self.params.get('n_items')} questions\n"
                + t[cols].to_string(index=False, float_format=lambda x: f"{x:.4f}"))


def model_splits(rows: Sequence[str], n_splits: int, split_by: Any = "auto", *, seed=0) -> list[tuple[np.ndarray, np.ndarray]]:
    """Model-level splits of a history: ``n_splits`` folds, each in turn the new models, the rest the history.

    Whole groups stay together, so the new models of a split belong to families the history of that split does not
    contain.

    Parameters
    ----------
    rows : sequence of str
        The history's model ids.
    n_splits : int
        Number of folds (at least 2); each holds out about 1/n_splits of the models.
    split_by : "auto", "random" or sequence, default "auto"
        "auto" (whole model families, the ``owner`` of ``owner/name`` ids, when the ids have one; else "random"),
        "random" (models independently), or one group label per row.
    seed : int, Generator or None, default 0
        Randomness of the assignment to folds.

    Returns
    -------
    list of tuple of ndarray
        Per fold, (row positions of the history, row positions of the new models).

    Raises
    ------
    AssayInputError
        When ``split_by`` or ``n_splits`` is invalid.

    Examples
    --------
    >>> for history, new in model_splits(["a/1", "a/2", "b/1", "b/2", "c/1", "c/2"], 3):
    ...     print(history.tolist(), new.tolist())
    [0, 1, 2, 3] [4, 5]
    [2, 3, 4, 5] [0, 1]
    [0, 1, 4, 5] [2, 3]
    """
    from .factor import _row_folds

    n = len(rows)
    if isinstance(split_by, str):
        if split_by == "auto":
            groups = default_groups(rows)
        elif split_by == "random":
            groups = None
        else:
            raise AssayInputError(f"split_by must be 'auto', 'random' or one group label per model; got {split_by!r}")
    else:
        groups = np.asarray(split_by)
        if groups.shape != (n,):
            raise AssayInputError(f"split_by must give one group label per model ({n}); got shape {groups.shape}")
    if isinstance(n_splits, bool) or not isinstance(n_splits, (int, np.integer)) or n_splits < 2:
        raise AssayInputError(f"splits must be an integer >= 2 (each split holds out 1/splits of the models); got {n_splits!r}")
    _, ss = resolve_seed(seed)
    fold = _row_folds(n, int(n_splits), groups, np.random.default_rng(ss))
    return [(np.flatnonzero(fold != f), np.flatnonzero(fold == f)) for f in range(int(n_splits))]


# ----------------------------------------------------------------------------------------------------
# the jobs: one method with one setting on a chunk of models


def _grid_list(grid: Mapping[str, Sequence]) -> list[dict]:
    keys = list(grid)
    return [dict(zip(keys, vals)) for vals in itertools.product(*(grid[k] for k in keys))]


def _job_params(cfg: Mapping) -> FAQParams:
    """The FAQParams of a protocol job's settings (which also carry the variants and what the history calibrated)."""
    return FAQParams(**{k: cfg[k] for k in FAQParams().to_dict() if k in cfg})


def _run_method(name: str, cfg: dict, Z: np.ndarray, n_b: int, rng: np.random.Generator, ctx: dict,
                alpha: float) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """One method on a chunk of models -> {variant label: (estimate, lo, hi)}.

    FAQ returns its main interval under "" and, with ``cfg["variants"]``, the other intervals of the same draws.
    """
    if name in ("faq", "faq_paper"):
        prm = _job_params(cfg)
        r = run_faq(ctx["V"], ctx["mu"], ctx["Sigma"], Z, n_b, rng=rng, params=prm, alpha=alpha, b=ctx["b"],
                    calibrated_crit=cfg.get("crit"), calibrated_floor=cfg.get("floor"))
        out = {"": (r.estimate, r.lo, r.hi)}
        for var in cfg.get("variants", ()):
            if var == "cs":
                out["cs"] = (r.estimate, r.cs_lo, r.cs_hi)
            else:
                v, q = var.split("|")
                if v in r.ses:
                    lo, hi = interval(r, alpha, v, q)
                    out[var] = (r.estimate, lo, hi)
        if prm.fallback > 0:
            fb = (r.fell_back > 0).astype(float)
            out[FELL_BACK] = (r.estimate, fb, fb)  # not an interval: which models fell back (protocol's column)
        return out
    if name == "uniform":
        e = bl.uniform_mean(Z, n_b, rng=rng, alpha=alpha)
    elif name == "ht_uniform":
        e = bl.ht_uniform(Z, n_b, rng=rng, alpha=alpha)
    elif name == "aipw":
        e = bl.aipw(Z, n_b, ctx["f"], policy=cfg["policy"], tau=cfg["tau"], rng=rng, alpha=alpha)
    elif name == "ai_factor":
        e = bl.ai_factor(Z, n_b, ctx["V_eff"], ctx.get("mu_eff", ctx["mu"]), ctx.get("Sigma_eff", ctx["Sigma"]),
                         tau=cfg["tau"], rng=rng, alpha=alpha)
    else:  # pragma: no cover - validated upstream
        raise AssayInputError(f"unknown method {name!r}")
    return {"": (e.estimate, e.lo, e.hi)}


def _chunk_task(task, ss, ctx=None, Z_all=None):
    """Worker: every (method, candidate) on one chunk of models for one (budget, seed). ``ctx`` (factors, prior,
    item means: the large shared input) is bound once with functools.partial, so executors that share the
    function (Ray's object store) ship it once rather than with every task."""
    if ctx is None:
        ctx, Z, n_b, jobs, alpha = task
    else:
        lo, hi, n_b, jobs, alpha = task
        Z = Z_all[lo:hi]
    children = ss.spawn(len(jobs))
    out = []
    for (name, cfg), child in zip(jobs, children):
        res = _run_method(name, cfg, Z, n_b, np.random.default_rng(child), ctx, alpha)
        out.append({k: (np.asarray(v[1]), np.asarray(v[2])) for k, v in res.items()})
    return out


def _item_means(H: np.ndarray | None, N: int) -> np.ndarray:
    """Historical per-question mean (observed entries; never-observed questions get the grand mean). ``H``: float
    with NaN or int8 codes (-1 = missing)."""
    if H is None:
        return np.full(N, 0.5)
    obs = observed(H)
    cnt = obs.sum(axis=0)
    ones = (np.asarray(H) == 1).sum(axis=0).astype(np.float64)  # exact integers, as the float sums were
    grand = ones.sum() / cnt.sum()
    return np.where(cnt > 0, ones / np.maximum(cnt, 1), grand)


def _context(fm: FactorModel, H: np.ndarray | None) -> dict:
    N = fm.V_.shape[0]
    ctx = {"V": fm.V_, "mu": fm.prior_mean_, "Sigma": fm.prior_cov_, "b": fm.b_ if fm.bias else None,
           "f": _item_means(H, N)}
    if fm.bias:
        # ai_factor has no offset argument: append a constant-1 factor whose coefficient is pinned at 1
        ctx["V_eff"] = np.hstack([fm.V_, fm.b_[:, None]])
        k = fm.V_.shape[1]
        mu = np.append(fm.prior_mean_, 1.0)
        S = np.zeros((k + 1, k + 1))
        S[:k, :k] = fm.prior_cov_
        ctx["mu_eff"], ctx["Sigma_eff"] = mu, S
    else:
        ctx["V_eff"] = fm.V_
    return ctx


def _evaluate_jobs(ctx, Z, theta, n_b_list, jobs, seeds_ss, cfg: ProtocolSettings, progress, budget_ids=None,
                   split_id=0):
    """Run jobs for every budget x seed x chunk; return {(budget index, job index, variant): (cover[S, M], width[S, M])}."""
    import functools

    from ..parallel import get_executor

    M = Z.shape[0]
    chunks = [slice(i, min(i + cfg.chunk, M)) for i in range(0, M, cfg.chunk)]
    tasks, keys = [], []
    for bi, n_b in enumerate(n_b_list):
        for si in range(len(seeds_ss)):
            for ci, sl in enumerate(chunks):
                tasks.append((sl.start, sl.stop, n_b, jobs, cfg.alpha))
                keys.append((bi, si, ci))
    bid = list(range(len(n_b_list))) if budget_ids is None else list(budget_ids)
    # one child seed sequence per (split, seed, budget, chunk), derived from the seed's own sequence so adding
    # budgets, chunks or splits never changes other cells
    seed_for = [np.random.SeedSequence(seeds_ss[si].entropy, spawn_key=seeds_ss[si].spawn_key + (split_id, bid[bi], ci))
                for bi, si, ci in keys]
    fn = functools.partial(_chunk_task, ctx=ctx, Z_all=Z)
    results = get_executor(cfg.workers).map(fn, tasks, seed_for, progress)
    out: dict = {}
    for (bi, si, ci), res in zip(keys, results):
        sl = chunks[ci]
        for ji, variants in enumerate(res):
            for var, (lo, hi) in variants.items():
                key = (bi, ji, var)
                if key not in out:
                    out[key] = (np.zeros((len(seeds_ss), M), dtype=bool), np.zeros((len(seeds_ss), M)))
                cov, wid = out[key]
                if var == FELL_BACK:
                    cov[si, sl] = lo > 0
                    continue
                cov[si, sl] = (lo <= theta[sl]) & (theta[sl] <= hi)
                wid[si, sl] = hi - lo
    return out


# ----------------------------------------------------------------------------------------------------
# one split: its factors, the tuning on its history, every method on its new models


def _fit_for(H, rows, items, cfg: ProtocolSettings, *, with_info: bool = False):
    """Factors for one split's history: the default (cached) fit, or a fresh fit with the given settings
    (``with_info``: -> (model, fit info with the history's cache key and rows))."""
    factors = cfg.factors
    if factors is None:
        fm, info = fit_factors(H, rows, items, cache=cfg.cache, progress=cfg.fit_progress)
        info["rows"] = list(rows)
        return (fm, info) if with_info else fm
    fm = FactorModel(**{k: getattr(factors, k) for k in ("k", "weight_decay", "bias", "max_iter", "tol", "seed", "cv",
                                                          "ks", "lambdas", "one_se", "holdout", "overfit_ratio",
                                                          "cv_by", "reveal", "cv_tol", "n_jobs")})
    check_k(fm, H)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        fm.fit(FAQMatrix(H, list(rows), list(items)),
               groups=default_groups(rows) if fm.cv_by == "models" else None, progress=cfg.fit_progress)
    return (fm, {"rows": list(rows), "key": None}) if with_info else fm


def _jobs_for(method: str, grid: Mapping | None, base: FAQParams) -> list[tuple[str, dict]]:
    if method == "faq":
        g = dict(DEFAULT_GRID if grid is None else grid)
        unknown = set(g) - {"beta0", "rho", "gamma", "tau"}
        if unknown:
            raise AssayInputError(f"unknown FAQ grid key(s) {sorted(unknown)}; use beta0, rho, gamma, tau")
        fixed = {k: v for k, v in base.to_dict().items() if k not in g}
        return [("faq", {**fixed, **c}) for c in _grid_list(g)]
    if method == "aipw":
        return [("aipw", c) for c in _grid_list(AIPW_GRID if grid is None else grid)]
    if method == "ai_factor":
        return [("ai_factor", c) for c in _grid_list(AI_FACTOR_GRID if grid is None else grid)]
    return [(method, {})]


def _tune_split(si, H, hrows, items, groups, tune_ss, cfg: ProtocolSettings) -> tuple[dict, list[dict]]:
    """Choose each method's settings per budget on validation models of one split's history: one model-level fold
    of four (factors fitted on the other three); the candidate with the highest ESS (smallest mean width) among
    those whose validation coverage is at least 1 - alpha - one Monte Carlo s.e. (else the best-covering one).
    -> ({(budget index, method): settings}, one row per candidate)."""
    inner = model_splits(hrows, 4, groups, seed=tune_ss.spawn(1)[0])
    tr_i, val_i = inner[0]
    val_i = val_i[observed(H[val_i]).all(axis=1)]
    if val_i.size < 10:
        raise AssayInputError(f"tuning needs at least 10 fully observed validation models; split {si} has "
                              f"{val_i.size} (use tune=False)")
    fm_v = _fit_for(H[tr_i], [hrows[i] for i in tr_i], items, cfg)
    ctx_v = _context(fm_v, H[tr_i])
    Zval = H[val_i]
    theta_v = Zval.mean(axis=1)
    val_ss = tune_ss.spawn(cfg.val_seeds)
    alpha = cfg.alpha
    se_cov = float(np.sqrt(alpha * (1 - alpha) / (Zval.shape[0] * cfg.val_seeds)))
    chosen: dict[tuple[int, str], dict] = {}
    rows: list[dict] = []
    for m in cfg.methods:
        if m in ("uniform", "ht_uniform", "faq_paper"):
            continue
        jobs = _jobs_for(m, cfg.grids.get(m), cfg.base_faq)
        res = _evaluate_jobs(ctx_v, Zval, theta_v, cfg.n_b_list, jobs, val_ss, cfg, None, split_id=si)
        for bi in range(len(cfg.n_b_list)):
            cands = [(ji, float(cov.mean()), float(wid.mean())) for (b2, ji, var), (cov, wid) in res.items()
                     if b2 == bi and var == ""]
            ok = [c for c in cands if c[1] >= 1 - alpha - se_cov]
            pick = min(ok, key=lambda c: c[2]) if ok else max(cands, key=lambda c: c[1])
            chosen[(bi, m)] = jobs[pick[0]][1]
            for ji, cv_, w_ in cands:
                rows.append({"split": si, "budget": cfg.budgets[bi], "n_queries": cfg.n_b_list[bi], "method": m,
                             **{f"param_{k}": v for k, v in jobs[ji][1].items()},
                             "val_coverage": cv_, "val_mean_width": w_, "selected": ji == pick[0]})
    return chosen, rows


def _test_jobs(bi: int, chosen: dict, cfg: ProtocolSettings) -> list:
    """The (method, settings) jobs run on a split's new models at budget ``bi``."""
    jobs = []
    for m in cfg.methods:
        if m == "faq":
            settings = chosen.get((bi, m), cfg.base_faq.to_dict())
            jobs.append(("faq", {**settings, "variants": cfg.faq_variants}))
        elif m == "faq_paper":
            jobs.append(("faq_paper", dict(PAPER_FAQ)))
        elif m == "aipw":
            jobs.append(("aipw", chosen.get((bi, m), {"policy": "neyman", "tau": 0.25, **dict(cfg.params.get("aipw") or {})})))
        elif m == "ai_factor":
            jobs.append(("ai_factor", chosen.get((bi, m), {"tau": 0.25, **dict(cfg.params.get("ai_factor") or {})})))
        else:
            jobs.append((m, {}))
    return jobs


def _calibrate_jobs(jobs: list, H, fit_info: dict, fm: FactorModel, n_b: int, cfg: ProtocolSettings) -> list:
    """FAQ's interval as evaluate gives it: calibrated on held-out families of this split's history (never on its
    new models). -> per FAQ job, what that history predicts (its summary, or None); ``jobs`` updated in place."""
    expected = []
    for ji, (name, settings) in enumerate(jobs):
        if name != "faq":
            continue
        prm_j = _job_params(settings)
        cal, summ, _ = _expectation(H, fit_info, fm, n_b, prm_j, cfg.alpha, cache=cfg.cache)
        if cal is not None and prm_j.variance in cal.se and cal.calibrated(cfg.alpha, prm_j.variance):
            got = _learnt(cal, cfg.alpha, prm_j.variance)
            jobs[ji] = (name, {**settings, "crit": got["calibrated_crit"], "floor": got["calibrated_floor"]})
        expected.append(summ)
    return expected


@dataclass
class _Tally:
    """What the splits add up to, filled split by split."""

    acc: dict = field(default_factory=dict)  # (budget index, row name) -> [(cov[S, M], wid[S, M], settings)] per split
    expected: dict = field(default_factory=dict)  # budget index -> per split, what its history predicted (or None)
    fell_back: dict = field(default_factory=dict)  # budget index -> per split, which new models fell back
    per_model: list = field(default_factory=list)  # per-model coverage frames
    tuning_rows: list = field(default_factory=list)
    split_info: list = field(default_factory=list)


class _Progress:
    """One progress count over the whole protocol (splits x budgets x seeds x chunks of models)."""

    def __init__(self, report: Callable[[int, int], None] | None, total: int):
        self.report, self.total, self.done = report, total, 0

    def __call__(self, d, t):
        if self.report is not None:
            self.report(self.done + d, self.total)


def _test_split(si: int, fm: FactorModel, fit_info: dict, H, Znew, nrows, chosen: dict, test_ss,
                cfg: ProtocolSettings, tally: _Tally, progress: _Progress) -> None:
    """Every method at every budget and seed on one split's new models (factors ``fm`` fitted on its history ``H``)."""
    theta = Znew.mean(axis=1)
    ctx = _context(fm, H)
    tally.split_info.append({"split": si, "n_history": int(H.shape[0]), "n_new": int(Znew.shape[0]),
                             "k": fm.k_, "weight_decay": fm.weight_decay_, "fingerprint": fm.fingerprint()})
    for bi, n_b in enumerate(cfg.n_b_list):
        jobs = _test_jobs(bi, chosen, cfg)
        if cfg.calibrate and "faq" in cfg.methods and n_b < H.shape[1]:
            tally.expected.setdefault(bi, []).extend(_calibrate_jobs(jobs, H, fit_info, fm, n_b, cfg))
        res = _evaluate_jobs(ctx, Znew, theta, [n_b], jobs, test_ss, cfg, progress, budget_ids=[bi], split_id=si)
        progress.done += len(test_ss) * -(-Znew.shape[0] // cfg.chunk)
        for (b2, ji, var), (cov, wid) in res.items():
            if var == FELL_BACK:
                tally.fell_back.setdefault(bi, []).append(cov.ravel())
                continue
            name = jobs[ji][0] + (f":{var}" if var else "")
            tally.acc.setdefault((bi, name), []).append((cov, wid, jobs[ji][1]))
            tally.per_model.append(pd.DataFrame({"split": si, "budget": cfg.budgets[bi], "method": name, "model": nrows,
                                                 "theta": theta, "coverage": cov.mean(axis=0),
                                                 "mean_width": wid.mean(axis=0)}))


# ----------------------------------------------------------------------------------------------------
# the result


def _protocol_table(acc: dict, cfg: ProtocolSettings) -> pd.DataFrame:
    """One row per (budget, method) from the coverage and width arrays of every split: coverage (its s.e. over
    (split, seed) runs), the smallest per-model coverage, mean width and ESS against both uniform references."""
    rows = []
    for bi, n_b in enumerate(cfg.n_b_list):
        wu = np.concatenate([w.mean(axis=1) for _, w, _ in acc[(bi, "uniform")]])
        wh = np.concatenate([w.mean(axis=1) for _, w, _ in acc[(bi, "ht_uniform")]])
        for (b2, name), lst in acc.items():
            if b2 != bi:
                continue
            cov_ps = np.concatenate([c.mean(axis=1) for c, _, _ in lst])  # per (split, seed)
            w_ps = np.concatenate([w.mean(axis=1) for _, w, _ in lst])
            cov_all = np.concatenate([c.ravel() for c, _, _ in lst])
            per_model_cov = np.concatenate([c.mean(axis=0) for c, _, _ in lst])
            settings = {k: v for k, v in lst[0][2].items() if k != "variants"}
            if name.startswith("faq:"):
                var = name.split(":", 1)[1]
                if var == "cs":
                    settings["interval"] = "anytime-valid"
                else:
                    settings["variance"], settings["quantile"] = var.split("|")
            rows.append({
                "budget": cfg.budgets[bi], "n_queries": n_b, "method": name,
                "coverage": float(cov_all.mean()),
                "coverage_se": float(cov_ps.std(ddof=1) / np.sqrt(len(cov_ps))) if len(cov_ps) > 1 else float("nan"),
                "min_model_coverage": float(per_model_cov.min()),
                "mean_width": float(w_ps.mean()),
                "ess_vs_uniform_mean": float(np.mean((wu / w_ps) ** 2)),
                "ess_vs_ht_uniform": float(np.mean((wh / w_ps) ** 2)),
                "params": ", ".join(f"{k}={v}" for k, v in settings.items()),
            })
    table = pd.DataFrame(rows)
    table = table.assign(_o=table["method"].map(lambda m: _METHOD_ORDER.get(m, 99))).sort_values(
        ["n_queries", "_o"], kind="stable").drop(columns="_o")
    return table.reset_index(drop=True)


def _summarise(tally: _Tally, cfg: ProtocolSettings) -> tuple[pd.DataFrame, list[str]]:
    """The main table, with what the histories predicted and the fallback rate on FAQ's rows, and the notes."""
    table = _protocol_table(tally.acc, cfg)
    table["expected_coverage"] = np.nan
    table["expected_saving"] = np.nan
    table["fallback_rate"] = np.nan
    notes = []
    for bi, n_b in enumerate(cfg.n_b_list):
        row = (table["n_queries"] == n_b) & (table["method"] == "faq")
        summs = [x for x in tally.expected.get(bi, []) if x]
        if summs and len(summs) == len(tally.expected.get(bi, [])):
            table.loc[row, "expected_coverage"] = float(np.mean([x["expected_coverage"] for x in summs]))
            table.loc[row, "expected_saving"] = float(np.mean([x["expected_saving"] for x in summs]))
        if tally.fell_back.get(bi):
            table.loc[row, "fallback_rate"] = float(np.concatenate(tally.fell_back[bi]).mean())
        if row.any():
            gain = float(table.loc[row, "ess_vs_uniform_mean"].iloc[0])
            calibrated = (bool(summs) and all(np.isfinite(x["crit"]) or np.isfinite(x["floor"]) for x in summs)
                          if cfg.calibrate else None)
            notes += [f"budget {cfg.budgets[bi]} ({n_b} queries): {w}" for w in
                      plain_words(n_queries=n_b, gain=gain, calibrated=calibrated)]
    return table, notes


# ----------------------------------------------------------------------------------------------------
# protocol


def _check_methods(methods: Sequence[str]) -> list[str]:
    """The methods asked for, with the two uniform references (always run) first."""
    methods = list(methods)
    for m in methods:
        if m not in METHODS + ("faq_paper",):
            raise AssayInputError(f"unknown method {m!r}; use {', '.join(METHODS + ('faq_paper',))}")
    return [m for m in ("uniform", "ht_uniform") if m not in methods] + methods


def _check_seeds(seeds) -> list[int]:
    seeds = list(range(seeds)) if isinstance(seeds, (int, np.integer)) else [int(s) for s in seeds]
    if not seeds:
        raise AssayInputError("seeds is empty")
    return seeds


def _check_history(history, new_models, factors) -> None:
    if isinstance(history, FactorModel):
        raise AssayInputError("protocol needs the history table (for the splits and the baselines' per-question "
                              "means); pass a FactorModel as factors=")
    if new_models is None and factors is not None and hasattr(factors, "V_"):
        raise AssayInputError("a fitted FactorModel was fitted on models that the splits would call new; pass "
                              "an unfitted one (its settings are refitted per split) or none")


def _split_list(H_all, rows_all, Z_new, new_rows, splits: int, split_by, split_ss):
    """(the splits as (history rows, new-model rows or None), the new models' answers, their ids): the history's
    model-level folds, or one split whose new models are ``new_models``."""
    if Z_new is None:
        split_list = model_splits(rows_all, splits, split_by, seed=split_ss)
        if (H_all < 0).any():
            raise AssayInputError("the history has missing answers; the true accuracy of a held-out model needs its "
                                  "full row, so split a complete table (or pass new_models explicitly)")
        return split_list, H_all, rows_all
    return [(np.arange(H_all.shape[0]), None)], Z_new, new_rows


def protocol(
    history,
    new_models=None,
    *,
    budgets: Sequence[float | int] = (0.025, 0.05, 0.1, 0.25),
    seeds: Iterable[int] | int = 10,
    seed=0,
    alpha: float = 0.05,
    delta: float | None = None,
    methods: Sequence[str] = ("faq", "uniform", "ht_uniform"),
    factors: FactorModel | None = None,
    splits: int = 3,
    split_by: Any = "auto",
    tune: bool = False,
    grids: Mapping[str, Mapping[str, Sequence]] | None = None,
    val_seeds: int = 3,
    params: Mapping[str, FAQParams | Mapping] | None = None,
    variants: bool = True,
    chunk: int = 128,
    workers: int = 1,
    cache: bool = True,
    calibrate: bool = True,
    progress: Callable[[int, int], None] | None = None,
    fit_progress: Callable | None = None,
) -> FAQProtocolResult:
    """Coverage, width and ESS of FAQ and its baselines on new models that nothing was fitted or tuned on.

    Without ``new_models``, the history's models are cut into ``splits`` model-level folds (:func:`model_splits`:
    whole model families together); each fold in turn is the set of new models, and the factors (and, with
    ``tune``, the hyperparameters) come from the other folds only. With ``new_models``, they are the new models
    and the whole history is the history (one split). Every new model is evaluated once per seed and budget;
    its true accuracy is the mean of its full row.

    The steps: check the arguments, resolve the seed, prepare the arrays (:func:`assay.data.faq.prepare_protocol`),
    per split fit the factors (and tune) and run every method on the new models (FAQ through
    :func:`assay.faq.core.run_faq`, the baselines of :mod:`assay.faq.baselines`), summarise, package
    (:func:`assay.results.build`).

    Parameters
    ----------
    history : models x items 0/1 table (as :func:`evaluate`); complete when it is split.
    new_models : the new models' complete answers on the same items, or None (split the history).
    budgets : fractions of the bank or numbers of queries (:func:`resolve_budget`).
    seeds : an int S (= range(S)) or the seed indices; ``seed`` is the master seed (it also places the splits).
        Every (split, seed, budget, chunk of ``chunk`` models) has its own child seed, so results do not depend on
        ``workers``.
    alpha : 1 - the nominal coverage (the paper's name; ``delta``, assay's common name, is the same level).
    methods : any of "faq" (assay's defaults, or ``params["faq"]``), "faq_paper" (the paper's Algorithm 1 as
        selected in its released logs: with replacement, tau = 0.05, eq. 8 variance, normal quantile), "uniform"
        (simple random sample, sample mean, Wilson interval: the honest reference), "ht_uniform" (the paper's
        reference), "aipw" (Zrnic & Candès active inference with the historical per-question mean), "ai_factor"
        (the same with the online factor model). The two uniform references are always run.
    factors : an UNFITTED FactorModel whose settings are refitted on each split's history (default: the
        default model-level CV fit, cached); a fitted one only with explicit ``new_models``.
    tune : choose FAQ's (beta0, rho, gamma, tau) and the baselines' settings per budget on validation models:
        one model-level fold of each split's history (so validation models, like the test models, come from
        families the validation factors were not fitted on). The chosen candidate maximises ESS subject to
        validation coverage >= 1 - alpha - one Monte Carlo standard error. The released code tuned FAQ on the
        last 20% of history rows by width alone and the baselines post hoc on the test models.
    grids, val_seeds : the candidates (default :data:`DEFAULT_GRID` and the baselines' grids) and the number of
        validation seeds.
    params : fixed settings per method (``{"faq": FAQParams(...), "aipw": {...}}``).
    variants : add rows for FAQ's other intervals on the same draws: ``faq:increments|t`` (no model-variance
        floor), ``faq:conservative|normal`` (normal quantile) and ``faq:cs`` (the anytime-valid interval).
    chunk, workers : models per task and parallel workers (:mod:`assay.parallel`).
    calibrate : give FAQ the interval calibrated on held-out families of each split's history, as
        :func:`evaluate` does (:mod:`assay.faq.calibrate`); the table's ``expected_coverage`` and
        ``expected_saving`` are what those histories predicted before any new model was queried;
        ``fallback_rate`` is the share of the new models' runs that fell back to uniform sampling.

    Returns
    -------
    FAQProtocolResult
        ``n`` counts the new models evaluated over all splits (``level["n_meaning"]``).
    """
    # 1. arguments
    alpha = level_alias(alpha, delta, 0.05)
    _check_alpha(alpha)
    _check_flag(calibrate, "calibrate")
    methods = _check_methods(methods)
    seeds = _check_seeds(seeds)
    _check_history(history, new_models, factors)
    # 2. seed: the splits, the tuning and the test draws each descend from their own child
    seed = resolve_seed(seed)
    split_ss, tune_ss, test_ss_root = seed.spawn(3)
    # 3. arrays
    H_all, rows_all, items, Z_new, new_rows = prepare_protocol(history, new_models, codes=True)  # int8, -1 = missing
    split_list, Zsrc, src_rows = _split_list(H_all, rows_all, Z_new, new_rows, splits, split_by, split_ss)
    N = len(items)
    n_b_list = [resolve_budget(b, N)[0] for b in budgets]
    params = dict(params or {})
    cfg = ProtocolSettings(
        budgets=budgets, n_b_list=n_b_list, methods=methods, alpha=alpha, base_faq=_params(params.get("faq")),
        params=params, grids=dict(grids or {}), tune=tune, val_seeds=val_seeds, split_by=split_by, factors=factors,
        cache=cache, calibrate=calibrate, faq_variants=("increments|t", "conservative|normal", "cs") if variants else (),
        chunk=chunk, workers=workers, fit_progress=fit_progress)
    test_ss = [np.random.SeedSequence(test_ss_root.entropy, spawn_key=test_ss_root.spawn_key + (s,)) for s in seeds]
    n_new = [Zsrc.shape[0] if ni is None else len(ni) for _, ni in split_list]
    counter = _Progress(progress, sum(len(n_b_list) * len(seeds) * -(-m // chunk) for m in n_new))

    # 4. per split: factors (and tuning) from its history only, then every method on its new models
    tally = _Tally()
    for si, (hist_idx, new_idx) in enumerate(split_list):
        H, hrows = H_all[hist_idx], [rows_all[i] for i in hist_idx]
        Znew, nrows = (Zsrc, src_rows) if new_idx is None else (Zsrc[new_idx], [src_rows[i] for i in new_idx])
        chosen: dict[tuple[int, str], dict] = {}
        if tune:
            groups = split_by if isinstance(split_by, str) else np.asarray(split_by)[hist_idx]
            chosen, rows = _tune_split(si, H, hrows, items, groups, tune_ss, cfg)
            tally.tuning_rows += rows
        if new_idx is None and factors is not None and hasattr(factors, "V_"):
            fm, H, _, fit_info = _factors(FAQMatrix(H, hrows, list(items)), factors)
            fit_info = {"rows": hrows, "key": None}
        else:
            fm, fit_info = _fit_for(H, hrows, items, cfg, with_info=True)
        _test_split(si, fm, fit_info, H, Znew, nrows, chosen, test_ss, cfg, tally, counter)

    # 5. the result
    n_new = sum(s["n_new"] for s in tally.split_info)
    table, notes = _summarise(tally, cfg)
    return build(
        FAQProtocolResult,
        params={"budgets": list(budgets), "n_queries": n_b_list, "methods": methods, "n_new": int(n_new),
                "n_history": int(H_all.shape[0]), "n_items": N, "n_seeds": len(seeds), "n_splits": len(split_list),
                "split_by": split_by if isinstance(split_by, str) else "given", "tune": tune, "val_seeds": val_seeds,
                "chunk": chunk, "faq": cfg.base_faq.to_dict()},
        n=int(n_new), n_meaning="new models evaluated (over all splits), each at every budget and seed",
        meaning=f"nominal coverage {1 - alpha:.0%} of each new model's accuracy over the bank", alpha=alpha,
        seed=seed,
        tables={"table": table, "per_model": pd.concat(tally.per_model, ignore_index=True),
                "tuning": pd.DataFrame(tally.tuning_rows)},
        warnings=notes,
        info={"splits": tally.split_info, "factors": {"per_split": tally.split_info}},
    )
