"""The package as users get it: ``python -m build`` makes a wheel and an sdist; the wheel, installed (not editable)
into a fresh virtual environment, runs ``assay demo`` on the data shipped inside it.

The fresh environment gets assay from the wheel only. Its third-party dependencies (numpy, scipy, ...) are the
ones this test session runs on, made visible through a path file rather than downloaded again, so the test needs no
network beyond what ``python -m build`` needs for its isolated build environment; ``import assay`` is checked to
come from the wheel, not from the source tree.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# one worker runs this module: its module-scoped fixtures are computed once, not on each xdist worker
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("package")]


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    r = subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)], capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return out


def test_wheel_and_sdist_carry_what_users_need(dist):
    from assay import __version__

    wheels = list(dist.glob("assay-*.whl"))
    sdists = list(dist.glob("assay-*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1
    assert wheels[0].name.startswith(f"assay-{__version__}-")
    names = set(zipfile.ZipFile(wheels[0]).namelist())
    for need in ("assay/py.typed", "assay/datasets/siren_law_dspy.parquet", "assay/datasets/llmperf_ttft.parquet",
                 "assay/datasets/faq_mmlu_pro_math_factors.npz", "assay/datasets/LICENSE-DATA",
                 "assay/cli/__init__.py", "assay/data/logs.py", "assay/benchmarks/worlds.py"):
        assert need in names, f"{need} missing from the wheel"
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    meta = zipfile.ZipFile(wheels[0]).read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert f"Version: {__version__}" in meta and "License-Expression: MIT" in meta
    entry = zipfile.ZipFile(wheels[0]).read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert "assay = assay.cli:main" in entry
    with tarfile.open(sdists[0]) as tf:
        members = {m.split("/", 1)[1] for m in tf.getnames() if "/" in m}
    for need in ("LICENSE", "README.md", "CHANGELOG.md", "pyproject.toml", "src/assay/_version.py"):
        assert need in members, f"{need} missing from the sdist"


def test_wheel_installed_in_a_fresh_venv_runs_the_demo(dist, tmp_path):
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True, clear=True).create(env_dir)
    py = env_dir / "bin" / "python"
    wheel = next(dist.glob("assay-*.whl"))
    r = subprocess.run([str(py), "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", str(wheel)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    # the dependencies this session already has (no second download); assay itself only from the wheel
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    Path(site, "_assay_test_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(CI="true", ASSAY_CACHE_DIR=str(tmp_path / "cache"), MPLBACKEND="Agg")
    where = subprocess.run([str(py), "-c", "import assay, json; print(json.dumps([assay.__file__, assay.__version__]))"],
                           capture_output=True, text=True, env=env, cwd=tmp_path, check=True).stdout
    path, version = json.loads(where)
    assert Path(path).resolve().is_relative_to(env_dir.resolve()), f"assay came from {path}, not from the wheel"
    r = subprocess.run([str(env_dir / "bin" / "assay"), "--version"], capture_output=True, text=True, env=env,
                       cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.strip() == f"assay {version}"
    out = tmp_path / "demo-out"
    r = subprocess.run([str(env_dir / "bin" / "assay"), "demo", "--out", str(out)], capture_output=True, text=True,
                       env=env, cwd=tmp_path, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    results = json.loads((out / "results.json").read_text())
    assert set(results) == {"siren", "autoeval", "psdme", "faq", "quickscope", "compare"}
    assert (out / "report.html").stat().st_size > 10_000
