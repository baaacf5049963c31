"""FAQ factor packs: the FAQ paper's fitted factors for both Open LLM Leaderboard v2 banks, shipped by name.

Loading by name, shapes and dtypes, the documented question order, the values against the release (when
../shared/data is beside the repository), the leaderboard details reader and its errors, FAQ end to end on a
simulated held-out model, and the command line (``assay datasets``, ``assay faq --factors <pack>``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from assay import datasets as ds
from assay import faq
from assay.cli import app
from assay.data.leaderboard import BANKS, bank_index, details_task, read_details
from assay.errors import AssayInputError

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
RELEASE = SHARED / "faq" / "factor_models" / "final"
PACKS = {"faq-mmlu-pro": ("mmlu-pro", 12032, 2212, 1),
         "faq-leaderboard-v2": ("bbh+gpqa+ifeval+math+musr", 9574, 2211, 38)}
runner = CliRunner()


def write_details(folder: Path, pack: str, z: np.ndarray, *, date: str = "2024-07-01T00-00-00.000000",
                  shuffle: int | None = 0, skip_task: str | None = None) -> Path:
    """lm-eval ``samples_<task>_<date>.jsonl`` files of a model whose 0/1 answers in the pack's order are ``z``."""
    folder.mkdir(parents=True, exist_ok=True)
    idx = ds.faq_pack_index(pack)
    rng = np.random.default_rng(shuffle)
    for task, rows in idx.groupby("task", sort=False):
        if task == skip_task:
            continue
        cols, docs, metric = rows["column"].to_numpy(), rows["doc_id"].to_numpy(), rows["metric"].iloc[0]
        order = rng.permutation(len(rows)) if shuffle is not None else np.arange(len(rows))
        lines = []
        for r in order:
            rec = {"doc_id": int(docs[r]), "doc": {"q": "..."}, "filter": "none", "metrics": [metric],
                   metric: bool(z[cols[r]]) if metric == "prompt_level_loose_acc" else float(z[cols[r]])}
            if metric == "prompt_level_loose_acc":  # IFEval also logs the strict field and per-instruction lists
                rec.update(prompt_level_strict_acc=False, inst_level_loose_acc=[True, False])
            lines.append(json.dumps(rec))
        (folder / f"samples_{task}_{date}.jsonl").write_text("\n".join(lines) + "\n")
    return folder


@pytest.fixture(scope="module")
def v2_model(tmp_path_factory):
    """A held-out model of the leaderboard-v2 pack (row 7 of U) as lm-eval details: (folder, answers)."""
    fm = ds.faq_pack_factors("faq-leaderboard-v2")
    rng = np.random.default_rng(11)
    z = (rng.random(len(fm.V_)) < 1 / (1 + np.exp(-fm.U_[7] @ fm.V_.T))).astype(float)
    d = write_details(tmp_path_factory.mktemp("details") / "org__model-x", "faq-leaderboard-v2", z)
    return d, z


# -- the packs ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(PACKS))
def test_pack_loads_by_name_with_its_shapes_and_dtypes(name):
    _, n, m, n_tasks = PACKS[name]
    assert name in ds.SHIPPED and name in ds.faq_packs()
    assert Path(ds.path(name)).is_file()
    z = ds.load_faq_pack(name)
    assert z["V"].shape == (n, 64) and z["V"].dtype == np.float32
    assert z["U"].shape == (m, 64) and z["U"].dtype == np.float32
    assert np.isfinite(z["V"]).all() and np.isfinite(z["U"]).all()
    assert len(z["subtask"]) == n_tasks and int(z["size"].sum()) == n
    assert z["prior_mean"].shape == (64,) and z["prior_cov"].shape == (64, 64)
    np.testing.assert_allclose(z["prior_cov"], np.cov(z["U"].astype(float), rowvar=False))
    assert np.linalg.eigvalsh(z["prior_cov"]).min() > 0
    fm = ds.faq_pack_factors(name)
    assert fm.V_.shape == (n, 64) and fm.U_.shape == (m, 64) and not fm.bias
    np.testing.assert_array_equal(fm.V_, z["V"].astype(float))
    assert fm.col_labels_ == list(z["item"]) and len(set(fm.col_labels_)) == n
    assert fm.prior_()[0].shape == (64,)


def test_packs_are_package_data():
    import tomllib

    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["assay.datasets"]
    assert "*.npz" in globs and "LICENSE*" in globs and "*.md" in globs
    for name, (file, _, _, _) in ds.FAQ_PACKS.items():
        assert (ROOT / "src" / "assay" / "datasets" / file).stat().st_size < 4_000_000, name  # float32, compressed
    lic = (ROOT / "src" / "assay" / "datasets" / "LICENSE-APACHE-faq").read_text()
    assert "faq_pack_mmlu_pro.npz" in lic and "faq_pack_leaderboard_v2.npz" in lic and "Statement of changes" in lic


@pytest.mark.parametrize("name", list(PACKS))
def test_stored_question_index_is_the_documented_order(name):
    bank, n, _, n_tasks = PACKS[name]
    z = ds.load_faq_pack(name)
    idx = ds.faq_pack_index(name)
    subs = BANKS["mmlu-pro" if name == "faq-mmlu-pro" else "leaderboard-v2"]
    assert [(str(t), int(s), str(m)) for t, s, m in zip(z["subtask"], z["size"], z["metric"])] == list(subs)
    assert len(idx) == n and idx["task"].nunique() == n_tasks
    assert (idx["column"].to_numpy() == np.arange(n)).all()
    assert (idx["task"].to_numpy() == z["task"]).all() and (idx["doc_id"].to_numpy() == z["doc_id"]).all()
    # inside a task: doc_id 0..size-1 in order; tasks contiguous, in BANKS order
    for (t, size, _), (task, rows) in zip(subs, idx.groupby("task", sort=False)):
        assert task == t and (rows["doc_id"].to_numpy() == np.arange(size)).all()
    assert (idx["item"] == idx["task"] + "/" + idx["doc_id"].astype(str)).all()


def test_release_sizes_and_order_of_the_38_tasks():
    subs = BANKS["leaderboard-v2"]
    names = [t for t, _, _ in subs]
    assert sum(s for _, s, _ in subs) == 9574 and len(subs) == 38 and len(set(names)) == 38
    assert sum(s for _, s, _ in BANKS["mmlu-pro"]) == 12032
    groups = [t.split("_")[1] for t in names]
    assert groups == ["bbh"] * 24 + ["gpqa"] * 3 + ["ifeval"] + ["math"] * 7 + ["musr"] * 3
    assert {t: s for t, s, _ in subs}["leaderboard_bbh_penguins_in_a_table"] == 146
    assert {t: m for t, _, m in subs}["leaderboard_ifeval"] == "prompt_level_loose_acc"
    assert {m for t, _, m in subs if "_math_" in t} == {"exact_match"}


@pytest.mark.parametrize("doc", ["src/assay/datasets/README.md", "docs/faq.md"])
def test_the_documented_first_columns_are_the_index(doc):
    """Both documents list every task with its size and first column; they must agree with the index."""
    text = (ROOT / doc).read_text()
    part = text[text.index("boolean_expressions 250 (0)"):]
    part = part[: part.index("team_allocation 250 (9324)") + len("team_allocation 250 (9324)")]
    listed = re.findall(r"`?([A-Za-z_]+?)`? (\d+) \((\d+)\)", " ".join(part.split()))
    idx = bank_index("leaderboard-v2")
    first = idx.groupby("task", sort=False)["column"].min()
    sizes = idx.groupby("task", sort=False).size()
    assert len(listed) == 38
    for (short, size, col), task in zip(listed, first.index):
        assert short.lower() in task and int(size) == sizes[task] and int(col) == first[task], (short, task)


@pytest.mark.skipif(not RELEASE.exists(), reason="../shared/data (the release's factors) is not beside the repository")
@pytest.mark.parametrize("name", list(PACKS))
def test_values_equal_the_release(name):
    folder = PACKS[name][0]
    z = ds.load_faq_pack(name)
    for a in ("U", "V"):
        src = np.load(RELEASE / folder / f"{a}_nfobs=None_p=1.0.npy")
        assert src.dtype == z[a].dtype and np.array_equal(src, z[a]), a


@pytest.mark.skipif(not (SHARED / "openllm_v2_items").exists(), reason="../shared/data/openllm_v2_items is absent")
def test_question_order_against_real_leaderboard_answers():
    """Real answers of thousands of leaderboard models line up with the documented columns (and not their
    neighbours): BBH tracking_shuffled_objects_five_objects at columns 4761-5010, MMLU-Pro math at 7504-8854."""
    checks = [("faq-leaderboard-v2", "bbh_tracking_shuffled_objects_five_objects.csv", 4761, 250, 0),
              ("faq-mmlu-pro", "mmlu_pro_math_8b_models.csv", 7504, 1351, 7504)]
    for name, file, start, n, first_doc in checks:
        obs = pd.read_csv(SHARED / "openllm_v2_items" / file, index_col=0)
        assert [int(c) for c in obs.columns] == list(range(first_doc, first_doc + n))  # columns = doc_id
        z = ds.load_faq_pack(name)
        U = z["U"].astype(float)

        def corr(lo):
            p = 1 / (1 + np.exp(-(U @ z["V"][lo:lo + n].astype(float).T)))
            return np.corrcoef(p.mean(axis=0), obs.mean(axis=0).to_numpy())[0, 1]

        assert corr(start) > 0.75, name  # 0.96 (BBH) and 0.84 (MMLU-Pro math, 8B models only)
        assert abs(corr(start - n)) < 0.3 and abs(corr(start + n)) < 0.3, name


# -- FAQ end to end on a pack ---------------------------------------------------------------------------------

def test_faq_covers_simulated_held_out_models():
    """Models drawn from held-out rows of U (their answers Bernoulli(sigmoid(u V^T))), prior from the other rows:
    the default 95% interval covers each one's accuracy over the bank. 12 models: expected misses 0.6, and 3 or
    more misses has probability 2% at 95% coverage (coverage s.e. 0.063)."""
    fm = ds.faq_pack_factors("faq-leaderboard-v2")
    rng = np.random.default_rng(2026)
    M = 12
    held = rng.choice(len(fm.U_), M, replace=False)
    rest = np.setdiff1d(np.arange(len(fm.U_)), held)
    fm.prior_mean_, fm.prior_cov_ = fm.U_[rest].mean(axis=0), np.cov(fm.U_[rest], rowvar=False)
    Z = (rng.random((M, len(fm.V_))) < 1 / (1 + np.exp(-(fm.U_[held] @ fm.V_.T)))).astype(float)
    new = pd.DataFrame(Z, columns=fm.col_labels_, index=[f"m{i}" for i in range(M)])
    res = faq.evaluate(fm, new, budget=0.015, seed=5)
    est = res.estimates
    assert (est["n_queries"] == 143).all() and len(est) == M
    np.testing.assert_allclose(est["truth"], Z.mean(axis=1))
    assert int((~est["covered"]).sum()) <= 2, est[["estimate", "ci_low", "ci_high", "truth"]]
    assert (est["width"] < 0.2).all()
    assert any("Student t" in w for w in res.warnings)  # no history: the interval says it is not calibrated


def test_faq_on_the_mmlu_pro_pack_from_details_in_parquet(tmp_path):
    """The Hub's Parquet export (a folder per config) of MMLU-Pro details, read in the pack's order; FAQ runs."""
    fm = ds.faq_pack_factors("faq-mmlu-pro")
    rng = np.random.default_rng(3)
    z = (rng.random(len(fm.V_)) < 1 / (1 + np.exp(-fm.U_[100] @ fm.V_.T))).astype(float)
    d = tmp_path / "org__model__leaderboard_mmlu_pro" / "latest"
    d.mkdir(parents=True)
    perm = rng.permutation(len(z))
    pd.DataFrame({"doc_id": perm, "acc": z[perm], "target": "A"}).to_parquet(d / "0000.parquet")
    ans = ds.read_faq_pack_answers(tmp_path, "faq-mmlu-pro", model="org/model")
    assert ans.name == "org/model" and list(ans.index[:2]) == ["leaderboard_mmlu_pro/0", "leaderboard_mmlu_pro/1"]
    np.testing.assert_array_equal(ans.to_numpy(), z)
    res = faq.evaluate(fm, ans, budget=30, seed=0)
    e = res.estimates.iloc[0]
    assert e["n_queries"] == 30 and 0 <= e["ci_low"] <= e["ci_high"] <= 1


# -- the details reader ---------------------------------------------------------------------------------------

def test_read_details_in_the_pack_order(v2_model, tmp_path):
    d, z = v2_model
    ans = read_details(d.parent, "leaderboard-v2")
    assert ans.name == "org__model-x" and len(ans) == 9574
    np.testing.assert_array_equal(ans.to_numpy(), z)
    assert list(ans.index) == list(ds.faq_pack_index("faq-leaderboard-v2")["item"])
    # the same through the pack name, with an unrelated task's file beside (ignored) and an older run (not read)
    extra = tmp_path / "m"
    write_details(extra, "faq-leaderboard-v2", z, shuffle=4)
    write_details(extra, "faq-leaderboard-v2", 1 - z, date="2024-06-01T00-00-00.000000")
    (extra / "samples_leaderboard_mmlu_pro_2024-07-01T00-00-00.000000.jsonl").write_text('{"doc_id": 0, "acc": 1.0}\n')
    (extra / "results_2024-07-01T00-00-00.000000.json").write_text(json.dumps({"model_name": "org/model-x"}))
    ans2 = ds.read_faq_pack_answers(extra, "faq-leaderboard-v2")
    assert ans2.name == "org/model-x"
    np.testing.assert_array_equal(ans2.to_numpy(), z)


def test_read_details_keeps_the_first_filter(tmp_path):
    idx = ds.faq_pack_index("faq-mmlu-pro")
    lines = []
    for doc in range(len(idx)):
        lines.append(json.dumps({"doc_id": doc, "filter": "custom-extract", "acc": float(doc % 2)}))
        lines.append(json.dumps({"doc_id": doc, "filter": "other", "acc": 1.0}))
    (tmp_path / "samples_leaderboard_mmlu_pro_2024-07-01T00-00-00.jsonl").write_text("\n".join(lines))
    ans = read_details(tmp_path, "faq-mmlu-pro")
    assert ans.sum() == len(idx) // 2


def test_details_task_from_paths():
    tasks = [t for t, _, _ in BANKS["leaderboard-v2"]]
    assert details_task("x/samples_leaderboard_math_algebra_hard_2024-06-26T1.jsonl", tasks) == \
        "leaderboard_math_algebra_hard"
    assert details_task("samples_leaderboard_math_intermediate_algebra_hard_2024.jsonl", tasks) == \
        "leaderboard_math_intermediate_algebra_hard"
    assert details_task("org__m__leaderboard_gpqa_main/latest/0000.parquet", tasks) == "leaderboard_gpqa_main"
    assert details_task("samples_leaderboard_mmlu_pro_2024.jsonl", tasks) is None


def _one_task_folder(tmp_path, lines):
    write_details(tmp_path, "faq-leaderboard-v2", np.zeros(9574), skip_task="leaderboard_bbh_navigate")
    (tmp_path / "samples_leaderboard_bbh_navigate_2024-07-01T00-00-00.000000.jsonl").write_text(
        "\n".join(json.dumps(x) for x in lines) + "\n")
    return tmp_path


@pytest.mark.parametrize("case, msg", [
    ("missing task", "no details for 1 of the 38 task(s)"),
    ("missing doc", "have no result (doc_id 249)"),
    ("duplicate doc", "appears 2 times"),
    ("outside", "outside task leaderboard_bbh_navigate"),
    ("not 0/1", "must be 0/1"),
    ("no field", "no field 'acc_norm'"),
])
def test_read_details_errors(tmp_path, case, msg):
    ok = [{"doc_id": i, "acc_norm": 1.0} for i in range(250)]
    if case == "missing task":
        write_details(tmp_path, "faq-leaderboard-v2", np.zeros(9574), skip_task="leaderboard_bbh_navigate")
    else:
        lines = {"missing doc": ok[:-1], "duplicate doc": ok + [ok[3]],
                 "outside": ok + [{"doc_id": 250, "acc_norm": 0.0}],
                 "not 0/1": ok[:-1] + [{"doc_id": 249, "acc_norm": 0.5}],
                 "no field": [{"doc_id": i, "acc": 1.0} for i in range(250)]}[case]
        _one_task_folder(tmp_path, lines)
    with pytest.raises(AssayInputError, match=re.escape(msg)):
        ds.read_faq_pack_answers(tmp_path, "faq-leaderboard-v2")


def test_unknown_pack_names_list_the_packs(tmp_path):
    for call in (lambda: ds.faq_pack_factors("faq-mmlu"), lambda: ds.load_faq_pack("nope"),
                 lambda: ds.faq_pack_index("leaderboard"), lambda: ds.read_faq_pack_answers(tmp_path, "x")):
        with pytest.raises(AssayInputError, match="faq-mmlu-pro, faq-leaderboard-v2"):
            call()
    with pytest.raises(AssayInputError, match="no such file"):
        ds.read_faq_pack_answers(tmp_path / "absent", "faq-mmlu-pro")


# -- command line ---------------------------------------------------------------------------------------------

def test_cli_datasets_lists_the_packs_and_their_paths():
    r = runner.invoke(app, ["datasets"], env={"COLUMNS": "300"})
    assert r.exit_code == 0, r.output
    assert "faq-mmlu-pro" in r.output and "faq-leaderboard-v2" in r.output
    for name in PACKS:
        r = runner.invoke(app, ["datasets", "--path", name])
        assert r.exit_code == 0 and Path(r.stdout.strip()) == Path(ds.path(name)), r.output
    r = runner.invoke(app, ["datasets", "--path", "faq-bbh"])
    assert r.exit_code == 2 and "faq-mmlu-pro" in r.output and "faq-leaderboard-v2" in r.output


def test_cli_faq_with_a_pack_by_name(v2_model):
    d, z = v2_model
    base = ["faq", "--factors", "faq-leaderboard-v2", "--new", str(d), "--budget", "30", "--seed", "0"]
    r = runner.invoke(app, [*base, "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    (e,) = out["estimates"]
    assert e["model"] == "org__model-x" and e["n_queries"] == 30
    assert e["truth"] == pytest.approx(z.mean()) and e["ci_low"] <= e["estimate"] <= e["ci_high"]
    assert out["factors"]["pack"] == "faq-leaderboard-v2" and out["calibrated"] is False
    r = runner.invoke(app, base, env={"COLUMNS": "200"})
    assert r.exit_code == 0 and "FAQ pack faq-leaderboard-v2" in r.output, r.output


def test_cli_faq_pack_with_an_answers_table(v2_model, tmp_path):
    """--new may also be a table (here long: model, item, score) whose item ids are the pack's."""
    _, z = v2_model
    items = ds.faq_pack_index("faq-leaderboard-v2")["item"]
    pd.DataFrame({"model": "mine", "item": items, "score": z.astype(int)}).to_csv(tmp_path / "new.csv", index=False)
    r = runner.invoke(app, ["faq", "--factors", "faq-leaderboard-v2", "--new", str(tmp_path / "new.csv"), "--budget",
                            "20", "--seed", "1", "--json"])
    assert r.exit_code == 0, r.output
    (e,) = json.loads(r.stdout)["estimates"]
    assert e["model"] == "mine" and e["n_queries"] == 20 and e["truth"] == pytest.approx(z.mean())


@pytest.mark.parametrize("args, msg", [
    (["--factors", "faq-mmlu"], "nor a FAQ pack; the packs are faq-mmlu-pro, faq-leaderboard-v2"),
    (["--factors", "no/such.npz"], "nor a FAQ pack"),
    ([], "give --history"),
    (["--factors", "faq-leaderboard-v2", "--budget", "0.01"], "no details for"),
])
def test_cli_faq_pack_errors_exit_2(tmp_path, args, msg):
    (tmp_path / "samples_leaderboard_bbh_navigate_2024-07-01T00-00-00.jsonl").write_text('{"doc_id": 0, "acc_norm": 1}')
    r = runner.invoke(app, ["faq", "--new", str(tmp_path), *args], env={"COLUMNS": "300"})
    assert r.exit_code == 2, r.output
    assert msg in " ".join(r.output.split()), r.output
