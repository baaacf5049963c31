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

2. The law-cell study at scale. The paper's real-data grid (Sec. 4; ``law_dspy_full``: MMLU-Pro Law, DSPy
   tuner, 11 open models x 4 token budgets {0.5M, 1.5M, 3M, 6.5M} = 44 cells, shortlists of K <= 6, R = 10 splits,
   one evaluation pool of M = 1,001 items shared by every cell; the shipped ``siren-law`` data are 3 of those
   models) with the pool grown to M = 100,000 items: 44 cells x K = 6 artifacts x 100,000 items of 0/1 scores
   from the DGP above, B = 1,000 multipliers (the issue's size) and B = 2,000 (the paper's), timed through
   ``evaluate`` on a dict of arrays with ``include_baselines=False``. Each row runs in its own subprocess with
   the BLAS thread count shown (1, and 2 = what numpy does by default on this 2-core machine; the multiplier
   engine then also draws its blocks in 2 threads), for both engines, with the scores stored as float64 (as the
   SIREN release ships its tensors: 211 MB) and, on 2 threads, as int8 (26 MB; evaluate keeps int8 / bool
   scores and converts a block of items at a time). Printed: wall time (median of N calls after a warm-up),
   process CPU time per call (wall exceeding CPU means the process waited for a core), the PEAK MEMORY of one
   evaluate above its inputs (tracemalloc, untimed call) and the subprocess's max RSS.

   Peak memory, what dominates: 131 MB above the inputs with the exact engine, the three (M, C) float64 arrays
   of item contributions ``core`` returns (psi, psi_heldout, psi_selection: 3 x 35 MB) plus a few 16 MB blocks of
   items being converted; the multiplier engine adds its blocks of multipliers (2 threads x 34 MB). No copy of
   the M x K score matrices is made (0/1 scores may be held as int8 or bool), and the B x M multipliers are never
   held at once.

3. THE GRID BASELINE at a size where it finishes: the same 44 cells at M = 10,000 items, B = 1,000, all on one
   thread in one subprocess: the nonparametric item bootstrap (resample the items with replacement, one resample
   shared by all cells, and rerun every cell's repeated-split pipeline; batched 64 replicates per numpy call),
   timed once (it takes tens of seconds), against ``evaluate`` with either engine in the same process.
   ``ratio_grid`` = item bootstrap / SIREN (exact engine). At M = 100,000 the baseline would take ten times as
   long; it is not run (nothing is extrapolated).

BLAS is limited to one thread in the main process (section 1), so the single-cell comparison does not depend on
how many cores the machine has. Skip section 3 with ``--no-item-bootstrap``.

The last line of the output is a JSON object with the headline numbers; ``ratio`` is
per-replicate item-bootstrap time / SIREN ``evaluate`` time (exact engine, result table built),
the comparison the paper reports (281 ms / 7.5 ms = 37.6x); ``ratio_batched`` uses the batched
item bootstrap instead.

Usage::

    python bench/siren.py              # full run (a few minutes)
    python bench/siren.py --quick      # fewer repeats, grid timed once, 3 grid rows, no item bootstrap
    python bench/siren.py --repeats 51
"""

from __future__ import annotations

import os

_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")

def _threads_from_argv() -> str:
    """``--threads N`` (grid workers only) must be known before numpy is imported."""
    import sys as _sys
    argv = _sys.argv[1:]
    for i, a in enumerate(argv):
        if a == "--threads" and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith("--threads="):
            return a.split("=", 1)[1]
    return "1"


BLAS_THREADS = _threads_from_argv()
for _var in _THREAD_VARS:  # must happen before numpy is imported
    os.environ[_var] = BLAS_THREADS

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from typing import Callable  # noqa: E402

import numpy as np  # noqa: E402

import assay  # noqa: E402
from assay import siren  # noqa: E402
from _memory import maxrss_mb, peak_mb  # noqa: E402

# The paper's simulation cell (Section 5 / Appendix C.1)
M_CELL, K_CELL, R_CELL, TAU, RHO, B_CELL, ALPHA = 500, 10, 5, 0.1, 0.5, 1000, 0.05
# The law-cell study at scale: the paper's MMLU-Pro Law grid (11 models x 4 budgets = 44 cells, DSPy shortlists of
# K <= 6, R = 10) with M = 100,000 items instead of 1,001, and B = 1,000 multipliers (the size; 2,000 too)
GRID_SYSTEMS, GRID_BUDGETS, GRID_K, GRID_M, GRID_R = 11, (0.5, 1.5, 3.0, 6.5), 6, 100_000, 10
GRID_BS = (1000, 2000)
# the item bootstrap on the same 44 cells at the largest item count where B = 1,000 replicates still finish in
# well under a minute on one core
IB_M, IB_B = 10_000, 1000


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
    times, cpu = [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return {"median": statistics.median(times), "min": min(times), "n": repeats, "cpu": statistics.median(cpu)}


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
# The law-cell grid at scale (run in subprocesses: each with its own BLAS threads and max RSS)
# --------------------------------------------------------------------------------------------


def grid_table(M: int, seed: int, dtype: str) -> dict[tuple[str, float], np.ndarray]:
    """44 cells (11 systems x 4 budgets) of K = 6 artifacts on the same M items, 0/1 scores from the paper's DGP,
    stored as float64 (as the SIREN release ships its tensors) or int8."""
    rng = np.random.default_rng(seed)
    p = success_prob(M, GRID_K, rng)  # the items are shared by every cell
    return {(f"sys{i:02d}", b): (rng.random(p.shape) < p).astype(dtype)
            for i in range(GRID_SYSTEMS) for b in GRID_BUDGETS}


def grid_evaluate(table, engine: str, n_boot: int, seed: int):
    return siren.evaluate(table, reps=GRID_R, score_fraction=RHO, temperature=TAU, n_boot=n_boot, alpha=ALPHA,
                          seed=seed, engine=engine, include_baselines=False)


def grid_item_bootstrap(table, n_boot: int, seed: int, batch: int = 64) -> np.ndarray:
    """THE GRID BASELINE: the nonparametric item bootstrap on every cell, B replicates that resample the items
    with replacement (one resample shared by all cells, as SIREN shares one multiplier per item) and rerun the
    repeated-split pipeline of every cell on it; percentile intervals. Batched (``batch`` replicates per numpy
    call), i.e. the library's optimised form (``siren.item_bootstrap``), not a per-replicate loop."""
    cells = list(table.values())
    M = cells[0].shape[0]
    rng = np.random.default_rng(seed)
    in_score = siren.split_design(M, GRID_R, RHO, rng)
    draws = np.empty((n_boot, len(cells)))
    for start in range(0, n_boot, batch):
        b = min(batch, n_boot - start)
        idx = rng.integers(0, M, size=(b, M))
        for j, Z in enumerate(cells):
            draws[start:start + b, j] = siren.repeated_split(Z[idx], in_score, influence=False, selector="softmax",
                                                             temperature=TAU)["theta"]
    return np.quantile(draws, [ALPHA / 2, 1 - ALPHA / 2], axis=0)


def grid_worker(args) -> int:
    """One grid measurement in this process (``--grid-worker``): prints one JSON line."""
    out: dict[str, object] = {"threads": int(BLAS_THREADS), "dtype": args.dtype, "items": args.items,
                              "engine": args.engine}
    table = grid_table(args.items, args.seed + 2, args.dtype)
    out["input_mb"] = round(sum(z.nbytes for z in table.values()) / 1e6, 1)
    seed = args.seed + 3
    if args.engine == "item-bootstrap":
        t = time_it(lambda: grid_item_bootstrap(table, IB_B, seed), 1, warmup=0)
        out["item_bootstrap"] = t
        for engine in ("exact", "multipliers"):
            out[engine] = time_it(lambda: grid_evaluate(table, engine, IB_B, seed), args.repeats)
    else:
        for B in args.n_boot:
            out[str(B)] = time_it(lambda: grid_evaluate(table, args.engine, B, seed), args.repeats)
        out["peak_mb"] = round(peak_mb(lambda: grid_evaluate(table, args.engine, args.n_boot[0], seed)), 1)
        out["peak_b"] = args.n_boot[0]
    out["maxrss_mb"] = round(maxrss_mb(), 1)
    print(json.dumps(out))
    return 0


def run_grid_worker(threads: int, engine: str, n_boots: tuple[int, ...], repeats: int, seed: int,
                    dtype: str = "float64", items: int = GRID_M) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--grid-worker", "--threads", str(threads), "--engine", engine,
           "--dtype", dtype, "--items", str(items), "--grid-repeats", str(repeats), "--seed", str(seed),
           "--n-boot", *map(str, n_boots)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"grid worker failed: {' '.join(cmd)}\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


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
    ap.add_argument("--no-item-bootstrap", action="store_true",
                    help="skip the item bootstrap on the 44 x 10,000 grid (about a minute)")
    # internal: one grid measurement in a subprocess
    ap.add_argument("--grid-worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--threads", default="1", help=argparse.SUPPRESS)
    ap.add_argument("--engine", default="exact", help=argparse.SUPPRESS)
    ap.add_argument("--dtype", default="float64", help=argparse.SUPPRESS)
    ap.add_argument("--items", type=int, default=GRID_M, help=argparse.SUPPRESS)
    ap.add_argument("--n-boot", type=int, nargs="+", default=list(GRID_BS), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.grid_worker:
        args.repeats = args.grid_repeats or 1
        return grid_worker(args)
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

    # peak memory of one single-cell evaluate (untimed)
    cell_peak = peak_mb(lambda: siren_evaluate(Z, s))

    # ---- 2. the law-cell grid at scale ---------------------------------------------------------
    n_cells = GRID_SYSTEMS * len(GRID_BUDGETS)
    print(f"[2] the law-cell study at scale: {n_cells} cells ({GRID_SYSTEMS} systems x {len(GRID_BUDGETS)} budgets, "
          f"as the paper's MMLU-Pro Law grid), K={GRID_K}, M={GRID_M:,} items, R={GRID_R}, B in {GRID_BS}, "
          "include_baselines=False")
    print(f"    each row in its own process (BLAS threads as shown; data generated there, not timed); "
          f"N={grid_repeats} calls after 1 warm-up; cpu = process CPU time per call")
    print("    (the library's default on a 2-core machine is the '2 threads' rows: BLAS with 2 threads, and the "
          "multiplier engine drawing blocks in 2 threads)")
    grid: dict[str, dict] = {}
    settings = [(1, "exact", "float64"), (1, "multipliers", "float64"), (2, "exact", "float64"),
                (2, "multipliers", "float64"), (2, "exact", "int8"), (2, "multipliers", "int8")]
    if args.quick:
        settings = [(2, "exact", "float64"), (2, "multipliers", "float64"), (2, "exact", "int8")]
    print(f"  {'engine':<12} {'threads':>7} {'scores':>8} {'input MB':>9} " +
          " ".join(f"{'B=' + str(b) + ' s (cpu)':>18}" for b in GRID_BS) + f" {'peak MB':>8} {'max RSS MB':>11}")
    for threads, engine, dtype in settings:
        r = run_grid_worker(threads, engine, GRID_BS, grid_repeats, args.seed, dtype)
        grid[f"{engine}_t{threads}_{dtype}"] = r
        cols = " ".join(f"{r[str(b)]['median']:>8.2f} ({r[str(b)]['cpu']:>5.2f} cpu)" for b in GRID_BS)
        print(f"  {engine:<12} {threads:>7} {dtype:>8} {r['input_mb']:>9.0f} {cols} {r['peak_mb']:>8.0f} "
              f"{r['maxrss_mb']:>11.0f}")
    met = {k: v["1000"]["median"] < 5 for k, v in grid.items()}
    print(f"  target < 5 s at B = 1,000 on 2 cores: exact {'yes' if met.get('exact_t2_float64') else 'NO'}, "
          f"multipliers {'yes' if met.get('multipliers_t2_float64') else 'NO'}")
    print("  peak MB = tracemalloc peak of one evaluate (B = 1,000) above its inputs; max RSS = the whole process "
          "(interpreter, libraries, the input data, every call)")
    print()

    ib = None
    if not (args.quick or args.no_item_bootstrap):
        print(f"[3] the same {n_cells} cells at M = {IB_M:,} items, B = {IB_B}: SIREN vs THE GRID BASELINE, the item "
              "bootstrap (resample the items, rerun every cell's repeated-split pipeline; batched), all on 1 thread "
              "(BLAS threads only slow the baseline's small products down), one process")
        ib = run_grid_worker(1, "item-bootstrap", (IB_B,), grid_repeats, args.seed, "float64", IB_M)
        tb = ib["item_bootstrap"]
        for key, label in (("exact", "siren evaluate (engine=exact)"),
                           ("multipliers", "siren evaluate (engine=multipliers)")):
            print(f"  {label:<46} {ib[key]['median']:>8.3f} s ({ib[key]['cpu']:.3f} cpu)   item bootstrap / this = "
                  f"{tb['median'] / ib[key]['median']:>7.1f}x")
        print(f"  {'item bootstrap, B=' + str(IB_B) + ' (BASELINE, timed once)':<46} {tb['median']:>8.3f} s "
              f"({tb['cpu']:.3f} cpu)")
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
        "cell_evaluate_peak_mb": round(cell_peak, 2),
        "grid": {k: {"threads": v["threads"], "engine": v["engine"], "scores": v["dtype"], "input_mb": v["input_mb"],
                     **{f"b{b}_s": round(v[str(b)]["median"], 3) for b in GRID_BS},
                     **{f"b{b}_cpu_s": round(v[str(b)]["cpu"], 3) for b in GRID_BS},
                     "peak_mb": v["peak_mb"], "maxrss_mb": v["maxrss_mb"]} for k, v in grid.items()},
        "grid_44x100k_b1000_2threads_s": round(grid["exact_t2_float64"]["1000"]["median"], 3),
        "grid_44x100k_b1000_2threads_multipliers_s": round(grid["multipliers_t2_float64"]["1000"]["median"], 3),
        "grid_44x100k_peak_mb": grid["exact_t2_float64"]["peak_mb"],
        "grid_44x100k_multipliers_peak_mb": grid["multipliers_t2_float64"]["peak_mb"],
        "grid_target_5s_met": {k: bool(v) for k, v in met.items()},
        "grid_item_bootstrap_44x10k_s": None if ib is None else round(ib["item_bootstrap"]["median"], 3),
        "grid_siren_44x10k_s": None if ib is None else round(ib["exact"]["median"], 3),
        "grid_siren_44x10k_multipliers_s": None if ib is None else round(ib["multipliers"]["median"], 3),
        "ratio_grid": None if ib is None else round(ib["item_bootstrap"]["median"] / ib["exact"]["median"], 1),
        "ratio_grid_multipliers": None if ib is None else round(ib["item_bootstrap"]["median"]
                                                                 / ib["multipliers"]["median"], 1),
        "M": M_CELL, "K": K_CELL, "R": R_CELL, "B": B_CELL, "tau": TAU, "rho": RHO,
        "repeats": repeats, "grid_repeats": grid_repeats, "quick": bool(args.quick),
        "blas_threads": 1, "grid_blas_threads": [1, 2], "seed": args.seed,
        "maxrss_mb": round(maxrss_mb(), 1),
    }
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
