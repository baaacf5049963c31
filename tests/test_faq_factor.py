"""Tests of assay.faq.factor.FactorModel (FAQ paper eq. 13, logistic factor model)."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from assay.errors import AssayInputError
from assay.faq import FactorModel
from assay.faq.factor import FactorFitWarning, OverfitWarning, _logloss_at, _objective

REAL = Path("/work/shared/data/openllm_v2_items/mmlu_pro_math_8b_models.csv")


def planted(m=300, n=400, k=3, p_obs=0.6, seed=0):
    rng = np.random.default_rng(seed)
    U = rng.standard_normal((m, k))
    V = rng.standard_normal((n, k))
    Y = (rng.random((m, n)) < 1 / (1 + np.exp(-U @ V.T))).astype(float)
    obs = rng.random((m, n)) < p_obs
    return U, V, Y, obs, np.where(obs, Y, np.nan)


@pytest.fixture(scope="module")
def plant():
    return planted()


def test_recovers_planted_low_rank(plant):
    U, V, Y, obs, H = plant
    fm = FactorModel(k=3, weight_decay=1.0, seed=1).fit(H)
    assert fm.U_.shape == (300, 3) and fm.V_.shape == (400, 3) and fm.b_.shape == (400,)
    assert np.all(fm.b_ == 0)  # paper default: no bias
    r, c = np.nonzero(~obs)  # the 40% never shown to the fit
    true = _logloss_at(U, V, None, r, c, Y[r, c])
    fitted = _logloss_at(fm.U_, fm.V_, None, r, c, Y[r, c])
    # Measured: true 0.520, fitted 0.535 (excess 0.016 ~ #params / (2 n_obs) = 2100 / 144k, the usual
    # estimation excess of a MAP fit). 0.03 leaves ~2x margin; a rank-deficient or overfit fit is >= 0.05 off.
    assert fitted - true < 0.03
    assert fitted > true - 0.01
    assert not fm.overfit_warning_
    assert abs(fm.heldout_logloss_ - fitted) < 0.02
    assert fm.train_logloss_ < fm.heldout_logloss_
    # prior = empirical mean / covariance of the fitted u_i
    mu, S = fm.prior_()
    np.testing.assert_allclose(mu, fm.U_.mean(0))
    np.testing.assert_allclose(S, np.cov(fm.U_, rowvar=False))
    assert fm.prior_cov_.shape == (3, 3)
    P = fm.predict_proba()
    assert P.shape == (300, 400) and np.all((P > 0) & (P < 1))
    np.testing.assert_allclose(fm.predict_proba([0, 5]), P[[0, 5]])


def test_cv_picks_small_k(plant):
    *_, H = plant
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overfit / grid-edge / convergence warning on the planted data
        fm = FactorModel(cv=3, ks=(1, 3, 8), lambdas=(1.0, 3.0), seed=2).fit(H)
    cvr = fm.cv_results_
    assert list(cvr.columns[:4]) == ["k", "lambda", "heldout_logloss", "se"]
    assert len(cvr) == 6 and cvr["selected"].sum() == 1
    assert fm.k_ <= 5
    assert fm.weight_decay_ in (1.0, 3.0)
    # 1-SE rule: chosen within one SE of the best, and no simpler setting is
    best = cvr.loc[cvr["heldout_logloss"].idxmin()]
    sel = cvr[cvr["selected"]].iloc[0]
    assert sel["heldout_logloss"] <= best["heldout_logloss"] + best["se"]
    assert fm.heldout_logloss_ == sel["heldout_logloss"]
    assert np.isfinite(fm.train_logloss_) and not fm.overfit_warning_


@pytest.mark.parametrize("bias", [False, True])
def test_gradient_matches_finite_differences(bias):
    """The fast objective (float32 elementwise work, float64 sums, Y only through matrix products) equals a plain
    float64 reference, whose gradient is checked by central differences."""

    def reference(theta, Y, M, k, wd, bias):
        m, n = Y.shape
        U = theta[: m * k].reshape(m, k)
        V = theta[m * k: m * k + n * k].reshape(n, k)
        X = U @ V.T + (theta[m * k + n * k:][None, :] if bias else 0.0)
        nobs = M.sum()
        f = np.sum(M * (np.logaddexp(0.0, X) - Y * X)) / nobs + 0.5 * wd / nobs * theta @ theta
        G = M * (1 / (1 + np.exp(-X)) - Y) / nobs
        parts = [G @ V + wd / nobs * U, G.T @ U + wd / nobs * V]
        g = np.concatenate([p.ravel() for p in parts] + ([G.sum(0) + wd / nobs * theta[m * k + n * k:]] if bias else []))
        return f, g

    rng = np.random.default_rng(3)
    m, n, k = 7, 9, 3
    H = rng.integers(0, 2, (m, n)).astype(float)
    M = (rng.random((m, n)) < 0.7).astype(float)
    Y = np.where(M > 0, H, 0.0)
    theta = rng.standard_normal((m + n) * k + (n if bias else 0))
    f0, g0 = reference(theta, Y, M, k, 0.3, bias)
    eps = 1e-6
    E = np.eye(theta.size)
    num = np.array([(reference(theta + eps * e, Y, M, k, 0.3, bias)[0]
                     - reference(theta - eps * e, Y, M, k, 0.3, bias)[0]) / (2 * eps) for e in E])
    np.testing.assert_allclose(g0, num, rtol=1e-5, atol=1e-8)
    for mask in (M.astype(np.float32), None):
        Yx = Y if mask is not None else H
        f, g = _objective(theta, Yx, mask, k, 0.3, bias)
        fr, gr = reference(theta, Yx, np.ones_like(H) if mask is None else M, k, 0.3, bias)
        assert f == pytest.approx(fr, rel=1e-7)
        np.testing.assert_allclose(g, gr, rtol=1e-5, atol=1e-7 * np.abs(gr).max())


def test_model_level_cv_and_progress():
    """cv_by='models' holds out whole groups, scores the new-model criterion, reports every fold x candidate."""
    U, V, Y, obs, H = planted(m=120, n=150, k=2, p_obs=1.0, seed=5)
    groups = np.repeat(np.arange(30), 4)
    seen = []
    fm = FactorModel(cv=3, cv_by="models", ks=(1, 2, 4), lambdas=(1.0, 10.0), bias=True, seed=0).fit(
        H, groups=groups, progress=lambda d, t, info: seen.append((d, t, info)))
    assert [d for d, _, _ in seen] == list(range(1, 3 * 3 * 2 + 2)) and seen[-1][0] == seen[-1][1] == 19
    assert "fold 1/3" in seen[0][2] and "final fit" in seen[-1][2]
    cvr = fm.cv_results_
    assert len(cvr) == 6 and cvr["selected"].sum() == 1
    # the planted rank is 2: rank 1 predicts held-out models clearly worse than rank 2
    l1 = cvr[(cvr.k == 1)]["heldout_logloss"].min()
    l2 = cvr[(cvr.k == 2)]["heldout_logloss"].min()
    assert l2 < l1 - 0.01
    assert fm.heldout_logloss_ < fm.baseline_logloss_
    with pytest.raises(AssayInputError, match="one label per history row"):
        FactorModel(cv=3, cv_by="models", ks=(1,), lambdas=(1.0,)).fit(H, groups=groups[:-1])
    with pytest.raises(AssayInputError, match="cv_by"):
        FactorModel(cv=3, cv_by="rows").fit(H)


def test_row_folds_keep_groups_together():
    from assay.faq.factor import _row_folds

    g = np.array(["a"] * 10 + ["b"] * 3 + ["c"] * 3 + ["d"] * 4 + ["e"] * 1)
    fold = _row_folds(len(g), 2, g, np.random.default_rng(0))
    for lab in np.unique(g):
        assert len(set(fold[g == lab])) == 1
    assert abs((fold == 0).sum() - (fold == 1).sum()) <= 3
    with pytest.raises(AssayInputError, match="groups"):
        _row_folds(len(g), 6, g, np.random.default_rng(0))


def test_fingerprint_tracks_what_faq_uses(plant):
    *_, H = plant
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f1 = FactorModel(k=2, seed=0, holdout=0).fit(H[:100, :80])
        f2 = FactorModel(k=2, seed=0, holdout=0).fit(H[:100, :80])
        f3 = FactorModel(k=2, seed=1, holdout=0).fit(H[:100, :80])
    assert f1.fingerprint() == f2.fingerprint() != f3.fingerprint()
    assert len(f1.fingerprint()) == 16


def test_overfit_guard_fires_on_underregularised_fit():
    rng = np.random.default_rng(4)
    H = (rng.random((40, 200)) < 0.6).astype(float)
    with pytest.warns(OverfitWarning, match="train log-loss"):
        fm = FactorModel(k=32, weight_decay=1e-6, seed=0).fit(H)
    assert fm.overfit_warning_
    assert fm.train_logloss_ < 0.5 * fm.heldout_logloss_
    s = fm.summary()
    assert s["train_logloss"] == fm.train_logloss_ and s["heldout_logloss"] == fm.heldout_logloss_
    print(f"\nunder-regularised 40x200 k=32: train {fm.train_logloss_:.4g}, held-out {fm.heldout_logloss_:.4g}, "
          f"item-mean baseline {fm.baseline_logloss_:.4g}")


def test_no_holdout_is_not_silent():
    *_, H = planted(40, 50, seed=5)
    with pytest.warns(FactorFitWarning, match="cannot be checked"):
        fm = FactorModel(k=2, holdout=0, seed=0).fit(H)
    assert np.isnan(fm.heldout_logloss_) and not fm.overfit_warning_


def test_input_validation():
    H = np.array([[0, 1, np.nan], [1, 0.5, 0]])
    with pytest.raises(AssayInputError, match=r"position 1, 1\] = 0.5"):
        FactorModel().fit(H)
    df = pd.DataFrame([[0, 1], [1, "x"]], index=["mA", "mB"], columns=["q1", "q2"])
    with pytest.raises(AssayInputError, match="'mB'.*'q2'"):
        FactorModel().fit(df)
    df = pd.DataFrame([[0, 1], [1, 2]], index=["mA", "mB"], columns=["q1", "q2"])
    with pytest.raises(AssayInputError, match="'mB'.*'q2'"):
        FactorModel().fit(df)
    with pytest.raises(AssayInputError, match="2-D"):
        FactorModel().fit(np.zeros(5))
    with pytest.raises(AssayInputError, match="all NaN"):
        FactorModel().fit(np.full((3, 3), np.nan))
    with pytest.raises(AssayInputError, match="inf|values must be"):
        FactorModel().fit(np.array([[0, np.inf], [1, 0]]))
    for bad in [dict(k=0), dict(weight_decay=-1), dict(cv=1), dict(holdout=1.0), dict(cv=2, ks=())]:
        with pytest.raises(AssayInputError):
            FactorModel(**bad).fit(np.array([[0, 1], [1, 0]]))
    with pytest.raises(AssayInputError, match="not fitted"):
        FactorModel().predict_proba()


def test_empty_rows_and_columns_are_reported_and_zeroed():
    *_, H = planted(30, 40, seed=6)
    H[3, :] = np.nan
    H[:, 7] = np.nan
    df = pd.DataFrame(H, index=[f"m{i}" for i in range(30)], columns=[f"q{j}" for j in range(40)])
    with pytest.warns(FactorFitWarning, match="no observation"):
        fm = FactorModel(k=2, seed=0).fit(df)
    assert list(fm.empty_rows_) == [3] and list(fm.empty_cols_) == [7]
    assert np.all(fm.U_[3] == 0) and np.all(fm.V_[7] == 0)
    np.testing.assert_allclose(fm.prior_mean_, np.delete(fm.U_, 3, axis=0).mean(0))
    assert fm.row_labels_[3] == "m3" and fm.col_labels_[7] == "q7"


def test_seeded_reproducibility_and_bias():
    *_, H = planted(60, 80, seed=7)
    a = FactorModel(k=3, bias=True, seed=11).fit(H)
    b = FactorModel(k=3, bias=True, seed=11).fit(H)
    np.testing.assert_array_equal(a.U_, b.U_)
    np.testing.assert_array_equal(a.V_, b.V_)
    np.testing.assert_array_equal(a.b_, b.b_)
    assert a.heldout_logloss_ == b.heldout_logloss_
    c = FactorModel(cv=2, ks=(1, 2), lambdas=(1.0,), seed=5).fit(H)
    d = FactorModel(cv=2, ks=(1, 2), lambdas=(1.0,), seed=5).fit(H)
    pd.testing.assert_frame_equal(c.cv_results_, d.cv_results_)
    assert np.any(a.b_ != 0)


@pytest.mark.skipif(not REAL.exists(), reason="real Open LLM Leaderboard matrix not available")
def test_real_history_subset():
    df = pd.read_csv(REAL, index_col=0)
    rng = np.random.default_rng(0)
    sub = df.iloc[np.sort(rng.choice(len(df), 200, replace=False)), :300]
    with pytest.warns(FactorFitWarning, match="edge of the grid"):  # best is k=8, the largest tried
        fm = FactorModel(cv=3, ks=(1, 2, 4, 8), lambdas=(1.0, 10.0), seed=0).fit(sub)
    print(f"\nreal MMLU-Pro math subset 200x300: chose k={fm.k_}, lambda={fm.weight_decay_:g}; "
          f"train {fm.train_logloss_:.4f}, held-out {fm.heldout_logloss_:.4f}, "
          f"item-mean baseline {fm.baseline_logloss_:.4f}")
    print(fm.cv_results_.to_string())
    assert fm.heldout_logloss_ < fm.baseline_logloss_  # factors beat per-question difficulty alone
    assert not fm.overfit_warning_
    assert fm.U_.shape == (200, fm.k_) and fm.V_.shape == (300, fm.k_)


def test_complete_history_is_not_copied_during_a_fit():
    """A complete float64 history is read in place: the fit's peak allocation is the three float32 working buffers
    of the objective plus masks, not further models x items float64 copies (or per-entry index arrays)."""
    import tracemalloc

    _, _, Y, _, _ = planted(m=400, n=2000, k=2, p_obs=1.0, seed=3)
    tracemalloc.start()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            FactorModel(k=2, weight_decay=1.0, cv=None, holdout=0, seed=0, max_iter=50).fit(Y)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2.5 * Y.nbytes


@pytest.mark.parametrize("cv_by", ["models", "entries"])
def test_parallel_cv_gives_the_same_numbers(cv_by):
    import multiprocessing as mp

    if "fork" not in mp.get_all_start_methods():
        pytest.skip("no fork start method: n_jobs falls back to one process")
    _, _, _, _, H = planted(m=120, n=150, k=2, p_obs=0.8, seed=5)
    fits = []
    for n_jobs in (1, 2):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fits.append(FactorModel(cv=3, cv_by=cv_by, ks=(1, 2, 3), lambdas=(1.0, 3.0), bias=True, seed=0,
                                    n_jobs=n_jobs).fit(H))
    a, b = fits
    pd.testing.assert_frame_equal(a.cv_results_, b.cv_results_)
    assert np.array_equal(a.U_, b.U_) and np.array_equal(a.V_, b.V_) and np.array_equal(a.b_, b.b_)


def test_train_logloss_by_row_blocks_matches_per_entry():
    from assay.faq.factor import _logloss_rows

    rng = np.random.default_rng(2)
    U, V, Y, obs, _ = planted(m=300, n=90, k=3, p_obs=0.7, seed=4)
    b = rng.normal(size=90)
    r, c = np.nonzero(obs)
    want = _logloss_at(U, V, b, r, c, Y[r, c])
    assert _logloss_rows(U, V, b, np.where(obs, Y, 0.0), obs, rows_per_block=7) == pytest.approx(want, rel=1e-12)


def test_history_as_float_with_nan_or_int8_codes_gives_the_same_fit():
    """The fit holds the history as int8 codes (0, 1, -1 = missing): a float64 table with NaN, the same values as
    an array, as a long table, and the int8 codes of ``as_matrix(..., codes=True)`` all give identical fits."""
    from assay.data.faq import MISSING, FAQMatrix, as_matrix

    _, _, _, obs, H = planted(m=90, n=140, k=2, p_obs=0.7, seed=8)
    rows, items = [f"org{i // 3:02d}/m{i:02d}" for i in range(90)], [f"q{j:03d}" for j in range(140)]
    wide = pd.DataFrame(H, index=rows, columns=items)
    r, c = np.nonzero(obs)
    long = pd.DataFrame({"model": np.asarray(rows)[r], "item": np.asarray(items)[c], "score": H[r, c]})
    codes = as_matrix(wide, "history", codes=True)
    assert codes.values.dtype == np.int8 and codes.values.nbytes == H.size
    assert np.array_equal(codes.values == MISSING, ~obs) and np.array_equal(codes.values[obs], H[obs])
    from_long = as_matrix(long, "history", codes=True)
    # a long table is read as its pivot (models and items in sorted order), now without the float64 pivot
    shuffled = long.sample(frac=1.0, random_state=0)
    piv = shuffled.pivot(index="model", columns="item", values="score")
    got = as_matrix(shuffled, "history")
    assert got.rows == list(piv.index) and got.items == list(piv.columns)
    assert np.array_equal(got.values, piv.to_numpy(dtype=float), equal_nan=True)
    assert np.array_equal(from_long.values, codes.values) and from_long.rows == rows and from_long.items == items
    # the public float form is unchanged: float64, NaN = missing
    flt = as_matrix(wide, "history")
    assert flt.values.dtype == np.float64 and np.array_equal(flt.values, H, equal_nan=True)

    def fit(history, **kw):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return FactorModel(bias=True, seed=3, **kw).fit(history)

    for kw in ({"k": 2, "weight_decay": 1.0},  # with its 10% holdout
               {"cv": 3, "cv_by": "models", "ks": (1, 2), "lambdas": (1.0, 3.0)},
               {"cv": 3, "cv_by": "entries", "ks": (1, 2), "lambdas": (1.0, 3.0)}):
        fits = [fit(wide, **kw), fit(codes, **kw), fit(FAQMatrix(H, rows, items), **kw), fit(from_long, **kw)]
        for other in fits[1:]:
            assert other.row_labels_ == rows and [str(x) for x in other.col_labels_] == items
            assert np.array_equal(fits[0].U_, other.U_) and np.array_equal(fits[0].V_, other.V_)
            assert np.array_equal(fits[0].b_, other.b_)
            assert fits[0].summary() == other.summary()
            if kw.get("cv"):
                pd.testing.assert_frame_equal(fits[0].cv_results_, other.cv_results_)
    # the array form (positional labels) fits the same numbers too
    arr = fit(H, k=2, weight_decay=1.0)
    assert np.array_equal(arr.U_, fit(wide, k=2, weight_decay=1.0).U_)


def test_int8_products_match_the_float64_products():
    """The objective's two products read the int8 history a block at a time (several blocks here, of odd sizes):
    the same numbers as the float64 products of a whole float64 copy."""
    from assay.faq import factor

    rng = np.random.default_rng(1)
    m, n = 333, 5001
    Y8 = (rng.random((m, n)) < 0.4).astype(np.int8)
    V, U = rng.standard_normal((n, 5)), rng.standard_normal((m, 5))
    work: dict = {}
    assert factor._block_len(m, n) < m and factor._block_len(n, m) < n  # really in blocks
    np.testing.assert_allclose(factor._y_times(Y8, V, work), Y8.astype(float) @ V, rtol=1e-13, atol=1e-12)
    np.testing.assert_allclose(factor._yt_times(Y8, U, work), Y8.astype(float).T @ U, rtol=1e-13, atol=1e-12)
    theta = 0.1 * rng.standard_normal((m + n) * 3 + n)
    M = rng.random((m, n)) < 0.8
    Y8m = np.where(M, Y8, np.int8(0))
    f8, g8 = factor._objective(theta, Y8m, M, 3, 1.0, True)
    f64, g64 = factor._objective(theta, Y8m.astype(float), M.astype(np.float32), 3, 1.0, True)
    assert f8 == pytest.approx(f64, rel=1e-13)
    np.testing.assert_allclose(g8, g64, rtol=1e-10, atol=1e-14)


def test_a_fit_holds_no_models_x_items_float64_array():
    """Issue 26: a history with missing answers given as a float64 table is validated and held as int8; the fit's
    peak allocation (tracemalloc, the input excluded) is its int8 / bool arrays and float32 buffers.

    The bound, per models x items entry (m n = 2.4 million here): the objective's three float32 buffers (X, e, s:
    12 bytes), the int8 codes, the bool observed mask, the int8 Y with 0 at missing cells and _fit_core's masked
    int8 copy (4 bytes): 16 bytes; plus the float64 block through which Y enters a product (at most
    max(m n, _BLOCK_ALIGN rows or columns of float64)), L-BFGS-B's workspace (about (2 maxcor + 5) float64 vectors of
    the (m + n) k parameters) and 4 MB for the small arrays (factors, gradients, per-item sums). A models x items
    float64 array is 8 bytes per entry (19.2 MB here), more than the 4 MB slack, so any such copy fails the test
    (the code before the int8 history peaked at 37 bytes per entry: 89 MB against this bound of 51 MB)."""
    import tracemalloc

    from assay.faq import factor

    m, n, k = 600, 4000, 4
    _, _, _, _, H = planted(m=m, n=n, k=k, p_obs=0.7, seed=7)
    wide = pd.DataFrame(H)
    block = max(m * n, 8 * factor._BLOCK_ALIGN * max(m, n))  # _block_len: an eighth of the rows, or 64 of them
    lbfgs = (2 * 20 + 5) * (m + n) * k * 8
    bound = 16 * m * n + block + lbfgs + 4e6
    assert bound < 16 * m * n + 8 * m * n + lbfgs  # one float64 copy would not fit under it
    tracemalloc.start()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fm = FactorModel(k=k, weight_decay=1.0, cv=None, holdout=0, seed=0, max_iter=5).fit(wide)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert fm.n_iter_ >= 1
    assert peak < bound, f"peak {peak / 1e6:.1f} MB, bound {bound / 1e6:.1f} MB"


def _objective_in_child(args):
    from assay.faq import factor

    from threadpoolctl import threadpool_limits

    factor._THREADS = 2
    with threadpool_limits(limits=1, user_api="blas"):
        return factor._objective(*args)


#: run in a child process under one OpenBLAS kernel: the objective on 1, 2, 3 and 4 threads, for each (bias, masked),
#: on 500 x 1,400 cut into blocks of a few rows and columns (a ragged last block); prints the kernel and the results
_THREADS_CHILD = """
import json, sys
import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits
from assay.faq import factor

factor._TASK_BYTES = 1 << 14
m, n, k = 500, 1400, 4
out = {"kernel": sorted({i.get("architecture") or "?" for i in threadpool_info() if i["internal_api"] == "openblas"}),
       "blocks": [len(factor._blocks(m, n)), len(factor._blocks(n, m))], "cases": []}
for bias, masked in [(True, True), (False, False), (True, False), (False, True)]:
    rng = np.random.default_rng(11)
    Y = (rng.random((m, n)) < 0.5).astype(np.int8)
    M = rng.random((m, n)) < 0.75 if masked else None
    if M is not None:
        Y = np.where(M, Y, np.int8(0))
    theta = 0.3 * rng.standard_normal((m + n) * k + (n if bias else 0))
    res = {}
    for t in (1, 2, 3, 4):
        factor._THREADS = t
        with threadpool_limits(limits=1, user_api="blas"):  # as in a fit (FactorModel.fit)
            res[t] = factor._objective(theta, Y, M, k, 2.0, bias, {})
    out["cases"].append({"bias": bias, "masked": masked,
                         "same": [bool(res[t][0] == res[1][0] and np.array_equal(res[t][1], res[1][1]))
                                  for t in (2, 3, 4)],
                         "grad_max_diff": [float(np.abs(res[t][1] - res[1][1]).max()) for t in (2, 3, 4)]})
print(json.dumps(out))
"""


@pytest.mark.slow
@pytest.mark.parametrize("kernel", [None, "Haswell", "SkylakeX", "Prescott"])
def test_objective_is_the_same_bit_for_bit_on_any_number_of_threads(kernel):
    """The objective's tasks are fixed blocks of rows and columns cut from the history's shape, their partial sums added
    in block order: 1, 2, 3 and 4 threads give the same value and gradient bit for bit, under the machine's default
    OpenBLAS kernel and under each kernel it can run (``OPENBLAS_CORETYPE``; the kernels tile their products
    differently, which is what broke the earlier split, tied to one kernel's tiles). A kernel the CPU lacks dies with
    SIGILL: skipped, with the reason. A split that depends on the number of threads, or two threads sharing a block
    buffer, fails this."""
    import json
    import os
    import signal
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    if kernel:
        env["OPENBLAS_CORETYPE"] = kernel
    p = subprocess.run([sys.executable, "-c", _THREADS_CHILD], capture_output=True, text=True, env=env, timeout=300)
    if kernel and p.returncode == -signal.SIGILL:
        pytest.skip(f"this CPU cannot run OpenBLAS's {kernel} kernel (SIGILL)")
    assert p.returncode == 0, p.stderr[-3000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["blocks"][0] > 4 and out["blocks"][1] > 4  # the history really is cut into several blocks each way
    for case in out["cases"]:
        assert all(case["same"]), f"kernel {out['kernel']}: {case}"


def test_a_threaded_fit_equals_the_one_thread_fit_and_survives_a_fork(monkeypatch):
    """A whole fit on 2 threads gives the one-thread fit exactly, and leaves no thread behind (the pool is the fit's);
    a process forked after a threaded evaluation (the CV's and the protocol's workers are forked) computes the same
    numbers on threads of its own, not a hang."""
    import threading
    import multiprocessing as mp

    from threadpoolctl import threadpool_limits

    from assay.faq import factor

    monkeypatch.setattr(factor, "_TASK_BYTES", 1 << 13)  # several blocks each way at this size
    U, V, Y, obs, H = planted(m=200, n=600, k=2, p_obs=0.8, seed=4)
    fits = []
    for t in (1, 2):
        monkeypatch.setattr(factor, "_THREADS", t)
        fits.append(FactorModel(k=2, weight_decay=1.0, bias=True, holdout=0, seed=0).fit(H))
    assert np.array_equal(fits[0].U_, fits[1].U_) and np.array_equal(fits[0].V_, fits[1].V_)
    assert not [t for t in threading.enumerate() if t.name.startswith("assay-faq-fit")]
    rng = np.random.default_rng(0)
    Yi = (rng.random((300, 700)) < 0.5).astype(np.int8)
    args = (0.1 * rng.standard_normal(1000 * 3 + 700), Yi, None, 3, 1.0, True, {})
    with threadpool_limits(limits=1, user_api="blas"):
        want = factor._objective(*args)  # on 2 threads (_THREADS = 2)
    with mp.get_context("fork").Pool(1) as pool:
        f, g = pool.apply_async(_objective_in_child, (args,)).get(timeout=60)
    assert f == want[0] and np.array_equal(g, want[1])
