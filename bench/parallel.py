"""Benchmark: executors (serial, processes, Ray, a multi-node Ray cluster): speed-up and per-task overhead.

What is measured
----------------
Default: the FAQ protocol (``assay.faq.protocol``) on a synthetic history (500 models) and 600 new models x 1,351
questions (the MMLU-Pro math shape), FAQ + uniform, 3 budgets x 4 seeds, chunks of 50 models: 144 tasks, each a
few tenths of a second. THE BASELINE is the serial executor in the same run. For processes and Ray with 1 and 2
workers: wall time, speed-up against serial, and the overhead per task = (time with 1 worker - serial time) /
tasks, with its share of the serial time (the issue's bar: under 5%). Ray is started once before the timings (a
local cluster with 2 CPUs; its start-up, ~3 s, is reported separately).

``--study NAME``: a study instead (``scope-sim``: ``assay study scope-sim --quick``, 64 tasks of about 0.6 s;
``siren-a``, ``faq-leaderboard``: their ``--quick`` settings), timed serial, with 2 processes and on a local Ray
with 2 CPUs (after a small untimed run that loads the code).

``--cluster``: also a Ray cluster of 3 nodes on this machine (``ray.cluster_utils.Cluster``, loopback only, 1 CPU
per node), joined through its address as ``--executor ray --address HOST:PORT`` joins one; its start-up is reported
separately. On a machine with 2 cores, 3 one-CPU nodes share 2 cores: this row measures Ray's multi-node overhead
(object transfer between nodes, scheduling), not more speed.

Every run must give the identical table. The last line is a JSON object. Other timings on the machine distort these:
run it alone (``flock /work/bench.lock python bench/parallel.py ...`` where several benchmarks share a machine).

Usage::

    python bench/parallel.py                              # FAQ protocol, serial / processes / Ray, 1 and 2 workers
    python bench/parallel.py --study scope-sim --cluster  # a study, serial / 2 processes / Ray 2 CPUs / 3 nodes
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import contextlib  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from scipy.special import expit  # noqa: E402

from assay.faq import FactorModel, protocol  # noqa: E402
from assay.parallel import use_executor  # noqa: E402

# the studies' --quick settings (assay study NAME --quick), and a tiny version of each to load the code untimed
STUDIES = {
    "scope-sim": (dict(trials=2, cert_trials=20, budgets=(2000,), cert_budget=2000, region_budget=2000),
                  dict(trials=1, cert_trials=1, budgets=(200,), cert_budget=200, region_budget=200)),
    "siren-a": (dict(trials=200, gt=300, n_boot=200),
                dict(trials=5, gt=5, n_boot=20, Ms=(100,), Ks=(2,), Rs=(1,))),
    "faq-leaderboard": (dict(trials=2, budgets=(0.025, 0.1), n_models=300, splits=2,
                             methods=("faq", "faq_paper", "uniform", "ht_uniform")),
                        dict(trials=1, budgets=(0.1,), n_models=300, splits=2, methods=("uniform",))),
}


@contextlib.contextmanager
def loopback_cluster(nodes: int = 3, cpus: int = 1):
    """A Ray cluster of ``nodes`` nodes on 127.0.0.1 in a private temporary folder; yields its address."""
    import ray
    from ray.cluster_utils import Cluster

    tmp = tempfile.mkdtemp(prefix="assay-ray-", dir="/tmp")
    old_tmp = os.environ.get("RAY_TMPDIR")
    os.environ["RAY_TMPDIR"] = tmp  # ray.init() elsewhere on the machine must not find this cluster
    consts = ray._private.ray_constants
    old_switch, consts.ENABLE_RAY_CLUSTER = consts.ENABLE_RAY_CLUSTER, False  # dial 127.0.0.1 as given
    node = dict(num_cpus=cpus, node_ip_address="127.0.0.1", object_store_memory=100 * 2**20)
    c = None
    try:
        c = Cluster(initialize_head=True, head_node_args=dict(include_dashboard=False, **node))
        for _ in range(nodes - 1):
            c.add_node(**node)
        c.wait_for_nodes()
        yield c.address
    finally:
        ray.shutdown()
        if c is not None:
            c.shutdown()
        consts.ENABLE_RAY_CLUSTER = old_switch
        if old_tmp is None:
            os.environ.pop("RAY_TMPDIR", None)
        else:
            os.environ["RAY_TMPDIR"] = old_tmp
        shutil.rmtree(tmp, ignore_errors=True)


def faq_workload():
    rng = np.random.default_rng(0)
    N, k = 1351, 8
    V = rng.normal(scale=0.8, size=(N, k))
    U = rng.normal(scale=0.8, size=(1100, k))
    Z = (rng.random((1100, N)) < expit(U @ V.T)).astype(float)
    cols = [f"q{j}" for j in range(N)]
    hist, new = pd.DataFrame(Z[:500], columns=cols), pd.DataFrame(Z[500:], columns=cols)
    fm = FactorModel(k=k, weight_decay=3.0, seed=0).fit(hist)
    kw = dict(budgets=[0.05, 0.1, 0.25], seeds=4, seed=1, methods=("faq", "uniform"), factors=fm, chunk=50, tune=False)

    def run(workers: int) -> pd.DataFrame:
        return protocol(hist, new, workers=workers, **kw).table

    run(1)  # warm-up (imports, caches), not timed
    return run, 3 * 4 * (600 // 50), ("FAQ protocol, 144 tasks (600 new models x 1,351 questions, 3 budgets x 4 "
                                      "seeds, chunks of 50)")


def study_workload(name: str):
    from assay.studies import run_study

    full, tiny = STUDIES[name]
    count = {}

    def run(workers: int, **kw) -> pd.DataFrame:
        return run_study(name, seed=0, workers=workers, progress=lambda d, t: count.update(t=t), **(kw or full)).rows

    run(1, **tiny)  # loads the code, not timed
    return run, count, f"assay study {name} --quick"


def timed(run, workers: int) -> tuple[float, pd.DataFrame]:
    t0 = time.perf_counter()
    tab = run(workers)
    return time.perf_counter() - t0, tab


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--study", choices=sorted(STUDIES), help="time this study (its --quick settings) instead")
    ap.add_argument("--cluster", action="store_true", help="also a 3-node Ray cluster on 127.0.0.1, 1 CPU per node")
    args = ap.parse_args()
    import ray

    if args.study:
        run, count, what = study_workload(args.study)
        plan = [("processes", 2), ("ray", 2)]
    else:
        run, n_tasks, what = faq_workload()
        plan = [("processes", 1), ("processes", 2), ("ray", 1), ("ray", 2)]
    serial, ref = timed(run, 1)
    n_tasks = count["t"] if args.study else n_tasks
    rows = [{"executor": "serial", "workers": 1, "seconds": serial, "speedup": 1.0}]
    t0 = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    ray_start = time.perf_counter() - t0
    for kind, w in plan:
        with use_executor(kind):
            sec, tab = timed(run, w)
        pd.testing.assert_frame_equal(tab, ref, check_exact=True)
        rows.append({"executor": kind, "workers": w, "seconds": sec, "speedup": serial / sec})
    ray.shutdown()
    cluster_start = None
    if args.cluster:
        t0 = time.perf_counter()
        with loopback_cluster(3) as address:
            cluster_start = time.perf_counter() - t0
            with use_executor("ray", address=address):
                sec, tab = timed(run, 3)
        pd.testing.assert_frame_equal(tab, ref, check_exact=True)
        rows.append({"executor": "ray, 3 nodes", "workers": 3, "seconds": sec, "speedup": serial / sec})
    df = pd.DataFrame(rows)
    over = {}
    for kind in ("processes", "ray"):
        one = df[(df.executor == kind) & (df.workers == 1)]["seconds"]
        if len(one):
            o = float(one.iloc[0]) - serial
            over[kind] = {"per_task_ms": 1000 * o / n_tasks, "share": o / serial}
    print(f"{what}: {n_tasks} tasks, {1000 * serial / n_tasks:.0f} ms per task serial, {os.cpu_count()} cores; "
          f"identical tables on every executor")
    print(df.to_string(index=False, float_format=lambda x: f"{x:.2f}"))
    for kind, o in over.items():
        print(f"{kind}: overhead {o['per_task_ms']:.1f} ms per task = {100 * o['share']:.1f}% of the serial time")
    print(f"ray start-up (once): {ray_start:.1f} s" + (f"; 3-node cluster start-up: {cluster_start:.1f} s"
                                                        if cluster_start is not None else ""))
    print(json.dumps({"bench": "parallel", "workload": what, "tasks": n_tasks, "cores": os.cpu_count(),
                      "serial_s": serial, "per_task_s": serial / n_tasks, "rows": rows, "overhead": over,
                      "ray_startup_s": ray_start, "cluster_startup_s": cluster_start}))


if __name__ == "__main__":
    main()
