"""Benchmark: CDF bands for PS-DME (assay.stats.bands) -- exact Berk-Jones critical values and
vectorised DKW bands -- against naive implementations run in the same process.

What is measured
----------------
1. Exact BJ critical value q_n(1 - alpha) (PS-DME App. F, eq. 40), alpha = 0.1 and 1e-3, at n = 1,000
   and n = 10,000: ``bands.bj_critical_value`` with its caches cleared before every call, so each timed
   call does the full work (boundaries by vectorised bisection, about 10 exact non-crossing
   probabilities by the Poissonised, windowed Noe recursion, Brent root search). The value is printed
   as c (KL scale) and t = n c (the research notes' scale).
2. One exact BJ non-crossing probability at n = ``--naive-n`` (default 300): the library's recursion
   versus THE BJ BASELINE, a straightforward pure-Python Noe recursion (merged breakpoints, binomial
   transitions, full O(n) x O(n) double loop per breakpoint, i.e. O(n^3)), the textbook algorithm.
   The baseline takes a few seconds at n = 300 and grows like n^3, so it is timed at that moderate n
   only; both must agree (the difference is printed). ``ratio_bj`` = baseline / library at that n.
3. DKW bands (eq. 13a-b) for K = 2,000 configurations x n = 1,000 observations, alpha = 0.01:
   ``bands.dkw_band`` (one vectorised call: sort, tie-aware ECDF on both sides of every jump, bounds)
   versus THE DKW BASELINE, a Python loop over configurations doing the same per row with numpy
   (sort, two searchsorted calls, clip). ``ratio_dkw`` = loop / vectorised.

4. ``psdme.bands`` end to end at the paper's largest setting (Sec. 5.2: K = 2,000 ridge configurations, the
   M = 1,000 with the smallest mean selected, delta = 0.1) with n = 100 observations each (the paper's largest
   calibration size) and with n = 1,000 (ten times it): a tidy (config, kpi) table in, DKW and Berk-Jones bands,
   guaranteed KPIs and the long table of band points out. Timed, and its PEAK MEMORY measured in a separate
   untimed call: tracemalloc's peak above what is held before the call (it sees numpy's buffers and pandas').
   What dominates it at n = 1,000 (printed): preparing the table (pandas grouping of 2,000,000 rows, about
   85 MB for 16 MB of KPI values) and the returned long table of band points (1,000 selected x 1,000 points x 7
   columns, about 60 MB); ``include_bands=False`` drops the latter. The KPIs are real numbers: float64 is their
   natural storage, no M x N copy of 0/1 data exists here. The process's max RSS is printed too.

Every timing is the median (and min) of N calls after one warm-up call, measured with
time.perf_counter. BLAS is limited to one thread (variables set before numpy is imported).

The last line of the output is a JSON object; ``ratio`` is ``ratio_bj`` (the headline: exact BJ
probability, library vs naive recursion, same n, same process).

Usage::

    python bench/psdme.py            # full run (about a minute)
    python bench/psdme.py --quick    # fewer repeats
"""

from __future__ import annotations

import os

_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")
for _var in _THREAD_VARS:  # must happen before numpy is imported
    os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from typing import Callable  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import assay  # noqa: E402
from assay import psdme  # noqa: E402
from assay.stats import bands as B  # noqa: E402
from _memory import maxrss_mb, peak_mb  # noqa: E402

K_DKW, N_DKW, ALPHA_DKW = 2000, 1000, 0.01
# the paper's synthetic experiment (Sec. 5.2): K = 2,000 configurations, the 1,000 best by mean selected
K_PAPER, SELECT_PAPER, NS_PAPER, DELTA_PAPER = 2000, "top:1000", (100, 1000), 0.1


def time_it(fn: Callable[[], object], repeats: int, setup: Callable[[], None] | None = None,
            warmup: int = 1) -> dict[str, float]:
    """Median and min wall time (s) of ``repeats`` calls after ``warmup`` calls; ``setup`` runs untimed
    before every call."""
    for _ in range(warmup):
        if setup:
            setup()
        fn()
    times = []
    for _ in range(repeats):
        if setup:
            setup()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return {"median": statistics.median(times), "min": min(times), "n": repeats}


def clear_caches() -> None:
    B._bj_critical_cached.cache_clear()
    B._bj_boundaries_cached.cache_clear()


# ---- baselines ------------------------------------------------------------------------------


def naive_noe(lower, upper) -> float:
    """The pure-Python O(n^3) Noe recursion that the library keeps as a reference (the baseline)."""
    return B.noncrossing_probability_reference(lower, upper)


def dkw_loop(x: np.ndarray, alpha: float):
    out = []
    for row in x:
        s = np.sort(row)
        n = s.size
        eps = math.sqrt(math.log(2.0 / alpha) / (2.0 * n))
        right = np.searchsorted(s, s, side="right") / n
        left = np.searchsorted(s, s, side="left") / n
        out.append((np.maximum(right - eps, 0), np.minimum(right + eps, 1),
                    np.maximum(left - eps, 0), np.minimum(left + eps, 1)))
    return out


# ---- main -----------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer repeats")
    ap.add_argument("--repeats", type=int, default=None, help="repeats of the fast calls (default 7; 3 quick)")
    ap.add_argument("--naive-n", type=int, default=300, help="n for the naive Noe baseline (default 300; a few seconds)")
    ap.add_argument("--seed", type=int, default=20240601)
    args = ap.parse_args(argv)
    reps = args.repeats if args.repeats is not None else (3 if args.quick else 7)
    big_reps = 1 if args.quick else 3
    naive_reps = 1 if args.quick else 3

    print("PS-DME bands benchmark" + (" (--quick)" if args.quick else ""))
    print(f"  assay {getattr(assay, '__version__', '?')}, numpy {np.__version__}, "
          f"Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs visible")
    print("  BLAS limited to 1 thread; median and min of N calls after 1 warm-up call; BJ caches cleared "
          "before every call")
    print()

    # 1. exact BJ critical values
    print("1. exact Berk-Jones critical value (uncached)")
    print(f"  {'n':>6} {'alpha':>7} {'c (KL scale)':>14} {'t = n c':>10} {'median':>9} {'min':>9}  N")
    bj = {}
    for n in (1000, 10000):
        for a in (0.1, 1e-3):
            r = big_reps if n > 1000 else reps
            tm = time_it(lambda: B.bj_critical_value(n, a), r, setup=clear_caches)
            c = B.bj_critical_value(n, a)
            bj[(n, a)] = (c, tm)
            print(f"  {n:>6} {a:>7g} {c:>14.8g} {n * c:>10.6f} {tm['median']:>8.3f}s {tm['min']:>8.3f}s  {tm['n']}")
    print()

    # 2. one probability: library vs naive Python Noe
    n0 = args.naive_n
    c0 = B.bj_critical_value(n0, 0.1)
    a0, b0 = B.bj_boundaries(n0, c0)
    lo, up = list(map(float, a0[1:])), list(map(float, b0[:-1]))
    t_fast = time_it(lambda: B.bj_noncrossing_probability(n0, c0), reps)
    t_naive = time_it(lambda: naive_noe(lo, up), naive_reps, warmup=0)
    p_fast, p_naive = B.bj_noncrossing_probability(n0, c0), naive_noe(lo, up)
    ratio_bj = t_naive["median"] / t_fast["median"]
    print(f"2. one exact BJ non-crossing probability at n = {n0} (c = q_n(0.9))")
    print(f"  {'library (Poissonised, windowed Noe)':<44} {1e3 * t_fast['median']:>10.3f} ms  P = {p_fast:.15f}")
    print(f"  {'naive Python Noe (binomial, O(n^3))':<44} {1e3 * t_naive['median']:>10.3f} ms  P = {p_naive:.15f}")
    print(f"  |difference| = {abs(p_fast - p_naive):.2e}; speed-up {ratio_bj:.1f}x (baseline timed only at this n:"
          " it grows like n^3)")
    print()

    # 3. DKW bands K x n
    rng = np.random.default_rng(args.seed)
    x = rng.lognormal(size=(K_DKW, N_DKW))
    t_dkw = time_it(lambda: B.dkw_band(x, ALPHA_DKW), reps)
    t_loop = time_it(lambda: dkw_loop(x, ALPHA_DKW), reps)
    band, loop = B.dkw_band(x, ALPHA_DKW), dkw_loop(x, ALPHA_DKW)
    same = all(np.allclose(band.lower[k], loop[k][0]) and np.allclose(band.upper_left[k], loop[k][3])
               for k in range(0, K_DKW, 97))
    ratio_dkw = t_loop["median"] / t_dkw["median"]
    print(f"3. DKW bands, K = {K_DKW} x n = {N_DKW}, alpha = {ALPHA_DKW} (both sides of every jump)")
    print(f"  {'dkw_band (vectorised)':<44} {1e3 * t_dkw['median']:>10.3f} ms (min {1e3 * t_dkw['min']:.3f})")
    print(f"  {'per-config Python loop':<44} {1e3 * t_loop['median']:>10.3f} ms (min {1e3 * t_loop['min']:.3f})")
    print(f"  agree: {same}; speed-up {ratio_dkw:.1f}x")
    print()

    # 4. psdme.bands end to end at the paper's size, with peak memory
    print(f"4. psdme.bands end to end: K = {K_PAPER} configurations, select {SELECT_PAPER}, delta = {DELTA_PAPER} "
          "(paper Sec. 5.2); tidy table in, result out")
    print(f"  {'n':>6} {'band':<11} {'table MB':>9} {'median':>9} {'min':>9} {'peak MB':>8} {'prepare':>8} "
          f"{'no bands':>9}")
    paper: dict[str, dict[str, float]] = {}
    from assay.data.psdme import prepare as ps_prepare
    for n in NS_PAPER:
        xs = rng.lognormal(size=(K_PAPER, n)) * np.linspace(1.0, 2.0, K_PAPER)[:, None]
        df = pd.DataFrame({"config": np.repeat([f"c{k:04d}" for k in range(K_PAPER)], n), "kpi": xs.ravel()})
        table_mb = df.memory_usage(deep=True).sum() / 1e6
        prep_peak = peak_mb(lambda: ps_prepare(df))
        for band_kind in ("dkw", "berk-jones"):
            def call(include_bands: bool = True):
                return psdme.bands(df, select=SELECT_PAPER, delta=DELTA_PAPER, band=band_kind, seed=0,
                                   include_bands=include_bands)
            tm = time_it(call, big_reps)
            pk = peak_mb(call)
            pk_nb = peak_mb(lambda: call(False))
            paper[f"n{n}_{band_kind}"] = {"s": round(tm["median"], 4), "peak_mb": round(pk, 1),
                                          "peak_no_bands_mb": round(pk_nb, 1), "prepare_peak_mb": round(prep_peak, 1),
                                          "table_mb": round(table_mb, 1)}
            print(f"  {n:>6} {band_kind:<11} {table_mb:>9.1f} {tm['median']:>8.3f}s {tm['min']:>8.3f}s {pk:>8.1f} "
                  f"{prep_peak:>8.1f} {pk_nb:>9.1f}")
    print("  peak MB: tracemalloc peak of one call above its inputs; 'prepare': of assay.data.psdme.prepare alone; "
          "'no bands': include_bands=False (no long table of band points)")
    print(f"  process max RSS so far: {maxrss_mb():.0f} MB")
    print()

    summary = {
        "bands_paper": paper,
        "bands_paper_peak_mb": paper[f"n{NS_PAPER[-1]}_berk-jones"]["peak_mb"],
        "maxrss_mb": round(maxrss_mb(), 1),
        "bj_n1000_s": round(bj[(1000, 0.1)][1]["median"], 4),
        "bj_n1000_alpha1e-3_s": round(bj[(1000, 1e-3)][1]["median"], 4),
        "bj_n10000_s": round(bj[(10000, 0.1)][1]["median"], 4),
        "bj_n10000_alpha1e-3_s": round(bj[(10000, 1e-3)][1]["median"], 4),
        "bj_t_n1000": round(1000 * bj[(1000, 0.1)][0], 6),
        "bj_t_n1000_alpha1e-3": round(1000 * bj[(1000, 1e-3)][0], 6),
        "bj_t_n10000": round(10000 * bj[(10000, 0.1)][0], 6),
        "bj_t_n10000_alpha1e-3": round(10000 * bj[(10000, 1e-3)][0], 6),
        "dkw_2000x1000_s": round(t_dkw["median"], 4),
        "dkw_loop_2000x1000_s": round(t_loop["median"], 4),
        "bj_prob_ms": round(1e3 * t_fast["median"], 3),
        "naive_noe_ms": round(1e3 * t_naive["median"], 3),
        "naive_n": n0,
        "ratio_bj": round(ratio_bj, 2),
        "ratio_dkw": round(ratio_dkw, 2),
        "ratio": round(ratio_bj, 2),
        "repeats": reps, "quick": bool(args.quick), "blas_threads": 1, "seed": args.seed,
    }
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
