"""p-to-e calibrators and the PS-DME optimal power calibrator (assay.stats.calibrate): validity,
generalised inverses, the closed form of eq. (17) against brute force, and input errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from scipy.special import lambertw

from assay.errors import AssayInputError
from assay.stats import calibrate as cal

TAUS = [0.01, 0.1, 1 / 3, 0.5, 2 / 3, 0.9, 0.96]
DESIGNS = [(2000, 1000, 0.1), (43, 30, 0.1), (30, 12, 0.1), (30, 12, 0.05), (100, 1, 0.1), (19, 5, 0.1),
           (1, 1, 0.5), (10**6, 3, 0.01)]


def numeric_level(K, S, delta, tau):
    """f_tau^{-1}(K/(delta S)) by bisection on the calibrator itself (independent of the closed form)."""
    return cal.generalized_inverse(lambda u: cal.power_calibrator(u, tau), K / (delta * S))


# --------------------------------------------------------------------------------------------
# Calibrators
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("tau", TAUS)
def test_power_calibrator_has_mass_exactly_one(tau):
    f = lambda u: cal.power_calibrator(u, tau)  # noqa: E731
    assert cal.calibrator_mass(f) == pytest.approx(1.0, abs=1e-9)
    assert cal.is_calibrator(f)


def test_power_calibrator_values_and_vectorisation():
    p = np.array([0.0, 1e-4, 0.25, 1.0])
    v = cal.power_calibrator(p, 0.5)
    assert v[0] == math.inf
    np.testing.assert_allclose(v[1:], [0.5 * 100, 0.5 * 2, 0.5], rtol=1e-15)
    grid = cal.power_calibrator(p[1:, None], np.array([0.2, 0.7])[None, :])
    assert grid.shape == (3, 2)
    assert isinstance(cal.power_calibrator(0.3, 0.4), float)
    assert np.all(np.diff(cal.power_calibrator(np.linspace(0.001, 1, 100), 0.3)) < 0)


def test_mass_check_rejects_invalid_functions():
    assert not cal.is_calibrator(lambda u: 1.01 * cal.power_calibrator(u, 0.5))  # mass 1.01
    assert not cal.is_calibrator(lambda u: np.asarray(u, dtype=float))  # increasing
    assert not cal.is_calibrator(cal.vovk_sellke_bound)  # eq. (33): not a calibrator
    assert cal.calibrator_mass(cal.vovk_sellke_bound) > 3.0
    step = lambda u: np.where(np.asarray(u) <= 0.01, 100.0, 0.0)  # noqa: E731  (Bonferroni-type)
    assert cal.calibrator_mass(step, breakpoints=[0.01]) == pytest.approx(1.0, abs=1e-12)
    assert cal.is_calibrator(step, breakpoints=[0.01])


@pytest.mark.parametrize("tau", TAUS)
def test_power_inverse_round_trip(tau):
    e = np.array([1.0 - tau + 1e-9, 1.0, 2.0, 30.0, 1e4, 1e8])
    e = e[e < (1 - tau) * 1e250 ** tau]  # keep f^{-1}(e) > 1e-250 (no underflow)
    p = cal.power_calibrator_inverse(e, tau)
    np.testing.assert_allclose(cal.power_calibrator(p, tau), e, rtol=1e-9)
    u = np.array([1e-12, 1e-5, 0.01, 0.3, 0.999])
    np.testing.assert_allclose(cal.power_calibrator_inverse(cal.power_calibrator(u, tau), tau), u, rtol=1e-9)
    # the closed form is the paper's sup{u : f(u) >= e}, as found by bisection
    np.testing.assert_allclose(cal.generalized_inverse(lambda x: cal.power_calibrator(x, tau), e), p, rtol=1e-12)


def test_power_inverse_edge_cases():
    tau = 0.4
    out = cal.power_calibrator_inverse([-1.0, 0.0, 0.3, 0.6, math.inf], tau)
    np.testing.assert_array_equal(out, [1.0, 1.0, 1.0, 1.0, 0.0])  # e <= 1 - tau: every u qualifies
    assert cal.power_calibrator_inverse(0.6000001, tau) < 1.0
    # tau = 1/2: f^{-1}(e) = 1 / (4 e^2), the authors' hard-coded case
    assert cal.power_calibrator_inverse(10.0, 0.5) == pytest.approx(1 / 400, rel=1e-14)


def test_generalized_inverse_of_step_and_empty_set():
    step = lambda u: np.where(np.asarray(u) <= 0.01, 100.0, 0.0)  # noqa: E731
    assert cal.generalized_inverse(step, 100.0) == 0.01
    assert cal.generalized_inverse(step, 0.0) == 1.0
    assert cal.generalized_inverse(step, 101.0) == 0.0  # empty set -> 0 (infinite band)


def test_vovk_sellke_envelope_and_inverse():
    p = np.concatenate([np.logspace(-12, 0, 400), [math.exp(-1)]])
    env = cal.vovk_sellke_bound(p)
    taus = np.linspace(1e-4, 1 - 1e-4, 20001)
    brute = cal.power_calibrator(p[:, None], taus[None, :]).max(axis=1)
    assert np.all(brute <= env * (1 + 1e-12))
    low = p <= math.exp(-1)  # attained at tau = 1 + 1/ln p; above 1/e a sup (tau -> 0), value 1
    np.testing.assert_allclose(brute[low], env[low], rtol=1e-5)
    np.testing.assert_allclose(brute[~low], 1.0, atol=1e-3)
    assert np.all(env[~low] == 1.0)
    # argmax in the parametrisation of eq. (12) is 1 + 1/ln p (eq. 34 as printed, -1/ln p, is 1 - that)
    for q in [1e-6, 1e-3, 0.1]:
        t = 1 + 1 / math.log(q)
        assert cal.power_calibrator(q, t) == pytest.approx(cal.vovk_sellke_bound(q), rel=1e-13)
    y = np.array([0.5, 1.0, 1.5, 10.0, 1e6])
    inv = cal.vovk_sellke_inverse(y)
    assert inv[0] == inv[1] == 1.0
    np.testing.assert_allclose(cal.vovk_sellke_bound(inv[2:]), y[2:], rtol=1e-10)


# --------------------------------------------------------------------------------------------
# Optimal tau (eq. 17) and the band half-width (eq. 14, 16)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("K,S,delta", DESIGNS)
def test_optimal_tau_matches_brute_force(K, S, delta):
    tau_star = cal.optimal_power_tau(K, S, delta)
    assert 0.0 < tau_star < 1.0
    n = 50
    taus = np.linspace(0.001, 0.999, 9981)
    widths = np.array([cal.ps_dme_halfwidth(n, K, S, delta, tau=t) for t in taus])
    assert abs(taus[np.argmin(widths)] - tau_star) <= 2e-4
    res = minimize_scalar(lambda t: cal.ps_dme_halfwidth(n, K, S, delta, tau=t), bounds=(1e-6, 1 - 1e-6),
                          method="bounded", options={"xatol": 1e-10})
    assert res.x == pytest.approx(tau_star, abs=1e-5)
    assert cal.ps_dme_halfwidth(n, K, S, delta) <= widths.min() * (1 + 1e-14)
    assert cal.ps_dme_halfwidth(n, K, S, delta) <= res.fun * (1 + 1e-14)


@pytest.mark.parametrize("K,S,delta", DESIGNS)
def test_optimal_level_is_exp_lambert(K, S, delta):
    w = lambertw(-delta * S / (math.e * K), k=-1).real
    tau_star = cal.optimal_power_tau(K, S, delta)
    assert tau_star == pytest.approx(1 + 1 / w, rel=1e-15)
    target = math.exp(w)
    closed = cal.power_calibrator_inverse(K / (delta * S), tau_star)
    assert closed == pytest.approx(target, rel=1e-12, abs=1e-12)
    assert numeric_level(K, S, delta, tau_star) == pytest.approx(target, rel=1e-12, abs=1e-12)
    assert cal.optimal_power_level(K, S, delta) == pytest.approx(target, rel=1e-15)
    # ... and it touches the Vovk-Sellke envelope (eq. 36)
    assert cal.vovk_sellke_inverse(K / (delta * S)) == pytest.approx(target, rel=1e-12)


@pytest.mark.parametrize("K,S,delta", DESIGNS)
def test_halfwidth_closed_form_equals_numeric_path(K, S, delta):
    n = np.array([1, 20, 50, 100, 1000])
    w = lambertw(-delta * S / (math.e * K), k=-1).real
    closed = cal.optimal_halfwidth(n, K, S, delta)
    np.testing.assert_allclose(closed, np.sqrt((math.log(2) - w) / (2 * n)), rtol=1e-15)
    alpha_num = numeric_level(K, S, delta, cal.optimal_power_tau(K, S, delta))
    np.testing.assert_allclose(cal.dkw_halfwidth(n, alpha_num), closed, rtol=1e-12)
    np.testing.assert_allclose(cal.ps_dme_halfwidth(n, K, S, delta), closed, rtol=0)


def test_reference_numbers():
    # independently computed values (research notes, section 3)
    assert cal.optimal_power_tau(43, 30, 0.1) == pytest.approx(0.8126, abs=1e-4)
    assert cal.optimal_power_level(43, 30, 0.1) == pytest.approx(4.809e-3, rel=1e-3)
    assert cal.ps_dme_halfwidth(50, 43, 30, 0.1) == pytest.approx(0.2456, abs=1e-4)
    assert cal.ps_dme_halfwidth(50, 43, 30, 0.1, tau=0.5) == pytest.approx(0.2721, abs=1e-4)
    assert cal.ps_dme_halfwidth(100, 30, 12, 0.1) == pytest.approx(0.1831, abs=1e-4)
    assert cal.ps_dme_halfwidth(20, 2000, 1000, 0.1) == pytest.approx(0.4012, abs=1e-4)
    # tau = 1/2 (the authors' code): eps = sqrt(ln(8 K^2 / (delta^2 |S|^2)) / (2 n))
    for K, S, d, n in [(43, 30, 0.1, 50), (4, 2, 0.1, 15), (2000, 1000, 0.05, 20)]:
        ref = math.sqrt(math.log(8 * K**2 / (d**2 * S**2)) / (2 * n))
        assert cal.ps_dme_halfwidth(n, K, S, d, tau=0.5) == pytest.approx(ref, rel=1e-13)
        assert cal.dkw_halfwidth(n, cal.power_level(K, S, d, 0.5)) == pytest.approx(ref, rel=1e-13)
        t = cal.optimal_power_tau(K, S, d)
        assert cal.power_level(K, S, d, t) == pytest.approx(cal.optimal_power_level(K, S, d), rel=1e-12)
    # eq. (11): SS-DME width is the DKW inversion at delta
    assert cal.dkw_halfwidth(50, 0.1) == pytest.approx(math.sqrt(math.log(20) / 100), rel=1e-15)


def test_monotonicity():
    base = cal.optimal_halfwidth(100, 50, 10, 0.1)
    Ks = np.arange(10, 400)
    wK = [cal.optimal_halfwidth(100, k, 10, 0.1) for k in Ks]
    assert np.all(np.diff(wK) > 0) and base in wK
    wS = [cal.optimal_halfwidth(100, 50, s, 0.1) for s in range(1, 51)]
    assert np.all(np.diff(wS) < 0)
    wn = cal.optimal_halfwidth(np.arange(1, 500), 50, 10, 0.1)
    assert np.all(np.diff(wn) < 0)
    wd = [cal.optimal_halfwidth(100, 50, 10, d) for d in np.linspace(0.01, 0.99, 50)]
    assert np.all(np.diff(wd) < 0)
    taus = [cal.optimal_power_tau(k, 10, 0.1) for k in Ks]
    assert np.all(np.diff(taus) > 0)


def test_clamp_at_branch_point():
    # delta |S| / K rounds onto 1 (delta one ulp below 1, |S| = K = 30): argument -1/e, where scipy
    # alone would give NaN; clamped to W = -1, tau* = 0, alpha* = 1/e.
    d = float(np.nextafter(1.0, 0.0))
    assert math.isnan(lambertw(-(d * 30) / (math.e * 30), k=-1).real)
    w, clamped = cal.lambert_lower(30, 30, d)
    assert clamped and w == -1.0
    assert cal.optimal_power_tau(30, 30, d) == 0.0
    assert cal.optimal_power_level(30, 30, d) == pytest.approx(math.exp(-1), rel=1e-15)
    assert cal.optimal_halfwidth(10, 30, 30, d) == pytest.approx(math.sqrt((math.log(2) + 1) / 20), rel=1e-15)
    # continuity: just inside the valid region the answers approach the clamped ones
    w2, clamped2 = cal.lambert_lower(30, 30, 1 - 1e-9)
    assert not clamped2 and -1.001 < w2 < -1.0
    assert 0.0 < cal.optimal_power_tau(30, 30, 1 - 1e-9) < 1e-3
    assert cal.optimal_halfwidth(10, 30, 30, 1 - 1e-9) == pytest.approx(math.sqrt((math.log(2) + 1) / 20), rel=1e-3)
    # any valid design stays strictly inside (0, 1)
    assert 0.0 < cal.optimal_power_tau(1, 1, 0.999999) < 1.0


def test_bad_inputs():
    bad_design = [(30, 12, 0.0), (30, 12, 1.0), (30, 12, -0.1), (30, 12, float("nan")), (0, 1, 0.1),
                  (30, 0, 0.1), (30, 31, 0.1), (30, 2.5, 0.1), (True, 1, 0.1), (30, "3", 0.1)]
    for K, S, d in bad_design:
        for fn in (cal.optimal_power_tau, cal.optimal_power_level):
            with pytest.raises(AssayInputError):
                fn(K, S, d)
        with pytest.raises(AssayInputError):
            cal.optimal_halfwidth(10, K, S, d)
    for tau in [0.0, 1.0, -0.2, 1.5, float("nan")]:
        with pytest.raises(AssayInputError):
            cal.power_calibrator(0.5, tau)
        with pytest.raises(AssayInputError):
            cal.power_calibrator_inverse(3.0, tau)
        with pytest.raises(AssayInputError):
            cal.ps_dme_halfwidth(10, 30, 12, 0.1, tau=tau)
    for n in [0, -3, 2.5, [10, 0], float("inf")]:
        with pytest.raises(AssayInputError):
            cal.optimal_halfwidth(n, 30, 12, 0.1)
        with pytest.raises(AssayInputError):
            cal.dkw_halfwidth(n, 0.1)
    with pytest.raises(AssayInputError):
        cal.power_calibrator([0.5, 1.2], 0.5)
    with pytest.raises(AssayInputError):
        cal.power_calibrator_inverse(float("nan"), 0.5)
    with pytest.raises(AssayInputError):
        cal.dkw_halfwidth(10, 1.5)
    # integer-valued floats are accepted as counts
    assert cal.optimal_halfwidth(10.0, 30.0, 12.0, 0.1) == cal.optimal_halfwidth(10, 30, 12, 0.1)
