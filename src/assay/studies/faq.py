"""FAQ on real Open LLM Leaderboard answers: ``faq-leaderboard`` (coverage, width, ESS on models never used to fit
or tune anything) and ``faq-stopping`` (query until the interval is narrow enough).

Data: ``shared/data/openllm_v2_items/mmlu_pro_math_8b_models.csv``: 755 real models x 1,351 MMLU-Pro math
questions (doc_id 7504-8854), read at run time (no redistribution licence: nothing is copied into the
package). The paper used 2.2K historical and 2.2K new models on all 12,032 MMLU-Pro questions.

Protocol (:func:`assay.faq.protocol`)
-------------------------------------
* The 755 models are cut into ``splits`` (default 3) model-level folds, whole model families together (the
  Hugging Face owner of each id: 194 owners, e.g. 101 DreadPoor merges in one fold). Each fold in turn is the
  set of new models; the factors are fitted (assay's default: model-level cross-validation, cached) on the other
  two folds only, and no hyperparameter is tuned on anything: FAQ runs with its defaults. Every new model is
  evaluated ``trials`` times per budget; its true accuracy is the mean of its full row.
* Methods: FAQ (defaults: without replacement, tau = 0.5, conservative variance, Student t) and its other
  intervals on the same draws (``faq:cs`` = the anytime-valid one, ``faq:increments|t`` without the model-variance
  floor, ``faq:conservative|normal`` with the normal quantile); ``faq_paper`` = the paper's Algorithm 1 as its
  released logs selected it (with replacement, tau = 0.05, eq. 8, normal quantile); uniform sampling without
  replacement with the sample mean and a Wilson interval (the honest reference); the paper's Horvitz-Thompson
  "uniform"; AIPW active inference with the historical per-question mean and with the online factor model.
* ``new_path``: evaluate on the models of another file instead (e.g. the 7B-model matrix of the same
  leaderboard, a size class absent from the history), with the whole 8B file as the history.

Reference numbers in the rows (``ref_*``): the released code, run on 100 of these models with the paper's own
factors (research notes faq.md Sec. 10 A), at 5 / 10 / 25%: ESS against its HT uniform 1.96 / 2.13 / 2.43,
coverage 0.915 / 0.925 / 0.940; the paper's full-scale MMLU-Pro numbers (``paper_*``, 12,032 questions,
fully observed history): ESS 3.57 / 4.27 / 4.89 / 5.06 / 4.91 at 2.5 / 5 / 10 / 15 / 25%, coverage 0.941 / 0.940 /
0.945 / 0.947 / 0.948.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from ..errors import AssayInputError
from . import StudyResult, register

DATA = "openllm_v2_items/mmlu_pro_math_8b_models.csv"

REF_RELEASED = {0.05: (1.96, 0.915), 0.10: (2.13, 0.925), 0.25: (2.43, 0.940)}
PAPER_MMLU = {0.025: (3.57, 0.941), 0.05: (4.27, 0.940), 0.10: (4.89, 0.945), 0.15: (5.06, 0.947), 0.25: (4.91, 0.948)}


def shared_data_dir() -> Path:
    """Return ``../shared/data`` next to the repository (or $ASSAY_SHARED_DATA).

    Without the variable, the first ``shared/data`` folder found beside this file's ancestors is used, else the
    relative path ``../shared/data``.

    Returns
    -------
    pathlib.Path
        The shared data folder.
    """
    import os

    env = os.environ.get("ASSAY_SHARED_DATA")
    if env:
        return Path(env)
    here = Path(__file__).resolve()
    for parent in here.parents:
        cand = parent.parent / "shared" / "data"
        if cand.is_dir():
            return cand
    return Path("../shared/data")


#: the leaderboard matrices of shared/data/openllm_v2_items a study can be run on (``matrix=``)
MATRICES = {
    "mmlu_pro_math": "openllm_v2_items/mmlu_pro_math_8b_models.csv",
    "bbh_tracking": "openllm_v2_items/bbh_tracking_shuffled_objects_five_objects.csv",
    "tiny_v1": "openllm_v2_items/tinybenchmarks_items_openllm_v1",
}


def _load_tiny(folder: Path) -> pd.DataFrame:
    """The five tinyBenchmarks matrices (Open LLM Leaderboard v1) side by side, on the models present in all five:
    one suite of 493 questions (ids ``arc:12`` etc.), as the paper's BBH+GPQA+IFEval+MATH+MuSR suite is one."""
    files = sorted(folder.glob("response_matrix_tiny*.csv"))
    if len(files) != 5:
        raise AssayInputError(f"{folder}: expected the five tinyBenchmarks response matrices; found {len(files)}")
    parts = []
    for f in files:
        t = pd.read_csv(f, index_col=0)
        t.index = t.index.astype(str)
        t = t[~t.index.duplicated()]
        t.columns = [f"{f.stem.replace('response_matrix_tiny', '')}:{c}" for c in t.columns]
        parts.append(t)
    common = sorted(set.intersection(*(set(t.index) for t in parts)))
    return pd.concat([t.loc[common] for t in parts], axis=1)


def load_leaderboard(path: str | Path | None = None) -> pd.DataFrame:
    """Load a models x questions 0/1 matrix as a wide DataFrame (index = model, columns = doc ids as str).

    The default is the 755 x 1,351 MMLU-Pro math matrix; a name of :data:`MATRICES` reads that one. Rows with a
    missing answer are dropped (the truth needs a full row).

    Parameters
    ----------
    path : str, pathlib.Path or None, default None
        A name of :data:`MATRICES`, a CSV file (first column the model), or a folder of the five tinyBenchmarks
        response matrices; None for the default matrix in :func:`shared_data_dir`.

    Returns
    -------
    pandas.DataFrame
        One row per model with a full row of answers, one column per question.

    Raises
    ------
    AssayInputError
        When the file is not found, or a folder does not hold the five tinyBenchmarks matrices.
    """
    if path is not None and str(path) in MATRICES:
        path = shared_data_dir() / MATRICES[str(path)]
    p = Path(path) if path is not None else shared_data_dir() / DATA
    if p.is_dir():
        df = _load_tiny(p)
        df.columns = [str(c) for c in df.columns]
        return df.dropna()
    if not p.exists():
        raise AssayInputError(f"{p} not found: this study reads shared/data/{DATA} (see its README); set "
                              "ASSAY_SHARED_DATA to the shared data folder")
    df = pd.read_csv(p, index_col=0)
    df.columns = [str(c) for c in df.columns]
    df.index = df.index.astype(str)
    return df.dropna()


@register("faq-leaderboard")
def study_leaderboard(
    *,
    trials: int = 10,
    budgets: Sequence[float] = (0.025, 0.05, 0.075, 0.1, 0.15, 0.25),
    splits: int = 3,
    split_by: str = "auto",
    methods: Sequence[str] = ("faq", "faq_paper", "uniform", "ht_uniform", "aipw", "ai_factor"),
    path: str | Path | None = None,
    new_path: str | Path | None = None,
    n_models: int | None = None,
    seed: int | None = 0,
    workers: int = 1,
    calibrate: bool = True,
    fallback: float | None = None,
    progress: Callable[[int, int], None] | None = None,
    fit_progress: Callable | None = None,
) -> StudyResult:
    """FAQ vs uniform sampling and active-inference baselines on leaderboard models absent from the history.

    ``path``: a file, or a name of :data:`MATRICES` ("mmlu_pro_math", the default; "tiny_v1"; "bbh_tracking").
    ``calibrate=False`` / ``fallback=0`` show FAQ without the interval calibrated on the history / without
    the fallback to uniform sampling (the ablations of docs/faq.md). The protocol is
    :func:`assay.faq.protocol` (module docstring): model-level folds, each in turn the new models, with the factors
    fitted on the other folds only.

    Parameters
    ----------
    trials : int, default 10
        Runs of every new model per budget (seeds).
    budgets : sequence of float, default (0.025, 0.05, 0.075, 0.1, 0.15, 0.25)
        Query budgets, as fractions of the bank (or numbers of queries).
    splits : int, default 3
        Model-level folds.
    split_by : str or sequence, default "auto"
        ``"auto"`` (whole model families, the owner of ``owner/name`` ids), ``"random"`` or one group label per model.
    methods : sequence of str, default ("faq", "faq_paper", "uniform", "ht_uniform", "aipw", "ai_factor")
        Methods to run (see :func:`assay.faq.protocol`).
    path : str, Path or None, default None
        The history's answer matrix: a file or a name of :data:`MATRICES`; None: the MMLU-Pro math matrix.
    new_path : str, Path or None, default None
        Evaluate on the models of this file instead, with the whole ``path`` file as the history (its questions
        must be the history's).
    n_models : int or None, default None
        Keep a random subset of this many models (a smaller study, e.g. for CI).
    seed : int or None, default 0
        Root seed (:mod:`assay.seeds`).
    workers : int, default 1
        Parallel workers (the numbers do not depend on it).
    calibrate : bool, default True
        Give FAQ the interval calibrated on held-out families of each split's history.
    fallback : float or None, default None
        FAQ's fallback setting (``0``: no fallback to uniform sampling); None: FAQ's default.
    progress : callable or None, default None
        Called as ``progress(done, total)`` as tasks finish.
    fit_progress : callable or None, default None
        Progress callback of the factor fits.

    Returns
    -------
    StudyResult
        ``rows``: the protocol's table (one row per method and budget: coverage, width, ESS, ...), with the reference
        columns ``ref_released_ess_vs_ht``, ``ref_released_coverage``, ``paper_ess`` and ``paper_coverage`` on the
        ``faq`` rows; the notes give the splits and the share of new models whose own FAQ coverage is below 0.85.

    Raises
    ------
    AssayInputError
        If the questions of ``new_path`` differ from the history's (and as :func:`assay.faq.protocol` does).
    """
    from ..faq import protocol
    from ..seeds import resolve_seed

    df = load_leaderboard(path)
    recorded, ss = resolve_seed(seed)
    sub_ss, run_ss = ss.spawn(2)
    new = None
    if new_path is not None:
        new = load_leaderboard(new_path)
        if list(new.columns) != list(df.columns):
            raise AssayInputError(f"{new_path}: its questions differ from the history's")
    if n_models is not None:  # a smaller study (CI): a random subset of whole families keeps the split honest
        pick = np.random.default_rng(sub_ss).permutation(len(df))[:n_models]
        df = df.iloc[np.sort(pick)]
    res = protocol(df, new, budgets=budgets, seeds=trials, seed=run_ss, methods=methods, splits=splits,
                   split_by=split_by, workers=workers, progress=progress, fit_progress=fit_progress,
                   params={"faq": {"fallback": fallback}} if fallback is not None else None, calibrate=calibrate)
    rows = res.table.copy()
    rows.insert(0, "study", "faq-leaderboard")

    def ref(table, b, m, i):
        return table.get(round(b, 4), (np.nan, np.nan))[i] if m == "faq" else np.nan

    for col, table, i in (("ref_released_ess_vs_ht", REF_RELEASED, 0), ("ref_released_coverage", REF_RELEASED, 1),
                          ("paper_ess", PAPER_MMLU, 0), ("paper_coverage", PAPER_MMLU, 1)):
        rows[col] = [ref(table, b, m, i) for b, m in zip(rows["budget"], rows["method"])]
    pm = res.tables["per_model"]
    low = pm[pm["method"] == "faq"].groupby("budget")["coverage"].apply(lambda c: float((c < 0.85).mean()))
    sp = res.info["splits"]
    notes = [
        "ESS = (mean width of the reference / mean width of the method)^2 per (split, seed), averaged",
        "uniform = simple random sample without replacement, sample mean, Wilson interval with the finite-population "
        "correction; ht_uniform = the paper's reference (Bernoulli sampling, Horvitz-Thompson with zero predictor)",
        (f"{len(sp)} model-level split(s) by {res.params['split_by']} (whole model families held out): "
         if new is None else f"history = {len(df)} models, new = {len(new)} models of {new_path}: ")
        + "; ".join(f"{s['n_history']} history / {s['n_new']} new, factors k={s['k']}, lambda={s['weight_decay']:g}"
                    for s in sp),
        "share of new models whose own FAQ coverage over the seeds is below 0.85, per budget: "
        + ", ".join(f"{b:g}: {v:.3f}" for b, v in low.items()),
        "expected_coverage / expected_saving (faq rows): what each split's history predicted before any new model "
        "was queried (held-out families of that history), averaged over splits",
    ] + list(res.warnings)
    return StudyResult(
        params={"study": "faq-leaderboard", "trials": trials, "budgets": list(budgets), "splits": splits,
                "split_by": split_by, "n_models": len(df), "n_items": int(df.shape[1]),
                "path": str(path) if path else None, "new_path": str(new_path) if new_path else None,
                "methods": list(methods), "calibrate": calibrate, "fallback": fallback},
        level={"alpha": 0.05, "meaning": f"nominal 95% CIs for each new model's accuracy over the {df.shape[1]:,} "
                                         "questions"},
        n=res.n, seed=recorded, tables={"rows": rows}, info={"notes": notes},
    )


def _stop_task(task, s, *, contexts, n_max, min_queries):
    """One (split, trial, rule) of the stopping study: every new model of the split at once."""
    from ..faq.core import estimate

    si, t, kind, v = task
    fm, Z = contexts[si]
    theta = Z.mean(axis=1)
    rng = np.random.default_rng(s)
    if kind == "until":
        r = estimate(Z, fm.V_, fm.prior_mean_, fm.prior_cov_, n_max, rng=rng, b=fm.b_, until_width=v,
                     min_queries=min_queries)
    else:
        r = estimate(Z, fm.V_, fm.prior_mean_, fm.prior_cov_, v, rng=rng, b=fm.b_)
    cov = (r.ci_low <= theta) & (theta <= r.ci_high)
    return {"cov": cov, "width": r.ci_high - r.ci_low, "n": r.n_queries, "stopped": r.reached_width}


@register("faq-stopping")
def study_stopping(
    *,
    trials: int = 5,
    widths: Sequence[float] = (0.15, 0.1, 0.07),
    max_budget: float = 0.5,
    fixed_budgets: Sequence[float] = (0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5),
    splits: int = 3,
    min_queries: int = 20,
    path: str | Path | None = None,
    new_path: str | Path | None = None,
    n_models: int | None = None,
    seed: int | None = 0,
    workers: int = 1,
    progress: Callable[[int, int], None] | None = None,
    fit_progress: Callable | None = None,
) -> StudyResult:
    """Query until the interval is narrower than W: coverage at the stopping time and queries used.

    For each target width W, every new model (model-level splits as in ``faq-leaderboard``) runs FAQ with
    ``until_width=W`` (the anytime-valid interval, at most ``max_budget`` of the bank). Reported: coverage of the
    interval at the stopping time, mean queries used and mean final width, the share of models that reached W,
    and the fixed budget (the same for every model, interpolated on ``fixed_budgets``) whose usual fixed-budget
    FAQ interval has the same mean width: what a user who had guessed the right budget in advance would spend.

    Parameters
    ----------
    trials : int, default 5
        Runs of every new model per target width and per fixed budget.
    widths : sequence of float, default (0.15, 0.1, 0.07)
        Target widths W.
    max_budget : float, default 0.5
        Most queries a stopped run may use, as a fraction of the bank (or a number of queries).
    fixed_budgets : sequence of float, default (0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5)
        Fixed budgets whose mean widths are interpolated (log queries against log width).
    splits : int, default 3
        Model-level folds (whole model families together).
    min_queries : int, default 20
        Queries before the anytime-valid interval may stop the run.
    path : str, Path or None, default None
        The history's answer matrix: a file or a name of :data:`MATRICES`; None: the MMLU-Pro math matrix.
    new_path : str, Path or None, default None
        Evaluate on the models of this file instead, with the whole ``path`` file as the history.
    n_models : int or None, default None
        Keep a random subset of this many models (a smaller study).
    seed : int or None, default 0
        Root seed (:mod:`assay.seeds`).
    workers : int, default 1
        Parallel workers (the numbers do not depend on it).
    progress : callable or None, default None
        Called as tasks finish.
    fit_progress : callable or None, default None
        Progress callback of the factor fits.

    Returns
    -------
    StudyResult
        ``rows``: one row per target width with ``coverage_at_stop`` and its se, ``mean_queries``,
        ``median_queries``, ``mean_final_width``, ``share_reached``, ``fixed_budget_same_width`` (NaN outside the
        range of ``fixed_budgets``) and ``queries_vs_fixed``; the notes list each fixed budget's width and coverage.
    """
    from ..data.faq import as_matrix, prepare_answers
    from ..faq import api
    from ..faq.fit import fit_factors
    from ..faq.protocol import model_splits
    from ..parallel import get_executor
    from ..seeds import resolve_seed

    df = load_leaderboard(path)
    recorded, ss = resolve_seed(seed)
    sub_ss, split_ss, run_ss = ss.spawn(3)
    if n_models is not None:
        pick = np.random.default_rng(sub_ss).permutation(len(df))[:n_models]
        df = df.iloc[np.sort(pick)]
    H, rows, items = as_matrix(df, "history")
    N = len(items)
    if new_path is not None:
        Zn, _ = prepare_answers(load_leaderboard(new_path), items, label="the new models")
        split_list = [(np.arange(len(rows)), None)]
    else:
        split_list = model_splits(rows, splits, "auto", seed=split_ss)
    n_max = api.resolve_budget(float(max_budget), N)[0]
    fixed_n = [api.resolve_budget(float(b), N)[0] for b in fixed_budgets]
    out_rows = []
    tasks, contexts = [], []
    for si, (hi, ni) in enumerate(split_list):
        fm, _ = fit_factors(H[hi], [rows[i] for i in hi], items, progress=fit_progress)
        Z = Zn if ni is None else H[ni]
        contexts.append((fm, Z))
        for t in range(trials):
            for w in widths:
                tasks.append((si, t, "until", float(w)))
            for n in fixed_n:
                tasks.append((si, t, "fixed", int(n)))
    seeds = [np.random.SeedSequence(run_ss.entropy, spawn_key=run_ss.spawn_key + (si, t, 0 if kind == "until" else 1,
                                                                                   int(round(v * 1e6)) if kind == "until" else v))
             for si, t, kind, v in tasks]

    import functools

    fn = functools.partial(_stop_task, contexts=contexts, n_max=n_max, min_queries=min_queries)
    results = get_executor(workers).map(fn, tasks, seeds, progress)
    agg: dict = {}
    for (si, t, kind, v), res in zip(tasks, results):
        agg.setdefault((kind, v), []).append(res)
    fixed_w = np.array([np.mean([r["width"].mean() for r in agg[("fixed", n)]]) for n in fixed_n])
    for w in widths:
        lst = agg[("until", float(w))]
        cov = np.concatenate([r["cov"] for r in lst])
        cov_runs = np.array([r["cov"].mean() for r in lst])
        n_used = np.concatenate([r["n"] for r in lst]).astype(float)
        width = np.concatenate([r["width"] for r in lst])
        reached = np.concatenate([r["stopped"] for r in lst])
        mw = float(width.mean())
        # fixed budget with the same mean width: fixed widths fall with n; interpolate on log n vs log width
        order = np.argsort(fixed_w)
        if mw < fixed_w.min() or mw > fixed_w.max():
            n_same = float("nan")
        else:
            n_same = float(np.exp(np.interp(np.log(mw), np.log(fixed_w[order]), np.log(np.array(fixed_n, float)[order]))))
        out_rows.append({
            "study": "faq-stopping", "target_width": w, "coverage_at_stop": float(cov.mean()),
            "coverage_se": float(cov_runs.std(ddof=1) / np.sqrt(len(cov_runs))) if len(cov_runs) > 1 else float("nan"),
            "mean_queries": float(n_used.mean()), "median_queries": float(np.median(n_used)),
            "mean_final_width": mw, "share_reached": float(reached.mean()),
            "fixed_budget_same_width": n_same, "queries_vs_fixed": float(n_used.mean() / n_same) if n_same == n_same else float("nan"),
        })
    fixed_rows = [{"study": "faq-stopping", "fixed_queries": n, "fixed_mean_width": float(wd),
                   "fixed_coverage": float(np.mean([r["cov"].mean() for r in agg[("fixed", n)]]))}
                  for n, wd in zip(fixed_n, fixed_w)]
    from ..faq.core import plain_words

    fixed_notes = []
    for r in fixed_rows:
        fixed_notes += [f"fixed budget {r['fixed_queries']}: {w}" for w in plain_words(n_queries=r["fixed_queries"])]
    notes = fixed_notes + [
        f"{'model-level splits by family' if new_path is None else 'new models from ' + str(new_path)}; default FAQ; "
        f"anytime-valid interval from {min_queries} queries on; at most {n_max} queries",
        "fixed_budget_same_width: the one budget, the same for every model, whose fixed-budget FAQ interval has the "
        "same mean width as the stopped intervals (it must be guessed in advance; the rule finds each model's own)",
        "fixed budgets: " + ", ".join(f"{r['fixed_queries']}: width {r['fixed_mean_width']:.4f}, coverage "
                                      f"{r['fixed_coverage']:.3f}" for r in fixed_rows),
    ]
    return StudyResult(
        params={"study": "faq-stopping", "trials": trials, "widths": list(widths), "max_budget": max_budget,
                "min_queries": min_queries, "n_models": len(df), "new_path": str(new_path) if new_path else None},
        level={"alpha": 0.05, "meaning": "nominal 95% anytime-valid intervals, evaluated at the stopping time"},
        n=int(sum((len(ni) if ni is not None else len(Zn)) for _, ni in split_list)), seed=recorded,
        tables={"rows": pd.DataFrame(out_rows)}, info={"notes": notes},
    )
