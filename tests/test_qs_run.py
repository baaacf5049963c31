"""assay.quickscope.run and `assay scope`: generate -> query concurrently through the journal -> score -> tell;
resume from the journal, recorded failures, clear errors, and a live run against a fake OpenAI server on 127.0.0.1."""

import json
import re
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.benchmarks import Instance, register_generator
from assay.cli import app
from assay.errors import AssayBackendError, AssayInputError
from assay.models import CallableModel
from assay.quickscope import Integer, ScopeResult, SearchSpace, run

sys.path.insert(0, str(Path(__file__).parent))
from fake_openai_server import FakeOpenAIServer, question  # noqa: E402

_BOX = re.compile(r"\\boxed\{(-?\d+)\}")


class AddGen:
    """'What is A + B?' whose reference is wrong (A + B + 1) with probability hard / 10: a model that always adds
    correctly then has error rate hard / 10 on template ``hard``."""

    name = "add-test"

    def __init__(self, fail_on=None):
        self.fail_on = fail_on

    def space(self):
        return SearchSpace([Integer("hard", 0, 9)])

    def generate(self, config, rng):
        if self.fail_on is not None and config["hard"] in self.fail_on:
            raise RuntimeError("template cannot be generated")
        a, b = (int(x) for x in rng.integers(0, 1000, 2))
        ref = a + b + (1 if rng.random() < config["hard"] / 10 else 0)
        return Instance(question(a, b), ref, {"hard": config["hard"]})

    def score(self, text, inst):
        m = _BOX.findall(text or "")
        if not m:
            return None
        return 1.0 if int(m[-1]) == inst.reference else 0.0

    def complexity(self, config):
        return 1 + config["hard"]


register_generator("add-test")(lambda **kw: AddGen(**kw))


def adder(prompt):
    a, b = (int(x) for x in re.findall(r"-?\d+", prompt)[:2])
    return f"The answer is \\boxed{{{a + b}}}"


class Counting:
    def __init__(self, fn):
        self.fn, self.calls = fn, 0

    def __call__(self, prompt):
        self.calls += 1
        return self.fn(prompt)


def test_run_finds_the_hard_templates_and_resumes_from_the_journal(tmp_path):
    gen = AddGen()
    model = Counting(adder)
    kw = dict(budget=600, batch=20, seed=3, n0=10, surrogate=None, journal=tmp_path / "j.sqlite", concurrency=4)
    res = run(gen.space(), gen, CallableModel(model, name="adder"), **kw)
    assert isinstance(res, ScopeResult)
    assert res.info["tickets"] == 600 and len(res.tables["evaluations"]) == 600
    assert model.calls == 600
    top = res.table
    assert top["hard"].iloc[0] >= 7  # the highest-LCB template is one of the hardest
    assert (res.tables["evaluations"]["status"] == "answered").all()
    # resume: same seed and run id -> the same batches, every answer from the journal
    res2 = run(gen.space(), gen, CallableModel(model, name="adder"), run_id=res.info["run_id"], **kw)
    assert model.calls == 600
    assert res2.table[["hard", "n", "estimate"]].equals(res.table[["hard", "n", "estimate"]])
    back = ScopeResult.from_json(res.to_json())
    assert back.info["tickets"] == 600 and list(back.table["hard"]) == list(top["hard"])


def test_unparseable_answers_and_generator_failures_are_recorded(tmp_path):
    gen = AddGen(fail_on={0})

    def sometimes(prompt):
        return "I do not know" if int(re.findall(r"\d+", prompt)[0]) % 3 == 0 else adder(prompt)

    res = run(gen.space(), gen, sometimes, budget=400, batch=20, seed=1, n0=10, surrogate=None, journal=None)
    f = res.info["failures"]
    assert f["unparseable"] > 0 and f["generation"] > 0
    t = res.tables["evaluations"]
    assert set(t["status"]) == {"answered", "unparseable", "generation_failure"}
    # an unparseable answer is the model's wrong answer by default (utility 1 under the error utility); a generator
    # failure is not the model's and gets utility 0 (App. B.3: treated as correct), so it does not attract the search
    assert (t.loc[t["status"] == "unparseable", "utility"] == 1).all()
    assert (t.loc[t["status"] == "generation_failure", "utility"] == 0).all()
    assert t.loc[t["status"] == "generation_failure", "error"].str.contains("cannot be generated").all()
    assert any("unparseable" in w and "scored as wrong" in w for w in res.warnings)
    # policy "missing" keeps the paper's App. B.3 choice for unparseable answers too
    res = run(gen.space(), gen, sometimes, budget=400, batch=20, seed=1, n0=10, surrogate=None, journal=None,
              policy="missing")
    t = res.tables["evaluations"]
    assert (t.loc[t["status"] != "answered", "utility"] == 0).all()


def test_broken_generator_and_dead_endpoint_stop_with_clear_errors():
    gen = AddGen(fail_on=set(range(10)))
    counted = Counting(adder)
    with pytest.raises(AssayInputError, match="does not fit the generator"):
        run(gen.space(), gen, counted, budget=1000, batch=10, seed=0, n0=5, surrogate=None)
    assert counted.calls == 0  # refused before any budget was spent

    def down(prompt):
        raise ConnectionError("connection refused")

    with pytest.raises(AssayBackendError, match="endpoint looks down"):
        run(AddGen().space(), AddGen(), down, budget=1000, batch=10, seed=0, n0=5, surrogate=None)


def test_space_that_does_not_match_the_generator_is_refused_before_spending():
    """Other parameter names: every ticket would be a generation failure scored as utility 0, and a run of one or
    two batches used to end normally. It is refused before the first model call, even with a budget of one batch."""
    from assay.quickscope import Integer

    counted = Counting(adder)
    wrong = SearchSpace([Integer("difficulty", 0, 9)])
    for budget in (20, 40, 1000):
        with pytest.raises(AssayInputError, match="does not fit the generator 'add-test'.*'hard'"):
            run(wrong, AddGen(), counted, budget=budget, batch=20, seed=0, n0=5, surrogate=None)
    assert counted.calls == 0
    # a space where some templates fail is run, and the result says how many tickets were not evaluated
    res = run(AddGen().space(), AddGen(fail_on={0, 1, 2, 3, 4, 5}), adder, budget=100, batch=20, seed=0, n0=10,
              surrogate=None)
    assert any("could not be generated" in w for w in res.info["warnings"])
    assert any("were not evaluated" in w for w in res.info["warnings"])


def test_bad_arguments():
    gen = AddGen()
    with pytest.raises(AssayInputError, match="smaller than one batch"):
        run(gen.space(), gen, adder, budget=10, batch=20)
    with pytest.raises(AssayInputError, match="utilities must be in"):
        run(gen.space(), gen, adder, budget=40, batch=20, utility=lambda out, cfg: 2.0, n0=5, surrogate=None)
    with pytest.raises(AssayInputError, match="utility must be"):
        run(gen.space(), gen, adder, budget=40, batch=20, utility="accuracy")
    res = run(gen.space(), gen, adder, budget=200, batch=20, utility="cwe", n0=10, surrogate=None, seed=0)
    assert res.tables["evaluations"]["utility"].max() <= 1.0


runner = CliRunner()


def test_cli_live_against_fake_server(tmp_path):
    with FakeOpenAIServer(retry_after=0) as srv:
        args = ["scope", "--generator", "add-test", "--endpoint", srv.base_url, "--model", "fake", "--budget", "200",
                "--batch", "20", "--n0", "10", "--seed", "5", "--journal", str(tmp_path / "j.sqlite"), "--json"]
        r = runner.invoke(app, args)
        assert r.exit_code == 0, r.output
        out = json.loads(r.stdout)
        assert out["method"] == "quickscope" and out["tickets"] == 200 and srv.total == 200
        assert out["top"][0]["hard"] >= 5
        srv.plan_next(["500"] * 500)
        r = runner.invoke(app, ["scope", "--generator", "add-test", "--endpoint", srv.base_url, "--model", "fake",
                                "--budget", "200", "--batch", "20", "--n0", "10", "--seed", "6", "--max-retries", "0",
                                "--journal", str(tmp_path / "j2.sqlite")])
        assert r.exit_code == 3, r.output
        assert "endpoint looks down" in r.output


def test_cli_simulated_and_errors():
    r = runner.invoke(app, ["scope", "--simulate", "plateau", "--budget", "400", "--certify", "0.9", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["simulated"]["false_certifications"] == 0 and "truth" in out["top"][0]
    r = runner.invoke(app, ["scope", "--simulate", "plateau", "--budget", "10", "--batch", "20"])
    assert r.exit_code == 2 and "smaller than one" in r.output
    r = runner.invoke(app, ["scope", "--budget", "100"])
    assert r.exit_code == 2 and "--simulate" in r.output
    r = runner.invoke(app, ["scope", "--simulate", "nowhere", "--budget", "100"])
    assert r.exit_code == 2 and "unknown simulated world" in r.output


def test_report_section_renders(tmp_path):
    from assay.report import render_html, render_markdown

    r = runner.invoke(app, ["scope", "--simulate", "dyval-ceiling", "--budget", "1200", "--certify", "0.9",
                            "--out", str(tmp_path / "r.json"), "--report", str(tmp_path / "r.html")])
    assert r.exit_code == 0, r.output
    page = (tmp_path / "r.html").read_text()
    assert "<section id='quickscope'>" in page and page.count("<svg") >= 1
    assert "LCB" in page and "<script src" not in page and "<link" not in page and "src=\"http" not in page
    res = ScopeResult.from_json((tmp_path / "r.json").read_text())
    assert "QuickScope" in render_html([res]) and len(render_markdown([res])) > 100
