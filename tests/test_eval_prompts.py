"""The campaign's prompts and its shared uniform sample (issue 25)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.errors import AssayInputError
from assay.eval.prompts import render, uniform_sample


def test_render_replaces_only_the_placeholders():
    t = 'Reply in JSON like {"answer": "A"}.\n{question}\nOptions: {choices}'
    out = render(t, "What is {x}?", "A) 1 B) 2")
    assert out == 'Reply in JSON like {"answer": "A"}.\nWhat is {x}?\nOptions: A) 1 B) 2'
    assert render("{question}", "q") == "q"
    assert render("{question} | {choices}", "a {choices} b", "C") == "a {choices} b | C"
    with pytest.raises(AssayInputError, match="choices"):
        render("{question} {choices}", "q")


def test_the_sample_depends_on_the_seed_only_and_is_uniform():
    ids = [f"q{i}" for i in range(30)]
    a = uniform_sample(ids, 10, seed=3)
    assert a == uniform_sample(ids, 10, seed=3) and len(set(a)) == 10 and set(a) <= set(ids)
    assert a != uniform_sample(ids, 10, seed=4)
    assert sorted(uniform_sample(ids, 99, seed=0)) == sorted(ids)
    # uniform: each id is drawn with probability 10/30 (Monte Carlo over 3,000 seeds, 4 binomial s.e.)
    hits = np.zeros(30)
    for s in range(3000):
        hits[[int(i[1:]) for i in uniform_sample(ids, 10, seed=s)]] += 1
    p, n = 10 / 30, 3000
    assert np.all(np.abs(hits / n - p) < 4 * np.sqrt(p * (1 - p) / n))


def test_bad_samples_are_refused():
    with pytest.raises(AssayInputError, match="not unique"):
        uniform_sample(["a", "a"], 1, seed=0)
    with pytest.raises(AssayInputError, match="empty"):
        uniform_sample([], 1, seed=0)
    with pytest.raises(AssayInputError, match="at least 1"):
        uniform_sample(["a"], 0, seed=0)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=5), min_size=1, max_size=40, unique=True),
       st.integers(1, 60), st.integers(0, 2**63 - 1))
def test_the_sample_is_a_subset_of_distinct_ids(ids, n, seed):
    out = uniform_sample(ids, n, seed)
    assert len(out) == min(n, len(ids)) and len(set(out)) == len(out) and set(out) <= set(ids)
