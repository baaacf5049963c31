"""Benchmark: assay.compare at scale, and the price of the finite guarantee.

1. Speed and memory. K models x n questions of 0/1 scores (simulated: accuracies spread over [0.3, 0.8]), both
   guarantees through the public core (:func:`assay.compare.core.asymptotic` / :func:`~assay.compare.core.finite`).
   BASELINE, timed in the same run: a loop over the pairs, each pair's paired differences formed and its interval
   computed on its own (the asymptotic one with its own standard error, the finite one with its own confidence
   sequence), on a sample of 400 pairs scaled to all K (K - 1) / 2. ``ratio`` = baseline / assay. Peak memory is
   this process's resident peak after each case.
2. The price of anytime validity: on the real Open LLM Leaderboard MMLU-Pro math matrix (755 models x 1,351
   questions, ``../shared/data``; 8 models spread over its accuracy range), how many of the 28 pairs each guarantee
   orders when 100, 1,000 and 10,000 questions are drawn with replacement (the mean over 20 draws).

Usage::

    python bench/compare.py           # 100 x 12,000 and 300 x 12,000, and the price table (a few minutes)
    python bench/compare.py --quick   # 30 x 2,000, the price table at 100 and 1,000 questions

The last line is a JSON object.
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path

import numpy as np

from assay.compare import core

MATRIX = Path(__file__).resolve().parents[2] / "shared" / "data" / "openllm_v2_items" / "mmlu_pro_math_8b_models.csv"


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def simulate(K: int, n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.3, 0.8, K)
    return (rng.random((K, n)) < p[:, None]).astype(np.float64)


def per_pair_baseline(S: np.ndarray, guarantee: str, sample: int = 400) -> float:
    """Seconds for all pairs, one pair at a time, the same mathematics as the core (timed on ``sample`` pairs,
    scaled): asymptotic, each pair's differences, standard error, how many answers lie off its common value (is it
    degenerate?) and column of bootstrap draws; finite, each pair's confidence sequence and excursion bounds."""
    K, n = S.shape
    a, b = core.pair_index(K)
    pick = np.random.default_rng(1).choice(len(a), size=min(sample, len(a)), replace=False)
    alpha = 0.05 / (K + len(a))
    m = S.mean(axis=1)
    G = np.random.default_rng(2).standard_normal((4000, K)) * 0.01
    t = time.perf_counter()
    mx = np.zeros(4000)
    for p in pick:
        d = S[a[p]] - S[b[p]]
        if guarantee == "asymptotic":
            u = d - (m[a[p]] - m[b[p]])
            se = np.sqrt((u @ u) * n / (n - 1)) / n
            values, counts = np.unique(d, return_counts=True)
            _ = n - counts.max() < core.MIN_DIFFER
            mx = np.maximum(mx, np.abs(G[:, a[p]] - G[:, b[p]]) / se)
        else:
            y = ((d + 1.0) / 2.0)[None, :]
            core.eb_confidence_sequence(y, alpha * (1 - core.EXCURSION), horizon=n)
            core.mixture_upper(np.array([(y > 0).sum(), (y < 1).sum()]), n, alpha * core.EXCURSION / 2, n / 2)
    return (time.perf_counter() - t) * len(a) / len(pick)


def speed(K: int, n: int) -> list[dict]:
    S = simulate(K, n)
    rows = []
    for g in core.GUARANTEES:
        fn = core.asymptotic if g == "asymptotic" else core.finite
        t = time.perf_counter()
        fn(S, None, delta=0.05, low=0.0, high=1.0, rng=np.random.default_rng(0))
        sec = time.perf_counter() - t
        base = per_pair_baseline(S, g)
        rows.append({"models": K, "questions": n, "pairs": K * (K - 1) // 2, "guarantee": g, "seconds": round(sec, 3),
                     "baseline_s": round(base, 2), "ratio": round(base / sec, 1), "peak_mb": round(_rss_mb())})
    return rows


def price(ns: tuple[int, ...], draws: int = 20) -> list[dict]:
    if not MATRIX.exists():
        return []
    import pandas as pd

    M = pd.read_csv(MATRIX, index_col=0).to_numpy(dtype=float)
    acc = M.mean(axis=1)
    order = np.argsort(acc)
    S = M[order[np.linspace(len(order) * 0.2, len(order) - 1, 8).astype(int)]]
    rows = []
    for n in ns:
        rng = np.random.default_rng(n)
        resolved = {g: [] for g in core.GUARANTEES}
        for r in range(draws):
            X = S[:, rng.integers(0, S.shape[1], n)]
            for g in core.GUARANTEES:
                fn = core.asymptotic if g == "asymptotic" else core.finite
                kw = {"n_boot": 1000} if g == "asymptotic" else {}
                out = fn(X, None, delta=0.05, low=0.0, high=1.0, rng=np.random.default_rng(r), **kw)
                resolved[g].append(int(((out.d_lo > 0) | (out.d_hi < 0)).sum()))
        rows.append({"questions": n, "pairs": 28, **{f"ordered_{g}": round(float(np.mean(v)), 2)
                                                   for g, v in resolved.items()}})
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    sizes = [(30, 2000)] if args.quick else [(100, 12_000), (300, 12_000)]
    rows = [r for K, n in sizes for r in speed(K, n)]
    print(f"{'models':>6} {'questions':>9} {'pairs':>6} {'guarantee':>10} {'assay s':>8} {'per-pair loop s':>15} "
          f"{'ratio':>6} {'peak MB':>7}")
    for r in rows:
        print(f"{r['models']:>6} {r['questions']:>9} {r['pairs']:>6} {r['guarantee']:>10} {r['seconds']:>8} "
              f"{r['baseline_s']:>15} {r['ratio']:>6} {r['peak_mb']:>7}")
    prices = price((100, 1000) if args.quick else (100, 1000, 10_000))
    if prices:
        print("\npairs of 8 real models ordered (mean over 20 draws of the questions), of 28:")
        print(f"{'questions':>9} {'asymptotic':>10} {'finite':>7}")
        for r in prices:
            print(f"{r['questions']:>9} {r['ordered_asymptotic']:>10} {r['ordered_finite']:>7}")
    print(json.dumps({"speed": rows, "price": prices}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
