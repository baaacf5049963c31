"""Test-wide settings: fitted FAQ factors are cached in a temporary folder of the run, shared by its workers, never in
the user's ~/.cache."""

import os
import sys
from pathlib import Path
import tempfile

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # tests/ helpers (live_server, fake_openai_server)


#: the run's own cache folder (fitted FAQ factors and calibrations), made by the first process of the run: with
#: pytest-xdist the controller makes it before the workers start, and they inherit it through the environment, so a
#: fit made by one worker (or by a subprocess a test starts) is read by the others instead of being made again
_RUN_CACHE: str | None = None


#: one BLAS thread per test process (unless the caller chose): the suite runs one worker per core, and OpenBLAS's
#: own threads in each worker spin on cores the other worker, a llama.cpp server or a subprocess needs. Measured on
#: 2 cores beside one busy process: the FAQ leaderboard study took 54 s with OpenBLAS's default threads and 31 s with
#: one. Tests that are about threads set their counts themselves (factor._THREADS, threads=, threadpool_limits)
_BLAS_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def pytest_configure(config):
    global _RUN_CACHE
    # set in the first process of the run, before pytest-xdist starts its workers: they and every subprocess a test
    # starts inherit it, and each reads it when numpy loads OpenBLAS
    for var in _BLAS_THREAD_VARS:
        os.environ.setdefault(var, "1")
    if "ASSAY_CACHE_DIR" not in os.environ:
        _RUN_CACHE = tempfile.mkdtemp(prefix="assay-test-cache-")
        os.environ["ASSAY_CACHE_DIR"] = _RUN_CACHE


def pytest_unconfigure(config):
    if _RUN_CACHE is not None:  # the process that made it removes it, after every worker has ended
        import shutil

        shutil.rmtree(_RUN_CACHE, ignore_errors=True)
        os.environ.pop("ASSAY_CACHE_DIR", None)


# -- a real language model (the `live` extra): one llama.cpp server per test process, stopped at the end ---------

def _live_or_skip() -> None:
    from live_server import live_available

    why = live_available()
    if why:
        if os.environ.get("CI"):  # in CI the live tests must run: a missing extra is a failure, not a skip
            pytest.fail(f"live tests need the live extra: {why}")
        pytest.skip(why)


@pytest.fixture(scope="session")
def live_model():
    """SmolLM2-135M-Instruct (Q4_1) served on a free 127.0.0.1 port: ``.base_url``, ``.alias``, ``.death()``."""
    _live_or_skip()
    from live_server import LiveServer, smollm2_path

    with LiveServer(smollm2_path(), alias="smollm2") as server:
        yield server


@pytest.fixture(scope="session")
def live_judge():
    """A second, different model for the judge: Gemma 3 270M (pretrained), used through /v1/completions."""
    _live_or_skip()
    from live_server import LiveServer, gemma3_path

    try:
        path = gemma3_path()
    except Exception as e:  # the package is part of the live extra
        if os.environ.get("CI"):
            pytest.fail(f"the Gemma 3 270M package is missing: {e}")
        pytest.skip(f"the Gemma 3 270M package is missing: {e}")
    with LiveServer(path, alias="gemma3") as server:
        yield server


# -- Ray: one 3-node cluster for the session's Ray tests (they share one xdist worker, group "ray") ------------------

#: every node of the test cluster: one CPU, loopback only, a small object store
RAY_NODE = dict(num_cpus=1, node_ip_address="127.0.0.1", object_store_memory=80 * 2**20)


class _RayCluster:
    """The session's one Ray cluster: head + 2 worker nodes, 1 CPU each, every server on 127.0.0.1
    (ray.cluster_utils.Cluster), in a private RAY_TMPDIR (so that ``ray.init()`` elsewhere on the machine never finds
    it and joins it by accident). Started by the first Ray test, stopped right after the last one of a run of Ray
    tests (``pytest_runtest_teardown`` below; the Ray tests share one xdist worker and run one after another): its
    idle daemons take CPU the other tests on this machine need, so it does not live on to the end of the session."""

    cluster = None
    tmp = None
    saved: dict = {}

    @classmethod
    def get(cls):
        if cls.cluster is not None:
            return cls.cluster
        ray = pytest.importorskip("ray")
        from ray.cluster_utils import Cluster

        cls.saved = {"RAY_TMPDIR": os.environ.get("RAY_TMPDIR")}
        cls.tmp = tempfile.mkdtemp(prefix="assay-ray-", dir="/tmp")  # short: Ray's socket paths live under it
        os.environ["RAY_TMPDIR"] = cls.tmp
        # Ray rewrites 127.0.0.1 in an address into this machine's network address, where a loopback cluster does
        # not listen; with this switch (what Ray does on a laptop) the driver dials 127.0.0.1 as given
        consts = ray._private.ray_constants
        cls.saved["switch"] = consts.ENABLE_RAY_CLUSTER
        consts.ENABLE_RAY_CLUSTER = False
        if ray.is_initialized():
            ray.shutdown()
        try:
            c = Cluster(initialize_head=True, head_node_args=dict(
                include_dashboard=False, **RAY_NODE,
                # a lost node is declared dead after about 1.5 s instead of 15 s
                _system_config={"health_check_period_ms": 500, "health_check_failure_threshold": 3}))
            cls.cluster = c
            for _ in range(2):
                c.add_node(**RAY_NODE)
            c.wait_for_nodes()
        except BaseException:
            cls.stop()
            raise
        return c

    @classmethod
    def stop(cls) -> None:
        import shutil

        try:
            import ray
        except ImportError:
            return
        ray.shutdown()
        if cls.cluster is not None:
            cls.cluster.shutdown()
            cls.cluster = None
        if "switch" in cls.saved:
            ray._private.ray_constants.ENABLE_RAY_CLUSTER = cls.saved.pop("switch")
        if "RAY_TMPDIR" in cls.saved:
            v = cls.saved.pop("RAY_TMPDIR")
            if v is None:
                os.environ.pop("RAY_TMPDIR", None)
            else:
                os.environ["RAY_TMPDIR"] = v
        if cls.tmp is not None:
            shutil.rmtree(cls.tmp, ignore_errors=True)
            cls.tmp = None


@pytest.fixture
def ray_cluster():
    """The session's Ray cluster (:class:`_RayCluster`), started when first asked for; the driver is not connected:
    a test joins through ``ray_cluster.address`` (as ``--address`` does)."""
    return _RayCluster.get()


@pytest.fixture
def ray_connected(ray_cluster):
    """The driver connected to the session's Ray cluster."""
    import ray

    if not ray.is_initialized():
        ray.init(address=ray_cluster.address, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    return ray_cluster


def pytest_runtest_teardown(item, nextitem):
    """Stop the Ray cluster after the last test of a run of tests that use it (it is started again if a later test
    asks for it)."""
    if _RayCluster.cluster is not None and (nextitem is None or "ray_cluster" not in nextitem.fixturenames):
        _RayCluster.stop()


def pytest_sessionfinish(session, exitstatus):
    _RayCluster.stop()
