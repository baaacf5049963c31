"""Tests of assay.psdme (PS-DME, SS-DME, Bonferroni, naive; paper eq. 8-18) and the shipped LLMPerf data."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from assay import psdme
from assay.datasets import SHIPPED, load_llmperf
from assay.errors import AssayInputError
from assay.results import Result
from assay.stats import bands as bd
from assay.stats import calibrate as cal

DELTA = 0.1


def _table(samples: dict) -> pd.DataFrame:
    return pd.DataFrame({"config": np.concatenate([[c] * len(v) for c, v in samples.items()]),
                         "kpi": np.concatenate([np.asarray(v, float) for v in samples.values()])})


def _exp_table(rng, scales, n):
    return _table({f"c{i:02d}": rng.exponential(s, n) for i, s in enumerate(scales)})


def _dkw_xstar(v, eps, gamma):
    """x_(m), m = ceil(n(1 - gamma + eps)) (notes §8.5, with a tolerance), +inf when m > n."""
    v = np.sort(v)
    n = len(v)
    m = math.ceil(n * (1 - gamma + eps) - 1e-9)
    return math.inf if m > n else float(v[max(m, 1) - 1])


def _band_from_table(btab: pd.DataFrame, config: str):
    """A band object (for bd.band_covers) rebuilt from the result's ``bands`` table."""
    g = btab[btab["config"] == config]
    row = {k: g[k].to_numpy(float)[None, :] for k in ("x", "lower", "upper", "lower_left", "upper_left")}
    return SimpleNamespace(**row)


# --------------------------------------------------------------------------------------------
# Guaranteed KPI (eq. 18)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["ps-dme", "bonferroni", "naive", "ss-dme"])
def test_guaranteed_kpi_matches_order_statistic(method):
    rng = np.random.default_rng(1)
    t = _exp_table(rng, np.linspace(1, 3, 12), 400)
    gammas = (0.01, 0.05, 0.1, 0.2, 0.3, 0.45)
    r = psdme.bands(t, select="top:4", method=method, gammas=gammas, seed=3)
    sel = r.configs[r.configs["selected"]]
    assert len(sel) == 4
    alpha = r.info["levels"][method]
    data = {c: np.sort(g.to_numpy()) for c, g in t.groupby("config")["kpi"]}
    btab = r.tables["bands"]
    some_finite = some_inf = False
    for _, row in sel.iterrows():
        v = np.sort(btab.loc[btab["config"] == row["config"], "x"].to_numpy())  # the evaluation data
        if method != "ss-dme":
            np.testing.assert_array_equal(v, data[row["config"]])
        eps = float(bd.dkw_epsilon(len(v), alpha))
        assert row["width"] == pytest.approx(eps, rel=1e-12)
        assert row["level"] == pytest.approx(alpha, rel=1e-12)
        for gam in gammas:
            want = _dkw_xstar(v, eps, gam)
            got = row[f"kpi_{1 - gam:g}"]
            assert got == want, (row["config"], gam, got, want)
            some_finite |= math.isfinite(want)
            some_inf |= not math.isfinite(want)
    assert some_finite and some_inf  # both regimes exercised
    # best over the selection = min, in info["best"] and in the trade-off table
    for j, gam in enumerate(gammas):
        col = sel[f"kpi_{1 - gam:g}"]
        assert r.info["best"][j]["best_kpi"] == col.min()
        if math.isfinite(col.min()):
            assert r.info["best"][j]["best_config"] == sel.loc[col.idxmin(), "config"]
        else:
            assert r.info["best"][j]["best_config"] is None
        tr = r.tables["tradeoff"]
        assert tr.loc[np.isclose(tr["gamma"], gam), "best_kpi"].iloc[0] == col.min()
    # trade-off monotone: larger gamma (lower reliability) -> smaller or equal guaranteed KPI
    tr = r.tables["tradeoff"].sort_values("gamma")
    assert tr["gamma"].is_monotonic_increasing
    k = tr["best_kpi"].to_numpy()
    assert np.all(k[1:] <= k[:-1])
    if method == "naive":
        assert any("NO guarantee" in s for s in r.warnings)


def test_infinite_kpi_is_explained_in_notes():
    rng = np.random.default_rng(2)
    t = _exp_table(rng, [1, 2, 3], 30)  # eps > gamma for every gamma in the default (0.01, 0.05, 0.1)
    r = psdme.bands(t, select="top:1")
    assert all(b["best_kpi"] == math.inf for b in r.info["best"])
    assert len([s for s in r.warnings if "can guarantee" in s]) == 3


# --------------------------------------------------------------------------------------------
# Levels
# --------------------------------------------------------------------------------------------


def test_levels_per_method():
    rng = np.random.default_rng(3)
    K, s = 20, 6
    t = _exp_table(rng, np.linspace(1, 2, K), 40)
    for method, want in [("ps-dme", cal.optimal_power_level(K, s, DELTA)), ("bonferroni", DELTA / K),
                         ("naive", DELTA), ("ss-dme", DELTA)]:
        r = psdme.bands(t, select=f"top:{s}", method=method, delta=DELTA, seed=0)
        assert r.info["method_used"] == method
        assert r.configs.loc[r.configs["selected"], "level"].to_numpy() == pytest.approx(want, rel=1e-12)
        assert r.info["levels"][method] == pytest.approx(want, rel=1e-12)
    # power calibrator at tau = 1/2: alpha = ((1 - tau) delta |S| / K)^(1/tau)
    r = psdme.bands(t, select=f"top:{s}", calibrator=0.5)
    want = ((1 - 0.5) * DELTA * s / K) ** 2
    assert r.info["levels"]["ps-dme"] == pytest.approx(want, rel=1e-12)
    assert r.info["tau"] == 0.5
    # the same calibrator as a function: generalised inverse computed numerically
    r2 = psdme.bands(t, select=f"top:{s}", calibrator=lambda p: 0.5 * np.asarray(p, float) ** -0.5)
    assert r2.info["levels"]["ps-dme"] == pytest.approx(want, rel=1e-9)
    # the optimal tau attains exp(W_{-1}(.)) and beats tau = 1/2
    r3 = psdme.bands(t, select=f"top:{s}")
    assert r3.info["tau"] == pytest.approx(cal.optimal_power_tau(K, s, DELTA))
    assert r3.info["levels"]["ps-dme"] > want


# --------------------------------------------------------------------------------------------
# auto
# --------------------------------------------------------------------------------------------


def test_auto_method_choice():
    rng = np.random.default_rng(4)
    K, n = 50, 60
    t = _exp_table(rng, np.linspace(1, 2, K), n)
    thr = math.e * math.log(K / DELTA)  # 16.9
    # small |S|: Bonferroni (split 0.7 keeps SS-DME out of the race)
    r = psdme.bands(t, select="top:3", method="auto", split=0.7, seed=0)
    assert 3 < thr and r.info["method_used"] == "bonferroni"
    assert "e ln(K/delta)" in r.info["method_reason"] and "bonferroni" in r.info["method_reason"]
    assert r.info["bonferroni_threshold"] == pytest.approx(thr)
    # large |S|: PS-DME
    r = psdme.bands(t, select="top:40", method="auto", split=0.7, seed=0)
    assert 40 > thr and r.info["method_used"] == "ps-dme"
    assert r.configs.loc[r.configs["selected"], "level"].iloc[0] == pytest.approx(cal.optimal_power_level(K, 40, DELTA))
    # SS-DME with a small selection split (Lemma 2 crossover: eval fraction rho > ln(2/delta)/ln(2/alpha))
    rho_star = math.log(2 / DELTA) / math.log(2 / cal.optimal_power_level(K, 40, DELTA))
    assert 1 - 0.1 > rho_star
    r = psdme.bands(t, select="top:40", method="auto", split=0.1, seed=0)
    assert r.info["method_used"] == "ss-dme"
    sel = r.configs[r.configs["selected"]]
    assert (sel["n_select"] == 6).all() and (sel["n"] == n - 6).all()
    # each choice agrees with narrowest_method
    for s, split in [(3, 0.7), (40, 0.7), (40, 0.1), (3, 0.5), (16, 0.7), (18, 0.7)]:
        r = psdme.bands(t, select=f"top:{s}", method="auto", split=split, seed=0, include_bands=False)
        want, reason = psdme.narrowest_method(K, s, DELTA, n, split)
        assert r.info["method_used"] == want
        assert r.info["method_reason"] == reason
        # ... and with the Bonferroni crossover between PS-DME and Bonferroni when SS-DME is out
        if split == 0.7:
            assert want == ("bonferroni" if s < thr else "ps-dme")


# --------------------------------------------------------------------------------------------
# Validity by Monte Carlo
# --------------------------------------------------------------------------------------------


def _fcr(select, methods, trials, scales, n, seed, calibrator="optimal"):
    """Per method: mean false coverage proportion over trials, its MC standard error, and the mean |S|.
    Coverage is checked against the exact exponential CDFs on both sides of every jump
    (bd.band_covers) using the bands REPORTED in the result's ``bands`` table. All methods see the
    same data in each trial."""
    rng = np.random.default_rng(seed)
    K = len(scales)
    names = np.array([f"c{i:02d}" for i in range(K)])
    scale = dict(zip(names, scales))
    cfg_col = np.repeat(names, n)
    fcp = {m: np.zeros(trials) for m in methods}
    sizes = {m: np.zeros(trials) for m in methods}
    for t in range(trials):
        tab = pd.DataFrame({"config": cfg_col, "kpi": rng.exponential(np.repeat(scales, n))})
        for m in methods:
            r = psdme.bands(tab, select=select, method=m, calibrator=calibrator, seed=t, gammas=(0.1,),
                            tradeoff_points=0)
            S = r.selected
            sizes[m][t] = len(S)
            if not S:
                continue
            bt = r.tables["bands"]
            cols = {k: bt[k].to_numpy(float) for k in ("x", "lower", "upper", "lower_left", "upper_left")}
            cfg = bt["config"].to_numpy()
            miss = 0
            for c in S:
                idx = np.flatnonzero(cfg == c)
                b = SimpleNamespace(**{k: v[idx][None, :] for k, v in cols.items()})
                miss += not bool(bd.band_covers(b, lambda x, s=scale[c]: stats.expon.cdf(x, scale=s))[0])
            fcp[m][t] = miss / len(S)
    return {m: (fcp[m].mean(), fcp[m].std(ddof=1) / math.sqrt(trials), sizes[m].mean()) for m in methods}


def test_reported_band_equals_recomputed_band():
    rng = np.random.default_rng(5)
    t = _exp_table(rng, np.linspace(1, 2, 10), 50)
    for band, fn in [("dkw", bd.dkw_band), ("berk-jones", bd.bj_band)]:
        r = psdme.bands(t, select="top:3", band=band)
        for _, row in r.configs[r.configs["selected"]].iterrows():
            v = t.loc[t["config"] == row["config"], "kpi"].to_numpy()
            ref = fn(v, row["level"])
            got = _band_from_table(r.tables["bands"], row["config"])
            for k in ("x", "lower", "upper", "lower_left", "upper_left"):
                np.testing.assert_allclose(getattr(got, k)[0], getattr(ref, k), rtol=0, atol=1e-15)


#: 200 trials a study (400 before): the FCR floor delta + 3 MC s.e. is 0.164 (0.145 at 400). Every band these studies
#: check, made 20% narrower on each side of its ECDF (a deliberately broken method), has an FCR of 0.29 to 0.34
#: over these 200 trials, so each check fails it; 10% narrower, PS-DME's FCR is 0.160 (top:5) and 0.160 (below:1.3),
#: under the 200-trial floor (the 400-trial check caught them at 0.166 and 0.164), SS-DME's 0.220 and 0.198 over it
MC_TRIALS = 200


def _bound(se, trials=MC_TRIALS):
    # delta + 3 MC standard errors (the se at FCR = delta when the observed FCP is degenerate at 0)
    return DELTA + 3 * max(se, math.sqrt(DELTA * (1 - DELTA) / trials))


@pytest.mark.slow
def test_fcr_controlled_top5():
    # 200 trials: FCR 0.000 (PS-DME), 0.088 (SS-DME), 0.003 (Bonferroni); the bands 20% narrower 0.311, 0.344, 0.320
    out = _fcr("top:5", ["ps-dme", "ss-dme", "bonferroni"], MC_TRIALS, np.linspace(1.0, 3.0, 50), 50, seed=10)
    print("K=50 Exp(scale 1..3), n=50, top:5: " + ", ".join(f"{m} FCR {f:.4f} (se {s:.4f})" for m, (f, s, _) in out.items()))
    for m, (fcr, se, size) in out.items():
        assert size == 5
        assert fcr <= _bound(se), m


@pytest.mark.slow
def test_fcr_controlled_data_dependent_selection():
    # below:VALUE makes |S| random: PS-DME with a calibrator fixed in advance (tau = 0.5)
    # 200 trials: FCR 0.000 (PS-DME), 0.075 (SS-DME); the bands 20% narrower 0.307, 0.334
    out = _fcr("below:1.3", ["ps-dme", "ss-dme"], MC_TRIALS, np.linspace(1.0, 3.0, 50), 50, seed=11,
               calibrator=0.5)
    print("K=50, n=50, below:1.3, tau=0.5: " + ", ".join(f"{m} FCR {f:.4f} (se {s:.4f}, mean |S| {z:.1f})"
                                                         for m, (f, s, z) in out.items()))
    for m, (fcr, se, size) in out.items():
        assert 1 < size < 20
        assert fcr <= _bound(se), m


def test_data_dependent_selection_fixes_tau_before_the_data():
    """below:VALUE: the default ("optimal") calibrator must not be tuned on the realised |S| (Theorem 1 needs it
    fixed in advance). Its tau comes from K and the declared max |S|, and the printed guarantee says so."""
    rng = np.random.default_rng(3)
    t = _exp_table(rng, np.linspace(1.0, 3.0, 20), 60)
    r = psdme.bands(t, select="below:1.4", seed=0)
    S = len(r.selected)
    assert 0 < S < 20
    assert r.info["tau"] == pytest.approx(cal.optimal_power_tau(20, 20, DELTA))
    assert r.info["tau"] != pytest.approx(cal.optimal_power_tau(20, S, DELTA))
    assert r.info["levels"]["ps-dme"] == pytest.approx(cal.power_level(20, S, DELTA, r.info["tau"]))
    assert "fixed before the data" in r.level["meaning"] and "declared maximum" in r.info["tau_basis"]
    r5 = psdme.bands(t, select="below:1.4", seed=0, max_selected=5)
    assert r5.info["tau"] == pytest.approx(cal.optimal_power_tau(20, 5, DELTA))
    # a rule that fixes |S| keeps the optimal tau for that size, and says which rules the statement covers
    top = psdme.bands(t, select="top:4", seed=0)
    assert top.info["tau"] == pytest.approx(cal.optimal_power_tau(20, 4, DELTA))
    assert "keeping |S| = 4" in top.level["meaning"]
    with pytest.raises(AssayInputError, match="max_selected"):
        psdme.bands(t, select="below:1.4", max_selected=0)
    with pytest.raises(AssayInputError, match="max_selected"):
        psdme.bands(t, select="below:1.4", max_selected=3, calibrator=0.5)


def test_fcr_controlled_below_value_with_the_default_calibrator():
    # 100 trials (200 before; floor 0.190): FCR 0.002; the bands 20% narrower 0.322, caught; 10% narrower 0.162,
    # caught by neither size (0.158 of 200 against 0.164)
    out = _fcr("below:1.3", ["ps-dme"], 100, np.linspace(1.0, 3.0, 50), 50, seed=12)
    fcr, se, size = out["ps-dme"]
    assert 1 < size < 20
    assert fcr <= _bound(se, 100)


@pytest.mark.slow
def test_naive_fails_under_selection_bias():
    """50 configurations with the SAME Exp(1) law; keep the 2 with the smallest sample mean. Their
    samples are atypically small, so their ECDFs sit above F: the naive level-delta band misses F far
    more often than delta. PS-DME on the same data stays below delta (Theorem 1).

    200 trials: naive FCR 0.460 (s.e. 0.027; 0.45 of 400), PS-DME 0.000; PS-DME's bands 20% narrower 0.288 (floor
    0.167), so the check fails them."""
    out = _fcr("top:2", ["naive", "ps-dme"], MC_TRIALS, np.ones(50), 50, seed=12)
    (naive, se_n, _), (ps, se_p, _) = out["naive"], out["ps-dme"]
    print(f"identical Exp(1), K=50, n=50, top:2, delta={DELTA}: naive FCR {naive:.3f} (se {se_n:.3f}), "
          f"ps-dme FCR {ps:.3f} (se {se_p:.3f})")
    assert naive > DELTA + 3 * se_n
    assert ps <= _bound(se_p)


# --------------------------------------------------------------------------------------------
# Berk-Jones
# --------------------------------------------------------------------------------------------


def test_berk_jones_narrower_in_upper_tail():
    rng = np.random.default_rng(6)
    t = _exp_table(rng, np.linspace(1, 2, 20), 2000)
    kw = dict(select="top:3", gammas=(0.01, 0.05), tradeoff_points=0)
    rd = psdme.bands(t, band="dkw", **kw)
    rb = psdme.bands(t, band="bj", **kw)
    assert rb.params["band"] == "berk-jones"
    sd, sb = (r.configs[r.configs["selected"]].set_index("config") for r in (rd, rb))
    assert list(sd.index) == list(sb.index)
    # DKW eps ~ 0.044 > 0.01: no 99% guarantee; BJ (critical value ~ 0.005 in KL) reaches 0.99
    assert np.isinf(sd["kpi_0.99"]).all()
    assert np.isfinite(sb["kpi_0.99"]).all()
    assert np.isfinite(sd["kpi_0.95"]).all() and (sb["kpi_0.95"] < sd["kpi_0.95"]).all()
    # the BJ lower bound is above the DKW lower bound in the upper tail (Fhat >= 0.95)
    for c in sd.index:
        bD, bB = (r.tables["bands"][r.tables["bands"]["config"] == c] for r in (rd, rb))
        tail = bD["ecdf"].to_numpy() >= 0.95
        assert (bB["lower"].to_numpy()[tail] >= bD["lower"].to_numpy()[tail]).all()


# --------------------------------------------------------------------------------------------
# Failures (+inf)
# --------------------------------------------------------------------------------------------


def _with_failures(rng, n=200, frac=0.3):
    good = {f"g{i}": rng.exponential(1.0, n) for i in range(4)}
    bad = rng.exponential(0.2, n)  # very fast when it works...
    bad[rng.random(n) < frac] = np.inf  # ... but 30% of its requests fail
    good["flaky"] = bad
    return _table(good)


def test_failures_rejected_by_default():
    t = _with_failures(np.random.default_rng(7))
    with pytest.raises(AssayInputError, match="failures='worst'"):
        psdme.bands(t)
    with pytest.raises(AssayInputError, match="failures"):
        psdme.bands(t, failures="drop")


def test_failures_worst_counted_when_not_selected():
    t = _with_failures(np.random.default_rng(7))
    r = psdme.bands(t, select="top:2", failures="worst")
    c = r.configs.set_index("config")
    assert c.loc["flaky", "failures"] > 30 and not c.loc["flaky", "selected"]
    assert c.loc["flaky", "mean"] == math.inf  # a config with failures never has the smallest mean
    assert (c.drop(index="flaky")["failures"] == 0).all()


def test_failures_worst_selected_config_cannot_exceed_success_rate():
    t = _with_failures(np.random.default_rng(7), n=400, frac=0.3)
    r = psdme.bands(t, select="all", failures="worst", gammas=(0.05, 0.2, 0.5), method="naive")
    c = r.configs.set_index("config")
    assert c.loc["flaky", "failures"] > 80
    succ = 1 - c.loc["flaky", "failures"] / c.loc["flaky", "n"]  # about 0.7
    assert np.isinf(c.loc["flaky", "kpi_0.95"]) and np.isinf(c.loc["flaky", "kpi_0.8"])
    assert np.isfinite(c.loc["flaky", "kpi_0.5"]) and succ > 0.5


# --------------------------------------------------------------------------------------------
# Bad input
# --------------------------------------------------------------------------------------------


@pytest.fixture
def small():
    return _exp_table(np.random.default_rng(8), [1, 2, 3], 20)


@pytest.mark.parametrize("bad", [np.nan, -np.inf, "fast"])
def test_bad_kpi_values(small, bad):
    t = small.astype({"kpi": object})
    t.loc[5, "kpi"] = bad
    with pytest.raises(AssayInputError, match="kpi"):
        psdme.bands(t)


def test_bad_tables(small):
    with pytest.raises(AssayInputError, match="empty"):
        psdme.bands(small.iloc[:0])
    one = pd.concat([small, pd.DataFrame({"config": ["lonely"], "kpi": [1.0]})], ignore_index=True)
    with pytest.raises(AssayInputError, match="lonely"):
        psdme.bands(one)
    with pytest.raises(AssayInputError):
        psdme.bands(small.rename(columns={"kpi": "latency"}))
    psdme.bands(small.rename(columns={"kpi": "latency"}), columns={"kpi": "latency"})


@pytest.mark.parametrize("kw", [
    {"delta": 0.0}, {"delta": 1.0}, {"delta": -0.1}, {"delta": 1.5}, {"delta": "0.1"}, {"delta": None},
    {"delta": True}, {"delta": np.nan}, {"method": "magic"}, {"band": "ks"}, {"split": 0.0}, {"split": 1.0},
    {"split": -0.2}, {"gammas": (0.0,)}, {"gammas": (1.0,)}, {"gammas": (0.1, 1.2)}, {"gammas": ()},
    {"gammas": (np.nan,)}, {"select": "best three"}, {"select": "top:0"}, {"calibrator": 1.5},
    {"calibrator": "bogus"},
])
def test_bad_arguments(small, kw):
    with pytest.raises(AssayInputError):
        psdme.bands(small, **kw)


@pytest.mark.parametrize("kw", [{"split": "half"}, {"gammas": ("a",)}])
def test_bad_arguments_non_numeric(small, kw):
    try:
        psdme.bands(small, **kw)
    except AssayInputError:
        return
    pytest.fail("no AssayInputError")


def test_selection_callable(small):
    with pytest.raises(AssayInputError, match="unknown configurations"):
        psdme.bands(small, select=lambda d: ["c00", "nope"])
    seen = {}

    def pick(d):
        seen.update(d)
        return ["c02", "c00", "c02"]

    r = psdme.bands(small, select=pick)
    assert r.selected == ["c02", "c00"]
    assert set(seen) == {"c00", "c01", "c02"} and all(np.all(np.diff(v) >= 0) for v in seen.values())


def test_empty_selection_is_explicit(small):
    r = psdme.bands(small, select="below:-1")
    assert r.selected == []
    assert r.info["selected_count"] == 0
    assert r.tables["bands"].empty and r.tables["tradeoff"].empty
    assert not r.configs["selected"].any() and len(r.configs) == 3
    assert any("selection is empty" in s for s in r.warnings)
    assert all(b["best_kpi"] == math.inf and b["best_config"] is None for b in r.info["best"])


# --------------------------------------------------------------------------------------------
# JSON, scipy cross-checks
# --------------------------------------------------------------------------------------------


def test_json_round_trip(small):
    r = psdme.bands(small, select="top:2", gammas=(0.01, 0.3))
    r2 = Result.from_json(r.to_json())
    assert isinstance(r2, psdme.PsdmeResult)
    pd.testing.assert_frame_equal(r2.configs, r.configs, check_dtype=False)
    assert r2.selected == r.selected
    assert r2.info["method_used"] == "ps-dme"


def test_ecdf_matches_scipy_continuous():
    rng = np.random.default_rng(9)
    t = _exp_table(rng, [1, 2], 80)
    r = psdme.bands(t, select="all")
    for c, g in t.groupby("config")["kpi"]:
        b = r.tables["bands"][r.tables["bands"]["config"] == c]
        ref = stats.ecdf(g.to_numpy()).cdf.evaluate(b["x"].to_numpy())
        np.testing.assert_allclose(b["ecdf"].to_numpy(), ref, rtol=0, atol=1e-15)


def test_ecdf_matches_scipy_with_ties():
    rng = np.random.default_rng(9)
    t = _table({"a": rng.integers(0, 5, 60).astype(float), "b": rng.integers(0, 5, 60).astype(float)})
    r = psdme.bands(t, select="all", method="naive")
    for c, g in t.groupby("config")["kpi"]:
        b = r.tables["bands"][r.tables["bands"]["config"] == c]
        ref = stats.ecdf(g.to_numpy()).cdf.evaluate(b["x"].to_numpy())
        np.testing.assert_allclose(b["ecdf"].to_numpy(), ref, rtol=0, atol=1e-15)


@pytest.mark.parametrize("n", [20, 50, 150, 500])
@pytest.mark.parametrize("alpha", [0.1, 0.01, 1e-4])
def test_dkw_eps_not_below_exact_ks_quantile(n, alpha):
    r"""Massart's DKW eps is conservative: >= the exact two-sided KS (1 - alpha) quantile (scipy kstwo)."""
    eps = float(bd.dkw_epsilon(n, alpha))
    assert eps >= stats.kstwo.ppf(1 - alpha, n)
    assert eps <= stats.kstwo.ppf(1 - alpha, n) * 1.2  # ... and not absurdly so


def test_result_width_is_dkw_eps_at_reported_level():
    rng = np.random.default_rng(10)
    t = _exp_table(rng, np.linspace(1, 2, 19), 150)
    r = psdme.bands(t, select="top:5")
    sel = r.configs[r.configs["selected"]]
    a = cal.optimal_power_level(19, 5, DELTA)
    assert sel["width"].to_numpy() == pytest.approx(cal.optimal_halfwidth(150, 19, 5, DELTA))
    assert (sel["width"] >= stats.kstwo.ppf(1 - a, 150)).all()


# --------------------------------------------------------------------------------------------
# Real data: LLMPerf leaderboard
# --------------------------------------------------------------------------------------------


def test_load_llmperf():
    df = load_llmperf()
    assert list(df.columns) == ["config", "ttft_s", "end_to_end_latency_s", "error"]
    assert len(df) == 2845 and df["config"].nunique() == 19
    assert "llmperf" in SHIPPED and SHIPPED["llmperf"][0] == "llmperf_ttft.parquet"
    err = df["error"]
    assert err.sum() == 539
    assert np.isinf(df.loc[err, "ttft_s"]).all() and np.isinf(df.loc[err, "end_to_end_latency_s"]).all()
    assert np.isfinite(df.loc[~err, "ttft_s"]).all() and (df.loc[~err, "ttft_s"] > 0).all()
    per = df.groupby("config")["error"].sum()
    assert per["lepton_7b"] == 130 and per["bedrock_13b"] == 97 and per["anyscale_7b"] == 0


REAL_GAMMAS = (0.01, 0.05, 0.1, 0.2, 0.3)


@pytest.mark.parametrize("method", ["ps-dme", "bonferroni", "ss-dme", "naive", "auto"])
@pytest.mark.parametrize("band", ["dkw", "berk-jones"])
def test_llmperf_real(method, band):
    df = load_llmperf()
    r = psdme.bands(df, select="top:5", method=method, band=band, failures="worst", columns={"kpi": "ttft_s"},
                    gammas=REAL_GAMMAS, seed=2024)
    assert len(r.selected) == 5
    errored = {"lepton_7b", "lepton_13b", "lepton_70b", "bedrock_13b", "bedrock_70b"}
    assert not errored & set(r.selected)
    for b in r.info["best"]:
        assert b["best_config"] not in errored
    c = r.configs.set_index("config")
    assert (c.loc[sorted(errored), "failures"] >= 49).all()
    best = {f"{b['reliability']:g}": b["best_kpi"] for b in r.info["best"]}
    cfg = {f"{b['reliability']:g}": b["best_config"] for b in r.info["best"]}
    print(f"LLMPerf TTFT top:5 {method} ({r.info['method_used']}) {band}: best guaranteed TTFT "
          + ", ".join(f"{k}: {v:.3f}s ({cfg[k]})" for k, v in best.items()))
    # the guarantee weakens (KPI grows) with the reliability
    vals = [best[f"{1 - g:g}"] for g in REAL_GAMMAS]
    assert all(a >= b for a, b in zip(vals, vals[1:]))
    assert math.isfinite(best["0.7"])


def test_llmperf_all_configs_errored_never_best():
    df = load_llmperf()
    r = psdme.bands(df, select="all", method="bonferroni", failures="worst", columns={"kpi": "ttft_s"},
                    gammas=(0.05, 0.2, 0.5))
    errored = {"lepton_7b", "lepton_13b", "lepton_70b", "bedrock_13b"}  # success rate <= 35%
    c = r.configs.set_index("config")
    assert np.isinf(c.loc[sorted(errored), ["kpi_0.95", "kpi_0.8", "kpi_0.5"]].to_numpy()).all()
    for b in r.info["best"]:
        assert b["best_config"] not in errored


def test_band_on_a_user_grid_matches_the_band_at_the_data():
    import assay.psdme as ps

    rng = np.random.default_rng(91)
    df = pd.concat([pd.DataFrame({"config": f"c{k}", "kpi": rng.exponential(1 + 0.2 * k, 60)}) for k in range(8)])
    res = ps.bands(df, select="top:3", band="berk-jones", grid=[0.5, 1.0, 2.0], seed=0)
    g = res.tables["grid"]
    assert len(g) == 9 and set(g["config"]) == set(res.selected)
    bands = res.tables["bands"]
    for cfg in res.selected:
        b = bands[bands["config"] == cfg].sort_values("x")
        for x in (0.5, 1.0, 2.0):
            row = g[(g["config"] == cfg) & (g["x"] == x)].iloc[0]
            below = b[b["x"] <= x]
            # right-continuous value at x: the band at the last data point <= x (or the value before the first)
            expect = below.iloc[-1]["lower"] if len(below) else b.iloc[0]["lower_left"]
            assert row["lower"] == pytest.approx(expect)
            assert row["lower_left"] <= row["lower"] + 1e-12 and row["upper_left"] <= row["upper"] + 1e-12
    with pytest.raises(AssayInputError):
        ps.bands(df, grid=[np.nan])


# --------------------------------------------------------------------------------------------
# The layers: prepare (data), the array core, the entry (issue 17)
# --------------------------------------------------------------------------------------------


def test_prepare_lives_in_the_data_layer(small):
    from assay.data.psdme import prepare

    data = prepare(small.rename(columns={"kpi": "lat"}), columns={"kpi": "lat"})
    assert list(data) == ["c00", "c01", "c02"] and all(np.all(np.diff(v) >= 0) for v in data.values())
    assert psdme.prepare is prepare
    with pytest.raises(AssayInputError, match="failures"):
        prepare(small, failures="drop")


@pytest.mark.parametrize("method", ["ps-dme", "bonferroni", "naive", "ss-dme"])
@pytest.mark.parametrize("band", ["dkw", "berk-jones"])
def test_core_on_arrays_matches_bands(method, band):
    rng = np.random.default_rng(12)
    t = _exp_table(rng, np.linspace(1, 2, 9), 40)
    gammas = (0.05, 0.2, 0.4)
    r = psdme.bands(t, select="top:3", method=method, band=band, gammas=gammas, tradeoff_points=0, seed=4)
    samples = [np.sort(g.to_numpy()) for _, g in t.groupby("config", sort=False)["kpi"]]  # plain numpy from here
    sel = None
    if method == "ss-dme":
        from assay.seeds import resolve_seed

        sel, samples = psdme.split_samples(samples, 0.5, resolve_seed(4).rng())
    fit = psdme.core(samples, sel, delta=0.1, select="top:3", method=method, band=band, gammas=gammas)
    assert isinstance(fit, psdme.PsdmeCore)
    assert [f"c{i:02d}" for i in fit.selected] == r.selected
    assert fit.alpha == r.info["levels"][method] and fit.levels == r.info["levels"]
    cfg = r.configs[r.configs["selected"]]
    np.testing.assert_array_equal(fit.width, cfg["width"].to_numpy())
    for j, g in enumerate(gammas):
        np.testing.assert_array_equal(fit.x_star[:, j], cfg[f"kpi_{1 - g:g}"].to_numpy())
        assert fit.best[j] == r.info["best"][j]["best_kpi"]
    np.testing.assert_array_equal(fit.x_star, psdme.guaranteed_kpi(fit.band, gammas))
    # a (K, n) matrix gives the same numbers as the list of its rows
    if method != "ss-dme":
        fit2 = psdme.core(np.vstack(samples), delta=0.1, select="top:3", method=method, band=band, gammas=gammas)
        np.testing.assert_array_equal(fit2.x_star, fit.x_star)
        np.testing.assert_array_equal(fit2.selected, fit.selected)


def test_core_selection_rules_and_errors():
    rng = np.random.default_rng(13)
    samples = [np.sort(rng.exponential(s, 30)) for s in (1.0, 3.0, 0.5, 2.0)]
    np.testing.assert_array_equal(psdme.select_configurations("top:2", samples), [2, 0])
    np.testing.assert_array_equal(psdme.select_configurations("all", samples), [0, 1, 2, 3])
    below = psdme.select_configurations("below:1.5", samples)
    assert all(np.mean(samples[i]) < 1.5 for i in below)
    np.testing.assert_array_equal(psdme.select_configurations(lambda d: [3, 1, 3], samples), [3, 1])
    np.testing.assert_array_equal(psdme.select_configurations(lambda d: ["d", "b"], samples, names="abcd"), [3, 1])
    fit = psdme.core(samples, delta=0.1, select="below:-1")
    assert fit.selected.size == 0 and fit.band is None and np.isinf(fit.best).all() and (fit.best_index == -1).all()
    # a data-dependent rule: tau fixed from the declared maximum size, before the data
    fit = psdme.core(samples, delta=0.1, select="below:1.5", max_selected=2)
    assert fit.tau == pytest.approx(cal.optimal_power_tau(4, 2, 0.1))
    for kw, match in [({"method": "auto"}, "method"), ({"method": "ss-dme"}, "select_samples"),
                      ({"delta": 1.0}, "delta"), ({"band": "ks"}, "band"), ({"gammas": (1.0,)}, "gammas")]:
        with pytest.raises(AssayInputError, match=match):
            psdme.core(samples, **{"delta": 0.1, **kw})
    with pytest.raises(AssayInputError, match="NaN"):
        psdme.core([np.array([1.0, np.nan])], delta=0.1)
    with pytest.raises(AssayInputError, match="configuration"):
        psdme.core([], delta=0.1)


def test_result_packaging_warnings_seed_and_vocabulary(small):
    r = psdme.bands(small, select="below:-1", seed=np.random.default_rng(1), method="ss-dme")
    assert r.warnings == r.info["warnings"] and "notes" not in r.info
    assert r.seed is None and r.info["seed_source"] == "generator"
    assert r.level["delta"] == 0.1 and r.n_meaning.startswith("observations")
    assert r.n == len(small[small["config"] == "c00"])
    with pytest.raises(AssayInputError, match="bands"):
        r.confidence_interval()
    # seed=None records an int that repeats the run
    a = psdme.bands(small, method="ss-dme", select="top:2")
    b = psdme.bands(small, method="ss-dme", select="top:2", seed=a.seed)
    assert isinstance(a.seed, int)
    pd.testing.assert_frame_equal(a.configs, b.configs)
    # a result file written when the warnings were called notes still reads
    d = r.to_dict()
    d["notes"] = d.pop("warnings")
    assert Result.from_dict(d).warnings == r.warnings


def test_public_names():
    for name in psdme.__all__:
        assert hasattr(psdme, name), name


def test_tradeoff_points_must_be_a_count():
    from assay.datasets import load_llmperf

    for bad in (-1, 2.5, True):
        with pytest.raises(AssayInputError, match="tradeoff_points"):
            psdme.bands(load_llmperf(), select="top:3", columns={"kpi": "ttft_s"}, failures="worst",
                        tradeoff_points=bad)
