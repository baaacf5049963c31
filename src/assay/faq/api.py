"""Public FAQ functions: :func:`evaluate` (one or more new models) and :func:`protocol` (the validation experiment).

Data: a history of 0/1 answers (models x items, NaN = missing; wide DataFrame, long ``model, item, score``
table, or array) and new models' answers on the same items. Items are matched by id (as strings).

Defaults and what they were validated on (``assay study faq-leaderboard``; see the README): the factors are
fitted by model-level cross-validation (whole model families held out, the criterion being how well the
factors predict a held-out model after FAQ has seen 10% of its answers), FAQ samples WITHOUT replacement
(:mod:`assay.faq.core`, ``design="wor"``), tau = 0.5, the ``conservative`` variance and a Student t quantile.
On families of leaderboard models never used to fit or tune anything, this covered at every budget from 2.5% to
25% of the bank; the numbers are in the README.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from ..errors import AssayInputError
from ..seeds import resolve_seed
from ..results import Result
from . import baselines as bl
from .core import VARIANCES, FAQParams, interval, run_faq
from .factor import FactorModel, default_groups

__all__ = ["evaluate", "protocol", "FAQResult", "FAQProtocolResult", "as_matrix", "resolve_budget",
           "DEFAULT_GRID", "default_factor_model", "fit_factors", "model_splits", "MIN_VALIDATED_QUERIES",
           "factor_cache_dir"]

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

#: the smallest number of queries at which the default interval's coverage was shown on models absent from the
#: history (2.5% of the 1,351-question leaderboard bank; ``assay study faq-leaderboard``). Below it a result warns.
MIN_VALIDATED_QUERIES = 33

#: bump when the default factor fit changes, so cached fits from older versions are not reused
_FIT_VERSION = "faq-factors-2"


# ----------------------------------------------------------------------------------------------------
# inputs


def as_matrix(obj: Any, what: str, *, columns: Mapping[str, str] | None = None,
              allow_missing: bool = True) -> tuple[np.ndarray, list[str], list[str]]:
    """(values with NaN for missing, row ids, item ids as strings) from a wide / long table or an array.

    Long tables have the columns ``model, item, score`` (renamed with ``columns``); wide tables have one row
    per model (the index) and one column per item. Values must be 0, 1 or missing.
    """
    cols = {"model": "model", "item": "item", "score": "score", **dict(columns or {})}
    if isinstance(obj, pd.Series):
        obj = obj.to_frame().T
    if isinstance(obj, pd.DataFrame):
        if {cols["model"], cols["item"], cols["score"]} <= set(obj.columns) and obj.shape[1] <= 4:
            df = obj[[cols["model"], cols["item"], cols["score"]]].copy()
            df.columns = ["model", "item", "score"]
            df["model"] = df["model"].astype(str)
            df["item"] = df["item"].astype(str)
            dup = df.duplicated(["model", "item"], keep=False)
            if dup.any():
                r = df[dup].iloc[0]
                raise AssayInputError(f"{what}: {int(dup.sum())} duplicate (model, item) rows, e.g. model "
                                      f"{r['model']!r}, item {r['item']!r}; keep one score per pair")
            score = pd.to_numeric(df["score"], errors="coerce")
            bad = score.isna() & df["score"].notna()
            if bad.any():
                raise AssayInputError(f"{what}: score {df.loc[bad, 'score'].iloc[0]!r} is not a number; scores must be 0 or 1")
            df["score"] = score
            wide = df.pivot(index="model", columns="item", values="score")
            obj = wide
        rows = [str(r) for r in obj.index]
        items = [str(c) for c in obj.columns]
        try:
            H = obj.apply(pd.to_numeric, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
        except (TypeError, ValueError) as e:  # pragma: no cover - apply/to_numeric already coerced
            raise AssayInputError(f"{what}: values must be numeric 0/1 ({e})") from None
        raw = obj.to_numpy(dtype=object)
        coerced = np.isnan(H) & pd.notna(raw)
        if coerced.any():
            i, j = (int(a[0]) for a in np.nonzero(coerced))
            raise AssayInputError(f"{what}: cell (model {rows[i]!r}, item {items[j]!r}) = {raw[i, j]!r} is not a number; "
                                  "values must be 0, 1 or missing")
    else:
        try:
            H = np.asarray(obj, dtype=float)
        except (TypeError, ValueError) as e:
            raise AssayInputError(f"{what} must be a numeric models x items array or table with values 0/1 ({e})") from None
        if H.ndim == 1:
            H = H[None, :]
        if H.ndim != 2:
            raise AssayInputError(f"{what} must be 2-D (models x items), got shape {H.shape}")
        rows = [str(i) for i in range(H.shape[0])]
        items = [str(j) for j in range(H.shape[1])]
    if H.shape[0] == 0 or H.shape[1] == 0:
        raise AssayInputError(f"{what} is empty (shape {H.shape})")
    if len(set(items)) != len(items):
        dups = pd.Series(items)[pd.Series(items).duplicated()].unique()[:3]
        raise AssayInputError(f"{what}: duplicate item ids {', '.join(map(repr, dups))}")
    if len(set(rows)) != len(rows):
        dups = pd.Series(rows)[pd.Series(rows).duplicated()].unique()[:3]
        raise AssayInputError(f"{what}: duplicate model ids {', '.join(map(repr, dups))}")
    bad = ~(np.isnan(H) | (H == 0) | (H == 1))
    if bad.any():
        i, j = (int(a[0]) for a in np.nonzero(bad))
        raise AssayInputError(f"{what}: cell (model {rows[i]!r}, item {items[j]!r}) = {H[i, j]!r}; values must be 0 or 1 "
                              f"(binary correctness; {int(bad.sum())} bad cell(s))")
    if not allow_missing and np.isnan(H).any():
        i, j = (int(a[0]) for a in np.nonzero(np.isnan(H)))
        raise AssayInputError(f"{what}: missing answer for model {rows[i]!r}, item {items[j]!r} "
                              f"({int(np.isnan(H).sum())} missing); the estimand is the accuracy over the whole bank, so "
                              "offline evaluation needs every answer (query the rest live, or drop those items everywhere)")
    all_missing_rows = np.isnan(H).all(axis=1)
    if all_missing_rows.any():
        raise AssayInputError(f"{what}: model {rows[int(np.flatnonzero(all_missing_rows)[0])]!r} has no observed answer "
                              f"({int(all_missing_rows.sum())} such row(s)); drop it")
    return H, rows, items


def _align(items_hist: list[str], items_new: list[str], what: str) -> np.ndarray:
    """Column positions in the new table of each history item; every item must appear in both."""
    pos = {it: j for j, it in enumerate(items_new)}
    missing = [it for it in items_hist if it not in pos]
    extra = set(items_new) - set(items_hist)
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"{len(missing)} history item(s) absent from {what} (e.g. {', '.join(map(repr, missing[:3]))})")
        if extra:
            parts.append(f"{len(extra)} item(s) of {what} not in the history (e.g. {', '.join(map(repr, sorted(extra)[:3]))})")
        raise AssayInputError("item ids of the history and " + what + " do not match: " + "; ".join(parts))
    return np.array([pos[it] for it in items_hist])



def resolve_budget(budget: Any, N: int) -> tuple[int, str | None]:
    """A budget -> (number of queries n_b <= N, a note for the user or None).

    A float in (0, 1] is a fraction of the bank (1.0 = every question); an integer (or an integral float above
    1) is a number of queries. A budget of N or more means every question, asked once: the accuracy is then
    known exactly, and FAQ never samples past the bank.
    """
    if isinstance(budget, (bool, np.bool_)) or not isinstance(budget, (int, float, np.integer, np.floating)) \
            or not np.isfinite(budget) or budget <= 0:
        raise AssayInputError(f"budget must be a fraction of the bank in (0, 1] or a number of queries >= 2; got {budget!r}")
    if isinstance(budget, (float, np.floating)) and budget <= 1:
        n_b = int(np.floor(budget * N + 1e-9))
        if budget == 1:
            n_b = N
        if n_b < 2:
            raise AssayInputError(f"budget {float(budget):g} of {N} questions is {n_b} queries; FAQ needs at least 2 "
                                  f"(use at least {2 / N:.2g} or a count)")
    else:
        if float(budget) != int(budget):
            raise AssayInputError(f"budget {budget!r} is neither a fraction in (0, 1] nor a whole number of queries")
        n_b = int(budget)
        if n_b < 2:
            raise AssayInputError(f"budget must be at least 2 queries (the variance needs two); got {n_b}")
    if n_b > N:
        return N, (f"budget {n_b} is more than the {N} questions in the bank: every question is asked once and the "
                   "accuracy is exact")
    if n_b == N:
        return N, f"budget covers the whole bank ({N} questions): every question is asked once and the accuracy is exact"
    return n_b, None


def default_factor_model(seed: int = 0, shape: tuple[int, int] | None = None) -> FactorModel:
    """The factor model assay fits when none is given.

    Model-level 3-fold cross-validation (``cv_by="models"``, whole families held out) over k in {2, 4, 8, 16}
    (those the history supports: (models + items) k at most 1/20 of the observed entries, k at most a quarter
    of min(models, items)) and lambda in {1, 3, 10}, with a per-item intercept, warm starts along lambda and
    early stopping in the CV fits. On the 755 x 1,351 leaderboard history it takes well under a minute on 2
    cores and picks k = 8, lambda = 3.
    """
    ks: tuple[int, ...] = (2, 4, 8, 16)
    if shape is not None:
        m, n, nobs = shape[0], shape[1], (shape[2] if len(shape) > 2 else shape[0] * shape[1])
        ks = tuple(k for k in ks if (m + n) * k * 20 <= nobs and 4 * k <= min(m, n)) or (1,)
    return FactorModel(cv=3, cv_by="models", ks=ks, lambdas=(1.0, 3.0, 10.0), bias=True, seed=seed, max_iter=300,
                       cv_tol=1e-5)


def factor_cache_dir() -> Path:
    """Where fitted default factors are cached: ``$ASSAY_CACHE_DIR/factors`` or ``~/.cache/assay/factors``."""
    root = os.environ.get("ASSAY_CACHE_DIR")
    base = Path(root).expanduser() if root else Path.home() / ".cache" / "assay"
    return base / "factors"


def _history_hash(H: np.ndarray, rows: Sequence[str], items: Sequence[str], settings: str) -> str:
    h = hashlib.sha256()
    h.update(_FIT_VERSION.encode())
    h.update(settings.encode())
    h.update(np.where(np.isnan(H), -1, H).astype(np.int8).tobytes())
    h.update(repr(H.shape).encode())
    h.update("\x1f".join(map(str, rows)).encode())
    h.update("\x1e".join(map(str, items)).encode())
    return h.hexdigest()[:24]


def fit_factors(H: np.ndarray, rows: Sequence[str], items: Sequence[str], *, cache: bool = True,
                progress: Callable | None = None) -> tuple[FactorModel, dict]:
    """Fit :func:`default_factor_model` on a history matrix (or load it from the cache) -> (model, info).

    The fit is a function of the history alone (fixed internal seed, model families from the ``owner/`` part of
    the row ids), so it is cached under a hash of the history and its ids: the second run on the same history
    starts at once. ``info`` says whether the cache was used and where.
    """
    from .io import load_factors, save_factors

    nobs = int((~np.isnan(H)).sum())
    fm = default_factor_model(0, (H.shape[0], H.shape[1], nobs))
    settings = repr(sorted((k, v) for k, v in vars(fm).items()))
    key = _history_hash(H, rows, items, settings)
    path = factor_cache_dir() / f"{key}.npz"
    if cache and path.exists():
        try:
            cached = load_factors(path)
            if [str(c) for c in cached.col_labels_] == [str(c) for c in items]:
                return cached, {"cache": "hit", "path": str(path), "key": key}
        except AssayInputError:
            pass  # an unreadable cache entry is refitted and overwritten
    check_k(fm, H)
    groups = default_groups(rows)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # grid-edge notes are reported through summary()
        fm.fit(pd.DataFrame(H, index=list(rows), columns=list(items)), groups=groups, progress=progress)
    info = {"cache": "miss", "path": None, "key": key}
    if cache:
        try:
            save_factors(fm, path)
            os.chmod(path, 0o600)
            info["path"] = str(path)
        except OSError as e:  # a read-only home is not a reason to fail the evaluation
            info["cache"] = f"not written ({e.strerror or e})"
    return fm, info


def _factors(history, factors, *, cache=True, progress=None) -> tuple[FactorModel, np.ndarray | None, list[str], dict]:
    """Fitted factor model, the history matrix (aligned to the factors' items), its item ids and fit info."""
    if isinstance(history, FactorModel):
        factors, history = history, None
    if factors is not None and not isinstance(factors, FactorModel):
        raise AssayInputError(f"factors must be a FactorModel (fitted or not); got {type(factors).__name__}")
    H = None
    items = rows = None
    if history is not None:
        H, rows, items = as_matrix(history, "history")
    info: dict = {"cache": "not used"}
    if factors is None:
        if H is None:
            raise AssayInputError("give a history to fit the factor model on, or a fitted FactorModel")
        factors, info = fit_factors(H, rows, items, cache=cache, progress=progress)
    elif not hasattr(factors, "V_"):
        if H is None:
            raise AssayInputError("give a history to fit the factor model on, or a fitted FactorModel")
        check_k(factors, H)
        factors.fit(pd.DataFrame(H, index=rows, columns=items), progress=progress)
    fitted_items = [str(c) for c in factors.col_labels_]
    if items is not None and items != fitted_items:
        if sorted(items) != sorted(fitted_items):
            raise AssayInputError("the fitted factors and the history have different item ids")
        order = _align(fitted_items, items, "the history")
        H = H[:, order]
    empty = getattr(factors, "empty_cols_", np.array([], dtype=int))
    if len(empty):
        warnings.warn(f"{len(empty)} item(s) were never observed in the history; their predictions are 0.5 and FAQ "
                      "samples them by the uniform mixing only", stacklevel=3)
    return factors, H, fitted_items, info


def check_k(fm: FactorModel, H: np.ndarray) -> None:
    """Refuse latent dimensions the history cannot identify: k <= min(models, items) and at least as many
    observed entries as free parameters ((models + items) k)."""
    ks = list(fm.ks) if fm.cv is not None else [fm.k]
    m = int((~np.isnan(H)).any(axis=1).sum())
    n = int((~np.isnan(H)).any(axis=0).sum())
    nobs = int((~np.isnan(H)).sum())
    too_big = [int(k) for k in ks if int(k) > min(m, n) or (m + n) * int(k) > nobs]
    if too_big:
        limit = min(min(m, n), nobs // max(m + n, 1))
        fix = (f"use k <= {limit}" if limit >= 1 else
               "it cannot fit any factor model: give the answers of more historical models")
        raise AssayInputError(f"latent dimension k = {', '.join(map(str, too_big))} is more than this history supports "
                              f"({m} models, {n} items, {nobs} observed entries); {fix}")


def _item_means(H: np.ndarray | None, N: int) -> np.ndarray:
    """Historical per-question mean (observed entries; never-observed questions get the grand mean)."""
    if H is None:
        return np.full(N, 0.5)
    obs = ~np.isnan(H)
    cnt = obs.sum(axis=0)
    grand = np.nanmean(H)
    return np.where(cnt > 0, np.nansum(H, axis=0) / np.maximum(cnt, 1), grand)



def _params(params: FAQParams | Mapping | None, **kw) -> FAQParams:
    base = params if isinstance(params, FAQParams) else FAQParams(**dict(params or {}))
    given = {k: v for k, v in kw.items() if v is not None}
    return replace(base, **given) if given else base


def _check_alpha(alpha):
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.floating)) or not 0 < alpha < 1:
        raise AssayInputError(f"alpha must be in (0, 1) (0.05 = a 95% interval); got {alpha!r}")


# ----------------------------------------------------------------------------------------------------
# evaluate


class FAQResult(Result):
    """FAQ estimates and confidence intervals for new models' accuracy over the whole bank.

    Tables: ``estimates`` (main; one row per new model: estimate, low, high, width, se, the plug-in factor-model
    estimate, queries used and distinct questions, ``gain_vs_uniform`` (the estimated effective-sample-size gain
    over a uniform sample of the same size), ``interval`` (what kind of interval low-high is), and the true
    accuracy when every answer is known) and ``queries`` (one row per query: model, round, item, answer, q, phi and
    the increment's weight c_t; the estimate is sum c phi / sum c).
    """

    method = "faq"
    main_table = "estimates"

    @classmethod
    def _table_names(cls) -> tuple[str, ...]:
        return ("estimates", "queries")

    @property
    def estimates(self) -> pd.DataFrame:
        return self.tables["estimates"]

    def summary(self) -> str:
        p = self.params
        lines = [f"FAQ (assay {self.version}): {p.get('n_queries')} queries of {p.get('n_items')} questions "
                 f"({p.get('n_queries', 0) / max(p.get('n_items', 1), 1):.1%}), {int(round((1 - self.level['alpha']) * 100))}% CIs "
                 f"for the accuracy over the whole bank; factors k={self.info.get('factors', {}).get('k')}"]
        cols = [c for c in ("model", "estimate", "low", "high", "width", "truth", "n_queries", "gain_vs_uniform")
                if c in self.estimates]
        lines.append(self.estimates[cols].to_string(index=False, float_format=lambda x: f"{x:.4f}"))
        lines += [f"note: {w}" for w in self.warnings]
        return "\n".join(lines)


def _uniform_gain(est, se, n, N):
    """Estimated effective-sample-size gain over a uniform sample of the same size: the variance a simple random
    sample of n questions would have at the estimated accuracy, over FAQ's."""
    th = np.clip(np.asarray(est, dtype=float), 0.0, 1.0)
    n = np.asarray(n, dtype=float)
    v_unif = th * (1 - th) * np.maximum(1 - n / N, 0.0) / np.maximum(n, 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        g = np.where(np.asarray(se) > 0, v_unif / np.asarray(se, dtype=float) ** 2, np.nan)
    return g


def _live_meta(recorded, n_b, fm: FactorModel, prm: FAQParams, until_width, items: list[str]) -> dict:
    return {"seed": recorded, "n_queries": int(n_b), "factors": fm.fingerprint(), "params": prm.to_dict(),
            "until_width": until_width,
            "items": hashlib.sha256("\x1f".join(items).encode()).hexdigest()[:16]}


def evaluate(
    history,
    new,
    *,
    budget: float | int,
    seed=None,
    alpha: float = 0.05,
    factors: FactorModel | None = None,
    params: FAQParams | Mapping | None = None,
    beta0: float | None = None,
    rho: float | None = None,
    gamma: float | None = None,
    tau: float | None = None,
    variance: str | None = None,
    quantile: str | None = None,
    design: str | None = None,
    until_width: float | None = None,
    min_queries: int = 20,
    items: Sequence | None = None,
    cache: bool = True,
    progress: Callable[[int, int], None] | None = None,
    fit_progress: Callable | None = None,
) -> FAQResult:
    """Estimate new models' accuracy on the whole bank from ``budget`` adaptively chosen questions (FAQ, Alg. 1).

    Parameters
    ----------
    history : models x items 0/1 history (wide DataFrame, long ``model, item, score`` table, or array; NaN =
        missing), or a fitted :class:`FactorModel` (then ``history`` is only used for its factors).
    new : the new models' answers on the same items (a Series / one-row table for one model, a wide table for
        several: all run at once, independently), or a callable ``answer(item_id) -> 0/1`` that queries one
        model live (a :class:`~assay.faq.live.LiveAnswerer` also records the run's seed, budget and factors in its
        journal, and a resumed run must match them).
    budget : a float in (0, 1] is a fraction of the bank (1.0 = every question); an integer is a number of
        queries. N or more queries = every question once: the exact accuracy (no interval needed).
        With ``until_width`` it is the most that may be spent.
    seed : int / Generator / None. Resolved (and recorded) before anything else; it drives FAQ's draws only. The
        default factors do not depend on it (they are a function of the history), so a run is replayed from its
        recorded seed and history alone. A live run resumed without a seed reuses the seed it was started with.
    alpha : 1 - confidence level.
    factors : a FactorModel (fitted or to be fitted on ``history``); default: :func:`default_factor_model`,
        cached by a hash of the history (``cache=False`` refits).
    params / beta0, rho, gamma, tau, variance, quantile, design : the policy and interval (see FAQParams);
        defaults tau = 0.5, beta0 = 1, rho = gamma = 0, design "wor", variance "conservative", quantile "t".
    until_width : query until the anytime-valid interval is at most this wide (or the budget is spent), after
        at least ``min_queries`` queries. The reported interval is then the anytime-valid one, so stopping on
        the data keeps its coverage.
    items : item ids for a callable ``new`` (default: the history's items).
    progress : ``progress(done, total)`` after each round. fit_progress : ``fit_progress(done, total, info)`` during
        the factor fit (per fold and candidate).
    """
    _check_alpha(alpha)
    prm = _params(params, beta0=beta0, rho=rho, gamma=gamma, tau=tau, variance=variance, quantile=quantile,
                  design=design)
    if until_width is not None and not (isinstance(until_width, (int, float, np.floating)) and not isinstance(until_width, bool)
                                        and 0 < until_width <= 1):
        raise AssayInputError(f"until_width must be a width in (0, 1] on the accuracy scale; got {until_width!r}")
    if isinstance(min_queries, bool) or not isinstance(min_queries, (int, np.integer)) or min_queries < 2:
        raise AssayInputError(f"min_queries must be an integer >= 2; got {min_queries!r}")
    live = callable(new) and not isinstance(new, (pd.DataFrame, pd.Series, np.ndarray))
    notes: list[str] = []
    stored = new.recorded_meta() if live and hasattr(new, "recorded_meta") else None
    if stored and seed is None and stored.get("seed") is not None:
        seed = int(stored["seed"])
        notes.append(f"resumed run: using the seed it was started with ({seed})")
    recorded, ss = resolve_seed(seed)
    fm, H, hist_items, fit_info = _factors(history, factors, cache=cache, progress=fit_progress)
    N = len(hist_items)
    n_b, budget_note = resolve_budget(budget, N)
    if budget_note:
        notes.append(budget_note)
    rng = np.random.default_rng(ss)
    V, b = fm.V_, (fm.b_ if fm.bias else None)
    census = n_b >= N and (until_width is None or prm.design == "wr")
    if until_width is not None and n_b >= N and prm.design == "wr":
        notes.append("with replacement a budget of the whole bank is answered by asking every question once")

    if live:
        if items is not None and [str(i) for i in items] != hist_items:
            _align(hist_items, [str(i) for i in items], "items")
        if hasattr(new, "bind"):
            new.bind(_live_meta(recorded, n_b, fm, prm, until_width, hist_items))
        cache_ans: dict[int, float] = {}

        def ask(j: int) -> float:
            if j not in cache_ans:
                try:
                    z = new(hist_items[j])
                except AssayInputError:
                    raise
                except Exception as e:
                    from ..errors import AssayBackendError

                    if isinstance(e, AssayBackendError):
                        raise
                    raise AssayBackendError(f"querying item {hist_items[j]!r} failed: {type(e).__name__}: {e}") from e
                if z is None or (isinstance(z, float) and np.isnan(z)):
                    from ..errors import AssayBackendError
                    raise AssayBackendError(f"the answer to item {hist_items[j]!r} could not be scored (got {z!r}); "
                                            "FAQ needs a 0/1 answer for every question it draws: use a scoring policy "
                                            "that maps failures to wrong, or fix the endpoint")
                if z not in (0, 1, True, False):
                    raise AssayInputError(f"the answer to item {hist_items[j]!r} is {z!r}; answers must be 0 or 1")
                cache_ans[j] = float(z)
            return cache_ans[j]

        model_ids, truth = ["new"], None
        if census:
            Zc = np.empty((1, N))
            for j in range(N):
                Zc[0, j] = ask(j)
                if progress is not None:
                    progress(j + 1, N)
        else:
            run = run_faq(V, fm.prior_mean_, fm.prior_cov_, lambda t, I: np.array([ask(int(I[0]))]), n_b, n_models=1,
                          rng=rng, params=prm, alpha=alpha, b=b, until_width=until_width, min_queries=min_queries,
                          on_round=progress)
    else:
        Znew, model_ids, new_items = as_matrix(new, "new", allow_missing=False)
        Znew = Znew[:, _align(hist_items, new_items, "the new model's answers")]
        truth = Znew.mean(axis=1)
        if census:
            Zc = Znew
        else:
            run = run_faq(V, fm.prior_mean_, fm.prior_cov_, Znew, n_b, rng=rng, params=prm, alpha=alpha, b=b,
                          until_width=until_width, min_queries=min_queries, on_round=progress)

    M = len(model_ids)
    if census:
        exact = Zc.mean(axis=1)
        est = {"model": model_ids, "estimate": exact, "low": exact, "high": exact, "width": np.zeros(M),
               "se": np.zeros(M), "plugin": np.full(M, np.nan), "n_queries": np.full(M, N), "n_distinct": np.full(M, N),
               "gain_vs_uniform": np.full(M, np.nan), "interval": ["exact"] * M}
        queries = {"model": np.repeat(model_ids, N), "round": np.tile(np.arange(1, N + 1), M),
                   "item": np.tile(np.asarray(hist_items, dtype=object), M), "answer": Zc.ravel(),
                   "q": np.ones(M * N), "phi": np.full(M * N, np.nan), "weight": np.full(M * N, np.nan)}
        se_variants: dict = {}
    else:
        kind = "anytime-valid" if until_width is not None else (
            f"fixed-budget ({'Student t' if prm.quantile == 't' else 'normal'}, {prm.variance} variance)")
        gain = _uniform_gain(run.estimate, run.se, run.n_used, N)
        est = {"model": model_ids, "estimate": run.estimate, "low": run.lo, "high": run.hi, "width": run.hi - run.lo,
               "se": run.se, "plugin": run.plugin, "n_queries": run.n_used, "n_distinct": run.n_distinct,
               "gain_vs_uniform": gain, "interval": [kind] * M}
        if until_width is not None:
            est["reached_width"] = run.stopped
        used = np.arange(n_b)[None, :] < run.n_used[:, None]
        mrow, trow = np.nonzero(used)
        queries = {"model": np.asarray(model_ids, dtype=object)[mrow], "round": trow + 1,
                   "item": np.asarray(hist_items, dtype=object)[run.items[mrow, trow]],
                   "answer": run.answers[mrow, trow], "q": run.q_chosen[mrow, trow], "phi": run.phi[mrow, trow],
                   "weight": run.weights[trow]}
        se_variants = {k: [float(x) for x in v] for k, v in run.ses.items()}
        # plain-words warnings
        if n_b < MIN_VALIDATED_QUERIES and until_width is None:
            notes.append(f"{n_b} queries is below the {MIN_VALIDATED_QUERIES} from which FAQ's coverage was shown on "
                         "models absent from the history (assay study faq-leaderboard); treat this interval as "
                         "approximate, or raise the budget")
        low_gain = np.isfinite(gain) & (gain < 1.0)
        if low_gain.any():
            who = (f"model {model_ids[int(np.flatnonzero(low_gain)[0])]!r}" if M == 1 else
                   f"{int(low_gain.sum())} of {M} models")
            notes.append(f"no saving for {who}: the interval is about as wide as a uniform sample of the same size "
                         f"would give (estimated gain {np.nanmin(gain[low_gain]):.2f}x). Its answers do not follow the "
                         "history's pattern (e.g. a model family the history does not contain); the interval is still "
                         "valid")
        if until_width is not None and not run.stopped.all():
            notes.append(f"{int((~run.stopped).sum())} of {M} model(s) spent the whole budget ({n_b} queries) before "
                         f"their interval was {until_width:g} wide")
        if prm.design == "naive-wor":
            notes.append("design 'naive-wor' is the paper's Appendix B ablation: its interval is NOT valid")
    if truth is not None:
        est["truth"] = truth
        est["covered"] = (np.asarray(est["low"]) <= truth) & (truth <= np.asarray(est["high"]))
    info = {
        "factors": {**fm.summary(), "fingerprint": fm.fingerprint(), "cache": fit_info.get("cache"),
                    "cache_path": fit_info.get("path")},
        "se_variants": se_variants,
    }
    meaning = (f"each interval covers that model's accuracy over all {N} questions with probability about "
               f"{1 - alpha:.0%}" + (" at whatever round the run stopped (anytime-valid confidence sequence)"
                                     if until_width is not None else " (martingale CLT, Theorem 3.1)"))
    if census:
        meaning = f"every one of the {N} questions was asked: the accuracy is exact"
    res = FAQResult(
        params={"budget": budget, "n_queries": int(n_b), "n_items": N, **prm.to_dict(), "live": live,
                "until_width": until_width, "min_queries": min_queries if until_width is not None else None},
        level={"alpha": alpha, "meaning": meaning},
        n=int(n_b), seed=recorded, tables={"estimates": est, "queries": queries}, info={**info, "warnings": notes},
    )
    res.factors_ = fm  # the fitted factors (not serialised): save them with assay.faq.io.save_factors
    return res


# ----------------------------------------------------------------------------------------------------
# protocol


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

    split_by : "auto" (whole model families, the ``owner`` of ``owner/name`` ids, when the ids have one; else
        "random"), "random" (models independently), or one group label per row. Whole groups stay together, so
        the new models of a split belong to families the history of that split does not contain.
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


def _grid_list(grid: Mapping[str, Sequence]) -> list[dict]:
    keys = list(grid)
    return [dict(zip(keys, vals)) for vals in itertools.product(*(grid[k] for k in keys))]


PAPER_FAQ = {"beta0": 1.0, "rho": 0.0, "gamma": 0.0, "tau": 0.05, "design": "wr", "variance": "paper",
             "quantile": "normal"}


def _run_method(name: str, cfg: dict, Z: np.ndarray, n_b: int, rng: np.random.Generator, ctx: dict,
                alpha: float) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """One method on a chunk of models -> {variant label: (estimate, lo, hi)}.

    FAQ returns its main interval under "" and, with ``cfg["variants"]``, the other intervals of the same draws.
    """
    if name in ("faq", "faq_paper"):
        prm = FAQParams(**{k: cfg[k] for k in ("beta0", "rho", "gamma", "tau", "design", "variance", "quantile")
                           if k in cfg})
        r = run_faq(ctx["V"], ctx["mu"], ctx["Sigma"], Z, n_b, rng=rng, params=prm, alpha=alpha, b=ctx["b"])
        out = {"": (r.estimate, r.lo, r.hi)}
        for var in cfg.get("variants", ()):
            if var == "cs":
                out["cs"] = (r.estimate, r.cs_lo, r.cs_hi)
            else:
                v, q = var.split("|")
                if v in r.ses:
                    lo, hi = interval(r, alpha, v, q)
                    out[var] = (r.estimate, lo, hi)
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


def _evaluate_jobs(ctx, Z, theta, n_b_list, jobs, seeds_ss, alpha, chunk, workers, progress, budget_ids=None,
                   split_id=0):
    """Run jobs for every budget x seed x chunk; return {(budget index, job index, variant): (cover[S, M], width[S, M])}."""
    import functools

    from ..parallel import get_executor

    M = Z.shape[0]
    chunks = [slice(i, min(i + chunk, M)) for i in range(0, M, chunk)]
    tasks, keys = [], []
    for bi, n_b in enumerate(n_b_list):
        for si in range(len(seeds_ss)):
            for ci, sl in enumerate(chunks):
                tasks.append((sl.start, sl.stop, n_b, jobs, alpha))
                keys.append((bi, si, ci))
    bid = list(range(len(n_b_list))) if budget_ids is None else list(budget_ids)
    # one child seed sequence per (split, seed, budget, chunk), derived from the seed's own sequence so adding
    # budgets, chunks or splits never changes other cells
    seed_for = [np.random.SeedSequence(seeds_ss[si].entropy, spawn_key=seeds_ss[si].spawn_key + (split_id, bid[bi], ci))
                for bi, si, ci in keys]
    fn = functools.partial(_chunk_task, ctx=ctx, Z_all=Z)
    results = get_executor(workers).map(fn, tasks, seed_for, progress)
    out: dict = {}
    for (bi, si, ci), res in zip(keys, results):
        sl = chunks[ci]
        for ji, variants in enumerate(res):
            for var, (lo, hi) in variants.items():
                key = (bi, ji, var)
                if key not in out:
                    out[key] = (np.zeros((len(seeds_ss), M), dtype=bool), np.zeros((len(seeds_ss), M)))
                cov, wid = out[key]
                cov[si, sl] = (lo <= theta[sl]) & (theta[sl] <= hi)
                wid[si, sl] = hi - lo
    return out


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


def _fit_for(H, rows, items, factors, cache, fit_progress) -> FactorModel:
    """Factors for one split's history: the default (cached) fit, or a fresh fit with the given settings."""
    if factors is None:
        fm, _ = fit_factors(H, rows, items, cache=cache, progress=fit_progress)
        return fm
    fm = FactorModel(**{k: getattr(factors, k) for k in ("k", "weight_decay", "bias", "max_iter", "tol", "seed", "cv",
                                                          "ks", "lambdas", "one_se", "holdout", "overfit_ratio",
                                                          "cv_by", "reveal", "cv_tol")})
    check_k(fm, H)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        fm.fit(pd.DataFrame(H, index=list(rows), columns=list(items)),
               groups=default_groups(rows) if fm.cv_by == "models" else None, progress=fit_progress)
    return fm


def protocol(
    history,
    new_models=None,
    *,
    budgets: Sequence[float | int] = (0.025, 0.05, 0.1, 0.25),
    seeds: Iterable[int] | int = 10,
    seed=0,
    alpha: float = 0.05,
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
    progress: Callable[[int, int], None] | None = None,
    fit_progress: Callable | None = None,
) -> FAQProtocolResult:
    """Coverage, width and ESS of FAQ and its baselines on new models that nothing was fitted or tuned on.

    Without ``new_models``, the history's models are cut into ``splits`` model-level folds (:func:`model_splits`:
    whole model families together); each fold in turn is the set of new models, and the factors (and, with
    ``tune``, the hyperparameters) come from the other folds only. With ``new_models``, they are the new models
    and the whole history is the history (one split). Every new model is evaluated once per seed and budget;
    its true accuracy is the mean of its full row.

    methods : any of "faq" (assay's defaults, or ``params["faq"]``), "faq_paper" (the paper's Algorithm 1 as
        selected in its released logs: with replacement, tau = 0.05, eq. 8 variance, normal quantile), "uniform"
        (simple random sample, sample mean, Wilson interval: the honest reference), "ht_uniform" (the paper's
        reference), "aipw" (Zrnic & Candès active inference with the historical per-question mean), "ai_factor"
        (the same with the online factor model). The two uniform references are always run.
    variants : add rows for FAQ's other intervals on the same draws: ``faq:increments|t`` (no model-variance
        floor), ``faq:conservative|normal`` (normal quantile) and ``faq:cs`` (the anytime-valid interval).
    tune : choose FAQ's (beta0, rho, gamma, tau) and the baselines' settings per budget on validation models:
        one model-level fold of each split's history (so validation models, like the test models, come from
        families the validation factors were not fitted on). The chosen candidate maximises ESS subject to
        validation coverage >= 1 - alpha - one Monte Carlo standard error. The released code tuned FAQ on the
        last 20% of history rows by width alone and the baselines post hoc on the test models.
    factors : an UNFITTED FactorModel whose settings are refitted on each split's history (default: the
        default model-level CV fit, cached); a fitted one only with explicit ``new_models``.
    seeds : an int S (= range(S)) or the seed indices; ``seed`` is the master seed (it also places the splits).
        Every (split, seed, budget, chunk of ``chunk`` models) has its own child seed, so results do not depend on
        ``workers``.
    """
    _check_alpha(alpha)
    methods = list(methods)
    for m in methods:
        if m not in METHODS + ("faq_paper",):
            raise AssayInputError(f"unknown method {m!r}; use {', '.join(METHODS + ('faq_paper',))}")
    methods = [m for m in ("uniform", "ht_uniform") if m not in methods] + methods
    seeds = list(range(seeds)) if isinstance(seeds, (int, np.integer)) else [int(s) for s in seeds]
    if not seeds:
        raise AssayInputError("seeds is empty")
    if isinstance(history, FactorModel):
        raise AssayInputError("protocol needs the history table (for the splits and the baselines' per-question "
                              "means); pass a FactorModel as factors=")
    H_all, rows_all, items = as_matrix(history, "history")
    recorded, master = resolve_seed(seed)
    split_ss, tune_ss, test_ss_root = master.spawn(3)
    if new_models is None:
        if factors is not None and hasattr(factors, "V_"):
            raise AssayInputError("a fitted FactorModel was fitted on models that the splits would call new; pass "
                                  "an unfitted one (its settings are refitted per split) or none")
        split_list = model_splits(rows_all, splits, split_by, seed=split_ss)
        Zsrc, src_rows = H_all, rows_all
        if np.isnan(H_all).any():
            raise AssayInputError("the history has missing answers; the true accuracy of a held-out model needs its "
                                  "full row, so split a complete table (or pass new_models explicitly)")
    else:
        Zn, new_rows, new_items = as_matrix(new_models, "new_models", allow_missing=False)
        Zn = Zn[:, _align(items, new_items, "new_models")]
        split_list = [(np.arange(H_all.shape[0]), None)]
        Zsrc, src_rows = Zn, new_rows
    N = len(items)
    n_b_list = [resolve_budget(b, N)[0] for b in budgets]
    params = dict(params or {})
    base_faq = _params(params.get("faq"))
    grids = dict(grids or {})
    test_ss = [np.random.SeedSequence(test_ss_root.entropy, spawn_key=test_ss_root.spawn_key + (s,)) for s in seeds]
    faq_variants = ("increments|t", "conservative|normal", "cs") if variants else ()

    # one progress count over the whole protocol (splits x budgets x seeds x chunks of models)
    n_new = [Zsrc.shape[0] if ni is None else len(ni) for _, ni in split_list]
    total = sum(len(n_b_list) * len(seeds) * -(-m // chunk) for m in n_new)
    done = [0]

    def step_progress(d, t):
        if progress is not None:
            progress(done[0] + d, total)

    acc: dict[tuple[int, str], list] = {}  # (budget index, row name) -> list of (cov[S, M], wid[S, M]) per split
    per_model, tuning_rows, split_info = [], [], []
    for si, (hist_idx, new_idx) in enumerate(split_list):
        H = H_all[hist_idx]
        hrows = [rows_all[i] for i in hist_idx]
        if new_idx is None:
            Znew, nrows = Zsrc, src_rows
        else:
            Znew, nrows = Zsrc[new_idx], [src_rows[i] for i in new_idx]
        theta = Znew.mean(axis=1)
        chosen: dict[tuple[int, str], dict] = {}
        if tune:
            inner = model_splits(hrows, 4, split_by if isinstance(split_by, str) else
                                 np.asarray(split_by)[hist_idx], seed=tune_ss.spawn(1)[0])
            tr_i, val_i = inner[0]
            val_i = val_i[~np.isnan(H[val_i]).any(axis=1)]
            if val_i.size < 10:
                raise AssayInputError(f"tuning needs at least 10 fully observed validation models; split {si} has "
                                      f"{val_i.size} (use tune=False)")
            fm_v = _fit_for(H[tr_i], [hrows[i] for i in tr_i], items, factors, cache, fit_progress)
            ctx_v = _context(fm_v, H[tr_i])
            Zval = H[val_i]
            theta_v = Zval.mean(axis=1)
            val_ss = tune_ss.spawn(val_seeds)
            se_cov = float(np.sqrt(alpha * (1 - alpha) / (Zval.shape[0] * val_seeds)))
            for m in methods:
                if m in ("uniform", "ht_uniform", "faq_paper"):
                    continue
                jobs = _jobs_for(m, grids.get(m), base_faq)
                res = _evaluate_jobs(ctx_v, Zval, theta_v, n_b_list, jobs, val_ss, alpha, chunk, workers, None,
                                     split_id=si)
                for bi in range(len(n_b_list)):
                    cands = [(ji, float(cov.mean()), float(wid.mean())) for (b2, ji, var), (cov, wid) in res.items()
                             if b2 == bi and var == ""]
                    ok = [c for c in cands if c[1] >= 1 - alpha - se_cov]
                    pick = min(ok, key=lambda c: c[2]) if ok else max(cands, key=lambda c: c[1])
                    chosen[(bi, m)] = jobs[pick[0]][1]
                    for ji, cv_, w_ in cands:
                        tuning_rows.append({"split": si, "budget": budgets[bi], "n_queries": n_b_list[bi], "method": m,
                                            **{f"param_{k}": v for k, v in jobs[ji][1].items()},
                                            "val_coverage": cv_, "val_mean_width": w_, "selected": ji == pick[0]})
        if new_idx is None and factors is not None and hasattr(factors, "V_"):
            fm, H, _, _ = _factors(pd.DataFrame(H, index=hrows, columns=items), factors)
        else:
            fm = _fit_for(H, hrows, items, factors, cache, fit_progress)
        ctx = _context(fm, H)
        split_info.append({"split": si, "n_history": int(H.shape[0]), "n_new": int(Znew.shape[0]),
                           "k": fm.k_, "weight_decay": fm.weight_decay_, "fingerprint": fm.fingerprint()})
        for bi, n_b in enumerate(n_b_list):
            jobs = []
            for m in methods:
                if m == "faq":
                    cfg = chosen.get((bi, m), base_faq.to_dict())
                    jobs.append(("faq", {**cfg, "variants": faq_variants}))
                elif m == "faq_paper":
                    jobs.append(("faq_paper", dict(PAPER_FAQ)))
                elif m == "aipw":
                    jobs.append(("aipw", chosen.get((bi, m), {"policy": "neyman", "tau": 0.25, **dict(params.get("aipw") or {})})))
                elif m == "ai_factor":
                    jobs.append(("ai_factor", chosen.get((bi, m), {"tau": 0.25, **dict(params.get("ai_factor") or {})})))
                else:
                    jobs.append((m, {}))
            res = _evaluate_jobs(ctx, Znew, theta, [n_b], jobs, test_ss, alpha, chunk, workers, step_progress,
                                 budget_ids=[bi], split_id=si)
            done[0] += len(seeds) * -(-Znew.shape[0] // chunk)
            for (b2, ji, var), (cov, wid) in res.items():
                name = jobs[ji][0] + (f":{var}" if var else "")
                acc.setdefault((bi, name), []).append((cov, wid, jobs[ji][1]))
                per_model.append(pd.DataFrame({"split": si, "budget": budgets[bi], "method": name, "model": nrows,
                                               "theta": theta, "coverage": cov.mean(axis=0),
                                               "mean_width": wid.mean(axis=0)}))

    rows = []
    for bi, n_b in enumerate(n_b_list):
        wu = np.concatenate([w.mean(axis=1) for _, w, _ in acc[(bi, "uniform")]])
        wh = np.concatenate([w.mean(axis=1) for _, w, _ in acc[(bi, "ht_uniform")]])
        for (b2, name), lst in acc.items():
            if b2 != bi:
                continue
            cov_ps = np.concatenate([c.mean(axis=1) for c, _, _ in lst])  # per (split, seed)
            w_ps = np.concatenate([w.mean(axis=1) for _, w, _ in lst])
            cov_all = np.concatenate([c.ravel() for c, _, _ in lst])
            per_model_cov = np.concatenate([c.mean(axis=0) for c, _, _ in lst])
            cfg = {k: v for k, v in lst[0][2].items() if k != "variants"}
            if name.startswith("faq:"):
                var = name.split(":", 1)[1]
                if var == "cs":
                    cfg["interval"] = "anytime-valid"
                else:
                    cfg["variance"], cfg["quantile"] = var.split("|")
            rows.append({
                "budget": budgets[bi], "n_queries": n_b, "method": name,
                "coverage": float(cov_all.mean()),
                "coverage_se": float(cov_ps.std(ddof=1) / np.sqrt(len(cov_ps))) if len(cov_ps) > 1 else float("nan"),
                "min_model_coverage": float(per_model_cov.min()),
                "mean_width": float(w_ps.mean()),
                "ess_vs_uniform_mean": float(np.mean((wu / w_ps) ** 2)),
                "ess_vs_ht_uniform": float(np.mean((wh / w_ps) ** 2)),
                "params": ", ".join(f"{k}={v}" for k, v in cfg.items()),
            })
    order = {m: i for i, m in enumerate(["faq", "faq:cs", "faq:increments|t", "faq:conservative|normal", "faq_paper",
                                         "uniform", "ht_uniform", "aipw", "ai_factor"])}
    table = pd.DataFrame(rows)
    table = table.assign(_o=table["method"].map(lambda m: order.get(m, 99))).sort_values(["n_queries", "_o"],
                                                                                       kind="stable").drop(columns="_o")
    n_new = sum(s["n_new"] for s in split_info)
    return FAQProtocolResult(
        params={"budgets": list(budgets), "n_queries": n_b_list, "methods": methods, "n_new": int(n_new),
                "n_history": int(H_all.shape[0]), "n_items": N, "n_seeds": len(seeds), "n_splits": len(split_list),
                "split_by": split_by if isinstance(split_by, str) else "given", "tune": tune, "val_seeds": val_seeds,
                "chunk": chunk, "faq": base_faq.to_dict()},
        level={"alpha": alpha, "meaning": f"nominal coverage {1 - alpha:.0%} of each new model's accuracy over the bank"},
        n=int(n_new), seed=recorded,
        tables={"table": table.reset_index(drop=True), "per_model": pd.concat(per_model, ignore_index=True),
                "tuning": pd.DataFrame(tuning_rows)},
        info={"splits": split_info, "factors": {"per_split": split_info}},
    )
