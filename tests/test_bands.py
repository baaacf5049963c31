"""Tests for assay.stats.bands: DKW against the exact Kolmogorov law, exact Berk-Jones critical values
against independent computations (Steck's determinant, a naive binomial Noe recursion, Monte Carlo),
simultaneous coverage by seeded Monte Carlo (checked on both sides of every jump), and caching."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from scipy.special import factorial

from assay.stats import bands as B

ALPHAS = [0.2, 0.1, 0.05, 0.01, 1e-3]


# ----------------------------------------------------------------------------------------------
# independent slow references
# ----------------------------------------------------------------------------------------------


def steck_probability(lower, upper):
    """P(lower_i <= U_(i) <= upper_i, i=1..n) by Steck's (1971) determinant, n! det(M) with
    M_ij = (upper_i - lower_j)_+^(j-i+1) / (j-i+1)! for j >= i - 1, else 0."""
    n = len(lower)
    M = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            k = j - i + 1
            if k >= 0:
                M[i, j] = max(upper[i] - lower[j], 0.0) ** k / factorial(k)
    return math.factorial(n) * np.linalg.det(M)


naive_noe = B.noncrossing_probability_reference


def bj_stat(u):
    """sup_u K(G(u), u) for rows of uniforms: max over both sides of every jump."""
    n = u.shape[1]
    us = np.sort(u, axis=1)
    i = np.arange(1, n + 1)
    return np.maximum(B.kl_bernoulli(i / n, us), B.kl_bernoulli((i - 1) / n, us)).max(axis=1)


# ----------------------------------------------------------------------------------------------
# DKW
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 5, 10, 50, 200, 1000])
def test_dkw_conservative_vs_exact_kolmogorov(n):
    for a in ALPHAS:
        eps = float(B.dkw_epsilon(n, a))
        ks = float(stats.kstwo(n).isf(a))
        assert eps >= ks - 1e-12, (n, a, eps, ks)
        if n >= 1000:
            assert eps / ks < 1.01


def test_dkw_formula_and_sides():
    assert np.isclose(B.dkw_epsilon(100, 0.1), math.sqrt(math.log(20) / 200))
    assert np.isclose(B.dkw_epsilon(100, 0.1, side="lower"), math.sqrt(math.log(10) / 200))
    assert B.dkw_epsilon([10, 40], 0.1).shape == (2,)
    with pytest.raises(ValueError):
        B.dkw_epsilon(10, 0.6, side="lower")
    with pytest.raises(ValueError):
        B.dkw_epsilon(10, 0.1, side="left")
    with pytest.raises(ValueError):
        B.dkw_epsilon(0, 0.1)


def test_dkw_band_values_both_sides_of_jumps():
    x = np.array([3.0, 1.0, 2.0, 2.0, 5.0])
    band = B.dkw_band(x, 0.1)
    eps = B.dkw_epsilon(5, 0.1)
    np.testing.assert_array_equal(band.x, [1, 2, 2, 3, 5])
    right = np.array([1, 3, 3, 4, 5]) / 5  # ties: #{X <= x}
    left = np.array([0, 1, 1, 3, 4]) / 5  # #{X < x}
    np.testing.assert_allclose(band.lower, np.maximum(right - eps, 0))
    np.testing.assert_allclose(band.upper, np.minimum(right + eps, 1))
    np.testing.assert_allclose(band.lower_left, np.maximum(left - eps, 0))
    np.testing.assert_allclose(band.upper_left, np.minimum(left + eps, 1))
    lo, hi = band.at([0.0, 2.0, 2.5, 10.0])
    np.testing.assert_allclose(lo, np.maximum(np.array([0, 3, 3, 5]) / 5 - eps, 0))
    np.testing.assert_allclose(hi, np.minimum(np.array([0, 3, 3, 5]) / 5 + eps, 1))


def test_dkw_ragged_rows_with_nan():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3, 20))
    x[1, 15:] = np.nan
    band = B.dkw_band(x, 0.05)
    np.testing.assert_array_equal(band.n, [20, 15, 20])
    assert np.isnan(band.lower[1, 15:]).all() and not np.isnan(band.lower[1, :15]).any()
    single = B.dkw_band(x[1, :15], 0.05)
    np.testing.assert_allclose(band.upper[1, :15], single.upper)
    lo, hi = band.at(np.linspace(-3, 3, 7))
    lo1, hi1 = single.at(np.linspace(-3, 3, 7))
    np.testing.assert_allclose(lo[1], lo1)
    np.testing.assert_allclose(hi[1], hi1)


def _coverage_rate(band_fn, sample, cdf, cdf_left=None, grid=None):
    cov = B.band_covers(band_fn(sample), cdf, cdf_left, grid)
    miss = 1.0 - cov.mean()
    return miss, math.sqrt(max(miss * (1 - miss), 1e-4) / cov.size)


@pytest.mark.parametrize("side", ["both", "lower"])
def test_dkw_coverage_monte_carlo(side):
    rng = np.random.default_rng(1)
    a = 0.1
    f = lambda s: B.dkw_band(s, a, side=side)  # noqa: E731
    for sample, cdf in [(rng.uniform(size=(4000, 30)), lambda x: x),
                        (rng.exponential(size=(4000, 200)), lambda x: 1 - np.exp(-x))]:
        miss, se = _coverage_rate(f, sample, cdf)
        assert miss <= a + 3 * se, (miss, se)
        assert miss > a / 4  # DKW is close to exact here, not vacuous


def test_dkw_coverage_discrete_ties():
    rng = np.random.default_rng(2)
    lam = 3.0
    sample = rng.poisson(lam, size=(4000, 25)).astype(float)
    cdf = lambda x: stats.poisson.cdf(np.floor(x), lam)  # noqa: E731
    cdf_left = lambda x: stats.poisson.cdf(np.ceil(x) - 1, lam)  # noqa: E731
    miss, se = _coverage_rate(lambda s: B.dkw_band(s, 0.2), sample, cdf, cdf_left, grid=np.arange(0, 20))
    assert miss <= 0.2 + 3 * se


def test_dkw_speed_smoke():
    # the < 0.1 s target is measured in bench/psdme.py; here only that K x n works at that size
    x = np.random.default_rng(3).exponential(size=(2000, 1000))
    band = B.dkw_band(x, 0.01)
    assert band.lower.shape == (2000, 1000) and np.all(band.lower <= band.upper)


# ----------------------------------------------------------------------------------------------
# Berk-Jones
# ----------------------------------------------------------------------------------------------


def test_kl_bounds_solve_equation():
    c = 0.05
    p = np.linspace(0, 1, 201)
    lo, hi = B.kl_bounds(p, c)
    assert np.all(lo <= p) and np.all(hi >= p)
    inner = (p > 0)
    np.testing.assert_allclose(B.kl_bernoulli(p[inner], lo[inner]), c, rtol=1e-10)
    inner = (p < 1)
    np.testing.assert_allclose(B.kl_bernoulli(p[inner], hi[inner]), c, rtol=1e-10)
    assert lo[0] == 0 and hi[-1] == 1
    assert np.isclose(hi[0], 1 - math.exp(-c)) and np.isclose(lo[-1], math.exp(-c))
    # the lower root is on the inside (conservative side); the upper one is 1 - (a lower root), inside up
    # to the rounding of 1 - q near 1
    assert np.all(B.kl_bernoulli(p, lo) <= c * (1 + 1e-12))
    assert np.all(B.kl_bernoulli(p, hi) <= c * (1 + 1e-8))


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
def test_noncrossing_vs_steck_determinant(n):
    for t in [0.5, 1.0, 2.0, 4.0, 8.0]:
        c = t / n
        a, b = B.bj_boundaries(n, c)
        ref = steck_probability(a[1:], b[:-1])
        got = B.bj_noncrossing_probability(n, c)
        assert abs(got - ref) < 1e-10, (n, t, got, ref)


@pytest.mark.parametrize("n", [10, 30])
def test_noncrossing_vs_naive_binomial_recursion(n):
    for t in [2.0, 5.0, 9.0]:
        a, b = B.bj_boundaries(n, t / n)
        ref = naive_noe(list(a[1:]), list(b[:-1]))
        got = B.bj_noncrossing_probability(n, t / n)
        assert abs((1 - got) - (1 - ref)) <= 1e-11 + 1e-9 * (1 - ref), (n, t, got, ref)


def test_critical_values_match_notes_table():
    # research notes, section 4 (t = n * c, bisection tolerance 1e-6 there)
    for n, a, t in [(50, 0.1, 4.448), (100, 0.1, 4.608), (1000, 0.1, 5.027), (20, 3.2e-3, 7.844),
                    (50, 4.8e-3, 7.700), (100, 3.2e-3, 8.300), (1000, 1e-3, 9.968)]:
        assert abs(B.bj_critical_value(n, a) * n - t) < 1.5e-3, (n, a)
    # and the crossing probability quoted there: 9.70e-4 at n = 1000, t = 10
    assert abs((1 - B.bj_noncrossing_probability(1000, 0.01)) - 9.70e-4) < 1e-6


@pytest.mark.parametrize("n", [1, 10, 50, 200])
def test_critical_value_is_smallest_valid(n):
    for a in [0.1, 0.01]:
        c = B.bj_critical_value(n, a)
        assert 1 - B.bj_noncrossing_probability(n, c) <= a
        assert 1 - B.bj_noncrossing_probability(n, c * (1 - 1e-6)) > a


@pytest.mark.parametrize("n", [10, 50])
def test_critical_value_monte_carlo(n):
    rng = np.random.default_rng(10 + n)
    reps = 40_000
    a = 0.1
    s = bj_stat(rng.uniform(size=(reps, n)))
    rate = np.mean(s > B.bj_critical_value(n, a))
    se = math.sqrt(a * (1 - a) / reps)
    assert abs(rate - a) <= 3 * se, (rate, se)


def test_bj_band_coverage_monte_carlo():
    rng = np.random.default_rng(4)
    a = 0.1
    f = lambda s: B.bj_band(s, a)  # noqa: E731
    for sample, cdf in [(rng.uniform(size=(4000, 40)), lambda x: x),
                        (rng.standard_t(3, size=(4000, 150)), lambda x: stats.t.cdf(x, 3))]:
        miss, se = _coverage_rate(f, sample, cdf)
        assert abs(miss - a) <= 3 * se, (miss, se)  # exact for continuous F


def test_bj_band_coverage_discrete_ties():
    rng = np.random.default_rng(5)
    sample = rng.binomial(6, 0.3, size=(4000, 30)).astype(float)
    cdf = lambda x: stats.binom.cdf(np.floor(x), 6, 0.3)  # noqa: E731
    cdf_left = lambda x: stats.binom.cdf(np.ceil(x) - 1, 6, 0.3)  # noqa: E731
    miss, se = _coverage_rate(lambda s: B.bj_band(s, 0.1), sample, cdf, cdf_left, grid=np.arange(-1, 8))
    assert miss <= 0.1 + 3 * se


def test_bj_band_values_and_grid():
    rng = np.random.default_rng(6)
    x = rng.normal(size=(2, 40))
    x[1, 30:] = np.nan
    band = B.bj_band(x, 0.05)
    c40, c30 = B.bj_critical_value(40, 0.05), B.bj_critical_value(30, 0.05)
    np.testing.assert_allclose(band.width, [c40, c30])
    a, b = B.bj_boundaries(40, c40)
    np.testing.assert_allclose(band.lower[0], a[1:])
    np.testing.assert_allclose(band.upper_left[0], b[:-1])
    lo, hi = band.at(band.x[0])
    np.testing.assert_allclose(lo[0], band.lower[0])
    np.testing.assert_allclose(hi[0], band.upper[0])
    lo, hi = band.at([-100.0, 100.0])
    a30, b30 = B.bj_boundaries(30, c30)
    np.testing.assert_allclose(lo[1], [0.0, a30[30]])
    np.testing.assert_allclose(hi[1], [b30[0], 1.0])


def test_bj_narrower_than_dkw_in_tails_wider_in_middle():
    for n, a in [(100, 0.1), (1000, 1e-3)]:
        c = B.bj_critical_value(n, a)
        eps = float(B.dkw_epsilon(n, a))
        lo, hi = B.bj_boundaries(n, c)
        p = np.arange(n + 1) / n
        dkw_lo, dkw_hi = np.maximum(p - eps, 0), np.minimum(p + eps, 1)
        tail = (p <= 0.02) | (p >= 0.98)
        assert np.all(hi[p <= 0.02] < dkw_hi[p <= 0.02]) and np.all(lo[p >= 0.98] > dkw_lo[p >= 0.98])
        assert np.all(hi[tail] - lo[tail] < dkw_hi[tail] - dkw_lo[tail])
        mid = n // 2
        assert hi[mid] - lo[mid] > dkw_hi[mid] - dkw_lo[mid]


def test_critical_value_cache():
    B._bj_critical_cached.cache_clear()
    c1 = B.bj_critical_value(77, 0.05)
    info = B._bj_critical_cached.cache_info()
    c2 = B.bj_critical_value(77, 0.05)
    assert c1 == c2
    assert B._bj_critical_cached.cache_info().hits == info.hits + 1
    with pytest.raises(ValueError):
        B.bj_critical_value(10, 1e-12)
    with pytest.raises(ValueError):
        B.bj_critical_value(0, 0.1)
