"""Public FAQ functions: :func:`evaluate` (one or more new models) and :func:`protocol` (the validation experiment).

Data: a history of 0/1 answers (models x items, NaN = missing; wide DataFrame, long ``model, item, score``
table, or array) and new models' answers on the same items. Items are matched by id (as strings).

Defaults and what they were validated on (``assay study faq-leaderboard``; see the README): the factors are
fitted by model-level cross-validation (whole model families held out, the criterion being how well the
factors predict a held-out model after FAQ has seen 10% of its answers), FAQ samples WITHOUT replacement
(:mod:`assay.faq.core`, ``design="wor"``), tau = 0.5, the ``conservative`` variance, a model whose answers do
not follow the history falls back to uniform sampling (``fallback=0.05``), and the floor of the fixed-budget
interval's standard error is learnt on held-out families of the history (:mod:`assay.faq.calibrate`; the
plain conservative Student t interval when the history is too small), which also gives the expected coverage
and saving before any query (:func:`expect`).
On families of leaderboard models never used to fit or tune anything this covered 94.8-95.4% at every budget
from 2.5% to 25% of the bank; the numbers are in docs/faq.md.
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

from ..data.faq import (FAQMatrix, align_items, as_matrix, int8_bytes, observed, prepare_answers, prepare_protocol,
                        to_codes)
from ..errors import AssayInputError
from ..results import Result, build, level_alias
from ..seeds import resolve_seed
from . import baselines as bl
from .core import VARIANCES, FAQEstimate, FAQParams, check_stopping, estimate, interval, run_faq, uniform_gain  # noqa: F401
from .factor import FactorModel, default_groups

__all__ = ["evaluate", "expect", "plain_words", "protocol", "FAQResult", "FAQProtocolResult", "as_matrix", "resolve_budget",
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

#: from this many observed history entries on, the default fit's cross-validation runs on 2 processes (the paper's
#: 2,212 x 12,032 history has 26.6 million; the 755 x 1,351 leaderboard one 1 million, where a process costs more
#: than it saves)
PARALLEL_CV_ENTRIES = 4_000_000

#: bump when the default factor fit changes, so cached fits from older versions are not reused
_FIT_VERSION = "faq-factors-5"


# ----------------------------------------------------------------------------------------------------
# inputs (the tables -> arrays step lives in assay.data.faq; these names stay importable from here)

_align = align_items
_uniform_gain = uniform_gain


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
    n_jobs = 1
    if shape is not None:
        m, n, nobs = shape[0], shape[1], (shape[2] if len(shape) > 2 else shape[0] * shape[1])
        ks = tuple(k for k in ks if (m + n) * k * 20 <= nobs and 4 * k <= min(m, n)) or (1,)
        if nobs >= PARALLEL_CV_ENTRIES:
            n_jobs = 2  # same numbers as one process (FactorModel n_jobs); only the time changes
    return FactorModel(cv=3, cv_by="models", ks=ks, lambdas=(1.0, 3.0, 10.0), bias=True, seed=seed, max_iter=300,
                       cv_tol=1e-5, n_jobs=n_jobs)


def factor_cache_dir() -> Path:
    """Where fitted default factors are cached: ``$ASSAY_CACHE_DIR/factors`` or ``~/.cache/assay/factors``."""
    root = os.environ.get("ASSAY_CACHE_DIR")
    base = Path(root).expanduser() if root else Path.home() / ".cache" / "assay"
    return base / "factors"


def _history_hash(H: np.ndarray, rows: Sequence[str], items: Sequence[str], settings: str) -> str:
    h = hashlib.sha256()
    h.update(_FIT_VERSION.encode())
    h.update(settings.encode())
    h.update(int8_bytes(H))
    h.update(repr(H.shape).encode())
    h.update("\x1f".join(map(str, rows)).encode())
    h.update("\x1e".join(map(str, items)).encode())
    return h.hexdigest()[:24]


def fit_factors(H: np.ndarray, rows: Sequence[str], items: Sequence[str], *, cache: bool = True,
                progress: Callable | None = None) -> tuple[FactorModel, dict]:
    """Fit :func:`default_factor_model` on a history matrix (float, NaN = missing, or int8 codes with -1 = missing:
    ``as_matrix(..., codes=True)``) (or load it from the cache) -> (model, info).

    The fit is a function of the history alone (fixed internal seed, model families from the ``owner/`` part of
    the row ids), so it is cached under a hash of the history and its ids: the second run on the same history
    starts at once. ``info`` says whether the cache was used and where.
    """
    from .io import load_factors, save_factors

    H = to_codes(H)  # held as int8 from here on (the cache key hashes the same bytes either way)
    nobs = int((H >= 0).sum())
    fm = default_factor_model(0, (H.shape[0], H.shape[1], nobs))
    settings = repr(sorted((k, v) for k, v in vars(fm).items() if k != "n_jobs"))  # n_jobs: same numbers
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
        fm.fit(FAQMatrix(H, list(rows), list(items)), groups=groups, progress=progress)
    info = {"cache": "miss", "path": None, "key": key}
    if cache:
        # written whole under a name of this process's, then renamed: a process reading the cache (or fitting the
        # same history at the same time) never sees half a file
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        try:
            save_factors(fm, tmp)
            os.chmod(tmp, 0o600)
            tmp.replace(path)
            info["path"] = str(path)
        except OSError as e:  # a read-only home is not a reason to fail the evaluation
            tmp.unlink(missing_ok=True)
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
        H, rows, items = as_matrix(history, "history", codes=True)  # int8 codes, -1 = missing
    info: dict = {"cache": "not used", "rows": rows}
    if factors is None:
        if H is None:
            raise AssayInputError("give a history to fit the factor model on, or a fitted FactorModel")
        factors, info = fit_factors(H, rows, items, cache=cache, progress=progress)
        info["rows"] = rows
    elif not hasattr(factors, "V_"):
        if H is None:
            raise AssayInputError("give a history to fit the factor model on, or a fitted FactorModel")
        check_k(factors, H)
        factors.fit(FAQMatrix(H, rows, items), progress=progress)
    fitted_items = [str(c) for c in factors.col_labels_]
    if items is not None and items != fitted_items:
        if sorted(items) != sorted(fitted_items):
            raise AssayInputError("the fitted factors and the history have different item ids")
        order = _align(fitted_items, items, "the history")
        H = H[:, order]
    note = _unobserved_note(factors)
    if note:
        warnings.warn(note, stacklevel=3)
    return factors, H, fitted_items, info


def _unobserved_note(fm: FactorModel) -> str | None:
    empty = getattr(fm, "empty_cols_", np.array([], dtype=int))
    if not len(empty):
        return None
    return (f"{len(empty)} item(s) were never observed in the history; their predictions are 0.5 and FAQ samples "
            "them by the uniform mixing only")


def check_k(fm: FactorModel, H: np.ndarray) -> None:
    """Refuse latent dimensions the history cannot identify: k <= min(models, items) and at least as many
    observed entries as free parameters ((models + items) k)."""
    ks = list(fm.ks) if fm.cv is not None else [fm.k]
    obs = observed(H)
    m = int(obs.any(axis=1).sum())
    n = int(obs.any(axis=0).sum())
    nobs = int(obs.sum())
    too_big = [int(k) for k in ks if int(k) > min(m, n) or (m + n) * int(k) > nobs]
    if too_big:
        limit = min(min(m, n), nobs // max(m + n, 1))
        fix = (f"use k <= {limit}" if limit >= 1 else
               "it cannot fit any factor model: give the answers of more historical models")
        raise AssayInputError(f"latent dimension k = {', '.join(map(str, too_big))} is more than this history supports "
                              f"({m} models, {n} items, {nobs} observed entries); {fix}")


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



def _params(params: FAQParams | Mapping | None, **kw) -> FAQParams:
    base = params if isinstance(params, FAQParams) else FAQParams(**dict(params or {}))
    given = {k: v for k, v in kw.items() if v is not None}
    return replace(base, **given) if given else base


def _check_flag(value, name: str) -> None:
    if not isinstance(value, (bool, np.bool_)):
        raise AssayInputError(f"{name} must be True or False; got {value!r}")


def _check_alpha(alpha):
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.floating)) or not 0 < alpha < 1:
        raise AssayInputError(f"alpha must be in (0, 1) (0.05 = a 95% interval); got {alpha!r}")


# ----------------------------------------------------------------------------------------------------
# evaluate


class FAQResult(Result):
    """FAQ estimates and confidence intervals for new models' accuracy over the whole bank.

    Tables: ``estimates`` (main; one row per new model: estimate, ci_low, ci_high, width, se, the plug-in
    factor-model estimate, queries used and distinct questions, ``gain_vs_uniform`` (the estimated
    effective-sample-size gain over a uniform sample of the same size), ``interval`` (what kind of interval
    ci_low-ci_high is), and the true accuracy when every answer is known) and ``queries`` (one row per query: model,
    round, item, answer, q, phi and the increment's weight c_t; the estimate is sum c phi / sum c).
    ``confidence_interval()`` returns the intervals, one per model.
    """

    method = "faq"
    main_table = "estimates"

    @classmethod
    def _table_names(cls) -> tuple[str, ...]:
        return ("estimates", "queries")

    @property
    def estimates(self) -> pd.DataFrame:
        return self.tables["estimates"]

    def _restore(self) -> None:
        # results written before the columns were named ci_low / ci_high
        est = self._tables.get("estimates")
        if isinstance(est, pd.DataFrame) and {"low", "high"} <= set(est.columns) and "ci_low" not in est.columns:
            self._tables["estimates"] = est.rename(columns={"low": "ci_low", "high": "ci_high"})

    def summary(self) -> str:
        p = self.params
        lines = [f"FAQ (assay {self.version}): {p.get('n_queries')} queries of {p.get('n_items')} questions "
                 f"({p.get('n_queries', 0) / max(p.get('n_items', 1), 1):.1%}), {int(round((1 - self.level['alpha']) * 100))}% CIs "
                 f"for the accuracy over the whole bank; factors k={self.info.get('factors', {}).get('k')}"]
        cols = [c for c in ("model", "estimate", "ci_low", "ci_high", "width", "truth", "n_queries", "gain_vs_uniform")
                if c in self.estimates]
        lines.append(self.estimates[cols].to_string(index=False, float_format=lambda x: f"{x:.4f}"))
        lines += [f"note: {w}" for w in self.warnings]
        return "\n".join(lines)


def _live_meta(recorded, n_b, fm: FactorModel, prm: FAQParams, until_width, items: list[str]) -> dict:
    return {"seed": recorded, "n_queries": int(n_b), "factors": fm.fingerprint(), "params": prm.to_dict(),
            "until_width": until_width,
            "items": hashlib.sha256("\x1f".join(items).encode()).hexdigest()[:16]}


def _live_answer(new: Callable, hist_items: list[str]) -> Callable[[int, np.ndarray], np.ndarray]:
    """The core's ``answer(t, items)`` for one model queried live through ``new(item_id) -> 0/1``: each question is
    asked at most once (answers are remembered), and a failed or unscorable answer stops the run with a clear
    error."""
    from ..errors import AssayBackendError

    cache_ans: dict[int, float] = {}

    def ask(j: int) -> float:
        if j not in cache_ans:
            try:
                z = new(hist_items[j])
            except (AssayInputError, AssayBackendError):
                raise
            except Exception as e:
                raise AssayBackendError(f"querying item {hist_items[j]!r} failed: {type(e).__name__}: {e}") from e
            if z is None or (isinstance(z, float) and np.isnan(z)):
                raise AssayBackendError(f"the answer to item {hist_items[j]!r} could not be scored (got {z!r}); "
                                        "FAQ needs a 0/1 answer for every question it draws: use a scoring policy "
                                        "that maps failures to wrong, or fix the endpoint")
            if z not in (0, 1, True, False):
                raise AssayInputError(f"the answer to item {hist_items[j]!r} is {z!r}; answers must be 0 or 1")
            cache_ans[j] = float(z)
        return cache_ans[j]

    return lambda t, I: np.array([ask(int(I[0]))])


def _interval_kind(est: FAQEstimate, prm: FAQParams, until_width, calibrated: bool | None = None) -> str:
    if est.exact:
        return "exact"
    if until_width is not None:
        return "anytime-valid"
    q = "calibrated on the history" if calibrated else ("Student t" if prm.quantile == "t" else "normal")
    return f"fixed-budget ({q}, {prm.variance} variance)"


def _faq_tables(est: FAQEstimate, model_ids: list[str], hist_items: list[str], kind: str, until_width,
                truth: np.ndarray | None) -> dict[str, dict]:
    """The ``estimates`` and ``queries`` tables of a :class:`FAQResult` from the core's output."""
    M = len(model_ids)
    N = len(hist_items)
    out = {"model": model_ids, "estimate": est.estimate, "ci_low": est.ci_low, "ci_high": est.ci_high,
           "width": np.zeros(M) if est.exact else est.ci_high - est.ci_low, "se": est.se, "plugin": est.plugin,
           "n_queries": est.n_queries, "n_distinct": est.n_distinct, "gain_vs_uniform": est.gain_vs_uniform,
           "interval": [kind] * M}
    if est.exact:
        queries = {"model": np.repeat(model_ids, N), "round": np.tile(np.arange(1, N + 1), M),
                   "item": np.tile(np.asarray(hist_items, dtype=object), M), "answer": est.answers.ravel(),
                   "q": np.ones(M * N), "phi": np.full(M * N, np.nan), "weight": np.full(M * N, np.nan)}
    else:
        if until_width is not None:
            out["reached_width"] = est.reached_width
        if est.fell_back is not None:
            out["uniform_from"] = est.fell_back
        n = est.items.shape[1]
        used = np.arange(n)[None, :] < est.n_queries[:, None]
        mrow, trow = np.nonzero(used)
        queries = {"model": np.asarray(model_ids, dtype=object)[mrow], "round": trow + 1,
                   "item": np.asarray(hist_items, dtype=object)[est.items[mrow, trow]],
                   "answer": est.answers[mrow, trow], "q": est.q[mrow, trow], "phi": est.phi[mrow, trow],
                   "weight": est.weights[trow]}
    if truth is not None:
        out["truth"] = truth
        out["covered"] = (np.asarray(out["ci_low"]) <= truth) & (truth <= np.asarray(out["ci_high"]))
    return {"estimates": out, "queries": queries}


def plain_words(*, n_queries: int, gain=None, expected: dict | None = None, model_ids: Sequence[str] | None = None,
                until_width=None, calibrated: bool | None = None, fell_back=None, design: str = "wor") -> list[str]:
    """The notes every FAQ output carries beside its numbers (evaluate, protocol, the studies, report and JSON).

    n_queries : the budget in questions. gain : realised or estimated effective-sample-size gain over uniform
    sampling, per model (evaluate) or one number (protocol). expected : :meth:`Calibration.summary` (what the
    history predicts before any query), or None when the history cannot say. calibrated : whether the interval
    was calibrated on the history (None: not applicable). fell_back : per model, the round from which
    it was sampled uniformly (0 = never).
    """
    notes: list[str] = []
    ids = list(model_ids) if model_ids is not None else None
    if until_width is None and n_queries < MIN_VALIDATED_QUERIES and not calibrated:
        notes.append(f"{n_queries} queries is below the {MIN_VALIDATED_QUERIES} from which FAQ's coverage was shown on "
                     "models absent from the history (assay study faq-leaderboard), and this history could not measure "
                     "it at this budget; treat the interval as approximate, or raise the budget")
    if calibrated is False and until_width is None:
        notes.append("the interval is the conservative Student t one: it could not be calibrated on the history "
                     "(that needs the history itself, not only fitted factors, with at least 20 complete models in "
                     "model-level folds), so it may be wider than it needs to be")
    if expected:
        es = expected.get("expected_saving")
        if es is not None and np.isfinite(es) and es < 1.0:
            notes.append(f"no saving expected: on {expected.get('held_out_models')} models of the history, their "
                         f"families held out, FAQ at {n_queries} queries was worth {es:.2f} uniformly sampled questions per question; a "
                         "uniform sample of the same size would do as well")
    if gain is not None:
        g = np.atleast_1d(np.asarray(gain, dtype=float))
        low = np.isfinite(g) & (g < 1.0)
        if low.any():
            who = (f"model {ids[int(np.flatnonzero(low)[0])]!r}" if ids is not None and len(ids) == 1 else
                   f"{int(low.sum())} of {len(ids)} models" if ids is not None else "these models")
            notes.append(f"no saving for {who}: the interval is about as wide as a uniform sample of the same size "
                         f"would give (gain {np.nanmin(g[low]):.2f}x). Its answers do not follow the history's pattern "
                         "(e.g. a model family the history does not contain); the interval is still valid")
    if fell_back is not None:
        fb = np.atleast_1d(np.asarray(fell_back))
        if (fb > 0).any():
            who = (f"model {ids[int(np.flatnonzero(fb > 0)[0])]!r}" if ids is not None and len(ids) == 1 else
                   f"{int((fb > 0).sum())} of {len(fb)} models")
            notes.append(f"{who} fell back to uniform sampling (from query {int(fb[fb > 0].min())} on): its answers "
                         "do not follow the history (the fallback test rejected at its level), so the rest of its "
                         "budget was spent on uniform draws")
    if design == "naive-wor":
        notes.append("design 'naive-wor' is the paper's Appendix B ablation: its interval is NOT valid")
    return notes


def _plain_words(est: FAQEstimate, model_ids: list[str], n_b: int, prm: FAQParams, until_width,
                 expected: dict | None = None, calibrated: bool | None = None) -> list[str]:
    """What the reader must be told beside the numbers of a sampled (not exact) run."""
    if est.exact:
        return []
    notes = plain_words(n_queries=n_b, gain=est.gain_vs_uniform, expected=expected, model_ids=model_ids,
                        until_width=until_width, calibrated=calibrated, fell_back=est.fell_back, design=prm.design)
    if until_width is not None and not est.reached_width.all():
        notes.append(f"{int((~est.reached_width).sum())} of {len(model_ids)} model(s) spent the whole budget "
                     f"({n_b} queries) before their interval was {until_width:g} wide")
    return notes


def _expectation(H, info: dict, fm: FactorModel, n_b: int, prm: FAQParams, alpha: float, *, cache: bool,
                 progress=None):
    """(Calibration or None, its summary dict or None, cache state): what the history says about this budget."""
    from .calibrate import cached_calibration

    rows = info.get("rows")
    if H is None or rows is None or n_b >= H.shape[1]:
        return None, None, "no history"
    cal, state = cached_calibration(H, rows, fm, info.get("key"), n_b, prm,
                                    cache_dir=factor_cache_dir() if cache else None, progress=progress)
    if cal is None:
        return None, None, state
    summ = cal.summary(alpha, prm.variance if prm.variance in cal.se else "conservative")
    summ["cache"] = state
    return cal, summ, state


def _learnt(cal, alpha: float, variance: str) -> dict:
    """The core's keywords for what the calibration learnt (a critical value, or the conservative rule's floor)."""
    got = cal.learnt(alpha, variance)
    return {"calibrated_crit": got["crit"] if np.isfinite(got["crit"]) else None,
            "calibrated_floor": got["floor"] if np.isfinite(got["floor"]) else None}


def expect(history, *, budget: float | int, alpha: float = 0.05, delta: float | None = None,
           params: FAQParams | Mapping | None = None, cache: bool = True, fit_progress: Callable | None = None,
           progress: Callable[[int, int], None] | None = None) -> dict | None:
    """What FAQ at ``budget`` is expected to do for a new model, measured on the history before any query.

    Runs FAQ on held-out families of the history (:mod:`assay.faq.calibrate`; cached with the fit) and returns
    ``{"budget", "held_out_models", "runs", "crit", "expected_coverage", "expected_saving", "fallback_rate",
    "cache"}``, or None when the history has too few complete models to say. ``expected_saving`` is how many
    uniformly sampled questions each FAQ question is worth on those models; ``expected_coverage`` is cross-fitted.
    """
    alpha = level_alias(alpha, delta, 0.05)
    _check_alpha(alpha)
    prm = _params(params)
    fm, H, items, info = _factors(history, None, cache=cache, progress=fit_progress)
    n_b, _ = resolve_budget(budget, len(items))
    return _expectation(H, info, fm, n_b, prm, alpha, cache=cache, progress=progress)[1]


def evaluate(
    history,
    new,
    *,
    budget: float | int,
    seed=None,
    alpha: float = 0.05,
    delta: float | None = None,
    factors: FactorModel | None = None,
    params: FAQParams | Mapping | None = None,
    beta0: float | None = None,
    rho: float | None = None,
    gamma: float | None = None,
    tau: float | None = None,
    variance: str | None = None,
    quantile: str | None = None,
    design: str | None = None,
    fallback: float | None = None,
    until_width: float | None = None,
    min_queries: int = 20,
    items: Sequence | None = None,
    cache: bool = True,
    calibrate: bool = True,
    progress: Callable[[int, int], None] | None = None,
    fit_progress: Callable | None = None,
    on_expected: Callable[[dict | None], None] | None = None,
    on_width: Callable[[int, float], None] | None = None,
) -> FAQResult:
    """Estimate new models' accuracy on the whole bank from ``budget`` adaptively chosen questions (FAQ, Alg. 1).

    The steps: check the arguments, resolve the seed, prepare the arrays (the factor model, fitted or loaded, and
    the new models' answers aligned to its items: :mod:`assay.data.faq`), run the core
    (:func:`assay.faq.core.estimate`: eqs. 1-10 of the paper) and package the numbers (:func:`assay.results.build`).

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
    alpha : 1 - confidence level (the paper's name). ``delta``: assay's common name for the same level; when given it
        is used as ``alpha``.
    factors : a FactorModel (fitted or to be fitted on ``history``); default: :func:`default_factor_model`,
        cached by a hash of the history (``cache=False`` refits).
    params / beta0, rho, gamma, tau, variance, quantile, design, fallback : the policy and interval (see
        FAQParams); defaults tau = 0.5, beta0 = 1, rho = gamma = 0, design "wor", variance "conservative",
        quantile "t", fallback 0.05.
    until_width : query until the anytime-valid interval is at most this wide (or the budget is spent), after
        at least ``min_queries`` queries. The reported interval is then the anytime-valid one, so stopping on
        the data keeps its coverage.
    items : item ids for a callable ``new`` (default: the history's items).
    calibrate : learn the floor of the fixed-budget interval's standard error, and the expected coverage and saving, on
        held-out families of the history (:mod:`assay.faq.calibrate`, cached with the fit; about the cost of one
        more fit the first time). Needs the history (not only ``factors``) with at least 20 complete models; else,
        or with ``calibrate=False``, the interval uses the Student t quantile and says so.
    on_expected : ``on_expected(summary)`` once the expectation is known, before any query (the CLI prints it).
    on_width : ``on_width(t, width)`` after each round from ``min_queries`` on: the width of the current
        anytime-valid interval (the widest over the new models), for a progress display.
    progress : ``progress(done, total)`` after each round. fit_progress : ``fit_progress(done, total, info)`` during
        the factor fit (per fold and candidate).

    Returns
    -------
    FAQResult
        ``n`` is the budget n_b in queries per new model (``level["n_meaning"]``); each model's own count is the
        ``n_queries`` column.
    """
    # 1. arguments
    alpha = level_alias(alpha, delta, 0.05)
    _check_alpha(alpha)
    prm = _params(params, beta0=beta0, rho=rho, gamma=gamma, tau=tau, variance=variance, quantile=quantile,
                  design=design, fallback=fallback)
    check_stopping(until_width, min_queries)
    _check_flag(calibrate, "calibrate")
    if on_expected is not None and not callable(on_expected):
        raise AssayInputError(f"on_expected must be a function of one argument or None; got {type(on_expected).__name__}")
    if on_width is not None and not callable(on_width):
        raise AssayInputError(f"on_width must be a function of two arguments or None; got {type(on_width).__name__}")
    live = callable(new) and not isinstance(new, (pd.DataFrame, pd.Series, np.ndarray))
    # 2. seed: once, before any work (a resumed live run reuses the seed it was started with)
    notes: list[str] = []
    stored = new.recorded_meta() if live and hasattr(new, "recorded_meta") else None
    if stored and seed is None and stored.get("seed") is not None:
        seed = int(stored["seed"])
        notes.append(f"resumed run: using the seed it was started with ({seed})")
    seed = resolve_seed(seed)
    # 3. arrays: the factors (fitted, cached or given), the budget, the new models' answers
    fm, H_hist, hist_items, fit_info = _factors(history, factors, cache=cache, progress=fit_progress)
    N = len(hist_items)
    n_b, budget_note = resolve_budget(budget, N)
    notes += [w for w in (_unobserved_note(fm), budget_note) if w]
    # what the history says about this budget, before any query (held-out families; cached with the fit)
    cal, expected, calibrated = None, None, None
    if n_b < N and until_width is None:
        if calibrate and factors is None:
            cal, expected, _ = _expectation(H_hist, fit_info, fm, n_b, prm, alpha, cache=cache)
        if calibrate:
            calibrated = cal is not None and prm.variance in cal.se and cal.calibrated(alpha, prm.variance)
    if on_expected is not None:
        on_expected(expected)
    if until_width is not None and n_b >= N and prm.design == "wr":
        notes.append("with replacement a budget of the whole bank is answered by asking every question once")
    if live:
        if items is not None and [str(i) for i in items] != hist_items:
            align_items(hist_items, [str(i) for i in items], "items")
        if hasattr(new, "bind"):
            new.bind(_live_meta(seed.recorded, n_b, fm, prm, until_width, hist_items))
        answers, model_ids, truth = _live_answer(new, hist_items), [str(getattr(new, "name", None) or "new")], None
    else:
        answers, model_ids = prepare_answers(new, hist_items, label="the new model's answers")
        truth = answers.mean(axis=1)
    # 4. the core
    est = estimate(answers, fm.V_, fm.prior_mean_, fm.prior_cov_, n_b, rng=seed.rng(), alpha=alpha, params=prm,
                   b=fm.b_ if fm.bias else None, until_width=until_width, min_queries=min_queries,
                   n_models=len(model_ids), on_round=progress, on_width=on_width,
                   **_learnt(cal, alpha, prm.variance) if calibrated else {})
    # 5. the result
    notes += _plain_words(est, model_ids, n_b, prm, until_width, expected, calibrated)
    if est.exact:
        meaning = f"every one of the {N} questions was asked: the accuracy is exact"
    else:
        meaning = (f"each interval covers that model's accuracy over all {N} questions with probability about "
                   f"{1 - alpha:.0%}" + (" at whatever round the run stopped (anytime-valid confidence sequence)"
                                         if until_width is not None else " (martingale CLT, Theorem 3.1)"))
    res = build(
        FAQResult,
        params={"budget": budget, "n_queries": int(n_b), "n_items": N, **prm.to_dict(), "live": live,
                "until_width": until_width, "min_queries": min_queries if until_width is not None else None},
        n=n_b, n_meaning="queries per new model allowed by the budget (n_b); each model's own count is n_queries",
        meaning=meaning, seed=seed, alpha=alpha,
        tables=_faq_tables(est, model_ids, hist_items, _interval_kind(est, prm, until_width, calibrated), until_width,
                           truth),
        warnings=notes,
        info={"factors": {**fm.summary(), "fingerprint": fm.fingerprint(), "cache": fit_info.get("cache"),
                          "cache_path": fit_info.get("path")},
              "expected": expected, "calibrated": calibrated,
              "se_variants": {k: [float(x) for x in v] for k, v in est.se_variants.items()}},
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


#: the pseudo-variant under which a protocol job reports which models fell back to uniform sampling
FELL_BACK = "fell_back"

PAPER_FAQ = {"beta0": 1.0, "rho": 0.0, "gamma": 0.0, "tau": 0.05, "design": "wr", "variance": "paper",
             "quantile": "normal", "fallback": 0.0}


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
                if var == FELL_BACK:
                    cov[si, sl] = lo > 0
                    continue
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


def _fit_for(H, rows, items, factors, cache, fit_progress, *, with_info: bool = False):
    """Factors for one split's history: the default (cached) fit, or a fresh fit with the given settings
    (``with_info``: -> (model, fit info with the history's cache key and rows))."""
    if factors is None:
        fm, info = fit_factors(H, rows, items, cache=cache, progress=fit_progress)
        info["rows"] = list(rows)
        return (fm, info) if with_info else fm
    fm = FactorModel(**{k: getattr(factors, k) for k in ("k", "weight_decay", "bias", "max_iter", "tol", "seed", "cv",
                                                          "ks", "lambdas", "one_se", "holdout", "overfit_ratio",
                                                          "cv_by", "reveal", "cv_tol", "n_jobs")})
    check_k(fm, H)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        fm.fit(FAQMatrix(H, list(rows), list(items)),
               groups=default_groups(rows) if fm.cv_by == "models" else None, progress=fit_progress)
    return (fm, {"rows": list(rows), "key": None}) if with_info else fm


def _tune_split(si, H, hrows, items, groups, methods, grids, base_faq, budgets, n_b_list, tune_ss, val_seeds, alpha,
                chunk, workers, factors, cache, fit_progress) -> tuple[dict, list[dict]]:
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
    fm_v = _fit_for(H[tr_i], [hrows[i] for i in tr_i], items, factors, cache, fit_progress)
    ctx_v = _context(fm_v, H[tr_i])
    Zval = H[val_i]
    theta_v = Zval.mean(axis=1)
    val_ss = tune_ss.spawn(val_seeds)
    se_cov = float(np.sqrt(alpha * (1 - alpha) / (Zval.shape[0] * val_seeds)))
    chosen: dict[tuple[int, str], dict] = {}
    rows: list[dict] = []
    for m in methods:
        if m in ("uniform", "ht_uniform", "faq_paper"):
            continue
        jobs = _jobs_for(m, grids.get(m), base_faq)
        res = _evaluate_jobs(ctx_v, Zval, theta_v, n_b_list, jobs, val_ss, alpha, chunk, workers, None, split_id=si)
        for bi in range(len(n_b_list)):
            cands = [(ji, float(cov.mean()), float(wid.mean())) for (b2, ji, var), (cov, wid) in res.items()
                     if b2 == bi and var == ""]
            ok = [c for c in cands if c[1] >= 1 - alpha - se_cov]
            pick = min(ok, key=lambda c: c[2]) if ok else max(cands, key=lambda c: c[1])
            chosen[(bi, m)] = jobs[pick[0]][1]
            for ji, cv_, w_ in cands:
                rows.append({"split": si, "budget": budgets[bi], "n_queries": n_b_list[bi], "method": m,
                             **{f"param_{k}": v for k, v in jobs[ji][1].items()},
                             "val_coverage": cv_, "val_mean_width": w_, "selected": ji == pick[0]})
    return chosen, rows


def _test_jobs(methods, bi: int, chosen: dict, base_faq: FAQParams, params: Mapping, faq_variants) -> list:
    """The (method, settings) jobs run on a split's new models at budget ``bi``."""
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
    return jobs


_METHOD_ORDER = {m: i for i, m in enumerate(["faq", "faq:cs", "faq:increments|t", "faq:conservative|normal",
                                              "faq_paper", "uniform", "ht_uniform", "aipw", "ai_factor"])}


def _protocol_table(acc: dict, budgets, n_b_list) -> pd.DataFrame:
    """One row per (budget, method) from the coverage and width arrays of every split: coverage (its s.e. over
    (split, seed) runs), the smallest per-model coverage, mean width and ESS against both uniform references."""
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
    table = pd.DataFrame(rows)
    table = table.assign(_o=table["method"].map(lambda m: _METHOD_ORDER.get(m, 99))).sort_values(
        ["n_queries", "_o"], kind="stable").drop(columns="_o")
    return table.reset_index(drop=True)


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
    if new_models is None and factors is not None and hasattr(factors, "V_"):
        raise AssayInputError("a fitted FactorModel was fitted on models that the splits would call new; pass "
                              "an unfitted one (its settings are refitted per split) or none")
    # 2. seed: the splits, the tuning and the test draws each descend from their own child
    seed = resolve_seed(seed)
    split_ss, tune_ss, test_ss_root = seed.spawn(3)
    # 3. arrays
    H_all, rows_all, items, Z_new, new_rows = prepare_protocol(history, new_models, codes=True)  # int8, -1 = missing
    if Z_new is None:
        split_list = model_splits(rows_all, splits, split_by, seed=split_ss)
        Zsrc, src_rows = H_all, rows_all
        if (H_all < 0).any():
            raise AssayInputError("the history has missing answers; the true accuracy of a held-out model needs its "
                                  "full row, so split a complete table (or pass new_models explicitly)")
    else:
        split_list = [(np.arange(H_all.shape[0]), None)]
        Zsrc, src_rows = Z_new, new_rows
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

    # 4. per split: factors (and tuning) from its history only, then every method on its new models
    acc: dict[tuple[int, str], list] = {}  # (budget index, row name) -> list of (cov[S, M], wid[S, M]) per split
    expected: dict[int, list] = {}  # budget index -> per split, what its history predicted (or None)
    fell_back: dict[int, list] = {}  # budget index -> per split, which new models fell back (seeds x models)
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
            groups = split_by if isinstance(split_by, str) else np.asarray(split_by)[hist_idx]
            chosen, rows = _tune_split(si, H, hrows, items, groups, methods, grids, base_faq, budgets, n_b_list,
                                       tune_ss, val_seeds, alpha, chunk, workers, factors, cache, fit_progress)
            tuning_rows += rows
        if new_idx is None and factors is not None and hasattr(factors, "V_"):
            fm, H, _, fit_info = _factors(FAQMatrix(H, hrows, list(items)), factors)
            fit_info = {"rows": hrows, "key": None}
        else:
            fm, fit_info = _fit_for(H, hrows, items, factors, cache, fit_progress, with_info=True)
        ctx = _context(fm, H)
        split_info.append({"split": si, "n_history": int(H.shape[0]), "n_new": int(Znew.shape[0]),
                           "k": fm.k_, "weight_decay": fm.weight_decay_, "fingerprint": fm.fingerprint()})
        for bi, n_b in enumerate(n_b_list):
            jobs = _test_jobs(methods, bi, chosen, base_faq, params, faq_variants)
            if calibrate and "faq" in methods and n_b < N:
                # FAQ's interval as evaluate gives it: calibrated on held-out families of this
                # split's history (never on its new models), and what that history predicts
                for ji, (name, cfg) in enumerate(jobs):
                    if name != "faq":
                        continue
                    prm_j = _job_params(cfg)
                    cal, summ, _ = _expectation(H, fit_info, fm, n_b, prm_j, alpha, cache=cache)
                    if cal is not None and prm_j.variance in cal.se and cal.calibrated(alpha, prm_j.variance):
                        got = _learnt(cal, alpha, prm_j.variance)
                        jobs[ji] = (name, {**cfg, "crit": got["calibrated_crit"], "floor": got["calibrated_floor"]})
                    expected.setdefault(bi, []).append(summ)
            res = _evaluate_jobs(ctx, Znew, theta, [n_b], jobs, test_ss, alpha, chunk, workers, step_progress,
                                 budget_ids=[bi], split_id=si)
            done[0] += len(seeds) * -(-Znew.shape[0] // chunk)
            for (b2, ji, var), (cov, wid) in res.items():
                if var == FELL_BACK:
                    fell_back.setdefault(bi, []).append(cov.ravel())
                    continue
                name = jobs[ji][0] + (f":{var}" if var else "")
                acc.setdefault((bi, name), []).append((cov, wid, jobs[ji][1]))
                per_model.append(pd.DataFrame({"split": si, "budget": budgets[bi], "method": name, "model": nrows,
                                               "theta": theta, "coverage": cov.mean(axis=0),
                                               "mean_width": wid.mean(axis=0)}))

    # 5. the result
    n_new = sum(s["n_new"] for s in split_info)
    table = _protocol_table(acc, budgets, n_b_list)
    table["expected_coverage"] = np.nan
    table["expected_saving"] = np.nan
    table["fallback_rate"] = np.nan
    notes = []
    for bi, n_b in enumerate(n_b_list):
        row = (table["n_queries"] == n_b) & (table["method"] == "faq")
        summs = [x for x in expected.get(bi, []) if x]
        if summs and len(summs) == len(expected.get(bi, [])):
            table.loc[row, "expected_coverage"] = float(np.mean([x["expected_coverage"] for x in summs]))
            table.loc[row, "expected_saving"] = float(np.mean([x["expected_saving"] for x in summs]))
        if fell_back.get(bi):
            table.loc[row, "fallback_rate"] = float(np.concatenate(fell_back[bi]).mean())
        if row.any():
            gain = float(table.loc[row, "ess_vs_uniform_mean"].iloc[0])
            calibrated = (bool(summs) and all(np.isfinite(x["crit"]) or np.isfinite(x["floor"]) for x in summs)
                          if calibrate else None)
            notes += [f"budget {budgets[bi]} ({n_b} queries): {w}" for w in
                      plain_words(n_queries=n_b, gain=gain, calibrated=calibrated)]
    return build(
        FAQProtocolResult,
        params={"budgets": list(budgets), "n_queries": n_b_list, "methods": methods, "n_new": int(n_new),
                "n_history": int(H_all.shape[0]), "n_items": N, "n_seeds": len(seeds), "n_splits": len(split_list),
                "split_by": split_by if isinstance(split_by, str) else "given", "tune": tune, "val_seeds": val_seeds,
                "chunk": chunk, "faq": base_faq.to_dict()},
        n=int(n_new), n_meaning="new models evaluated (over all splits), each at every budget and seed",
        meaning=f"nominal coverage {1 - alpha:.0%} of each new model's accuracy over the bank", alpha=alpha,
        seed=seed,
        tables={"table": table, "per_model": pd.concat(per_model, ignore_index=True),
                "tuning": pd.DataFrame(tuning_rows)},
        warnings=notes,
        info={"splits": split_info, "factors": {"per_split": split_info}},
    )
