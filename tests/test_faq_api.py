"""assay.faq.evaluate / protocol: wiring, determinism, coverage on a synthetic world, bad input."""

import json

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit

import assay.faq as faq
from assay.errors import AssayInputError, AssayBackendError
from assay.faq import FactorModel, FAQParams


def world(n_hist=120, n_new=60, N=150, k=3, seed=0, missing=0.0):
    rng = np.random.default_rng(seed)
    V = rng.normal(size=(N, k))
    U = rng.normal(size=(n_hist + n_new, k)) + np.array([-0.8] + [0] * (k - 1))
    Z = (rng.random((n_hist + n_new, N)) < expit(U @ V.T)).astype(float)
    items = [f"q{j}" for j in range(N)]
    hist = pd.DataFrame(Z[:n_hist], index=[f"h{i}" for i in range(n_hist)], columns=items)
    if missing:
        mask = rng.random(hist.shape) < missing
        hist = hist.mask(mask)
    new = pd.DataFrame(Z[n_hist:], index=[f"n{i}" for i in range(n_new)], columns=items)
    return hist, new


@pytest.fixture(scope="module")
def small():
    hist, new = world()
    fm = FactorModel(k=3, weight_decay=1.0, seed=0).fit(hist)
    return hist, new, fm


def test_evaluate_offline_many_models(small):
    hist, new, fm = small
    r = faq.evaluate(fm, new, budget=0.2, seed=3)
    e = r.estimates
    assert list(e["model"]) == list(new.index)
    assert (e["ci_low"] <= e["estimate"]).all() and (e["estimate"] <= e["ci_high"]).all()
    assert np.allclose(e["truth"], new.mean(axis=1).to_numpy())
    assert r.params["n_queries"] == 30 and len(r.tables["queries"]) == 30 * len(new)
    # same seed, same numbers; JSON round trip
    r2 = faq.evaluate(fm, new, budget=30, seed=3)
    assert np.array_equal(r.estimates["estimate"], r2.estimates["estimate"])
    back = faq.FAQResult.from_json(r.to_json())
    assert np.allclose(back.estimates["ci_high"], e["ci_high"])


def test_statements_say_the_interval_and_an_estimate_outside_0_1(small):
    """FAQ's result states one claim per model at "about" its level; the unbiased estimate may pass 0 or 1 by
    sampling noise (the interval is clipped), and the statement says so rather than print it bare."""
    hist, new, fm = small
    r = faq.evaluate(fm, new, budget=0.2, seed=3)
    said = r.statements()
    assert [s.subject for s in said] == list(new.index) and all(s.level.startswith("about 95%") for s in said)
    assert "is in [" in said[0] and "outside [0, 1]" not in said[0]
    r.tables["estimates"].loc[0, "estimate"] = 1.03
    assert "estimate 1.030, outside [0, 1] by sampling noise" in r.statements()[0]


def test_evaluate_columns_in_any_order_and_long_format(small):
    hist, new, fm = small
    shuffled = new.iloc[:3, ::-1]
    a = faq.evaluate(fm, new.iloc[:3], budget=20, seed=1).estimates["estimate"].to_numpy()
    b = faq.evaluate(fm, shuffled, budget=20, seed=1).estimates["estimate"].to_numpy()
    assert np.array_equal(a, b)
    long = new.iloc[:3].stack().rename("score").reset_index()
    long.columns = ["model", "item", "score"]
    c = faq.evaluate(fm, long, budget=20, seed=1).estimates.set_index("model").loc[list(new.index[:3]), "estimate"]
    assert np.allclose(np.sort(c.to_numpy()), np.sort(a))


def test_live_callable_matches_offline(small):
    hist, new, fm = small
    row = new.iloc[0]
    calls = []

    def ask(item):
        calls.append(item)
        return int(row[item])

    live = faq.evaluate(fm, ask, budget=25, seed=5)
    off = faq.evaluate(fm, new.iloc[[0]], budget=25, seed=5)
    assert np.isclose(live.estimates["estimate"][0], off.estimates["estimate"][0])
    assert len(calls) == len(set(calls)) == live.estimates["n_distinct"][0]  # each question asked once


def test_live_errors(small):
    hist, new, fm = small
    with pytest.raises(AssayBackendError, match="could not be scored"):
        faq.evaluate(fm, lambda item: None, budget=5, seed=0)
    with pytest.raises(AssayBackendError, match="failed"):
        faq.evaluate(fm, lambda item: 1 / 0, budget=5, seed=0)
    with pytest.raises(AssayInputError, match="0 or 1"):
        faq.evaluate(fm, lambda item: 0.5, budget=5, seed=0)


def test_fit_from_history_with_missing_entries():
    hist, new = world(missing=0.5, seed=2)
    r = faq.evaluate(hist, new.iloc[:4], budget=0.1, seed=0, factors=FactorModel(k=2, weight_decay=1.0, seed=0))
    assert r.info["factors"]["k"] == 2 and len(r.estimates) == 4


@pytest.mark.parametrize("bad, msg", [
    (dict(budget=1), "at least 2"),
    (dict(budget=-3), "budget"),
    (dict(budget=10, until_width=1.5), "until_width"),
    (dict(budget=10, design="sometimes"), "design"),
    (dict(budget=10, min_queries=1), "min_queries"),
    (dict(budget=0.001), "at least 2"),
    (dict(budget=1.5), "neither"),
    (dict(budget=float("nan")), "budget"),
    (dict(budget=10, alpha=1.5), "alpha"),
    (dict(budget=10, tau=0.0), "tau"),
    (dict(budget=10, variance="bootstrap"), "variance"),
])
def test_bad_arguments(small, bad, msg):
    hist, new, fm = small
    with pytest.raises(AssayInputError, match=msg):
        faq.evaluate(fm, new.iloc[:2], **bad)


def test_bad_data(small):
    hist, new, fm = small
    nb = new.iloc[:2].copy()
    nb.iloc[0, 3] = 2
    with pytest.raises(AssayInputError, match="0 or 1"):
        faq.evaluate(fm, nb, budget=10)
    nm = new.iloc[:2].copy()
    nm.iloc[1, 5] = np.nan
    with pytest.raises(AssayInputError, match="missing answer"):
        faq.evaluate(fm, nm, budget=10)
    with pytest.raises(AssayInputError, match="do not match"):
        faq.evaluate(fm, new.iloc[:2].rename(columns={"q0": "zzz"}), budget=10)
    with pytest.raises(AssayInputError, match="do not match"):
        faq.evaluate(fm, new.iloc[:2, :-1], budget=10)
    h = hist.copy()
    h.iloc[4] = np.nan
    with pytest.raises(AssayInputError, match="no observed answer"):
        faq.evaluate(h, new.iloc[:2], budget=10, factors=FactorModel(k=2, seed=0))
    with pytest.raises(AssayInputError, match="more than this history supports"):
        faq.evaluate(hist.iloc[:5, :8], new.iloc[:2, :8], budget=4, factors=FactorModel(k=6, seed=0))
    hs = hist.astype(object)
    hs.iloc[0, 0] = "yes"
    with pytest.raises(AssayInputError, match="not a number"):
        faq.evaluate(hs, new.iloc[:2], budget=10, factors=FactorModel(k=2, seed=0))
    dup = pd.concat([new.iloc[:2], new.iloc[:1]])
    with pytest.raises(AssayInputError, match="duplicate model"):
        faq.evaluate(fm, dup, budget=10)


def test_protocol_table_and_determinism(small):
    hist, new, fm = small
    kw = dict(budgets=[0.1, 0.2], seeds=3, seed=11, tune=False, factors=fm, chunk=16,
              methods=["faq", "faq_paper", "uniform", "ht_uniform", "aipw", "ai_factor"])
    r1 = faq.protocol(hist, new, workers=1, **kw)
    r2 = faq.protocol(hist, new, workers=2, **kw)
    t = r1.table
    assert set(t["method"]) == {"faq", "faq:cs", "faq:increments|t", "faq:conservative|normal", "faq_paper",
                                "uniform", "ht_uniform", "aipw", "ai_factor"}
    for c in ("budget", "method", "coverage", "mean_width", "ess_vs_uniform_mean", "ess_vs_ht_uniform"):
        assert c in t.columns
    pd.testing.assert_frame_equal(t, r2.table)
    u = t[t["method"] == "uniform"]
    assert np.allclose(u["ess_vs_uniform_mean"], 1.0)
    assert np.allclose(t[t["method"] == "ht_uniform"]["ess_vs_ht_uniform"], 1.0)
    back = faq.FAQProtocolResult.from_json(r1.to_json())
    assert np.allclose(back.table["coverage"], t["coverage"])


def test_protocol_coverage_and_gain_on_a_factor_world():
    """Correctly specified world: FAQ covers at ~95% (MC tolerance) and beats uniform sampling's width."""
    hist, new = world(n_hist=300, n_new=300, N=300, k=3, seed=4)
    fm = FactorModel(k=3, weight_decay=1.0, seed=0).fit(hist)
    r = faq.protocol(hist, new, budgets=[0.2], seeds=4, seed=1, tune=False, factors=fm,
                     methods=["faq", "uniform", "ht_uniform"],
                     params={"faq": FAQParams(tau=0.25, variance="increments", quantile="normal")})
    t = r.table.set_index("method")
    n_int = 300 * 4
    tol = 4 * np.sqrt(0.95 * 0.05 / n_int) + 0.01  # + a little for the CLT at n_b = 60
    assert abs(t.loc["faq", "coverage"] - 0.95) < tol
    assert t.loc["faq", "ess_vs_uniform_mean"] > 1.05  # measured 1.13 on this world
    assert t.loc["faq", "ess_vs_ht_uniform"] > t.loc["faq", "ess_vs_uniform_mean"]


def test_protocol_tuning_picks_a_covering_candidate():
    hist, new = world(n_hist=200, n_new=40, N=120, k=2, seed=7)
    grid = {"tau": (0.05, 0.5)}
    r = faq.protocol(hist, new, budgets=[0.2], seeds=2, seed=0, methods=["faq", "aipw"], tune=True,
                     factors=FactorModel(k=2, weight_decay=1.0, seed=0), grids={"faq": grid}, val_seeds=3)
    tun = r.tables["tuning"]
    f = tun[tun["method"] == "faq"]
    assert len(f) == 2 and f["selected"].sum() == 1
    n_val = 50  # one of 4 model-level folds of the 200 history models
    thr = 0.95 - np.sqrt(0.05 * 0.95 / (n_val * 3))
    sel = f[f["selected"]].iloc[0]
    ok = f[f["val_coverage"] >= thr]
    if len(ok):
        assert sel["val_coverage"] >= thr and sel["val_mean_width"] == ok["val_mean_width"].min()
    assert (tun[tun["method"] == "aipw"]["selected"]).sum() == 1


def test_protocol_bad_input(small):
    hist, new, fm = small
    with pytest.raises(AssayInputError, match="unknown method"):
        faq.protocol(hist, new, methods=["faq", "magic"], tune=False, factors=fm)
    with pytest.raises(AssayInputError, match="seeds"):
        faq.protocol(hist, new, seeds=[], tune=False, factors=fm)
    with pytest.raises(AssayInputError, match="at least 2"):
        faq.protocol(hist, new, budgets=[1], seeds=1, tune=False, factors=fm)
    with pytest.raises(AssayInputError, match="unfitted"):
        faq.protocol(hist, budgets=[0.1], seeds=1, factors=fm)  # fitted on models the splits would call new
    with pytest.raises(AssayInputError, match="splits"):
        faq.protocol(hist, budgets=[0.1], seeds=1, splits=1, factors=FactorModel(k=2, seed=0))


def test_report_sections(small):
    from assay.report import render_html, render_markdown

    hist, new, fm = small
    r = faq.evaluate(fm, new.iloc[:3], budget=20, seed=0)
    p = faq.protocol(hist, new.iloc[:20], budgets=[0.1, 0.2], seeds=2, tune=False, factors=fm,
                     methods=["faq", "uniform", "ht_uniform"])
    page = render_html([r, p])
    assert "<section id='faq'>" in page and "<section id='faq-protocol'>" in page
    import re

    assert page.count("<svg") >= 2
    assert not re.search(r"(src|href)=[\"']https?://", page) and "<script" not in page  # nothing fetched
    assert "## FAQ" in render_markdown([r])


def test_without_replacement_ablation_asks_distinct_questions(small):
    from assay.faq.core import run_faq

    hist, new, fm = small
    Z = new.to_numpy()[:5]
    for design in ("naive-wor", "wor"):
        r = run_faq(fm.V_, fm.prior_mean_, fm.prior_cov_, Z, 60, rng=np.random.default_rng(0),
                    params=FAQParams(design=design))
        assert (r.n_distinct == 60).all()
        with pytest.raises(AssayInputError, match="cannot exceed"):
            run_faq(fm.V_, fm.prior_mean_, fm.prior_cov_, Z, 200, rng=np.random.default_rng(0),
                    params=FAQParams(design=design))
    r2 = run_faq(fm.V_, fm.prior_mean_, fm.prior_cov_, Z, 60, rng=np.random.default_rng(0),
                 params=FAQParams(design="wr"))
    assert (r2.n_distinct < 60).any()  # with replacement some questions repeat


def test_budget_semantics():
    from assay.faq import resolve_budget

    assert resolve_budget(0.05, 200) == (10, None)
    assert resolve_budget(1.0, 200)[0] == 200 and "exact" in resolve_budget(1.0, 200)[1]
    with pytest.raises(AssayInputError, match="at least 2"):
        resolve_budget(1, 200)
    assert resolve_budget(50, 200) == (50, None)
    assert resolve_budget(np.int64(50), 200) == (50, None)
    assert resolve_budget(50.0, 200) == (50, None)  # an integral float above 1 is a count
    n, note = resolve_budget(999, 200)
    assert n == 200 and "999" in note and "exact" in note
    for bad in (0, -0.1, 1.5, float("inf"), "10", True, None):
        with pytest.raises(AssayInputError):
            resolve_budget(bad, 200)


def test_whole_bank_is_asked_once_and_exact(small):
    hist, new, fm = small
    for budget in (1.0, 150, 10_000):
        r = faq.evaluate(fm, new.iloc[:3], budget=budget, seed=0)
        est = r.estimates
        np.testing.assert_allclose(est["estimate"], new.iloc[:3].mean(axis=1).to_numpy())
        assert (est["ci_low"] == est["ci_high"]).all() and (est["interval"] == "exact").all()
        assert (est["n_queries"] == 150).all() and len(r.tables["queries"]) == 3 * 150
        assert r.tables["queries"].groupby("model")["item"].nunique().eq(150).all()
    # live: every question asked exactly once
    asked = []
    z = new.iloc[0]

    def ask(item):
        asked.append(item)
        return int(z[item])

    r = faq.evaluate(fm, ask, budget=1.0, seed=0)
    assert sorted(asked) == sorted(new.columns) and r.estimates["estimate"].iloc[0] == pytest.approx(z.mean())


def test_seed_is_resolved_before_the_fit_and_replays(small):
    hist, new, _ = small
    r1 = faq.evaluate(hist, new.iloc[:2], budget=20, factors=FactorModel(k=2, weight_decay=1.0, seed=0))
    assert isinstance(r1.seed, int)
    r2 = faq.evaluate(hist, new.iloc[:2], budget=20, seed=r1.seed, factors=FactorModel(k=2, weight_decay=1.0, seed=0))
    pd.testing.assert_frame_equal(r1.estimates, r2.estimates)


def test_default_factors_are_cached_by_the_history(small, tmp_path, monkeypatch):
    monkeypatch.setenv("ASSAY_CACHE_DIR", str(tmp_path))
    hist, new, _ = small
    calls = []
    r1 = faq.evaluate(hist, new.iloc[:2], budget=20, seed=0, fit_progress=lambda *a: calls.append(a))
    assert r1.info["factors"]["cache"] == "miss" and calls and calls[-1][0] == calls[-1][1]
    files = [f for f in (tmp_path / "factors").glob("*.npz") if not f.name.endswith(".cal.npz")]
    cals = list((tmp_path / "factors").glob("*.cal.npz"))
    assert len(files) == 1 and (files[0].stat().st_mode & 0o077) == 0  # private
    assert len(cals) == 1 and (cals[0].stat().st_mode & 0o077) == 0  # the expectation is cached beside the fit
    assert r1.info["expected"]["cache"] == "miss"
    calls.clear()
    r2 = faq.evaluate(hist, new.iloc[:2], budget=20, seed=0, fit_progress=lambda *a: calls.append(a))
    assert r2.info["factors"]["cache"] == "hit" and not calls  # no refit
    assert r2.info["expected"]["cache"] == "hit" and r2.info["expected"]["floor"] == r1.info["expected"]["floor"]
    pd.testing.assert_frame_equal(r1.estimates, r2.estimates)
    h2 = hist.copy()
    h2.iloc[0, 0] = 1 - h2.iloc[0, 0]  # another history, another fit
    r3 = faq.evaluate(h2, new.iloc[:2], budget=20, seed=0)
    assert r3.info["factors"]["cache"] == "miss"
    files[0].write_bytes(b"not a zip")  # a corrupt entry is refitted, never trusted
    r4 = faq.evaluate(hist, new.iloc[:2], budget=20, seed=0)
    assert r4.info["factors"]["cache"] == "miss"
    pd.testing.assert_frame_equal(r1.estimates, r4.estimates)
    r5 = faq.evaluate(hist, new.iloc[:2], budget=20, seed=0, cache=False)
    assert r5.info["factors"]["cache"] == "miss"


def test_plain_word_warnings(small):
    hist, new, fm = small
    r = faq.evaluate(fm, new.iloc[:2], budget=12, seed=0)
    assert any("below the 33" in w for w in r.warnings)
    # a model whose answers have nothing to do with the history: no saving, and the result says so
    rng = np.random.default_rng(0)
    noise = pd.DataFrame((rng.random((1, 150)) < 0.5).astype(float), columns=new.columns, index=["noise"])
    r = faq.evaluate(fm, noise, budget=60, seed=0)
    assert r.estimates["gain_vs_uniform"].iloc[0] < 1.0
    assert any(w.startswith("no saving for model 'noise'") for w in r.warnings)
    # models that follow the history: an estimated gain well above 1 on average (a single model's estimate is noisy)
    r = faq.evaluate(fm, new, budget=60, seed=0)
    assert r.estimates["gain_vs_uniform"].mean() > 1.15


def test_until_width_stops_and_reports_the_anytime_interval(small):
    hist, new, fm = small
    r = faq.evaluate(fm, new.iloc[:5], budget=1.0, seed=0, until_width=0.25, min_queries=10)
    e = r.estimates
    assert (e["interval"] == "anytime-valid").all() and e["reached_width"].all()
    assert (e["width"] <= 0.25).all() and (e["n_queries"] >= 10).all() and (e["n_queries"] < 150).all()
    q = r.tables["queries"]
    assert (q.groupby("model").size().to_numpy() == e["n_queries"].to_numpy()).all()
    r = faq.evaluate(fm, new.iloc[:2], budget=15, seed=0, until_width=0.01)
    assert not r.estimates["reached_width"].any() and any("whole budget" in w for w in r.warnings)


def test_live_stops_asking_when_narrow_enough(small):
    hist, new, fm = small
    z = new.iloc[0]
    asked = []
    r = faq.evaluate(fm, lambda item: asked.append(item) or int(z[item]), budget=1.0, seed=3, until_width=0.3,
                     min_queries=10)
    assert len(asked) == r.estimates["n_queries"].iloc[0] == len(set(asked)) < 150


def test_model_splits_hold_out_whole_families():
    rows = [f"org{i % 7}/m{i}" for i in range(70)] + [f"solo{i}" for i in range(5)]
    splits = faq.model_splits(rows, 3, seed=0)
    seen = np.zeros(len(rows), dtype=int)
    for hist_idx, new_idx in splits:
        seen[new_idx] += 1
        assert not set(hist_idx) & set(new_idx)
        fam_new = {rows[i].split("/")[0] for i in new_idx}
        fam_hist = {rows[i].split("/")[0] for i in hist_idx}
        assert not fam_new & fam_hist  # no family on both sides
    assert (seen == 1).all()  # every model is new exactly once
    rnd = faq.model_splits(rows, 3, split_by="random", seed=0)
    assert sum(len(n) for _, n in rnd) == len(rows)
    with pytest.raises(AssayInputError, match="split_by"):
        faq.model_splits(rows, 3, split_by="alphabet")
    with pytest.raises(AssayInputError, match="splits"):
        faq.model_splits(rows, 1)


def test_protocol_on_family_splits_of_one_table():
    hist, new = world(n_hist=150, n_new=0, N=120, k=2, seed=9)
    hist.index = [f"fam{i % 10}/m{i}" for i in range(150)]
    r = faq.protocol(hist, budgets=[0.1], seeds=2, seed=0, splits=3, factors=FactorModel(k=2, weight_decay=1.0),
                     methods=["faq", "uniform", "ht_uniform"])
    assert r.params["n_splits"] == 3 and r.params["n_new"] == 150
    pm = r.tables["per_model"]
    faq_rows = pm[pm["method"] == "faq"]
    assert sorted(faq_rows["model"]) == sorted(hist.index)  # every model evaluated once, as a new model
    for s in range(3):
        new_fams = {m.split("/")[0] for m in faq_rows[faq_rows["split"] == s]["model"]}
        other = {m.split("/")[0] for m in faq_rows[faq_rows["split"] != s]["model"]}
        assert not new_fams & other
    with pytest.raises(AssayInputError, match="missing answers"):
        h = hist.copy()
        h.iloc[0, 0] = np.nan
        faq.protocol(h, budgets=[0.1], seeds=1, factors=FactorModel(k=2))


def test_core_estimate_on_arrays_matches_evaluate(small):
    """The public core takes numpy arrays only and gives evaluate's numbers for the same seed."""
    from assay.faq.core import FAQEstimate, estimate

    hist, new, fm = small
    Z = new.to_numpy()[:4]
    est = estimate(Z, fm.V_, fm.prior_mean_, fm.prior_cov_, 30, rng=np.random.default_rng(3), b=fm.b_ if fm.bias else None)
    assert isinstance(est, FAQEstimate) and not est.exact and est.run is not None
    r = faq.evaluate(fm, new.iloc[:4], budget=30, seed=3)
    e = r.estimates
    for col, field in (("estimate", "estimate"), ("ci_low", "ci_low"), ("ci_high", "ci_high"), ("se", "se"),
                       ("n_queries", "n_queries"), ("gain_vs_uniform", "gain_vs_uniform")):
        np.testing.assert_array_equal(e[col].to_numpy(), getattr(est, field))
    assert est.items.shape == (4, 30) and est.weights.shape == (30,) and set(est.se_variants) >= {"conservative"}
    # a budget of the whole bank: every question once, the exact accuracy, no draw
    full = estimate(Z, fm.V_, fm.prior_mean_, fm.prior_cov_, Z.shape[1], rng=0)
    assert full.exact and full.run is None
    np.testing.assert_array_equal(full.estimate, Z.mean(axis=1))
    assert (full.ci_low == full.ci_high).all() and (full.n_queries == Z.shape[1]).all()
    for bad, msg in ((dict(Z=Z[:, :-1]), "columns"), (dict(Z=Z * 2), "0/1"), (dict(n_b=1), "n_b"),
                     (dict(alpha=0.0), "alpha"), (dict(prior_mean=np.zeros(7)), "prior_mean"),
                     (dict(until_width=2.0), "until_width")):
        kw = dict(Z=Z, V=fm.V_, prior_mean=fm.prior_mean_, prior_cov=fm.prior_cov_, n_b=10, rng=0)
        kw.update(bad)
        with pytest.raises(AssayInputError, match=msg):
            estimate(**kw)


def test_result_vocabulary_level_and_interval(small):
    hist, new, fm = small
    r = faq.evaluate(fm, new.iloc[:3], budget=12, seed=0)
    e = r.estimates
    assert {"estimate", "ci_low", "ci_high", "se"} <= set(e.columns) and not {"low", "high"} & set(e.columns)
    assert r.n == 12 and "queries per new model" in r.level["n_meaning"] and r.n_meaning == r.level["n_meaning"]
    lo, hi = r.confidence_interval()
    np.testing.assert_array_equal(lo, e["ci_low"])
    np.testing.assert_array_equal(hi, e["ci_high"])
    assert r.confidence_interval().level == pytest.approx(0.95)
    assert r.warnings == r.info["warnings"] and any("below the 33" in w for w in r.warnings)
    back = faq.FAQResult.from_json(r.to_json())
    np.testing.assert_allclose(back.confidence_interval().high, hi)
    # a result written before the rename (low / high) still loads with ci_low / ci_high
    old = json.loads(r.to_json())
    for row in old["estimates"]:
        row["low"], row["high"] = row.pop("ci_low"), row.pop("ci_high")
    np.testing.assert_allclose(faq.FAQResult.from_dict(old).confidence_interval().low, lo)
    p = faq.protocol(hist, new.iloc[:20], budgets=[0.1], seeds=1, factors=fm, methods=["faq"])
    assert p.n == 20 and "new models" in p.level["n_meaning"]
    with pytest.raises(AssayInputError, match="coverage"):
        p.confidence_interval()


def test_seed_rule(small):
    """The seed is resolved once, before the factor fit; a Generator works (recorded as None)."""
    hist, new, fm = small
    calls = []
    with pytest.raises(AssayInputError, match="seed"):
        faq.evaluate(hist, new.iloc[:2], budget=10, seed=-1, factors=FactorModel(k=2, weight_decay=1.0, seed=0),
                     fit_progress=lambda *a: calls.append(a))
    with pytest.raises(AssayInputError, match="seed"):
        faq.protocol(hist, new.iloc[:10], budgets=[0.1], seeds=1, seed="x", factors=FactorModel(k=2, weight_decay=1.0),
                     fit_progress=lambda *a: calls.append(a))
    assert not calls
    a = faq.evaluate(fm, new.iloc[:2], budget=10, seed=np.random.default_rng(4))
    b = faq.evaluate(fm, new.iloc[:2], budget=10, seed=np.random.default_rng(4))
    assert a.seed is None and a.info["seed_source"] == "generator"
    pd.testing.assert_frame_equal(a.estimates, b.estimates)


def test_data_layer_is_public_and_still_importable_from_api():
    from assay.data.faq import FAQAnswers, as_matrix, prepare_answers
    from assay.faq import api

    assert api.as_matrix is as_matrix
    wide = pd.DataFrame([[1, 0, 1]], index=["m"], columns=["a", "b", "c"])
    ans = prepare_answers(wide[["c", "a", "b"]], ["a", "b", "c"])
    assert isinstance(ans, FAQAnswers) and ans.models == ["m"]
    np.testing.assert_array_equal(ans.Z, [[1.0, 0.0, 1.0]])
    H, rows, items = as_matrix(wide, "history")
    assert rows == ["m"] and items == ["a", "b", "c"]
    with pytest.raises(AssayInputError, match="do not match"):
        prepare_answers(wide, ["a", "b", "z"])


def test_unobserved_items_are_said_in_the_result():
    hist, new = world(n_hist=80, n_new=2, N=60, k=2, seed=3)
    hist.iloc[:, 5] = np.nan
    with pytest.warns(UserWarning, match="never observed"):
        r = faq.evaluate(hist, new, budget=20, seed=0, factors=FactorModel(k=2, weight_decay=1.0, seed=0))
    assert any("1 item(s) were never observed" in w for w in r.warnings)


def test_on_width_reports_the_anytime_interval_it_stops_on(small):
    """on_width gives, from min_queries on, the width of the current anytime-valid interval: the run with
    until_width stops at the first round whose reported width is at most the target, and the reported interval
    is that wide."""
    hist, new, fm = small
    seen = []
    r = faq.evaluate(fm, new.iloc[[0]], budget=150, seed=2, until_width=0.3, min_queries=10,
                     on_width=lambda t, w: seen.append((t, w)))
    rounds = [t for t, _ in seen]
    assert rounds[0] == 10 and rounds == list(range(10, rounds[-1] + 1))
    widths = np.array([w for _, w in seen])
    assert (np.diff(widths) <= 1e-12).all()  # a running intersection only narrows
    stop = int(r.estimates["n_queries"][0])
    assert rounds[-1] == stop and widths[-1] <= 0.3 < widths[-2]
    e = r.estimates.iloc[0]
    assert e["ci_high"] - e["ci_low"] == pytest.approx(widths[-1])
    with pytest.raises(AssayInputError, match="on_width"):
        faq.evaluate(fm, new.iloc[[0]], budget=20, seed=2, on_width=3)


def test_history_as_int8_codes_gives_the_same_evaluation(tmp_path, monkeypatch):
    """FAQ holds a history as int8 codes (-1 = missing): the float64 table with NaN and its codes give the same cache
    key (the same bytes hashed), the same default fit and calibration, and the same estimates."""
    from assay.data.faq import as_matrix, int8_bytes, to_codes
    from assay.faq import fit

    monkeypatch.setenv("ASSAY_CACHE_DIR", str(tmp_path))
    hist, new = world(n_hist=90, n_new=4, N=120, k=2, seed=6, missing=0.2)
    hist.index = [f"org{i // 3}/h{i}" for i in range(len(hist))]
    codes = as_matrix(hist, "history", codes=True)
    H = hist.to_numpy()
    assert codes.values.dtype == np.int8 and int8_bytes(codes.values) == int8_bytes(H)
    assert np.array_equal(to_codes(H), codes.values)
    a = faq.evaluate(hist, new, budget=0.2, seed=1, cache=False)
    b = faq.evaluate(codes, new, budget=0.2, seed=1, cache=False)
    pd.testing.assert_frame_equal(a.estimates, b.estimates)
    assert a.info["factors"]["fingerprint"] == b.info["factors"]["fingerprint"]
    assert json.dumps(a.info["expected"], sort_keys=True) == json.dumps(b.info["expected"], sort_keys=True)
    assert fit._history_hash(H, codes.rows, codes.items, "s") == fit._history_hash(codes.values, codes.rows,
                                                                                   codes.items, "s")
