"""Benchmark: R-AutoEval+ risk certification by testing by betting (``assay.stats.betting`` and
``assay.autoeval``) against a straightforward per-sample Python implementation of the same
algorithm.

What is measured
----------------
Data: the paper's toy example (Park, Zecchin, Simeone, Examples 1-2). Human loss
l ~ Bernoulli(0.1); the judge's loss is the human loss flipped with probability 0.1, on every
example; n = 1,000 labelled examples (human and judge loss) and N = 10,000 unlabelled ones (judge
loss only), so r = N / n = 10 unlabelled per labelled one. S = 10 reliance factors
rho = linspace(0, 1, 10) with uniform initial weights, risk target alpha = 0.12, delta = 0.1. One
fixed seed; the data are processed in the order generated.

Ours (the library), each timed from the raw loss arrays (``effective_observations`` included):

1. ``wsr``      -- R-AutoEval+ e-process and Ville decision with WSR bets (eq. 21, horizon n):
                   ``e_process(q, 0.12, lo=-rho, hi=1+rho, betting="wsr", delta=0.1, horizon=n)`` +
                   ``mixture_log_wealth`` + ``ville``. Target < 5 ms.
2. ``up``       -- the same with universal-portfolio bets (eq. 20) on a 10,000-point bet grid.
                   Target < 0.2 s.
3. ``interval`` -- two-sided 90% interval ``hedged_interval`` (WSR, eps = 1/2, tol 1e-6).
                   Target < 0.2 s.
   ``ucb``      -- one-sided 90% upper bound ``upper_bound`` (WSR, bisection to tol 1e-6).
4. ``certify``  -- ``assay.autoeval.certify`` end to end on a tidy DataFrame (11,000 rows, one
                   candidate; WSR; ``shuffle=False`` so it sees the same order as above): with
                   ``bounds=False`` (the test only: the gap to 1. is library overhead -- input
                   checks, pandas, result object), with the default ``bounds=True`` (adds
                   ``risk_upper``) and with ``interval=True`` too. ``certify`` runs its bounds at
                   tol 1e-5 (ours above at 1e-6), so those rows are not the sum of the rows above.

THE BASELINE, written in this file (it uses nothing from ``assay``): per-sample Python loops of
exactly the same formulas.

* WSR: ``for i in range(n)``: the block mean of the i-th r unlabelled judge losses, then for each
  rho the observation q = rho * block + l_i - rho * l~_i, the WSR bet from running sums
  (mu_j = (1/2 + sum_{k<=j} q_k) / (j + 1), sigma2_{i-1} = (1/4 + sum_{j<i} (q_j - mu_j)^2) / i,
  lambda_i = min(c / (hi - alpha), sqrt(2 log(1/delta) / (n sigma2_{i-1}))), c = 3/4), that rho's
  wealth update, and the mixture wealth by exponential weights w_{s,i} proportional to E_{s,i-1}
  (eq. 13): M_i = M_{i-1} * sum_s w_{s,i} (1 - lambda_{s,i} (q_{s,i} - alpha)). Nothing stops early;
  Ville's test max_i M_i >= 1/delta gives the decision and the first crossing.
* UP: for each rho separately a per-sample loop over i that updates the wealth of every constant
  bet on the 10,000-point grid with numpy (W *= 1 - b x_i, E_i = prior . W, renormalised every
  step), then the same exponential-weights mixture loop.
* Upper bound: bisection on the target exactly as ``upper_bound`` does (same tolerance and same
  comparisons), each evaluation one run of the per-sample WSR loop with the target-free cap
  1 / (hi - lo).
* Interval: a grid of candidate means m; for each, the per-sample loop runs the hedged capital
  process K(m) = eps K+(m) + (1 - eps) K-(m) (each side a rho-mixture by exponential weights, bets
  tuned at delta (1 - eps) and delta eps, cap 1 / (hi - lo)); the interval is the set of grid points
  not rejected. A grid of 1,000 points (resolution 0.001) takes tens of seconds per call in pure
  Python, so the default is 100 points (resolution 0.01, a coarser answer than ours at tol 1e-6);
  ``--interval-grid 1000`` runs the larger grid. The printed table says which grid was used.

Checks (printed): the baseline and the library give the same mixture e-value paths (max abs
difference of log E within 1e-9) and the same decision and first crossing, for WSR and UP; the same
upper bound; a library interval consistent with the baseline's grid (every grid point inside it is
accepted by the baseline, every one outside rejected) and the same log K(m) paths; and ``certify``
reproduces the e-value path and decision. On the benchmark's seed the test may or may not certify
(n = 1,000 is close to R-AutoEval+'s sample complexity here), so the WSR and UP comparisons are
also repeated, untimed, on further seeds (20 WSR, 3 UP; 5 and 1 with ``--quick``) to exercise
both outcomes and the first-crossing index.

Peak memory (printed and in the JSON line): tracemalloc's peak above what is held before the call, for one
untimed call of each of our procedures above, and of ``certify`` at the paper's largest candidate set: 48
candidates (the quantisation task's MX formats, k1 x k1/k2 x mantissa = 2 x 3 x 8), each with n = 1,000 labelled
and N = 4,000 unlabelled examples (the reasoning-budget task's n = 1,000, r = 4), S = 10 factors, bounds on: a
tidy table of 240,000 rows. What dominates is preparing that table (``assay.data.autoeval.prepare``: pandas
grouping and the shuffled order per candidate; measured alone it reaches the same peak, about 32 MB for a 10 MB
table, so the tests themselves add nothing above it);
the test keeps per candidate an S x n array of effective observations and wealth paths (10 x 1,000 float64 = 80
KB), the universal-portfolio bets an S x grid wealth array (10 x 10,000 = 0.8 MB); nothing holds an n x grid or
N-long float64 copy per factor. The process's max RSS is printed too.

For reference only, the paper's released code, measured earlier on this machine and NOT re-run
here: 0.12 s (WSR test), 1.65 s (UP, 10,000 grid), 0.78 s (interval).

Every timing is the median (and min) of ``--repeats`` calls after one warm-up call (whose results
feed the checks), measured with ``time.perf_counter``; procedures are timed round-robin (one call
of each per round) so machine drift affects them alike; the slow baselines run in the first few
rounds only (N column). BLAS is limited to one thread (variables set before numpy is imported).

The last line of the output is a JSON object with the headline numbers; ``ratio`` is the WSR
ratio baseline / ours.

Usage::

    python bench/autoeval.py                      # full run (under a minute)
    python bench/autoeval.py --quick              # fewer repeats
    python bench/autoeval.py --interval-grid 1000 # the 1,000-point interval baseline (slow)
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

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import assay  # noqa: E402
from assay import autoeval  # noqa: E402
from assay.stats import betting as bt  # noqa: E402
from _memory import maxrss_mb, peak_mb  # noqa: E402

# The toy example
N_LAB, N_UNL, S_RHO, R_TRUE, FLIP, TARGET, DELTA = 1000, 10_000, 10, 0.1, 0.1, 0.12, 0.1
UP_GRID = 10_000
EPS = 0.5  # hedged interval: weight of K+
TOL = 1e-6  # bounds: bisection tolerance (the library default)
# WSR constants (eq. 21-22), written out here so the baseline is independent of the library
C_WSR, MU0, VAR0 = 0.75, 0.5, 0.25
PATH_TOL = 1e-9
# The paper's released code, measured earlier on this machine (not re-run here)
RELEASED = {"wsr_s": 0.12, "up_s": 1.65, "interval_s": 0.78}
TARGETS = {"wsr": 5e-3, "up": 0.2, "interval": 0.2}


# --------------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------------


def toy_data(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(human losses of the n labelled, judge losses of the n labelled, judge losses of the N unlabelled)."""
    rng = np.random.default_rng(seed)
    total = N_LAB + N_UNL
    loss = (rng.random(total) < R_TRUE).astype(float)
    flip = rng.random(total) < FLIP
    judge = np.where(flip, 1.0 - loss, loss)
    return loss[:N_LAB], judge[:N_LAB], judge[N_LAB:]


# the paper's largest candidate set (MX formats: 2 x 3 x 8) at the reasoning task's n = 1,000, r = 4
PAPER_CANDIDATES, PAPER_N, PAPER_R = 48, 1000, 4


def paper_frame(seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    parts = []
    for c in range(PAPER_CANDIDATES):
        total = PAPER_N * (1 + PAPER_R)
        loss = (rng.random(total) < 0.02 + 0.002 * c).astype(float)
        judge = np.where(rng.random(total) < FLIP, 1.0 - loss, loss)
        parts.append(pd.DataFrame({
            "candidate": f"mx{c:02d}",
            "item": [f"x{i:06d}" for i in range(total)],
            "loss_human": np.concatenate([loss[:PAPER_N], np.full(total - PAPER_N, np.nan)]),
            "loss_judge": judge,
        }))
    return pd.concat(parts, ignore_index=True)


def toy_frame(human: np.ndarray, jl: np.ndarray, ju: np.ndarray) -> pd.DataFrame:
    """Tidy table for ``certify``: labelled rows first, then unlabelled (loss_human NaN)."""
    n, N = len(human), len(ju)
    return pd.DataFrame({
        "candidate": "model",
        "item": [f"x{i:06d}" for i in range(n + N)],
        "loss_human": np.concatenate([human, np.full(N, np.nan)]),
        "loss_judge": np.concatenate([jl, ju]),
    })


def time_round_robin(runs, repeats: int) -> dict[str, dict[str, float]]:
    """runs: (key, fn, max_repeats). Round r calls every fn whose max_repeats > r."""
    samples: dict[str, list[float]] = {key: [] for key, _, _ in runs}
    for rnd in range(repeats):
        for key, fn, n in runs:
            if rnd < n:
                t0 = time.perf_counter()
                fn()
                samples[key].append(time.perf_counter() - t0)
    return {k: {"median": statistics.median(v), "min": min(v), "n": len(v)} for k, v in samples.items()}


# --------------------------------------------------------------------------------------------
# Ours: the library
# --------------------------------------------------------------------------------------------


def ours_test(human, jl, ju, betting: str):
    """R-AutoEval+ mixture e-process and Ville decision: (log M path, reject, first index)."""
    rhos = autoeval.reliance_factors("r-autoeval+", S_RHO)
    q, _, _ = autoeval.effective_observations(human, jl, ju, rhos)
    log_e = bt.e_process(q, TARGET, lo=-rhos, hi=1.0 + rhos, betting=betting, delta=DELTA,
                         horizon=len(human), grid=UP_GRID)
    log_m = bt.mixture_log_wealth(log_e)
    reject, first = bt.ville(log_m, DELTA)
    return log_m, bool(reject), int(first)


def ours_interval(human, jl, ju) -> tuple[float, float]:
    rhos = autoeval.reliance_factors("r-autoeval+", S_RHO)
    q, _, _ = autoeval.effective_observations(human, jl, ju, rhos)
    return bt.hedged_interval(q, -rhos, 1.0 + rhos, delta=DELTA, eps=EPS, betting="wsr",
                              horizon=len(human), tol=TOL)


def ours_ucb(human, jl, ju) -> float:
    rhos = autoeval.reliance_factors("r-autoeval+", S_RHO)
    q, _, _ = autoeval.effective_observations(human, jl, ju, rhos)
    return bt.upper_bound(q, -rhos, 1.0 + rhos, delta=DELTA, betting="wsr", horizon=len(human), tol=TOL)


def ours_certify(df: pd.DataFrame, interval: bool, bounds: bool = True):
    return autoeval.certify(df, risk_target=TARGET, delta=DELTA, method="r-autoeval+", betting="wsr",
                            factors=S_RHO, shuffle=False, interval=interval, bounds=bounds, seed=0)


def library_hedged_paths(human, jl, ju, means: np.ndarray) -> np.ndarray:
    """log K_i(m) for each m (G, n), assembled from the library's public pieces exactly as
    ``hedged_interval`` assembles them (used only to check the baseline's paths)."""
    rhos = autoeval.reliance_factors("r-autoeval+", S_RHO)
    q, _, _ = autoeval.effective_observations(human, jl, ju, rhos)
    lo, hi = -rhos, 1.0 + rhos
    c = lo + hi
    lam_minus = bt.wsr_bets(q, delta=DELTA * (1 - EPS), cap=1.0 / (hi - lo), horizon=len(human))
    lam_plus = bt.wsr_bets(c[:, None] - q, delta=DELTA * EPS, cap=1.0 / (hi - lo), horizon=len(human))
    out = np.empty((len(means), q.shape[1]))
    for k, m in enumerate(means):
        minus = bt.mixture_log_wealth(bt.log_wealth(q, m, lam_minus))
        plus = bt.mixture_log_wealth(bt.log_wealth(c[:, None] - q, c - m, lam_plus))
        out[k] = np.logaddexp(math.log(1 - EPS) + minus, math.log(EPS) + plus)
    return out


# --------------------------------------------------------------------------------------------
# THE BASELINE: straightforward per-sample Python loops (nothing from assay)
# --------------------------------------------------------------------------------------------


def _log(x: float) -> float:
    return math.log(x) if x > 0.0 else -math.inf


def baseline_wsr_loop(human: list, jl: list, ju: list, rhos: list, targets: list, caps: list,
                      delta: float, reflect: bool = False) -> list:
    """Per-sample loop: log of the rho-mixture wealth M_1..M_n with WSR bets (eq. 13, 21-22).

    For rho_s the observation is q = rho * block + l - rho * l~ (eq. 10) or, with ``reflect``,
    y = (lo + hi) - q = 1 - q; the bet on step i uses only steps < i; the factor is
    1 - lambda (y - targets[s]). Weights w_{s,i} proportional to E_{s,i-1}, uniform at the start.
    """
    n = len(human)
    r = len(ju) // n
    S = len(rhos)
    two_log = 2.0 * math.log(1.0 / delta)
    refl = [(-rho) + (1.0 + rho) for rho in rhos]  # lo + hi
    sum_y = [0.0] * S
    sum_dev = [0.0] * S
    log_e = [0.0] * S
    log_m = 0.0
    path = [0.0] * n
    for i in range(n):
        block = sum(ju[i * r:(i + 1) * r]) / r
        top = max(log_e)
        w = [math.exp(le - top) for le in log_e]
        w_sum = sum(w)
        growth = 0.0
        for s in range(S):
            rho = rhos[s]
            y = rho * block + human[i] - rho * jl[i]
            if reflect:
                y = refl[s] - y
            sigma2 = (VAR0 + sum_dev[s]) / (i + 1)  # sigma2_{i-1}: 1-based step i+1
            lam = min(caps[s], math.sqrt(two_log / (n * sigma2)))
            f = 1.0 - lam * (y - targets[s])
            log_e[s] += _log(f)
            growth += w[s] * f
            sum_y[s] += y
            mu = (MU0 + sum_y[s]) / (i + 2)  # mu_j including y_j (j = i+1)
            sum_dev[s] += (y - mu) ** 2
        log_m += _log(growth / w_sum)
        path[i] = log_m
    return path


def baseline_decision(path: list, delta: float) -> tuple[bool, int]:
    """Ville: reject when some M_i >= 1/delta (same 1e-12 slack for floating ties as the library)."""
    thr = math.log(1.0 / delta) - 1e-12
    for i, v in enumerate(path):
        if v >= thr:
            return True, i
    return False, -1


def baseline_wsr(human, jl, ju):
    """Baseline R-AutoEval+ WSR test: (log M path, reject, first index)."""
    rhos = [s / (S_RHO - 1) for s in range(S_RHO)]
    caps = [C_WSR / ((1.0 + rho) - TARGET) for rho in rhos]
    path = baseline_wsr_loop(human.tolist(), jl.tolist(), ju.tolist(), rhos, [TARGET] * S_RHO, caps, DELTA)
    reject, first = baseline_decision(path, DELTA)
    return np.array(path), reject, first


def baseline_up(human, jl, ju, grid: int = UP_GRID):
    """Baseline R-AutoEval+ UP test: per rho, per sample, numpy over the bet grid."""
    human, jl, ju = human.tolist(), jl.tolist(), ju.tolist()
    n = len(human)
    r = len(ju) // n
    rhos = [s / (S_RHO - 1) for s in range(S_RHO)]
    b = (np.arange(grid) + 0.5) / grid
    prior = 1.0 / np.sqrt(b * (1.0 - b))  # Beta(1/2, 1/2) density, normalised on the grid
    prior /= prior.sum()
    step_factor = [[0.0] * n for _ in rhos]  # E_{s,i} / E_{s,i-1}
    for s, rho in enumerate(rhos):
        scale = (1.0 + rho) - TARGET
        W = np.ones(grid)
        for i in range(n):
            block = sum(ju[i * r:(i + 1) * r]) / r
            q = rho * block + human[i] - rho * jl[i]
            W *= 1.0 - b * ((q - TARGET) / scale)
            tot = float(prior @ W)
            step_factor[s][i] = tot
            W /= tot
    # mixture by exponential weights
    log_e = [0.0] * S_RHO
    log_m = 0.0
    path = [0.0] * n
    for i in range(n):
        top = max(log_e)
        w = [math.exp(le - top) for le in log_e]
        growth = sum(w[s] * step_factor[s][i] for s in range(S_RHO)) / sum(w)
        for s in range(S_RHO):
            log_e[s] += _log(step_factor[s][i])
        log_m += _log(growth)
        path[i] = log_m
    reject, first = baseline_decision(path, DELTA)
    return np.array(path), reject, first


def baseline_ucb(human, jl, ju) -> float:
    """Baseline upper bound: the bisection of ``upper_bound``, one per-sample loop per evaluation."""
    human, jl, ju = human.tolist(), jl.tolist(), ju.tolist()
    rhos = [s / (S_RHO - 1) for s in range(S_RHO)]
    caps = [1.0 / ((1.0 + rho) - (-rho)) for rho in rhos]  # target-free cap 1 / (hi - lo)
    thr = math.log(1.0 / DELTA) - 1e-12

    def f(t: float) -> float:
        return max(baseline_wsr_loop(human, jl, ju, rhos, [t] * S_RHO, caps, DELTA))

    a, b = 0.0, 1.0
    if f(a) >= thr:
        return a
    if f(b) < thr:
        return b
    while b - a > TOL:
        mid = 0.5 * (a + b)
        if f(mid) >= thr:
            b = mid
        else:
            a = mid
    return b


def interval_means(points: int) -> np.ndarray:
    """Candidate means for the grid baseline: midpoints of ``points`` equal cells of [0, 1]."""
    return (np.arange(points) + 0.5) / points


def baseline_interval(human, jl, ju, points: int):
    """Baseline interval: per candidate mean, the per-sample hedged capital process.

    Returns (lower, upper, accepted mask, log K paths (G, n)); lower/upper are the smallest and
    largest grid means not rejected."""
    human, jl, ju = human.tolist(), jl.tolist(), ju.tolist()
    rhos = [s / (S_RHO - 1) for s in range(S_RHO)]
    refl = [(-rho) + (1.0 + rho) for rho in rhos]
    caps = [1.0 / ((1.0 + rho) - (-rho)) for rho in rhos]
    thr = math.log(1.0 / DELTA) - 1e-12
    lw_minus, lw_plus = math.log(1 - EPS), math.log(EPS)
    means = interval_means(points).tolist()
    accepted = []
    paths = []
    for m in means:
        # K-: bets that the mean is below m; K+: that it is above m (reflected data, target c - m)
        minus = baseline_wsr_loop(human, jl, ju, rhos, [m] * S_RHO, caps, DELTA * (1 - EPS))
        plus = baseline_wsr_loop(human, jl, ju, rhos, [c - m for c in refl], caps, DELTA * EPS, reflect=True)
        k_path = []
        for a, p in zip(minus, plus):
            x, y = lw_minus + a, lw_plus + p
            top = max(x, y)
            k_path.append(top + math.log(math.exp(x - top) + math.exp(y - top)))
        paths.append(k_path)
        accepted.append(max(k_path) < thr)
    acc = np.array(accepted)
    grid = np.array(means)
    if acc.any():
        lower, upper = float(grid[acc].min()), float(grid[acc].max())
    else:
        lower = upper = float("nan")
    return lower, upper, acc, np.array(paths)


# --------------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer repeats")
    ap.add_argument("--repeats", type=int, default=None,
                    help="timed repeats of the library calls (default 21; 5 with --quick); "
                         "the slow baselines use fewer")
    ap.add_argument("--interval-grid", type=int, default=100,
                    help="candidate means of the interval baseline (default 100; 1000 takes tens of seconds per call)")
    ap.add_argument("--seed", type=int, default=20240601, help="seed for the data")
    args = ap.parse_args(argv)
    repeats = args.repeats if args.repeats is not None else (5 if args.quick else 21)
    if repeats < 1:
        ap.error("--repeats must be at least 1")
    if args.interval_grid < 2:
        ap.error("--interval-grid must be at least 2")
    G = args.interval_grid
    # the slow baselines: fewer timed calls
    reps_wsr_base = repeats
    reps_up_base = max(1, min(repeats, 3 if args.quick else 5))
    reps_ucb_base = max(1, min(repeats, 3 if args.quick else 7))
    reps_int_base = max(1, min(repeats, 1 if (args.quick or G > 300) else 3))

    print("R-AutoEval+ benchmark" + (" (--quick)" if args.quick else ""))
    print(f"  assay {getattr(assay, '__version__', '?')}, numpy {np.__version__}, pandas {pd.__version__}, "
          f"Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs visible")
    print(f"  BLAS limited to 1 thread ({', '.join(v + '=1' for v in _THREAD_VARS[:2])}, ... set before "
          "importing numpy)")
    print("  timings: time.perf_counter, median and min of N calls after 1 warm-up call, round-robin")
    print()

    human, jl, ju = toy_data(args.seed)
    df = toy_frame(human, jl, ju)
    print(f"[data] toy example: n={N_LAB} labelled, N={N_UNL} unlabelled (r={N_UNL // N_LAB}), human loss "
          f"~ Bernoulli({R_TRUE}), judge = human flipped w.p. {FLIP}; S={S_RHO} rhos = linspace(0, 1, {S_RHO}), "
          f"target {TARGET}, delta {DELTA}")
    print(f"       mean human loss (labelled) {human.mean():.4f}, mean judge loss (unlabelled) {ju.mean():.4f}")
    print()

    runs = [
        # key, label, fn, max repeats
        ("wsr", "ours: WSR e-process + mixture + Ville",
         lambda: ours_test(human, jl, ju, "wsr"), repeats),
        ("wsr_base", "BASELINE: WSR per-sample loop",
         lambda: baseline_wsr(human, jl, ju), reps_wsr_base),
        ("up", f"ours: UP e-process (grid {UP_GRID:,}) + mixture + Ville",
         lambda: ours_test(human, jl, ju, "up"), repeats),
        ("up_base", "BASELINE: UP loop over rho and samples",
         lambda: baseline_up(human, jl, ju), reps_up_base),
        ("interval", "ours: hedged_interval (WSR, tol 1e-6)",
         lambda: ours_interval(human, jl, ju), repeats),
        ("interval_base", f"BASELINE: interval, grid of {G} means",
         lambda: baseline_interval(human, jl, ju, G), reps_int_base),
        ("ucb", "ours: upper_bound (WSR, tol 1e-6)",
         lambda: ours_ucb(human, jl, ju), repeats),
        ("ucb_base", "BASELINE: upper bound, bisection of loops",
         lambda: baseline_ucb(human, jl, ju), reps_ucb_base),
        ("certify_nobounds", "ours: certify (WSR, bounds=False)",
         lambda: ours_certify(df, False, bounds=False), repeats),
        ("certify", "ours: certify (WSR, default: + risk_upper)",
         lambda: ours_certify(df, False), repeats),
        ("certify_interval", "ours: certify (WSR, interval=True)",
         lambda: ours_certify(df, True), repeats),
    ]
    t_warm = {}
    out = {}
    for key, _, fn, _ in runs:  # warm-up; the results feed the checks
        t0 = time.perf_counter()
        out[key] = fn()
        t_warm[key] = time.perf_counter() - t0
    t = time_round_robin([(k, fn, n) for k, _, fn, n in runs], repeats)

    # ---- peak memory (untimed calls) ---------------------------------------------------------
    peaks = {k: round(peak_mb(fn), 3) for k, _, fn, _ in runs if not k.endswith("_base")}
    big = paper_frame(args.seed + 7)
    big_mb = big.memory_usage(deep=True).sum() / 1e6

    def certify_paper():
        return autoeval.certify(big, risk_target=0.05, delta=DELTA, method="r-autoeval+", betting="wsr",
                                factors=S_RHO, seed=0)
    t0 = time.perf_counter()
    certify_paper()
    t_paper = time.perf_counter() - t0
    peak_paper = peak_mb(certify_paper)

    # ---- checks ---------------------------------------------------------------------------
    checks: dict[str, bool] = {}
    lm_w, rej_w, first_w = out["wsr"]
    bl_w, brej_w, bfirst_w = out["wsr_base"]
    diff_wsr = float(np.max(np.abs(lm_w - bl_w)))
    checks["wsr_path"] = diff_wsr <= PATH_TOL
    checks["wsr_decision"] = (rej_w == brej_w) and (first_w == bfirst_w)
    lm_u, rej_u, first_u = out["up"]
    bl_u, brej_u, bfirst_u = out["up_base"]
    diff_up = float(np.max(np.abs(lm_u - bl_u)))
    checks["up_path"] = diff_up <= PATH_TOL
    checks["up_decision"] = (rej_u == brej_u) and (first_u == bfirst_u)
    ucb, ucb_base = out["ucb"], out["ucb_base"]
    checks["ucb_same"] = abs(ucb - ucb_base) <= TOL
    ci_lo, ci_hi = out["interval"]
    b_lo, b_hi, b_acc, b_paths = out["interval_base"]
    means = interval_means(G)
    lib_paths = library_hedged_paths(human, jl, ju, means)
    diff_int = float(np.max(np.abs(lib_paths - b_paths)))
    checks["interval_paths"] = diff_int <= PATH_TOL
    near = (np.abs(means - ci_lo) <= 2 * TOL) | (np.abs(means - ci_hi) <= 2 * TOL)
    inside = (means > ci_lo) & (means < ci_hi)
    checks["interval_consistent"] = bool(np.all((inside == b_acc) | near))
    res, res_i = out["certify"], out["certify_interval"]
    row, row_i = res.candidates.iloc[0], res_i.candidates.iloc[0]
    diff_cert = float(np.max(np.abs(np.asarray(res.info["paths"]["model"]["log_e"]) - lm_w)))
    checks["certify_path"] = diff_cert <= PATH_TOL
    checks["certify_decision"] = bool(row["certified"]) == rej_w and (
        (row["certified_at"] is None and first_w < 0) or (row["certified_at"] == first_w + 1))
    checks["certify_bounds"] = (abs(row["risk_upper"] - ucb) <= 2e-5 and abs(row_i["ci_low"] - ci_lo) <= 2e-5
                                and abs(row_i["ci_high"] - ci_hi) <= 2e-5)
    # the same comparison on further data sets (untimed), so that both decisions get exercised
    extra_wsr, extra_up = (5, 1) if args.quick else (20, 3)
    extra = {"wsr": [0, 0, 0.0], "up": [0, 0, 0.0]}  # [agree, certified, max diff]
    for k in range(extra_wsr):
        h2, jl2, ju2 = toy_data(args.seed + 1 + k)
        for kind, n_kind in (("wsr", extra_wsr), ("up", extra_up)):
            if k >= n_kind:
                continue
            a = ours_test(h2, jl2, ju2, kind)
            b = baseline_wsr(h2, jl2, ju2) if kind == "wsr" else baseline_up(h2, jl2, ju2)
            d = float(np.max(np.abs(a[0] - b[0])))
            extra[kind][0] += int(d <= PATH_TOL and a[1] == b[1] and a[2] == b[2])
            extra[kind][1] += int(a[1])
            extra[kind][2] = max(extra[kind][2], d)
    checks["wsr_extra_seeds"] = extra["wsr"][0] == extra_wsr
    checks["up_extra_seeds"] = extra["up"][0] == extra_up
    all_ok = all(checks.values())

    def yn(ok: bool) -> str:
        return "yes" if ok else "NO"

    def fc(rej: bool, first: int) -> str:
        return f"certified at i = {first + 1}" if rej else "not certified"

    print("[checks] baseline vs library")
    print(f"  WSR: max |log E_lib - log E_base| over the path = {diff_wsr:.2e} (<= {PATH_TOL:g}: {yn(checks['wsr_path'])}); "
          f"decision: lib {fc(rej_w, first_w)}, baseline {fc(brej_w, bfirst_w)} (same: {yn(checks['wsr_decision'])}); "
          f"max E = {math.exp(lm_w.max()):.3g}, final E = {math.exp(lm_w[-1]):.3g}")
    print(f"  UP:  max |log E_lib - log E_base| over the path = {diff_up:.2e} (<= {PATH_TOL:g}: {yn(checks['up_path'])}); "
          f"decision: lib {fc(rej_u, first_u)}, baseline {fc(brej_u, bfirst_u)} (same: {yn(checks['up_decision'])}); "
          f"max E = {math.exp(lm_u.max()):.3g}, final E = {math.exp(lm_u[-1]):.3g}")
    for kind, n_kind in (("wsr", extra_wsr), ("up", extra_up)):
        agree, cert, d = extra[kind]
        print(f"  {kind.upper()} on {n_kind} further seeds: same path (max diff {d:.2e}), decision and first crossing "
              f"on {agree}/{n_kind} (library certified {cert}/{n_kind})")
    print(f"  upper bound: lib {ucb:.6f}, baseline {ucb_base:.6f} (same to {TOL:g}: {yn(checks['ucb_same'])})")
    print(f"  interval: lib [{ci_lo:.6f}, {ci_hi:.6f}], baseline on {G} grid means [{b_lo:.4f}, {b_hi:.4f}] "
          f"(grid step {1 / G:g}); grid points accepted by the baseline = those inside the lib interval: "
          f"{yn(checks['interval_consistent'])}; max |log K_lib - log K_base| over grid and path = {diff_int:.2e} "
          f"(<= {PATH_TOL:g}: {yn(checks['interval_paths'])})")
    print(f"  certify: path = ours (max diff {diff_cert:.2e}): {yn(checks['certify_path'])}; decision "
          f"(certified={bool(row['certified'])}, at {row['certified_at']}): {yn(checks['certify_decision'])}; "
          f"risk_upper {row['risk_upper']:.6f}, ci [{row_i['ci_low']:.6f}, {row_i['ci_high']:.6f}] (tol 1e-5) "
          f"match: {yn(checks['certify_bounds'])}")
    print(f"  all checks pass: {yn(all_ok)}")
    print()

    # ---- timings --------------------------------------------------------------------------
    def fmt(sec: float) -> str:
        return f"{1e3 * sec:10.2f} ms" if sec < 1 else f"{sec:10.3f} s "

    pairs = {"wsr": "wsr_base", "up": "up_base", "interval": "interval_base", "ucb": "ucb_base"}
    base_of = {v: k for k, v in pairs.items()}
    print("[timings]")
    print(f"  {'procedure':<52} {'median':>13} {'min':>13} {'N':>4} {'baseline/ours':>14}  {'target':>8}")
    for key, label, _, _ in runs:
        r = t[key]
        ratio_s, target_s = "", ""
        if key in pairs:
            ratio_s = f"{t[pairs[key]]['median'] / r['median']:13.1f}x"
        if key in base_of:
            ratio_s = "(baseline)"
        if key in TARGETS:
            target_s = f"< {fmt(TARGETS[key]).strip()}: {yn(r['median'] < TARGETS[key])}"
        print(f"  {label:<52} {fmt(r['median'])} {fmt(r['min'])} {r['n']:>4} {ratio_s:>14}  {target_s}")
    print()
    ratio_wsr = t["wsr_base"]["median"] / t["wsr"]["median"]
    ratio_up = t["up_base"]["median"] / t["up"]["median"]
    ratio_int = t["interval_base"]["median"] / t["interval"]["median"]
    ratio_ucb = t["ucb_base"]["median"] / t["ucb"]["median"]
    per_point = t["interval_base"]["median"] / G
    print(f"  ratio baseline / ours, WSR test            = {ratio_wsr:8.1f}x")
    print(f"  ratio baseline / ours, UP test             = {ratio_up:8.1f}x")
    print(f"  ratio baseline / ours, interval            = {ratio_int:8.1f}x   (baseline on a grid of {G} means"
          + ("; a 1,000-point grid would take about " f"{1000 * per_point:.0f} s per call (estimate from the "
             f"{1e3 * per_point:.1f} ms per grid point measured here, not run), i.e. about "
             f"{1000 * per_point / t['interval']['median']:.0f}x" if G < 1000 else "") + ")")
    print(f"  ratio baseline / ours, upper bound         = {ratio_ucb:8.1f}x")
    overhead = t["certify_nobounds"]["median"] - t["wsr"]["median"]
    print(f"  certify library overhead (bounds=False minus the WSR test) = {1e3 * overhead:.2f} ms for "
          f"{len(df):,} rows (input checks, pandas, result object); certify's bounds use tol 1e-5, ours above 1e-6")
    print()
    print("  released code, measured earlier on this machine (not re-run):")
    for key, label in (("wsr", "WSR test"), ("up", "UP test, 10,000 grid"), ("interval", "interval (CI)")):
        rel = RELEASED[key + "_s"]
        print(f"    {label:<22} {rel:6.2f} s   released / ours = {rel / t[key]['median']:8.1f}x")
    print()

    print("  peak memory above the inputs (tracemalloc, one untimed call each): "
          + ", ".join(f"{k} {v:.2f} MB" for k, v in peaks.items()))
    print(f"  certify at the paper's largest candidate set: {PAPER_CANDIDATES} candidates x (n = {PAPER_N:,} + N = "
          f"{PAPER_N * PAPER_R:,}), S = {S_RHO}, bounds on: {t_paper:.2f} s (one call), peak {peak_paper:.1f} MB "
          f"above its {big_mb:.1f} MB input table; process max RSS {maxrss_mb():.0f} MB")
    print()

    summary = {
        "peak_mb": peaks,
        "certify_paper_candidates": PAPER_CANDIDATES, "certify_paper_n": PAPER_N, "certify_paper_N": PAPER_N * PAPER_R,
        "certify_paper_s": round(t_paper, 3),
        "certify_paper_peak_mb": round(peak_paper, 1),
        "certify_paper_table_mb": round(big_mb, 1),
        "maxrss_mb": round(maxrss_mb(), 1),
        "ratio": round(ratio_wsr, 2),
        "ratio_wsr": round(ratio_wsr, 2),
        "ratio_up": round(ratio_up, 2),
        "ratio_interval": round(ratio_int, 2),
        "ratio_ucb": round(ratio_ucb, 2),
        "wsr_ms": round(1e3 * t["wsr"]["median"], 4),
        "up_s": round(t["up"]["median"], 5),
        "interval_s": round(t["interval"]["median"], 5),
        "ucb_ms": round(1e3 * t["ucb"]["median"], 3),
        "certify_ms": round(1e3 * t["certify"]["median"], 3),
        "certify_nobounds_ms": round(1e3 * t["certify_nobounds"]["median"], 3),
        "certify_overhead_ms": round(1e3 * overhead, 3),
        "certify_interval_ms": round(1e3 * t["certify_interval"]["median"], 3),
        "baseline_wsr_ms": round(1e3 * t["wsr_base"]["median"], 3),
        "baseline_up_s": round(t["up_base"]["median"], 4),
        "baseline_interval_s": round(t["interval_base"]["median"], 4),
        "baseline_ucb_s": round(t["ucb_base"]["median"], 4),
        "interval_grid": G,
        "targets_met": {k: bool(t[k]["median"] < v) for k, v in TARGETS.items()},
        "checks_pass": bool(all_ok),
        "checks": {k: bool(v) for k, v in checks.items()},
        "max_abs_diff_log_e_wsr": diff_wsr,
        "max_abs_diff_log_e_up": diff_up,
        "max_abs_diff_log_k_interval": diff_int,
        "extra_seeds": {"wsr": extra_wsr, "up": extra_up, "wsr_certified": extra["wsr"][1],
                        "up_certified": extra["up"][1]},
        "certified": bool(rej_w),
        "certified_at": int(first_w) + 1 if rej_w else None,
        "risk_upper": round(ucb, 6),
        "interval": [round(ci_lo, 6), round(ci_hi, 6)],
        "released_wsr_s": RELEASED["wsr_s"],
        "released_up_s": RELEASED["up_s"],
        "released_interval_s": RELEASED["interval_s"],
        "released_note": "released code, measured earlier on this machine (not re-run)",
        "n": N_LAB, "N": N_UNL, "S": S_RHO, "risk_target": TARGET, "delta": DELTA, "up_grid": UP_GRID,
        "repeats": repeats, "quick": bool(args.quick), "blas_threads": 1, "seed": args.seed,
    }
    print(json.dumps(summary))
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
