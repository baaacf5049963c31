"""The faq-leaderboard study on real Open LLM Leaderboard answers (small version; the full one is in the README)."""

import numpy as np
import pytest

from assay.studies import run_study
from assay.studies.faq import shared_data_dir, DATA

pytestmark = pytest.mark.skipif(not (shared_data_dir() / DATA).exists(), reason="shared data not present")


def test_faq_leaderboard_small():
    grid = {"beta0": (1.0,), "rho": (0.0,), "gamma": (0.0,), "tau": (0.25,),
            "variance": ("increments", "conservative"), "quantile": ("normal",)}
    r = run_study("faq-leaderboard", trials=2, budgets=(0.05,), n_history=300, n_new=100, val_seeds=2,
                  cv_ks=(4,), cv_lambdas=(3.0,), grid=grid, methods=("faq", "uniform", "ht_uniform"), seed=0)
    t = r.rows.set_index("method")
    assert {"faq", "uniform", "ht_uniform", "faq:paper"} <= set(t.index)
    # factors fitted by assay on 300 other models make FAQ clearly narrower than uniform sampling
    assert t.loc["faq", "ess_vs_uniform_mean"] > 1.5
    assert t.loc["faq", "ess_vs_ht_uniform"] > t.loc["faq", "ess_vs_uniform_mean"]
    # 200 intervals: coverage well away from failure (MC s.e. ~0.015)
    assert t.loc["faq", "coverage"] > 0.95 - 4 * np.sqrt(0.05 * 0.95 / 200)
    assert t.loc["faq", "paper_ess"] == 4.27 and t.loc["faq", "ref_released_ess_vs_ht"] == 1.96
