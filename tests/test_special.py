"""assay.stats.special.logsumexp gives SciPy's logsumexp bit for bit on real arrays (ties, infinities, NaN, an empty
axis), so swapping it in changes no number the library prints."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy.special import logsumexp as scipy_logsumexp

from assay.stats.special import logsumexp

VALUES = st.one_of(st.floats(-800, 800, allow_nan=False), st.sampled_from([0.0, 1.0, -np.inf, np.inf, np.nan, 709.0]))


def same(x, y):
    x, y = np.asarray(x), np.asarray(y)
    assert x.shape == y.shape and x.dtype == y.dtype
    assert np.array_equal(x, y, equal_nan=True), (x, y)


@settings(max_examples=300, deadline=None)
@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5), elements=VALUES),
       st.data())
def test_the_same_bits_as_scipy(a, data):
    axis = data.draw(st.one_of(st.none(), st.integers(-a.ndim, a.ndim - 1)))
    keepdims = data.draw(st.booleans())
    same(logsumexp(a, axis=axis, keepdims=keepdims), scipy_logsumexp(a, axis=axis, keepdims=keepdims))


@pytest.mark.parametrize("a", [[0.0], [3.0, 3.0, 3.0], [-np.inf, -np.inf], [np.inf, 1.0], [np.nan, 1.0],
                               [1e308, 1e308], [-1e-300, 2.5, 2.5, -7.0]])
def test_edge_cases_as_scipy(a):
    same(logsumexp(a), scipy_logsumexp(a))
    same(logsumexp(np.array([a, a]), axis=1), scipy_logsumexp(np.array([a, a]), axis=1))


def test_empty_along_the_axis_is_minus_infinity():
    same(logsumexp([]), scipy_logsumexp([]))
    same(logsumexp(np.zeros((3, 0)), axis=1), scipy_logsumexp(np.zeros((3, 0)), axis=1))


def test_a_scalar_and_a_list_of_ints():
    same(logsumexp(2), scipy_logsumexp(2))
    same(logsumexp([1, 2, 3]), scipy_logsumexp([1, 2, 3]))
