"""assay.stats.bounds: KL bounds against a fine grid, monotonicity, and anytime coverage by simulation."""

import numpy as np
import pytest

from assay.errors import AssayInputError
from assay.stats.bounds import coup_bounds, coup_radius, kl_bernoulli, kl_lcb, kl_ucb, samples_to_certify


def test_against_fine_grid():
    rng = np.random.default_rng(0)
    mean = rng.random(200)
    mean[:3] = [0.0, 1.0, 0.5]
    r = rng.exponential(0.2, 200)
    ucb, lcb = kl_ucb(mean, r), kl_lcb(mean, r)
    grid = np.linspace(0, 1, 200_001)
    for i in range(0, 200, 17):
        inside = grid[kl_bernoulli(mean[i], grid) <= r[i]]
        assert ucb[i] >= inside.max() - 1e-9 and ucb[i] <= inside.max() + 1e-5
        assert lcb[i] <= inside.min() + 1e-9 and lcb[i] >= inside.min() - 1e-5
    assert ((lcb <= mean) & (mean <= ucb)).all()


def test_monotone_in_m_and_units():
    m = np.arange(1, 400)
    lcb, ucb = coup_bounds(np.full(m.size, 0.8), m, 100, 0.01)
    assert (np.diff(ucb) <= 1e-12).all() and (np.diff(lcb) >= -1e-12).all()
    lb, ub = coup_bounds(np.full(m.size, 0.8), m, 100, 0.01, log="bits")
    assert (lb >= lcb).all() and (ub <= ucb).all()  # the released convention is narrower
    l0, u0 = coup_bounds(np.array([0.3]), np.array([0]), 10, 0.01)
    assert l0[0] == 0 and u0[0] == 1


def test_anytime_coverage_union_bound():
    """Over many arms followed for 300 samples each, the share of arms whose bound EVER misses mu is <= delta."""
    rng = np.random.default_rng(1)
    A, T, delta, n = 2000, 200, 0.2, 20  # a generous delta so that misses are countable
    mu = rng.uniform(0.05, 0.95, A)
    x = rng.random((A, T)) < mu[:, None]
    miss = np.zeros(A, dtype=bool)
    naive_miss = np.zeros(A, dtype=bool)
    cum = np.cumsum(x, axis=1)
    for m in range(1, T + 1):
        mean = cum[:, m - 1] / m
        lcb, ucb = coup_bounds(mean, np.full(A, m), n, delta)
        miss |= (mu < lcb) | (mu > ucb)
        r = np.log(1 / delta) / m  # a fixed-time bound at level delta, used at every m (no union over time)
        naive_miss |= (mu < kl_lcb(mean, r)) | (mu > kl_ucb(mean, r))
    # each arm's share of the failure budget is delta / n; the anytime bound stays below it ...
    assert miss.mean() <= delta / n + 4 * np.sqrt(delta / n / A)
    # ... while re-using a fixed-time bound at every sample count misses far more often than delta
    assert naive_miss.mean() > delta


def test_samples_to_certify():
    m = samples_to_certify(np.array([1.0, 0.95, 0.85, 0.5]), 0.9, 100, 0.01)
    assert np.isinf(m[2]) and np.isinf(m[3]) and m[0] < m[1]
    for mean, mm in zip([1.0, 0.95], m[:2]):
        lcb_at = coup_bounds(np.array([mean]), np.array([mm]), 100, 0.01)[0][0]
        lcb_before = coup_bounds(np.array([mean]), np.array([mm - 1]), 100, 0.01)[0][0]
        assert lcb_at >= 0.9 > lcb_before


def test_bad_arguments():
    with pytest.raises(AssayInputError):
        coup_radius(3, 10, 1.5)
    with pytest.raises(AssayInputError):
        coup_radius(3, 10, 0.1, log="dB")
