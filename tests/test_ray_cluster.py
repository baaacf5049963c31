"""Ray for real (issue 26): a 3-node Ray cluster on this machine (ray.cluster_utils.Cluster, every server on
127.0.0.1, one CPU per node) joined through its address, the way `--executor ray --address HOST:PORT` joins one.

* the four studies (siren-a, scope-sim, psdme-ridge, faq-leaderboard) and the FAQ protocol give tables identical
  (exactly) to the serial executor with the same seed, and their tasks really ran on all three nodes;
* a node removed while a run is under way: its chunk is run again on the other nodes and the table is still the
  serial one (the removal is checked to have interrupted a task);
* an address where no cluster answers is an AssayBackendError (exit 3) within seconds, not a traceback or a hang.

The cluster is the test session's one Ray cluster (``ray_cluster`` in conftest.py, shared with the other Ray
modules): it lives in a private RAY_TMPDIR, so that `ray.init()` elsewhere on the machine (another test process,
another Ray user) never finds it and joins it by accident, and it is always shut down."""

from __future__ import annotations

import os
import threading
import time

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit
from typer.testing import CliRunner

# every Ray test on one xdist worker (make test: --dist loadgroup): two Ray instances on 2 cores slow both
# slow (make check leaves it out): Ray
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("ray")]

ray = pytest.importorskip("ray")

from assay import parallel  # noqa: E402
from assay.cli import app  # noqa: E402
from assay.errors import AssayBackendError  # noqa: E402
from assay.parallel import RayExecutor, spawn, use_executor  # noqa: E402
from assay.studies import run_study  # noqa: E402
from assay.studies.faq import DATA, shared_data_dir  # noqa: E402

from conftest import RAY_NODE as NODE  # noqa: E402  (a node like the session cluster's)

# the smallest settings that still give each study several tasks (tasks in brackets)
STUDIES = {
    "siren-a": dict(trials=20, gt=30, n_boot=20, Ms=(100, 200), Ks=(2,), Rs=(1, 3)),  # [4]
    "scope-sim": dict(trials=1, cert_trials=1, budgets=(200,), cert_budget=200, region_budget=200,
                      parts=("topk", "certify")),  # [7]
    "psdme-ridge": dict(trials=20, ns=(20, 100), K=200, M=100),  # [4]
    "faq-leaderboard": dict(trials=2, budgets=(0.05,), n_models=120, splits=2, methods=("faq", "uniform")),  # [4]
}


@pytest.fixture
def cluster(ray_cluster):
    """The session's 3-node cluster (conftest.py), joined by assay's RayExecutor through its address, as from the
    command line (a connection left by an earlier test is to the same cluster, which the executor accepts)."""
    return ray_cluster


def _faq_data(models: int = 80):
    rng = np.random.default_rng(0)
    V, U = rng.normal(size=(80, 3)), rng.normal(size=(50 + models, 3))
    Z = (rng.random((50 + models, 80)) < expit(U @ V.T)).astype(float)
    hist = pd.DataFrame(Z[:50], columns=[f"q{j}" for j in range(80)])
    return hist, pd.DataFrame(Z[50:], columns=hist.columns)


def _faq_protocol(hist, new, workers, chunk, progress=None):
    from assay.faq import FactorModel, protocol

    return protocol(hist, new, budgets=[0.1, 0.2], seeds=2, seed=5, methods=("faq", "uniform"),
                    factors=FactorModel(k=3, weight_decay=1.0, seed=0), chunk=chunk, workers=workers,
                    progress=progress).table


class Traced(RayExecutor):
    """assay's RayExecutor, each task wrapped so that it writes to ``log`` the node it starts and ends on (and waits
    ``pause`` seconds, to be still running when a node goes); the numbers are the task function's, untouched."""

    log = ""
    pause = 0.0

    def map(self, fn, tasks, seeds, progress=None):
        log, pause = self.log, self.pause

        def traced(task, ss):
            import time as _time

            import ray as _ray

            node, key = _ray.get_runtime_context().get_node_id(), f"{ss.entropy}/{ss.spawn_key}".replace(" ", "")
            with open(log, "a") as f:
                f.write(f"start {node} {key}\n")
            out = fn(task, ss)
            _time.sleep(pause)
            with open(log, "a") as f:
                f.write(f"end {node} {key}\n")
            return out

        return super().map(traced, tasks, seeds, progress)


def _events(log):
    """(kind, node, key) of every complete line the tasks wrote (a line still being written by a worker is left for
    the next read)."""
    from watch import complete_lines

    return [ev for ev in (tuple(line.split()) for line in complete_lines(log)) if len(ev) == 3]


def test_studies_and_faq_protocol_on_three_nodes_equal_serial(cluster, tmp_path, monkeypatch):
    monkeypatch.setattr(parallel, "RayExecutor", Traced)
    monkeypatch.setattr(Traced, "log", str(tmp_path / "tasks.log"))
    names = [n for n in STUDIES if n != "faq-leaderboard" or (shared_data_dir() / DATA).exists()]
    for name in names:
        ref = run_study(name, seed=1, workers=1, **STUDIES[name]).rows
        with use_executor("ray", address=cluster.address):
            got = run_study(name, seed=1, workers=3, **STUDIES[name]).rows
        pd.testing.assert_frame_equal(got, ref, check_exact=True, obj=name)
    hist, new = _faq_data(20)
    ref = _faq_protocol(hist, new, workers=1, chunk=6)
    with use_executor("ray", address=cluster.address):
        got = _faq_protocol(hist, new, workers=3, chunk=6)
    pd.testing.assert_frame_equal(got, ref, check_exact=True, obj="FAQ protocol")
    # joined through the address (not a local Ray), and the work really spread over the three nodes
    assert ray.get_runtime_context().gcs_address == cluster.address
    ev = _events(Traced.log)
    assert len({node for kind, node, _ in ev if kind == "end"}) == 3
    # every task ran once (none failed): siren-a 4, scope-sim 7, psdme-ridge 4, faq-leaderboard 4, protocol 16
    assert sum(kind == "end" for kind, *_ in ev) == 4 + 7 + 4 + 16 + 4 * ("faq-leaderboard" in names)


def test_a_node_removed_mid_run_changes_nothing(cluster, tmp_path, monkeypatch):
    monkeypatch.setattr(parallel, "RayExecutor", Traced)
    monkeypatch.setattr(Traced, "log", str(tmp_path / "tasks.log"))
    monkeypatch.setattr(Traced, "pause", 0.3)
    hist, new = _faq_data(48)
    ref = _faq_protocol(hist, new, workers=1, chunk=4)  # 2 budgets x 2 seeds x 12 chunks of models = 48 tasks
    victim = cluster.add_node(**NODE)  # a fourth node, to be removed; the first three stay for the other tests
    cluster.wait_for_nodes()
    seen = {"done": 0, "total": None, "at_removal": None, "error": None}

    def progress(done, total):
        seen["done"], seen["total"] = done, total

    def remove_once_it_works():
        try:
            from watch import wait_for

            wait_for(lambda: any(kind == "start" and node == victim.node_id for kind, node, _ in _events(Traced.log)),
                     what="a task started on the node to remove", timeout=120)
            seen["at_removal"] = seen["done"]
            cluster.remove_node(victim)
        except Exception as e:  # reported by the test, not lost in the thread
            seen["error"] = e

    remover = threading.Thread(target=remove_once_it_works, daemon=True)
    remover.start()
    with use_executor("ray", address=cluster.address):
        got = _faq_protocol(hist, new, workers=4, chunk=4, progress=progress)
    remover.join(timeout=60)
    assert seen["error"] is None, seen["error"]
    # the node went while the run was under way, with one of its tasks started and never finished there
    assert seen["total"] == 48 and seen["at_removal"] is not None and seen["at_removal"] < 48
    ev = _events(Traced.log)
    lost = {key for kind, node, key in ev if kind == "start" and node == victim.node_id} - \
        {key for kind, node, key in ev if kind == "end" and node == victim.node_id}
    assert lost
    # ... and run again, to the end, elsewhere
    ended_elsewhere = {key for kind, node, key in ev if kind == "end" and node != victim.node_id}
    assert lost <= ended_elsewhere
    assert victim.node_id not in {n["NodeID"] for n in ray.nodes() if n["Alive"]}
    pd.testing.assert_frame_equal(got, ref, check_exact=True)



def test_a_chunk_lost_more_often_than_retried_is_a_backend_error(cluster):
    def dies(task, ss):  # here, so that Ray pickles it by value
        os._exit(1)

    with pytest.raises(AssayBackendError, match="Ray lost tasks 0, 1 of 2 after 0 retries"):
        RayExecutor(1, cluster.address, max_retries=0, chunk=2).map(dies, [0, 1], spawn(0, 2))


def test_another_address_while_joined_to_a_cluster_is_refused(cluster):
    from assay.errors import AssayInputError

    def size(task, ss):
        return abs(task)

    assert RayExecutor(2, cluster.address).map(size, [-1, 2], spawn(0, 2)) == [1, 2]  # joined (or still joined)
    with pytest.raises(AssayInputError, match="already connected to the Ray cluster at"):
        RayExecutor(2, "127.0.0.1:1").map(abs, [1, 2], spawn(0, 2))


# last: it needs no cluster, and the session's cluster (conftest.py) stops once the tests that use it are done
def test_an_address_where_no_cluster_answers_is_a_backend_error(tmp_path):
    if ray.is_initialized():  # left over by another module: this test is about joining a cluster from scratch
        ray.shutdown()
    t0 = time.monotonic()
    r = CliRunner().invoke(app, ["study", "psdme-ridge", "--trials", "5", "--executor", "ray", "--address",
                                 "127.0.0.1:1"])
    assert r.exit_code == 3, r.output
    assert "no Ray cluster answers at 127.0.0.1:1" in r.output and "Traceback" not in r.output
    assert time.monotonic() - t0 < 60  # ray.init alone retries such an address for minutes
    bad = CliRunner().invoke(app, ["study", "psdme-ridge", "--trials", "5", "--address", "not-an-address"])
    assert bad.exit_code == 2 and "HOST:PORT" in bad.output, bad.output
    with pytest.raises(AssayBackendError, match="no Ray cluster answers"):
        RayExecutor(2, "ray://127.0.0.1:1").map(abs, [1, 2], spawn(0, 2))
    # assay eval --backend ray --address: the same executor, the same refusal
    from fake_openai_server import FakeOpenAIServer
    from test_eval_campaign import _campaign

    from assay.eval import campaign as camp

    with FakeOpenAIServer(retry_after=0) as srv:
        c = _campaign(tmp_path, srv.base_url, judge=None, siren=None)
        with pytest.raises(AssayBackendError, match="no Ray cluster answers at 127.0.0.1:1"):
            camp.run(c, journal=tmp_path / "j.sqlite", backend="ray", address="127.0.0.1:1")
    assert not ray.is_initialized()
