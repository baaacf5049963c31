"""Benchmark: FAQ (assay.faq) at the issue's scales, and the rank-one active-learning update vs the naive one.

What is measured
----------------
1. ``many_models``: 1,000 new models x 1,351 questions (the MMLU-Pro math shape), 10% budget (135 rounds),
   factors k = 16, the default policy (tau = 0.05, rho = 0), chunks of 128 models on 2 worker processes
   (``assay.parallel.get_executor(2)``): wall time. Also with active learning on (rho = 0.1).
2. ``big``: a synthetic 2,200 x 12,032 bank (the paper's MMLU-Pro size), 5% budget (601 rounds), k = 32, on 2
   processes. ``--quick`` (default) times 256 of the 2,200 models and scales linearly (models are independent and
   chunked, so time is linear in the number of chunks); ``--full`` runs all 2,200.
3. ``factor_fit``: ``FactorModel(k=32, weight_decay=1, cv=None, holdout=0.1).fit`` on a synthetic 2,200 x 12,032
   low-rank 0/1 matrix (holdout fit + warm-started refit). ``--quick`` fits 550 x 12,032 and scales by the
   number of entries (the objective is linear in them); ``--full`` fits the full size.
4. ``default_fit``: the default factor fit assay runs when none is given (``assay.faq.fit_factors``: model-level
   3-fold CV over k in {2, 4, 8, 16} x lambda in {1, 3, 10}, warm starts along lambda, then the final fit) on the
   755 x 1,351 leaderboard history (shared/data; a synthetic matrix of the same shape when absent), no cache.
   THE BASELINE is ONE fit at a fixed (k = 8, lambda = 3) with the previous release's objective (float64,
   elementwise logaddexp and mask products) and default BLAS threading: the old default CV ran 60 such fits
   (267 s, 40x one). ``fit_ratio`` = default CV fit / one old fixed-k fit.
5. ``al_ratio``: THE BASELINE is the naive active-learning score that recomputes v_j' Sigma v_j for every question
   from scratch each round (O(N k^2) per model and round, ``naive_al=True``); the library maintains it by the
   rank-one identity (O(N k)). Same inputs (200 models x 1,351 questions, k = 32, rho = 1 so the score is used every
   round, 135 rounds), same seed; both must give identical estimates. ``ratio`` = naive / rank-one.

BLAS is limited to one thread per process (variables set before numpy is imported); the 2 cores are used by
the 2 worker processes. The last line is a JSON object.

Usage::

    python bench/faq.py            # quick (about 2-3 minutes)
    python bench/faq.py --full     # the full 2,200 x 12,032 runs (about 15 minutes)
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
             "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from scipy.special import expit  # noqa: E402

from assay.faq import FactorModel  # noqa: E402
from assay.faq.core import FAQParams, run_faq  # noqa: E402
from assay.parallel import get_executor  # noqa: E402


def world(n_models: int, N: int, k: int, seed: int):
    """Question factors, a prior and answers drawn from the logistic factor model (mean accuracy ~0.3)."""
    rng = np.random.default_rng(seed)
    V = rng.normal(scale=1 / np.sqrt(k), size=(N, k)) * 1.5
    mu = np.zeros(k)
    mu[0] = -1.0
    V[:, 0] = np.abs(V[:, 0]) + 0.5
    cov = np.eye(k)
    U = rng.multivariate_normal(mu, cov, size=n_models)
    P = expit(U @ V.T)
    Z = (rng.random((n_models, N)) < P).astype(np.int8)
    world.bayes_logloss = float(-np.mean(Z * np.log(P) + (1 - Z) * np.log1p(-P)))
    return V, mu, cov, Z


def _chunk(task, ss):
    V, mu, cov, Z, n_b, params = task
    r = run_faq(V, mu, cov, Z, n_b, rng=np.random.default_rng(ss), params=params)
    return r.estimate


def run_models(V, mu, cov, Z, n_b, params, workers=2, chunk=128):
    tasks = [(V, mu, cov, Z[i:i + chunk], n_b, params) for i in range(0, Z.shape[0], chunk)]
    seeds = np.random.SeedSequence(0).spawn(len(tasks))
    t = time.perf_counter()
    out = get_executor(workers).map(_chunk, tasks, seeds, None)
    return time.perf_counter() - t, np.concatenate(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--full", action="store_true", help="run the 2,200 x 12,032 cases at full size")
    ap.add_argument("--quick", action="store_true", help="(default) scaled-down big cases, extrapolated")
    args = ap.parse_args()
    full = bool(args.full)
    rows = []

    # 1. many models
    V, mu, cov, Z = world(1000, 1351, 16, 1)
    t_many, est = run_models(V, mu, cov, Z, 135, FAQParams())
    t_many_al, _ = run_models(V, mu, cov, Z, 135, FAQParams(rho=0.1))
    rows.append(("1,000 models x 1,351 q, 10% (135 rounds), k=16, 2 procs", t_many, "target < 60 s"))
    rows.append(("  same with active learning (rho = 0.1)", t_many_al, "target < 60 s"))
    assert np.isfinite(est).all()

    # 2. big
    n_big = 2200 if full else 256
    V, mu, cov, Z = world(n_big, 12032, 32, 2)
    t_big_part, _ = run_models(V, mu, cov, Z, 601, FAQParams())
    t_big = t_big_part * (2200 / n_big)
    rows.append((f"2,200 x 12,032, 5% (601 rounds), k=32, 2 procs{'' if full else f' (timed {n_big}, scaled)'}",
                 t_big, "target < 600 s"))
    del Z

    # 3. factor fit
    n_fit = 2200 if full else 550
    Vf, muf, covf, Zf = world(n_fit, 12032, 32, 3)
    bayes = world.bayes_logloss
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fm = FactorModel(k=32, weight_decay=1.0, cv=None, holdout=0.1, seed=0).fit(Zf.astype(float))
    t_fit_part = time.perf_counter() - t
    t_fit = t_fit_part * (2200 / n_fit)
    rows.append((f"factor fit 2,200 x 12,032, k=32{'' if full else f' (timed {n_fit} rows, scaled)'}", t_fit,
                 "target < 180 s"))
    del Zf

    # 4. the default factor fit vs one fixed-k fit with the previous release's objective
    from assay.faq import api as faq_api
    from assay.faq import fit as faq_fit
    from assay.faq.factor import _fit_core
    import assay.faq.factor as factor_mod

    real = Path(__file__).resolve().parents[2] / "shared" / "data" / "openllm_v2_items" / "mmlu_pro_math_8b_models.csv"
    if real.exists():
        import pandas as pd

        Hd, hrows, hitems = faq_api.as_matrix(pd.read_csv(real, index_col=0), "history")
        source = "leaderboard 755 x 1,351"
    else:
        _, _, _, Zs = world(755, 1351, 8, 6)
        Hd = Zs.astype(float)
        hrows, hitems = [f"org{i // 4}/m{i}" for i in range(755)], [str(j) for j in range(1351)]
        source = "synthetic 755 x 1,351"
    t = time.perf_counter()
    fm_def, _ = faq_fit.fit_factors(Hd, hrows, hitems, cache=False)
    t_default = time.perf_counter() - t

    def old_objective(theta, Y, M, k, weight_decay, bias, work=None):  # work: the new signature, unused
        m, n = Y.shape
        U = theta[: m * k].reshape(m, k)
        Vv = theta[m * k: m * k + n * k].reshape(n, k)
        nobs = M.sum() if M is not None else m * n
        Mm = np.ones_like(Y) if M is None else M
        X = U @ Vv.T
        f = float(np.sum(Mm * (np.logaddexp(0.0, X) - Y * X))) / nobs + 0.5 * weight_decay / nobs * float(theta @ theta)
        G = Mm * (expit(X) - Y) / nobs
        c = weight_decay / nobs
        return f, np.concatenate([(G @ Vv + c * U).ravel(), (G.T @ U + c * Vv).ravel()])

    new_objective = factor_mod._objective
    factor_mod._objective = old_objective
    os.environ.pop("OPENBLAS_NUM_THREADS", None)  # the old fit ran with the default BLAS threads
    try:
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=None):
            t = time.perf_counter()
            _fit_core(np.nan_to_num(Hd), ~np.isnan(Hd), 8, 3.0, False, 500, 1e-6, np.random.default_rng(0))
            t_old_one = time.perf_counter() - t
    finally:
        factor_mod._objective = new_objective
    fit_ratio = t_default / t_old_one
    rows.append((f"default factor fit, CV included ({source}, k={fm_def.k_}, lambda={fm_def.weight_decay_:g})",
                 t_default, "target < 60 s"))
    rows.append(("one fixed-k fit with the previous objective (baseline)", t_old_one,
                 f"default CV = {fit_ratio:.1f}x one old fit (was 40x)"))

    # 5. rank-one vs naive active-learning score
    V, mu, cov, Z = world(200, 1351, 32, 4)
    prm = FAQParams(rho=1.0)
    t = time.perf_counter()
    fast = run_faq(V, mu, cov, Z, 135, rng=np.random.default_rng(5), params=prm)
    t_fast = time.perf_counter() - t
    t = time.perf_counter()
    slow = run_faq(V, mu, cov, Z, 135, rng=np.random.default_rng(5), params=prm, naive_al=True)
    t_slow = time.perf_counter() - t
    diff = float(np.max(np.abs(fast.estimate - slow.estimate)))
    same_items = bool(np.array_equal(fast.items, slow.items))
    ratio = t_slow / t_fast
    rows.append(("AL score, rank-one (200 x 1,351, k=32, rho=1, 135 rounds, 1 proc)", t_fast, ""))
    rows.append(("AL score, naive O(N k^2) recompute (baseline)", t_slow, f"ratio {ratio:.1f}x"))

    w = max(len(r[0]) for r in rows)
    print(f"{'case':<{w}}  {'seconds':>9}  note")
    for name, sec, note in rows:
        print(f"{name:<{w}}  {sec:9.2f}  {note}")
    print(f"rank-one vs naive: max |estimate difference| = {diff:.2e}, same questions drawn: {same_items}")
    print(f"factor fit: k={fm.k_}, train log-loss {fm.train_logloss_:.3f}, held-out {fm.heldout_logloss_:.3f}, "
          f"{fm.n_iter_} L-BFGS iterations (converged: {fm.converged_}); log-loss of the true probabilities {bayes:.3f}")
    print(json.dumps({
        "many_models_s": round(t_many, 2), "many_models_al_s": round(t_many_al, 2),
        "big_s": round(t_big, 1), "big_scaled": not full, "factor_fit_s": round(t_fit, 1), "factor_fit_scaled": not full,
        "al_rank_one_s": round(t_fast, 3), "al_naive_s": round(t_slow, 3), "al_max_diff": diff,
        "ratio": round(ratio, 2), "full": full, "blas_threads_per_process": 1,
        "default_fit_s": round(t_default, 1), "old_fixed_k_fit_s": round(t_old_one, 1), "fit_ratio": round(fit_ratio, 2),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
