"""Public FAQ functions on tables: :func:`evaluate` (one or more new models) and :func:`expect` (what FAQ is expected
to do at a budget, before any query). The validation experiment, :func:`assay.faq.protocol`, lives in
:mod:`assay.faq.protocol`; the factor fit both start from, in :mod:`assay.faq.fit`.

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
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from ..data.faq import align_items, as_matrix, prepare_answers  # noqa: F401  (as_matrix: still importable from here)
from .. import checks
from ..errors import AssayInputError
from ..results import Result, Statement, build, fmt, level_alias
from ..seeds import resolve_seed
from .core import FAQEstimate, FAQParams, check_stopping, estimate, plain_words
from .params import _check_alpha, _check_flag, _params
from .factor import FactorModel
from .fit import _expectation, _factors, _learnt, _unobserved_note, default_factor_model  # noqa: F401

__all__ = ["evaluate", "expect", "FAQResult", "resolve_budget", "as_matrix", "default_factor_model"]


def resolve_budget(budget: Any, N: int) -> tuple[int, str | None]:
    """Turn a budget into a number of queries and a note, by the one budget rule.

    A budget -> (number of queries n_b <= N, a note for the user or None), by the one budget rule
    (:func:`assay.checks.fraction_or_count`).

    A float in (0, 1] is a fraction of the bank (1.0 = every question); an integer (or an integral float above
    1) is a number of queries. A budget of N or more means every question, asked once: the accuracy is then
    known exactly, and FAQ never samples past the bank.

    Parameters
    ----------
    budget : float or int
        A fraction of the bank in (0, 1] or a number of queries.
    N : int
        The number of questions in the bank.

    Returns
    -------
    n_b : int
        The number of queries, at most ``N``.
    note : str or None
        A note for the user (e.g. that the budget covers the whole bank and the accuracy is exact), or None.

    Raises
    ------
    AssayInputError
        If the budget is not a valid fraction or count (raised by :func:`assay.checks.fraction_or_count`).

    Examples
    --------
    >>> resolve_budget(0.5, 100)
    (50, None)
    >>> resolve_budget(30, 100)
    (30, None)
    """
    n_b, note = checks.fraction_or_count(budget, N, "budget")
    return n_b, (None if note is None else f"{note} and the accuracy is exact")


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

    def statements(self) -> list[Statement]:
        """One sentence per model: its accuracy on the bank's questions is in [ci_low, ci_high], from how many
        questions. FAQ's intervals rest on a martingale CLT (calibrated or not): the level is "about", not "at
        least". When the caller records the bank's size (``info["bank_size"]``, as a campaign does), the sentence
        says whether the history covers all of it."""
        n_items, bank_size = self.params.get("n_items"), self.info.get("bank_size")
        whole = (f"the {n_items} questions" if bank_size is None else
                 f"all {n_items} questions of the bank" if n_items == bank_size else
                 f"the {n_items} questions of the bank that the history covers")
        conf = f"{self.confidence:.0%}"

        def point(x: float) -> str:  # unbiased, so sampling noise can carry it past 0 or 1 (the interval is clipped)
            return f"estimate {fmt(x)}" + ("" if 0.0 <= x <= 1.0 else ", outside [0, 1] by sampling noise")

        return [Statement(f"accuracy on {whole} is in [{fmt(e['ci_low'])}, {fmt(e['ci_high'])}] ({point(e['estimate'])}"
                          f"), from {int(e['n_queries'])} questions", str(e["model"]),
                          f"about {conf}, {e.get('interval', 'fixed-budget')}")
                for _, e in self.estimates.iterrows()]

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


def expect(history, *, budget: float | int, alpha: float = 0.05, delta: float | None = None,
           params: FAQParams | Mapping | None = None, cache: bool = True, fit_progress: Callable | None = None,
           progress: Callable[[int, int], None] | None = None) -> dict | None:
    """What FAQ at ``budget`` is expected to do for a new model, measured on the history before any query.

    Runs FAQ on held-out families of the history (:mod:`assay.faq.calibrate`; cached with the fit).
    ``expected_saving`` is how many uniformly sampled questions each FAQ question is worth on those models;
    ``expected_coverage`` is cross-fitted.

    Parameters
    ----------
    history : DataFrame or array
        The history's models x items 0/1 answers (wide DataFrame, long ``model, item, score`` table, or array;
        NaN = missing).
    budget : float or int
        A fraction of the bank in (0, 1] or a number of queries (:func:`resolve_budget`).
    alpha : float, default 0.05
        Miscoverage of the interval whose coverage is measured.
    delta : float, optional
        assay's common name for the error level; when given it is used as ``alpha``.
    params : FAQParams or mapping, optional
        FAQ's sampling parameters (default :class:`FAQParams`).
    cache : bool, default True
        Read and write the factor fit and the calibration in the cache.
    fit_progress : callable, optional
        Progress callback of the factor fit.
    progress : callable, optional
        ``progress(done, total)`` as the held-out runs complete.

    Returns
    -------
    dict or None
        ``{"budget", "held_out_models", "runs", "crit", "expected_coverage", "expected_saving", "fallback_rate",
        "cache"}``, or None when the history has too few complete models to say.

    Raises
    ------
    AssayInputError
        When the history, the budget or a level is invalid.
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
