"""PS-DME synthetic ridge study (assay.studies.psdme, paper Sec. 5.2, Table 1, Fig. 3, Fig. 6)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from assay import psdme as ps
from assay.parallel import resolve_seed
from assay.stats import calibrate as cal
from assay.studies import run_study
from assay.studies import psdme as st

# one worker runs this module: its module-scoped fixtures are computed once, not on each xdist worker
# slow (make check leaves it out): a long Monte Carlo study
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("psdme_study")]


#: 30 trials (60 before; 4.8 s instead of 9 s). The FCR check's limit 0.1 + 3 s.e. is the trials' own: PS-DME,
#: SS-DME and Bonferroni measured 0.024, 0.035, 0.000 (n = 20) and 0.032, 0.157, 0.001 (n = 100) against 0.171, 0.145,
#: 0.101 and 0.195, 0.268, 0.104. Their bands made 20% narrower on each side of the ECDF (deliberately broken) have
#: FCRs of 0.33 to 0.59, over the limit for all three methods at both n (as with 60 trials); 10% narrower, only SS-DME
#: fails (0.305 and 0.333), as with 60 trials. The trade-off and width checks hold as they did with 60
TRIALS = 30


@pytest.fixture(scope="module")
def reduced():
    return run_study("psdme-ridge", trials=TRIALS, ns=(20, 100), band="dkw", seed=3)


def _fcr(res, n, method):
    r = res.rows
    return r[(r["kind"] == "fcr") & (r["n"] == n) & (r["method"] == method)].iloc[0]


def test_rows_carry_documented_columns(reduced):
    r = reduced.rows
    assert set(r["kind"]) == {"fcr", "tradeoff", "width-curve"}
    fcr = r[r["kind"] == "fcr"]
    for c in ("n", "method", "band", "fcr", "fcr_se", "width", "analytic_width", "trials", "paper_fcr",
              "paper_width", "level", "miss_any", "kpi_0.9", "kpi_inf_0.9"):
        assert c in fcr.columns, c
    assert set(fcr["method"]) == {"ps-dme", "ss-dme", "bonferroni", "naive"}
    assert set(fcr["n"]) == {20, 100}
    assert (fcr["trials"] == TRIALS).all()
    assert _fcr(reduced, 20, "ss-dme")["paper_fcr"] == 0.0401
    assert _fcr(reduced, 100, "ps-dme")["paper_fcr"] == 0.0
    tr = r[r["kind"] == "tradeoff"]
    for c in ("reliability", "gamma", "best_kpi", "best_kpi_se", "n_inf", "oracle_kpi", "split"):
        assert c in tr.columns, c
    assert sorted(tr.loc[tr["method"] == "ss-dme", "split"].unique()) == [0.5, 0.6, 0.7]
    wc = r[r["kind"] == "width-curve"]
    assert {"ratio", "width_unit", "tau", "crossover"} <= set(wc.columns)


def test_fcr_control_and_widths(reduced):
    for n in (20, 100):
        for m in ("ps-dme", "ss-dme", "bonferroni"):
            row = _fcr(reduced, n, m)
            assert row["fcr"] <= 0.1 + 3 * row["fcr_se"] + 1e-12, (n, m, row["fcr"])
        for m in ("ps-dme", "ss-dme", "bonferroni", "naive"):
            row = _fcr(reduced, n, m)
            assert row["width"] == pytest.approx(row["analytic_width"], rel=1e-12)
    # notes/psdme.md section 3 (K = 2000, |S| = 1000, delta = 0.1)
    assert _fcr(reduced, 20, "ps-dme")["width"] == pytest.approx(0.4012, abs=5e-5)
    assert _fcr(reduced, 100, "ps-dme")["width"] == pytest.approx(0.1794, abs=5e-5)
    assert _fcr(reduced, 20, "ss-dme")["width"] == pytest.approx(0.3870, abs=5e-5)
    assert _fcr(reduced, 100, "ss-dme")["width"] == pytest.approx(0.1731, abs=5e-5)
    assert st.analytic_width("ps-dme", 20, 2000, 1000) == pytest.approx(0.4012, abs=5e-5)
    assert st.analytic_width("ss-dme", 100, 2000, 1000, split=0.5) == pytest.approx(0.1731, abs=5e-5)


def test_naive_fails_under_top1_selection():
    # With M = 1000 of 2000 the naive bands stay below delta here (the models are nearly identical and
    # share one calibration sample, so selecting half of them biases little): measured 0.094 (n = 20) and
    # 0.047 (n = 100) over 100 trials. Choosing the single best model (top-1) shows the failure: over 500 trials the
    # naive FCR is 0.148 (s.e. 0.016) against 0.1 + 2 s.e. = 0.132 (1,000 trials: 0.133, s.e. 0.011, against 0.121)
    res = run_study("psdme-ridge", trials=500, ns=(20,), M=1, methods=("naive",), splits=(), seed=1)
    row = _fcr(res, 20, "naive")
    assert row["fcr"] > 0.1 + 2 * row["fcr_se"], (row["fcr"], row["fcr_se"])


def test_tradeoff_follows_lemma2(reduced):
    r = reduced.rows
    tr = r[r["kind"] == "tradeoff"]

    def curve(n, method, split=None):
        t = tr[(tr["n"] == n) & (tr["method"] == method)]
        if split is not None:
            t = t[t["split"] == split]
        return t.set_index("reliability")

    # n = 100: n_eval / n = 0.4 and 0.3 are below the crossover 0.465, so PS-DME guarantees lower KPIs
    ps100 = curve(100, "ps-dme")
    for sp in (0.6, 0.7):
        ss = curve(100, "ss-dme", sp)
        both = ps100.index[(ps100["n_inf"] == 0) & (ss["n_inf"] == 0)]
        assert len(both) >= 10
        diff = ss.loc[both, "best_kpi"] - ps100.loc[both, "best_kpi"]
        se = np.hypot(ss.loc[both, "best_kpi_se"], ps100.loc[both, "best_kpi_se"])
        assert (diff > -3 * se).all()
        assert diff.mean() > 0
        # PS-DME reaches at least every reliability that SS-DME reaches
        assert (ps100["n_inf"] <= ss["n_inf"]).all()
    # n = 20 with a 50/50 split: n_eval / n = 0.5 exceeds the crossover 0.465, so SS-DME is the narrower
    # band (0.3870 < 0.4012) and, contrary to the paper's Fig. 3, PS-DME does NOT guarantee a lower KPI.
    ps20, ss20 = curve(20, "ps-dme"), curve(20, "ss-dme", 0.5)
    assert ps20.loc[0.5, "best_kpi"] >= ss20.loc[0.5, "best_kpi"]
    assert (ss20["n_inf"] <= ps20["n_inf"]).all()
    # all guaranteed KPIs are above the oracle quantile (FCR control makes them conservative)
    fin = tr[tr["n_inf"] == 0]
    assert (fin["best_kpi"] >= fin["oracle_kpi"]).all()


def test_width_curve_and_crossover(reduced):
    r = reduced.rows
    wc = r[r["kind"] == "width-curve"]
    delta, K, S = 0.1, st.CURVE_K, st.CURVE_S
    assert delta * S / K == pytest.approx(0.01)
    a_star = cal.optimal_power_level(K, S, delta)
    x_star = math.log(2 / delta) / math.log(2 / a_star)
    opt = wc[(wc["method"] == "ps-dme") & (wc["tau_label"] == "tau*")]
    assert opt["crossover"].iloc[0] == pytest.approx(x_star, rel=1e-12)
    assert opt["width_unit"].iloc[0] == pytest.approx(math.sqrt(math.log(2 / a_star)), rel=1e-12)
    ssw = wc[wc["method"] == "ss-dme"].set_index("ratio")["width_unit"]
    # at the crossover the two widths are equal (Lemma 2)
    assert math.sqrt(math.log(2 / delta) / x_star) == pytest.approx(opt["width_unit"].iloc[0], rel=1e-12)
    for ratio, w in ssw.items():
        assert (w > opt["width_unit"].iloc[0]) == (ratio < x_star)
    # tau* gives the largest crossover among the power calibrators (Fig. 6)
    others = wc[(wc["method"] == "ps-dme") & (wc["tau_label"] != "tau*")].groupby("tau")["crossover"].first()
    assert (others < x_star).all()
    for tau, xo in others.items():
        assert xo == pytest.approx(math.log(2 / delta) / math.log(2 / cal.power_level(K, S, delta, tau)), rel=1e-12)
    # the study's own design: notes' 0.465 (K = 2000, |S| = 1000)
    assert reduced.info["crossover"]["study_design"] == pytest.approx(0.465, abs=5e-4)
    assert reduced.info["tau_star"] == pytest.approx(0.8259, abs=5e-5)
    assert reduced.info["levels"]["ps-dme"] == pytest.approx(3.202e-3, rel=1e-3)


@pytest.mark.parametrize("band", ["dkw", "berk-jones"])
@pytest.mark.parametrize("n", [20, 100])
def test_one_trial_matches_psdme_bands(n, band):
    rng = np.random.default_rng(11)
    models = st.ridge_models(rng, K=300)
    X = np.sort(st.calibration_kpis(rng, models["beta"], models["B"], n), axis=1)
    K, M = X.shape[0], 150
    names = [f"k{k:04d}" for k in range(K)]
    table = pd.DataFrame({"config": np.repeat(names, n), "kpi": X.ravel()})
    gammas = np.array([0.3, 0.4, 0.5])
    seed = 5
    for method in ("ps-dme", "ss-dme", "bonferroni", "naive"):
        lib = ps.bands(table, select=f"top:{M}", method=method, band=band, split=0.5, seed=seed,
                       gammas=gammas, tradeoff_points=0, include_bands=False)
        perm = None
        if method == "ss-dme":  # replicate the library's per-configuration split
            r = np.random.default_rng(resolve_seed(seed)[1])
            perm = np.stack([r.permutation(n) for _ in range(K)])
        S, b, alpha = st.select_and_band(X, method, M, band=band, split=0.5, perm=perm)
        cfg = lib.configs[lib.configs["selected"].astype(bool)]
        assert list(cfg["config"]) == [names[k] for k in S]
        assert alpha == lib.info["levels"][method]
        np.testing.assert_array_equal(cfg["width"].to_numpy(), b.width)
        xs = ps.guaranteed_kpi(b, gammas)
        for j, g in enumerate(gammas):
            np.testing.assert_array_equal(cfg[f"kpi_{1 - g:g}"].to_numpy(), xs[:, j])


def test_true_cdf_is_exact():
    rng = np.random.default_rng(0)
    models = st.ridge_models(rng, K=4)
    X = st.calibration_kpis(rng, models["beta"], models["B"], 200_000)
    F = st.true_cdf(models["s2"])
    q = np.quantile(X, [0.1, 0.5, 0.9], axis=1).T  # (K, 3)
    np.testing.assert_allclose(F(q), np.broadcast_to([0.1, 0.5, 0.9], q.shape), atol=4e-3)


def test_workers_do_not_change_numbers():
    a = run_study("psdme-ridge", trials=12, ns=(20,), K=200, M=100, seed=2, workers=1)
    b = run_study("psdme-ridge", trials=12, ns=(20,), K=200, M=100, seed=2, workers=2)
    pd.testing.assert_frame_equal(a.rows, b.rows)
