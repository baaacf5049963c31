"""Benchmark: executors (serial, processes, Ray) on the FAQ protocol: speed-up and per-task overhead.

What is measured
----------------
The FAQ protocol (``assay.faq.protocol``) on a synthetic history (500 models) and 600 new models x 1,351 questions
(the MMLU-Pro math shape), FAQ + uniform, 3 budgets x 4 seeds, chunks of 50 models: 144 tasks, each a few tenths of
a second. THE BASELINE is the serial executor in the same run. For processes and Ray with 1 and 2 workers:
wall time, speed-up against serial, and the overhead per task = (time with 1 worker - serial time) / tasks, with
its share of the serial time (the issue's bar: under 5%). Ray is started once before the timings (a local
cluster with 2 CPUs; its start-up, ~3 s, is reported separately). Every run must give the identical table.
The last line is a JSON object.

Usage::

    python bench/parallel.py
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import json  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from scipy.special import expit  # noqa: E402

from assay.faq import FactorModel, protocol  # noqa: E402
from assay.parallel import use_executor  # noqa: E402


def main() -> None:
    rng = np.random.default_rng(0)
    N, k = 1351, 8
    V = rng.normal(scale=0.8, size=(N, k))
    U = rng.normal(scale=0.8, size=(1100, k))
    Z = (rng.random((1100, N)) < expit(U @ V.T)).astype(float)
    cols = [f"q{j}" for j in range(N)]
    hist, new = pd.DataFrame(Z[:500], columns=cols), pd.DataFrame(Z[500:], columns=cols)
    fm = FactorModel(k=k, weight_decay=3.0, seed=0).fit(hist)
    kw = dict(budgets=[0.05, 0.1, 0.25], seeds=4, seed=1, methods=("faq", "uniform"), factors=fm, chunk=50, tune=False)
    n_tasks = 3 * 4 * (600 // 50)
    ref = protocol(hist, new, workers=1, **kw).table  # warm-up (imports, caches), not timed
    t0 = time.perf_counter()
    assert protocol(hist, new, workers=1, **kw).table.equals(ref)
    serial = time.perf_counter() - t0
    rows = [{"executor": "serial", "workers": 1, "seconds": serial, "speedup": 1.0}]
    import ray

    t0 = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    ray_start = time.perf_counter() - t0
    for kind in ("processes", "ray"):
        for w in (1, 2):
            with use_executor(kind):
                t0 = time.perf_counter()
                tab = protocol(hist, new, workers=w, **kw).table
                sec = time.perf_counter() - t0
            pd.testing.assert_frame_equal(tab, ref, check_exact=True)
            rows.append({"executor": kind, "workers": w, "seconds": sec, "speedup": serial / sec})
    ray.shutdown()
    df = pd.DataFrame(rows)
    over = {}
    for kind in ("processes", "ray"):
        one = float(df[(df.executor == kind) & (df.workers == 1)]["seconds"].iloc[0])
        over[kind] = {"per_task_ms": 1000 * (one - serial) / n_tasks, "share": (one - serial) / serial}
    print(f"FAQ protocol, {n_tasks} tasks (600 new models x 1,351 questions, 3 budgets x 4 seeds, chunks of 50); "
          f"identical tables on every executor")
    print(df.to_string(index=False, float_format=lambda x: f"{x:.2f}"))
    for kind, o in over.items():
        print(f"{kind}: overhead {o['per_task_ms']:.1f} ms per task = {100 * o['share']:.1f}% of the serial time")
    print(f"ray start-up (once): {ray_start:.1f} s")
    print(json.dumps({"bench": "parallel", "tasks": n_tasks, "serial_s": serial, "rows": rows, "overhead": over,
                      "ray_startup_s": ray_start}))


if __name__ == "__main__":
    main()
