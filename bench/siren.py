"""Benchmark: SIREN (selection-aware repeated splits + Gaussian multiplier bootstrap) against the
nonparametric item bootstrap.

What is measured
----------------
1. One (system, budget) cell from the paper's simulation design (Xu et al., Section 5 / App. C.1):
   M = 500 items, K = 10 shortlisted artifacts, R = 5 splits, rho = 0.5, softmax tau = 0.1,
   B = 1000 bootstrap draws. Item difficulty delta_i ~ U(-2, 2), artifact quality
   q_k = linspace(0, 0.3, K), Z_ik ~ Bernoulli(sigmoid(q_k - delta_i)), fixed seed.

   For that cell we time, in the same process and with the same data:

   * ``siren evaluate``     -- ``assay.siren.evaluate`` end to end (input checks, split design,
                              repeated splits with item contributions, bootstrap draws with the
                              default ``engine="exact"``, quantiles, result tables). This is what a
                              user pays, library overhead included.
   * ``siren core``         -- only the numerical pipeline on arrays: ``split_design`` +
                              ``assay.siren.core`` (repeated splits with item contributions,
                              bootstrap draws, quantiles, band). The gap to the row above is
                              library overhead (validation, pandas tables, baselines off).
   * ``... multipliers``    -- the same two with ``engine="multipliers"``: the literal B x M matrix
                              of N(0, 1) multipliers, one per item (SIREN eq. 72). Same law as the
                              exact engine, O(B M C) instead of O(M C^2 + B C^2).
   * ``item bootstrap, per-replicate`` (THE BASELINE, as the paper timed it) -- B = 1000
                              replicates: resample the M items with replacement and rerun the whole
                              repeated-split pipeline on each resample, one ``repeated_split`` call
                              per replicate (each call vectorised over splits and artifacts).
   * ``item bootstrap, batched`` -- ``assay.siren.item_bootstrap``: the same replicates, many per
                              numpy call. Our own optimisation of the baseline; its ratio is
                              reported too (``ratio_batched``), and it is the tougher comparison.

   Why the item bootstrap is the baseline: it is the generic way to get an interval for a
   tune-then-deploy estimate that respects selection -- every replicate redoes the selection, so
   the winner's curse is (approximately) propagated -- and it is what SIREN's influence-function
   shortcut replaces. SIREN computes the item contributions psi_i once and then draws the bootstrap
   law directly (exactly Gaussian given psi), instead of rerunning the pipeline B times. The paper
   reports 7.5 ms (SIREN) vs 281 ms (item bootstrap) = 37.6x for this cell.

   Every timing is the median (and min) of ``--repeats`` calls after one warm-up call, measured
   with ``time.perf_counter``; the procedures are timed round-robin (one call of each per round) so
   machine drift affects them alike. Each call uses the same fixed seed, so every repeat does
   identical work.

2. A large grid: 44 cells (11 systems x 4 budgets, K = 6 artifacts each) sharing M = 100,000 items,
   R = 10 splits, B = 2000 draws, via ``evaluate`` on a dict of arrays with
   ``include_baselines=False`` (the data, 44 x 100,000 x 6 float64 = 211 MB, use the same DGP).
   Timed with the exact engine and, outside ``--quick``, with the multiplier engine (stopped
   after one call if that call takes more than 30 s).

BLAS is limited to one thread (OMP / OpenBLAS / MKL / BLIS / vecLib variables set to 1 before
numpy is imported) so the comparison does not depend on how many cores the machine has.

The last line of the output is a JSON object with the headline numbers; ``ratio`` is
per-replicate item-bootstrap time / SIREN ``evaluate`` time (exact engine, result table built),
the comparison the paper reports (281 ms / 7.5 ms = 37.6x); ``ratio_batched`` uses the batched
item bootstrap instead.

Usage::

    python bench/siren.py              # full run (about a minute)
    python bench/siren.py --quick      # fewer repeats, grid timed once, no multiplier grid
    python bench/siren.py --repeats 51
"""

from __future__ import annotations

import os

_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")
for _var in _THREAD_VARS:  # must happen before numpy is imported
    os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from typing import Callable  # noqa: E402

import numpy as np  # noqa: E402

import assay  # noqa: E402
from assay import siren  # noqa: E402

# The paper's simulation cell (Section 5 / Appendix C.1)
M_CELL, K_CELL, R_CELL, TAU, RHO, B_CELL, ALPHA = 500, 10, 5, 0.1, 0.5, 1000, 0.05
# The large grid
GRID_SYSTEMS, GRID_BUDGETS, GRID_K, GRID_M, GRID_R, GRID_B = 11, (0.25, 0.5, 1.0, 2.0), 6, 100_000, 10, 2000
MULTIPLIER_GRID_LIMIT_S = 30.0


# --------------------------------------------------------------------------------------------
# Data and timing helpers
# --------------------------------------------------------------------------------------------


def success_prob(M: int, K: int, rng: np.random.Generator) -> np.ndarray:
    """P(Z_ik = 1) = sigmoid(q_k - delta_i), delta_i ~ U(-2, 2), q_k = linspace(0, 0.3, K)."""
    delta = rng.uniform(-2.0, 2.0, size=M)
    quality = np.linspace(0.0, 0.3, K)
    return 1.0 / (1.0 + np.exp(-(quality[None, :] - delta[:, None])))


def bernoulli(p: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return (rng.random(p.shape) < p).astype(np.float64)


def time_it(fn: Callable[[], object], repeats: int, warmup: int = 1) -> dict[str, float]:
    """Median and min wall time (seconds) of ``repeats`` calls after ``warmup`` untimed calls."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return {"median": statistics.median(times), "min": min(times), "n": repeats}


# --------------------------------------------------------------------------------------------
# The procedures being timed (single cell)
# --------------------------------------------------------------------------------------------


def siren_evaluate(Z: np.ndarray, seed: int, engine: str = "exact") -> tuple[float, float]:
    res = siren.evaluate({("s", 1.0): Z}, reps=R_CELL, score_fraction=RHO, temperature=TAU,
                         n_boot=B_CELL, alpha=ALPHA, seed=seed, engine=engine, include_baselines=False)
    row = res.cells.iloc[0]
    return float(row["ci_low"]), float(row["ci_high"])


def siren_core(Z: np.ndarray, seed: int, engine: str = "exact") -> tuple[float, float]:
    """Split design + the public core on arrays (item contributions, multiplier draws, quantiles)."""
    rng = np.random.default_rng(seed)
    in_score = siren.split_design(Z.shape[0], R_CELL, RHO, rng)
    fit = siren.core([Z], in_score, alpha=ALPHA, rng=rng, n_boot=B_CELL, selector="softmax", temperature=TAU,
                     engine=engine)
    return float(fit.ci_low[0]), float(fit.ci_high[0])


def item_bootstrap(Z: np.ndarray, seed: int) -> tuple[float, float]:
    """The library's batched nonparametric item bootstrap (the baseline)."""
    rng = np.random.default_rng(seed)
    in_score = siren.split_design(Z.shape[0], R_CELL, RHO, rng)
    ib = siren.item_bootstrap(Z, in_score, B_CELL, rng, alpha=ALPHA, selector="softmax", temperature=TAU)
    return ib["ci_low"], ib["ci_high"]


def item_bootstrap_loop(Z: np.ndarray, seed: int) -> tuple[float, float]:
    """Same replicates, one ``repeated_split`` call per replicate (informational only)."""
    rng = np.random.default_rng(seed)
    M = Z.shape[0]
    in_score = siren.split_design(M, R_CELL, RHO, rng)
    draws = np.empty(B_CELL)
    for b in range(B_CELL):
        idx = rng.integers(0, M, size=M)
        draws[b] = siren.repeated_split(Z[idx], in_score, influence=False, selector="softmax",
                                        temperature=TAU)["theta"][0]
    lo, hi = np.quantile(draws, [ALPHA / 2, 1 - ALPHA / 2])
    return float(lo), float(hi)


# --------------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true",
                    help="fewer repeats, grid timed once, multiplier-engine grid skipped")
    ap.add_argument("--repeats", type=int, default=None,
                    help="timed repeats per single-cell measurement (default 21; 5 with --quick)")
    ap.add_argument("--grid-repeats", type=int, default=None,
                    help="timed repeats of the 44-cell grid (default 3; 1 with --quick)")
    ap.add_argument("--seed", type=int, default=20240601, help="seed for the data and the procedures")
    args = ap.parse_args(argv)
    repeats = args.repeats if args.repeats is not None else (5 if args.quick else 21)
    grid_repeats = args.grid_repeats if args.grid_repeats is not None else (1 if args.quick else 3)
    if repeats < 1 or grid_repeats < 1:
        ap.error("--repeats and --grid-repeats must be at least 1")
    loop_repeats = max(1, min(repeats, 7))  # the per-replicate baseline is slow: fewer repeats

    print("SIREN benchmark" + (" (--quick)" if args.quick else ""))
    print(f"  assay {getattr(assay, '__version__', '?')}, numpy {np.__version__}, "
          f"Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs visible")
    print(f"  BLAS limited to 1 thread ({', '.join(v + '=1' for v in _THREAD_VARS[:2])}, ... set before "
          "importing numpy)")
    print("  timings: time.perf_counter, median and min of N calls after 1 warm-up call, same seed each call;\n"
          "           single-cell procedures timed round-robin")
    print()

    # ---- 1. the paper's single cell ---------------------------------------------------------
    data_rng = np.random.default_rng(args.seed)
    Z = bernoulli(success_prob(M_CELL, K_CELL, data_rng), data_rng)
    s = args.seed + 1
    print(f"[1] one cell: M={M_CELL}, K={K_CELL}, R={R_CELL}, rho={RHO}, tau={TAU}, B={B_CELL} "
          f"(mean score {Z.mean():.3f}, best artifact {Z.mean(axis=0).max():.3f})")

    runs = [
        # key, label, function, repeats
        ("evaluate", "siren evaluate (engine=exact)", lambda: siren_evaluate(Z, s), repeats),
        ("core", "siren core (engine=exact)", lambda: siren_core(Z, s), repeats),
        ("evaluate_mult", "siren evaluate (engine=multipliers)", lambda: siren_evaluate(Z, s, "multipliers"), repeats),
        ("core_mult", "siren core (engine=multipliers)", lambda: siren_core(Z, s, "multipliers"), repeats),
        ("item_loop", f"item bootstrap, B={B_CELL} (per replicate; BASELINE)", lambda: item_bootstrap_loop(Z, s), loop_repeats),
        ("item", f"item bootstrap, B={B_CELL} (batched)", lambda: item_bootstrap(Z, s), repeats),
    ]
    # Warm up every procedure, then time them round-robin (one call of each per round), so slow
    # drifts of the machine (frequency scaling, other load) hit all of them alike.
    ci: dict[str, tuple[float, float]] = {key: fn() for key, _, fn, _ in runs}
    samples: dict[str, list[float]] = {key: [] for key, _, _, _ in runs}
    for rnd in range(repeats):
        for key, _, fn, n in runs:
            if rnd < n:
                t0 = time.perf_counter()
                fn()
                samples[key].append(time.perf_counter() - t0)
    t = {k: {"median": statistics.median(v), "min": min(v), "n": len(v)} for k, v in samples.items()}
    base = t["item_loop"]["median"]

    print()
    print(f"  {'procedure':<46} {'median ms':>10} {'min ms':>9} {'N':>4} {'baseline/this':>14}  95% CI")
    for key, label, _, _ in runs:
        r = t[key]
        ratio = base / r["median"]
        lo, hi = ci[key]
        print(f"  {label:<46} {1e3 * r['median']:>10.2f} {1e3 * r['min']:>9.2f} {r['n']:>4} "
              f"{ratio:>13.1f}x  [{lo:.4f}, {hi:.4f}]")
    print()
    ratio = base / t["evaluate"]["median"]
    ratio_core = base / t["core"]["median"]
    ratio_mult = base / t["evaluate_mult"]["median"]
    ratio_core_mult = base / t["core_mult"]["median"]
    ratio_batched = t["item"]["median"] / t["evaluate"]["median"]
    print(f"  ratio item bootstrap / siren evaluate (exact)       = {ratio:7.1f}x   (paper: 281 / 7.5 ms = 37.6x; aim >= 100x)")
    print(f"  ratio item bootstrap / siren core (exact)           = {ratio_core:7.1f}x")
    print(f"  ratio item bootstrap / siren evaluate (multipliers) = {ratio_mult:7.1f}x")
    print(f"  ratio item bootstrap / siren core (multipliers)     = {ratio_core_mult:7.1f}x")
    print(f"  ratio batched item bootstrap / siren evaluate       = {ratio_batched:7.1f}x   (tougher baseline)")
    print(f"  library overhead of evaluate over the core          = "
          f"{1e3 * (t['evaluate']['median'] - t['core']['median']):.2f} ms")
    same = np.allclose(ci["item"], ci["item_loop"], rtol=0, atol=1e-12)
    print(f"  looped and batched item bootstrap give the same replicates (same CI): {'yes' if same else 'NO'}")
    print()

    # ---- 2. the large grid --------------------------------------------------------------------
    n_cells = GRID_SYSTEMS * len(GRID_BUDGETS)
    grid_rng = np.random.default_rng(args.seed + 2)
    t0 = time.perf_counter()
    p = success_prob(GRID_M, GRID_K, grid_rng)  # the items are shared by every cell
    table = {(f"sys{i:02d}", b): bernoulli(p, grid_rng) for i in range(GRID_SYSTEMS) for b in GRID_BUDGETS}
    del p
    gen_s = time.perf_counter() - t0
    mb = sum(z.nbytes for z in table.values()) / 1e6
    print(f"[2] grid: {n_cells} cells ({GRID_SYSTEMS} systems x {len(GRID_BUDGETS)} budgets), K={GRID_K}, "
          f"M={GRID_M:,}, R={GRID_R}, B={GRID_B}, include_baselines=False "
          f"(data {mb:.0f} MB, generated in {gen_s:.1f} s, not timed)")

    def grid(engine: str):
        return siren.evaluate(table, reps=GRID_R, score_fraction=RHO, temperature=TAU, n_boot=GRID_B,
                              alpha=ALPHA, seed=args.seed + 3, engine=engine, include_baselines=False)

    tg = time_it(lambda: grid("exact"), grid_repeats)
    print(f"  {'evaluate (engine=exact)':<46} {tg['median']:>8.2f} s median, {tg['min']:.2f} s min "
          f"(N={tg['n']})   target < 5 s: {'yes' if tg['median'] < 5 else 'NO'}")
    tgm: dict[str, float] | None = None
    if args.quick:
        print(f"  {'evaluate (engine=multipliers)':<46} skipped in --quick")
    else:
        times = []
        for _ in range(grid_repeats):  # the exact-engine runs above already warmed the code paths
            t0 = time.perf_counter()
            grid("multipliers")
            times.append(time.perf_counter() - t0)
            if times[-1] > MULTIPLIER_GRID_LIMIT_S:
                break
        tgm = {"median": statistics.median(times), "min": min(times), "n": len(times)}
        note = "" if tgm["median"] <= MULTIPLIER_GRID_LIMIT_S else f"  (over {MULTIPLIER_GRID_LIMIT_S:.0f} s: stopped after one call)"
        print(f"  {'evaluate (engine=multipliers)':<46} {tgm['median']:>8.2f} s median, {tgm['min']:.2f} s min "
              f"(N={tgm['n']}, no separate warm-up){note}")
    table = {}  # free the grid (the closure above is not called again)
    print()

    summary = {
        "ratio": round(ratio, 2),
        "ratio_core": round(ratio_core, 2),
        "ratio_multipliers": round(ratio_mult, 2),
        "ratio_core_multipliers": round(ratio_core_mult, 2),
        "ratio_batched": round(ratio_batched, 2),
        "siren_ms": round(1e3 * t["evaluate"]["median"], 3),
        "siren_core_ms": round(1e3 * t["core"]["median"], 3),
        "siren_multipliers_ms": round(1e3 * t["evaluate_mult"]["median"], 3),
        "siren_core_multipliers_ms": round(1e3 * t["core_mult"]["median"], 3),
        "item_bootstrap_ms": round(1e3 * base, 3),
        "item_bootstrap_batched_ms": round(1e3 * t["item"]["median"], 3),
        "grid_44x100k_s": round(tg["median"], 3),
        "grid_44x100k_multipliers_s": None if tgm is None else round(tgm["median"], 3),
        "M": M_CELL, "K": K_CELL, "R": R_CELL, "B": B_CELL, "tau": TAU, "rho": RHO,
        "repeats": repeats, "grid_repeats": grid_repeats, "quick": bool(args.quick),
        "blas_threads": 1, "seed": args.seed,
    }
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
