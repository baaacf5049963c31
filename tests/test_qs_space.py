"""assay.quickscope.space: conditions, forbidden combinations, uniform sampling over valid configurations."""

import numpy as np
import pytest
from scipy import stats

from assay.errors import AssayInputError
from assay.quickscope import Categorical, Float, Integer, SearchSpace

YAML = """
parameters:
  type: {type: categorical, choices: [arith, lin, logic]}
  depth: {type: integer, low: 2, high: 4}
  children: {type: integer, low: 1, high: 3, when: {type: [arith, logic]}}
forbidden:
  - {type: lin, depth: [4]}
"""


def test_enumeration_conditions_forbidden():
    sp = SearchSpace.from_yaml(YAML)
    # arith: 3 depths x 3 children, logic: same, lin: 2 depths (depth 4 forbidden) -> 9 + 9 + 2
    assert sp.size() == 20
    cfgs = sp.enumerate()
    assert all("children" not in c for c in cfgs if c["type"] == "lin")
    assert not any(c["type"] == "lin" and c["depth"] == 4 for c in cfgs)
    for c in cfgs:
        sp.validate(c)


def test_uniform_over_valid_configurations():
    sp = SearchSpace.from_yaml(YAML)
    draws = sp.sample(40_000, np.random.default_rng(0))
    keys = [sp.key(c) for c in draws]
    counts = np.array([keys.count(k) for k in {sp.key(c) for c in sp.enumerate()}])
    assert len(counts) == 20
    # chi-square against uniform over the 20 valid templates (per-parameter sampling would give lin 1/3 mass)
    p = stats.chisquare(counts).pvalue
    assert p > 1e-3


def test_sample_unseen_exhausts_and_stops():
    sp = SearchSpace.from_yaml(YAML)
    rng = np.random.default_rng(1)
    seen: set[str] = set()
    while True:
        got = sp.sample_unseen(7, rng, seen)
        if not got:
            break
        for c in got:
            k = sp.key(c)
            assert k not in seen
            seen.add(k)
    assert len(seen) == 20


def test_continuous_space_and_encoding():
    sp = SearchSpace([Categorical("kind", ["a", "b"]), Float("x", 0.1, 10.0, log=True),
                      Integer("n", 1, 5, when={"kind": ["b"]})], forbidden=[lambda c: c["kind"] == "a" and c["x"] > 5])
    assert sp.size() == float("inf")
    cfgs = sp.sample(2000, np.random.default_rng(2))
    assert not any(c["kind"] == "a" and c["x"] > 5 for c in cfgs)
    X = sp.encode(cfgs)
    assert X.shape == (2000, len(sp.feature_names)) and ((X >= 0) & (X <= 1)).all()
    act = X[:, sp.feature_names.index("n:active")]
    assert np.array_equal(act, np.array([c["kind"] == "b" for c in cfgs], dtype=float))
    assert SearchSpace.key({"b": 1.0000001, "a": "x"}) == SearchSpace.key({"a": "x", "b": 1.0})


def test_round_trip():
    sp = SearchSpace.from_yaml(YAML)
    sp2 = SearchSpace.from_dict(sp.to_dict())
    assert sp2.size() == sp.size() and sp2.to_dict() == sp.to_dict()


@pytest.mark.parametrize("bad", [
    {"parameters": {}},
    {"parameters": {"d": {"type": "integer", "low": 5, "high": 2}}},
    {"parameters": {"c": {"type": "categorical", "choices": []}}},
    {"parameters": {"c": {"type": "categorical", "choices": ["a"], "when": {"z": ["q"]}}}},
    {"parameters": {"a": {"type": "categorical", "choices": ["x"]}, "c": {"type": "integer", "low": 1, "high": 2, "when": {"a": ["nope"]}}}},
    {"parameters": {"a": {"type": "categorical", "choices": ["x"]}}, "forbidden": [{"b": 1}]},
    {"parameters": {"a": {"type": "categorical", "choices": ["x"]}}, "forbidden": [{"a": "x"}]},
    {"parameters": {"a": {"type": "weird"}}},
    {"parameters": {"a": {"type": "integer", "low": 1}}},
])
def test_bad_spaces(bad):
    with pytest.raises(AssayInputError):
        SearchSpace.from_dict(bad)


def test_bad_yaml_and_configs():
    with pytest.raises(AssayInputError, match="parse"):
        SearchSpace.from_yaml("parameters: [unclosed")
    sp = SearchSpace.from_yaml(YAML)
    for cfg in ({"type": "lin", "depth": 4}, {"type": "arith", "depth": 9, "children": 1}, {"type": "lin", "depth": 2, "children": 1},
                {"type": "arith", "depth": 2}, {"type": "arith", "depth": 2, "children": 1, "zzz": 0}):
        with pytest.raises(AssayInputError):
            sp.validate(cfg)
    with pytest.raises(AssayInputError, match="contradictory"):
        SearchSpace([Float("x", 0, 1)], forbidden=[lambda c: True]).sample(1, np.random.default_rng(0))


def test_a_parameter_spanning_a_trillion_values_is_never_listed():
    """A generator's seed or size routinely spans 10^9-10^12 values (issue 26): the space is built, sampled and
    searched without listing them; memory is bounded by what was asked (tracemalloc peak), not by the range."""
    import tracemalloc

    from assay.quickscope import Categorical, Integer, Search, SearchSpace

    tracemalloc.start()
    try:
        sp = SearchSpace([Integer("seed", 0, 10**12), Integer("size", 1, 10**9, log=True),
                          Categorical("c", ["a", "b"])])
        assert sp.size() == float("inf")
        cfgs = sp.sample(50, np.random.default_rng(0))
        assert all(0 <= c["seed"] <= 10**12 and 1 <= c["size"] <= 10**9 for c in cfgs)
        assert len({c["seed"] for c in cfgs}) == 50  # uniform over 10^12 values: no repeats in 50 draws
        s = Search(sp, seed=0, n0=10, surrogate=None)
        for _ in range(3):
            tickets = s.ask(10)
            s.tell([(t.id, float(t.id % 2)) for t in tickets])
        assert s.tickets_told == 30
        # the forest's candidate sets and the repulsion from certified configurations, on the same space
        r = Search(sp, seed=0, n0=10, certify=0.5, repulsion=0.5, n_trees=10, candidates=100)
        for _ in range(4):
            tickets = r.ask(10)
            r.tell([(t.id, 1.0 if t.config["c"] == "a" else 0.0) for t in tickets])
        assert r.tickets_told == 40
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 50e6, peak  # a listed range would need 10^12 Python ints (tens of terabytes)
