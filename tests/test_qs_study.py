"""`assay study scope-sim --quick`: the summary keys, valid certificates, COUP's top-10 truly harder than uniform's."""

import json

import pytest
from typer.testing import CliRunner

from assay.cli import app

# slow (make check leaves it out): a long Monte Carlo study
pytestmark = pytest.mark.slow


def test_scope_sim_quick():
    r = CliRunner().invoke(app, ["study", "scope-sim", "--quick", "--json", "--workers", "2"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    s = out["summary"]
    for key in ("false_certification_rate", "topk_true_utility_coup", "topk_true_utility_uniform", "bound_coverage"):
        assert key in s
    assert s["false_certification_rate"] == 0.0  # 20+ runs; any wrong certificate would be a <= 1% event
    assert s["topk_true_utility_coup"] > s["topk_true_utility_uniform"] + 0.05
    assert s["bound_coverage_true"] >= 0.99
    rows = {(row["part"], row["method"]): row for row in out["rows"]}
    assert rows[("certify", "coup_anytime")]["certified"] > 0  # certificates are actually issued
    assert ("repulsion", "repulsion_0.5") in rows and ("adaptive", "cert0.9_adaptive") in rows
