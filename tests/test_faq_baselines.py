"""Tests of assay.faq.baselines (FAQ paper Sec. 4: uniform / AIPW baselines and the factor-model ablation).

Monte Carlo checks replicate one fixed bank ``z`` many times (rows of ``Z`` = independent replications), so
``theta`` is the finite-bank accuracy and every tolerance is a multiple (4) of a Monte Carlo standard error.
All designs here are exactly unbiased and their ``se^2`` is exactly unbiased for the MSE, so
``D = (estimate - theta)^2 - se^2`` has mean 0: that is how "se matches the empirical sd" is tested.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit, logit
from scipy.stats import binom, hypergeom, norm

from assay.errors import AssayInputError
from assay.faq.baselines import Estimates, ai_factor, aipw, ht_uniform, uniform_mean

# one worker runs this module: its module-scoped fixtures are computed once, not on each xdist worker
pytestmark = pytest.mark.xdist_group("faq_baselines")

N, NB, K_ONES = 400, 80, 150
R = 20_000  # replications for the cheap designs
Z975 = norm.ppf(0.975)


def _bank(seed=20260101):
    """Fixed heterogeneous bank: per-question probabilities p (U-shaped Beta), exactly K_ONES correct answers.

    ``z`` = the K_ONES questions with the largest logit(p_j) + logistic noise, so p is an informative (not
    perfect) predictor of z. theta = 150/400 = 0.375, where the discrete Wald intervals of the two uniform
    designs have exact coverage 0.948 / 0.951 (computed in the coverage test).
    """
    g = np.random.default_rng(seed)
    p = np.clip(g.beta(0.5, 0.5, N), 0.02, 0.98)
    score = logit(p) + g.logistic(size=N)
    z = np.zeros(N)
    z[np.argsort(-score)[:K_ONES]] = 1.0
    return p, z


P_TRUE, Z_BANK = _bank()
THETA = Z_BANK.mean()


def _mcse_mean(x):
    return x.std(ddof=1) / np.sqrt(x.size)


def _assert_unbiased(e: Estimates, theta, k=4.0):
    err = e.estimate - theta
    assert abs(err.mean()) <= k * _mcse_mean(err), (err.mean(), _mcse_mean(err))


def _assert_se_calibrated(e: Estimates, theta, k=4.0):
    """E[(est - theta)^2] == E[se^2] (both designs-unbiased); also the rms se vs the empirical sd."""
    D = (e.estimate - theta) ** 2 - e.se**2
    assert abs(D.mean()) <= k * _mcse_mean(D), (D.mean(), _mcse_mean(D))
    ratio = np.sqrt(np.mean(e.se**2)) / np.std(e.estimate - theta)
    assert 0.95 < ratio < 1.05, ratio


def _coverage(e: Estimates, theta):
    return ((e.lo <= theta) & (theta <= e.hi)).mean()


def _check_shapes(e: Estimates, M):
    for name in ("estimate", "se", "lo", "hi"):
        a = getattr(e, name)
        assert a.shape == (M,) and a.dtype == np.float64, name
    for name in ("n_labels", "n_distinct"):
        a = getattr(e, name)
        assert a.shape == (M,) and a.dtype == np.int64, name
    assert np.all((0 <= e.lo) & (e.lo <= e.estimate.clip(0, 1)) & (e.estimate.clip(0, 1) <= e.hi) & (e.hi <= 1))
    assert np.all(e.se >= 0)


@pytest.fixture(scope="module")
def reps():
    """R replications of each cheap design on the fixed bank (one call each, vectorised over rows)."""
    Z = np.tile(Z_BANK, (R, 1))
    out = {
        "uniform_mean": uniform_mean(Z, NB, rng=np.random.default_rng(1)),
        "ht_uniform": ht_uniform(Z, NB, rng=np.random.default_rng(2)),
        "aipw_neyman": aipw(Z, NB, P_TRUE, policy="neyman", rng=np.random.default_rng(3)),
        "aipw_2min": aipw(Z, NB, P_TRUE, policy="2min", tau=0.5, rng=np.random.default_rng(4)),
        "aipw_bernoulli": aipw(Z, NB, P_TRUE, policy="bernoulli", rng=np.random.default_rng(5)),
    }
    for e in out.values():
        _check_shapes(e, R)
    return out


@pytest.fixture(scope="module")
def factor_reps():
    """ai_factor on the fixed bank with an arbitrary (misspecified) factor model: validity is model-free."""
    g = np.random.default_rng(7)
    k = 3
    V = g.standard_normal((N, k))
    Rf = 3_000
    e = ai_factor(np.tile(Z_BANK, (Rf, 1)), NB, V, np.zeros(k), np.eye(k), tau=0.25, rng=np.random.default_rng(8))
    _check_shapes(e, Rf)
    return e


# ----------------------------------------------------------------------------------------------------
# unbiasedness and variance


@pytest.mark.slow
@pytest.mark.parametrize("name", ["uniform_mean", "ht_uniform", "aipw_neyman", "aipw_2min", "aipw_bernoulli"])
def test_unbiased_and_se_calibrated(reps, name):
    e = reps[name]
    _assert_unbiased(e, THETA)
    _assert_se_calibrated(e, THETA)


def test_ai_factor_unbiased_and_se_calibrated_misspecified(factor_reps):
    _assert_unbiased(factor_reps, THETA)
    _assert_se_calibrated(factor_reps, THETA)


def test_uniform_mean_variance_is_fpc_formula(reps):
    """Empirical variance of the SRSWOR mean == (1 - n/N) S^2 / n, the formula whose estimate is reported."""
    e = reps["uniform_mean"]
    S2 = Z_BANK.var(ddof=1)
    target = (1 - NB / N) * S2 / NB
    x = (e.estimate - THETA) ** 2
    assert abs(x.mean() - target) <= 4 * _mcse_mean(x)
    s2 = e.se**2
    assert abs(s2.mean() - target) <= 4 * _mcse_mean(s2)


def test_ht_uniform_variance_is_ht_formula(reps):
    """Var of HT under Bernoulli(pi) sampling == sum_j (1-pi)/pi z_j^2 / N^2 = (1-pi) theta / n_b."""
    e = reps["ht_uniform"]
    pi = NB / N
    target = (1 - pi) / pi * np.sum(Z_BANK**2) / N**2
    assert np.isclose(target, (1 - pi) * THETA / NB)
    x = (e.estimate - THETA) ** 2
    assert abs(x.mean() - target) <= 4 * _mcse_mean(x)
    s2 = e.se**2
    assert abs(s2.mean() - target) <= 4 * _mcse_mean(s2)
    # the HT reference is noisier than the sample mean by about 1/(1-theta)
    srs = (1 - NB / N) * Z_BANK.var(ddof=1) / NB
    assert 1.5 < target / srs < 1.7  # 1/(1-0.375) = 1.6


# ----------------------------------------------------------------------------------------------------
# coverage


def _exact_coverage_uniform_designs():
    """Exact coverage of the clipped Wald CIs of uniform_mean (hypergeometric) and ht_uniform (binomial)."""
    K = int(Z_BANK.sum())
    x = np.arange(NB + 1)
    m = x / NB
    s2 = (x * (1 - m) ** 2 + (NB - x) * m**2) / (NB - 1)
    se = np.sqrt((1 - NB / N) * s2 / NB)
    inside = (np.clip(m - Z975 * se, 0, 1) <= THETA) & (THETA <= np.clip(m + Z975 * se, 0, 1))
    cov_u = hypergeom(N, K, NB).pmf(x)[inside].sum()
    pi = NB / N
    x = np.arange(K + 1)  # labelled correct answers
    est = x / (pi * N)
    se = np.sqrt(x * (1 - pi) / pi**2) / N
    inside = (np.clip(est - Z975 * se, 0, 1) <= THETA) & (THETA <= np.clip(est + Z975 * se, 0, 1))
    cov_h = binom(K, pi).pmf(x)[inside].sum()
    return cov_u, cov_h


def test_coverage_uniform_designs_match_exact_and_nominal(reps):
    cov_u, cov_h = _exact_coverage_uniform_designs()
    tol = 4 * np.sqrt(0.95 * 0.05 / R)
    assert abs(_coverage(reps["uniform_mean"], THETA) - cov_u) <= tol
    assert abs(_coverage(reps["ht_uniform"], THETA) - cov_h) <= tol
    assert abs(_coverage(reps["uniform_mean"], THETA) - 0.95) <= tol
    assert abs(_coverage(reps["ht_uniform"], THETA) - 0.95) <= tol


def test_coverage_aipw_neyman(reps):
    tol = 4 * np.sqrt(0.95 * 0.05 / R)
    assert abs(_coverage(reps["aipw_neyman"], THETA) - 0.95) <= tol


def test_good_predictor_beats_ht_uniform(reps):
    for name in ("aipw_neyman", "aipw_2min", "aipw_bernoulli"):
        assert reps[name].se.mean() < 0.8 * reps["ht_uniform"].se.mean(), name


def test_ai_factor_correctly_specified_beats_ht_and_covers():
    g = np.random.default_rng(11)
    M, k = 2_000, 3
    V = 1.5 * g.standard_normal((N, k))
    U = g.standard_normal((M, k))
    Z = (g.random((M, N)) < expit(U @ V.T)).astype(np.int8)
    theta = Z.mean(axis=1)
    e = ai_factor(Z, NB, V, np.zeros(k), np.eye(k), tau=0.25, rng=np.random.default_rng(12))
    h = ht_uniform(Z, NB, rng=np.random.default_rng(13))
    _check_shapes(e, M)
    assert e.se.mean() < 0.8 * h.se.mean()
    tol = 4 * np.sqrt(0.95 * 0.05 / M)
    assert abs(_coverage(e, theta) - 0.95) <= tol
    _assert_unbiased(e, theta)
    _assert_se_calibrated(e, theta)


# ----------------------------------------------------------------------------------------------------
# budget


def test_budget_fixed_designs(reps):
    e = reps["uniform_mean"]
    assert np.all(e.n_labels == NB) and np.all(e.n_distinct == NB)


@pytest.mark.parametrize("name", ["ht_uniform", "aipw_neyman", "aipw_2min", "aipw_bernoulli"])
def test_budget_bernoulli_designs(reps, name):
    e = reps[name]
    nl = e.n_labels.astype(float)
    assert np.all(e.n_distinct == e.n_labels)
    # E[n_labels] <= n_b (the stabilised policies spend a little less), and not much less
    assert 0.85 * NB <= nl.mean() <= NB + 4 * _mcse_mean(nl)
    if name in ("ht_uniform", "aipw_bernoulli"):  # Binomial(N, n_b/N)
        assert abs(nl.mean() - NB) <= 4 * np.sqrt(NB * (1 - NB / N) / R)
    else:  # the stabilisation wrapper keeps the count tight around its schedule
        assert nl.std() < 0.8 * np.sqrt(NB * (1 - NB / N))
        assert nl.max() <= NB + 20


def test_budget_ai_factor(factor_reps):
    nl = factor_reps.n_labels.astype(float)
    assert np.all(factor_reps.n_distinct == factor_reps.n_labels)
    assert 0.85 * NB <= nl.mean() <= 1.05 * NB
    assert nl.max() <= NB + 20


def test_full_budget_is_exact():
    Z = np.tile(Z_BANK, (5, 1))
    for e in (uniform_mean(Z, N, rng=np.random.default_rng(0)), ht_uniform(Z, N, rng=np.random.default_rng(0))):
        np.testing.assert_allclose(e.estimate, THETA, rtol=0, atol=1e-12)
        np.testing.assert_allclose(e.se, 0, atol=1e-12)
        assert np.all(e.n_labels == N)


# ----------------------------------------------------------------------------------------------------
# loop references (same uniform draws: each sequential design uses exactly rng.random((M, N)))


def _aipw_loop(z, n_b, f, policy, tau, w):
    n = z.size
    u = {"neyman": np.sqrt(f * (1 - f)), "2min": 2 * np.minimum(f, 1 - f)}[policy]
    eta = n_b / (n * u.mean())
    labels, total, var = 0, 0.0, 0.0
    for t in range(n):
        pi = min(max(min(eta * u[t], (t + 1) * n_b / n - labels), 0.0), 1.0)
        pi = (1 - tau) * pi + tau * n_b / n
        xi = w[t] < pi
        total += f[t] + (z[t] - f[t]) * xi / pi
        var += xi * (1 - pi) / pi**2 * (z[t] - f[t]) ** 2
        labels += xi
    return total / n, np.sqrt(var / n / n), labels


def _ai_factor_loop(z, n_b, V, mu, S0, tau, w):
    """Plain per-model implementation: recompute every prediction from u_hat at every step."""
    n = z.size
    u_hat, S = mu.copy(), S0.copy()
    labels, total, var = 0, 0.0, 0.0
    for t in range(n):
        pred = np.clip(expit(V @ u_hat), 1e-12, 1 - 1e-12)
        score = 2 * np.minimum(pred, 1 - pred)
        eta = n_b / (n * score.mean())
        pi = min(max(min(eta * score[t], (t + 1) * n_b / n - labels), 0.0), 1.0)
        pi = (1 - tau) * pi + tau * n_b / n
        xi = w[t] < pi
        p = pred[t]
        total += p + (z[t] - p) * xi / pi
        var += xi * (1 - pi) / pi**2 * (z[t] - p) ** 2
        labels += xi
        if xi:
            v = V[t]
            s = S @ v
            wt = p * (1 - p)
            S_new = S - wt * np.outer(s, s) / (1 + wt * v @ s)
            S = (S_new + S_new.T) / 2
            u_hat = u_hat + S_new @ v * (z[t] - p)  # eq. 5 literally: Sigma_new (z - p) v
    return total / n, np.sqrt(var / n / n), labels


def test_ai_factor_matches_loop_reference():
    g = np.random.default_rng(21)
    n, k, nb = 150, 3, 30
    V = 1.2 * g.standard_normal((n, k))
    mu = np.array([0.3, -0.2, 0.1])
    A = g.standard_normal((k, k))
    S0 = A @ A.T / k + 0.5 * np.eye(k)
    Z = (g.random((2, n)) < expit(g.standard_normal((2, k)) @ V.T)).astype(float)
    for tau in (0.05, 0.5):
        e = ai_factor(Z, nb, V, mu, S0, tau=tau, rng=np.random.default_rng(5))
        W = np.random.default_rng(5).random(Z.shape)
        for i in range(2):
            est, se, nl = _ai_factor_loop(Z[i], nb, V, mu, S0, tau, W[i])
            assert e.n_labels[i] == nl
            np.testing.assert_allclose(e.estimate[i], est, rtol=1e-10, atol=1e-13)
            np.testing.assert_allclose(e.se[i], se, rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("policy", ["neyman", "2min"])
def test_aipw_matches_loop_reference(policy):
    g = np.random.default_rng(31)
    n, nb = 200, 40
    f = g.random(n)
    Z = (g.random((3, n)) < f).astype(float)
    e = aipw(Z, nb, f, policy=policy, tau=0.25, rng=np.random.default_rng(9))
    W = np.random.default_rng(9).random(Z.shape)
    for i in range(3):
        est, se, nl = _aipw_loop(Z[i], nb, f, policy, 0.25, W[i])
        assert e.n_labels[i] == nl
        np.testing.assert_allclose([e.estimate[i], e.se[i]], [est, se], rtol=1e-12, atol=1e-14)


def test_aipw_bernoulli_zero_predictor_is_ht_uniform():
    Z = np.tile(Z_BANK, (50, 1))
    a = aipw(Z, NB, np.zeros(N), policy="bernoulli", rng=np.random.default_rng(3))
    h = ht_uniform(Z, NB, rng=np.random.default_rng(3))
    for name in ("estimate", "se", "lo", "hi"):
        np.testing.assert_allclose(getattr(a, name), getattr(h, name), rtol=1e-12, atol=1e-15)
    assert np.array_equal(a.n_labels, h.n_labels)


def test_aipw_degenerate_predictor_falls_back_to_bernoulli():
    Z = np.tile(Z_BANK, (50, 1))
    f = (P_TRUE > 0.5).astype(float)  # all scores 0
    a = aipw(Z, NB, f, policy="neyman", rng=np.random.default_rng(4))
    b = aipw(Z, NB, f, policy="bernoulli", rng=np.random.default_rng(4))
    np.testing.assert_array_equal(a.estimate, b.estimate)


def test_accepts_bool_and_int_Z():
    Zb = np.tile(Z_BANK.astype(bool), (4, 1))
    a = uniform_mean(Zb, NB, rng=np.random.default_rng(0))
    b = uniform_mean(Zb.astype(np.int64), np.int64(NB), rng=np.random.default_rng(0))
    np.testing.assert_array_equal(a.estimate, b.estimate)


# ----------------------------------------------------------------------------------------------------
# bad input


def _V(k=2, n=10):
    return np.ones((n, k)), np.zeros(k), np.eye(k)


GOOD_Z = np.tile(np.r_[np.ones(5), np.zeros(5)], (3, 1))


def _all(Z, n_b=4, **kw):
    """Call every estimator with the given (bad) common arguments."""
    rng = kw.pop("rng", np.random.default_rng(0))
    alpha = kw.pop("alpha", 0.05)
    V, mu, S = _V()
    yield lambda: uniform_mean(Z, n_b, rng=rng, alpha=alpha)
    yield lambda: ht_uniform(Z, n_b, rng=rng, alpha=alpha)
    yield lambda: aipw(Z, n_b, np.full(10, 0.5), rng=rng, alpha=alpha)
    yield lambda: ai_factor(Z, n_b, V, mu, S, rng=rng, alpha=alpha)


@pytest.mark.parametrize(
    "Z, n_b, kw, match",
    [
        (np.ones(10), 4, {}, "2-D"),
        (np.ones((2, 3, 10)), 4, {}, "2-D"),
        (np.where(GOOD_Z == 1, 0.5, 0.0), 4, {}, "0/1"),
        (np.where(GOOD_Z == 1, np.nan, 0.0), 4, {}, "NaN"),
        (np.array([["a"] * 10] * 3), 4, {}, "numeric"),
        (np.zeros((0, 10)), 4, {}, "at least"),
        (GOOD_Z, 1, {}, "n_b"),
        (GOOD_Z, 11, {}, "n_b"),
        (GOOD_Z, 4.0, {}, "integer"),
        (GOOD_Z, True, {}, "integer"),
        (GOOD_Z, 4, {"alpha": 0.0}, "alpha"),
        (GOOD_Z, 4, {"alpha": 1.0}, "alpha"),
        (GOOD_Z, 4, {"alpha": float("nan")}, "alpha"),
        (GOOD_Z, 4, {"rng": 0}, "Generator"),
    ],
)
def test_bad_common_inputs(Z, n_b, kw, match):
    for call in _all(Z, n_b, **dict(kw)):
        with pytest.raises(AssayInputError, match=match):
            call()


@pytest.mark.parametrize(
    "f, kw, match",
    [
        (np.full(9, 0.5), {}, "shape"),
        (np.full((10, 1), 0.5), {}, "shape"),
        (np.r_[np.full(9, 0.5), 1.5], {}, r"\[0, 1\]"),
        (np.r_[np.full(9, 0.5), -0.1], {}, r"\[0, 1\]"),
        (np.r_[np.full(9, 0.5), np.nan], {}, "NaN"),
        (["x"] * 10, {}, "numeric"),
        (np.full(10, 0.5), {"policy": "sqrt"}, "bernoulli.*neyman.*2min"),
        (np.full(10, 0.5), {"policy": None}, "accepted policies"),
        (np.full(10, 0.5), {"tau": 0.0}, "tau"),
        (np.full(10, 0.5), {"tau": 1.5}, "tau"),
        (np.full(10, 0.5), {"tau": "0.5"}, "tau"),
    ],
)
def test_bad_aipw_inputs(f, kw, match):
    with pytest.raises(AssayInputError, match=match):
        aipw(GOOD_Z, 4, f, rng=np.random.default_rng(0), **kw)


@pytest.mark.parametrize(
    "V, mu, S, kw, match",
    [
        (np.ones((9, 2)), np.zeros(2), np.eye(2), {}, "V must have shape"),
        (np.ones(10), np.zeros(2), np.eye(2), {}, "V must have shape"),
        (np.full((10, 2), np.nan), np.zeros(2), np.eye(2), {}, "V contains NaN"),
        (np.ones((10, 2)), np.zeros(3), np.eye(2), {}, "prior_mean"),
        (np.ones((10, 2)), np.zeros(2), np.eye(3), {}, "prior_cov"),
        (np.ones((10, 2)), np.zeros(2), np.array([[1.0, 0.5], [0.0, 1.0]]), {}, "symmetric"),
        (np.ones((10, 2)), np.zeros(2), -np.eye(2), {}, "semi-definite"),
        (np.ones((10, 2)), np.array([0.0, np.inf]), np.eye(2), {}, "NaN or infinite"),
        (np.ones((10, 2)), np.zeros(2), np.eye(2), {"tau": 0.0}, "tau"),
    ],
)
def test_bad_ai_factor_inputs(V, mu, S, kw, match):
    with pytest.raises(AssayInputError, match=match):
        ai_factor(GOOD_Z, 4, V, mu, S, rng=np.random.default_rng(0), **kw)
