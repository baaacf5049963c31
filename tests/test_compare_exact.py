"""The ``exact`` guarantee of compare (:mod:`assay.compare.exact`): finite-sample at the number of questions given.

Seeded Monte Carlo: questions drawn from a population with a known truth (each question's difficulty shared by the
models, so their answers are correlated), at 10, 30 and 100 questions. Every family (the verdicts with ranks and
tiers; the pair intervals; the model intervals) must hold in at least 1 - delta of the draws up to 3 Monte Carlo
standard errors; the naive procedure (each pair's McNemar test at delta, no multiplicity) fails where it must."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from assay import compare
from assay.compare import core
from assay.compare.exact import betting_p, clopper_pearson, exact, mcnemar_p
from assay.errors import AssayInputError

DELTA = 0.1


def _limit(trials: int, delta: float = DELTA) -> float:
    return delta + 3 * np.sqrt(delta * (1 - delta) / trials)


def _population(alpha: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """K x n 0/1 answers: question difficulty z ~ N(0, 1) shared, P(right) = Phi(alpha_k + z); each model's true
    mean is Phi(alpha_k / sqrt 2)."""
    z = rng.standard_normal(n)
    return (rng.random((len(alpha), n)) < stats.norm.cdf(alpha[:, None] + z[None, :])).astype(float)


def _truth(alpha: np.ndarray) -> np.ndarray:
    return stats.norm.cdf(alpha / np.sqrt(2.0))


def _errors(out, mu: np.ndarray, margin: float | None = None) -> tuple[bool, bool, bool]:
    """(a wrong verdict, a pair interval missing, a model interval missing) in one draw."""
    a, b = core.pair_index(len(mu))
    d = mu[a] - mu[b]
    wrong = ((out.better > 0) & (d <= 0)) | ((out.better < 0) & (d >= 0))
    if margin is not None:
        wrong |= out.equivalent & (np.abs(d) >= margin)
    miss_d = (out.d_lo > d + 1e-12) | (out.d_hi < d - 1e-12)
    miss_m = (out.lo > mu + 1e-12) | (out.hi < mu - 1e-12)
    return bool(wrong.any()), bool(miss_d.any()), bool(miss_m.any())


def test_the_exact_tests_and_intervals_agree_with_their_textbook_forms():
    # McNemar's one-sided exact test is the binomial test of n10 among the discordant questions
    for n10, n01 in ((7, 1), (3, 3), (0, 5), (12, 4)):
        want = stats.binomtest(n10, n10 + n01, 0.5, alternative="greater").pvalue
        assert mcnemar_p(np.array([n10]), np.array([n01]))[0] == pytest.approx(want, rel=1e-12)
    lo, hi = clopper_pearson(np.array([4]), 20, 0.05)
    ci = stats.binomtest(4, 20).proportion_ci(0.95, method="exact")
    assert (lo[0], hi[0]) == pytest.approx((ci.low, ci.high), rel=1e-10)
    # a betting p-value is small far from the null, 1 where the data sit at or below it
    x = np.tile([0.9, 1.0, 0.8, 1.0], (1, 25))
    assert betting_p(x, 0.5, 0.05)[0] < 1e-3 and betting_p(x, 0.99, 0.05)[0] == 1.0


@pytest.mark.parametrize("n", [10, 30, 100])
def test_every_family_holds_on_0_1_scores_at_small_n(n):
    """Five models, three of them tied in truth (0.5) and two above (0.6, 0.7), questions shared: the verdicts hold
    in >= 1 - delta of 400 draws at every n, and so do the pair and the model intervals. Measured: wrong verdicts in
    0.000-0.005 of the draws, pair intervals missing in 0.000-0.013, model intervals in 0.010-0.030 (limit 0.145)."""
    alpha = np.array([0.0, 0.0, 0.0, 0.36, 0.74])
    mu = _truth(alpha)
    rng = np.random.default_rng(100 + n)
    trials = 400
    err = np.zeros(3)
    for _ in range(trials):
        S = _population(alpha, n, rng)
        err += _errors(exact(S, None, delta=DELTA, low=0.0, high=1.0, rng=rng), mu)
    rates = err / trials
    print(f"n={n}: wrong verdicts {rates[0]:.3f}, pair intervals missing {rates[1]:.3f}, models {rates[2]:.3f}")
    assert (rates <= _limit(trials)).all(), rates


def test_the_naive_procedure_fails_where_every_model_is_tied():
    """Eight models tied in truth, 30 questions: each pair's one-sided McNemar tests at delta (no multiplicity) claim
    an order in most draws (measured 0.79 of 300); the exact guarantee in at most delta."""
    alpha = np.zeros(8)
    rng = np.random.default_rng(7)
    trials = 300
    naive = ours = 0
    a, b = core.pair_index(8)
    for _ in range(trials):
        S = _population(alpha, 30, rng)
        n10 = ((S[a] == 1) & (S[b] == 0)).sum(axis=1)
        n01 = ((S[a] == 0) & (S[b] == 1)).sum(axis=1)
        naive += bool(((mcnemar_p(n10, n01) <= DELTA) | (mcnemar_p(n01, n10) <= DELTA)).any())
        ours += bool((exact(S, None, delta=DELTA, low=0.0, high=1.0, rng=rng).better != 0).any())
    print(f"tied models: naive claims an order in {naive / trials:.3f}, exact in {ours / trials:.3f}")
    assert naive / trials > 0.5
    assert ours / trials <= _limit(trials)


def test_bounded_scores_clusters_and_margins_hold_too():
    """Fractional scores (each question's 4 epochs averaged) in 40 clusters of 3 questions, an equivalence margin of
    0.2: models 0 and 1 equal in truth, model 2 exactly 0.2 below them (so "equivalent" would be a false claim for
    its pairs). The betting tests hold every family (measured: wrong verdicts 0.000, intervals missing 0.000 of 300
    draws), and the tied pair is declared equivalent in most draws (0.98 measured; not an empty promise)."""
    alpha = np.array([0.0, 0.0, stats.norm.ppf(0.3) * np.sqrt(2.5)])
    mu = _cluster_truth(alpha)
    assert mu[0] - mu[2] == pytest.approx(0.2)
    rng = np.random.default_rng(3)
    trials, C, per = 300, 40, 3
    err = np.zeros(3)
    eq = 0
    for _ in range(trials):
        z = np.repeat(rng.standard_normal(C), per) + 0.5 * rng.standard_normal(C * per)
        p = stats.norm.cdf((alpha[:, None] + z[None, :]) / np.sqrt(1.25))
        S = (rng.random((3, C * per, 4)) < p[:, :, None]).mean(axis=2)
        out = exact(S, np.repeat(np.arange(C), per), delta=DELTA, low=0.0, high=1.0, rng=rng, margin=0.2)
        err += _errors(out, mu, margin=0.2)
        eq += bool(out.equivalent[0])
    rates = err / trials
    print(f"bounded, clustered, margin 0.2: errors {rates.round(3).tolist()}, tied pair equivalent in "
          f"{eq / trials:.3f}")
    assert (rates <= _limit(trials)).all(), rates
    assert eq / trials > 0.5


def _cluster_truth(alpha: np.ndarray) -> np.ndarray:
    """Each model's population mean under the clustered law of the test above (z = u + 0.5 e, u, e ~ N(0, 1))."""
    # P(right) = Phi((alpha + z) / sqrt(1.25)) with z ~ N(0, 1.25): the mean is Phi(alpha / sqrt(1.25 + 1.25))
    return stats.norm.cdf(alpha / np.sqrt(2.5))


def test_compare_evaluate_with_the_exact_guarantee():
    rng = np.random.default_rng(0)
    S = _population(np.array([0.9, 0.0, 0.0]), 60, rng)
    t = pd.DataFrame({"model": np.repeat(["a", "b", "c"], 60), "item": np.tile(np.arange(60), 3),
                      "score": S.ravel(), "task": np.tile(np.repeat(["x", "y"], 30), 3)})
    res = compare.evaluate(t, guarantee="exact", seed=0)
    assert res.params["guarantee"] == "exact" and res.info["tests"].startswith("McNemar")
    assert "at this number of questions" in res.level["meaning"]
    v = dict(zip(zip(res.pairs["model_a"], res.pairs["model_b"]), res.pairs["verdict"]))
    assert v[("a", "b")] == "a better" and v[("b", "c")] == "unresolved"
    assert res.models.set_index("model").loc["a", "rank_low"] == 1
    # each task's own comparison under the same guarantee; the pooled one cannot weigh tasks equally
    assert set(res.task_pairs["task"]) == {"x", "y"}
    with pytest.raises(AssayInputError, match="weight='questions'"):
        compare.evaluate(t, guarantee="exact", weight="tasks", seed=0)
    # a requirement A>B is read off the verdict, A>=B-m off the pair interval
    ok = compare.check_require(res, ["a>b", "b>=c-0.5"])
    assert ok[0][0] and ok[1][0]
