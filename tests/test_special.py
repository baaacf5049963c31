"""assay.stats.special.logsumexp gives SciPy's logsumexp bit for bit on real arrays (ties, infinities, NaN, an empty
axis), so swapping it in changes no number the library prints; and it is right to a few ulps against an exact sum
whatever SciPy is installed (pyproject allows SciPy releases that compute the plain form, which differs from this one
in the last digit: there the bit-for-bit comparison is skipped, with the reason)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy.special import logsumexp as scipy_logsumexp

from assay.stats.special import logsumexp

def _scipy_takes_the_maximum_out() -> bool:
    """Whether the installed SciPy uses the form this module reproduces (the largest entry out of the sum, log1p):
    on this row the plain max + log(sum(exp(a - max))) differs from it in the last bit."""
    rng = np.random.default_rng(0)
    a = rng.normal(size=(1000, 5)) * 3
    return np.array_equal(scipy_logsumexp(a, axis=1), logsumexp(a, axis=1))


SAME_FORM = pytest.mark.skipif(not _scipy_takes_the_maximum_out(),
                               reason="the installed SciPy computes logsumexp in the plain form (an older release)")

VALUES = st.one_of(st.floats(-800, 800, allow_nan=False), st.sampled_from([0.0, 1.0, -np.inf, np.inf, np.nan, 709.0]))


def same(x, y):
    x, y = np.asarray(x), np.asarray(y)
    assert x.shape == y.shape and x.dtype == y.dtype
    assert np.array_equal(x, y, equal_nan=True), (x, y)


@SAME_FORM
@settings(max_examples=300, deadline=None)
@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5), elements=VALUES),
       st.data())
def test_the_same_bits_as_scipy(a, data):
    axis = data.draw(st.one_of(st.none(), st.integers(-a.ndim, a.ndim - 1)))
    keepdims = data.draw(st.booleans())
    same(logsumexp(a, axis=axis, keepdims=keepdims), scipy_logsumexp(a, axis=axis, keepdims=keepdims))


@SAME_FORM
@pytest.mark.parametrize("a", [[0.0], [3.0, 3.0, 3.0], [-np.inf, -np.inf], [np.inf, 1.0], [np.nan, 1.0],
                               [1e308, 1e308], [-1e-300, 2.5, 2.5, -7.0]])
def test_edge_cases_as_scipy(a):
    same(logsumexp(a), scipy_logsumexp(a))
    same(logsumexp(np.array([a, a]), axis=1), scipy_logsumexp(np.array([a, a]), axis=1))


@settings(max_examples=300, deadline=None)
@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=1, min_side=1, max_side=30),
                  elements=st.floats(-700, 700, allow_nan=False)))
def test_right_to_a_few_ulps_against_an_exact_sum(a):
    """Whatever SciPy is installed: the value against log of an exactly rounded sum of exp(a - max)."""
    top = float(a.max())
    exact = top + math.log(math.fsum(math.exp(x - top) for x in a))
    assert abs(float(logsumexp(a)) - exact) <= 4 * np.finfo(float).eps * max(1.0, abs(exact))


@SAME_FORM
def test_empty_along_the_axis_is_minus_infinity():
    same(logsumexp([]), scipy_logsumexp([]))
    same(logsumexp(np.zeros((3, 0)), axis=1), scipy_logsumexp(np.zeros((3, 0)), axis=1))


@SAME_FORM
def test_a_scalar_and_a_list_of_ints():
    same(logsumexp(2), scipy_logsumexp(2))
    same(logsumexp([1, 2, 3]), scipy_logsumexp([1, 2, 3]))
