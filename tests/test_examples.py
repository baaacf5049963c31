"""Every script in examples/ runs as a user would run it and prints what it promises."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

# slow (make check leaves it out): a subprocess per example
pytestmark = pytest.mark.slow

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.py"))
EXPECT = {"siren_law.py": "verdict_simultaneous", "autoeval_selection.py": "cheapest certified: q10",
          "psdme_latency.py": "groq_70b", "faq_new_model.py": "covered: 3 of 3",
          "quickscope_simulated.py": "false certificates: 0"}


def test_one_example_per_method():
    assert {p.name for p in EXAMPLES} == set(EXPECT)


@pytest.mark.parametrize("script", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_runs(script, tmp_path):
    env = {**os.environ, "CI": "true", "MPLBACKEND": "Agg", "ASSAY_CACHE_DIR": os.environ.get("ASSAY_CACHE_DIR") or str(tmp_path)}
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, env=env,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert EXPECT[script.name] in r.stdout, r.stdout
    assert "Traceback" not in r.stderr
