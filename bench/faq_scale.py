"""Benchmark: FAQ (assay.faq) at the paper's size, on histories simulated from the paper's own fitted factors.

What is simulated
-----------------
The FAQ paper's final factors (fitted on its M1 models, fully observed, K = 64; ``shared/data/faq/factor_models/
final``): MMLU-Pro, U 2,212 x 64 and V 12,032 x 64; BBH + GPQA + IFEval + MATH + MuSR, U 2,211 x 64 and V 9,574 x 64.
Answers are drawn as Bernoulli(sigmoid(u_i . v_j)). The paper's new models (M2) have no factors in that folder
(the final U holds M1 only), so 100 rows of U, chosen at random, are held out as the new models and the history
is simulated from the other 2,112 / 2,111 rows: a history of 2,112 x 12,032 (MMLU-Pro) and 2,111 x 9,574
(BBH+...). Missingness settings of the paper (applied to the history only; the new models are complete, so
their accuracy over the bank is known): ``full`` (p = 1.0, every answer observed) and ``nfobs200`` (200 rows
fully observed, every other entry observed independently with probability 0.1). ALL NUMBERS HERE ARE ON
SIMULATED ANSWERS.

Stages (each in its own subprocess, so its peak memory is its own; the history arrives as the float64 table a
user would pass, NaN = missing, and ``input MB`` is the process's resident memory once it is loaded)
------------------------------------------------------------------------------------------------------
1. ``fit_cv``: the default factor fit with its cross-validation (what ``assay faq`` / ``faq.evaluate`` run when
   given a history and no factors: ``assay.faq.fit._factors`` -> ``fit_factors``, cache in a fresh directory).
   BASELINE ``fit_one``: one fit at the (k, lambda) the CV chose, no CV (``FactorModel(cv=None, holdout=0)``,
   the final fit alone). ratio = fit_cv / fit_one.
2. ``cached``: the same call again, reading the fit cache. BASELINE: fit_cv. ratio = cached / fit_cv.
3. ``one_model``: ``faq.evaluate(history, one new model, budget=0.025)`` the first time on this history (the fit
   is cached; the calibration on held-out families of the history is computed and cached), and ``again`` (all
   cached). BASELINE: the core alone (``faq.estimate`` on the fitted factors, same model and budget).
4. ``protocol``: ``faq.protocol(history, new_models=100 held-out models, budgets=(0.025,), seeds=S)`` (FAQ, the
   uniform sample mean and the paper's HT uniform reference on 2 worker processes; fit and calibration from the
   cache). BASELINE: the FAQ core alone on the same 100 models for one seed, times S. Its FAQ row gives the
   coverage of the nominal 95% intervals of the 100 models x S seeds, against each model's accuracy over the
   bank (the mean of its drawn row, the finite-population target FAQ estimates; docs/faq.md), with the
   binomial Monte Carlo s.e.
   sqrt(p (1 - p) / (100 S)).

The two fit stages also time one evaluation of the fit's objective on one thread at 1,024 x 4,096 before and after
(``probe_before_s``, ``probe_after_s``): the machine's speed at the time, as a shared virtual machine runs the same
code at speeds up to 1.5x apart from one hour to the next.

``peak MB`` is the stage process's own peak resident memory; ``workers MB`` the largest peak of its worker processes
(the default fit's cross-validation runs on 2 forked workers for a history this size; the protocol on 2), so
peak + 2 x workers bounds the stage's total from above (forked workers share the history's pages).
What a fit's peak holds: the user's float64 table (the input, ``input MB``), the objective's three float32
models x items buffers (12 bytes per entry: 305 MB at 2,112 x 12,032), L-BFGS-B's memory (about 45 float64 vectors
of the (models + items) k parameters) and the history as int8 with its bool mask (1 byte per entry each); no
models x items float64 copy of the history (it is held as int8 from validation on; the fit's products read it
a block at a time).

Usage::

    python bench/faq_scale.py --quick   # a 1/4 x 1/4 MMLU-Pro slice (552 x 3,008), about 1-2 minutes
    python bench/faq_scale.py           # full size: both banks fully observed + MMLU-Pro nfobs200 (fit stages)

The table gives seconds, peak resident memory (MB) per stage and the ratio; the last line is a JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

FACTORS = Path(__file__).resolve().parents[2] / "shared" / "data" / "faq" / "factor_models" / "final"
BANKS = {"mmlu-pro": "mmlu-pro", "bbh": "bbh+gpqa+ifeval+math+musr"}
N_NEW = 100


def _rss_mb(who=resource.RUSAGE_SELF) -> float:
    return resource.getrusage(who).ru_maxrss / 1024.0  # Linux: kilobytes


def _current_rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def simulate(bank: str, setting: str, out: Path, *, rows: int | None = None, cols: int | None = None,
             seed: int = 0) -> dict:
    """Draw a history and the held-out new models from the paper's factors -> saved arrays (int8, -1 = missing)."""
    from scipy.special import expit

    d = FACTORS / BANKS[bank]
    U = np.load(d / "U_nfobs=None_p=1.0.npy").astype(np.float64)
    V = np.load(d / "V_nfobs=None_p=1.0.npy").astype(np.float64)
    rng = np.random.default_rng(seed)
    if rows is not None:
        U = U[rng.permutation(U.shape[0])[:rows]]
    if cols is not None:
        V = V[np.sort(rng.permutation(V.shape[0])[:cols])]
    perm = rng.permutation(U.shape[0])
    new_idx, hist_idx = np.sort(perm[:N_NEW if rows is None else N_NEW // 2]), np.sort(perm[N_NEW if rows is None
                                                                                            else N_NEW // 2:])

    def draw(idx):
        Z = np.empty((idx.size, V.shape[0]), dtype=np.int8)
        for i in range(0, idx.size, 256):  # row blocks: the simulator never holds an M x N float64 matrix
            blk = idx[i:i + 256]
            Z[i:i + blk.size] = rng.random((blk.size, V.shape[0])) < expit(U[blk] @ V.T)
        return Z

    H = draw(hist_idx)
    Znew = draw(new_idx)
    if setting == "nfobs200":
        full = rng.permutation(H.shape[0])[:200]
        miss = rng.random(H.shape) >= 0.1
        miss[full] = False
        H[miss] = -1
        del miss
    elif setting != "full":
        raise SystemExit(f"unknown setting {setting!r}")
    np.savez(out, H=H, Znew=Znew)
    return {"history": list(H.shape), "new": list(Znew.shape), "observed": float((H >= 0).mean()),
            "mean_accuracy_new": float(Znew.mean())}


# ---------------------------------------------------------------------------------------------------- stages


def _load(data: str):
    import pandas as pd

    with np.load(data) as z:
        H8, Z8 = z["H"], z["Znew"]
    items = [f"q{j}" for j in range(H8.shape[1])]
    # what a user passes: a float64 table, NaN = missing
    H = pd.DataFrame(np.where(H8 < 0, np.nan, H8.astype(np.float64)), index=[f"h{i:04d}" for i in range(H8.shape[0])],
                     columns=items)
    new = pd.DataFrame(Z8.astype(np.float64), index=[f"new{i:03d}" for i in range(Z8.shape[0])], columns=items)
    del H8, Z8
    return H, new


def speed_probe() -> float:
    """Seconds of one evaluation of the fit's objective on one thread, at 1,024 x 4,096 and k = 16 (median of 5):
    this machine's speed at the time of a stage. A shared 2-core virtual machine runs the same code at speeds 1.5x
    apart from one hour to the next; the probe, printed before and after each fit stage, says which it was."""
    from threadpoolctl import threadpool_limits

    from assay.faq import factor

    rng = np.random.default_rng(0)
    m, n, k = 1024, 4096, 16
    Y = (rng.random((m, n)) < 0.6).astype(np.int8)
    theta = 0.3 * rng.standard_normal((m + n) * k + n)
    work: dict = {}
    was, factor._THREADS = factor._THREADS, 1
    times = []
    try:
        with threadpool_limits(limits=1, user_api="blas"):
            for _ in range(6):
                t = time.perf_counter()
                factor._objective(theta, Y, None, k, 3.0, True, work)
                times.append(time.perf_counter() - t)
    finally:
        factor._THREADS = was
    return float(np.median(times[1:]))


def stage(name: str, data: str, extra: dict) -> dict:
    import warnings

    warnings.simplefilter("ignore")
    import assay.faq as faq
    from assay.faq import api, fit
    from assay.faq.core import FAQParams, run_faq

    H, new = _load(data)
    input_mb = _current_rss_mb()
    out: dict = {"stage": name, "input_mb": round(input_mb)}
    if name in ("fit_cv", "fit_one"):
        out["probe_before_s"] = round(speed_probe(), 4)
    t = time.perf_counter()
    if name in ("fit_cv", "cached"):
        fm, _, _, info = fit._factors(H, None, cache=True)
        out.update(k=fm.k_, weight_decay=fm.weight_decay_, cache=info["cache"], heldout_logloss=fm.heldout_logloss_,
                   train_logloss=fm.train_logloss_)
    elif name == "fit_one":
        fm = faq.FactorModel(k=int(extra["k"]), weight_decay=float(extra["weight_decay"]), bias=True, cv=None,
                             holdout=0, max_iter=300, seed=0)
        fm.fit(api.as_matrix(H, "history", codes=True))  # int8 codes, -1 = missing: the form assay holds a history in
        out.update(k=fm.k_, n_iter=fm.n_iter_)
    elif name == "one_model":
        r = faq.evaluate(H, new.iloc[[0]], budget=0.025, seed=0)
        out["first_s"] = time.perf_counter() - t
        out["expected"] = r.info["expected"]
        t2 = time.perf_counter()
        r = faq.evaluate(H, new.iloc[[0]], budget=0.025, seed=0)
        out["again_s"] = time.perf_counter() - t2
        fm = r.factors_
        n_b = int(r.params["n_queries"])
        t3 = time.perf_counter()
        faq.estimate(new.iloc[[0]].to_numpy(), fm.V_, fm.prior_mean_, fm.prior_cov_, n_b, rng=0, b=fm.b_)
        out["core_s"] = time.perf_counter() - t3
        out["n_queries"] = n_b
        e = r.estimates.iloc[0]
        out["estimate"], out["ci"], out["truth"] = float(e["estimate"]), [float(e["ci_low"]), float(e["ci_high"])], \
            float(e["truth"])
    elif name == "protocol":
        S = int(extra["seeds"])
        res = faq.protocol(H, new, budgets=(0.025,), seeds=S, seed=0, methods=("faq",), variants=False,
                           workers=int(extra.get("workers", 1)))
        out["protocol_s"] = time.perf_counter() - t
        tab = res.table.set_index("method")
        out["table"] = {m: {c: float(tab.loc[m, c]) for c in ("coverage", "coverage_se", "mean_width",
                                                              "ess_vs_uniform_mean") if c in tab}
                        for m in tab.index}
        out["n_queries"] = int(tab["n_queries"].iloc[0])
        # the baseline: the FAQ core alone on the same 100 models, one seed (scaled by S)
        fm, _, _, _ = fit._factors(H, None, cache=True)
        Z = new.to_numpy()
        t3 = time.perf_counter()
        run_faq(fm.V_, fm.prior_mean_, fm.prior_cov_, Z, out["n_queries"], rng=np.random.default_rng(0),
                params=FAQParams(), b=fm.b_)
        out["core_one_seed_s"] = time.perf_counter() - t3
    else:
        raise SystemExit(f"unknown stage {name}")
    out["seconds"] = time.perf_counter() - t
    if name in ("fit_cv", "fit_one"):
        out["probe_after_s"] = round(speed_probe(), 4)
    out["peak_mb"] = round(_rss_mb())
    # the CV's forked workers (fit_cv on a large history) and the protocol's worker processes: the largest one's
    # peak; parent + 2 x this bounds the stage's total (forked workers share the history's pages with the parent)
    out["children_peak_mb"] = round(_rss_mb(resource.RUSAGE_CHILDREN))
    return out


def run_stage(name: str, data: Path, cache: Path, extra: dict | None = None) -> dict:
    env = dict(os.environ, ASSAY_CACHE_DIR=str(cache))
    cmd = [sys.executable, __file__, "--stage", name, "--data", str(data), "--extra", json.dumps(extra or {})]
    t = time.perf_counter()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        sys.stderr.write(p.stderr)
        raise SystemExit(f"stage {name} failed ({p.returncode})")
    res = json.loads(p.stdout.strip().splitlines()[-1])
    res["process_s"] = time.perf_counter() - t
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a 1/4 x 1/4 slice of MMLU-Pro (about 1-2 minutes)")
    ap.add_argument("--seeds", type=int, default=None, help="protocol seeds (default 20; --quick 10)")
    ap.add_argument("--cases", default=None, help="comma list of bank:setting (default: mmlu-pro:full, bbh:full, "
                                                  "mmlu-pro:nfobs200)")
    ap.add_argument("--stage", help=argparse.SUPPRESS)
    ap.add_argument("--data", help=argparse.SUPPRESS)
    ap.add_argument("--extra", default="{}", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.stage:
        print(json.dumps(stage(args.stage, args.data, json.loads(args.extra)), default=float))
        return 0

    seeds = args.seeds or (10 if args.quick else 20)
    cases = (args.cases or ("mmlu-pro:full" if args.quick else "mmlu-pro:full,bbh:full,mmlu-pro:nfobs200")).split(",")
    results, lines = [], []
    with tempfile.TemporaryDirectory(prefix="faq_scale_") as tmp:
        for case in cases:
            bank, setting = case.split(":")
            data = Path(tmp) / f"{bank}_{setting}.npz"
            cache = Path(tmp) / f"cache_{bank}_{setting}"
            sim = simulate(bank, setting, data, **({"rows": 552, "cols": 3008} if args.quick else {}))
            label = f"{bank} {setting} {sim['history'][0]:,} x {sim['history'][1]:,}"
            r: dict = {"case": case, "sim": sim}
            r["fit_cv"] = run_stage("fit_cv", data, cache)
            r["fit_one"] = run_stage("fit_one", data, cache, {"k": r["fit_cv"]["k"],
                                                              "weight_decay": r["fit_cv"]["weight_decay"]})
            r["cached"] = run_stage("cached", data, cache)
            if setting == "full" or args.quick:
                r["one_model"] = run_stage("one_model", data, cache)
                r["protocol"] = run_stage("protocol", data, cache, {"seeds": seeds, "workers": 2})
            fc, fo, ca = r["fit_cv"], r["fit_one"], r["cached"]
            lines.append((f"{label}: default fit + CV (k={fc['k']}, lambda={fc['weight_decay']:g})", fc["seconds"],
                          fc["peak_mb"], fc["input_mb"], f"{fc['seconds'] / fo['seconds']:.1f}x one fit (speed "
                          f"probe {fc['probe_before_s']:.3f} s before, {fc['probe_after_s']:.3f} s after)",
                          fc.get("children_peak_mb", 0)))
            lines.append(("  baseline: one fit at that (k, lambda), no CV", fo["seconds"], fo["peak_mb"],
                          fo["input_mb"], "", 0))
            lines.append(("  cached start (fit read from the cache)", ca["seconds"], ca["peak_mb"], ca["input_mb"],
                          f"{ca['seconds'] / fc['seconds']:.3f}x the fit", 0))
            if "one_model" in r:
                om, pr = r["one_model"], r["protocol"]
                lines.append((f"  one new model at 2.5% ({om['n_queries']} q), first (calibration computed)",
                              om["first_s"], om["peak_mb"], om["input_mb"],
                              f"{om['first_s'] / om['core_s']:.0f}x the core alone ({om['core_s']:.2f} s)", 0))
                lines.append(("  one new model again (all cached)", om["again_s"], om["peak_mb"], om["input_mb"],
                              f"{om['again_s'] / om['core_s']:.1f}x the core alone", 0))
                base = pr["core_one_seed_s"] * seeds
                lines.append((f"  protocol: {N_NEW if not args.quick else N_NEW // 2} new models x {seeds} seeds, "
                              "FAQ + 2 uniform references", pr["protocol_s"], pr["peak_mb"], pr["input_mb"],
                              f"{pr['protocol_s'] / base:.1f}x FAQ core alone ({base:.1f} s)",
                              pr.get("children_peak_mb", 0)))
                cov = pr["table"]["faq"]["coverage"]
                n_runs = (N_NEW if not args.quick else N_NEW // 2) * seeds
                r["coverage"] = {"faq": cov, "mc_se": float(np.sqrt(cov * (1 - cov) / n_runs)),
                                 "se_over_seeds": pr["table"]["faq"]["coverage_se"], "runs": n_runs,
                                 "uniform": pr["table"]["uniform"]["coverage"],
                                 "ess_vs_uniform_mean": pr["table"]["faq"]["ess_vs_uniform_mean"]}
            results.append(r)
            print(f"... {case} done", file=sys.stderr, flush=True)

    w = max(len(x[0]) for x in lines)
    print(f"{'stage':<{w}}  {'seconds':>8}  {'peak MB':>8}  {'input MB':>8}  {'workers MB':>10}  ratio")
    for name, sec, peak, inp, note, kids in lines:
        print(f"{name:<{w}}  {sec:8.2f}  {peak:8.0f}  {inp:8.0f}  {kids or '':>10}  {note}")
    for r in results:
        if "coverage" in r:
            c = r["coverage"]
            print(f"{r['case']}: coverage of nominal 95% at 2.5% of the bank on {c['runs']} held-out runs: "
                  f"{c['faq']:.4f} (MC s.e. {c['mc_se']:.4f}; over seeds {c['se_over_seeds']:.4f}); uniform sample "
                  f"mean {c['uniform']:.4f}; FAQ ESS vs uniform {c['ess_vs_uniform_mean']:.2f}x")
    print(json.dumps({"quick": bool(args.quick), "seeds": seeds, "cpus": os.cpu_count(), "results": results},
                     default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main())
