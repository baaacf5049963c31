"""Is it the same library? A fingerprint of every Result the shipped examples, ``assay demo`` and the registered
studies (at the sizes the test suite runs them) produce, for checking that a restructuring changed no number.

Each Result's JSON (``Result.to_dict``) is hashed after leaving out what changes from run to run: versions, timings,
run ids and paths. Run it before and after a change and compare:

    python bench/same_results.py > before.json
    ... change ...
    python bench/same_results.py --against before.json    # exit 1 and the differing entries if any changed
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import re
import runpy
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: keys whose values change from run to run (or machine to machine), dropped at any depth before hashing
VOLATILE = re.compile(r"(^|_)(version|versions|time|times|seconds|elapsed|duration|wall|run_id|path|paths|journal|"
                      r"out|created|started|finished|host|python|platform|cache)($|_)|_s$", re.I)

#: the studies at the sizes tests/test_ray_cluster.py runs each of them (small, every code path of the study)
STUDIES = {
    "siren-a": dict(trials=20, gt=30, n_boot=20, Ms=(100, 200), Ks=(2,), Rs=(1, 3)),
    "siren-b": dict(trials=10, gt=200, n_boot=50, gaps=(0.2,)),
    "siren-c": dict(trials=10, n_boot=50, H_A=(3, 20), unpaired=()),
    "scope-sim": dict(trials=1, cert_trials=1, budgets=(200,), cert_budget=200, region_budget=200,
                      parts=("topk", "certify")),
    "psdme-ridge": dict(trials=20, ns=(20, 100), K=200, M=100),
    "faq-leaderboard": dict(trials=2, budgets=(0.05,), n_models=120, splits=2, methods=("faq", "uniform")),
    "autoeval-quant": dict(trials=4, data_dir=str(ROOT.parent / "shared" / "data" / "autoeval")),
    "autoeval-example": dict(trials=4, n_max=2000, n_weights=1000, grid=1000),
}


def _strip(obj):
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if not VOLATILE.search(str(k))}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


def _digest(obj) -> str:
    text = json.dumps(_strip(obj), sort_keys=True, separators=(",", ":"), allow_nan=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class _Catch:
    """Every Result constructed while active, in order."""

    def __enter__(self):
        from assay.results import Result

        self.seen, self._cls, self._init = [], Result, Result.__init__
        catch = self

        def init(obj, *a, **kw):
            catch._init(obj, *a, **kw)
            catch.seen.append(obj)

        Result.__init__ = init
        return self

    def __exit__(self, *exc):
        self._cls.__init__ = self._init


def _hashes(results) -> list[str]:
    return [f"{r.method}:{_digest(r.to_dict())}" for r in results]


def collect(only: str | None = None) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    sys.path.insert(0, str(ROOT / "examples"))
    for ex in sorted((ROOT / "examples").glob("*.py")):
        if only and only not in ex.stem:
            continue
        with _Catch() as c, contextlib.redirect_stdout(io.StringIO()):
            runpy.run_path(str(ex), run_name="__main__")
        out[f"example {ex.name}"] = _hashes(c.seen)
    if not only or only in "demo":
        from typer.testing import CliRunner

        from assay.cli import app

        with tempfile.TemporaryDirectory() as d, _Catch() as c:
            res = CliRunner().invoke(app, ["demo", "--out", d])
            if res.exit_code != 0:
                raise SystemExit(f"assay demo failed:\n{res.output}")
        out["demo"] = _hashes(c.seen)
    from assay.studies import run_study

    for name, kw in STUDIES.items():
        if only and only not in name:
            continue
        with _Catch() as c:
            run_study(name, seed=1, workers=1, **kw)
        out[f"study {name}"] = _hashes(c.seen)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--against", type=Path, help="a JSON file written by an earlier run: exit 1 if anything differs")
    ap.add_argument("--only", help="only the workloads whose name contains this")
    a = ap.parse_args()
    now = collect(a.only)
    if a.against is None:
        print(json.dumps(now, indent=1))
        return 0
    before = json.loads(a.against.read_text())
    bad = 0
    for key, hashes in now.items():
        was = before.get(key)
        same = was == hashes
        bad += not same
        print(f"{'same' if same else 'DIFFERENT'}  {key}: {len(hashes)} results"
              + ("" if same else f"\n  before {was}\n  now    {hashes}"))
    print(f"{len(now) - bad} of {len(now)} workloads identical")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
