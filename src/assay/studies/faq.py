"""FAQ on real Open LLM Leaderboard answers (paper Sec. 4-5, Fig. 2; study ``faq-leaderboard``).

Data: ``shared/data/openllm_v2_items/mmlu_pro_math_8b_models.csv``: 755 real models x 1,351 MMLU-Pro math
questions (doc_id 7504-8854), read at run time (no redistribution licence: nothing is copied into the
package). The paper used 2.2K historical and 2.2K new models on all 12,032 MMLU-Pro questions.

Protocol
--------
* Models are split at random (seeded; the file has no release dates, the paper split by date) into a
  history of ``n_history`` models and ``n_new`` new models (default 555 / 200).
* :func:`assay.faq.protocol` with ``tune=True``: the last 20% of the history are validation models; the factor
  model is fitted by assay on the other 80% (3-fold CV over k in {4, 8, 16, 32} and lambda in {1, 3, 10}, 1-SE
  rule), FAQ's sampling policy (rho, gamma, tau; variance fixed to "conservative", see assay.faq.api.DEFAULT_GRID)
  and the baselines' (policy, tau) are chosen on the
  validation models (max ESS subject to coverage >= 95% - 1 MC s.e.), the factors are refitted on the whole
  history with the chosen (k, lambda), and every method runs on the new models for ``trials`` seeds.
* Methods: FAQ; uniform sampling without replacement with the sample mean (the honest reference); the paper's
  Horvitz-Thompson "uniform" (Bernoulli sampling in nature's order, zero predictor); AIPW active inference with
  the historical per-question mean (Zrnic & Candès, Neyman / 2min policy); and the same with the online factor
  model (the paper's ablation). ``faq:<variance>`` rows show FAQ's other variance estimators on the same draws.

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

STUDY_GRID = {
    "beta0": (1.0,),
    "rho": (0.0, 0.1),
    "gamma": (0.0, 0.25),
    "tau": (0.05, 0.25, 0.5),
    "variance": ("conservative",),
    "quantile": ("normal",),
}


def shared_data_dir() -> Path:
    """``../shared/data`` next to the repository (or $ASSAY_SHARED_DATA)."""
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


def load_leaderboard(path: str | Path | None = None) -> pd.DataFrame:
    """The 755 x 1,351 MMLU-Pro math matrix as a wide DataFrame (index = model, columns = doc ids as str)."""
    p = Path(path) if path is not None else shared_data_dir() / DATA
    if not p.exists():
        raise AssayInputError(f"{p} not found: this study reads shared/data/{DATA} (see its README); set "
                              "ASSAY_SHARED_DATA to the shared data folder")
    df = pd.read_csv(p, index_col=0)
    df.columns = [str(c) for c in df.columns]
    df.index = df.index.astype(str)
    return df


@register("faq-leaderboard")
def study_leaderboard(
    *,
    trials: int = 20,
    budgets: Sequence[float] = (0.025, 0.05, 0.075, 0.1, 0.15, 0.25),
    n_history: int = 555,
    n_new: int = 200,
    val_seeds: int = 10,
    grid: dict | None = None,
    cv_ks: Sequence[int] = (4, 8, 16, 32),
    cv_lambdas: Sequence[float] = (1.0, 3.0, 10.0),
    methods: Sequence[str] = ("faq", "uniform", "ht_uniform", "aipw", "ai_factor"),
    path: str | Path | None = None,
    seed: int | None = 0,
    workers: int = 1,
    progress: Callable[[int, int], None] | None = None,
) -> StudyResult:
    """FAQ vs uniform sampling and active-inference baselines on real leaderboard answers (coverage, width, ESS)."""
    from ..faq import FactorModel, protocol
    from ..parallel import resolve_seed

    df = load_leaderboard(path)
    if n_history + n_new > len(df):
        raise AssayInputError(f"n_history + n_new = {n_history + n_new} exceeds the {len(df)} models in the data")
    recorded, ss = resolve_seed(seed)
    split_ss, run_ss = ss.spawn(2)
    perm = np.random.default_rng(split_ss).permutation(len(df))
    hist = df.iloc[perm[:n_history]]
    new = df.iloc[perm[n_history:n_history + n_new]]
    fm = FactorModel(cv=3, ks=tuple(cv_ks), lambdas=tuple(cv_lambdas), seed=int(run_ss.generate_state(1)[0]),
                     max_iter=400)
    res = protocol(hist, new, budgets=budgets, seeds=trials, seed=int(run_ss.generate_state(2)[1]), methods=methods,
                   factors=fm, tune=True, grids={"faq": grid or STUDY_GRID}, val_seeds=val_seeds,
                   variance_rows=True, workers=workers, progress=progress)
    rows = res.table.copy()
    rows.insert(0, "study", "faq-leaderboard")
    rows["ref_released_ess_vs_ht"] = [REF_RELEASED.get(round(b, 4), (np.nan, np.nan))[0] if m == "faq" else np.nan
                                      for b, m in zip(rows["budget"], rows["method"])]
    rows["ref_released_coverage"] = [REF_RELEASED.get(round(b, 4), (np.nan, np.nan))[1] if m == "faq" else np.nan
                                     for b, m in zip(rows["budget"], rows["method"])]
    rows["paper_ess"] = [PAPER_MMLU.get(round(b, 4), (np.nan, np.nan))[0] if m == "faq" else np.nan
                         for b, m in zip(rows["budget"], rows["method"])]
    rows["paper_coverage"] = [PAPER_MMLU.get(round(b, 4), (np.nan, np.nan))[1] if m == "faq" else np.nan
                              for b, m in zip(rows["budget"], rows["method"])]
    pm = res.tables["per_model"]
    low = pm[pm["method"] == "faq"].groupby("budget")["coverage"].apply(lambda c: float((c < 0.85).mean()))
    notes = [
        "ESS = (mean width of the reference / mean width of the method)^2 per seed, averaged over seeds",
        "uniform = simple random sample without replacement, sample mean, finite-population correction; "
        "ht_uniform = the paper's reference (Bernoulli sampling, Horvitz-Thompson with zero predictor)",
        f"history {n_history} / new {n_new} models (random split), {df.shape[1]} questions; factors: "
        f"k={res.info['factors']['k']}, weight_decay={res.info['factors']['weight_decay']}, train log-loss "
        f"{res.info['factors']['train_logloss']:.3f}, held-out {res.info['factors']['heldout_logloss']:.3f}",
        "share of new models whose own FAQ coverage over the seeds is below 0.85, per budget: "
        + ", ".join(f"{b:g}: {v:.3f}" for b, v in low.items()),
    ]
    return StudyResult(
        params={"study": "faq-leaderboard", "trials": trials, "budgets": list(budgets), "n_history": n_history,
                "n_new": n_new, "val_seeds": val_seeds, "methods": list(methods)},
        level={"alpha": 0.05, "meaning": "nominal 95% CIs for each new model's accuracy over the 1,351 questions"},
        n=n_new, seed=recorded, tables={"rows": rows},
        info={"notes": notes},
    )
