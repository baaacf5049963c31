"""One seed rule (assay.seeds): every public seeded function and Search resolve ``seed`` once, before any work.

For each: ``seed=None`` records an int, and rerunning with that int gives the same numbers; a numpy Generator is
accepted (recorded None, ``seed_source = "generator"``); a bad seed is refused before any work with AssayInputError.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from assay.errors import AssayInputError
from assay.seeds import Seed, resolve_seed, seeded, spawn


def test_resolve_seed_forms():
    s = resolve_seed(7)
    assert isinstance(s, Seed) and s.recorded == 7 and s.source == "int"
    assert np.array_equal(s.rng().random(4), np.random.default_rng(7).random(4))
    rec, ss = resolve_seed(None)
    assert isinstance(rec, int) and 0 <= rec < 2**63  # fits an int64 column
    assert np.array_equal(np.random.default_rng(ss).random(3), np.random.default_rng(rec).random(3))
    g = np.random.default_rng(1)
    s = resolve_seed(g)
    assert s.recorded is None and s.source == "generator"
    # the call's numbers follow the generator's state
    a = resolve_seed(np.random.default_rng(1)).rng().random()
    assert a == s.rng().random()
    assert resolve_seed(s) is s
    child = np.random.SeedSequence(5).spawn(1)[0]
    assert resolve_seed(child).recorded is None  # a child is not reproducible from its entropy alone
    assert len(spawn(3, 4)) == 4
    for bad in (-1, 1.5, "3", True):
        with pytest.raises(AssayInputError, match="seed must be"):
            resolve_seed(bad)


def test_seeded_decorator_resolves_at_the_boundary():
    seen = []

    @seeded
    def f(x, *, seed=None):
        seen.append(seed)
        return seed.recorded

    assert f(1, seed=4) == 4
    assert isinstance(f(1), int)
    assert f(1, seed=np.random.default_rng(0)) is None
    assert all(isinstance(s, Seed) for s in seen)
    with pytest.raises(AssayInputError):
        f(1, seed=-3)
    assert len(seen) == 3  # refused before the body ran


# -- every public seeded entry point ---------------------------------------------------------------------------------

def _siren(seed):
    from assay import siren
    from assay.datasets import load_siren_law

    return siren.evaluate(load_siren_law(), seed=seed, n_boot=200, reps=3)


def _autoeval(seed):
    from assay import autoeval
    from assay.datasets import synthetic_autoeval

    return autoeval.certify(synthetic_autoeval(0), risk_target=0.1, delta=0.1, seed=seed, grid=500)


def _psdme(seed):
    from assay import psdme
    from assay.datasets import load_llmperf

    return psdme.bands(load_llmperf(), select="top:3", delta=0.1, columns={"kpi": "ttft_s"}, failures="worst", seed=seed)


def _faq_world():
    rng = np.random.default_rng(0)
    V = rng.normal(size=(80, 2))
    U = rng.normal(size=(70, 2))
    Z = (rng.random((70, 80)) < 1 / (1 + np.exp(-U @ V.T))).astype(float)
    items = [f"q{j}" for j in range(80)]
    return (pd.DataFrame(Z[:60], index=[f"h{i}" for i in range(60)], columns=items),
            pd.DataFrame(Z[60:], index=[f"n{i}" for i in range(10)], columns=items))


def _faq(seed):
    from assay import faq

    hist, new = _faq_world()
    return faq.evaluate(hist, new, budget=0.2, seed=seed, factors=faq.FactorModel(k=2, weight_decay=1.0, seed=0))


def _faq_protocol(seed):
    from assay import faq

    hist, new = _faq_world()
    return faq.protocol(hist, new, budgets=[0.2], seeds=1, seed=seed, tune=False, methods=["faq", "uniform"],
                        factors=faq.FactorModel(k=2, weight_decay=1.0, seed=0).fit(hist))


def _simulate(seed):
    from assay.benchmarks.worlds import get_world
    from assay.quickscope.simulate import simulate

    return simulate(get_world("plateau"), budget=200, seed=seed, certify=0.9)


def _scope_run(seed):
    from assay.benchmarks import Instance
    from assay.quickscope import Integer, SearchSpace, run

    class Coin:
        name = "coin"

        def space(self):
            return SearchSpace([Integer("hard", 0, 4)])

        def generate(self, config, rng):
            return Instance(f"say {int(rng.integers(0, 2))}", str(int(rng.random() < config["hard"] / 5)), {})

        def score(self, text, inst):
            return 1.0 if text == inst.reference else 0.0

    gen = Coin()
    return run(gen.space(), gen, lambda p: p[-1], budget=40, batch=10, seed=seed, n0=3, surrogate=None,
               journal=None)


def _compare(seed):
    from assay import compare

    rng = np.random.default_rng(4)
    t = pd.DataFrame({"model": np.repeat(["a", "b", "c"], 60), "item": np.tile(np.arange(60), 3),
                      "score": (rng.random(180) < 0.6).astype(float)})
    return compare.evaluate(t, seed=seed, n_boot=500)


def _numbers(res) -> pd.DataFrame:
    t = res.table
    return t.select_dtypes(include=[np.number])


ENTRIES = {"siren.evaluate": _siren, "autoeval.certify": _autoeval, "psdme.bands": _psdme, "faq.evaluate": _faq,
           "faq.protocol": _faq_protocol, "quickscope.simulate": _simulate, "quickscope.run": _scope_run,
           "compare.evaluate": _compare}


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_entry_points_follow_the_seed_rule(name, tmp_path, monkeypatch):
    monkeypatch.setenv("ASSAY_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("ASSAY_JOURNAL", str(tmp_path / "journal.sqlite"))
    fn = ENTRIES[name]
    res = fn(None)
    assert isinstance(res.seed, int), f"{name}: seed=None must record the int it drew, got {res.seed!r}"
    again = fn(res.seed)
    assert again.seed == res.seed
    pd.testing.assert_frame_equal(_numbers(res), _numbers(again))
    g = fn(np.random.default_rng(123))
    assert len(g.table) == len(res.table)
    if g.seed is None:
        assert g.info.get("seed_source") == "generator"
    with pytest.raises(AssayInputError, match=re.escape("seed")):
        fn(-5)


def test_search_records_its_seed():
    from assay.benchmarks.worlds import get_world
    from assay.quickscope import Search

    space = get_world("plateau").space()
    s = Search(space)
    assert isinstance(s.seed, int)
    a = Search(space, seed=s.seed).ask(5)
    b = Search(space, seed=s.seed).ask(5)
    assert [t.config for t in a] == [t.config for t in b]
    assert Search(space, seed=np.random.default_rng(0)).seed is None
    with pytest.raises(AssayInputError):
        Search(space, seed="x")


def test_delta_is_the_common_name_of_the_error_level():
    """DESIGN: the error level is ``delta`` in every function; SIREN and FAQ, whose papers say alpha, take both."""
    from assay import faq, siren
    from assay.datasets import load_siren_law

    a = siren.evaluate(load_siren_law(), alpha=0.1, seed=1, n_boot=200, reps=3)
    d = siren.evaluate(load_siren_law(), delta=0.1, seed=1, n_boot=200, reps=3)
    pd.testing.assert_frame_equal(a.table, d.table)
    assert d.level["alpha"] == 0.1
    with pytest.raises(AssayInputError, match="disagree"):
        siren.evaluate(load_siren_law(), alpha=0.2, delta=0.1, seed=1)
    hist, new = _faq_world()
    fm = faq.FactorModel(k=2, weight_decay=1.0, seed=0).fit(hist)
    a = faq.evaluate(hist, new, budget=0.2, seed=2, factors=fm, alpha=0.1)
    d = faq.evaluate(hist, new, budget=0.2, seed=2, factors=fm, delta=0.1)
    pd.testing.assert_frame_equal(a.table, d.table)
    p = faq.protocol(hist, new, budgets=[0.2], seeds=1, seed=3, tune=False, methods=["uniform"], factors=fm, delta=0.1)
    assert p.level["alpha"] == 0.1


def test_simulate_refuses_what_is_not_a_world():
    from assay.quickscope.simulate import simulate

    with pytest.raises(AssayInputError, match="world must have truth"):
        simulate("dyval", budget=10)
