"""``--replay`` on several seeds (issue 53): how many questions a run asks depends on its draws, so a plan says the
mean and spread over seeds, the uniform run's beside it and, with a history, the history's effect with its Monte
Carlo error; the terminal and the report say which history was used."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from assay.cli import app
from assay.compare.live import replay
from assay.errors import AssayInputError


def _wide(K=4, N=120, seed=0):
    rng = np.random.default_rng(seed)
    z = rng.standard_normal(N)
    acc = np.linspace(0.9, -0.2, K)[:, None]
    M = (rng.random((K, N)) < 1 / (1 + np.exp(-(acc + z)))).astype(float)
    return pd.DataFrame(M, index=[f"m{i}" for i in range(K)], columns=[f"q{j}" for j in range(N)])


def test_a_replay_runs_several_seeds_and_reports_their_spread():
    t = _wide()
    rp = replay(t, goal="best", seed=3, replays=4)
    assert rp.runs["seed"].tolist() == [3, 4, 5, 6]
    first = replay(t, goal="best", seed=3, replays=1)
    # the first seed's run is the one a single replay gives (the tables), the others add spread
    assert first.runs["asked"].item() == rp.runs["asked"].iloc[0] == rp.result.info["replay"]["asked"]
    pd.testing.assert_frame_equal(first.result.pairs, rp.result.pairs)
    info = rp.result.info["replay"]
    assert info["asked_spread"]["mean"] == pytest.approx(rp.runs["asked"].mean())
    assert info["asked_spread"]["sd"] == pytest.approx(rp.runs["asked"].std(ddof=1))
    assert info["replays"] == 4 and "history_effect" not in info and info["history"] is None
    with pytest.raises(AssayInputError, match="replays"):
        replay(t, replays=0)


def test_with_a_history_the_effect_and_its_monte_carlo_error_are_said(tmp_path):
    past = _wide(K=30, seed=1)
    t = _wide(seed=2)
    past.to_csv(tmp_path / "past.csv")
    rp = replay(t, goal="best", seed=0, replays=3, history=tmp_path / "past.csv")
    h = rp.result.info["replay"]["history_effect"]
    ratio = rp.runs["asked"] / rp.runs["asked_uniform"]
    assert h["ratio_mean"] == pytest.approx(ratio.mean())
    assert h["ratio_se"] == pytest.approx(ratio.std(ddof=1) / np.sqrt(3))
    assert rp.result.info["history"] == str(tmp_path / "past.csv")
    t.to_csv(tmp_path / "bank.csv")
    r = CliRunner().invoke(app, ["compare", "--replay", str(tmp_path / "bank.csv"), "--goal", "best", "--replays", "3",
                                 "--history", str(tmp_path / "past.csv"), "--seed", "0"], env={"CI": "true"})
    assert r.exit_code == 0, r.output
    assert "replay over 3 seeds (0-2)" in r.stdout and f"history: {tmp_path / 'past.csv'}" in r.stdout
    assert "x the uniform run's questions (Monte Carlo s.e." in r.stdout
    r = CliRunner().invoke(app, ["compare", "--replay", str(tmp_path / "bank.csv"), "--goal", "best", "--replays", "2",
                                 "--json"], env={"CI": "true"})
    out = json.loads(r.stdout)
    assert [x["seed"] for x in out["replay"]["runs"]] == [0, 1]
