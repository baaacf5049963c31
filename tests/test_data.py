"""Tests for assay.data (readers, column mapping, SIREN validation / pivot) and the input
validation at the boundary of assay.siren.evaluate.

Every bad input must raise AssayInputError whose message names what is wrong; never a
numpy / pandas / pyarrow exception, never silently wrong numbers; missing data stays missing.
"""

from __future__ import annotations

import gzip
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from assay import data, siren
from assay.errors import AssayError, AssayInputError

RELEASE = Path("/work/shared/data/siren/law/dspy/Qwen_Qwen3-8B_law")


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------


def small_frame() -> pd.DataFrame:
    """A small tidy table with a missing score (to check that NaN survives every reader)."""
    return pd.DataFrame(
        {
            "system": ["A", "A", "B", "B"],
            "budget": [0.0, 1.5e6, 0.0, 1.5e6],
            "artifact": ["default", "x", "default", "y"],
            "item": ["q1", "q2", "q3", "q4"],
            "score": [0.25, np.nan, 1.0, 0.0],
        }
    )


def assert_same_table(got: pd.DataFrame, want: pd.DataFrame) -> None:
    assert list(got.columns) == list(want.columns)
    # JSON readers give integral budgets as int64: compare values, not dtypes.
    pd.testing.assert_frame_equal(got.reset_index(drop=True), want, check_dtype=False)
    # missing stays missing
    assert math.isnan(got["score"].iloc[1])


SYSTEMS = ("A", "B")
# (budget label as written in the table, parsed budget, artifacts)
BUDGETS = (("0", 0.0, ("default",)), ("500k", 5e5, ("x", "y")), ("1.5M", 1.5e6, ("x", "y", "z")))


def true_score(s: int, b: int, a: int, i: int) -> float:
    """A distinct, exactly representable-enough value per (system, budget, artifact, item)."""
    return (s * 200 + b * 60 + a * 15 + i) / 1000.0


def design_table(m_items: int = 8, *, budget_labels: bool = True) -> pd.DataFrame:
    rows = []
    for s, system in enumerate(SYSTEMS):
        for b, (label, value, arts) in enumerate(BUDGETS):
            for a, art in enumerate(arts):
                for i in range(m_items):
                    rows.append(
                        dict(system=system, budget=label if budget_labels else value, artifact=art,
                             item=f"q{i}", score=true_score(s, b, a, i))
                    )
    return pd.DataFrame(rows)


def base_table(m_items: int = 6) -> pd.DataFrame:
    """One system, default (budget 0) + budget 1 with three artifacts; RangeIndex row labels."""
    rows = [dict(system="A", budget=0, artifact="default", item=f"q{i}", score=0.5) for i in range(m_items)]
    for a in ("a0", "a1", "a2"):
        rows += [dict(system="A", budget=1, artifact=a, item=f"q{i}", score=0.25) for i in range(m_items)]
    return pd.DataFrame(rows)


def with_value(df: pd.DataFrame, row: int, column: str, value) -> pd.DataFrame:
    out = df.copy()
    out[column] = out[column].astype(object)
    out.at[row, column] = value
    return out


# ---------------------------------------------------------------------------------------------
# read_table
# ---------------------------------------------------------------------------------------------


def _write_csv(df, p):
    df.to_csv(p, index=False)


def _write_tsv(df, p):
    df.to_csv(p, sep="\t", index=False)


def _write_parquet(df, p):
    df.to_parquet(p)


def _write_jsonl(df, p):
    df.to_json(p, orient="records", lines=True)


def _write_json(df, p):
    df.to_json(p, orient="records")


@pytest.mark.parametrize(
    "name, writer",
    [
        ("scores.csv", _write_csv),
        ("scores.tsv", _write_tsv),
        ("scores.parquet", _write_parquet),
        ("scores.pq", _write_parquet),
        ("scores.jsonl", _write_jsonl),
        ("scores.ndjson", _write_jsonl),
        ("scores.json", _write_json),
    ],
)
def test_read_table_formats(tmp_path, name, writer):
    df = small_frame()
    p = tmp_path / name
    writer(df, p)
    assert_same_table(data.read_table(p), df)
    assert_same_table(data.read_table(str(p)), df)  # str paths too


@pytest.mark.parametrize("name, text_of", [
    ("scores.csv.gz", lambda df: df.to_csv(index=False)),
    ("scores.jsonl.gz", lambda df: df.to_json(orient="records", lines=True)),
])
def test_read_table_gzip(tmp_path, name, text_of):
    df = small_frame()
    p = tmp_path / name
    with gzip.open(p, "wt") as fh:
        fh.write(text_of(df))
    assert p.read_bytes()[:2] == b"\x1f\x8b"  # really compressed
    assert_same_table(data.read_table(p), df)


def test_read_table_format_override(tmp_path):
    df = small_frame()
    p = tmp_path / "scores.txt"  # extension tells nothing
    df.to_csv(p, sep="\t", index=False)
    with pytest.raises(AssayInputError):
        data.read_table(p)
    assert_same_table(data.read_table(p, format="tsv"), df)
    assert_same_table(data.read_table(p, format="TSV"), df)
    # the override wins over the extension: a tab-separated file named .csv
    q = tmp_path / "tabs.csv"
    df.to_csv(q, sep="\t", index=False)
    assert list(data.read_table(q).columns) != list(df.columns)  # read as CSV: one mangled column
    assert_same_table(data.read_table(q, format="tsv"), df)


def test_read_table_unknown_format_override(tmp_path):
    p = tmp_path / "scores.csv"
    small_frame().to_csv(p, index=False)
    with pytest.raises(AssayInputError, match="xlsx") as e:
        data.read_table(p, format="xlsx")
    assert "csv" in str(e.value) and "parquet" in str(e.value)


def test_read_table_missing_file(tmp_path):
    p = tmp_path / "nope.csv"
    with pytest.raises(AssayInputError, match="no such file") as e:
        data.read_table(p)
    assert "nope.csv" in str(e.value)


def test_read_table_unknown_extension_lists_formats(tmp_path):
    p = tmp_path / "scores.xlsx"
    p.write_text("whatever")
    with pytest.raises(AssayInputError) as e:
        data.read_table(p)
    msg = str(e.value)
    assert "scores.xlsx" in msg
    for ext in (".csv", ".tsv", ".parquet", ".jsonl", ".json", ".gz"):
        assert ext in msg
    assert "format=" in msg


def test_read_table_corrupt_parquet(tmp_path):
    p = tmp_path / "scores.parquet"
    p.write_bytes(b"this is not parquet at all" * 10)
    with pytest.raises(AssayInputError) as e:
        data.read_table(p)
    assert "parquet" in str(e.value) and "scores.parquet" in str(e.value)


def test_read_table_corrupt_json_and_empty_csv(tmp_path):
    bad = tmp_path / "scores.json"
    bad.write_text("{not json")
    with pytest.raises(AssayInputError, match="json"):
        data.read_table(bad)
    empty = tmp_path / "scores.csv"
    empty.write_text("")
    with pytest.raises(AssayInputError, match="csv"):
        data.read_table(empty)


def test_read_table_plain_directory(tmp_path):
    (tmp_path / "x.txt").write_text("hi")
    with pytest.raises(AssayInputError, match="directory"):
        data.read_table(tmp_path)


# ---------------------------------------------------------------------------------------------
# SIREN release layout
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def release_table():
    if not RELEASE.exists():
        pytest.skip(f"{RELEASE} is not available")
    return data.read_siren_release(RELEASE)


def _tensor_files():
    files = sorted(RELEASE.glob("tensor_a_B*.npy"))
    return {float(f.name[len("tensor_a_B"):-len(".npy")]): np.load(f) for f in files}


def test_release_shape_and_layout(release_table):
    df = release_table
    tensors = _tensor_files()
    assert len(tensors) == 4
    assert all(t.shape[0] == 1001 for t in tensors.values())
    n_rows = 1001 * (1 + sum(t.shape[1] for t in tensors.values()))
    assert len(df) == n_rows == 1001 * 23
    assert list(df.columns) == list(data.SIREN_COLUMNS)
    assert set(df["system"]) == {"Qwen_Qwen3-8B_law"}
    assert sorted(set(df["budget"])) == [0.0, 5e5, 1.5e6, 3e6, 6.5e6]
    default = df[df["budget"] == 0]
    assert set(default["artifact"]) == {"default"}
    assert len(default) == 1001
    for budget, t in tensors.items():
        sub = df[df["budget"] == budget]
        assert sorted(set(sub["artifact"])) == sorted(f"a{k}" for k in range(t.shape[1]))
        assert len(sub) == 1001 * t.shape[1]


def test_release_item_ids_are_strings(release_table):
    items = release_table["item"]
    assert all(isinstance(i, str) for i in items.head(50))
    assert all(isinstance(i, str) for i in items.tail(50))
    assert set(items) == {str(i) for i in range(1001)}
    per_item = items.value_counts()
    assert (per_item == 23).all()


def test_release_scores_reproduce_npy(release_table):
    df = release_table
    t = np.load(RELEASE / "tensor_a_B1500000.npy")
    sub = df[df["budget"] == 1.5e6]
    wide = sub.pivot(index="item", columns="artifact", values="score")
    wide = wide.loc[[str(i) for i in range(1001)], [f"a{k}" for k in range(t.shape[1])]]
    np.testing.assert_array_equal(wide.to_numpy(), t)
    col_b = np.load(RELEASE / "col_b.npy")
    d = df[df["budget"] == 0].set_index("item").loc[[str(i) for i in range(1001)], "score"]
    np.testing.assert_array_equal(d.to_numpy(), col_b)


def test_release_through_read_table_and_design(release_table):
    auto = data.read_table(RELEASE)  # format detected from the folder
    pd.testing.assert_frame_equal(auto, release_table)
    design = data.siren_design(auto)
    assert design.n_items == 1001 and design.dropped_items == []
    cell = ("Qwen_Qwen3-8B_law", 6.5e6)
    assert cell in design.cells
    idx = [design.items.index(str(i)) for i in range(1001)]
    cols = [design.artifacts[cell].index(f"a{k}") for k in range(6)]
    np.testing.assert_array_equal(
        design.scores[cell][np.ix_(idx, cols)], np.load(RELEASE / "tensor_a_B6500000.npy")
    )
    assert design.artifacts[("Qwen_Qwen3-8B_law", 0.0)] == ["default"]


def _fake_model(folder: Path, budgets: dict[int, np.ndarray], col_b: np.ndarray | None) -> None:
    folder.mkdir(parents=True)
    for b, arr in budgets.items():
        np.save(folder / f"tensor_a_B{b}.npy", arr)
    if col_b is not None:
        np.save(folder / "col_b.npy", col_b)


def test_release_two_tuners_system_naming(tmp_path):
    rng = np.random.default_rng(0)
    a100 = rng.integers(0, 2, (5, 2)).astype(float)
    b = rng.integers(0, 2, 5).astype(float)
    a200 = rng.integers(0, 2, (5, 3)).astype(float)
    _fake_model(tmp_path / "dspy" / "m_law", {100: a100}, b)
    _fake_model(tmp_path / "random_search" / "m_law", {200: a200}, None)

    df = data.read_siren_release(tmp_path)
    assert set(df["system"]) == {"dspy/m_law", "random_search/m_law"}
    assert len(df) == 5 * (2 + 1) + 5 * 3
    rs = df[df["system"] == "random_search/m_law"]
    assert set(rs["budget"]) == {200.0}  # no col_b -> no default cell
    got = rs.pivot(index="item", columns="artifact", values="score").loc[[str(i) for i in range(5)]]
    np.testing.assert_array_equal(got[["a0", "a1", "a2"]].to_numpy(), a200)
    dflt = df[(df["system"] == "dspy/m_law") & (df["budget"] == 0)]
    assert list(dflt["artifact"].unique()) == ["default"]
    np.testing.assert_array_equal(dflt["score"].to_numpy(), b)

    # auto-detection of the two-level layout gives the same table
    pd.testing.assert_frame_equal(data.read_table(tmp_path), df)
    # one tuner folder: systems are just the model folder names
    one = data.read_siren_release(tmp_path / "dspy")
    assert set(one["system"]) == {"m_law"}
    assert set(data.read_table(tmp_path / "dspy" / "m_law")["system"]) == {"m_law"}


def test_release_errors(tmp_path):
    with pytest.raises(AssayInputError, match="tensor_a_B"):
        data.read_siren_release(tmp_path)
    _fake_model(tmp_path / "m", {10: np.zeros((5, 2))}, np.zeros(6))
    with pytest.raises(AssayInputError, match="number of items"):
        data.read_siren_release(tmp_path)
    _fake_model(tmp_path / "flat", {10: np.zeros(5)}, None)
    with pytest.raises(AssayInputError, match="2-D"):
        data.read_siren_release(tmp_path / "flat")


def test_release_bad_tensor_name(tmp_path):
    _fake_model(tmp_path / "m", {}, None)
    np.save(tmp_path / "m" / "tensor_a_B1.5M.npy", np.zeros((5, 2)))
    with pytest.raises(AssayInputError, match="tensor_a_B1.5M"):
        data.read_siren_release(tmp_path)


def test_release_corrupt_npy_direct(tmp_path):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "tensor_a_B10.npy").write_bytes(b"garbage" * 10)
    with pytest.raises(AssayInputError):
        data.read_table(tmp_path)  # this part already works
    with pytest.raises(AssayInputError):
        data.read_siren_release(tmp_path)


# ---------------------------------------------------------------------------------------------
# map_columns
# ---------------------------------------------------------------------------------------------


def user_frame() -> pd.DataFrame:
    return pd.DataFrame({"question": ["q1", "q2"], "acc": [0.5, 1.0], "prompt": ["p", "p"], "extra": [1, 2]})


def test_map_columns_renames():
    df = user_frame()
    out = data.map_columns(df, {"item": "question", "score": "acc", "artifact": "prompt", "system": None},
                           required=("item", "score", "artifact"))
    assert list(out.columns) == ["item", "score", "artifact", "extra"]
    assert out["item"].tolist() == ["q1", "q2"]
    assert out["score"].tolist() == [0.5, 1.0]
    assert list(df.columns) == ["question", "acc", "prompt", "extra"]  # input untouched


def test_map_columns_unknown_source_column():
    with pytest.raises(AssayInputError) as e:
        data.map_columns(user_frame(), {"score": "accuracy"})
    msg = str(e.value)
    assert "'accuracy'" in msg and "'score'" in msg
    for c in ("question", "acc", "prompt", "extra"):
        assert c in msg


def test_map_columns_missing_required():
    with pytest.raises(AssayInputError) as e:
        data.map_columns(user_frame(), {"score": "acc"}, required=("item", "score"))
    msg = str(e.value)
    # the library speaks Python; the CLI guard translates it into the command's own flag
    assert "'item'" in msg and "columns={'item': 'YOUR_COLUMN'}" in msg and "--" not in msg
    assert "'score'" not in msg.split(";")[0]  # score was mapped; only item is missing
    assert "question" in msg  # lists what the table has
    from assay.cli.guard import cli_words

    assert "--item-col YOUR_COLUMN" in cli_words(msg)
    judge = cli_words("Name yours with columns={'loss_judge': 'YOUR_COLUMN'}.")
    assert "--judge-col YOUR_COLUMN" in judge and "--loss_judge-col" not in judge


def test_map_columns_not_a_frame():
    with pytest.raises(AssayInputError, match="DataFrame"):
        data.map_columns({"a": [1]}, {})


def test_siren_design_with_column_mapping():
    df = base_table().rename(columns={"item": "question", "score": "acc"})
    d = data.siren_design(df, columns={"item": "question", "score": "acc"})
    assert d.items == [f"q{i}" for i in range(6)]
    with pytest.raises(AssayInputError, match="'item'"):
        data.siren_design(df)


# ---------------------------------------------------------------------------------------------
# siren_design validation
# ---------------------------------------------------------------------------------------------


def test_base_table_is_valid():
    d = data.siren_design(base_table())
    assert d.cells == [("A", 0.0), ("A", 1.0)]
    assert d.n_items == 6


def test_duplicate_rows():
    df = base_table()
    df = pd.concat([df, df.iloc[[4]]], ignore_index=True)  # row 24 repeats row 4
    with pytest.raises(AssayInputError) as e:
        data.siren_design(df)
    msg = str(e.value)
    assert "duplicate" in msg
    assert "rows 4, 24" in msg
    assert "q4" in msg


def test_duplicates_after_budget_parsing():
    df = base_table()
    extra = df.iloc[[10]].copy()
    extra["budget"] = "1"  # same budget as 1, written as text
    with pytest.raises(AssayInputError, match="duplicate"):
        data.siren_design(pd.concat([df, extra], ignore_index=True))


def test_nan_score_names_rows():
    df = with_value(with_value(base_table(), 3, "score", np.nan), 8, "score", None)
    with pytest.raises(AssayInputError) as e:
        data.siren_design(df)
    msg = str(e.value)
    assert "rows 3, 8" in msg
    assert "missing" in msg and "'score'" in msg
    assert "drop-items" in msg


def test_non_numeric_score():
    df = with_value(base_table(), 2, "score", "abc")
    with pytest.raises(AssayInputError) as e:
        data.siren_design(df)
    msg = str(e.value)
    assert "non-numeric" in msg and "row 2" in msg and "'abc'" in msg and "[0, 1]" in msg


def test_numeric_strings_are_accepted():
    df = base_table()
    df["score"] = df["score"].map(str)
    d = data.siren_design(df)
    assert d.scores[("A", 1.0)][0, 0] == 0.25


@pytest.mark.parametrize("value, shown", [(1.5, "1.5"), (-0.1, "-0.1")])
def test_score_out_of_range(value, shown):
    df = with_value(base_table(), 7, "score", value)
    with pytest.raises(AssayInputError) as e:
        data.siren_design(df)
    msg = str(e.value)
    assert "[0, 1]" in msg and "row 7" in msg and shown in msg and "outside" in msg


@pytest.mark.parametrize("value", [np.inf, -np.inf])
def test_score_infinite(value):
    df = with_value(base_table(), 5, "score", value)
    with pytest.raises(AssayInputError) as e:
        data.siren_design(df)
    assert "infinite" in str(e.value) and "row 5" in str(e.value)


def test_ragged_design():
    df = base_table()
    gone = (df["artifact"] == "a1") & (df["item"] == "q3")
    with pytest.raises(AssayInputError) as e:
        data.siren_design(df[~gone])
    msg = str(e.value)
    assert "ragged" in msg
    assert "system='A'" in msg and "budget=1" in msg and "artifact='a1'" in msg
    assert "5 of 6" in msg and "'q3'" in msg
    assert "artifact='a0'" not in msg  # only the short artifact is blamed


def test_empty_table():
    with pytest.raises(AssayInputError, match="empty"):
        data.siren_design(base_table().iloc[:0])


def test_too_few_items():
    with pytest.raises(AssayInputError) as e:
        data.siren_design(base_table(m_items=3))
    assert "only 3" in str(e.value) and "at least 4" in str(e.value)
    data.siren_design(base_table(m_items=4))  # 4 is enough


@pytest.mark.parametrize("value", [None, np.nan])
def test_missing_item_id(value):
    df = with_value(base_table(), 9, "item", value)
    with pytest.raises(AssayInputError) as e:
        data.siren_design(df)
    assert "'item'" in str(e.value) and "row 9" in str(e.value)


@pytest.mark.parametrize("value", ["", "   "])
def test_blank_item_id(value):
    df = base_table()
    df["item"] = df["item"].replace("q0", value)  # consistently blank for every artifact
    with pytest.raises(AssayInputError, match="item"):
        data.siren_design(df)


@pytest.mark.parametrize("column", ["system", "artifact", "budget"])
def test_missing_key_columns(column):
    df = with_value(base_table(), 11, column, None)
    with pytest.raises(AssayInputError) as e:
        data.siren_design(df)
    assert f"'{column}'" in str(e.value) and "row 11" in str(e.value)


def test_invalid_on_missing():
    with pytest.raises(AssayInputError) as e:
        data.siren_design(base_table(), on_missing="ignore")
    assert "'ignore'" in str(e.value) and "drop-items" in str(e.value)


def drop_table() -> pd.DataFrame:
    df = design_table(m_items=8, budget_labels=False)
    nan_row = (df.system == "A") & (df.budget == 5e5) & (df.artifact == "y") & (df.item == "q2")
    df.loc[nan_row, "score"] = np.nan
    gone = (df.system == "B") & (df.budget == 0) & (df.item == "q5")
    return df[~gone]


def test_drop_items_required_by_default():
    with pytest.raises(AssayInputError):
        data.siren_design(drop_table())


def test_drop_items():
    d = data.siren_design(drop_table(), on_missing="drop-items")
    assert sorted(d.dropped_items) == ["q2", "q5"]
    keep = [0, 1, 3, 4, 6, 7]
    assert d.items == [f"q{i}" for i in keep]
    assert len(d.cells) == 6
    for s, system in enumerate(SYSTEMS):
        for b, (_, value, arts) in enumerate(BUDGETS):
            Z = d.scores[(system, value)]
            assert Z.shape == (6, len(arts))
            assert not np.isnan(Z).any()
            want = np.array([[true_score(s, b, a, i) for a in range(len(arts))] for i in keep])
            np.testing.assert_array_equal(Z, want)
    # the result of evaluate shrinks to the kept items and records the drop
    r = siren.evaluate(drop_table(), on_missing="drop-items", n_boot=100, reps=3, seed=1)
    assert r.n == 6 and r.info["design"]["dropped_items"] == 2


# ---------------------------------------------------------------------------------------------
# pivot correctness
# ---------------------------------------------------------------------------------------------


def test_pivot_shuffled_rows():
    df = design_table(m_items=8)
    shuffled = df.sample(frac=1.0, random_state=7)
    assert not shuffled.index.equals(df.index)
    d = data.siren_design(shuffled)
    # budgets parsed: "0" -> default 0, "500k" -> 5e5, "1.5M" -> 1.5e6; sorted within each system
    assert d.cells == [(s, b) for s in d.systems for b in (0.0, 5e5, 1.5e6)]
    assert sorted(d.systems) == ["A", "B"]
    assert d.artifacts[("A", 0.0)] == ["default"]
    assert d.scores[("A", 0.0)].shape == (8, 1)
    assert sorted(d.items) == sorted(f"q{i}" for i in range(8))
    # every entry, indexed through the design's own item / artifact order
    for s, system in enumerate(SYSTEMS):
        for b, (_, value, arts) in enumerate(BUDGETS):
            cell = (system, value)
            assert sorted(d.artifacts[cell]) == sorted(arts)
            Z = d.scores[cell]
            for a, art in enumerate(arts):
                for i in range(8):
                    r, c = d.items.index(f"q{i}"), d.artifacts[cell].index(art)
                    assert Z[r, c] == true_score(s, b, a, i)
    # a few explicit values
    ix = d.items.index
    assert d.scores[("B", 1.5e6)][ix("q3"), d.artifacts[("B", 1.5e6)].index("y")] == pytest.approx(0.338)
    assert d.scores[("A", 5e5)][ix("q0"), d.artifacts[("A", 5e5)].index("x")] == pytest.approx(0.060)
    assert d.scores[("B", 0.0)][ix("q7"), 0] == pytest.approx(0.207)


def test_parse_budget():
    assert data.parse_budget("1.5M") == 1.5e6
    assert data.parse_budget("500k") == 5e5
    assert data.parse_budget("500K") == 5e5
    assert data.parse_budget("2B") == 2e9
    assert data.parse_budget(0) == 0.0
    assert data.parse_budget("0") == 0.0
    assert data.parse_budget(np.int64(3)) == 3.0
    assert data.parse_budget("default") == "default"


def test_missing_system_and_budget_columns_get_defaults():
    df = base_table().query("budget == 1").drop(columns=["system", "budget"])
    d = data.siren_design(df)
    assert d.cells == [("system", 1.0)]
    assert d.artifacts[("system", 1.0)] == ["a0", "a1", "a2"]
    np.testing.assert_array_equal(d.scores[("system", 1.0)], np.full((6, 3), 0.25))
    only_budget = base_table().drop(columns=["budget"]).query("artifact != 'default'")
    d2 = data.siren_design(only_budget)
    assert d2.cells == [("A", 1.0)]


def test_integer_item_ids_become_strings():
    df = base_table()
    df["item"] = df["item"].str[1:].astype(int)
    d = data.siren_design(df)
    assert d.items == [str(i) for i in range(6)]


# ---------------------------------------------------------------------------------------------
# check_scores
# ---------------------------------------------------------------------------------------------


def test_check_scores_keeps_missing_missing():
    df = pd.DataFrame({"score": [0.2, np.nan, 1.0, None]}, index=[10, 11, 12, 13])
    out = data.check_scores(df, "score", allow_missing=True)
    assert out.dtype == np.float64
    assert out.loc[10] == 0.2 and out.loc[12] == 1.0
    assert np.isnan(out.loc[11]) and np.isnan(out.loc[13])
    assert (out.fillna(-1) != 0).all()  # never silently 0
    with pytest.raises(AssayInputError, match="rows 11, 13"):
        data.check_scores(df, "score")


def test_check_scores_custom_range():
    df = pd.DataFrame({"kpi": [3.0, 12.0]})
    data.check_scores(df, "kpi", low=0, high=20)
    with pytest.raises(AssayInputError, match=r"\[0, 10\]"):
        data.check_scores(df, "kpi", low=0, high=10)


# ---------------------------------------------------------------------------------------------
# siren.evaluate input validation
# ---------------------------------------------------------------------------------------------


def grid(M: int = 20) -> dict:
    rng = np.random.default_rng(5)
    return {("A", 0): rng.integers(0, 2, (M, 1)).astype(float),
            ("A", 1): rng.integers(0, 2, (M, 3)).astype(float)}


FAST = dict(n_boot=100, reps=3, seed=0)


def test_evaluate_grid_is_valid():
    r = siren.evaluate(grid(), contrasts=["A@1 - A@0", "tuned-vs-default"], **FAST)
    assert len(r.cells) == 2 and len(r.contrasts) == 2


@pytest.mark.parametrize(
    "kwargs, needle",
    [
        (dict(reps=0), "reps"),
        (dict(reps=2.5), "reps"),
        (dict(reps=True), "reps"),
        (dict(score_fraction=0), "score_fraction"),
        (dict(score_fraction=1), "score_fraction"),
        (dict(score_fraction=float("nan")), "score_fraction"),
        (dict(alpha=0), "alpha"),
        (dict(alpha=1.2), "alpha"),
        (dict(n_boot=10), "n_boot"),
        (dict(n_boot=500.5), "n_boot"),
        (dict(selector="argmax"), "selector"),
        (dict(temperature=0), "temperature"),
        (dict(temperature=-1), "temperature"),
        (dict(temperature=float("inf")), "temperature"),
        (dict(band="wide"), "band"),
        (dict(engine="fast"), "engine"),
        (dict(instability_threshold=1.0), "instability_threshold"),
        (dict(seed=-1), "seed"),
        (dict(seed=1.5), "seed"),
        (dict(on_missing="skip"), "on_missing"),
    ],
)
def test_evaluate_bad_parameters(kwargs, needle):
    args = {**FAST, **kwargs}
    table = base_table() if "on_missing" in kwargs else grid()
    with pytest.raises(AssayInputError) as e:
        siren.evaluate(table, **args)
    assert needle in str(e.value)


def test_temperature_irrelevant_for_hard_selector():
    r = siren.evaluate(grid(), selector="hard", temperature=0, **FAST)
    assert list(r.cells["selector"]) == ["none", "hard"]


@pytest.mark.parametrize("kwargs", [dict(alpha=None), dict(alpha="0.05"), dict(score_fraction="0.5")])
def test_evaluate_non_numeric_level_parameters(kwargs):
    with pytest.raises(AssayInputError):
        siren.evaluate(grid(), **{**FAST, **kwargs})


def test_evaluate_accepts_numpy_float32_temperature():
    r = siren.evaluate(grid(), temperature=np.float32(0.1), **FAST)
    assert r.params["temperature"] == pytest.approx(0.1)


@pytest.mark.parametrize(
    "mutate, needle",
    [
        (lambda g: g[("A", 1)].__setitem__((3, 1), np.nan), "NaN"),
        (lambda g: g[("A", 1)].__setitem__((3, 1), np.inf), "inf"),
        (lambda g: g[("A", 1)].__setitem__((4, 2), 2.0), "outside [0, 1]"),
        (lambda g: g[("A", 1)].__setitem__((4, 2), -0.5), "outside [0, 1]"),
        (lambda g: g.__setitem__(("A", 1), g[("A", 1)][:-1]), "ragged"),
        (lambda g: g.__setitem__(("A", 1), np.zeros((20, 3, 2))), "shape"),
    ],
)
def test_evaluate_bad_dict_of_arrays(mutate, needle):
    g = grid()
    mutate(g)
    with pytest.raises(AssayInputError) as e:
        siren.evaluate(g, **FAST)
    assert needle in str(e.value)


def test_evaluate_bad_dict_locations_and_sizes():
    g = grid()
    g[("A", 1)][4, 2] = 2.0
    with pytest.raises(AssayInputError, match=r"\[\[4, 2\]\]"):
        siren.evaluate(g, **FAST)
    with pytest.raises(AssayInputError, match="at least 4"):
        siren.evaluate({("A", 1): np.zeros((3, 2))}, **FAST)
    with pytest.raises(AssayInputError, match="no cells"):
        siren.evaluate({}, **FAST)
    with pytest.raises(AssayInputError, match="duplicate"):
        siren.evaluate({("A", 1): np.zeros((6, 2)), ("A", "1"): np.zeros((6, 2))}, **FAST)
    with pytest.raises(AssayInputError, match="list"):
        siren.evaluate([[0.0, 1.0]] * 6, **FAST)


def test_evaluate_dict_with_text_scores():
    with pytest.raises(AssayInputError):
        siren.evaluate({("A", 1): [["a", "b"]] * 6}, **FAST)


def test_evaluate_dict_with_bad_key():
    with pytest.raises(AssayInputError):
        siren.evaluate({("A", 1, "x"): np.full((6, 2), 0.5)}, **FAST)


@pytest.mark.parametrize(
    "expr, needles",
    [
        ("Z@1 - A@0", ["unknown system 'Z'", "A"]),
        ("A@7 - A@0", ["no budget '7'", "0, 1"]),
        ("A@1 - ", ["A@1"]),
        ("A@1 - - A@0", ["A@1"]),
        ("A1 - A@0", ["SYSTEM@BUDGET"]),
        ("-", ["SYSTEM@BUDGET"]),
        ("", ["empty"]),
        ("A@1 - A@1", ["weights zero"]),
    ],
)
def test_evaluate_bad_contrasts(expr, needles):
    with pytest.raises(AssayInputError) as e:
        siren.evaluate(grid(), contrasts=[expr], **FAST)
    for n in needles:
        assert n in str(e.value)


def test_evaluate_bad_contrast_objects():
    with pytest.raises(AssayInputError, match="unknown cell"):
        siren.evaluate(grid(), contrasts=[siren.Contrast("x", {("A", 5.0): 1.0})], **FAST)
    with pytest.raises(AssayInputError, match="unknown system"):
        siren.evaluate(grid(), contrasts=[{"B@1": 1, "A@0": -1}], **FAST)
    with pytest.raises(AssayInputError, match="cannot read contrast"):
        siren.evaluate(grid(), contrasts=[42], **FAST)


def test_tuned_vs_default_needs_budget_zero():
    g = {("A", 1): grid()[("A", 1)], ("A", 2): grid()[("A", 1)][:, :2]}
    with pytest.raises(AssayInputError) as e:
        siren.evaluate(g, contrasts=["tuned-vs-default"], **FAST)
    assert "tuned-vs-default" in str(e.value) and "budget-0" in str(e.value)
    # and with a default cell the family is not empty
    r = siren.evaluate(grid(), contrasts="tuned-vs-default", **FAST)
    assert list(r.contrasts["contrast"]) == ["A@1 - A@0"]


def test_evaluate_tidy_table_errors_are_input_errors():
    df = with_value(base_table(), 3, "score", 1.5)
    with pytest.raises(AssayInputError, match="outside"):
        siren.evaluate(df, **FAST)
    with pytest.raises(AssayInputError, match="cannot evaluate"):
        siren.evaluate("scores.csv", **FAST)


def test_errors_are_value_errors_with_exit_code():
    with pytest.raises(AssayInputError) as e:
        data.siren_design(base_table().iloc[:0])
    assert isinstance(e.value, ValueError) and isinstance(e.value, AssayError)
    assert e.value.exit_code == 2
