"""`assay eval --backend ray`: the per-model sections on a local Ray cluster give the serial run's numbers for the
same seed (issue 25). Two runs on two fresh journals against the same deterministic fake server: every statistic is
identical; only the measured latencies, which are measurements, may differ."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# every Ray test on one xdist worker (make test: --dist loadgroup): two Ray instances on 2 cores slow both
# slow (make check leaves it out): Ray
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("ray")]

ray = pytest.importorskip("ray")

sys.path.insert(0, str(Path(__file__).parent))
from fake_openai_server import FakeOpenAIServer  # noqa: E402
from test_eval_campaign import _campaign, _numbers  # noqa: E402

from assay.eval import campaign as camp  # noqa: E402


@pytest.fixture(autouse=True)
def local_ray(ray_connected):
    """The session's Ray cluster (conftest.py: 3 nodes of one CPU), joined."""
    return ray_connected


def test_the_campaign_on_ray_gives_the_serial_numbers(tmp_path):
    with FakeOpenAIServer(retry_after=0) as srv:
        # the per-model units (FAQ, the shared sample) are what Ray runs; the judge and SIREN run in the driver on
        # either backend, so they are left out here
        c = _campaign(tmp_path, srv.base_url, judge=None, siren=None)
        events = []
        serial = camp.run(c, journal=tmp_path / "serial.sqlite")
        paid = srv.total
        on_ray = camp.run(c, journal=tmp_path / "ray.sqlite", backend="ray", workers=2, progress=events.append)
        assert srv.total == 2 * paid  # the same requests, each paid once per journal
    assert set(on_ray.sections["faq"].results) == {"short", "long"}
    assert _numbers(on_ray) == _numbers(serial)
    assert on_ray.run_id == serial.run_id
    assert {(e.section, e.subject) for e in events if e.status == "done"} >= {("faq", "short"), ("sample", "long")}
