"""Benchmark: QuickScope's optimizer overhead per ticket on the 4,440-template DyVal space (instant simulated model).

What is measured
----------------
1. ``coup``: a 20,000-ticket run (batches of 20, n0 = 50, RF surrogate, certification at 0.9, delta = 0.01) of
   :class:`assay.quickscope.Search` against the simulated DyVal model of the research notes (a ticket fails with
   probability theta(x), notes quickscope.md Sec. 9). Overhead = wall time in ``ask`` + ``tell`` (surrogate refits
   included), i.e. everything except drawing the simulated outcomes, divided by the tickets.
2. THE BASELINE: uniform sampling's overhead measured in the same run: drawing configurations uniformly without
   replacement from the same space (10 evaluations each) and keeping per-configuration sums and means, for the
   same 20,000 tickets. ``ratio`` = COUP overhead / uniform overhead (what COUP's bookkeeping costs on top of the
   cheapest possible allocation).
3. For reference only (not measured here): the released QuickScope optimizer spent 237 ms per ticket on this
   space (cert 0.9, 5,000 tickets, this machine; notes Sec. 9).

4. Memory: the run's peak resident memory above what the process held before the search started (max RSS at the
   end minus RSS before ``Search``, after a 200-ticket warm-up run that loads scikit-learn: the search state, the RF
   surrogate refits, the pool, the tell() history), and tracemalloc's peak for a separate, untimed run of
   ``--memory-tickets`` (default 5,000) tickets (tracing slows the Python-heavy search, so it is not done on the
   timed run). Measured (20,000 tickets): the run adds about 51 MB of resident memory while tracemalloc, which sees
   Python objects and numpy buffers, peaks at 2.5 MB over 5,000 tickets: what dominates is memory tracemalloc does
   not see, native allocations (the random-forest surrogate's trees, built by scikit-learn in C and refit as the pool
   grows) and freed pages the allocator keeps. The search's own state is small: outcomes are kept as
   per-configuration counts and sums, never as a tickets x configurations matrix.

Also printed: the true mean error of the top-10 by LCB after 2,000 / 5,000 / 20,000 tickets, the pool size,
certified templates and false certifications (truth known), next to uniform's top-10 at the same budgets.
The last line is a JSON object.

Usage::

    python bench/quickscope.py            # 20,000 tickets (about a minute)
    python bench/quickscope.py --tickets 5000
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import resource  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402

import numpy as np  # noqa: E402

from assay.quickscope import Search  # noqa: E402
from assay.benchmarks.worlds import get_world  # noqa: E402
from assay.quickscope.simulate import uniform_baseline  # noqa: E402

RELEASED_MS_PER_TICKET = 237.0


def uniform_overhead(space, tickets: int, evals: int, seed: int) -> float:
    """Seconds of bookkeeping for uniform sampling (no outcome simulation inside the timer)."""
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    k = tickets // evals
    cfgs = space.sample_unseen(k, rng, set())
    keys = [space.key(c) for c in cfgs]
    sums = dict.fromkeys(keys, 0.0)
    counts = dict.fromkeys(keys, 0)
    outcomes = rng.random(tickets) < 0.5  # stand-in outcomes; drawing them is cheap and not what is compared
    for t in range(tickets):
        kk = keys[t // evals]
        sums[kk] += outcomes[t]
        counts[kk] += 1
    means = {kk: sums[kk] / counts[kk] for kk in keys}
    sorted(means, key=means.get, reverse=True)[:10]
    return time.perf_counter() - t0


def rss_mb() -> float:
    """Current resident set size (MB), from /proc (Linux); the max RSS elsewhere."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1e3
    except OSError:
        pass
    return maxrss_mb()


def maxrss_mb() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return r / 1e6 if sys.platform == "darwin" else r / 1e3


def run_search(space, truth, tickets: int, seed: int, certify: float) -> None:
    """An untimed run (for tracemalloc): the same loop as the timed one, without checkpoints."""
    search = Search(space, seed=seed, certify=certify)
    rng = np.random.default_rng(seed + 1)
    while search.tickets_told < tickets:
        batch = search.ask(min(20, tickets - search.tickets_told))
        th = np.array([truth[space.key(t.config)] for t in batch])
        search.tell(list(zip([t.id for t in batch], (rng.random(len(batch)) < th).astype(float))))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tickets", type=int, default=20_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--certify", type=float, default=0.9)
    ap.add_argument("--memory-tickets", type=int, default=5000, help="tickets of the untimed tracemalloc run (0: skip)")
    args = ap.parse_args()
    world = get_world("dyval")
    space = world.space()
    truth = {space.key(c): world.truth(c) for c in space.enumerate()}
    run_search(space, truth, 200, args.seed + 99, args.certify)  # warm-up: imports (scikit-learn) and first refits
    rss_before = rss_mb()
    search = Search(space, seed=args.seed, certify=args.certify)
    rng = np.random.default_rng(args.seed + 1)
    overhead = 0.0
    checkpoints = sorted({c for c in (2000, 5000, args.tickets) if c <= args.tickets})
    rows = []
    while search.tickets_told < args.tickets:
        t0 = time.perf_counter()
        tickets = search.ask(min(20, args.tickets - search.tickets_told))
        overhead += time.perf_counter() - t0
        th = np.array([truth[space.key(t.config)] for t in tickets])
        res = list(zip([t.id for t in tickets], (rng.random(len(tickets)) < th).astype(float)))
        t0 = time.perf_counter()
        search.tell(res)
        overhead += time.perf_counter() - t0
        if checkpoints and search.tickets_told >= checkpoints[0]:
            c = checkpoints.pop(0)
            top = search.top(10)
            top_truth = [truth[k] for k in top["key"]]
            cert = search.certified()
            unif = uniform_baseline(space, world.truth, c, evals_per_config=10, seed=args.seed + 7)
            rows.append({"tickets": c, "ms_per_ticket_so_far": 1000 * overhead / search.tickets_told,
                         "top10_true_coup": float(np.mean(top_truth)), "top10_min_true_coup": float(np.min(top_truth)),
                         "top10_true_uniform": float(unif.head(10)["truth"].mean()), "pool": search.n,
                         "certified": len(cert),
                         "false_certifications": int(sum(truth[k] < args.certify for k in cert["key"])),
                         "refits": search.n_refits})
    coup_ms = 1000 * overhead / args.tickets
    run_rss_mb = maxrss_mb() - rss_before
    trace_peak = None
    if args.memory_tickets > 0:
        del search
        tracemalloc.start()
        run_search(space, truth, args.memory_tickets, args.seed, args.certify)
        trace_peak = tracemalloc.get_traced_memory()[1] / 1e6
        tracemalloc.stop()
    unif_s = min(uniform_overhead(space, args.tickets, 10, args.seed) for _ in range(3))
    unif_ms = 1000 * unif_s / args.tickets
    print(f"QuickScope on the DyVal space (4,440 templates), {args.tickets} tickets, batch 20, cert {args.certify}")
    print(f"{'tickets':>8} {'ms/ticket':>10} {'top10 COUP':>11} {'min':>6} {'top10 unif':>11} {'pool':>6} {'cert':>5} "
          f"{'false':>6} {'refits':>7}")
    for r in rows:
        print(f"{r['tickets']:>8} {r['ms_per_ticket_so_far']:>10.3f} {r['top10_true_coup']:>11.3f} "
              f"{r['top10_min_true_coup']:>6.3f} {r['top10_true_uniform']:>11.3f} {r['pool']:>6} {r['certified']:>5} "
              f"{r['false_certifications']:>6} {r['refits']:>7}")
    print(f"COUP overhead {coup_ms:.3f} ms/ticket; uniform sampling {unif_ms:.4f} ms/ticket; "
          f"ratio {coup_ms / unif_ms:.0f}x; released code (notes, not measured here) {RELEASED_MS_PER_TICKET} ms/ticket "
          f"= {RELEASED_MS_PER_TICKET / coup_ms:.0f}x ours")
    print(f"memory: peak RSS of the {args.tickets:,}-ticket run above the process before it {run_rss_mb:.1f} MB "
          f"(process max RSS {maxrss_mb():.0f} MB, before the search {rss_before:.0f} MB)"
          + ("" if trace_peak is None else
             f"; tracemalloc peak of an untimed {args.memory_tickets:,}-ticket run {trace_peak:.1f} MB"))
    print(json.dumps({"bench": "quickscope", "tickets": args.tickets, "coup_ms_per_ticket": coup_ms,
                      "run_peak_rss_mb": round(run_rss_mb, 1), "maxrss_mb": round(maxrss_mb(), 1),
                      "tracemalloc_peak_mb": None if trace_peak is None else round(trace_peak, 1),
                      "memory_tickets": args.memory_tickets,
                      "uniform_ms_per_ticket": unif_ms, "ratio_vs_uniform": coup_ms / unif_ms,
                      "released_ms_per_ticket": RELEASED_MS_PER_TICKET, "checkpoints": rows}))


if __name__ == "__main__":
    main()
