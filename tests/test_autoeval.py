"""R-Eval / R-AutoEval / R-AutoEval+ (assay.autoeval) and the betting machinery (assay.stats.betting).

Exact formulas are checked against per-sample loop implementations written from the paper
(papers/r-autoeval-plus.txt eq. 10-13, 20-22, App. C, E.5; notes/autoeval.md §2, §4.1, §4.4).
Statistical claims (type-I error, FWER, coverage, power) are checked by seeded Monte Carlo, with
tolerances p + 3 * sqrt(p (1 - p) / trials) (DESIGN.md). Large Monte Carlo runs call the betting
functions on (trials, S, n) arrays of effective observations (the same code path ``certify`` uses:
``test_harness_matches_certify`` pins that), and smaller runs go through ``certify`` itself.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.special import logsumexp
from scipy.stats import binom

from assay import autoeval as ae
from assay.autoeval import AutoEvalResult, certify, effective_observations
from assay.errors import AssayInputError
from assay.results import Result
from assay.stats import betting as bt

# one worker runs this module: its module-scoped fixtures are computed once, not on each xdist worker
pytestmark = pytest.mark.xdist_group("autoeval")

RHOS = np.linspace(0.0, 1.0, 10)  # R-AutoEval+ grid; row 0 is R-Eval, row -1 is R-AutoEval
TARGET = 0.12
ROW = {"r-eval": 0, "r-autoeval": -1}


def mc_limit(p: float, trials: int, k: float = 3.0) -> float:
    """Largest Monte Carlo rate compatible with a true rate <= p (k standard errors)."""
    return p + k * math.sqrt(p * (1.0 - p) / trials)


# --------------------------------------------------------------------------------------------
# Data simulation
# --------------------------------------------------------------------------------------------


def judge_losses(kind: str, loss: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Judge loss l~ for human losses ``loss`` (0/1). Kinds:

    * ``flipP``  : flips each loss with probability P (e.g. ``flip0.05``; gamma = 1 - P)
    * ``optimistic``: reports 0 ("the model is fine") unless the loss is 1, and then only w.p. 0.1
    * ``adversarial``: always wrong, l~ = 1 - l (PPI's correction term pushes the wrong way)
    """
    if kind.startswith("flip"):
        p = float(kind[4:])
        return np.where(rng.random(loss.shape) < p, 1.0 - loss, loss)
    if kind == "optimistic":
        return loss * (rng.random(loss.shape) < 0.1)
    if kind == "adversarial":
        return 1.0 - loss
    raise ValueError(kind)


def simulate(rng, T, n, N, R, kind):
    """T independent data sets: human losses (T, n), judge on them (T, n), judge on N unlabelled (T, N)."""
    h = (rng.random((T, n)) < R).astype(float)
    jl = judge_losses(kind, h, rng)
    hu = (rng.random((T, N)) < R).astype(float)  # latent human losses of the unlabelled examples
    ju = judge_losses(kind, hu, rng)
    return h, jl, ju


def effective(h, jl, ju, rhos=RHOS):
    """(T, S, n) effective observations through the library's eq. 10 implementation."""
    return np.stack([effective_observations(h[k], jl[k], ju[k], rhos)[0] for k in range(len(h))])


def rejections(q, delta, *, target=TARGET, rhos=RHOS, betting="wsr", horizon="n", grid=10_000):
    """Rejection indicators of R-Eval (rho = 0), R-AutoEval (rho = 1), R-AutoEval+ (mixture)."""
    n = q.shape[-1]
    log_e = bt.e_process(q, target, lo=-rhos, hi=1 + rhos, betting=betting, delta=delta,
                         horizon=n if horizon == "n" else horizon, grid=grid)
    return {
        "r-eval": bt.ville(log_e[:, 0], delta)[0],
        "r-autoeval": bt.ville(log_e[:, -1], delta)[0],
        "r-autoeval+": bt.ville(bt.mixture_log_wealth(log_e), delta)[0],
    }


def p_values(q, level, rhos=RHOS):
    """Anytime p-values min(1, 1 / max_i E_i) of the mixture test, bets tuned at ``level``."""
    log_e = bt.e_process(q, TARGET, lo=-rhos, hi=1 + rhos, delta=level, horizon=q.shape[-1])
    return np.minimum(1.0, np.exp(-bt.mixture_log_wealth(log_e).max(axis=-1)))


def long_table(h, jl, ju, names, **extra):
    """Tidy table (candidate, item, loss_human, loss_judge) with one candidate per row of the arrays."""
    T, n = h.shape
    N = ju.shape[1]
    items = np.array([f"i{k}" for k in range(n + N)])
    human = np.concatenate([h, np.full((T, N), np.nan)], axis=1)
    judge = np.concatenate([jl, ju], axis=1)
    df = pd.DataFrame({
        "candidate": np.repeat(np.asarray(names, dtype=object), n + N),
        "item": np.tile(items, T),
        "loss_human": human.ravel(),
        "loss_judge": judge.ravel(),
    })
    for col, per_candidate in extra.items():
        df[col] = np.repeat(np.asarray(per_candidate, dtype=object), n + N)
    return df


def small_table(seed=0, risks=(0.05,), n=60, N=600, kind="flip0.05", **extra):
    rng = np.random.default_rng(seed)
    parts = [simulate(rng, 1, n, N, R, kind) for R in risks]
    h, jl, ju = (np.concatenate(x) for x in zip(*parts))
    return long_table(h, jl, ju, [f"m{k}" for k in range(len(risks))], **extra)


# ============================================================================================
# 1. Exact formulas against loop implementations written from the paper
# ============================================================================================


def wsr_loop(q, delta, cap, horizon):
    """eq. 21-22, one sample at a time: mu0 = 1/2, sigma0^2 = 1/4; n -> i log(i + 1) if no horizon."""
    n = len(q)
    lam = np.empty(n)
    sum_q = 0.0
    sum_dev = 0.0
    for i in range(1, n + 1):
        sigma2 = (0.25 + sum_dev) / i  # sigma^2_{i-1}: uses q_1..q_{i-1}
        scale = horizon if horizon is not None else i * math.log(i + 1)
        lam[i - 1] = min(cap, math.sqrt(2 * math.log(1 / delta) / (scale * sigma2)))
        sum_q += q[i - 1]
        mu_i = (0.5 + sum_q) / (i + 1)  # mu_i includes q_i
        sum_dev += (q[i - 1] - mu_i) ** 2
    return lam


@pytest.mark.parametrize("horizon", [250, None])
@pytest.mark.parametrize("delta", [0.1, 0.01])
def test_wsr_bets_match_loop(horizon, delta):
    rng = np.random.default_rng(1)
    rhos = np.array([0.0, 0.4, 1.0])
    q = rhos[:, None] * rng.random((3, 250)) + (rng.random((3, 250)) < 0.2) - rhos[:, None] * (rng.random((3, 250)) < 0.3)
    cap = 0.75 / (1 + rhos - TARGET)  # c / (M - alpha), c = 3/4
    got = bt.wsr_bets(q, delta=delta, cap=cap, horizon=horizon)
    want = np.stack([wsr_loop(q[s], delta, cap[s], horizon) for s in range(3)])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
    # a scalar cap broadcasts, and the first bet only uses the prior variance 1/4
    got1 = bt.wsr_bets(q[:1], delta=delta, cap=5.0, horizon=horizon)
    scale1 = horizon if horizon is not None else math.log(2)
    assert got1[0, 0] == pytest.approx(min(5.0, math.sqrt(2 * math.log(1 / delta) / (scale1 * 0.25))))
    # predictable: changing q_i does not change lambda_1..lambda_i
    q2 = q.copy()
    q2[:, 100] = 1.0 - q2[:, 100]
    np.testing.assert_array_equal(bt.wsr_bets(q2, delta=delta, cap=cap, horizon=horizon)[:, :101], got[:, :101])


def test_e_process_wsr_matches_product():
    """eq. 6 with the WSR bets capped at c / (M - alpha); monotone bets capped at 1 / (M - m)."""
    rng = np.random.default_rng(2)
    rho = 0.5
    q = rho * rng.random(120) + (rng.random(120) < 0.1) - rho * (rng.random(120) < 0.1)
    for monotone, cap in [(False, 0.75 / (1 + rho - TARGET)), (True, 1 / (1 + 2 * rho))]:
        lam = wsr_loop(q, 0.1, cap, 120)
        want = np.cumsum(np.log(1 - lam * (q - TARGET)))
        got = bt.e_process(q, TARGET, lo=-rho, hi=1 + rho, delta=0.1, horizon=120, monotone=monotone)
        np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-12)


def up_direct(q, target, scale, grid):
    """log of the prior-weighted sum over the bet grid of prod_j (1 - b x_j) (eq. 20)."""
    b = (np.arange(grid) + 0.5) / grid
    prior = 1 / np.sqrt(b * (1 - b))
    prior /= prior.sum()
    x = (q - target) / scale
    logs = np.cumsum(np.log1p(-np.outer(b, x)), axis=1)  # (grid, n)
    return logsumexp(logs + np.log(prior)[:, None], axis=0)


def test_up_log_wealth_matches_direct_sum_and_posterior_mean_bets():
    rng = np.random.default_rng(3)
    grid = 40
    rho = 0.3
    q = rho * rng.random(300) + (rng.random(300) < 0.1) - rho * (rng.random(300) < 0.2)
    scale = 1 + rho - TARGET
    got = bt.up_log_wealth(q, TARGET, scale, grid=grid)
    np.testing.assert_allclose(got, up_direct(q, TARGET, scale, grid), rtol=1e-10, atol=1e-10)
    # the same wealth, obtained by betting the posterior-mean fraction one step at a time (App. C.1)
    b = (np.arange(grid) + 0.5) / grid
    prior = 1 / np.sqrt(b * (1 - b))
    prior /= prior.sum()
    logw = np.zeros(grid)
    log_e = 0.0
    path = []
    for qi in q:
        post = np.exp(logw - logw.max()) * prior
        lam = (post @ b) / post.sum() / scale
        log_e += math.log(1 - lam * (qi - TARGET))
        logw += np.log1p(-b * (qi - TARGET) / scale)
        path.append(log_e)
    np.testing.assert_allclose(got, path, rtol=1e-9, atol=1e-9)
    # vectorised over leading dimensions with broadcast targets and scales
    Q = np.stack([q, q[::-1]])
    got2 = bt.up_log_wealth(Q, np.array([0.1, 0.2]), np.array([1.0, 1.5]), grid=grid)
    np.testing.assert_allclose(got2[1], up_direct(q[::-1], 0.2, 1.5, grid), rtol=1e-10, atol=1e-10)


def mixture_loop(q, lam, alpha, w0):
    """Exponential-weights recursion eq. 11-13: w_{s,i} ∝ w_{s,0} E_{s,i-1};
    E_i = E_{i-1} * sum_s w_{s,i} (1 - lambda_{s,i} (q_{s,i} - alpha)). Returns log E_i and w_{s,i}."""
    S, n = q.shape
    log_es = np.zeros(S)  # log E_{s,i-1}
    log_e = 0.0
    out = np.empty(n)
    weights = np.empty((S, n))
    for i in range(n):
        a = np.log(w0) + log_es
        w = np.exp(a - a.max())
        w /= w.sum()
        factor = 1 - lam[:, i] * (q[:, i] - alpha)
        log_e += math.log(w @ factor)
        log_es += np.log(factor)
        out[i] = log_e
        weights[:, i] = w
    return out, weights


@pytest.mark.parametrize("uniform", [True, False])
def test_mixture_equals_exponential_weights_recursion(uniform):
    """Lemma (App. F.1, eq. 26): the recursion (11)-(13) equals sum_s w_{s,0} E_{s,n}."""
    rng = np.random.default_rng(4)
    n = 400
    h = (rng.random(n) < 0.1).astype(float)
    jl = judge_losses("flip0.1", h, rng)
    ju = judge_losses("flip0.1", (rng.random(10 * n) < 0.1).astype(float), rng)
    q, _, _ = effective_observations(h, jl, ju, RHOS)
    lo, hi = -RHOS, 1 + RHOS
    lam = bt.wsr_bets(q, delta=0.1, cap=0.75 / (hi - TARGET), horizon=n)
    w0 = np.full(10, 0.1) if uniform else rng.random(10) + 0.05
    log_e_s = bt.e_process(q, TARGET, lo=lo, hi=hi, delta=0.1, horizon=n)
    got = bt.mixture_log_wealth(log_e_s, None if uniform else w0)
    want, w_want = mixture_loop(q, lam, TARGET, w0 / w0.sum())
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(bt.mixture_weights(log_e_s, None if uniform else w0), w_want, rtol=1e-9, atol=1e-12)
    # regret bound (eq. 27-28): log E_n >= log E_{s,n} + log w_{s,0} for every s
    assert np.all(got[-1] >= log_e_s[:, -1] + np.log(w0 / w0.sum()) - 1e-12)


def effective_loop(human, judge_l, judge_u, rhos):
    """eq. 10: q_{s,i} = rho_s / r * sum of the i-th contiguous block of r judge losses + l_i - rho_s l~_i."""
    n, N = len(human), len(judge_u)
    r = N // n
    q = np.empty((len(rhos), n))
    for s, rho in enumerate(rhos):
        for i in range(n):
            block = judge_u[r * i: r * (i + 1)]
            q[s, i] = (rho / r * block.sum() if r else 0.0) + human[i] - rho * judge_l[i]
    return q, r, N - r * n


@pytest.mark.parametrize("n,N", [(7, 70), (7, 75), (7, 13), (7, 7), (5, 0)])
def test_effective_observations_blocks_and_remainder(n, N):
    rng = np.random.default_rng(n + N)
    human, judge_l, judge_u = rng.random(n), rng.random(n), rng.random(N)
    rhos = RHOS if N else np.array([0.0])
    got, r, unused = effective_observations(human, judge_l, judge_u, rhos)
    want, r_want, unused_want = effective_loop(human, judge_l, judge_u, rhos)
    assert (r, unused) == (r_want, unused_want) == (N // n, N - (N // n) * n)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(got[0], human)  # rho = 0 is R-Eval
    if N:
        # the remainder is dropped: changing the unused tail changes nothing
        tail = judge_u.copy()
        tail[r * n:] = 1.0 - tail[r * n:]
        np.testing.assert_array_equal(effective_observations(human, judge_l, tail, rhos)[0], got)


def test_ville_and_log_wealth():
    log_e = np.log(np.array([[0.5, 2.0, 11.0, 3.0], [1.0, 9.99, 9.0, 0.1], [10.0, 1.0, 1.0, 1.0]]))
    reject, first = bt.ville(log_e, 0.1)
    assert reject.tolist() == [True, False, True]
    assert first.tolist() == [2, -1, 0]
    q = np.array([0.0, 1.0, 0.5])
    lam = np.array([0.5, 0.25, 1.0])
    np.testing.assert_allclose(bt.log_wealth(q, 0.2, lam), np.cumsum(np.log([1.1, 0.8, 0.7])))


def test_certify_path_matches_loop_end_to_end():
    """certify's e-value path = the R-AutoEval+ recursion computed by hand from the raw table."""
    df = small_table(seed=5, risks=(0.06,), n=80, N=850, kind="flip0.1")
    res = certify(df, risk_target=TARGET, delta=0.1, shuffle=False, bounds=False)
    lab = df[df["loss_human"].notna()]
    unl = df[df["loss_human"].isna()]
    q, r, unused = effective_loop(lab["loss_human"].to_numpy(), lab["loss_judge"].to_numpy(),
                                  unl["loss_judge"].to_numpy(), RHOS)
    lam = np.stack([wsr_loop(q[s], 0.1, 0.75 / (1 + RHOS[s] - TARGET), 80) for s in range(10)])
    log_e, _ = mixture_loop(q, lam, TARGET, np.full(10, 0.1))
    np.testing.assert_allclose(np.log(res.path("m0")), log_e, rtol=1e-9, atol=1e-9)
    row = res.candidates.iloc[0]
    assert (row["n"], row["N"], row["r"], row["unused_unlabelled"]) == (80, 850, 10, 50)
    assert row["p_value"] == pytest.approx(min(1.0, math.exp(-log_e.max())), rel=1e-9)
    assert bool(row["certified"]) == bool(log_e.max() >= math.log(10))


# ============================================================================================
# 2. Growth-rate anchors (notes §4.1; toy Example 1: R = 0.1, alpha = 0.12, r = 10)
# ============================================================================================

NOTES_G = {  # notes/autoeval.md §4.1, rho = 0, 1/9, ..., 1
    0.99: [0.00199, 0.00248, 0.00315, 0.00412, 0.00556, 0.00777, 0.00950, 0.01007, 0.00995, 0.00943],
    0.90: [0.00199, 0.00235, 0.00273, 0.00310, 0.00338, 0.00350, 0.00341, 0.00313, 0.00274, 0.00232],
    0.70: [0.00199, 0.00212, 0.00214, 0.00205, 0.00187, 0.00164, 0.00140, 0.00118, 0.00099, 0.00083],
}
# The same quantity for the exact distribution with r = 10 judge labels per human label (computed
# here; the block mean adds variance, so each value is below the r -> infinity anchor).
EXACT_R10_G = {
    0.99: [0.00199, 0.00247, 0.00313, 0.00404, 0.00531, 0.00706, 0.00859, 0.00899, 0.00871, 0.00804],
    0.90: [0.00199, 0.00235, 0.00271, 0.00303, 0.00323, 0.00324, 0.00306, 0.00273, 0.00234, 0.00196],
    0.70: [0.00199, 0.00211, 0.00212, 0.00200, 0.00180, 0.00155, 0.00131, 0.00109, 0.00091, 0.00076],
}


def toy_distribution(gamma, rho, r, R=0.1):
    """Exact law of q_rho = rho * mean(r judge losses) + l - rho * l~ (r = None: the block mean is
    replaced by its expectation, the 'N sufficiently large' model of the reference get_g_star)."""
    p_judge = R * gamma + (1 - R) * (1 - gamma)  # P(l~ = 1)
    values, probs = [], []
    for l in (0, 1):
        for flip in (0, 1):
            lt = l ^ flip
            p = (R if l else 1 - R) * ((1 - gamma) if flip else gamma)
            if r is None:
                values.append(rho * p_judge + l - rho * lt)
                probs.append(p)
            else:
                k = np.arange(r + 1)
                values.extend(rho * k / r + l - rho * lt)
                probs.extend(p * binom.pmf(k, r, p_judge))
    return np.array(values), np.array(probs)


@pytest.mark.parametrize("gamma", [0.99, 0.90, 0.70])
def test_growth_rate_anchors(gamma):
    g_inf = [bt.growth_rate(*toy_distribution(gamma, rho, None), TARGET, 1 + rho)[0] for rho in RHOS]
    g_r10 = [bt.growth_rate(*toy_distribution(gamma, rho, 10), TARGET, 1 + rho)[0] for rho in RHOS]
    # the notes' anchors are the r -> infinity model, to the printed precision
    np.testing.assert_allclose(g_inf, NOTES_G[gamma], atol=5e-6, rtol=0)
    np.testing.assert_allclose(g_r10, EXACT_R10_G[gamma], atol=5e-6, rtol=0)
    assert np.all(np.array(g_r10) <= np.array(g_inf) + 1e-12)
    assert g_r10[0] == pytest.approx(g_inf[0])  # rho = 0 does not use the judge
    # independent check of the optimiser: brute force over a fine bet grid
    for rho in (0.0, 5 / 9, 1.0):
        v, p = toy_distribution(gamma, rho, 10)
        lam = np.linspace(0, 1 / (1 + rho - TARGET), 200_001)[:-1]
        brute = (p[None, :] * np.log1p(-lam[:, None] * (v[None, :] - TARGET))).sum(1).max()
        g = bt.growth_rate(v, p, TARGET, 1 + rho)[0]
        assert brute - 1e-12 <= g <= brute * (1 + 1e-5)  # the optimum may sit at the cap, just past the grid


def test_growth_rate_argmax_moves_to_zero_as_judge_worsens():
    best = {}
    for r in (None, 10):
        best[r] = [RHOS[np.argmax([bt.growth_rate(*toy_distribution(g, rho, r), TARGET, 1 + rho)[0] for rho in RHOS])]
                   for g in (0.99, 0.90, 0.70)]
        assert best[r][0] > best[r][1] > best[r][2] > 0
    assert best[None] == pytest.approx([7 / 9, 5 / 9, 2 / 9])
    assert best[10] == pytest.approx([7 / 9, 5 / 9, 2 / 9])
    # the no-information limit: a coin-flip judge makes rho = 0 optimal
    g = [bt.growth_rate(*toy_distribution(0.5, rho, 10), TARGET, 1 + rho)[0] for rho in RHOS]
    assert int(np.argmax(g)) == 0


# ============================================================================================
# 3. Validity: P(certify | R >= target) <= delta for every judge (the central guarantee)
# ============================================================================================

#: 1,000 data sets a cell (2,000 before): limits 0.1285 (delta 0.1) and 0.0707 (delta 0.05). The three methods' worst
#: cells were 0.098 and 0.044 (R-Eval, optimistic judge, R = target). Deliberately broken, certifying once the wealth
#: reaches 1 / (2 delta) instead of 1 / delta, the worst cells are 0.204 and 0.103: 7 and 4 of the 18 cells of each
#: delta fail (7 and 6 with 2,000 data sets). The naive baselines: labelled mean 0.457 to 0.485, optimistic judge 1.0
VALIDITY_TRIALS = 1000
JUDGES = ["flip0.05", "optimistic", "adversarial"]


@pytest.fixture(scope="module")
def validity_runs():
    """Rejection rates for R in {target, target + 0.03} x judges x delta in {0.1, 0.05}, n = 200, N = 2000."""
    rates = {}
    rng = np.random.default_rng(20261122)
    for R in (TARGET, 0.15):
        for kind in JUDGES:
            h, jl, ju = simulate(rng, VALIDITY_TRIALS, 200, 2000, R, kind)
            q = effective(h, jl, ju)
            for delta in (0.1, 0.05):
                for method, rej in rejections(q, delta).items():
                    rates[(R, kind, delta, method)] = float(rej.mean())
            rates[(R, kind, "naive-labelled")] = float((h.mean(1) < TARGET).mean())
            rates[(R, kind, "naive-judge")] = float((ju.mean(1) < TARGET).mean())
    return rates


@pytest.mark.slow
@pytest.mark.parametrize("method", ae.METHODS)
@pytest.mark.parametrize("kind", JUDGES)
@pytest.mark.parametrize("R", [TARGET, 0.15])
@pytest.mark.parametrize("delta", [0.1, 0.05])
def test_type_one_error_wsr(validity_runs, method, kind, R, delta):
    rate = validity_runs[(R, kind, delta, method)]
    print(f"type-I  R={R} judge={kind} delta={delta} {method}: {rate:.4f}")
    assert rate <= mc_limit(delta, VALIDITY_TRIALS)


@pytest.mark.slow
def test_naive_baselines_violate_delta(validity_runs):
    """'Trust the labelled mean' and 'trust the judge mean' certify far more often than delta."""
    limit = mc_limit(0.1, VALIDITY_TRIALS, k=10)
    for kind in JUDGES:
        print(f"naive labelled mean, R=target, judge={kind}: {validity_runs[(TARGET, kind, 'naive-labelled')]:.3f}")
        assert validity_runs[(TARGET, kind, "naive-labelled")] > max(limit, 0.35)
    print(f"naive judge mean, optimistic judge: R=0.12 {validity_runs[(TARGET, 'optimistic', 'naive-judge')]:.3f}, "
          f"R=0.15 {validity_runs[(0.15, 'optimistic', 'naive-judge')]:.3f}")
    assert validity_runs[(TARGET, "optimistic", "naive-judge")] > 0.99
    assert validity_runs[(0.15, "optimistic", "naive-judge")] > 0.99
    # the certified methods with the same optimistic judge stay below delta (asserted above); the
    # adversarial judge never fools the judge mean (it reports ~0.88), so no claim there


@pytest.mark.slow
def test_type_one_error_up_betting():
    """UP betting (grid 1,000), R = target, optimistic judge, 300 trials: tolerance delta + 3 se = 0.152."""
    trials = 300
    rng = np.random.default_rng(7)
    h, jl, ju = simulate(rng, trials, 200, 2000, TARGET, "optimistic")
    rates = {m: float(r.mean()) for m, r in rejections(effective(h, jl, ju), 0.1, betting="up", grid=1000).items()}
    print(f"type-I UP (300 trials): {rates}")
    for rate in rates.values():
        assert rate <= mc_limit(0.1, trials)


#: 150 data sets (300 before), limit 0.173: certified in 0.080 (R-Eval), 0.060 (R-AutoEval), 0.080 (R-AutoEval+).
#: Deliberately broken, certifying at p <= 2 delta: 0.213, 0.167, 0.207, so R-Eval and R-AutoEval+ fail the check
#: (with 300: 0.173, 0.137, 0.153 against 0.152, the same two); at p <= 3 delta all three (0.293, 0.240, 0.280)
CERTIFY_TRIALS = 150


@pytest.fixture(scope="module")
def certify_trials():
    """150 independent data sets as 150 candidates of one table (each candidate is tested at delta)."""
    rng = np.random.default_rng(11)
    h, jl, ju = simulate(rng, CERTIFY_TRIALS, 200, 2000, TARGET, "optimistic")
    return long_table(h, jl, ju, [f"t{k}" for k in range(CERTIFY_TRIALS)])


@pytest.mark.parametrize("method", ae.METHODS)
def test_type_one_error_through_certify(certify_trials, method):
    res = certify(certify_trials, risk_target=TARGET, delta=0.1, method=method, seed=3, bounds=False)
    t = res.candidates
    assert len(t) == CERTIFY_TRIALS and (t["n"] == 200).all()
    rate = float(t["certified"].mean())
    print(f"type-I through certify ({CERTIFY_TRIALS} trials, optimistic judge, R = target) {method}: {rate:.4f}")
    assert rate <= mc_limit(0.1, CERTIFY_TRIALS)
    assert np.array_equal(t["certified"].to_numpy(), t["p_value"].to_numpy() <= 0.1)


def test_certify_with_up_betting_matches_harness():
    rng = np.random.default_rng(13)
    h, jl, ju = simulate(rng, 2, 60, 600, 0.05, "flip0.05")
    res = certify(long_table(h, jl, ju, ["a", "b"]), risk_target=TARGET, betting="up", grid=300,
                  shuffle=False, interval=True)
    log_e = bt.e_process(effective(h, jl, ju), TARGET, lo=-RHOS, hi=1 + RHOS, betting="up", grid=300)
    want = np.minimum(1.0, np.exp(-bt.mixture_log_wealth(log_e).max(-1)))
    np.testing.assert_allclose(res.candidates["p_value"], want, rtol=1e-9)
    t = res.candidates
    assert res.params["grid"] == 300 and res.params["wsr"] is None
    assert np.all((t["ci_low"] <= t["risk_upper"] + 1e-4) & (t["risk_upper"] <= 1) & (t["ci_low"] < t["ci_high"]))


def test_harness_matches_certify():
    """The vectorised harness reproduces certify's p-values exactly (same data, same order)."""
    rng = np.random.default_rng(12)
    h, jl, ju = simulate(rng, 4, 50, 520, 0.07, "flip0.1")
    df = long_table(h, jl, ju, ["a", "b", "c", "d"])
    q = effective(h, jl, ju)
    for method, rhos in [("r-eval", RHOS[:1]), ("r-autoeval", RHOS[-1:]), ("r-autoeval+", RHOS)]:
        res = certify(df, risk_target=TARGET, delta=0.1, method=method, shuffle=False, bounds=False)
        sub = q[:, :1] if method == "r-eval" else (q[:, -1:] if method == "r-autoeval" else q)
        np.testing.assert_allclose(res.candidates["p_value"], p_values(sub, 0.1, rhos), rtol=1e-10)
    # the e-process of one rho does not depend on the other rhos being there
    le_all = bt.e_process(q, TARGET, lo=-RHOS, hi=1 + RHOS, delta=0.1, horizon=50)
    le_one = bt.e_process(q[:, -1:], TARGET, lo=-RHOS[-1:], hi=1 + RHOS[-1:], delta=0.1, horizon=50)
    np.testing.assert_allclose(le_all[:, -1:], le_one)


# ============================================================================================
# 4. Power / efficiency: sample complexity on a long stream (anytime WSR schedule)
# ============================================================================================


@pytest.fixture(scope="module")
def sample_complexity():
    """First n with E_n >= 1/delta (censored at n_max) for R = 0.1, alpha = 0.12, r = 10, delta in {0.1, 0.01}.
    Censoring at n_max lowers the mean of the slower method, so it only makes the comparisons harder."""
    T, n_max, r = 60, 20_000, 10
    rng = np.random.default_rng(2025)
    h = (rng.random((T, n_max)) < 0.1).astype(float)
    hu = (rng.random((T, n_max * r)) < 0.1).astype(float)
    u_l, u_u = rng.random((T, n_max)), rng.random((T, n_max * r))
    out = {}
    for gamma in (0.99, 0.7):
        jl = np.where(u_l < 1 - gamma, 1 - h, h)  # same flips' uniforms across gammas (common numbers)
        ju = np.where(u_u < 1 - gamma, 1 - hu, hu).reshape(T, n_max, r).mean(-1)
        q = RHOS[None, :, None] * ju[:, None, :] + h[:, None, :] - RHOS[None, :, None] * jl[:, None, :]
        for delta in (0.1, 0.01) if gamma == 0.7 else (0.1,):
            log_e = bt.e_process(q, TARGET, lo=-RHOS, hi=1 + RHOS, delta=delta, horizon=None)
            mix = bt.mixture_log_wealth(log_e)

            def n_min(path, level=delta):
                hit, first = bt.ville(path, level)
                return np.where(hit, first + 1, n_max)

            out[gamma, delta] = {
                "r-eval": n_min(log_e[:, 0]),
                "r-autoeval": n_min(log_e[:, -1]),
                "r-autoeval+": n_min(mix),
                # Lemma 1: E_n >= E_{s,n} / S, so the mixture stops no later than any rho reaching S / delta
                "bound": np.min([n_min(log_e[:, s], delta / 10) for s in range(10)], axis=0),
            }
    return out


def _summ(x):
    return f"{x.mean():.0f} ± {x.std(ddof=1) / math.sqrt(len(x)):.0f}"


@pytest.mark.slow
def test_sample_complexity_good_judge(sample_complexity):
    sc = sample_complexity[0.99, 0.1]
    print("gamma 0.99, delta 0.1, n_min:", {k: _summ(v) for k, v in sc.items()})
    assert np.all(sc["r-autoeval+"] <= sc["bound"])
    diff = sc["r-eval"] - sc["r-autoeval+"]
    assert diff.mean() > 3 * diff.std(ddof=1) / math.sqrt(len(diff))
    assert sc["r-autoeval+"].mean() < 0.25 * sc["r-eval"].mean()
    assert (sc["r-eval"] < 20_000).all()  # nothing censored: the comparison is not an artefact


@pytest.mark.slow
@pytest.mark.parametrize("delta", [0.1, 0.01])
def test_sample_complexity_bad_judge(sample_complexity, delta):
    sc = sample_complexity[0.7, delta]
    print(f"gamma 0.70, delta {delta}, n_min:", {k: _summ(v) for k, v in sc.items()})
    assert np.all(sc["r-autoeval+"] <= sc["bound"])
    # not much worse than R-Eval: the evidence price of the mixture is log S, so reaching 1/delta
    # costs about the steps R-Eval needs for S/delta: a factor log(S/delta)/log(1/delta) (2 at delta 0.1)
    assert sc["r-autoeval+"].mean() <= math.log(10 / delta) / math.log(1 / delta) * sc["r-eval"].mean()
    # R-AutoEval (rho = 1) is worse than R-Eval with this judge (paired, > 3 Monte Carlo se)
    diff = sc["r-autoeval"] - sc["r-eval"]
    assert diff.mean() > 3 * diff.std(ddof=1) / math.sqrt(len(diff))


# ============================================================================================
# 5. Confidence bounds: coverage, consistency with the test, width
# ============================================================================================

#: 600 data sets (1,000 before), limit 0.1367: the bounds missed R in 0.028 (upper), 0.015 (lower), 0.018 (interval).
#: They are conservative. Moved towards the interval's midpoint (deliberately broken bounds): by 55% they miss in
#: 0.160, 0.173, 0.240, all three over the limit; by 50% in 0.1367 (just under it), 0.153, 0.197, the lower bound and
#: the interval caught (1,000 data sets caught all three at 50%: 0.140, 0.131, 0.178 against 0.1285); by 45% the
#: interval is caught at either size (0.152; 0.140), by 40% nothing (0.107, 0.110, 0.105; 0.109, 0.092, 0.113)
BOUND_TRIALS = 600


@pytest.fixture(scope="module")
def bound_runs():
    """R-AutoEval+ (S = 10) bounds on 600 data sets: R = 0.1, judge flips w.p. 0.1, n = 100, N = 1000."""
    rng = np.random.default_rng(99)
    h, jl, ju = simulate(rng, BOUND_TRIALS, 100, 1000, 0.1, "flip0.1")
    q = effective(h, jl, ju)
    lo, hi = -RHOS, 1 + RHOS
    up = np.array([bt.upper_bound(q[k], lo, hi, delta=0.1, horizon=100, tol=1e-3) for k in range(BOUND_TRIALS)])
    low = np.array([bt.lower_bound(q[k], lo, hi, delta=0.1, horizon=100, tol=1e-3) for k in range(BOUND_TRIALS)])
    # coarse tolerances keep this affordable; every search returns its rejected (outer) end, so a
    # coarse bound is only more conservative
    ci = np.array([bt.hedged_interval(q[k], lo, hi, delta=0.1, horizon=100, tol=2e-3) for k in range(BOUND_TRIALS)])
    return {"q": q, "h": h, "upper": up, "lower": low, "ci": ci}


@pytest.mark.slow
def test_bound_coverage(bound_runs):
    R, b = 0.1, bound_runs
    miss_up = float((b["upper"] < R).mean())
    miss_low = float((b["lower"] > R).mean())
    miss_ci = float(((b["ci"][:, 0] > R) | (b["ci"][:, 1] < R)).mean())
    print(f"bound miss rates ({BOUND_TRIALS} trials, delta 0.1): upper {miss_up:.3f}, lower {miss_low:.3f}, interval {miss_ci:.3f}; "
          f"mean width {np.mean(b['ci'][:, 1] - b['ci'][:, 0]):.4f}")
    for miss in (miss_up, miss_low, miss_ci):
        assert miss <= mc_limit(0.1, BOUND_TRIALS)
    assert np.all(b["lower"] <= b["upper"])
    assert np.all(b["ci"][:, 0] <= b["ci"][:, 1])


def test_interval_contains_point_estimates(bound_runs):
    b = bound_runs
    lo_ci, hi_ci = b["ci"][:, 0], b["ci"][:, 1]
    human = b["h"].mean(1)
    ppi = b["q"][:, -1].mean(1)  # the rho = 1 (PPI) estimate
    in_h = float(((lo_ci <= human) & (human <= hi_ci)).mean())
    in_ppi = float(((lo_ci <= ppi) & (ppi <= hi_ci)).mean())
    print(f"interval contains: labelled mean {in_h:.3f}, PPI mean {in_ppi:.3f}")
    assert in_ppi >= 0.95 and in_h >= 0.8


def test_upper_bound_is_the_inverted_test():
    """For a fixed data set, the monotone test at target t rejects iff t >= upper_bound (up to tol)."""
    rng = np.random.default_rng(5)
    for kind, n in [("flip0.1", 150), ("adversarial", 150), ("flip0.05", 60)]:
        h, jl, ju = simulate(rng, 1, n, 10 * n, 0.1, kind)
        q = effective(h, jl, ju)[0]
        lo, hi = -RHOS, 1 + RHOS
        tol = 1e-6
        ub = bt.upper_bound(q, lo, hi, delta=0.1, horizon=n, tol=tol)
        lb = bt.lower_bound(q, lo, hi, delta=0.1, horizon=n, tol=tol)

        def rejects(t, data=q):
            log_e = bt.e_process(data, t, lo=lo, hi=hi, delta=0.1, horizon=n, monotone=True)
            return bool(bt.ville(bt.mixture_log_wealth(log_e), 0.1)[0])

        grid = np.concatenate([np.linspace(0, 1, 201), [ub - 2 * tol, ub + tol]])
        for t in grid:
            if abs(t - ub) > tol:
                assert rejects(t) == (t >= ub), (kind, t, ub)
        # lower bound: the reflected test (q -> lo + hi - q = 1 - q) rejects iff 1 - t >= 1 - lb
        for t in np.concatenate([np.linspace(0, 1, 101), [lb - tol, lb + 2 * tol]]):
            if abs(t - lb) > tol:
                assert rejects(1 - t, 1 - q) == (t <= lb), (kind, t, lb)
        assert 0 < lb < ub < 1


def test_interval_narrower_with_good_judge():
    """gamma = 0.99, n = 1000, N = 10n, 20 data sets. (At n = 200 the monotone cap 1/(M - m) = 1/(1 + 2 rho)
    binds for the large rhos and the mean ratio is only ~0.82, with some data sets wider.)"""
    rng = np.random.default_rng(8)
    T, n = 20, 1000
    h, jl, ju = simulate(rng, T, n, 10 * n, 0.1, "flip0.01")
    q = effective(h, jl, ju)
    w_plus = [np.diff(bt.hedged_interval(q[k], -RHOS, 1 + RHOS, delta=0.1, horizon=n, tol=1e-4))[0] for k in range(T)]
    w_eval = [np.diff(bt.hedged_interval(q[k, :1], 0.0, 1.0, delta=0.1, horizon=n, tol=1e-4))[0] for k in range(T)]
    ratio = np.array(w_plus) / np.array(w_eval)
    print(f"interval width R-AutoEval+ / R-Eval, gamma 0.99, n = 1000: mean {ratio.mean():.3f}, max {ratio.max():.3f}")
    assert ratio.mean() < 0.7 and np.all(ratio < 1)


def test_certify_interval_and_risk_upper_columns():
    df = small_table(seed=21, risks=(0.05, 0.3), n=100, N=1000, kind="flip0.05")
    res = certify(df, risk_target=TARGET, delta=0.1, interval=True, seed=0)
    t = res.candidates.set_index("candidate")
    for c in ("m0", "m1"):
        assert 0 <= t.loc[c, "ci_low"] <= t.loc[c, "ci_high"] <= 1
        assert t.loc[c, "ci_low"] <= t.loc[c, "risk_upper"] + 1e-4
    assert t.loc["m0", "risk_upper"] < TARGET < t.loc["m1", "ci_low"]
    assert bool(t.loc["m0", "certified"]) and not bool(t.loc["m1", "certified"])


# ============================================================================================
# 6. Cross-check against ppi-python (PPI++ and classical CLT intervals)
# ============================================================================================


def test_cross_check_ppi_python():
    ppi_py = pytest.importorskip("ppi_py")
    rng = np.random.default_rng(0)  # the data of notes §4.4: 1,000 Bernoulli(0.1) human losses first
    n, N = 1000, 10_000
    h = rng.binomial(1, 0.1, n).astype(float)
    jl = judge_losses("flip0.1", h, rng)
    ju = judge_losses("flip0.1", rng.binomial(1, 0.1, N).astype(float), rng)
    assert h.mean() == pytest.approx(0.096)
    # PPI point estimate (lam = 1) equals the mean of the rho = 1 effective observations (N = r n)
    q, r, unused = effective_observations(h, jl, ju, RHOS)
    assert (r, unused) == (10, 0)
    assert q[-1].mean() == pytest.approx(float(np.ravel(ppi_py.ppi_mean_pointestimate(h, jl, ju, lam=1))[0]), abs=1e-12)
    assert q[0].mean() == pytest.approx(h.mean(), abs=1e-12)
    ppi_lo, ppi_hi = (float(np.ravel(v)[0]) for v in ppi_py.ppi_mean_ci(h, jl, ju, alpha=0.1))
    cl_lo, cl_hi = (float(np.ravel(v)[0]) for v in ppi_py.classical_mean_ci(h, alpha=0.1))
    ours = certify(long_table(h[None], jl[None], ju[None], ["m"]), risk_target=TARGET, delta=0.1,
                   interval=True, shuffle=False, bounds=False)
    lo_plus, hi_plus = ours.candidates.loc[0, ["ci_low", "ci_high"]]
    lo_eval, hi_eval = bt.hedged_interval(h[None], 0.0, 1.0, delta=0.1, horizon=n, tol=1e-5)
    ratio_plus = (hi_plus - lo_plus) / (ppi_hi - ppi_lo)
    ratio_eval = (hi_eval - lo_eval) / (cl_hi - cl_lo)
    print(f"ppi-python: PPI++ [{ppi_lo:.4f}, {ppi_hi:.4f}], classical [{cl_lo:.4f}, {cl_hi:.4f}]; "
          f"ours R-AutoEval+ [{lo_plus:.4f}, {hi_plus:.4f}] (ratio {ratio_plus:.3f}), "
          f"R-Eval [{lo_eval:.4f}, {hi_eval:.4f}] (ratio {ratio_eval:.3f})")
    assert 1.0 < ratio_plus < 2.0
    assert 0.9 < ratio_eval < 2.0
    # notes §4.4 (same data): PPI++ [0.0764, 0.1020], classical [0.0807, 0.1113], and the reference
    # R-AutoEval+ CI [0.0791, 0.1075] (its construction differs slightly: separate one-sided mixtures
    # at delta/2 on a grid of means, so agreement to a few 1e-4 is what to expect)
    assert (round(ppi_lo, 4), round(ppi_hi, 4), round(cl_lo, 4), round(cl_hi, 4)) == (0.0764, 0.1020, 0.0807, 0.1113)
    assert lo_plus == pytest.approx(0.0791, abs=5e-4) and hi_plus == pytest.approx(0.1075, abs=5e-4)
    # the finite-sample intervals contain the CLT intervals' centres (same data, same estimand)
    assert lo_plus < 0.5 * (ppi_lo + ppi_hi) < hi_plus
    assert lo_eval < 0.5 * (cl_lo + cl_hi) < hi_eval
    assert hi_plus - lo_plus < hi_eval - lo_eval  # the judge helps, as it helps PPI++ over classical
    assert ppi_hi - ppi_lo < cl_hi - cl_lo


def test_r_eval_interval_reproduces_reference_anchor():
    """notes §4.4: on default_rng(0).binomial(1, 0.1, 1000) the reference R-Eval CI (and confseq's
    betting_ci) at delta = 0.1 is [0.0908, 0.1203]; the hedged process gives the same to 4 decimals."""
    h = np.random.default_rng(0).binomial(1, 0.1, 1000).astype(float)
    lo, hi = bt.hedged_interval(h[None], 0.0, 1.0, delta=0.1, horizon=1000, tol=1e-6)
    # the reference rounds outward to its 10,000-point grid of means: one grid step of tolerance
    assert lo == pytest.approx(0.0908, abs=1e-4) and hi == pytest.approx(0.1203, abs=1e-4)
    # with eps = 1/2 the two ends are the one-sided bounds at delta / 2 (the bets are the same)
    assert lo == pytest.approx(bt.lower_bound(h[None], 0.0, 1.0, delta=0.05, horizon=1000, tol=1e-6), abs=1e-5)
    assert hi == pytest.approx(bt.upper_bound(h[None], 0.0, 1.0, delta=0.05, horizon=1000, tol=1e-6), abs=1e-5)


# ============================================================================================
# 7. Model selection: fixed-sequence, Bonferroni, Holm; best; FWER
# ============================================================================================

RISKS = (0.02, 0.03, 0.45, 0.02, 0.09)  # m0..m4: m2 fails for sure, m4 is hard to certify at delta/K


@pytest.mark.slow
def test_no_best_without_a_family_wise_procedure():
    """K = 5 candidates all exactly at the risk target (R-Eval, 300 labels each): a "best" picked among individually
    certified ones would be a false claim in far more than delta of the trials (30% measured here at delta = 0.1);
    only family-wise procedures pick one.

    60 trials (120 before; limit 0.216): Bonferroni and Holm picked a false best in 0.017 of them (0.05 of 120); the
    unprotected pick, the broken procedure, in 0.300 (0.333 of 120), over the FWER limit as well as over
    delta + 2 s.e. = 0.177."""
    trials, K, delta = 60, 5, 0.1
    picked = {None: 0, "bonferroni": 0, "holm": 0}
    some_certified = 0
    for t in range(trials):
        df = small_table(seed=1000 + t, risks=(TARGET,) * K, n=300, N=10, kind="flip0.05")
        df["cost"] = df["candidate"].map({f"m{k}": float(k) for k in range(K)})
        for select in picked:
            res = certify(df, risk_target=TARGET, delta=delta, select=select, cost_col="cost", seed=t, bounds=False,
                          method="r-eval")
            if select is None:
                some_certified += bool(res.certified)
                assert res.best is None
                assert "family-wise" in res.info["selection"]["note"]
            picked[select] += res.best is not None
    se = np.sqrt(delta * (1 - delta) / trials)
    for select in ("bonferroni", "holm"):
        assert picked[select] / trials <= delta + 3 * se  # FWER <= delta (measured ~2%)
    # the unprotected pick is what the old code returned: it fires well above delta
    assert some_certified / trials > delta + 2 * se


@pytest.fixture(scope="module")
def selection_table():
    df = small_table(seed=31, risks=RISKS, n=200, N=2000, kind="flip0.05")
    df["cost"] = df["candidate"].map({"m0": 5.0, "m1": 4.0, "m2": 1.0, "m3": 2.0, "m4": 0.5})
    df["bits"] = df["candidate"].map({"m0": 16, "m1": 8, "m2": 6, "m3": 4, "m4": 3})
    return df


def test_fixed_sequence_stops_at_first_failure(selection_table):
    order = ["m0", "m1", "m2", "m3", "m4"]
    res = certify(selection_table, risk_target=TARGET, delta=0.1, select="fst", order=order, seed=1,
                  bounds=False, cost_col="cost")
    alone = certify(selection_table, risk_target=TARGET, delta=0.1, seed=1, bounds=False)
    assert set(alone.certified) >= {"m0", "m1", "m3"}  # m3 would pass on its own ...
    assert res.certified == ["m0", "m1"]  # ... but FST stops at m2
    assert res.info["selection"]["certified"] == order[: len(res.certified)]  # a prefix of the order
    assert res.info["selection"]["order"] == order
    assert res.best == "m1"  # the cheapest certified
    # order_by: descending bits by default (m0 > ... > m4); ascending reverses it
    by = certify(selection_table, risk_target=TARGET, delta=0.1, select="fst", order_by="bits", seed=1, bounds=False)
    assert by.info["selection"]["order"] == order and by.certified == ["m0", "m1"]
    assert by.best == "m1"  # no cost: the last certified in the order
    asc = certify(selection_table, risk_target=TARGET, delta=0.1, select="fst", order_by="bits", ascending=True,
                  seed=1, bounds=False)
    assert asc.info["selection"]["order"] == order[::-1]
    sel = asc.info["selection"]["certified"]  # in testing order (``.certified`` is in table order)
    assert sel == order[::-1][: len(sel)] and set(asc.certified) == set(sel)
    assert "m2" not in sel and {"m3", "m4"} >= set(sel)


def test_bonferroni_holm_and_best(selection_table):
    kw = dict(risk_target=TARGET, delta=0.1, seed=1, bounds=False, cost_col="cost")
    bonf = certify(selection_table, select="bonferroni", **kw)
    holm = certify(selection_table, select="holm", **kw)
    t = bonf.candidates.set_index("candidate")
    np.testing.assert_allclose(t["test_level"], 0.1 / 5)
    assert bonf.certified == [c for c in t.index if t.loc[c, "p_value"] <= 0.02]
    assert set(holm.certified) >= set(bonf.certified)
    assert {"m0", "m1", "m3"} <= set(bonf.certified) and "m2" not in holm.certified
    # Holm by hand on the same p-values
    p = holm.candidates.set_index("candidate")["p_value"].sort_values(kind="stable")
    want = []
    for k, c in enumerate(p.index):
        if p[c] > 0.1 / (5 - k):
            break
        want.append(c)
    assert sorted(holm.certified) == sorted(want)
    for res in (bonf, holm):
        costs = res.candidates.set_index("candidate")["cost"]
        assert res.best == min(res.certified, key=lambda c: costs[c])
        assert res.candidates.loc[res.candidates["certified"], "candidate"].tolist() == res.certified
    assert holm.best == ("m4" if "m4" in holm.certified else "m3")


def test_nothing_certified_says_so():
    df = small_table(seed=41, risks=(0.4, 0.5), n=100, N=1000, kind="flip0.05")
    df["cost"] = df["candidate"].map({"m0": 1, "m1": 2})
    for select in ("fst", "bonferroni", "holm", None):
        kw = {"order": ["m0", "m1"]} if select == "fst" else {}
        res = certify(df, risk_target=TARGET, delta=0.1, select=select, cost_col="cost", seed=0, bounds=False, **kw)
        assert res.certified == []
        assert res.best is None
        if select is not None:
            assert "no candidate is certified" in res.info["selection"]["note"]
        else:
            assert "family-wise" in res.info["selection"]["note"]
            assert "no candidate is certified" in res.summary()


@pytest.fixture(scope="module")
def fwer_pvalues():
    """500 trials, 5 candidates (order m0..m4): nulls at the boundary (R = target) and two good ones."""
    trials, K = 500, 5
    risks = [0.05, TARGET, 0.05, TARGET, TARGET]
    rng = np.random.default_rng(77)
    p = {0.1: [], 0.1 / K: []}
    for R in risks:
        q = effective(*simulate(rng, trials, 200, 2000, R, "optimistic"))
        for level in p:
            p[level].append(p_values(q, level))
    return {level: np.stack(v, axis=1) for level, v in p.items()}, [R >= TARGET for R in risks]


@pytest.mark.parametrize("procedure", ["fst", "bonferroni", "holm"])
def test_fwer_by_monte_carlo(fwer_pvalues, procedure):
    p, is_null = fwer_pvalues
    names = [f"m{k}" for k in range(5)]
    pv = p[0.1] if procedure == "fst" else p[0.02]
    errors, found = 0, 0
    for k in range(len(pv)):
        table = pd.DataFrame({"p_value": pv[k]}, index=names)
        cert = ae._select(table, procedure, names, 0.1)
        if procedure == "fst":
            assert cert == names[: len(cert)]
        errors += any(is_null[names.index(c)] for c in cert)
        found += len(cert)
    fwer = errors / len(pv)
    print(f"FWER {procedure} (500 trials, 3 nulls at the boundary of 5): {fwer:.3f}; mean certified {found / len(pv):.2f}")
    assert fwer <= mc_limit(0.1, len(pv))
    assert found > 0  # the procedure is not trivially empty (the two R = 0.05 candidates get certified)


# ============================================================================================
# 8. Bad input -> AssayInputError naming the problem
# ============================================================================================


@pytest.fixture(scope="module")
def good_df():
    return small_table(seed=51, risks=(0.05, 0.06), n=20, N=200, kind="flip0.05")


def _raises(df, match, **kw):
    kw.setdefault("risk_target", TARGET)
    kw.setdefault("seed", 0)
    with pytest.raises(AssayInputError, match=match):
        certify(df, bounds=False, **kw)


def test_bad_losses(good_df):
    df = good_df.copy()
    df.loc[3, "loss_human"] = 1.5
    _raises(df, r"loss_human.*outside \[0, 1\]")
    df = good_df.copy()
    df.loc[40, "loss_judge"] = -0.2
    _raises(df, r"loss_judge.*outside \[0, 1\]")
    df = good_df.copy()
    df["loss_human"] = df["loss_human"].astype(object)
    df.loc[2, "loss_human"] = "bad"
    _raises(df, r"loss_human.*non-numeric")
    df = good_df.copy()
    df.loc[5, "loss_judge"] = np.inf
    _raises(df, r"loss_judge.*infinite")


def test_nan_judge_loss(good_df):
    df = good_df.copy()
    df.loc[50, "loss_judge"] = np.nan  # an unlabelled row: the judge loss is the only information there
    _raises(df, r"loss_judge.*missing.*row 50")
    df = good_df.copy()
    df.loc[1, "loss_judge"] = np.nan  # a labelled row
    _raises(df, r"loss_judge.*missing.*row 1\b")
    # R-Eval does not use the judge: NaN judge losses are fine there
    certify(df, risk_target=TARGET, method="r-eval", bounds=False, seed=0)


def test_nan_judge_message_offers_only_real_options(good_df):
    df = good_df.copy()
    df.loc[50, "loss_judge"] = np.nan
    with pytest.raises(AssayInputError) as info:
        certify(df, risk_target=TARGET, bounds=False, seed=0)
    assert "drop-items" not in str(info.value) and "--drop-incomplete" not in str(info.value)


def test_no_labelled_rows(good_df):
    df = good_df.copy()
    df.loc[df["candidate"] == "m1", "loss_human"] = np.nan
    _raises(df, r"'m1' has no labelled rows")


def test_too_few_unlabelled_rows():
    df = small_table(seed=52, risks=(0.05,), n=30, N=20)
    for method in ("r-autoeval", "r-autoeval+"):
        _raises(df, r"20 unlabelled rows for 30 labelled.*r-eval", method=method)
    res = certify(df, risk_target=TARGET, method="r-eval", bounds=False, seed=0)
    assert res.candidates.loc[0, "n"] == 30
    # R-Eval with N = 0 and without a judge column at all
    df0 = small_table(seed=53, risks=(0.02,), n=150, N=0).drop(columns="loss_judge")
    res0 = certify(df0, risk_target=TARGET, method="r-eval", seed=0)
    row = res0.candidates.iloc[0]
    assert (row["n"], row["N"], row["r"]) == (150, 0, 0) and math.isnan(row["mean_judge"])
    assert 0 <= row["risk_upper"] <= 1
    _raises(df0, r"loss_judge", method="r-autoeval+")


def test_duplicate_candidate_item(good_df):
    df = pd.concat([good_df, good_df.iloc[[7]]], ignore_index=True)
    _raises(df, r"duplicate \(candidate, item\) rows at rows 7, 440")
    # the same item for two candidates is fine
    assert (good_df.groupby("item")["candidate"].nunique() == 2).all()


@pytest.mark.parametrize("name", ["delta", "risk_target"])
@pytest.mark.parametrize("value", [0, 1, -0.1, 1.5, float("nan"), "0.1", None, True])
def test_levels_outside_unit_interval(good_df, name, value):
    kw = {"risk_target": TARGET, "delta": 0.1, name: value}
    _raises(good_df, rf"{name} must be a number strictly between 0 and 1", **kw)


@pytest.mark.parametrize("kw,match", [
    ({"method": "ppi"}, r"method must be one of r-eval, r-autoeval, r-autoeval\+, got 'ppi'"),
    ({"betting": "kelly"}, r"betting must be 'wsr' or 'up', got 'kelly'"),
    ({"select": "bh"}, r"select must be one of fst, bonferroni, holm or None, got 'bh'"),
    ({"select": "fst"}, r"fixed-sequence testing needs an order"),
    ({"select": "fst", "order": ["m0", "zz"]}, r"order names unknown candidates: zz"),
    ({"select": "fst", "order_by": "bits"}, r"order_by column 'bits' is not in the table"),
    ({"factors": 1}, r"factors must be an integer >= 2"),
    ({"grid": 3}, r"grid must be an integer >= 10"),
    ({"seed": "abc"}, r"seed must be an int"),
    ({"seed": -1}, r"seed must be a non-negative integer"),
])
def test_bad_arguments(good_df, kw, match):
    _raises(good_df, match, **kw)


def test_bad_table_and_columns(good_df):
    _raises(good_df.to_dict(), r"expected a pandas DataFrame")
    _raises(good_df.iloc[:0], r"empty")
    _raises(good_df.rename(columns={"loss_human": "y"}), r"no column 'loss_human'")
    # renamed columns are accepted through ``columns``
    res = certify(good_df.rename(columns={"loss_human": "y", "candidate": "model"}), risk_target=TARGET,
                  columns={"loss_human": "y", "candidate": "model"}, bounds=False, seed=0)
    assert sorted(res.candidates["candidate"]) == ["m0", "m1"]


def test_cost_or_order_column_varying_within_candidate(good_df):
    df = good_df.copy()
    df["cost"] = np.where(df["candidate"] == "m0", 1.0, 2.0)
    df.loc[df.index[df["candidate"] == "m1"][:3], "cost"] = 9.0
    _raises(df, r"column 'cost' must have one value per candidate, but candidate 'm1' has 2", cost_col="cost")
    df = df.rename(columns={"cost": "bits"})
    _raises(df, r"column 'bits' must have one value per candidate", select="fst", order_by="bits")


def test_missing_cost_column(good_df):
    # (was a bare pandas KeyError before commit f7060dd moved the check ahead of its use)
    _raises(good_df, r"cost column 'price' is not in the table", cost_col="price")


@pytest.mark.parametrize("kw", [{"cost_col": "price"}, {"select": "fst", "order_by": "bits"}])
def test_missing_column_messages_do_not_leak_internal_columns(good_df, kw):
    with pytest.raises(AssayInputError) as info:
        certify(good_df, risk_target=TARGET, bounds=False, seed=0, **kw)
    assert "loss_judge" in str(info.value) and "_rank" not in str(info.value)


# ============================================================================================
# 9. Data ordering, reproducibility, JSON round trip
# ============================================================================================


def test_seeded_shuffle_is_recorded_and_reproducible():
    df = small_table(seed=61, risks=(0.08, 0.05), n=80, N=800, kind="flip0.1")
    a = certify(df, risk_target=TARGET, seed=123, interval=True)
    b = certify(df, risk_target=TARGET, seed=123, interval=True)
    c = certify(df, risk_target=TARGET, seed=124, interval=True)
    assert a.seed == 123 and a.params["shuffle"] is True
    pd.testing.assert_frame_equal(a.candidates, b.candidates)
    assert a.info["order"] == b.info["order"]
    np.testing.assert_array_equal(a.path("m0"), b.path("m0"))
    assert a.info["order"]["m0"]["labelled"] != c.info["order"]["m0"]["labelled"]
    # the recorded order is a permutation of the candidate's items, shared by all candidates
    order = a.info["order"]["m0"]
    lab = df[(df["candidate"] == "m0") & df["loss_human"].notna()]["item"]
    unl = df[(df["candidate"] == "m0") & df["loss_human"].isna()]["item"]
    assert sorted(order["labelled"]) == sorted(lab) and sorted(order["unlabelled"]) == sorted(unl)
    assert order["labelled"] != lab.tolist()
    assert a.info["order"]["m1"] == order  # same item ids -> same processing order
    # the recorded order reproduces the path: replaying it with shuffle=False gives the same e-values
    sub = df[df["candidate"] == "m0"].set_index("item").loc[order["labelled"] + order["unlabelled"]].reset_index()
    replay = certify(sub, risk_target=TARGET, shuffle=False)
    np.testing.assert_allclose(replay.path("m0"), a.path("m0"), rtol=1e-12)
    # a None seed is drawn and recorded, so the run can be repeated
    d = certify(df, risk_target=TARGET, seed=None, bounds=False)
    e = certify(df, risk_target=TARGET, seed=d.seed, bounds=False)
    assert isinstance(d.seed, int)
    pd.testing.assert_frame_equal(d.candidates, e.candidates)


def test_shuffle_false_keeps_table_order():
    df = small_table(seed=62, risks=(0.08,), n=40, N=400, kind="flip0.1")
    df = df.sample(frac=1.0, random_state=0).reset_index(drop=True)  # labelled and unlabelled interleaved
    res = certify(df, risk_target=TARGET, shuffle=False, bounds=False)
    assert res.params["shuffle"] is False
    assert res.info["order"]["m0"]["labelled"] == df.loc[df["loss_human"].notna(), "item"].tolist()
    assert res.info["order"]["m0"]["unlabelled"] == df.loc[df["loss_human"].isna(), "item"].tolist()
    lab, unl = df[df["loss_human"].notna()], df[df["loss_human"].isna()]
    q, _, _ = effective_observations(lab["loss_human"].to_numpy(), lab["loss_judge"].to_numpy(),
                                     unl["loss_judge"].to_numpy(), RHOS)
    log_e = bt.mixture_log_wealth(bt.e_process(q, TARGET, lo=-RHOS, hi=1 + RHOS, delta=0.1, horizon=40))
    np.testing.assert_allclose(np.log(res.path("m0")), log_e, rtol=1e-12)


def test_shuffle_false_keeps_each_candidates_own_order():
    df = small_table(seed=63, risks=(0.08, 0.08), n=5, N=50)
    m1 = df[df["candidate"] == "m1"].iloc[::-1]
    df = pd.concat([df[df["candidate"] == "m0"], m1], ignore_index=True)
    res = certify(df, risk_target=TARGET, shuffle=False, bounds=False)
    assert res.info["order"]["m1"]["labelled"] == m1.loc[m1["loss_human"].notna(), "item"].tolist()


def test_json_round_trip():
    df = pd.concat([small_table(seed=71, risks=(0.03,), n=100, N=1000),
                    small_table(seed=72, risks=(0.4,), n=100, N=1000).assign(candidate="m1")], ignore_index=True)
    df["cost"] = df["candidate"].map({"m0": 2.5, "m1": 1.0})
    res = certify(df, risk_target=TARGET, delta=0.1, seed=5, select="holm", cost_col="cost", interval=True)
    back = Result.from_json(res.to_json())
    assert type(back) is AutoEvalResult
    pd.testing.assert_frame_equal(back.candidates, res.candidates, check_dtype=False)
    assert back.certified == res.certified == ["m0"] and back.best == res.best == "m0"
    assert back.info["order"] == res.info["order"]
    np.testing.assert_allclose(back.path("m1"), res.path("m1"))
    assert back.seed == 5 and back.params == res.params and back.level == res.level
    assert back.summary() == res.summary()


def test_json_round_trip_nothing_certified():
    df = small_table(seed=73, risks=(0.4, 0.5), n=60, N=600)
    res = certify(df, risk_target=TARGET, delta=0.1, seed=5, bounds=False)
    assert res.certified == []
    back = Result.from_json(res.to_json())
    pd.testing.assert_frame_equal(back.candidates, res.candidates, check_dtype=False)


# ============================================================================================
# 10. Three layers: prepare (data layer) -> core (arrays) -> build (Result)
# ============================================================================================


def test_core_on_arrays_reproduces_certify():
    """certify = prepare + core per candidate + build: the core on the prepared arrays gives the same numbers."""
    from assay.data.autoeval import prepare
    from assay.seeds import resolve_seed

    df = small_table(seed=81, risks=(0.04, 0.09), n=60, N=400, kind="flip0.1")
    res = certify(df, risk_target=TARGET, delta=0.1, seed=9, interval=True, select="holm")
    prep = prepare(df, shuffle=True, rng=resolve_seed(9).rng())
    assert prep.candidates == ["m0", "m1"]
    t = res.candidates.set_index("candidate")
    for cand in prep.candidates:
        d = prep.data[cand]
        assert res.info["order"][cand] == {"labelled": d.labelled_items, "unlabelled": d.unlabelled_items}
        c = ae.core(d.loss_human, d.judge_labelled, d.judge_unlabelled, risk_target=TARGET, delta=0.1 / 2,
                    interval=True)
        assert isinstance(c, ae.Certificate)
        np.testing.assert_array_equal(np.exp(c.log_e), res.path(cand))
        assert c.log_e_s.shape == (10, 60) and c.r == 6 and c.unused_unlabelled == 40
        np.testing.assert_array_equal(c.log_e, bt.mixture_log_wealth(c.log_e_s))
        for field in ("p_value", "risk_upper", "ci_low", "ci_high", "rho_weighted"):
            assert getattr(c, field) == t.loc[cand, field], field
        assert c.weights.tolist() == res.info["paths"][cand]["weights"]


def test_core_without_pandas_and_r_eval_needs_no_judge():
    rng = np.random.default_rng(5)
    h = (rng.random(200) < 0.03).astype(float)
    c = ae.core(h.tolist(), risk_target=TARGET, method="r-eval", bounds=False)
    assert c.rhos.tolist() == [0.0] and c.r == 0 and np.isnan(c.risk_upper) and np.isnan(c.ci_low)
    # R-Eval ignores judge arrays even when given
    c2 = ae.core(h, np.full(200, np.nan), None, risk_target=TARGET, method="r-eval", bounds=False)
    np.testing.assert_array_equal(c.log_e, c2.log_e)
    assert c.certified == (c.p_value <= 0.1) and (c.certified_at > 0 if c.certified else np.isnan(c.certified_at))
    # the mixture e-process works on any leading shape (the studies run all candidates at once)
    q = np.stack([effective_observations(h, h, np.tile(h, 3), RHOS)[0]] * 3)
    _, batched = ae.mixture_e_process(q, RHOS, risk_target=TARGET, delta=0.1, horizon=200)
    _, single = ae.mixture_e_process(q[0], RHOS, risk_target=TARGET, delta=0.1, horizon=200)
    np.testing.assert_array_equal(batched[2], single)


@pytest.mark.parametrize("kw,match", [
    (dict(loss_human=[0.1, 0.2], judge_labelled=[0.1], judge_unlabelled=[0.0, 0.0]), "has 1 values, but loss_human has 2"),
    (dict(loss_human=[0.1, 1.5], judge_labelled=[0.1, 0.1], judge_unlabelled=[0.0, 0.0]), r"loss_human must hold losses in \[0, 1\]"),
    (dict(loss_human=[0.1, 0.2], judge_labelled=[0.1, 0.1], judge_unlabelled=[0.0]), "judge_unlabelled has 1 values for 2"),
    (dict(loss_human=[0.1, 0.2]), "needs judge_labelled and judge_unlabelled"),
    (dict(loss_human=[]), "loss_human is empty"),
    (dict(loss_human=[[0.1]]), "one-dimensional"),
    (dict(loss_human=[0.1], method="r-eval", delta=2), "delta must be"),
])
def test_core_bad_input(kw, match):
    with pytest.raises(AssayInputError, match=match):
        ae.core(risk_target=TARGET, **kw)


def test_result_packaging_and_vocabulary(good_df):
    res = certify(good_df, risk_target=TARGET, seed=0, bounds=False)
    assert res.level["n_meaning"] == res.n_meaning == "labelled (human-scored) examples per candidate"
    assert res.n == 20 and res.warnings == [] and res.confidence == 0.9
    with pytest.raises(AssayInputError, match="interval=True"):
        res.confidence_interval()
    ci = certify(good_df, risk_target=TARGET, seed=0, interval=True).confidence_interval()
    assert ci.low.shape == (2,) and (ci.low <= ci.high).all() and ci.level == 0.9
    # different n per candidate: n is the first candidate's, and the meaning says so
    uneven = good_df.drop(good_df.index[(good_df["candidate"] == "m1") & good_df["loss_human"].notna()][:5])
    r2 = certify(uneven, risk_target=TARGET, seed=0, bounds=False)
    assert r2.n == 20 and "differ between candidates" in r2.n_meaning
    # a Generator: its draws give the order, the result records no int seed and says why
    g = certify(good_df, risk_target=TARGET, seed=np.random.default_rng(4), bounds=False)
    assert g.seed is None and g.info["seed_source"] == "generator"


def test_seed_is_resolved_before_the_table_is_read(good_df):
    with pytest.raises(AssayInputError, match="seed must be"):
        certify(good_df.iloc[:0], risk_target=TARGET, seed=-3)


def test_select_uses_the_shared_procedures():
    from assay.stats import multiple

    rng = np.random.default_rng(8)
    names = [f"m{k}" for k in range(6)]
    for _ in range(50):
        p = rng.random(6) ** 4
        t = pd.DataFrame({"p_value": p}, index=names)
        assert ae._select(t, "bonferroni", names, 0.1) == [c for c, m in zip(names, multiple.bonferroni(p, 0.1)) if m]
        assert ae._select(t, "holm", names, 0.1) == [c for c, m in zip(names, multiple.holm(p, 0.1)) if m]
        order = ["m3", "m0", "m5"]
        mask = multiple.fixed_sequence(p, 0.1, order=[3, 0, 5])
        assert ae._select(t, "fst", order, 0.1) == [c for c in order if mask[names.index(c)]]
