"""The adaptive comparison (assay.compare.adaptive, assay.compare.live.replay): goals, elimination, the betting
sequences for a finite bank, the history, and what a user gets wrong."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from assay.compare import adaptive, core
from assay.compare.live import replay
from assay.faq import FactorPosterior
from assay.errors import AssayInputError
from assay.stats.sequences import IncrementCS


def _bank_scores(acc, N, seed, spread=1.5):
    """0/1 scores of models with the given accuracies on N questions of varying difficulty (a one-factor model, so
    models agree more than independent coins would)."""
    rng = np.random.default_rng(seed)
    from scipy.special import expit, logit

    diff = rng.normal(0.0, spread, N)
    p = expit(logit(np.asarray(acc))[:, None] - diff[None, :])
    return (rng.random(p.shape) < p).astype(float)


def _table(S, prefix="q"):
    return pd.DataFrame(S, index=[f"m{i}" for i in range(len(S))], columns=[f"{prefix}{j}" for j in range(S.shape[1])])


def _failed(r, S) -> bool:
    """A replay fails when any interval misses the bank's own mean or difference (a wrong verdict is such a miss)."""
    a, b = core.pair_index(len(S))
    m = S.mean(axis=1)
    d = m[a] - m[b]
    return bool(np.any((r.lo > m + 1e-9) | (r.hi < m - 1e-9)) or np.any((r.d_lo > d + 1e-9) | (r.d_hi < d - 1e-9)))


# -- goals -----------------------------------------------------------------------------------------------------------


def test_certified_orderings_close_transitively_and_goals_read_them():
    K = 4
    a, b = core.pair_index(K)  # (0,1) (0,2) (0,3) (1,2) (1,3) (2,3)
    lo = np.array([0.01, -0.1, -0.1, 0.02, -0.1, -0.1])  # 0 > 1, 1 > 2: so 0 > 2 through 1
    hi = np.array([0.1, 0.1, 0.1, 0.1, 0.1, 0.1])
    better = adaptive.certified_better(lo, hi, K)
    assert better[0, 1] and better[1, 2] and better[0, 2] and not better[0, 3] and not better[3, 0]
    st = adaptive.goal_status("best", 1, lo, hi, None, K)
    assert not st.met and st.status.tolist() == ["open", "out", "out", "open"]
    assert st.needed.tolist() == [True, False, False, True]  # a beaten model leaves at once
    lo2 = lo.copy()
    lo2[2] = 0.001  # now 0 > 3 as well: 0 is certified best
    st = adaptive.goal_status("best", 1, lo2, hi, None, K)
    assert st.met and st.status.tolist() == ["in", "out", "out", "out"] and not st.needed.any()
    st = adaptive.goal_status("all", 0, lo2, hi, None, K)
    assert not st.met and st.open_pairs.tolist() == [False, False, False, False, True, True]
    assert st.needed.tolist() == [False, True, True, True]
    # top-2: 0 is in; 1, 2, 3 open while 1 vs 3 and 2 vs 3 are not settled
    st = adaptive.goal_status("top-k", 2, lo2, hi, None, K)
    assert not st.met and st.status.tolist() == ["in", "open", "out", "open"]  # 2 is beaten by 0 and 1
    # with a margin, models that may be best and are equivalent within it meet goal best
    lo3 = np.array([-0.01, 0.05, 0.05, 0.05, 0.05, -0.3])
    hi3 = np.array([0.01, 0.2, 0.2, 0.2, 0.2, 0.3])
    st = adaptive.goal_status("best", 1, lo3, hi3, 0.02, K)
    assert st.met and st.status.tolist() == ["open", "open", "out", "out"]
    assert not adaptive.goal_status("best", 1, lo3, hi3, None, K).met


@pytest.mark.parametrize("goal,k,msg", [("fastest", None, "goal must be one of"), ("top-k", None, "needs k"),
                                        ("top-k", 4, "from 1 to 3"), ("top-k", 0, "from 1 to 3"),
                                        ("top-k", True, "from 1 to 3"), ("all", 2, "for goal 'top-k' only")])
def test_goal_and_k_are_checked_before_anything_is_asked(goal, k, msg):
    asked = []
    with pytest.raises(AssayInputError, match=msg):
        adaptive.run(lambda m, i: asked.append(1), 4, 50, goal=goal, k=k, rng=np.random.default_rng(0))
    assert not asked


# -- the betting sequences ---------------------------------------------------------------------------------------


def _wor_increments(pop, order, q=None, f=None):
    """The doubly robust increments of one claim read in ``order`` (uniform draws when q is None)."""
    N = len(pop)
    z = pop[order]
    before = np.concatenate([[0.0], np.cumsum(z)[:-1]])
    left = N - np.arange(len(order))
    return (before + left * z) / N, before / N, (before + left) / N


def test_increment_cs_covers_a_finite_bank_at_every_size_and_closes_on_it():
    """400 seeded readings of a 300-question bank without replacement: the sequence misses the bank's mean (at any
    of the 30 looks) at most delta of the time, within 2 Monte Carlo standard errors, and the whole bank gives it
    exactly."""
    rng = np.random.default_rng(7)
    N, reps, delta = 300, 400, 0.1
    pop = (rng.random(N) < 0.35).astype(float)
    theta = pop.mean()
    miss = 0
    for r in range(reps):
        order = rng.permutation(N)
        phi, L, U = _wor_increments(pop, order)
        cs = IncrementCS([delta], 0.0, 1.0, grid=512)
        ever = False
        for s in range(0, N, 10):
            cs.update([0], phi[None, s:s + 10], L[None, s:s + 10], U[None, s:s + 10])
            lo, hi = cs.interval()
            ever |= not (lo[0] <= theta <= hi[0])
        miss += ever
        if r == 0:  # the whole bank read: the mean is one of two values 1/N apart, within a grid step each side
            assert hi[0] - lo[0] <= 1.0 / N + 2.0 / 511 + 1e-12
    rate = miss / reps
    assert rate <= delta + 2 * np.sqrt(delta * (1 - delta) / reps)


@pytest.mark.slow  # a Monte Carlo study: make test runs it, make check leaves it out
def test_betting_at_the_decision_nulls_orders_more_pairs_than_the_empirical_bernstein_sequence():
    """At 300 and 1,000 of a 1,351-question bank, the sequences the adaptive engine uses certify the sign of more
    pair differences than today's empirical-Bernstein sequences (core.finite, without replacement), both at the same
    per-claim level, over 60 seeded orders; neither misses the bank's differences."""
    S = _bank_scores([0.30, 0.33, 0.36, 0.40, 0.45], 1351, seed=11)
    K, N = S.shape
    a, b = core.pair_index(K)
    true = S[a].mean(axis=1) - S[b].mean(axis=1)
    rng = np.random.default_rng(3)
    wins = {300: [0, 0], 1000: [0, 0]}
    misses = 0
    for _ in range(60):
        order = rng.permutation(N)
        alpha = 0.05 / (K + len(a))
        cs = IncrementCS(np.full(len(a), alpha), -1.0, 1.0, grid=1024, points=[1e-9, -1e-9])
        D = (S[a] - S[b])[:, order]
        before = np.concatenate([np.zeros((len(a), 1)), np.cumsum(D, axis=1)[:, :-1]], axis=1)
        left = N - np.arange(N)
        phi, L, U = (before + left * D) / N, (before - left) / N, (before + left) / N
        for s in range(0, 1000, 10):
            cs.update(np.arange(len(a)), phi[:, s:s + 10], L[:, s:s + 10], U[:, s:s + 10])
            n = s + 10
            if n in wins:
                lo, hi = cs.interval()
                misses += not np.all((lo <= true + 1e-12) & (true <= hi + 1e-12))
                eb = core.finite(S[:, order[:n]], None, delta=0.05, low=0.0, high=1.0, rng=None, horizon=N,
                                 population=N)
                wins[n][0] += int(((lo > 0) | (hi < 0)).sum())
                wins[n][1] += int(((eb.d_lo > 0) | (eb.d_hi < 0)).sum())
    for n, (bet, eb) in wins.items():
        assert bet > eb, (n, bet, eb)
    assert misses / 120 <= 0.05 + 2 * np.sqrt(0.05 * 0.95 / 120)  # the pair claims, looked at twice


# -- replays: validity, elimination, the bank's end ------------------------------------------------------------


#: seeded replays per case (150 before for each). Deliberately broken, every interval of the run (the models' and the
#: pairs', so also the goal and who stays in play) shrunk towards its estimate: the finite guarantee's sequences are
#: conservative, so the check catches only large shrinks, and it catches the same ones as with 150.
#: finite, all: 100 (limit 16 failures): measured 3 (4 of 150, limit 22); shrunk 30% 18 failures, caught (31 of 150);
#: 25% 13 and 20% 12, not caught (21 and 17 of 150, neither caught).
#: finite, best: 75 (limit 12): measured 1 (3 of 150); shrunk 35% 15, caught (36 of 150); 30% 8, not caught (22 of 150,
#: not caught).
REPLAYS = {("finite", "all"): 100, ("finite", "best"): 75, ("asymptotic", "all"): 150, ("asymptotic", "top-k"): 150}


@pytest.mark.parametrize("guarantee,goal", [pytest.param("finite", "all", marks=pytest.mark.slow),
                                            pytest.param("finite", "best", marks=pytest.mark.slow),
                                            ("asymptotic", "all"), ("asymptotic", "top-k")])
def test_replays_keep_every_claim_at_once(guarantee, goal):
    """Seeded replays (:data:`REPLAYS`) of one 5-model bank of 240 questions: a replay fails when any verdict is
    wrong or any interval misses the bank's own mean or difference; the failure rate is at most delta within 2 Monte
    Carlo standard errors."""
    S = _bank_scores([0.35, 0.4, 0.42, 0.5, 0.52], 240, seed=2)
    K, N = S.shape
    reps, delta, fails = REPLAYS[guarantee, goal], 0.1, 0
    for sd in range(reps):
        r = adaptive.run(lambda m, i: S[np.ix_(m, i)], K, N, goal=goal, k=2 if goal == "top-k" else None,
                         guarantee=guarantee, delta=delta, rng=np.random.default_rng(1000 + sd), grid=512)
        fails += _failed(r, S)
    assert fails / reps <= delta + 2 * np.sqrt(delta * (1 - delta) / reps), fails


def test_a_settled_model_is_asked_no_more_and_the_rest_stay_paired():
    S = _bank_scores([0.1, 0.45, 0.5, 0.9], 400, seed=4)
    rp = replay(_table(S), goal="best", seed=1)
    m = rp.result.models.set_index("model")
    assert rp.result.info["goal_met"] and m.loc["m3", "status"] == "in"
    assert m.loc["m0", "n_asked"] < m.loc["m3", "n_asked"] and m.loc["m0", "left_reason"] == "settled"
    # paired: every model was asked a prefix of one sequence of draws
    draws = rp.result.tables["draws"]
    assert len(draws) == m["n_asked"].max() and draws["item"].is_unique
    rounds = rp.result.tables["rounds"]
    assert rounds.groupby("model")["questions"].sum().to_dict() == m["n_asked"].to_dict()
    # further questions to resolve: never more than the bank has left for the pair
    p = rp.result.pairs.dropna(subset=["items_to_resolve"])
    assert len(p) and (p["items_to_resolve"] <= 400 - p["n_items"]).all() and (p["items_to_resolve"] >= 0).all()
    pd.testing.assert_series_equal(rp.asked, rp.asked_uniform, check_names=False)  # no history: the uniform run


def test_asked_to_the_end_of_the_bank_a_small_difference_is_known_exactly():
    """Two models 3 questions apart on a 300-question bank: a difference no sample could order is ordered near the
    bank's end, where the questions left cannot undo it."""
    rng = np.random.default_rng(0)
    x = (rng.random(300) < 0.5).astype(float)
    y = x.copy()
    flip = rng.choice(np.flatnonzero(x == 1), 3, replace=False)
    y[flip] = 0.0
    rp = replay(_table(np.vstack([x, y])), goal="all", seed=0)
    p = rp.result.pairs.iloc[0]
    assert p["verdict"] == "a better" and 0 < p["ci_low"] <= 0.01 <= p["ci_high"]
    assert rp.result.info["stopped"] == "goal met" and (rp.asked >= 270).all()


def test_replay_reports_the_uniform_run_and_the_cli_prints_it(tmp_path):
    from typer.testing import CliRunner

    from assay.cli import app

    S = _bank_scores([0.2, 0.5, 0.55, 0.8], 300, seed=5)
    _table(S).to_csv(tmp_path / "t.csv")
    r = CliRunner().invoke(app, ["compare", "--replay", str(tmp_path / "t.csv"), "--goal", "top-k", "--k", "2",
                                 "--seed", "3", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["params"]["goal"] == "top-k" and out["params"]["k"] == 2
    assert {"n_asked", "left_round", "left_reason"} <= set(out["models"][0])
    assert out["replay"]["asked_uniform"] >= 1 and "goal_met" in json.dumps(out)
    r = CliRunner().invoke(app, ["compare", "--replay", str(tmp_path / "t.csv"), "--goal", "best", "--seed", "3",
                                 "--report", str(tmp_path / "r.html")])
    assert r.exit_code == 0 and "goal met: the best model certified" in r.output and "replay over 5 seeds" in r.output
    page = (tmp_path / "r.html").read_text()
    assert "questions asked of each model, round by round" in page and "goal met" in page
    # adaptive options on a score file are refused, not ignored
    long = _table(S).stack().rename("score").rename_axis(["model", "item"]).reset_index()
    long.to_csv(tmp_path / "long.csv", index=False)
    r = CliRunner().invoke(app, ["compare", str(tmp_path / "long.csv"), "--goal", "best"])
    assert r.exit_code == 2 and "--goal" in r.output and "--replay" in r.output


def test_bad_replay_tables_are_refused(tmp_path):
    S = _bank_scores([0.3, 0.6], 50, seed=1)
    t = _table(S)
    t.iloc[0, 3] = np.nan
    with pytest.raises(AssayInputError, match="1 missing"):
        replay(t)
    with pytest.raises(AssayInputError, match="at least 2 models"):
        replay(_table(S[:1]))
    with pytest.raises(AssayInputError, match="no file"):
        replay(tmp_path / "nope.csv")
    with pytest.raises(AssayInputError, match="goal 'top-k' needs k"):
        replay(_table(S), goal="top-k")


# -- the history ---------------------------------------------------------------------------------------------------


def _history_and_models(seed=0, n_hist=60, K=5, N=400, k=3):
    rng = np.random.default_rng(seed)
    from scipy.special import expit

    V = rng.normal(0, 1, (N, k))
    b = rng.normal(-0.3, 1.0, N)
    U = rng.normal(0, 1, (n_hist + K, k))
    S = (rng.random((n_hist + K, N)) < expit(U @ V.T + b)).astype(float)
    cols = [f"q{j}" for j in range(N)]
    hist = pd.DataFrame(S[:n_hist], index=[f"h{i}/m" for i in range(n_hist)], columns=cols)
    new = pd.DataFrame(S[n_hist:], index=[f"m{i}" for i in range(K)], columns=cols)
    return hist, new


def test_a_history_is_checked_and_recorded(tmp_path, monkeypatch):
    monkeypatch.setenv("ASSAY_CACHE_DIR", str(tmp_path / "cache"))
    hist, new = _history_and_models()
    rp = replay(new, goal="best", history=hist, seed=0)
    assert rp.result.info["history"] == "a score table"
    q = rp.result.tables["draws"]["q"]
    left = rp.result.tables["draws"]["questions_left"]
    assert (q * left >= adaptive.FLOOR - 1e-9).all()  # every question kept at least floor / questions left
    few = hist.iloc[:, :150]
    with pytest.raises(AssayInputError, match="shares 150 of the bank's 400"):
        replay(new, history=few)
    bad = hist.copy()
    bad.iloc[2, 5] = 0.5
    with pytest.raises(AssayInputError, match="Bernoulli"):
        replay(new, history=bad)
    bad = hist.copy()
    bad.iloc[2, 5] = np.nan
    with pytest.raises(AssayInputError, match="missing"):
        replay(new, history=bad)


@pytest.mark.slow  # a Monte Carlo study: make test runs it, make check leaves it out
def test_a_misleading_history_costs_power_never_validity(tmp_path, monkeypatch):
    """A history whose question ids are shuffled against the bank (its predictions are noise): 30 replays still keep
    every claim (failures at most delta within 2 Monte Carlo standard errors)."""
    monkeypatch.setenv("ASSAY_CACHE_DIR", str(tmp_path / "cache"))
    hist, new = _history_and_models(seed=3)
    rng = np.random.default_rng(0)
    wrong = hist.copy()
    wrong.columns = list(rng.permutation(hist.columns))
    from assay.compare.live import read_history

    fm = read_history(wrong, list(new.columns))
    S = new.to_numpy()
    K, N = S.shape
    # 30 replays (60 before; limit 6 failures, 10 of 60): measured 0 (0 of 60). Deliberately broken, every interval of
    # the run shrunk towards its estimate: by 45% 8 failures, caught (22 of 60, caught); by 40% 5, not caught (9 of 60,
    # not caught either): the sequences are conservative, the check catches the same shrinks as with 60
    reps, delta, fails = 30, 0.1, 0
    for sd in range(reps):
        pred = FactorPosterior(fm, list(new.columns), K)
        r = adaptive.run(lambda m, i: S[np.ix_(m, i)], K, N, goal="all", delta=delta, predictor=pred,
                         rng=np.random.default_rng(sd), grid=512)
        fails += _failed(r, S)
    assert fails / reps <= delta + 2 * np.sqrt(delta * (1 - delta) / reps), fails


# -- properties ------------------------------------------------------------------------------------------------------


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=40, deadline=None, derandomize=True)
@given(pop=st.lists(st.sampled_from([0.0, 1.0, 0.25, 0.5]), min_size=2, max_size=40),
       batch=st.integers(1, 7), seed=st.integers(0, 10**6))
def test_read_to_the_end_the_interval_closes_on_the_last_certain_bounds_and_never_inverts(pop, batch, seed):
    """Whatever the values and the batches, the sequence read over a whole finite population ends inside the last
    value's certain bounds [L_N, U_N] (1/N wide, holding the mean; to a grid step), and no interval is ever
    inverted."""
    pop = np.array(pop)
    N = len(pop)
    order = np.random.default_rng(seed).permutation(N)
    z = pop[order]
    before = np.concatenate([[0.0], np.cumsum(z)[:-1]])
    left = N - np.arange(N)
    phi, L, U = (before + left * z) / N, before / N, (before + left) / N
    cs = IncrementCS([0.1], 0.0, 1.0, grid=256)
    for s in range(0, N, batch):
        cs.update([0], phi[None, s:s + batch], L[None, s:s + batch], U[None, s:s + batch])
        lo, hi = cs.interval()
        assert lo[0] <= hi[0]
    step = 1.0 / 255
    # read to the end, the certain bounds of the last value hold the interval (to a grid step each side): the mean
    # lies in [L_N, U_N], 1/N wide
    assert L[-1] - step - 1e-12 <= lo[0] and hi[0] <= U[-1] + step + 1e-12 and L[-1] <= pop.mean() <= U[-1]


@pytest.mark.slow  # a Monte Carlo study: make test runs it, make check leaves it out
def test_peeking_at_a_fixed_sample_interval_orders_a_tie_the_sequences_do_not():
    """Two models exactly as good on a 300-question bank (each right on 120, on different questions). Asking 10 at a
    time and stopping as soon as a fixed-sample paired interval (normal, 95%) excludes 0 -- the naive way to ask until
    resolved -- orders the tie in far more than 5% of 200 seeded runs; the engine's finite sequences, on the same
    orders of the bank, in at most 5% (both within 2 Monte Carlo standard errors)."""
    rng = np.random.default_rng(21)
    N, reps, delta = 300, 200, 0.05
    x = np.zeros(N)
    x[rng.choice(N, 120, replace=False)] = 1.0
    y = np.zeros(N)
    y[rng.choice(N, 120, replace=False)] = 1.0
    S = np.vstack([x, y])
    naive = engine = 0
    for sd in range(reps):
        order = np.random.default_rng(sd).permutation(N)
        d = (x - y)[order]
        for n in range(10, N, 10):
            m, s = d[:n].mean(), d[:n].std(ddof=1)
            half = 1.96 * s / np.sqrt(n) * np.sqrt(1 - n / N) if s > 0 else 0.0
            if abs(m) > half:
                naive += 1
                break
        r = adaptive.run(lambda mm, i: S[np.ix_(mm, i)], 2, N, goal="all", delta=delta,
                         rng=np.random.default_rng(sd), grid=512)
        engine += bool((r.d_lo > 0).any() or (r.d_hi < 0).any())
    se = np.sqrt(delta * (1 - delta) / reps)
    assert naive / reps > delta + 2 * se, naive
    assert engine / reps <= delta + 2 * se, engine


def test_a_run_too_big_for_memory_is_refused_up_front_naming_what_fits(tmp_path):
    """`--replay` of the 755-model MMLU-Pro math matrix asked numpy for 43.5 GiB (pairs x batch x grid) and died.
    The engine estimates its peak before the first round: the finite guarantee on 450 models is refused at once,
    naming the largest number that fits; the asymptotic one runs the same table; the command line says the same."""
    from typer.testing import CliRunner

    from assay.cli import app

    K, N = 450, 40
    rng = np.random.default_rng(0)
    S = (rng.random((K, N)) < rng.uniform(0.2, 0.8, (K, 1))).astype(float)
    table = pd.DataFrame(S, index=[f"m{i}" for i in range(K)], columns=[f"q{j}" for j in range(N)])
    most = adaptive.max_models(N, guarantee="finite")
    assert 300 < most < K and adaptive.peak_bytes(most + 1, N, guarantee="finite") > adaptive.MAX_MEMORY
    with pytest.raises(AssayInputError, match=rf"450 models on 40 questions would take about .* GB with guarantee="
                                              rf"'finite'.*compare at most {most} models at once"):
        replay(table, guarantee="finite")
    assert adaptive.peak_bytes(755, 1351, guarantee="asymptotic", history=True) < 2 * 1024**3
    rp = replay(table, guarantee="asymptotic", budget=20, seed=0)
    assert rp.result.params["queried"] == 20 and len(rp.result.pairs) == K * (K - 1) // 2
    table.to_csv(tmp_path / "t.csv")
    r = CliRunner().invoke(app, ["compare", "--replay", str(tmp_path / "t.csv")])
    assert r.exit_code == 2 and f"compare at most {most} models at once" in r.output and "--max-memory" in r.output
    r = CliRunner().invoke(app, ["compare", "--replay", str(tmp_path / "t.csv"), "--guarantee", "finite",
                                 "--max-memory", "0.001"])
    assert r.exit_code == 2 and "above the limit of 0.0 GB" in r.output
