"""FAQ on real Open LLM Leaderboard answers, evaluated on model families absent from the history (small versions of
the faq-leaderboard and faq-stopping studies; the full ones are in the README)."""

import numpy as np
import pytest

from assay.studies import run_study
from assay.studies.faq import DATA, shared_data_dir

# one worker runs this module: its module-scoped fixtures are computed once, not on each xdist worker
# slow (make check leaves it out): a long Monte Carlo study
pytestmark = [pytest.mark.slow, pytest.mark.skipif(not (shared_data_dir() / DATA).exists(), reason="shared data not present"),
              pytest.mark.xdist_group("faq_study")]


def binom_se(p, n):
    return float(np.sqrt(p * (1 - p) / n))


@pytest.fixture(scope="module")
def leaderboard():
    return run_study("faq-leaderboard", trials=3, budgets=(0.025, 0.1), n_models=300, splits=2,
                     methods=("faq", "faq_paper", "uniform", "ht_uniform"), seed=1)


def test_covers_at_the_smallest_budget_on_unseen_families(leaderboard):
    """2.5% of the bank (33 queries), 300 models in 2 family-level splits x 3 seeds = 900 intervals.

    The default covers within 3 binomial standard errors of 95% (it measured 0.940 and 0.953; 0.948 at both budgets
    with 6 seeds); the paper's released configuration (with replacement, tau = 0.05, eq. 8, normal quantile) does not:
    it measured 0.906 here (floor 0.928), 0.90 at 2.5% on the full study, the under-coverage the paper reports at small
    budgets, made worse here by unseen families."""
    t = leaderboard.rows.set_index(["budget", "method"])
    n = 300 * 3
    faq = t.loc[(0.025, "faq")]
    assert faq["coverage"] >= 0.95 - 3 * binom_se(0.95, n)
    assert t.loc[(0.025, "faq_paper"), "coverage"] < faq["coverage"] - 0.03
    assert t.loc[(0.025, "faq_paper"), "coverage"] < 0.95 - 2 * binom_se(0.95, n)
    assert t.loc[(0.1, "faq"), "coverage"] >= 0.95 - 3 * binom_se(0.95, n)
    # tight: the floor learnt on held-out families of each split's history (measured 0.940 and 0.953);
    # the naive variance, the martingale increments alone with Student t, under-covers at 33 questions (0.930, under
    # 0.939; 0.938 with 6 seeds, under 0.942)
    for b in (0.025, 0.1):
        assert t.loc[(b, "faq"), "coverage"] <= 0.965 + 2 * binom_se(0.95, n)
    assert t.loc[(0.025, "faq:increments|t"), "coverage"] < 0.95 - 1.5 * binom_se(0.95, n)
    assert t.loc[(0.025, "faq:increments|t"), "coverage"] < t.loc[(0.025, "faq"), "coverage"]
    # the uniform reference (Wilson interval) covers too, so ESS against it is a fair comparison
    assert t.loc[(0.025, "uniform"), "coverage"] >= 0.95 - 3 * binom_se(0.95, n)


def test_saves_queries_on_unseen_families(leaderboard):
    t = leaderboard.rows.set_index(["budget", "method"])
    # measured 2.1x at 10% on the full study; the bar is 1.3x over the honest uniform sample mean
    assert t.loc[(0.1, "faq"), "ess_vs_uniform_mean"] >= 1.3
    assert t.loc[(0.1, "faq"), "ess_vs_ht_uniform"] > t.loc[(0.1, "faq"), "ess_vs_uniform_mean"]
    assert t.loc[(0.1, "faq"), "paper_ess"] == 4.89 and t.loc[(0.1, "faq"), "ref_released_ess_vs_ht"] == 2.13
    notes = " ".join(leaderboard.info["notes"])
    assert "whole model families held out" in notes
    # the saving each split's history predicted before any new model was queried is within 20% of the realised
    for b in (0.025, 0.1):
        pred, real = t.loc[(b, "faq"), "expected_saving"], t.loc[(b, "faq"), "ess_vs_uniform_mean"]
        assert abs(pred - real) <= 0.2 * real, (b, pred, real)


def test_stopping_rule_covers_at_the_stopping_time():
    # one trial (300 intervals, floor 0.912): covered 0.990 (0.992 of 600). The anytime interval shrunk towards the
    # estimate by 35% at the stopping time covers 0.907 (0.913 of 600, floor 0.923): the check fails it at either
    # size, and neither catches 30% (0.937, 0.942): the interval is conservative
    r = run_study("faq-stopping", trials=1, widths=(0.15,), n_models=300, splits=2, fixed_budgets=(0.025, 0.05, 0.1),
                  seed=2)
    row = r.rows.iloc[0]
    n = 300 * 1
    assert row["coverage_at_stop"] >= 0.95 - 3 * binom_se(0.95, n)  # measured 0.99 on the full study
    assert row["share_reached"] > 0.95 and row["mean_final_width"] <= 0.15
    assert 20 <= row["mean_queries"] < 0.5 * 1351
    # anytime validity has a price: more queries than a budget guessed right in advance (1.7x measured)
    assert row["queries_vs_fixed"] > 1.0
