"""assay.ingest on REAL tool outputs (tests/fixtures/ingest/README.md says how each was produced): lm-eval
--log_samples (dummy model), inspect-ai logs (mockllm, .eval with zstd members and .json, a human score edit
made with inspect's own API), HELM when present; detection, read_table delegation, the CLI, errors."""

import json
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from assay.cli import app
from assay.data import read_table
from assay.errors import AssayInputError
from assay.ingest import detect_format, read_any, read_helm, read_inspect, read_lmeval, score_value, to_autoeval

FIX = Path(__file__).parent / "fixtures" / "ingest"
LM = FIX / "lmeval"
INS = FIX / "inspect"


def test_lmeval_samples_filters_metrics_and_ids():
    df = read_lmeval(LM)
    assert set(df["task"]) == {"toy_arith_gen", "toy_mc"}
    assert df["item"].map(type).eq(str).all() and df["item_hash"].str.len().eq(64).all()
    # one line per (doc_id, filter): the default keeps the first filter per task, so no duplicated items
    assert not df.duplicated(["model", "task", "item"]).any()
    gen = df[df["task"] == "toy_arith_gen"]
    assert set(gen["filter"]) == {"strict-match"} and set(gen["metric"]) == {"exact_match"}
    other = read_lmeval(LM, filter="flexible-extract")
    assert set(other["filter"]) == {"flexible-extract"} and len(other) == len(gen)
    # models from results_*.json, variants from the few-shot count, same doc_hash across the two runs
    assert df["model"].nunique() == 2 and df["variant"].str.contains("shot").all()
    h = df.groupby(["task", "item"])["item_hash"].nunique()
    assert (h == 1).all()
    mc = read_lmeval(LM, metric="acc_norm")
    assert set(mc["metric"]) == {"acc_norm"} and set(mc["task"]) == {"toy_mc"}
    assert ((df["score"] >= 0) & (df["score"] <= 1)).all()


def test_inspect_eval_zstd_and_json_agree():
    evals = sorted(p for p in INS.glob("*.eval") if "human-edit" not in p.name)
    jsons = sorted(INS.glob("*.json"))
    assert evals and jsons
    assert {i.compress_type for i in zipfile.ZipFile(evals[0]).infolist()} == {93}  # zstd members
    a, b = read_inspect(evals[0]), read_inspect(jsons[0])
    key = ["item", "epoch", "metric"]
    a, b = a.sort_values(key).reset_index(drop=True), b.sort_values(key).reset_index(drop=True)
    assert a[key + ["score"]].equals(b[key + ["score"]])
    # ids mixed int and str in the dataset come out as strings; each epoch its own row
    assert {"q1", "3"} <= set(a["item"]) and set(a["epoch"]) == {1, 2}
    assert set(a["metric"]) == {"match", "includes"} and a["score"].isin([0.0, 0.5, 1.0]).all()
    assert a["score_human"].isna().all() and (a["latency_s"] >= 0).all()


def test_inspect_human_edits_are_kept_apart():
    edited = next(INS.glob("*human-edit*.eval"))
    df = read_inspect(edited, scorer="match")
    ed = df[df["score_human"].notna()]
    assert len(ed) >= 1 and ed["editor"].notna().all()
    assert (ed["score_original"] != ed["score_human"]).all() and (ed["score"] == ed["score_human"]).all()
    ae = to_autoeval(df)
    assert ae["loss_judge"].notna().all()
    assert not ae[["candidate", "item"]].duplicated().any()
    # epochs of one question are one example (averaged), not independent ones
    assert len(ae) == df.groupby(["model", "item"]).ngroups
    assert ae["loss_human"].notna().sum() == ed.groupby(["model", "item"]).ngroups
    if df["epoch"].max() > 1:
        assert "averaged" in ae.attrs["note"]


def test_to_autoeval_averages_epochs_per_item():
    """q2 has 3 epochs, a person reviewed epoch 2 only; q1 has 2 epochs, none reviewed."""
    df = pd.DataFrame({"model": "m", "item": ["q1", "q1", "q2", "q2", "q2"], "epoch": [1, 2, 1, 2, 3],
                       "score_original": [1.0, 0.0, 1.0, 1.0, 0.0], "score_human": [np.nan, np.nan, np.nan, 0.0, np.nan]})
    ae = to_autoeval(df).set_index("item")
    assert list(ae.index) == ["q1", "q2"]
    assert ae.loc["q1", "loss_judge"] == 0.5 and np.isnan(ae.loc["q1", "loss_human"])
    # the reviewed epoch's human and judge losses form the pair, not the judge mean over all epochs
    assert ae.loc["q2", "loss_human"] == 1.0 and ae.loc["q2", "loss_judge"] == 0.0
    assert "3 epochs" in to_autoeval(df).attrs["note"]


def test_score_values():
    assert [score_value(v) for v in ("C", "P", "I", "N", "yes", "False", "0.25", True, 3)] == [1, 0.5, 0, 0, 1, 0, 0.25, 1, 3]
    assert np.isnan(score_value({"a": 1})) and np.isnan(score_value(None))


def test_detection_read_table_and_errors(tmp_path):
    assert detect_format(LM) == "lmeval" and detect_format(next(INS.glob("*.eval"))) == "inspect"
    assert detect_format(next(INS.glob("*.json"))) == "inspect"
    assert read_table(LM).equals(read_lmeval(LM))
    csv = tmp_path / "t.csv"
    pd.DataFrame({"model": ["a"], "item": ["1"], "score": [1.0]}).to_csv(csv, index=False)
    assert detect_format(csv) == "table" and len(read_any(csv)) == 1
    with pytest.raises(AssayInputError, match="no such"):
        read_lmeval(tmp_path / "nope")
    with pytest.raises(AssayInputError, match="no scorer"):
        read_inspect(next(INS.glob("*.json")), scorer="judge")
    with pytest.raises(AssayInputError, match="no metric"):
        read_lmeval(LM, metric="bleu")
    bad = tmp_path / "bad.eval"
    bad.write_text("not a zip")
    with pytest.raises(AssayInputError, match="damaged or incomplete"):
        read_inspect(bad)
    (tmp_path / "empty").mkdir()
    with pytest.raises(AssayInputError):
        read_helm(tmp_path / "empty")


def test_helm_per_instance_stats():
    mcqa = FIX / "helm" / "simple_mcqa:model=simple_model1"
    df = read_helm(mcqa)
    assert len(df) > 0 and df["item"].map(type).eq(str).all() and set(df["metric"]) == {"exact_match"}
    assert df["score"].between(0, 1).all() and (df["latency_s"] >= 0).all()  # inference_runtime: a PS-DME KPI
    assert df["model"].iloc[0].startswith("simple/") and df["epoch"].min() == 1
    assert not df.duplicated(["item", "epoch"]).any()
    # a suite folder: runs that do not compute the metric (the language-modelling run) are skipped ...
    both = read_helm(FIX / "helm")
    assert len(both) == len(df)
    # ... and a run alone without it is a clear error naming what it has
    with pytest.raises(AssayInputError, match="no per-instance metric 'exact_match'"):
        read_helm(FIX / "helm" / "simple1:model=simple_model1")
    assert detect_format(FIX / "helm") == "helm"


def test_cli_ingest(tmp_path):
    r = CliRunner().invoke(app, ["ingest", str(LM), "-o", str(tmp_path / "t.parquet"), "--json"])
    assert r.exit_code == 0, r.output
    s = json.loads(r.stdout)
    assert s["rows"] == len(pd.read_parquet(tmp_path / "t.parquet")) and s["source"] == ["lm-eval"]
    r = CliRunner().invoke(app, ["ingest", str(next(INS.glob("*human-edit*.eval"))), "--scorer", "match"])
    assert r.exit_code == 0 and "human score edits" in r.output
    r = CliRunner().invoke(app, ["ingest", str(LM), "--metric", "bleu"])
    assert r.exit_code == 2 and "no metric" in r.output


def test_faq_reads_lmeval_logs_directly():
    """`assay faq` takes an lm-eval folder as history / new answers (here too small to fit: a clear error)."""
    runs = sorted(p for p in LM.iterdir() if p.is_dir())
    r = CliRunner().invoke(app, ["faq", "--history", str(runs[0]), "--new", str(runs[1]), "--budget", "4", "--k", "1",
                                 "--weight-decay", "1"])
    assert r.exit_code == 2 and "1 models, 8 items" in r.output and "more historical models" in r.output


def test_autoeval_takes_an_inspect_log_with_human_edits(tmp_path):
    """The scorer's original values become judge labels and the human edits human labels (R-AutoEval+)."""
    log = next(INS.glob("*human-edit*.eval"))
    r = CliRunner().invoke(app, ["autoeval", str(log), "--risk-target", "0.5"])
    assert r.exit_code == 2 and "several scorers" in r.output
    r = CliRunner().invoke(app, ["ingest", str(log), "--scorer", "match", "-o", str(tmp_path / "m.parquet")])
    assert r.exit_code == 0
    r = CliRunner().invoke(app, ["autoeval", str(tmp_path / "m.parquet"), "--risk-target", "0.5", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["method"] == "autoeval"
