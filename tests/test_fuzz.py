"""Property-based fuzzing of every public entry point and CLI command: whatever the input, the only exception a user
may see is an AssayError (CLI: one ``error:`` line on stderr, exit 2 or 3), never a traceback from numpy or pandas.

Generated inputs: small tables with NaN, inf, strings, negatives, booleans, huge numbers, empty tables, ragged and
duplicated keys, duplicated column names; garbage files; bad parameters. ``make test`` runs a bounded number of
examples per test (deterministic: derandomised); ``make fuzz`` runs >= 10,000 inputs in counting mode
(ASSAY_FUZZ_COUNT=1): unexpected exceptions are counted instead of raised, and the session prints the count.
"""

from __future__ import annotations

import os
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from assay import audit, autoeval, compare, faq, psdme, siren
from assay.cli import app
from assay.errors import AssayError

EXAMPLES = int(os.environ.get("ASSAY_FUZZ_EXAMPLES", "25"))
COUNTING = os.environ.get("ASSAY_FUZZ_COUNT") == "1"
FUZZ = settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None,
                suppress_health_check=list(HealthCheck))
STATS = {"inputs": 0, "unexpected": 0, "accepted": 0, "examples": []}
runner = CliRunner()


def call(fn, *args, **kwargs):
    """Run ``fn``; returning or raising AssayError is fine, anything else is a defect (counted in counting mode)."""
    STATS["inputs"] += 1
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = fn(*args, **kwargs)
        STATS["accepted"] += 1
        return out
    except AssayError:
        return None
    except Exception as exc:  # noqa: BLE001 - that is the point
        if COUNTING:
            _count(f"{getattr(fn, '__qualname__', fn)}: {type(exc).__name__}", f"{exc}"[:200])
            return None
        raise


def _count(kind: str, detail: str) -> None:
    STATS["unexpected"] += 1
    if kind not in {k for k, _ in STATS["examples"]}:
        STATS["examples"].append((kind, detail))


def cli(args):
    """Invoke the CLI; a crash is a traceback (exit 1 with an exception), a refusal is one 'error:' line."""
    STATS["inputs"] += 1
    r = runner.invoke(app, [str(a) for a in args])
    bad = r.exception is not None and not isinstance(r.exception, SystemExit)
    if r.exit_code not in (0, 1, 2, 3) or bad:
        msg = f"assay {' '.join(map(str, args))[:200]} -> exit {r.exit_code}: {type(r.exception).__name__}: {r.exception}"
        if COUNTING:
            _count(f"assay {args[0]}: {type(r.exception).__name__}", msg)
            return r
        raise AssertionError(msg)
    if r.exit_code in (2, 3):
        err = r.stderr if r.stderr_bytes is not None else r.output
        if "Traceback" in err or "error:" not in err:
            if COUNTING:
                _count(f"assay {args[0]}: unclear refusal", err[-200:])
                return r
            raise AssertionError(err[-500:])
    return r


def teardown_module(module):  # the count for `make fuzz`
    if COUNTING:
        print(f"\nfuzz: {STATS['inputs']} inputs ({STATS['accepted']} library calls accepted, the rest refused), "
              f"{STATS['unexpected']} non-AssayError exceptions")
        for kind, detail in STATS["examples"]:
            print(f"  {kind}: {detail}")


# -- strategies ---------------------------------------------------------------------------------------------------

CELL = st.one_of(
    st.integers(-3, 3), st.floats(allow_nan=True, allow_infinity=True, width=32),
    st.sampled_from([0, 1, 0.5, 1.0, -1, 2, 1e308, -1e-300, float("nan"), float("inf"), "", " 1 ", "x", "1e3",
                     None, True, False, "NaN", "0,5"]),
    st.text(max_size=4),
)


@st.composite
def tables(draw, columns, max_rows=10, extra=("junk",)):
    """A table whose columns are drawn from ``columns`` (+ junk), possibly duplicated or missing, with mixed cells."""
    names = draw(st.lists(st.sampled_from(list(columns) + list(extra)), min_size=0, max_size=len(columns) + 2))
    if draw(st.booleans()):
        names = list(dict.fromkeys(names))  # usually unique names, sometimes not
    n = draw(st.integers(0, max_rows))
    data = [[draw(CELL) for _ in names] for _ in range(n)]
    df = pd.DataFrame(data, columns=names) if names else pd.DataFrame(index=range(n))
    return df


@st.composite
def plausible(draw, columns, keys, score, max_rows=14):
    """A table with the right columns but small, ragged, duplicated keys and odd scores."""
    n = draw(st.integers(0, max_rows))
    rows = []
    for _ in range(n):
        row = {}
        for c in columns:
            if c in keys:
                row[c] = draw(st.sampled_from(keys[c]))
            else:
                row[c] = draw(score)
        rows.append(row)
    return pd.DataFrame(rows, columns=list(columns))


SCORE = st.one_of(st.sampled_from([0.0, 1.0, 0.5, 0, 1]), CELL)


# -- library entry points -----------------------------------------------------------------------------------------

@FUZZ
@given(df=st.one_of(tables(["system", "budget", "artifact", "item", "score"]),
                    plausible(["system", "budget", "artifact", "item", "score"],
                              {"system": ["a", "b"], "budget": [0, 1, "1.5M", 2], "artifact": ["p", "q", "d"],
                               "item": ["i1", "i2", "i3", "i4"]}, SCORE)),
       temperature=st.sampled_from([0.1, 1.0, 1e-9, 0, -1, float("nan"), "x"]))
def test_siren_evaluate(df, temperature):
    call(siren.evaluate, df, temperature=temperature, n_boot=100, reps=3, seed=0)


@FUZZ
@given(df=st.one_of(tables(["candidate", "item", "loss_human", "loss_judge"]),
                    plausible(["candidate", "item", "loss_human", "loss_judge"],
                              {"candidate": ["m0", "m1"], "item": [f"e{i}" for i in range(8)]},
                              st.one_of(st.just(float("nan")), SCORE))),
       risk=st.sampled_from([0.1, 0.5, 0, 1, -0.2, float("nan"), "0.1"]),
       select=st.sampled_from([None, "holm", "bonferroni", "fst", "magic"]))
def test_autoeval_certify(df, risk, select):
    call(autoeval.certify, df, risk_target=risk, delta=0.1, select=select, seed=0, bounds=False)


@FUZZ
@given(df=st.one_of(tables(["config", "kpi"]),
                    plausible(["config", "kpi"], {"config": ["a", "b", "c"]},
                              st.one_of(st.floats(-10, 10), CELL))),
       select=st.sampled_from(["all", "top:1", "top:0", "below:0.5", "below:x", "nonsense", None]),
       method=st.sampled_from(["ps-dme", "ss-dme", "bonferroni", "naive", "auto", "other"]))
def test_psdme_bands(df, select, method):
    call(psdme.bands, df, select=select, method=method, seed=0, tradeoff_points=3)


@FUZZ
@given(df=st.one_of(tables(["model", "item", "score", "task", "cluster", "epoch", "hash"]),
                    plausible(["model", "item", "score", "cluster", "epoch"],
                              {"model": ["a", "b", "c"], "item": [f"q{j}" for j in range(5)], "cluster": ["x", "y"],
                               "epoch": [0, 1]}, SCORE),
                    plausible(["model", "item", "score", "task", "hash"],
                              {"model": ["a", "b", "c"], "item": [f"q{j}" for j in range(5)], "task": ["t", "u"],
                               "hash": ["h1", None]}, SCORE)),
       guarantee=st.sampled_from(["asymptotic", "finite", "exact"]),
       margin=st.sampled_from([None, 0.05, 0, -1, float("nan"), "x"]),
       bounds=st.sampled_from([(0, 1), (1, 0), (0, 10), ("a", 1), (0,)]),
       weight=st.sampled_from(["questions", "tasks", "x"]))
def test_compare_evaluate(df, guarantee, margin, bounds, weight):
    call(compare.evaluate, df, guarantee=guarantee, margin=margin, bounds=bounds, seed=0, n_boot=200, weight=weight)


@FUZZ
@given(df=st.one_of(tables(["model", "item", "score"]),
                    plausible(["model", "item", "score"], {"model": ["a", "b", "c"], "item": [f"q{j}" for j in range(6)]},
                              SCORE),
                    st.lists(st.lists(st.sampled_from([0.0, 1.0] * 20 + [0.5, 2.0, float("nan")]), min_size=8,
                                      max_size=8), min_size=1, max_size=4).map(
                        lambda rows: pd.DataFrame(rows, index=[f"m{i}" for i in range(len(rows))],
                                                  columns=[f"q{j}" for j in range(8)]))),
       goal=st.sampled_from(["all", "best", "top-k", "x"]),
       k=st.sampled_from([None, 1, 2, 0, 5, "2", 1.5]),
       guarantee=st.sampled_from(["finite", "asymptotic", "exact"]),
       margin=st.sampled_from([None, 0.05, 0, float("nan")]),
       batch=st.sampled_from([1, 3, 0, -2]),
       budget=st.sampled_from([None, 2, 0, 10**6]))
def test_compare_replay(df, goal, k, guarantee, margin, batch, budget):
    from assay.compare.live import replay

    call(replay, df, goal=goal, k=k, guarantee=guarantee, margin=margin, batch=batch, budget=budget, seed=0)


@FUZZ
@given(K=CELL, sel=CELL, delta=CELL, n=CELL, split=CELL)
def test_psdme_levels_and_method(K, sel, delta, n, split):
    call(psdme.levels, K, sel, delta)
    call(psdme.narrowest_method, K, sel, delta, n, split)


@FUZZ
@given(hist=st.one_of(tables(["model", "item", "score"]),
                      plausible(["model", "item", "score"], {"model": [f"m{i}" for i in range(6)],
                                                             "item": [f"q{j}" for j in range(6)]}, SCORE)),
       budget=st.sampled_from([0.5, 1.0, 2, 3, 100, 0, -1, 1.5, float("nan"), "2", True]),
       until=st.sampled_from([None, 0.5, 2.0, 0]))
def test_faq_evaluate(hist, budget, until):
    new = pd.DataFrame((np.arange(12).reshape(2, 6) % 2).astype(float), index=["n0", "n1"],
                       columns=[f"q{j}" for j in range(6)])
    call(faq.evaluate, hist, new, budget=budget, seed=0, until_width=until, cache=False,
         factors=faq.FactorModel(k=1, weight_decay=1.0, holdout=0.0))


@FUZZ
@given(wide=st.one_of(tables([f"q{j}" for j in range(5)], max_rows=8)),
       budgets=st.lists(st.sampled_from([0.5, 2, 0, 1.0, -3, "x"]), min_size=0, max_size=2))
def test_faq_protocol(wide, budgets):
    wide.index = [f"org{i % 3}/m{i}" for i in range(len(wide))]
    call(faq.protocol, wide, budgets=budgets, seeds=1, splits=2, cache=False,
         factors=faq.FactorModel(k=1, weight_decay=1.0, holdout=0.0), methods=["faq", "uniform"])


@FUZZ
@given(low=CELL, high=CELL, choices=st.lists(CELL, max_size=3), delta=CELL,
       told=st.lists(st.tuples(st.one_of(st.integers(-2, 50), CELL, st.lists(st.integers(), max_size=1)), CELL),
                     max_size=4))
def test_quickscope_space_search_tell(low, high, choices, delta, told):
    from assay.quickscope import Categorical, Integer, Float, Search, SearchSpace

    call(lambda: SearchSpace([Integer("a", low, high)]))
    call(lambda: SearchSpace([Float("f", low, high)]))
    call(lambda: SearchSpace([Categorical("c", choices)]))
    space = SearchSpace([Integer("a", 0, 4), Categorical("c", ["x", "y"])])
    s = call(Search, space, seed=0, delta=delta)
    s = s or Search(space, seed=0, n0=3, surrogate=None)
    call(s.ask, 4)
    call(s.tell, told)


@FUZZ
@given(lines=st.lists(st.one_of(st.just("{}"), st.just("[1, 2]"), st.just("3"), st.just("null"), st.just("not json"),
                                st.just('{"doc_id": 1, "metrics": ["acc"], "acc": 1}'),
                                st.just('{"doc_id": 1, "metrics": "acc", "acc": "x"}'),
                                st.just('{"doc_id": [1], "metrics": [null], "filter": 3}'),
                                st.text(max_size=20)), max_size=5),
       results=st.sampled_from(["", "[]", "{}", '{"n-shot": 3}', '{"n-shot": {"t": 5}, "model_name": 7}', "\x00\xff"]))
def test_ingest_lmeval(lines, results):
    from assay.ingest import read_any, read_inspect, read_lmeval

    with tempfile.TemporaryDirectory() as d:
        p = Path(d)
        (p / "samples_t_2026-01-01T00-00-00.jsonl").write_text("\n".join(lines))
        (p / "results_2026-01-01T00-00-00.json").write_text(results)
        call(read_lmeval, p)
        call(read_any, p)
        bad = p / "x.eval"
        bad.write_bytes(("\n".join(lines)).encode())
        call(read_inspect, bad)
        js = p / "y.json"
        js.write_text("\n".join(lines))
        call(read_inspect, js)


@FUZZ
@given(df=tables(["a", "b", "model", "item", "score"], max_rows=6),
       fmt=st.sampled_from([".csv", ".tsv", ".json", ".jsonl", ".parquet", ".txt", ""]),
       garbage=st.binary(max_size=40))
def test_data_readers(df, fmt, garbage):
    from assay.data import read_table

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / f"t{fmt}"
        p.write_bytes(garbage)
        call(read_table, p)
        try:
            df.astype(str).to_csv(Path(d) / "ok.csv", index=False)
        except Exception:  # noqa: BLE001 - the generated frame itself may not serialise
            return
        call(read_table, Path(d) / "ok.csv")


# -- answers and verdicts: any text a model may send --------------------------------------------------------------

ANSWER_TEXT = st.one_of(
    st.none(), st.text(max_size=200),
    st.sampled_from(["The value of zyc is True.", "A) Paris", "<think>x", "</think> 4", "Answer: 1,200.",
                     "\\boxed{\\frac{1}{2}", "The answer is 'Answer: 19'.", "5 * 9 = 45 coins in total\n",
                     "'", "\"", "is", "= =", "not correct", "CORRECT or INCORRECT", "\u201cmice\u201d"]),
    st.lists(st.sampled_from(["The", "answer", "is", "True", "False", "N/A", "(B)", "B)", "=", "42", "\n", ".",
                              "'", "**", "Answer:", "\\boxed{", "}", "<think>", "</think>", "not", "CORRECT"]),
             max_size=12).map(" ".join),
    # the shapes the numeric reader weighs: conditions, operands, restatements, glosses, bounds, taken-back answers
    st.lists(st.sampled_from(["So,", "13", "(months)", "more", "than", "when", "minus", "divided", "by", "which",
                              "his", "previous", "but", "that's", "incorrect", "apples", "and", "hour", "45",
                              "minutes", "no", "2.01", "six", "####", "Answer:", "\n", ",", "."]),
             max_size=25).map(" ".join),
)


@FUZZ
@given(text=ANSWER_TEXT, ref=st.sampled_from(["4", "True", "B", "mice", "1,000", "N/A", "x", 3.5, "\\frac{1}{2}",
                                             "2\\pi", "(1, 2)", "\\frac{", "x^2+1"]),
       scorer=st.sampled_from(["exact", "numeric", "choice", "label", "contains", "math"]),
       policy=st.sampled_from(["wrong", "missing", "correct", "drop"]),
       outcome=st.sampled_from([None, "too_long", "refused", "timeout", "ok"]))
def test_scoring_any_answer(text, ref, scorer, policy, outcome):
    from assay.models import extract
    from assay.models.judge import RUBRICS, parse_verdict
    from assay.models.scoring import score_response

    call(score_response, text, None, ref, scorer, policy, outcome=outcome)
    for fn in (extract.extract_auto, extract.extract_label, extract.extract_choice, extract.strip_reasoning,
               extract.extract_boxed, extract.extract_answer):
        call(fn, text)
    q = "Ana has 13 apples and Omar has 7. How many more apples does Ana have than Omar?"
    call(score_response, text, None, ref, "numeric", policy, prompt=q, finish_reason="length")
    call(extract.extract_number, text, cut_off=False, question=q)
    call(extract.extract_math, text, cut_off=True)
    call(parse_verdict, text, RUBRICS["default"])


@FUZZ
@given(df=tables(["question", "reference", "answer", "candidate", "item", "h"], max_rows=6),
       reply=ANSWER_TEXT, policy=st.sampled_from(["wrong", "correct", "missing"]),
       template=st.sampled_from(["default", "fewshot", "{question} {reference} {answer} CORRECT or INCORRECT",
                                 "{answer} only", "{question}{reference}{answer} PASS"]))
def test_judge_any_rows(df, reply, policy, template):
    from assay.models import CallableModel
    from assay.models.judge import judge

    call(judge, df, CallableModel(lambda p: reply, name="j"), rubric=template if template in ("default", "fewshot")
         else _rubric(template), policy=policy, human_col="h" if "h" in df.columns else None, concurrency=2)


def _rubric(template):
    from assay.models.judge import Rubric

    try:
        return Rubric(template)
    except AssayError:
        return None


@FUZZ
@given(df=st.one_of(tables(["id", "prompt", "reference", "response", "score", "finish_reason"], max_rows=8),
                   plausible(["id", "reference", "response", "score"],
                             {"id": ["a", "b", "c", "d", "e", "f", "a"], "reference": ["4", "x", "\\frac{1}{2}"],
                              "response": ["The answer is 4.", "", "Answer: 1/2", "so 3 and 4"]},
                             st.sampled_from([0, 1, 1.0, 0.5, float("nan"), "1"])),
                   plausible(["reference", "response", "score"],  # unique ids, 0/1 scores: runs that are audited
                             {"reference": ["4", "\\frac{1}{2}"], "response": ["The answer is 4.", "", "so 3 and 4"]},
                             st.sampled_from([0, 1])).map(lambda d: d.assign(id=[f"q{i}" for i in range(len(d))]))),
       n=st.sampled_from([-1, 0, 1, 3, 100, "x"]), human=st.lists(st.sampled_from(["1", "0", "", "2", "yes", "nan"]),
                                                                   max_size=4),
       shuffle=st.booleans())
def test_audit_any_run(df, n, human, shuffle):
    from assay import audit

    with tempfile.TemporaryDirectory() as d:
        sheet = Path(d) / "a.csv"
        got = call(audit.sample, df, n, seed=0, out=sheet, readers=False)
        if got is None or not sheet.exists():
            return
        s = pd.read_csv(sheet, dtype=str, keep_default_na=False)
        s["human"] = (human + [""] * len(s))[: len(s)]
        if shuffle:
            s = s.iloc[::-1]
        s.to_csv(sheet, index=False)
        call(audit.evaluate, df, sheet)
        cli(["audit", str(sheet), "--labels", str(sheet)])


# -- CLI commands ---------------------------------------------------------------------------------------------------

@FUZZ
@given(df=tables(["system", "budget", "artifact", "item", "score", "candidate", "loss_human", "loss_judge",
                  "config", "kpi", "model"], max_rows=8),
       command=st.sampled_from(["siren", "autoeval", "psdme", "faq", "ingest", "report", "eval", "eval-resume",
                                "compare"]),
       extra=st.lists(st.sampled_from(["--seed", "0", "--json", "--risk-target", "0.1", "-2", "nan", "--select",
                                       "top:2", "--budget", "0.5", "7", "--calibrator-tau", "1e-300", "--temperature", "1e-300", "--uniform-mix", "2", "--delta", "2",
                                       "--guarantee", "finite", "--require", "a>b", "--margin"]),
                      max_size=4))
def test_cli_commands_on_small_files(df, command, extra):
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "t.csv"
        try:
            df.to_csv(f, index=False)
        except Exception:  # noqa: BLE001
            return
        if command == "faq":
            args = ["faq", "--history", f, "--new", f, "--k", "1", "--weight-decay", "1", "--no-cache", *extra]
        elif command == "ingest":
            args = ["ingest", f, "-o", Path(d) / "o.parquet"]
        elif command == "report":
            args = ["report", f, "-o", Path(d) / "r.html"]
        elif command == "autoeval":
            args = ["autoeval", f, "--risk-target", "0.1", *extra]
        elif command == "eval":  # a table where a campaign file is expected, with or without --plan
            args = ["eval", f, *(["--plan"] if "--json" in extra else []), *extra]
        elif command == "eval-resume":  # the table's first cell as a run id, in a journal that does not exist
            args = ["eval", "--resume", str(df.iloc[0, 0]) if df.shape[0] and df.shape[1] else "x", "--journal",
                    Path(d) / "j.sqlite"]
        else:
            args = [command, f, *extra]
        cli(args)


@FUZZ
@given(budget=st.sampled_from(["0", "-1", "5", "40", "x"]), batch=st.sampled_from(["0", "-1", "1", "20", "x"]),
       top=st.sampled_from(["-3", "0", "5"]), utility=st.sampled_from(["error", "cwe", "foo"]),
       world=st.sampled_from(["dyval", "plateau", "nowhere"]), space=st.sampled_from([None, "missing", "bad", "other"]))
def test_cli_scope_simulated(budget, batch, top, utility, world, space):
    with tempfile.TemporaryDirectory() as d:
        args = ["scope", "--simulate", world, "--budget", budget, "--batch", batch, "--top", top, "--utility", utility,
                "--n0", "3"]
        if space == "missing":
            args += ["--space", Path(d) / "missing.yaml"]
        elif space == "bad":
            (Path(d) / "bad.yaml").write_text("parameters: [1, 2")
            args += ["--space", Path(d) / "bad.yaml"]
        elif space == "other":
            (Path(d) / "o.yaml").write_text("parameters:\n  foo: {type: integer, low: 1, high: 3}\n")
            args += ["--space", Path(d) / "o.yaml"]
        cli(args)


def test_known_failures_from_the_issue():
    """Each of these crashed with a non-assay exception before (issue 16); now each is a clear AssayError."""
    from assay.errors import AssayInputError
    from assay.ingest import read_lmeval
    from assay.quickscope import Integer, Search, SearchSpace

    cases = [
        lambda: psdme.levels(0, 0, 0),
        lambda: psdme.levels(2, 2, " 1 "),
        lambda: siren.evaluate(pd.DataFrame([["s", 0, "a", "i", 0.5, "x"]],
                                            columns=["system", "budget", "artifact", "item", "score", "system"])),
        lambda: SearchSpace([Integer("a", None, 0.0)]),
        lambda: Search(SearchSpace([Integer("a", 0, 3)]), delta="x"),
    ]
    for case in cases:
        with pytest.raises(AssayInputError):
            case()
    s = Search(SearchSpace([Integer("a", 0, 3)]), seed=0)
    s.ask(2)
    with pytest.raises(AssayInputError, match="ticket id"):
        s.tell([([1], 0.5)])
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "samples_t_2026-01-01T00-00-00.jsonl").write_text("[1, 2, 3]\n")
        with pytest.raises(AssayInputError, match="JSON object"):
            read_lmeval(Path(d))
    # quickscope.run with a Generator seed: resolved to an integer once, nothing spent on "generation failures"
    from assay.quickscope import run as qs_run
    from assay.benchmarks import get_generator

    gen = get_generator("dyval")
    res = qs_run(gen.space(), gen, lambda p: "\\boxed{0}", budget=20, batch=10, seed=np.random.default_rng(1),
                 n0=5, surrogate=None)
    assert isinstance(res.params["seed"], int) and res.info["failures"]["generation"] == 0
    for args, msg in ((["--batch", "0"], "--batch"), (["--batch", "-1"], "--batch"), (["--top", "-3"], "--top"),
                      (["--utility", "foo"], "--utility"), (["--space", "missing.yaml"], "no search space")):
        r = runner.invoke(app, ["scope", "--simulate", "dyval", "--budget", "200", *args])
        assert r.exit_code == 2 and msg in r.output, r.output


@st.composite
def perturbed(draw, base: pd.DataFrame):
    """A valid table with up to three corruptions: a cell replaced, a row dropped, a row duplicated."""
    df = base.copy()
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["cell", "drop", "dup", "none"]))
        if kind == "cell" and len(df):
            i = draw(st.integers(0, len(df) - 1))
            j = draw(st.integers(0, df.shape[1] - 1))
            df = df.astype(object)
            df.iat[i, j] = draw(CELL)
        elif kind == "drop" and len(df):
            df = df.drop(df.index[draw(st.integers(0, len(df) - 1))])
        elif kind == "dup" and len(df):
            df = pd.concat([df, df.iloc[[draw(st.integers(0, len(df) - 1))]]])
    return df.reset_index(drop=True)


_rng = np.random.default_rng(0)
SIREN_OK = pd.DataFrame([{"system": s, "budget": b, "artifact": a, "item": f"i{i}", "score": float(_rng.random() < 0.5)}
                         for s in ("A", "B") for b, arts in ((0, ["d"]), (1, ["p", "q"])) for a in arts
                         for i in range(12)])
AE_OK = pd.DataFrame([{"candidate": c, "item": f"e{i}", "loss_human": (float(_rng.random() < 0.1) if i < 10 else np.nan),
                       "loss_judge": float(_rng.random() < 0.15)} for c in ("m0", "m1") for i in range(40)])
PS_OK = pd.DataFrame([{"config": c, "kpi": float(_rng.exponential())} for c in ("a", "b", "c") for _ in range(15)])


@FUZZ
@given(df=perturbed(SIREN_OK), contrasts=st.sampled_from([[], ["tuned-vs-default"], ["pairwise"], ["A@1 - B@0"],
                                                           ["nonsense"]]))
def test_siren_near_valid(df, contrasts):
    call(siren.evaluate, df, n_boot=100, reps=3, seed=0, contrasts=contrasts)


@FUZZ
@given(df=perturbed(AE_OK), method=st.sampled_from(["r-eval", "r-autoeval", "r-autoeval+"]))
def test_autoeval_near_valid(df, method):
    call(autoeval.certify, df, risk_target=0.3, delta=0.1, method=method, seed=0, bounds=False)


@FUZZ
@given(df=perturbed(PS_OK), band=st.sampled_from(["dkw", "berk-jones"]),
       failures=st.sampled_from(["error", "worst"]))
def test_psdme_near_valid(df, band, failures):
    call(psdme.bands, df, select="top:2", band=band, failures=failures, seed=0, tradeoff_points=3)


# -- the one reader of every source, and --replay (issue 52) ----------------------------------------------------------

LOGS = Path(__file__).parent / "fixtures" / "compare_logs"
LOG_DIRS = [LOGS / "inspect" / "smollm2-default", LOGS / "inspect" / "smollm2-two-scorers",
            LOGS / "inspect" / "gemma3-completions", LOGS / "lmeval" / "smollm2-default", LOGS / "lmeval" / "gemma3"]


@FUZZ
@given(df=st.one_of(tables(["model", "item", "score", "task", "epoch", "repeat", "metric", "filter", "item_hash",
                            "m", "q", "s"], max_rows=8),
                    plausible(["model", "item", "score", "task"], {"model": ["a", "b"], "item": ["1", "2", "3"],
                                                                    "task": ["t", "u"]}, SCORE)),
       fmt=st.sampled_from(["csv", "jsonl", "parquet"]),
       names=st.lists(st.sampled_from(["", "A", "A", "B", "x=y", "=", "A/B"]), min_size=1, max_size=3),
       logs=st.lists(st.sampled_from(range(len(LOG_DIRS))), max_size=2),
       columns=st.sampled_from([None, {"model": "m"}, {"item": "q", "score": "s"}, {"cluster": "task"},
                                {"nonsense": "x"}, {"epoch": "repeat"}]),
       log_scorer=st.lists(st.sampled_from(["includes", "match", "exact_match", "exact_match,strict-match",
                                            "flexible-extract", "nope", ""]), max_size=2),
       as_mapping=st.booleans())
def test_sources_any_mix(df, fmt, names, logs, columns, log_scorer, as_mapping):
    """Score files of any shape, real tool logs, named or not (repeated, empty, odd names), any column roles and scorer
    choices: read by the one reader, from Python (a mapping or a list) and from the command line."""
    from assay.data.sources import read_sources

    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / f"t.{fmt}"
        try:
            {"csv": lambda: df.to_csv(f, index=False), "jsonl": lambda: df.to_json(f, orient="records", lines=True),
             "parquet": lambda: df.astype(str).to_parquet(f)}[fmt]()
        except Exception:  # noqa: BLE001 - a table pandas cannot write is not an input
            return
        paths = [f, *[LOG_DIRS[i] for i in logs]]
        given_as = [f"{n}={p}" if n else str(p) for n, p in zip(names + [""] * len(paths), paths)]
        if as_mapping:
            mapping = {(n or f"s{i}"): p for i, (n, p) in enumerate(zip(names + [""] * len(paths), paths))}
            call(read_sources, mapping, columns=columns, log_scorer=log_scorer)
        else:
            call(read_sources, given_as, columns=columns, log_scorer=log_scorer)
        call(compare.evaluate, given_as, columns=columns, log_scorer=log_scorer, seed=0, n_boot=200)
        cli(["compare", *given_as, *[a for s in log_scorer for a in ("--log-scorer", s)], "--seed", "0"])


_JOURNALS: dict = {}


def _fuzz_journal(d: Path) -> Path:
    """A copy of one journal (made once a process) with a live comparison (a parent run and two model runs, scored
    with numeric) and a chat run."""
    import shutil

    if "path" not in _JOURNALS:
        _JOURNALS["dir"] = tempfile.TemporaryDirectory()
        _JOURNALS["path"] = _make_fuzz_journal(Path(_JOURNALS["dir"].name))
    shutil.copy(_JOURNALS["path"], d / "j.sqlite")
    return d / "j.sqlite"


def _make_fuzz_journal(d: Path) -> Path:
    import asyncio

    from assay.compare.live import query_until_resolved
    from assay.models import CallableModel, run_prompts
    from assay.models.journal import Journal

    bank = pd.DataFrame({"id": [f"q{i}" for i in range(12)], "prompt": [f"What is {i} + 1?" for i in range(12)],
                         "reference": [str(i + 1) for i in range(12)]})
    models = {"a": CallableModel(lambda p: f"It is {int(p.split()[2]) + 1}.", name="a"),
              "b": CallableModel(lambda p: "Maybe 3, or 4", name="b")}
    path = d / "made.sqlite"
    query_until_resolved(models, bank, scorer="numeric", budget=12, batch=6, journal=path, run_id="live")
    with Journal(path) as j:
        chats = [[{"role": "user", "content": p}] for p in bank["prompt"][:4]]
        asyncio.run(run_prompts(CallableModel(lambda p: "4", name="c"), chats, journal=j, run_id="chat"))
    return path


@FUZZ
@given(bank=st.one_of(tables(["id", "prompt", "reference", "scorer", "kind"], max_rows=8),
                      plausible(["id", "prompt", "reference", "kind"],
                                {"id": ["q0", "q1", "q1", "q3", 3], "prompt": ["What is 0 + 1?", "What is 1 + 1?",
                                                                               "What is 3 + 1?", ""],
                                 "kind": ["numeric", "exact", "math", "nope", None]}, SCORE)),
       runs=st.lists(st.sampled_from(["live", "live/a", "live/b", "chat", "nope", "", "live/"]), min_size=1,
                     max_size=3),
       scorer=st.sampled_from([None, "numeric", "math", "kind", "reference", "choice", "x"]),
       policy=st.sampled_from([None, "wrong", "missing", "correct", "x"]))
def test_journal_runs_against_any_bank(bank, runs, scorer, policy):
    """Journal runs (parents, children, unknown ids) read against banks with holes, repeats, numbers as references
    and scorer columns with holes, by any scorer and policy: compare and audit read them or refuse them."""
    from assay.data.sources import read_sources

    with tempfile.TemporaryDirectory() as d:
        j = _fuzz_journal(Path(d))
        call(read_sources, runs=runs, journal=j, bank=bank, scorer=scorer, policy=policy)
        call(audit.read_run, runs[0], bank=bank, journal=j, scorer=scorer)
        try:
            bank.to_csv(Path(d) / "b.csv", index=False)
        except Exception:  # noqa: BLE001
            return
        cli(["compare", *[a for r in runs for a in ("--run", r)], "--journal", j, "--bank", Path(d) / "b.csv",
             *(["--scorer", scorer] if scorer else [])])
        cli(["audit", runs[0], "--journal", j, "--bank", Path(d) / "b.csv", "--n", "2", "-o", Path(d) / "s.csv",
             *(["--scorer", scorer] if scorer else [])])


@FUZZ
@given(df=st.one_of(tables(["model", "item", "score"], max_rows=8),
                    st.lists(st.lists(st.sampled_from([0.0, 1.0] * 20 + [0.5, 2.0, float("nan")]), min_size=6,
                                      max_size=6), min_size=1, max_size=5).map(
                        lambda rows: pd.DataFrame(rows, index=[f"m{i}" for i in range(len(rows))],
                                                  columns=[f"q{j}" for j in range(6)]))),
       extra=st.lists(st.sampled_from(["--guarantee", "finite", "asymptotic", "--max-memory", "0.000001", "-1", "4",
                                       "--history", "nope.csv", "--goal", "best", "top-k", "--k", "2", "--batch", "0",
                                       "--budget", "3", "--margin", "0.1", "--seed", "x"]), max_size=5))
def test_cli_replay(df, extra):
    """`assay compare --replay FILE` on any table with any options: a comparison, or one error line (the memory a run
    would take among them)."""
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "t.csv"
        try:
            df.to_csv(f, index=not {"model", "item", "score"} <= set(df.columns))
        except Exception:  # noqa: BLE001
            return
        cli(["compare", "--replay", f, *extra])
