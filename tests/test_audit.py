"""Grader audit (issue 48): the true accuracy of a run's answers from a few human checks, valid however wrong the
grader is; the sheet a person fills; and bad input."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm
from typer.testing import CliRunner

from assay import audit as a
from assay.cli import app
from assay.errors import AssayInputError

N = 2000


def _worlds(rng, reps):
    """reps runs of N answers: 20% flagged (a reader unsure), where the grader errs far more; its errors are mostly
    false positives, so its raw accuracy is biased upwards by about 3 points."""
    flagged = rng.random((reps, N)) < 0.2
    y = (rng.random((reps, N)) < np.where(flagged, 0.4, 0.7)).astype(float)
    u = rng.random((reps, N))
    fp, fn = np.where(flagged, 0.30, 0.03), np.where(flagged, 0.10, 0.01)
    f = np.where(y == 1, (u >= fn), (u < fp)).astype(float)
    return flagged, y, f


def _wilson(p, n, delta):
    z = norm.ppf(1 - delta / 2)
    c = (p + z * z / (2 * n)) / (1 + z * z / n)
    h = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return c - h, c + h


@pytest.mark.slow
@pytest.mark.parametrize("n", [50, 100, 200])
def test_the_interval_covers_the_true_accuracy_and_the_graders_wilson_interval_misses(n):
    # 400 runs: tolerance 0.05 + 3 * 0.011; the interval missed in none of them (nor of 1,000). The check still fails
    # the interval shrunk towards the estimate by 70% (n=50), 60% (100) or 55% (200): at 1,000 runs, 70%, 60%, 50%
    # (the finite-sample interval is wide: shrunk 30% it still covers). The unweighted mean of the checked answers
    # (the draw probabilities ignored) fails the bias check below (bias 0.02, 1.6 to 2.8 times its tolerance); the
    # grader's Wilson interval misses in about 95% of the runs
    reps, delta = 400, 0.05
    rng = np.random.default_rng([48, n])
    flagged, y, f = _worlds(rng, reps)
    w = np.where(flagged, a.DEFAULT_WEIGHT, 1.0)
    order, q, s, lo_w, hi_w = a.plan_draws(w, f, n, a.DEFAULT_FLOOR, rng=rng)
    rows = np.arange(reps)[:, None]
    est, lo, hi = a.audit_interval(y[rows, order], f[rows, order], q, s, lo_w, hi_w, N, delta)
    theta, raw = y.mean(axis=1), f.mean(axis=1)
    assert (raw - theta).mean() >= 0.02  # the grader's errors bias its accuracy by at least 2 points
    miss = np.mean((theta < lo) | (theta > hi))
    mcse = np.sqrt(delta * (1 - delta) / reps)
    assert miss <= delta + 3 * mcse, miss
    assert np.all(hi - lo > 0)  # never of zero width while answers are left unchecked
    # the estimate is unbiased: its mean error is within 4 Monte Carlo standard errors of 0
    err = est - theta
    assert abs(err.mean()) <= 4 * err.std() / np.sqrt(reps) + 1e-3
    # the naive interval: Wilson on the grader's N scores, as if they were the truth
    wl, wh = _wilson(raw, N, delta)
    naive_miss = np.mean((theta < wl) | (theta > wh))
    assert naive_miss >= 0.5, naive_miss


def _run(rng, n_rows=300):
    """A scored table whose grader is wrong on some answers, and the truth."""
    ids = [f"q{i:03d}" for i in range(n_rows)]
    y = (rng.random(n_rows) < 0.6).astype(int)
    f = y.copy()
    wrong = rng.random(n_rows) < 0.1
    f[wrong] = 1 - f[wrong]
    run = pd.DataFrame({"id": ids, "prompt": [f"What is {i} + 1?" for i in range(n_rows)],
                        "reference": [str(i + 1) for i in range(n_rows)],
                        "response": [f"The answer is {i + 1 if t else i}." for i, t in enumerate(y)], "score": f})
    return run, dict(zip(ids, y))


def test_sample_then_evaluate_end_to_end_through_the_cli(tmp_path):
    rng = np.random.default_rng(7)
    run, truth = _run(rng)
    src = tmp_path / "run.csv"
    run.to_csv(src, index=False)
    sheet = tmp_path / "audit.csv"
    r = CliRunner().invoke(app, ["audit", str(src), "--n", "60", "--seed", "3", "-o", str(sheet)])
    assert r.exit_code == 0, r.output
    s = pd.read_csv(sheet, dtype=str, keep_default_na=False)
    assert list(s.columns) == list(a.SHEET_COLUMNS) and len(s) == 60
    assert "score" not in s.columns and set(s["human"]) == {""}  # the grader's score is not shown
    # a person checks the first 45 rows, in order
    s.loc[:44, "human"] = [str(truth[i]) for i in s["id"][:45]]
    s.to_csv(sheet, index=False)
    r = CliRunner().invoke(app, ["audit", str(src), "--labels", str(sheet), "--json"])
    assert r.exit_code == 0, r.output
    res = json.loads(r.output)["estimate"][0]  # the result's JSON: its main table, one row
    assert res["n_checked"] == 45 and res["m_drawn"] == 60 and res["N"] == 300
    theta = np.mean(list(truth.values()))
    assert res["ci_low"] <= theta <= res["ci_high"] and res["ci_low"] < res["ci_high"]
    assert res["raw"] == pytest.approx(run["score"].mean())
    assert 0 <= res["fpr"] <= 1 and 0 <= res["fnr"] <= 1
    r = CliRunner().invoke(app, ["audit", str(src), "--labels", str(sheet)])
    assert r.exit_code == 0 and "45 of 60 drawn answers checked" in r.output and "corrected accuracy" in r.output


def test_bad_input_is_refused_naming_the_row_and_nothing_is_overwritten(tmp_path):
    rng = np.random.default_rng(8)
    run, truth = _run(rng, 120)
    sheet = tmp_path / "audit.csv"
    with pytest.raises(AssayInputError, match="n=121 is larger than the run"):
        a.sample(run, 121, out=sheet)
    a.sample(run, 20, seed=1, out=sheet)
    before = sheet.read_bytes()
    with pytest.raises(AssayInputError, match="exists"):
        a.sample(run, 20, seed=2, out=sheet)
    assert sheet.read_bytes() == before
    s = pd.read_csv(sheet, dtype=str, keep_default_na=False)
    bad = s.copy()
    bad.loc[0, "human"], bad.loc[1, "human"] = "1", "yes"
    bad.to_csv(sheet, index=False)
    with pytest.raises(AssayInputError, match=r"row 2 .*human must be 0, 1 or blank"):
        a.evaluate(run, sheet)
    swapped = s.copy()
    swapped.loc[[0, 1], "id"] = swapped.loc[[1, 0], "id"].to_numpy()
    swapped.to_csv(sheet, index=False)
    with pytest.raises(AssayInputError, match="row 1 of the audit file has id"):
        a.evaluate(run, sheet)
    s.to_csv(sheet, index=False)
    other = run.iloc[:-1]
    with pytest.raises(AssayInputError, match="another run"):
        a.evaluate(other, sheet)
    changed = run.assign(score=1 - run["score"])
    with pytest.raises(AssayInputError, match="scores changed"):
        a.evaluate(changed, sheet)
    res = a.evaluate(run, sheet)  # nothing checked yet: the interval is everything
    assert res.n_checked == 0 and (res.ci_low, res.ci_high) == (0.0, 1.0) and res.estimate is None
    with pytest.raises(AssayInputError, match="score of"):
        a.read_run(run.assign(score=0.5))
    r = CliRunner().invoke(app, ["audit", "no-such-run"])
    assert r.exit_code != 0 and "--n" in r.output


def test_flags_steer_the_draws_and_every_answer_keeps_its_floor():
    rng = np.random.default_rng(9)
    w = np.where(np.arange(1000) < 100, 4.0, 1.0)[None, :]
    order = a.plan_draws(np.repeat(w, 400, axis=0), np.zeros((400, 1000)), 50, 0.5, rng=rng).order
    share = (order < 100).mean()  # flagged: 10% of the answers
    # at the first draw a flagged answer has q = 0.5/1000 + 0.5 * 4/1300; the share stays near 0.5 * 400/1300 + 0.05
    assert 0.15 < share < 0.25
    f = np.zeros((1, 1000))
    q = a.plan_draws(w, f, 50, 0.5, order=order[:1]).q
    assert np.all(q[0] >= 0.5 / (1000 - np.arange(50)) - 1e-12)


@pytest.mark.slow
def test_a_real_run_audited_with_blind_labels(tmp_path):
    """SmolLM2 and Gemma's maths answers (``tests/fixtures/live_corpus/math.jsonl``, its held-out half: 1,308
    answers, the ones the math scorer was not tuned on), scored by the math scorer and audited with the blind labels as
    the person's checks: the corrected interval holds the labelled accuracy."""
    from pathlib import Path

    corpus = Path(__file__).parent / "fixtures" / "live_corpus" / "math.jsonl"
    recs = [json.loads(x) for x in corpus.read_text().splitlines() if x.strip()]
    recs = [r for r in recs if r["half"] == "test"]  # each answer is scored and read by the flags' readers: ~9 ms
    run = pd.DataFrame({"id": [r["id"] for r in recs], "prompt": [r["prompt"] for r in recs],
                        "reference": [r["reference"] for r in recs], "response": [r["response"] for r in recs],
                        "finish_reason": [r["finish_reason"] for r in recs], "scorer": "math"})
    table = a.read_run(run)
    truth = {r["id"]: r["correct"] for r in recs}
    sheet = tmp_path / "audit.csv"
    a.sample(table, 150, seed=48, out=sheet)
    s = pd.read_csv(sheet, dtype=str, keep_default_na=False)
    s["human"] = [str(truth[i]) for i in s["id"]]
    s.to_csv(sheet, index=False)
    res = a.evaluate(table, sheet)
    theta = np.mean([truth[i] for i in table["id"]])
    assert res.n_checked == 150 and res.ci_low <= theta <= res.ci_high


def test_a_journal_run_is_matched_to_the_bank_by_prompt(tmp_path):
    from assay.models.journal import open_journal

    j, _ = open_journal(tmp_path / "j.sqlite")
    bank = pd.DataFrame({"id": ["a", "b", "c"], "prompt": ["1+1?", "2+2?", "half?"],
                         "reference": ["2", "4", "\\frac{1}{2}"], "scorer": ["numeric", "numeric", "math"]})
    j.start_run("r1")
    for k, (p, text) in enumerate([("1+1?", "The answer is 2."), ("2+2?", "It is 5."), ("half?", "So $0.5$.")]):
        j.put("r1", f"k{k}", {"model": "m", "messages": [{"role": "user", "content": p}]},
              {"text": text, "finish_reason": "stop"})
    j.close()
    run = a.read_run("r1", bank=bank, journal=tmp_path / "j.sqlite")
    assert list(run["id"]) == ["a", "b", "c"] and list(run["score"]) == [1.0, 0.0, 1.0]
    assert list(run["scorer"]) == ["numeric", "numeric", "math"]
    with pytest.raises(AssayInputError, match="bank="):
        a.read_run("r1", journal=tmp_path / "j.sqlite")


@pytest.mark.parametrize("truth", [0, 1])
def test_all_equal_scores_never_give_a_zero_width_interval_until_every_answer_is_checked(truth, tmp_path):
    n_rows = 40
    run = pd.DataFrame({"id": [f"q{i}" for i in range(n_rows)], "reference": ["4"] * n_rows,
                        "response": ["The answer is 4."] * n_rows, "score": [truth] * n_rows})
    sheet = a.sample(run, 30, seed=3)
    sheet["human"] = [str(truth)] * 30  # the grader was right on every checked answer
    res = a.evaluate(run, sheet)
    assert res.n_checked == 30 and res.ci_low < res.ci_high and res.ci_low <= truth <= res.ci_high
    assert res.errors_seen == 0
    # one answer the grader got wrong, found at the first row
    sheet["human"] = [str(1 - truth)] + [str(truth)] * 29
    res = a.evaluate(run, sheet)
    assert res.errors_seen == 1 and res.ci_low < res.ci_high
    assert (res.fpr if truth == 1 else res.fnr) > 0
    # every answer checked: the interval is the run's exact accuracy
    full = a.sample(run, n_rows, seed=4)
    full["human"] = [str(truth)] * n_rows
    res = a.evaluate(run, full)
    assert res.ci_low == res.ci_high == truth


def test_a_damaged_plan_is_refused(tmp_path):
    rng = np.random.default_rng(10)
    run, _ = _run(rng, 50)
    sheet = tmp_path / "audit.csv"
    a.sample(run, 10, out=sheet)
    plan = json.loads(a.plan_path(sheet).read_text())
    plan["order"] = plan["order"][:-1]
    a.plan_path(sheet).write_text(json.dumps(plan))
    with pytest.raises(AssayInputError, match="plan file is damaged"):
        a.evaluate(run, sheet)
    a.plan_path(sheet).write_text("not json")
    with pytest.raises(AssayInputError, match="not a plan"):
        a.evaluate(run, sheet)


# -- the census, the certain set, the grader named, the outcomes shown (the user's four defects) ---------------------


def _census_run():
    """30 answers, 4 right; the grader scores 2 of the 4 right and no wrong answer right."""
    y = np.zeros(30, int)
    y[:4] = 1
    f = np.zeros(30, int)
    f[:2] = 1
    run = pd.DataFrame({"id": [f"q{i}" for i in range(30)], "reference": ["4"] * 30,
                        "response": ["The answer is 4."] * 30, "score": f})
    return run, y


def _fill(sheet, y, k=None):
    """The person's checks of the first ``k`` rows (all by default), the rest left blank."""
    k = len(sheet) if k is None else k
    sheet["human"] = [str(y[int(i[1:])]) if r < k else "" for r, i in enumerate(sheet["id"])]
    return sheet


@pytest.mark.parametrize("seed", [0, 3, 4])
def test_a_census_gives_the_census_error_counts_and_rates(seed):
    # every answer checked: 2 false negatives of 4 right answers, no false positive of 26 wrong ones. The averaged
    # step-wise estimates gave a false-negative rate of 0.583, 0.917 and 0.633 at these seeds (0.627 in the report)
    run, y = _census_run()
    res = a.evaluate(run, _fill(a.sample(run, 30, seed=seed), y))
    assert (res.fnr, res.fpr) == (0.5, 0.0)
    assert (res.false_negatives, res.false_positives) == (2.0, 0.0)
    assert res.estimate == res.ci_low == res.ci_high == 4 / 30


@pytest.mark.parametrize("N", [200, 40])
def test_the_error_count_estimates_are_unbiased_and_within_what_the_checks_prove(N):
    # one fixed run (a fifth of it flagged, where the grader errs more), 20,000 audits of 30 draws: the mean of each
    # count estimate is within 3 Monte Carlo standard errors of the run's count, and every estimate lies in
    # [errors seen, errors seen + answers unchecked]. The averaged step-wise estimates were unbiased too, but at
    # N = 40 fell below the errors seen in 22% of the audits
    n, A = 30, 20_000
    rng = np.random.default_rng([52, N])
    j = np.arange(N)
    flagged = j < N // 5
    y = (j % 3 != 0).astype(float)
    f = np.where(np.where(flagged, j % 3 < 2, j % 17 == 5), 1 - y, y)  # N=200: 17 FP, 19 FN; N=40: 4 and 4
    w = np.where(flagged, a.DEFAULT_WEIGHT, 1.0)
    order = a.plan_draws(np.tile(w, (A, 1)), np.tile(f, (A, 1)), n, a.DEFAULT_FLOOR, rng=rng).order
    ya, fa, ga = y[order], f[order], flagged[order].astype(int)
    sizes = np.tile([np.sum(~flagged), np.sum(flagged)], (A, 1))
    for name, z, truth in (("false positives", fa * (1 - ya), np.sum(f * (1 - y))),
                           ("false negatives", (1 - fa) * ya, np.sum((1 - f) * y))):
        est = a.count_estimate(z, ga, sizes)
        mcse = est.std() / np.sqrt(A)
        print(f"N={N} {name}: truth {truth:g}, mean estimate {est.mean():.4f} (MC s.e. {mcse:.4f})")
        assert abs(est.mean() - truth) <= 3 * mcse, (name, est.mean(), truth, mcse)
        seen = z.sum(axis=1)
        assert np.all(est >= seen - 1e-9) and np.all(est <= seen + N - n + 1e-9)


def test_the_interval_is_intersected_with_what_the_checked_answers_prove():
    # 30 answers, 5 right; 20 of 30 checked, 3 of them right: the accuracy is at least 3/30 and at most 13/30 for
    # certain. The confidence sequence alone gave [0.0000, 0.3871]
    y = np.zeros(30, int)
    y[:5] = 1
    f = y.copy()
    f[0], f[5] = 0, 1
    run = pd.DataFrame({"id": [f"q{i}" for i in range(30)], "reference": ["4"] * 30,
                        "response": ["The answer is 4."] * 30, "score": f})
    sheet = _fill(a.sample(run, 30, seed=1), y, k=20)
    assert sum(int(v) for v in sheet["human"][:20]) == 3
    res = a.evaluate(run, sheet)
    assert res.n_checked == 20 and res.ci_low == pytest.approx(3 / 30) and res.ci_high <= 13 / 30
    assert res.ci_low <= res.estimate <= res.ci_high and res.ci_low < res.ci_high


def _journal_run(tmp_path, answers, meta=None, run_id="r1"):
    """A journal run answering a bank of plain-number references; ``answers``: (text, finish_reason) per question
    (text None: the request timed out)."""
    from assay.models.journal import open_journal

    n = len(answers)
    bank = pd.DataFrame({"id": [f"b{i}" for i in range(n)], "prompt": [f"What is {i} + 24?" for i in range(n)],
                         "reference": [i + 24 for i in range(n)]})
    bank.to_csv(tmp_path / "bank.csv", index=False)
    assert pd.read_csv(tmp_path / "bank.csv")["reference"].dtype == np.int64  # plain numbers, read as int64
    j, _ = open_journal(tmp_path / "j.sqlite")
    j.start_run(run_id, meta=meta)
    for k, (text, finish) in enumerate(answers):
        j.put(run_id, f"k{k}", {"model": "m", "messages": [{"role": "user", "content": f"What is {k} + 24?"}]},
              {"text": text, "finish_reason": finish} if text is not None else {"error": "Read timed out"})
    j.close()
    return tmp_path / "bank.csv", tmp_path / "j.sqlite"


def test_a_journal_run_with_plain_number_references_is_audited_end_to_end_naming_its_grader(tmp_path):
    answers = [(f"The answer is {k + 24 if k % 3 else k}.", "stop") for k in range(12)]
    bank, j = _journal_run(tmp_path, answers, meta={"scorer": "numeric", "policy": "wrong"})
    sheet = tmp_path / "audit.csv"
    base = ["audit", "r1", "--bank", str(bank), "--journal", str(j)]
    r = CliRunner().invoke(app, [*base, "--n", "12", "--seed", "1", "-o", str(sheet)])
    assert r.exit_code == 0, r.output
    assert "grader audited: numeric (the scorer the run was scored with)" in r.output
    assert "outcomes: 12 answered; 0 cut off" in r.output
    s = pd.read_csv(sheet, dtype=str, keep_default_na=False)
    assert s["reference"].tolist() == [str(int(i[1:]) + 24) for i in s["id"]]
    s["human"] = ["1" if int(i[1:]) % 3 else "0" for i in s["id"]]  # the grader is right on every answer
    s.to_csv(sheet, index=False)
    r = CliRunner().invoke(app, [*base, "--labels", str(sheet), "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["estimate"][0]["estimate"] == pytest.approx(8 / 12) and out["estimate"][0]["errors_seen"] == 0
    assert out["grader"]["name"] == "numeric" and out["grader"]["source"] == "recorded"
    assert out["grader"]["said"] == "numeric (the scorer the run was scored with)"
    assert out["outcomes"]["status"] == {"answered": 12} and out["outcomes"]["cut_off"] == 0
    r = CliRunner().invoke(app, [*base, "--labels", str(sheet)])
    assert r.exit_code == 0 and "grader audited: numeric (the scorer the run was scored with)" in r.output
    # another scorer asked for: said, with the one the run was scored with
    r = CliRunner().invoke(app, [*base, "--scorer", "exact", "--n", "5", "-o", str(tmp_path / "other.csv")])
    assert r.exit_code == 0, r.output
    assert "grader audited: exact (the scorer asked for; the run was scored with numeric)" in r.output


def test_where_the_grader_audited_comes_from_is_said(tmp_path):
    run, _ = _census_run()
    said = lambda t: a.evaluate(t, a.sample(t, 3, seed=0)).info["grader"]["said"]  # noqa: E731
    assert said(a.read_run(run)) == "the table's score column"
    assert said(a.read_run(run.assign(scorer="math"))) == "math (the table's score column)"
    assert said(a.read_run(run, scorer="numeric")) == "numeric (the scorer asked for, not the table's score column)"
    plain = run.drop(columns="score")
    assert said(a.read_run(plain)) == "exact (the default: no scorer recorded or given)"
    bank = pd.DataFrame({"id": run["id"], "prompt": [f"p{i}" for i in range(30)], "reference": ["4"] * 30,
                         "scorer": ["numeric"] * 30})
    assert said(a.read_run(plain.drop(columns="reference"), bank=bank)) == "numeric (the bank's scorer column)"
    # a journal run without a recorded scorer: the bank's column, else exact
    answers = [("The answer is 24.", "stop"), ("It is 26.", "stop")]
    b, j = _journal_run(tmp_path, answers)
    bank = pd.read_csv(b).assign(scorer="numeric")
    t = a.read_run("r1", bank=bank, journal=j)
    assert t.attrs["audit"]["grader"]["source"] == "bank" and list(t["score"]) == [1.0, 0.0]
    t = a.read_run("r1", bank=b, journal=j)
    assert t.attrs["audit"]["grader"] == {"name": "exact", "source": "default", "recorded": None}


def test_a_parent_run_is_refused_naming_the_runs_inside_it(tmp_path):
    from assay.models.journal import open_journal

    bank, j = _journal_run(tmp_path, [("The answer is 24.", "stop")], run_id="live1/plain")
    jj, _ = open_journal(j)
    jj.put("live1/boxed", "k0", {"model": "m", "messages": [{"role": "user", "content": "What is 0 + 24?"}]},
           {"text": "\\boxed{24}", "finish_reason": "stop"})
    jj.close()
    r = CliRunner().invoke(app, ["audit", "live1", "--bank", str(bank), "--journal", str(j), "--n", "1", "-o",
                                 str(tmp_path / "a.csv")])
    assert r.exit_code == 2
    assert "run 'live1' holds no answers of its own; it holds the runs live1/plain, live1/boxed: name one" in r.output


def test_outcomes_are_shown_and_a_run_mostly_unfinished_or_unread_is_warned_about(tmp_path):
    # 10 answers: 2 cut off by the token limit (one of them also unparseable), 1 more unparseable: 3 of 10 (> 1/5);
    # an 11th request timed out (left out of the run's accuracy, and said)
    answers = [(f"The answer is {k + 24}.", "stop") for k in range(7)]
    answers += [("Let me think step by step about", "length"), ("The answer is 31, so", "length"),
                ("I am not sure.", "stop"), (None, None)]
    bank, j = _journal_run(tmp_path, answers, meta={"scorer": "numeric"})
    t = a.read_run("r1", bank=bank, journal=j)
    assert t["status"].tolist().count("unparseable") == 2
    sheet = a.sample(t, 10, seed=0)
    run_info = sheet.attrs["run"]
    assert run_info["outcomes"]["said"] == "outcomes: 8 answered, 2 unparseable; 2 cut off; left out: 1 timed out"
    warn = ("3 of 10 answers (30%) are unparseable or cut off: the accuracy rests on answers the model did not finish "
            "or the grader could not read")
    assert run_info["warnings"] == [warn]
    sheet["human"] = ["1" if int(i[1:]) < 7 or i == "b8" else "0" for i in sheet["id"]]
    res = a.evaluate(t, sheet)
    assert res.warnings == [warn] and "outcomes: 8 answered, 2 unparseable; 2 cut off" in res.summary()
    assert json.loads(res.to_json())["outcomes"]["cut_off"] == 2
    r = CliRunner().invoke(app, ["audit", "r1", "--bank", str(bank), "--journal", str(j), "--n", "4", "-o",
                                 str(tmp_path / "s.csv")])
    assert r.exit_code == 0 and "2 cut off" in r.output and "note: 3 of 10 answers (30%)" in r.output
    # a table without status or finish_reason columns
    run, y = _census_run()
    res = a.evaluate(run, _fill(a.sample(run, 5, seed=0), y))
    assert "outcomes not recorded" in res.summary() and res.warnings == []
