"""FAQ's interval calibrated on the history, the expectation stated before any query, the fallback to uniform
sampling, and the plain words every FAQ output carries (issue 24)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from scipy.special import expit

import assay.faq as faq
from assay.faq import baselines as bl
from assay.faq.calibrate import MIN_MODELS, Calibration, calibrate
from assay.faq.core import FAQParams, interval, run_faq


def _cal(abs_t, n_models, fold=None, fell_back=None, inc=None):
    R = len(abs_t)
    z = np.zeros(R)
    return Calibration(n_b=10, N=100, fold=np.zeros(R, int) if fold is None else np.asarray(fold), seed=np.zeros(R, int),
                       model=np.arange(R) % n_models, theta=z + 0.5, est=0.5 + np.asarray(abs_t, float),
                       se={"increments": np.full(R, 1e-3) if inc is None else np.asarray(inc, float),
                           "model": np.ones(R)}, neff=np.full(R, 10.0),
                       fell_back=np.zeros(R, bool) if fell_back is None else np.asarray(fell_back),
                       unif_k=np.full(R, 5.0))


def test_the_conformal_quantile_is_the_split_conformal_order_statistic():
    # 40 models, |error| = 0.01..0.40: level 0.95 (1 + 1/40) = 0.974 -> the 39th smallest score
    errs = np.arange(1, 41) / 100
    t9 = stats.t.ppf(0.975, 9)
    assert _cal(errs, 40, inc=np.ones(40)).crit(0.05, "increments") == pytest.approx(0.39)
    # the conservative rule calibrates the floor: the score is |error| / (t se_model) when the increments' Student t
    # interval misses, 0 when it covers
    c = _cal(errs, 40)
    assert np.isnan(c.crit(0.05, "conservative"))
    assert c.floor(0.05) == pytest.approx(0.39 / t9)
    inc = np.where(errs > 0.30, 1.0, 1e-3)  # the 10 largest errors are covered by t se_increments
    assert _cal(errs, 40, inc=inc).floor(0.05) == pytest.approx(0.29 / t9)  # 10 zeros, then the 29th error
    # too few held-out models: no calibration, never a made-up number
    assert np.isnan(_cal(np.arange(1, 11) / 100, MIN_MODELS - 1).floor(0.05))
    # runs that fell back are not calibrated on
    fb = np.zeros(40, bool)
    fb[-5:] = True
    assert _cal(errs, 40, fell_back=fb).floor(0.05) < 0.36 / t9


def _world(seed, M, N=300, k=3):
    rng = np.random.default_rng(seed)
    V = rng.normal(size=(N, k)) * 1.2
    b = rng.normal(size=N) - 0.5
    U = rng.normal(size=(M, k))
    return V, b, (rng.random((M, N)) < expit(U @ V.T + b)).astype(float)


def test_calibrated_interval_covers_at_the_promise_and_is_narrower_than_student_t():
    """Monte Carlo: a history of 300 models from one factor world, 300 new models from the same world, 2 draws
    each at 30 questions of 300. The calibrated interval covers within 3 Monte Carlo s.e. of 95% and is narrower
    than the Student t interval on the same draws, which over-covers (the floor of the conservative variance).
    (The naive variance, the martingale increments alone, covers here; on real leaderboard answers it does not:
    tests/test_faq_study.py.)"""
    V, b, Z = _world(0, 600)
    hist = pd.DataFrame(Z[:300], index=[f"fam{i % 40}/m{i}" for i in range(300)])
    new = Z[300:]
    fm = faq.FactorModel(k=3, weight_decay=1.0, bias=True, seed=0, holdout=0)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        fm.fit(hist)
    n_b = 30
    cal = calibrate(hist.to_numpy(float), list(hist.index), fm, n_b, FAQParams(), seeds=2)
    assert cal is not None and cal.n_models >= 250
    lam = cal.floor(0.05)
    assert 0 < lam < 1  # the floor of the conservative variance is too high on data from the working model
    theta = new.mean(axis=1)
    cov_cal, cov_t, w_cal, w_t = [], [], [], []
    for s in range(2):
        r = run_faq(fm.V_, fm.prior_mean_, fm.prior_cov_, new, n_b, rng=np.random.default_rng(100 + s), b=fm.b_,
                    calibrated_floor=lam)
        cov_cal.append((r.lo <= theta) & (theta <= r.hi))
        w_cal.append(r.hi - r.lo)
        lo, hi = interval(r, 0.05, "conservative", "t")
        cov_t.append((lo <= theta) & (theta <= hi))
        w_t.append(hi - lo)
    cov_cal, cov_t = (np.concatenate(x).mean() for x in (cov_cal, cov_t))
    se = np.sqrt(0.05 * 0.95 / 600)
    assert abs(cov_cal - 0.95) <= 3 * se + 0.005, cov_cal
    assert np.concatenate(w_cal).mean() < np.concatenate(w_t).mean()
    assert cov_t > cov_cal
    # the expectation stated before any query agrees with what the new models got
    assert abs(cal.expected_coverage(0.05) - cov_cal) < 0.03


@pytest.mark.slow
def test_fallback_level_holds_for_models_that_follow_the_working_model():
    """Models drawn from the working model itself are sent to uniform sampling with probability at most the
    level (Ville's inequality for the likelihood-ratio test martingale; measured 1.9%)."""
    V, b, Z = _world(1, 1500)
    r = run_faq(V, np.zeros(3), np.eye(3), Z, 80, rng=np.random.default_rng(0), params=FAQParams(fallback=0.05), b=b)
    rate = float((r.fell_back > 0).mean())
    assert rate <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / 1500), rate


@pytest.mark.slow
def test_fallback_finds_models_that_do_not_follow_and_spends_the_rest_uniformly():
    """Answers with each model's accuracy but independent of the questions' factors: most are sent to uniform
    sampling within 40 answers, the interval keeps its coverage, and it is narrower than without the fallback.

    1,000 models (1,500 before; floor 0.929): coverage 0.943 with the fallback, 0.937 without; the intervals shrunk by
    10% towards their estimates (deliberately broken) cover 0.914 and 0.905, under the floor (1,500 models: 0.931 and
    0.919 under 0.933). 71% fall back early (70%), the effective sample sizes 0.865 and 0.743 (0.864 and 0.746)."""
    V, b, Z = _world(2, 1000)
    rng = np.random.default_rng(5)
    Zn = (rng.random(Z.shape) < Z.mean(axis=1, keepdims=True)).astype(float)
    theta = Zn.mean(axis=1)
    out = {}
    for fb in (0.05, 0.0):
        r = run_faq(V, np.zeros(3), np.eye(3), Zn, 100, rng=np.random.default_rng(6), params=FAQParams(fallback=fb), b=b)
        out[fb] = r
        cov = float(((r.lo <= theta) & (theta <= r.hi)).mean())
        assert cov >= 0.95 - 3 * np.sqrt(0.05 * 0.95 / 1000), (fb, cov)
    r = out[0.05]
    early = (r.fell_back > 0) & (r.fell_back <= 41)
    assert early.mean() > 0.6
    # after the switch every draw is uniform over the questions not yet asked
    m = int(np.flatnonzero(early)[0])
    t0 = int(r.fell_back[m]) - 1
    assert np.allclose(r.q_chosen[m, t0:], 1.0 / (300 - np.arange(t0, 100)))
    u = bl.uniform_mean(Zn, 100, rng=np.random.default_rng(7))
    ess = {fb: (np.mean(u.hi - u.lo) / np.mean(x.hi - x.lo)) ** 2 for fb, x in out.items()}
    assert ess[0.05] > ess[0.0] + 0.05, ess


@pytest.mark.slow
def test_evaluate_states_the_expectation_before_any_query_and_the_plain_words():
    V, b, Z = _world(3, 260)
    hist = pd.DataFrame(Z[:250], index=[f"fam{i % 30}/m{i}" for i in range(250)], columns=[f"q{j}" for j in range(300)])
    new = pd.DataFrame(Z[250:], index=[f"n{i}" for i in range(10)], columns=hist.columns)
    seen = []
    res = faq.evaluate(hist, new, budget=30, seed=0, cache=False, on_expected=seen.append)
    e = res.info["expected"]
    assert seen == [e] and e["held_out_models"] >= 200 and 0.9 < e["expected_coverage"] <= 1
    assert e["expected_saving"] > 1 and res.info["calibrated"]
    assert "calibrated on the history" in res.estimates["interval"].iloc[0]
    assert not any("below the 33" in w for w in res.warnings)  # coverage measured at this budget on the history
    assert faq.expect(hist, budget=30, cache=False)["floor"] == pytest.approx(e["floor"])
    # a history too small to learn from: Student t, and it says so
    small = faq.evaluate(hist.iloc[:12], new, budget=30, seed=0, cache=False)
    assert small.info["expected"] is None and small.info["calibrated"] is False
    assert any("could not be calibrated on the history" in w for w in small.warnings)
    assert any("below the 33" in w for w in small.warnings)
    # a history whose answers carry no pattern: no saving expected, said before any query
    rng = np.random.default_rng(4)
    flat = pd.DataFrame((rng.random((250, 300)) < 0.4).astype(float), index=hist.index, columns=hist.columns)
    r2 = faq.evaluate(flat, new, budget=30, seed=0, cache=False)
    assert r2.info["expected"]["expected_saving"] < 1
    assert any(w.startswith("no saving expected") for w in r2.warnings)
    # the same words reach the JSON and the reports
    from assay.report import render_html, render_markdown

    assert "no saving expected" in r2.to_json()
    assert "no saving expected" in render_html([r2]) and "no saving expected" in render_markdown([r2])
    assert "Expected before any query" in render_html([res])


def test_protocol_and_studies_carry_the_plain_words():
    V, b, Z = _world(4, 120)
    hist = pd.DataFrame(Z, index=[f"fam{i % 24}/m{i}" for i in range(120)])
    r = faq.protocol(hist, budgets=(20,), seeds=1, calibrate=False, cache=False)
    assert any("below the 33" in w for w in r.warnings)
    r2 = faq.protocol(hist, budgets=(20,), seeds=1, cache=False)
    row = r2.table[r2.table["method"] == "faq"].iloc[0]
    assert np.isfinite(row["expected_saving"]) and np.isfinite(row["expected_coverage"])
    assert 0 <= row["fallback_rate"] <= 1
    r3 = faq.protocol(hist, budgets=(20,), seeds=1, cache=False, params={"faq": {"fallback": 0.0}})
    assert np.isnan(r3.table[r3.table["method"] == "faq"].iloc[0]["fallback_rate"])
    assert not any("below the 33" in w for w in r2.warnings)


def test_bad_settings_are_refused_with_their_name():
    from assay.errors import AssayInputError

    h = pd.DataFrame(np.ones((5, 5)))
    for kw, word in (({"calibrate": "yes"}, "calibrate"), ({"on_expected": 3}, "on_expected"),
                     ({"fallback": 2.0}, "fallback"), ({"fallback": float("nan")}, "fallback")):
        with pytest.raises(AssayInputError, match=word):
            faq.evaluate(h, h.iloc[:1], budget=2, **kw)
    with pytest.raises(AssayInputError, match="calibrate"):
        faq.protocol(h, calibrate=1)
