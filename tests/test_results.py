"""Tests for assay.results (Interval, to_jsonable, Result JSON round trip) through SirenResult."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

import assay
from assay import siren
from assay.results import Interval, Result, to_jsonable

SEED = 2024
CONTRASTS = ["A@1.5M - A@0", "tuned-vs-default", "A@1.5M - B@1.5M"]


def synthetic(seed: int = 123, M: int = 60) -> dict:
    rng = np.random.default_rng(seed)
    return {
        ("A", 0): rng.binomial(1, 0.5, (M, 1)).astype(float),
        ("A", "1.5M"): rng.binomial(1, [0.55, 0.6, 0.5, 0.62], (M, 4)).astype(float),
        ("B", 0): rng.binomial(1, 0.4, (M, 1)).astype(float),
        ("B", "1.5M"): rng.uniform(0, 1, (M, 3)),
    }


def run(seed=SEED, contrasts=CONTRASTS, **kw):
    return siren.evaluate(synthetic(), contrasts=contrasts, n_boot=300, reps=5, seed=seed, **kw)


@pytest.fixture(scope="module")
def result():
    return run()


def _no_constants(token):
    raise ValueError(f"non-strict JSON token {token!r}")


# ---------------------------------------------------------------------------------------------
# JSON round trip
# ---------------------------------------------------------------------------------------------


def test_result_shape(result):
    assert isinstance(result, siren.SirenResult)
    assert len(result.cells) == 4
    assert len(result.contrasts) == 1 + 2 + 1
    assert result.seed == SEED
    assert result.n == 60


def test_json_round_trip(result):
    text = result.to_json()
    back = siren.SirenResult.from_json(text)
    assert type(back) is siren.SirenResult
    pd.testing.assert_frame_equal(back.cells, result.cells, check_dtype=False)
    pd.testing.assert_frame_equal(back.contrasts, result.contrasts, check_dtype=False)
    assert back.params == result.params
    assert back.seed == result.seed == SEED
    assert back.level == result.level
    assert back.n == result.n
    assert back.version == result.version == assay.__version__
    assert back.info["design"] == result.info["design"]
    assert back.info["band"] == result.info["band"]
    assert back.info["warnings"] == result.info["warnings"]
    # baselines: same methods, same rows; finite numbers equal
    assert back.baselines.keys() == result.baselines.keys()
    for name, rows in result.baselines.items():
        assert len(back.baselines[name]) == len(rows)
        for got, want in zip(back.baselines[name], rows):
            assert got.keys() == want.keys()
            for k, v in want.items():
                if isinstance(v, float) and math.isnan(v):
                    continue
                assert got[k] == v, (name, k)
    # the round trip is a fixed point (compared as data: see test_round_trip_keeps_table_order)
    assert json.loads(back.to_json()) == json.loads(text)


def test_base_class_from_json_dispatches_on_method(result):
    back = Result.from_json(result.to_json(indent=None))
    assert isinstance(back, siren.SirenResult)
    assert back.cell("A", "1.5M")["estimate"] == result.cell("A", 1.5e6)["estimate"]


def test_json_is_strict(result):
    text = result.to_json()
    # m1 baseline intervals are NaN in memory ...
    assert math.isnan(result.baselines["m1_naive_max"][0]["ci_low"])
    # ... but the JSON has no NaN / Infinity tokens
    d = json.loads(text, parse_constant=_no_constants)
    assert d["method"] == "siren" and d["seed"] == SEED
    assert d["baselines"]["m1_naive_max"][0]["ci_low"] is None
    assert "NaN" not in text and "Infinity" not in text


def test_nan_baseline_ci_comes_back_as_nan(result):
    back = siren.SirenResult.from_json(result.to_json())
    row = back.baselines["m1_naive_max"][0]
    assert isinstance(row["ci_low"], float) and math.isnan(row["ci_low"])
    assert isinstance(row["ci_high"], float) and math.isnan(row["ci_high"])


def test_nan_and_inf_in_tables_survive(result):
    cells = result.cells.copy()
    cells.loc[0, "ci_low"] = np.nan
    cells.loc[1, "ci_high"] = np.inf
    cells.loc[2, "band_low"] = -np.inf
    r = siren.SirenResult(params=result.params, level=result.level, n=result.n, seed=result.seed,
                          tables={"cells": cells, "contrasts": result.contrasts}, info=result.info)
    text = r.to_json()
    d = json.loads(text, parse_constant=_no_constants)
    assert d["cells"][0]["ci_low"] is None
    # numbers stay numbers: infinities are null in the table, flagged by path at the top level
    assert d["cells"][1]["ci_high"] is None and d["cells"][2]["band_low"] is None
    assert d["infinite"] == [{"path": ["cells", 1, "ci_high"], "value": "+inf"},
                             {"path": ["cells", 2, "band_low"], "value": "-inf"}]
    assert pd.DataFrame(d["cells"])["ci_high"].dtype == np.float64
    back = siren.SirenResult.from_json(text)
    assert math.isnan(back.cells.loc[0, "ci_low"])
    assert back.cells.loc[1, "ci_high"] == np.inf
    assert back.cells.loc[2, "band_low"] == -np.inf
    assert back.cells["ci_high"].dtype == np.float64
    pd.testing.assert_frame_equal(back.cells, cells, check_dtype=False)


def test_all_nan_column_comes_back_as_float_nan(result):
    cells = result.cells.copy()
    cells["se_selection"] = np.nan
    r = siren.SirenResult(params=result.params, level=result.level, n=result.n, seed=result.seed,
                          tables={"cells": cells, "contrasts": result.contrasts}, info=result.info)
    back = siren.SirenResult.from_json(r.to_json())
    assert back.cells["se_selection"].dtype == np.float64
    assert back.cells["se_selection"].isna().all()


_NAMES = tuple(f"table_{c}" for c in "qwertyuiopasdfghjklz")


class _ManyTables(Result):
    method = "test-many-tables"
    main_table = _NAMES[0]

    @classmethod
    def _table_names(cls):
        return _NAMES


def test_round_trip_keeps_table_order():
    tables = {name: pd.DataFrame({"x": [i]}) for i, name in enumerate(_NAMES)}
    r = _ManyTables(params={}, level={}, n=1, seed=0, tables=tables)
    back = Result.from_json(r.to_json())
    assert type(back) is _ManyTables
    assert list(back.tables) == list(_NAMES)
    assert back.to_json() == r.to_json()


def test_round_trip_of_entropy_seed():
    r = run(seed=None, contrasts=())
    assert isinstance(r.seed, int) and 0 <= r.seed < 2**63  # OS entropy, fits an int64 column
    assert pd.DataFrame([{"seed": r.seed}])["seed"].dtype == np.int64
    back = siren.SirenResult.from_json(r.to_json())
    assert back.seed == r.seed


def test_round_trip_without_contrasts_keeps_columns():
    r = run(contrasts=())
    assert r.contrasts.empty and len(r.contrasts.columns) == 10
    back = siren.SirenResult.from_json(r.to_json())
    pd.testing.assert_frame_equal(back.cells, r.cells, check_dtype=False)
    assert list(back.contrasts.columns) == list(r.contrasts.columns)


# ---------------------------------------------------------------------------------------------
# to_jsonable
# ---------------------------------------------------------------------------------------------


def test_to_jsonable_scalars():
    assert to_jsonable(np.int64(3)) == 3 and type(to_jsonable(np.int64(3))) is int
    assert type(to_jsonable(np.float32(0.5))) is float and to_jsonable(np.float32(0.5)) == 0.5
    assert to_jsonable(np.bool_(True)) is True
    assert to_jsonable(True) is True  # not turned into 1
    assert to_jsonable(np.float64("nan")) is None
    assert to_jsonable(float("inf")) is None
    flags = []
    assert to_jsonable({"a.b": [1.0, np.float64("-inf")]}, flags) == {"a.b": [1.0, None]}
    assert flags == [{"path": ["a.b", 1], "value": "-inf"}]
    assert to_jsonable(pd.NA) is None
    assert to_jsonable(None) is None
    assert to_jsonable(np.str_("x")) == "x"


def test_to_jsonable_containers():
    obj = {
        "a": np.array([[1.0, np.nan], [np.inf, 2.5]]),
        3: (np.int32(1), [np.float64(0.25)]),
        ("s", 1.0): {"inner": np.arange(3)},
    }
    flags = []
    out = to_jsonable(obj, flags)
    assert out == {"a": [[1.0, None], [None, 2.5]], "3": [1, [0.25]], "('s', 1.0)": {"inner": [0, 1, 2]}}
    assert flags == [{"path": ["a", 1, 0], "value": "+inf"}]
    assert all(type(v) is int for v in out["('s', 1.0)"]["inner"])
    json.dumps(out, allow_nan=False)  # strict JSON


def test_to_jsonable_dataframe_and_interval():
    df = pd.DataFrame({"name": ["x", "y"], "k": np.array([1, 2], dtype=np.int64), "v": [0.5, np.nan]})
    out = to_jsonable(df)
    assert out == [{"name": "x", "k": 1, "v": 0.5}, {"name": "y", "k": 2, "v": None}]
    assert type(out[0]["k"]) is int
    iv = Interval(np.float64(0.1), np.float64(0.3), 0.95)
    assert to_jsonable(iv) == {"low": 0.1, "high": 0.3, "level": 0.95}
    assert to_jsonable({"ci": iv}) == {"ci": {"low": 0.1, "high": 0.3, "level": 0.95}}
    json.dumps(to_jsonable({"t": df, "ci": iv}), allow_nan=False)


# ---------------------------------------------------------------------------------------------
# Interval
# ---------------------------------------------------------------------------------------------


def test_interval():
    iv = Interval(0.1, 0.3, 0.95)
    assert iv.width == pytest.approx(0.2)
    assert type(iv.width) is float
    assert iv.contains(0.2)
    assert iv.contains(0.1) and iv.contains(0.3)  # closed
    assert not iv.contains(0.0999) and not iv.contains(0.31)
    assert str(iv) == "[0.1000, 0.3000] (95%)"
    assert str(Interval(-0.05, 0.125, 0.9)) == "[-0.0500, 0.1250] (90%)"
    assert iv.to_dict() == {"low": 0.1, "high": 0.3, "level": 0.95}
    with pytest.raises(Exception):
        iv.low = 0.0  # frozen


# ---------------------------------------------------------------------------------------------
# views
# ---------------------------------------------------------------------------------------------


def test_to_frame_is_a_copy(result):
    before = result.cells.copy()
    frame = result.to_frame()
    pd.testing.assert_frame_equal(frame, result.cells)
    frame.loc[:, "estimate"] = -1.0
    frame["new"] = 1
    pd.testing.assert_frame_equal(result.cells, before)
    assert "new" not in result.table.columns


def test_summary(result):
    s = result.summary()
    assert isinstance(s, str)
    assert "4 cells" in s
    assert f"seed = {SEED}" in s
    assert "M = 60" in s
    assert "A@1.5M - A@0" in s  # contrasts are listed
    other = run(seed=7).summary()
    assert "seed = 7" in other and f"seed = {SEED}" not in other


def test_repr(result):
    assert repr(result) == "<SirenResult method='siren' n=60 rows=4>"


# ---------------------------------------------------------------------------------------------
# seeds
# ---------------------------------------------------------------------------------------------


def test_recorded_entropy_seed_reproduces():
    first = run(seed=None)
    assert isinstance(first.seed, int) and not isinstance(first.seed, bool)
    again = run(seed=first.seed)
    assert again.seed == first.seed
    pd.testing.assert_frame_equal(again.cells, first.cells, check_exact=True)
    pd.testing.assert_frame_equal(again.contrasts, first.contrasts, check_exact=True)
    assert again.baselines_frame().equals(first.baselines_frame())
    # a second draw from entropy records a different seed
    assert run(seed=None, contrasts=()).seed != first.seed


def test_same_seed_same_tables(result):
    again = run(seed=SEED)
    pd.testing.assert_frame_equal(again.cells, result.cells, check_exact=True)
    pd.testing.assert_frame_equal(again.contrasts, result.contrasts, check_exact=True)
    assert again.to_json() == result.to_json()
    # and the seed matters: a different one moves the selection-dependent numbers
    other = run(seed=SEED + 1)
    tuned = result.cells["K"] > 1
    assert not np.allclose(other.cells.loc[tuned, "estimate"], result.cells.loc[tuned, "estimate"])
    assert not np.allclose(other.cells["ci_low"], result.cells["ci_low"])


def test_repr_html_shows_guarantee_warnings_and_escaped_names():
    r = run(contrasts=())
    cells = r.cells.copy()
    cells.loc[0, "system"] = "<script>m[a]</script>"
    r2 = siren.SirenResult(params=r.params, level=r.level, n=r.n, seed=r.seed, tables={"cells": cells},
                           info={**r.info, "warnings": ["a & b"]})
    h = r2._repr_html_()
    assert "SirenResult" in h and f"seed = {r.seed}" in h and "alpha = 0.05" in h
    assert "evaluation items" in h and "Guarantee" in h
    assert "&lt;script&gt;" in h and "<script>" not in h and "a &amp; b" in h


def test_a_statement_is_its_sentence_with_a_subject_and_a_level():
    from assay.results import Result, Statement

    s = Statement("accuracy is in [0.61, 0.70]", "m", "about 95%")
    assert s == "accuracy is in [0.61, 0.70]" and "0.61" in s and (s.subject, s.level) == ("m", "about 95%")
    assert Statement("x").subject == "" and isinstance(s, str)
    with pytest.raises(NotImplementedError, match="does not state its headline"):
        Result.statements(object.__new__(Result))
