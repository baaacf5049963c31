"""assay.checks, the one vocabulary of input checks: every input either passes with a value in range or is refused
with an AssayInputError naming the argument (hypothesis searches for a third outcome)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from assay import checks
from assay.errors import AssayInputError

ANY = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), st.floats(allow_nan=True, allow_infinity=True),
                st.text(max_size=5), st.just(np.float32(0.5)), st.just(np.int64(7)))


@settings(max_examples=400, deadline=None)
@given(value=ANY, N=st.integers(0, 5000))
def test_a_budget_resolves_to_two_to_n_questions_or_is_refused_by_name(value, N):
    try:
        n, note = checks.fraction_or_count(value, N, "[x].budget")
    except AssayInputError as e:
        assert "[x].budget" in str(e)
        return
    assert 2 <= n <= N and (note is None) == (n < N)


@settings(max_examples=300, deadline=None)
@given(value=ANY)
def test_a_level_is_strictly_between_0_and_1_or_refused_by_name(value):
    try:
        v = checks.level(value, "alpha")
    except AssayInputError as e:
        assert str(e).startswith("alpha must be a number strictly between 0 and 1")
        return
    assert isinstance(v, float) and 0 < v < 1 and math.isfinite(v)


def test_an_empty_or_one_question_bank_is_named():
    for N in (0, 1):
        with pytest.raises(AssayInputError, match=f"the bank holds {N} question"):
            checks.fraction_or_count(0.5, N)
    assert checks.fraction_or_count(1.0, 2) == (2, "budget covers the whole bank (2 questions): every question is "
                                                   "asked once")
