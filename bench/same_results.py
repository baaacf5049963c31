"""Is it the same library? A fingerprint of every Result the shipped examples, ``assay demo`` and the registered
studies (at the sizes the test suite runs them) produce, for checking that a restructuring changed no number.

Each Result's JSON (``Result.to_dict``) is hashed after leaving out what changes from run to run: versions, timings,
run ids and paths. Run it before and after a change and compare:

    python bench/same_results.py > before.json
    ... change ...
    python bench/same_results.py --against before.json    # exit 1 and the differing entries if any changed

With ``--dump before.full.json`` beside ``before.json``, a workload whose hash differs is also compared number by number
(``same to rounding`` when every number agrees within 1e-12 relative, with the largest difference and where).
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


#: every hashed object, stripped, by workload (written with --dump, for a number-by-number comparison)
FULL: dict[str, list] = {}
_current: list = []


def _hashes(results) -> list[str]:
    _current.extend(_strip(r.to_dict()) for r in results)
    return [f"{r.method}:{_digest(r.to_dict())}" for r in results]


def _objects(extra) -> list[str]:
    _current.extend(_strip(x) for x in extra)
    return [f"object:{_digest(x)}" for x in extra]


def _keep(key: str) -> None:
    FULL[key] = [json.loads(json.dumps(x, default=str, allow_nan=True)) for x in _current]
    _current.clear()


def _numbers(obj, path=""):
    """(path, number) of every number in a JSON-like object."""
    if isinstance(obj, dict):
        for k in sorted(obj):
            yield from _numbers(obj[k], f"{path}/{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _numbers(v, f"{path}[{i}]")
    elif isinstance(obj, (int, float)) and not isinstance(obj, bool):
        yield path, float(obj)
    else:
        yield path, obj


def closest(before: list, now: list) -> str:
    """How two dumps of one workload differ: 'the same but for rounding' (every number within 1e-12 relative, every
    other value equal), with the largest relative difference and where, or the first value that differs."""
    import math

    a, b = list(_numbers(before)), list(_numbers(now))
    if [p for p, _ in a] != [p for p, _ in b]:
        return "DIFFERENT: other fields"
    worst, where = 0.0, ""
    for (p, x), (_, y) in zip(a, b):
        if isinstance(x, float) and isinstance(y, float):
            if math.isnan(x) and math.isnan(y) or x == y:
                continue
            rel = abs(x - y) / max(abs(x), abs(y), 1e-300)
            if rel > worst:
                worst, where = rel, p
        elif x != y:
            return f"DIFFERENT at {p}: {x!r} -> {y!r}"
    if worst > 1e-12:
        return f"DIFFERENT at {where}: relative difference {worst:.2e}"
    return f"same to rounding: largest relative difference {worst:.1e} at {where}"


def _sampled(name: str):
    """The estimates that draw questions (FAQ asked through a callable, the adaptive comparison replayed, the audit):
    every Result they build, and the audit's sheet and plan, on seeded synthetic data (no file read)."""
    import numpy as np
    import pandas as pd
    from scipy.special import expit

    rng = np.random.default_rng(2024)
    N, k = 300, 3
    V, b = rng.normal(0, 1, (N, k)), rng.normal(-0.2, 1.0, N)
    U = rng.normal(0, 1, (64, k))
    shift = np.r_[np.zeros(58), -1.6, -0.6, 0.4, 1.4, 0.0, 0.0][:, None]  # the replayed models far apart
    S = (rng.random((64, N)) < expit(U @ V.T + b + shift)).astype(float)
    cols = [f"q{j}" for j in range(N)]
    hist = pd.DataFrame(S[:58], index=[f"h{i}/m" for i in range(58)], columns=cols)
    new = pd.DataFrame(S[58:], index=[f"m{i}" for i in range(6)], columns=cols)
    if name == "faq-callable":
        import assay.faq as faq

        row = new.iloc[0]
        res = faq.evaluate(hist, lambda item: float(row[item]), budget=40, seed=3, cache=False)
        return [res], []
    if name.startswith("replay"):
        from assay.compare.live import replay

        _, guarantee, with_history = name.split("-", 2)
        for goal, seed in (("all", 0), ("best", 1)):
            rp = replay(new.iloc[:4], goal=goal, guarantee=guarantee, seed=seed, margin=0.05,
                        history=hist if with_history == "history" else None)
        return [], [rp.asked.to_dict(), rp.asked_uniform.to_dict()]
    if name == "audit":
        from assay import audit

        resp = [("The answer is 4." if s else "I think 5, or maybe 4") for s in S[0]]
        run = pd.DataFrame({"id": cols, "prompt": ["What is 2+2?"] * N, "reference": ["4"] * N, "response": resp,
                            "score": S[0], "finish_reason": np.where(S[1] > 0, "stop", "length")})
        sheet = audit.sample(run, 60, seed=7, readers=False)
        plan = sheet.attrs["plan"]
        truth = np.where(rng.random(N) < 0.1, 1 - S[0], S[0])
        lab = sheet.assign(human=[str(int(truth[cols.index(i)])) for i in sheet["id"]])
        lab.loc[45:, "human"] = ""
        res = audit.evaluate(run, lab, plan=plan)
        return [res], [sheet.drop(columns="human").to_dict("list"), plan]
    raise KeyError(name)


SAMPLED = ("faq-callable", "replay-finite-none", "replay-finite-history", "replay-asymptotic-none",
           "replay-asymptotic-history", "audit")


def collect(only: str | None = None) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for name in SAMPLED:
        if only and only not in f"sampled {name}":
            continue
        with _Catch() as c:
            _, extra = _sampled(name)
        out[f"sampled {name}"] = _hashes(c.seen) + _objects(extra)
        _keep(f"sampled {name}")
    sys.path.insert(0, str(ROOT / "examples"))
    for ex in sorted((ROOT / "examples").glob("*.py")):
        if only and only not in ex.stem:
            continue
        with _Catch() as c, contextlib.redirect_stdout(io.StringIO()):
            runpy.run_path(str(ex), run_name="__main__")
        out[f"example {ex.name}"] = _hashes(c.seen)
        _keep(f"example {ex.name}")
    if not only or only in "demo":
        from typer.testing import CliRunner

        from assay.cli import app

        with tempfile.TemporaryDirectory() as d, _Catch() as c:
            res = CliRunner().invoke(app, ["demo", "--out", d])
            if res.exit_code != 0:
                raise SystemExit(f"assay demo failed:\n{res.output}")
        out["demo"] = _hashes(c.seen)
        _keep("demo")
    from assay.studies import run_study

    for name, kw in STUDIES.items():
        if only and only not in name:
            continue
        with _Catch() as c:
            run_study(name, seed=1, workers=1, **kw)
        out[f"study {name}"] = _hashes(c.seen)
        _keep(f"study {name}")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--against", type=Path, help="a JSON file written by an earlier run: exit 1 if anything differs")
    ap.add_argument("--only", help="only the workloads whose name contains this")
    ap.add_argument("--dump", type=Path, help="also write every hashed object (stripped) here, for --against to "
                                              "compare number by number where a hash differs")
    a = ap.parse_args()
    now = collect(a.only)
    if a.dump is not None:
        a.dump.write_text(json.dumps(FULL))
    if a.against is None:
        print(json.dumps(now, indent=1))
        return 0
    before = json.loads(a.against.read_text())
    dumped = a.against.with_suffix(".full.json")
    full_before = json.loads(dumped.read_text()) if dumped.exists() else {}
    bad = 0
    for key, hashes in now.items():
        was = before.get(key)
        same = was == hashes
        bad += not same
        why = "" if same or key not in full_before else "\n  " + closest(full_before[key], FULL.get(key, []))
        print(f"{'same' if same else 'DIFFERENT'}  {key}: {len(hashes)} results"
              + ("" if same else f"\n  before {was}\n  now    {hashes}") + why)
    print(f"{len(now) - bad} of {len(now)} workloads identical")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
