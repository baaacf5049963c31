"""The grader audit's Monte Carlo study (issue 48): coverage of the corrected interval, the naive intervals' misses, and
what the flag-weighted draws buy over uniform ones.

    .venv/bin/python bench/audit.py [--reps 2000] [--quick]
    .venv/bin/python bench/audit.py --real dev|test     # the flag weight on the real maths answers

World (seeded, fixed before looking): N = 2,000 answers; 20% are flagged by a label-free signal; the true accuracy is
0.4 on flagged answers and 0.7 on the rest; the grader wrongly passes 30% of the wrong flagged answers and 3% of the
other wrong ones, and wrongly fails 10% / 1% of the right ones, so its raw accuracy is biased upwards by about 3
points. For n in {50, 100, 200}: the share of runs whose 95% interval misses the run's true accuracy (with its Monte
Carlo standard error), the mean width, and the same for

* ``wilson-grader``: a Wilson interval on the grader's N scores, as if they were the truth (what a leaderboard shows);
* ``wilson-human``: a Wilson interval on the n checked answers alone, ignoring the grader (valid only for uniform
  draws; here the draws favour flagged answers, so it is biased);
* ``uniform``: the same corrected interval with every answer drawn with equal probability (weight 1): the width
  ratio weighted / uniform says what the flags buy.

Timing: seconds per 1,000 audits of each n, and the ratio to drawing the sample (with its probabilities and the
increments' bounds) alone, measured in the same run.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
from scipy.stats import norm

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from assay import audit as a  # noqa: E402

N = 2000


def world(rng, reps):
    flagged = rng.random((reps, N)) < 0.2
    y = (rng.random((reps, N)) < np.where(flagged, 0.4, 0.7)).astype(float)
    u = rng.random((reps, N))
    fp, fn = np.where(flagged, 0.30, 0.03), np.where(flagged, 0.10, 0.01)
    f = np.where(y == 1, u >= fn, u < fp).astype(float)
    return flagged, y, f


def wilson(p, n, delta=0.05):
    z = norm.ppf(1 - delta / 2)
    c = (p + z * z / (2 * n)) / (1 + z * z / n)
    h = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return c - h, c + h


def run(n: int, reps: int, weight: float, seed: int):
    rng = np.random.default_rng([4848, n, seed])
    flagged, y, f = world(rng, reps)
    w = np.where(flagged, weight, 1.0)
    t0 = time.perf_counter()
    order, q, s, lo_w, hi_w = a.plan_draws(w, f, n, a.DEFAULT_FLOOR, rng=rng)
    t_draw = time.perf_counter() - t0  # the draws with their probabilities and bounds
    rows = np.arange(reps)[:, None]
    est, lo, hi = a.audit_interval(y[rows, order], f[rows, order], q, s, lo_w, hi_w, N, 0.05)
    t_all = time.perf_counter() - t0
    theta = y.mean(axis=1)
    out = {"miss": np.mean((theta < lo) | (theta > hi)), "width": np.mean(hi - lo), "bias_raw": np.mean(f.mean(1) - theta),
           "rmse": np.sqrt(np.mean((est - theta) ** 2)), "t_all": t_all, "t_draw": t_draw}
    gl, gh = wilson(f.mean(axis=1), N)
    out["miss_wilson_grader"] = np.mean((theta < gl) | (theta > gh))
    hl, hh = wilson(y[rows, order].mean(axis=1), n)
    out["miss_wilson_human"] = np.mean((theta < hl) | (theta > hh))
    out["width_wilson_human"] = np.mean(hh - hl)
    return out


def real(half: str, reps: int = 400) -> None:
    """The weight on real answers: the maths corpus's ``half`` (tests/fixtures/live_corpus/math.jsonl) graded by the
    ``math`` scorer, its blind labels as the truth, flags as ``assay audit`` computes them; weights 1, 2 and 4."""
    import json

    import pandas as pd

    from assay.data.audit import read_run

    path = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "live_corpus" / "math.jsonl"
    recs = [r for r in map(json.loads, path.read_text().splitlines()) if r["half"] == half]
    run = read_run(pd.DataFrame({"id": [r["id"] for r in recs], "prompt": [r["prompt"] for r in recs],
                                 "reference": [r["reference"] for r in recs], "response": [r["response"] for r in recs],
                                 "finish_reason": [r["finish_reason"] for r in recs], "scorer": "math"}))
    fl = a.flag(run)["flagged"].to_numpy()
    y = np.array([r["correct"] for r in recs], float)
    f = run["score"].to_numpy()
    err = y != f
    print(f"{half} half: N = {len(y)}, labelled accuracy {y.mean():.4f}, grader {f.mean():.4f}, grader errors "
          f"{err.sum()}, flagged {fl.sum()} ({fl.mean():.0%}) holding {(err & fl).sum()} of the errors")
    print("| weight | n | width | RMSE | width / uniform | RMSE / uniform | miss |")
    print("|---|---|---|---|---|---|---|")
    base = {}
    for weight in (1.0, 2.0, 4.0):
        for n in (50, 100, 200):
            rng = np.random.default_rng([7, n])
            W = np.repeat(np.where(fl, weight, 1.0)[None, :], reps, 0)
            F, Y = np.repeat(f[None, :], reps, 0), np.repeat(y[None, :], reps, 0)
            order, q, s_, lo_w, hi_w = a.plan_draws(W, F, n, a.DEFAULT_FLOOR, rng=rng)
            rows = np.arange(reps)[:, None]
            est, lo, hi = a.audit_interval(Y[rows, order], F[rows, order], q, s_, lo_w, hi_w, len(y), 0.05)
            width, rmse = np.mean(hi - lo), np.sqrt(np.mean((est - y.mean()) ** 2))
            base.setdefault(n, (width, rmse))
            print(f"| {weight:g} | {n} | {width:.4f} | {rmse:.4f} | {width / base[n][0]:.3f} | {rmse / base[n][1]:.3f} "
                  f"| {np.mean((y.mean() < lo) | (y.mean() > hi)):.3f} |")


def main() -> None:
    if "--real" in sys.argv:
        real(sys.argv[sys.argv.index("--real") + 1])
        return
    reps = int(sys.argv[sys.argv.index("--reps") + 1]) if "--reps" in sys.argv else 2000
    ns = (50,) if "--quick" in sys.argv else (50, 100, 200)
    if "--quick" in sys.argv:
        reps = min(reps, 200)
    print(f"N = {N}, {reps} runs per n, delta 0.05; MCSE of a 5% miss rate: {np.sqrt(0.05 * 0.95 / reps):.4f}")
    print("| n | miss (corrected) | width | raw bias | RMSE | miss: Wilson on grader | miss: Wilson on checks "
          "| width uniform draws | width ratio flagged/uniform | s per 1,000 audits | ratio to drawing alone |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for n in ns:
        wtd = run(n, reps, a.DEFAULT_WEIGHT, 1)
        uni = run(n, reps, 1.0, 1)
        mcse = np.sqrt(max(wtd["miss"], 1 / reps) * (1 - wtd["miss"]) / reps)
        print(f"| {n} | {wtd['miss']:.4f} ± {mcse:.4f} | {wtd['width']:.3f} | {wtd['bias_raw']:+.4f} | "
              f"{wtd['rmse']:.4f} | {wtd['miss_wilson_grader']:.3f} | {wtd['miss_wilson_human']:.3f} | "
              f"{uni['width']:.3f} | {wtd['width'] / uni['width']:.3f} | {1000 * wtd['t_all'] / reps:.2f} | "
              f"{wtd['t_all'] / max(wtd['t_draw'], 1e-9):.1f} |")


if __name__ == "__main__":
    main()
