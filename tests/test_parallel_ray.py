"""Ray executor on the session's Ray cluster (conftest.py: 3 local nodes of one CPU): bit-identical results on serial,
processes and Ray with 1 or 2 workers (a study and the FAQ protocol), a worker that dies is retried without
changing the results, and the CLI's --executor ray."""

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit
from typer.testing import CliRunner

# every Ray test on one xdist worker (make test: --dist loadgroup): two Ray instances on 2 cores slow both
# slow (make check leaves it out): Ray
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("ray")]

ray = pytest.importorskip("ray")

from assay.cli import app  # noqa: E402
from assay.parallel import RayExecutor, get_executor, spawn, use_executor  # noqa: E402
from assay.studies import run_study  # noqa: E402


@pytest.fixture(autouse=True)
def local_ray(ray_connected):
    """The session's Ray cluster (conftest.py: 3 nodes of one CPU), joined."""
    return ray_connected


def test_study_identical_on_every_executor():
    ref = run_study("psdme-ridge", trials=8, seed=3, workers=1).rows
    for kind, workers in (("processes", 2), ("ray", 1), ("ray", 2)):
        with use_executor(kind):
            rows = run_study("psdme-ridge", trials=8, seed=3, workers=workers).rows
        pd.testing.assert_frame_equal(rows, ref, check_exact=True)


def test_faq_protocol_identical_on_ray():
    from assay.faq import FactorModel, protocol

    rng = np.random.default_rng(0)
    V, U = rng.normal(size=(80, 3)), rng.normal(size=(70, 3))
    Z = (rng.random((70, 80)) < expit(U @ V.T)).astype(float)
    hist = pd.DataFrame(Z[:50], columns=[f"q{j}" for j in range(80)])
    new = pd.DataFrame(Z[50:], columns=hist.columns)
    kw = dict(budgets=[0.1, 0.2], seeds=3, seed=5, methods=("faq", "uniform"),
              factors=FactorModel(k=3, weight_decay=1.0, seed=0), chunk=6)
    a = protocol(hist, new, workers=1, **kw).table
    with use_executor("ray"):
        b = protocol(hist, new, workers=2, **kw).table
    pd.testing.assert_frame_equal(a, b, check_exact=True)


def test_dead_worker_is_retried_without_changing_results(tmp_path):
    # defined here so that Ray pickles them by value (workers cannot import the test module)
    def ok(task, ss):
        return float(np.random.default_rng(ss).random())

    def flaky(task, ss):
        """Kills its worker process the first time it sees task 3 (a marker file remembers), then works."""
        marker = Path(task["dir"]) / "died"
        if task["i"] == 3 and not marker.exists():
            marker.write_text("x")
            os._exit(1)
        return float(np.random.default_rng(ss).random())

    tasks = [{"i": i, "dir": str(tmp_path)} for i in range(8)]
    seeds = spawn(11, len(tasks))
    ref = get_executor(1).map(ok, tasks, seeds)
    out = RayExecutor(2, chunk=2).map(flaky, tasks, seeds)
    assert (tmp_path / "died").exists()  # the worker really died once
    assert out == ref


def test_cli_executor_ray():
    r = CliRunner().invoke(app, ["study", "psdme-ridge", "--trials", "5", "--executor", "ray", "--workers", "2", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["executor"]["kind"] == "ray"
    r2 = CliRunner().invoke(app, ["study", "psdme-ridge", "--trials", "5", "--json"])
    assert json.loads(r2.stdout)["rows"] == out["rows"]
    bad = CliRunner().invoke(app, ["study", "psdme-ridge", "--trials", "5", "--executor", "dask"])
    assert bad.exit_code == 2
