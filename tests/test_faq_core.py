"""assay.faq.core: Algorithm 1 against a from-scratch loop, the Laplace update, unbiasedness and coverage."""

import numpy as np
import pytest
from scipy import stats
from scipy.special import expit

from assay.errors import AssayInputError
from assay.faq.core import FAQParams, run_faq

Z95 = stats.norm.ppf(0.975)


def reference_faq(V, mu, S, z, n_b, uniforms, beta0, rho, gamma, tau):
    """Algorithm 1 for one model, written from the paper with everything recomputed each round."""
    N, k = V.shape
    u, Sig = mu.copy(), S.copy()
    items, phis, A_terms, zq, sums = [], [], [], [], []
    for t in range(1, n_b + 1):
        p = np.clip(expit(V @ u), 1e-12, 1 - 1e-12)
        w = p * (1 - p)
        h_o = np.sqrt(w) / np.sqrt(w).sum()
        alpha_t = max(0.0, 1 - t / (rho * n_b)) if rho > 0 else 0.0
        beta_t = beta0 * min(1.0, t / (gamma * n_b)) if gamma > 0 else beta0
        if alpha_t > 0:
            g = Sig @ (V.T @ w / N)
            d = np.array([w[j] * (V[j] @ g) ** 2 / (1 + w[j] * V[j] @ Sig @ V[j]) for j in range(N)])
            h_a = d / d.sum()
            h = (1 - alpha_t) * h_o + alpha_t * h_a
        else:
            h = h_o
        h = h**beta_t
        q = tau / N + (1 - tau) * h / h.sum()
        cum = np.cumsum(q)
        I = min(int(np.sum(cum < uniforms[t - 1] * cum[-1])), N - 1)
        phi = p.sum() / N + (z[I] - p[I]) / (N * q[I])
        items.append(I)
        phis.append(phi)
        A_terms.append(((z[I] - p[I]) / q[I]) ** 2)
        zq.append(z[I] / q[I])
        sums.append(p.sum())
        v = V[I]
        wI = p[I] * (1 - p[I])
        Sig_new = Sig - wI * np.outer(Sig @ v, v @ Sig) / (1 + wI * v @ Sig @ v)  # eq. 4
        u = u + Sig_new @ ((z[I] - p[I]) * v)  # eq. 5
        Sig = Sig_new
    phis = np.array(phis)
    T_hat = np.mean(zq)
    var8 = np.mean(A_terms) / N**2 - np.mean((T_hat - np.array(sums)) ** 2) / N**2
    return np.array(items), phis.mean(), np.sqrt(max(var8, 0) / n_b), phis.std(ddof=1) / np.sqrt(n_b)


def small_world(N=40, k=3, M=3, seed=0):
    rng = np.random.default_rng(seed)
    V = rng.normal(size=(N, k))
    mu = rng.normal(size=k) * 0.3
    A = rng.normal(size=(k, k))
    S = A @ A.T / k + 0.2 * np.eye(k)
    Z = (rng.random((M, N)) < 0.4).astype(float)
    return V, mu, S, Z


@pytest.mark.parametrize("beta0, rho, gamma, tau", [(1.0, 0.0, 0.0, 0.05), (0.5, 0.3, 0.4, 0.25),
                                                    (0.75, 1.0, 0.0, 0.5), (1.0, 0.2, 1.0, 1.0)])
def test_matches_loop_reference(beta0, rho, gamma, tau):
    V, mu, S, Z = small_world()
    n_b = 25
    prm = FAQParams(beta0=beta0, rho=rho, gamma=gamma, tau=tau, design="wr")
    run = run_faq(V, mu, S, Z, n_b, rng=np.random.default_rng(11), params=prm)
    uniforms = np.random.default_rng(11).random((n_b, Z.shape[0]))  # core draws one uniform per model per round
    for m in range(Z.shape[0]):
        items, est, se8, se_inc = reference_faq(V, mu, S, Z[m], n_b, uniforms[:, m], beta0, rho, gamma, tau)
        assert np.array_equal(run.items[m], items)
        assert run.estimate[m] == pytest.approx(est, abs=1e-10)
        assert run.ses["paper"][m] == pytest.approx(se8, abs=1e-10)
        # increments: sample variance with ddof = 1 (the weighted correction reduces to n/(n-1) for equal weights)
        assert run.ses["increments"][m] == pytest.approx(se_inc, abs=1e-10)


def reference_wor(V, mu, S, z, n_b, uniforms, tau):
    """The without-replacement design for one model, from its definition (core module docstring), recomputed."""
    N, k = V.shape
    u, Sig = mu.copy(), S.copy()
    R = list(range(N))
    asked_sum = 0.0
    phis, cs, vs, items = [], [], [], []
    for t in range(1, n_b + 1):
        p = np.clip(expit(V @ u), 1e-12, 1 - 1e-12)
        w = p * (1 - p)
        hR = np.sqrt(w[R]) / np.sqrt(w[R]).sum()
        qR = tau / len(R) + (1 - tau) * hR
        q = np.zeros(N)
        q[R] = qR / qR.sum()
        cum = np.cumsum(q)
        I = min(int(np.sum(cum < uniforms[t - 1] * cum[-1])), N - 1)
        phis.append((asked_sum + p[R].sum() + (z[I] - p[I]) / q[I]) / N)
        cs.append((N / len(R)) ** 2)
        vs.append((np.sum(w[R] / q[R]) - np.sum(w[R])) / N**2)
        items.append(I)
        asked_sum += z[I]
        R.remove(I)
        v = V[I]
        wI = p[I] * (1 - p[I])
        Sig_new = Sig - wI * np.outer(Sig @ v, v @ Sig) / (1 + wI * v @ Sig @ v)
        u = u + Sig_new @ ((z[I] - p[I]) * v)
        Sig = Sig_new
    c = np.array(cs)
    W = c / c.sum()
    phis = np.array(phis)
    est = W @ phis
    corr = 1 - 2 * np.sum(W**3) / np.sum(W**2) + np.sum(W**2)
    inc = np.sqrt(np.sum(W**2 * (phis - est) ** 2) / corr)
    model = np.sqrt(np.sum(W**2 * np.array(vs)))
    return np.array(items), est, inc, model


@pytest.mark.parametrize("tau", [0.05, 0.5, 1.0])
def test_without_replacement_matches_definition(tau):
    V, mu, S, Z = small_world(N=30, seed=2)
    n_b = 20
    run = run_faq(V, mu, S, Z, n_b, rng=np.random.default_rng(4), params=FAQParams(tau=tau))
    uniforms = np.random.default_rng(4).random((n_b, Z.shape[0]))
    for m in range(Z.shape[0]):
        items, est, inc, model = reference_wor(V, mu, S, Z[m], n_b, uniforms[:, m], tau)
        assert np.array_equal(run.items[m], items) and len(set(items)) == n_b  # each question at most once
        assert run.estimate[m] == pytest.approx(est, abs=1e-12)
        assert run.ses["increments"][m] == pytest.approx(inc, abs=1e-12)
        assert run.ses["model"][m] == pytest.approx(model, abs=1e-12)
        assert run.se[m] == pytest.approx(max(inc, model), abs=1e-12)


def test_without_replacement_full_budget_is_exact():
    V, mu, S, Z = small_world(N=25, M=4, seed=5)
    run = run_faq(V, mu, S, Z, 25, rng=np.random.default_rng(0))
    np.testing.assert_allclose(run.estimate, Z.mean(axis=1), atol=1e-15)
    np.testing.assert_allclose(run.hi - run.lo, 0.0)
    assert (run.n_distinct == 25).all()
    with pytest.raises(AssayInputError, match="cannot exceed"):
        run_faq(V, mu, S, Z, 26, rng=np.random.default_rng(0))


def test_rank_one_score_equals_naive_recompute():
    V, mu, S, Z = small_world(N=80, k=4, M=4, seed=3)
    prm = FAQParams(rho=1.0, gamma=0.3)
    a = run_faq(V, mu, S, Z, 30, rng=np.random.default_rng(2), params=prm)
    b = run_faq(V, mu, S, Z, 30, rng=np.random.default_rng(2), params=prm, naive_al=True)
    assert np.array_equal(a.items, b.items)
    np.testing.assert_allclose(a.estimate, b.estimate, atol=1e-12)


def test_sherman_morrison_laplace_step():
    """Eq. 4 equals the inverse of S^-1 + w v v'; eq. 5 as implemented (s / (1 + w v's)) equals S_new (z - p) v."""
    rng = np.random.default_rng(0)
    k = 4
    A = rng.normal(size=(k, k))
    S = A @ A.T + np.eye(k)
    v, w, r = rng.normal(size=k), 0.2, 0.7
    S_new = S - w * np.outer(S @ v, S @ v) / (1 + w * v @ S @ v)
    np.testing.assert_allclose(S_new, np.linalg.inv(np.linalg.inv(S) + w * np.outer(v, v)), rtol=1e-10)
    np.testing.assert_allclose(S_new @ (r * v), r * (S @ v) / (1 + w * v @ S @ v), rtol=1e-10)


def lowrank_world(M, N, k, seed):
    rng = np.random.default_rng(seed)
    V = rng.normal(size=(N, k))
    mu = np.zeros(k)
    mu[0] = -0.8
    U = mu + rng.normal(size=(M, k))
    Z = (rng.random((M, N)) < expit(U @ V.T)).astype(float)
    return V, mu, np.eye(k), Z


@pytest.mark.slow
@pytest.mark.parametrize("design", ["wor", "wr"])
def test_unbiased_even_with_a_wrong_model(design):
    """Theorem 3.1(a): E[theta_hat] = theta for ANY predictor, here random factors unrelated to the answers; and
    the standard error matches the spread over replications. Without replacement at 40% of the bank the spread is
    smaller (the finite-population correction), with replacement it is not."""
    rng = np.random.default_rng(5)
    N, R = 150, 4000
    z = (rng.random(N) < np.linspace(0.05, 0.9, N)).astype(float)
    Vw = rng.normal(size=(N, 3)) * 2
    Z = np.tile(z, (R, 1))
    run = run_faq(Vw, np.array([1.0, -1.0, 0.5]), np.eye(3), Z, 60, rng=np.random.default_rng(6),
                  params=FAQParams(tau=0.2, design=design))
    err = run.estimate - z.mean()
    assert abs(err.mean()) < 4 * err.std(ddof=1) / np.sqrt(R)
    # the increments' standard error is unbiased for the spread (within 5%: its own MC error is ~1%)
    assert np.sqrt(np.mean(run.ses["increments"] ** 2)) == pytest.approx(err.std(ddof=1), rel=0.05)


def test_naive_without_replacement_is_biased_where_the_paper_says():
    """App. B: drawing from the restriction but keeping the full-bank formula is biased; the valid design is not.

    A confident model (prior variance 0.01) with p from 0.02 to 0.98 along the bank; the model answers correctly
    exactly on the uncertain middle third, which q favours: those questions are asked first, and the naive
    estimator then keeps dividing by their full-bank q. Measured bias at 45 of 60 questions: -0.077 (s.e.
    0.0008); the valid design 0.0003 (s.e. 0.0007)."""
    N, R = 60, 4000
    x = np.linspace(-4, 4, N)
    V = np.c_[x, np.ones(N)]
    z = (np.abs(x) < 1.5).astype(float)
    Z = np.tile(z, (R, 1))
    errs = {}
    for design in ("wor", "naive-wor"):
        run = run_faq(V, np.array([1.0, 0.0]), np.eye(2) * 0.01, Z, 45, rng=np.random.default_rng(7),
                      params=FAQParams(tau=0.05, design=design))
        e = run.estimate - z.mean()
        errs[design] = (e.mean(), e.std(ddof=1) / np.sqrt(R))
    assert abs(errs["wor"][0]) < 4 * errs["wor"][1]
    assert errs["naive-wor"][0] < -20 * errs["naive-wor"][1]


@pytest.mark.slow
def test_coverage_correct_world_and_eq8_lower():
    V, mu, S, Z = lowrank_world(3000, 400, 3, seed=8)
    theta = Z.mean(axis=1)
    run = run_faq(V, mu, S, Z, 80, rng=np.random.default_rng(9), params=FAQParams(tau=0.05, design="wr",
                                                                                    quantile="normal"))
    cover = {k: np.mean(np.abs(run.estimate - theta) <= Z95 * se) for k, se in run.ses.items()}
    assert set(cover) == {"increments", "model", "conservative", "paper"}
    tol = 4 * np.sqrt(0.95 * 0.05 / Z.shape[0])
    assert abs(cover["increments"] - 0.95) < tol + 0.01
    assert cover["conservative"] >= 0.95 - tol
    # eq. 8 is biased down (module docstring): it covers less than the increments estimator on the same draws
    assert cover["paper"] < cover["increments"]
    assert np.mean(run.ses["paper"]) < np.mean(run.ses["increments"])
    # a good factor model beats uniform sampling's standard error
    se_unif = np.sqrt(theta * (1 - theta) / 80)
    assert np.mean(run.ses["increments"]) < 0.9 * np.mean(se_unif)  # measured 0.84


def test_live_callable_equals_offline():
    V, mu, S, Z = small_world(N=50, M=2, seed=4)
    for design in ("wor", "wr"):
        prm = FAQParams(design=design)
        off = run_faq(V, mu, S, Z, 15, rng=np.random.default_rng(1), params=prm)
        live = run_faq(V, mu, S, lambda t, I: Z[np.arange(2), I], 15, n_models=2, rng=np.random.default_rng(1),
                       params=prm)
        assert np.array_equal(off.items, live.items) and np.array_equal(off.estimate, live.estimate)
    with pytest.raises(AssayInputError, match="n_models"):
        run_faq(V, mu, S, lambda t, I: Z[0, I], 5, rng=np.random.default_rng(1))


def test_extreme_factors_stay_finite():
    rng = np.random.default_rng(0)
    N = 100
    V = rng.normal(size=(N, 2)) * 30  # |u.v| up to ~100
    Z = (rng.random((3, N)) < 0.5).astype(float)
    run = run_faq(V, np.array([1.0, 1.0]), np.eye(2) * 4, Z, 40, rng=np.random.default_rng(1),
                  params=FAQParams(tau=0.1, rho=0.5))
    assert np.isfinite(run.estimate).all() and all(np.isfinite(s).all() for s in run.ses.values())
    assert (run.q_chosen >= 0.1 / N - 1e-15).all()  # without replacement q >= tau / |R| >= tau / N
    assert ((run.lo >= 0) & (run.hi <= 1)).all()


@pytest.mark.parametrize("kw", [dict(beta0=1.5), dict(rho=-0.1), dict(gamma=2), dict(tau=0), dict(tau=1.2),
                                dict(variance="bootstrap"), dict(quantile="cauchy"), dict(beta0=float("nan")),
                                dict(design="bootstrap"), dict(variance="paper"), dict(tau=True)])
def test_params_validation(kw):
    with pytest.raises(AssayInputError):
        FAQParams(**kw)
