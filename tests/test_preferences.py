"""Preference data in (issue 54, step 1): the tidy table, verdict strings with a documented mapping (Arena-Hard's
three-win weighting an option), Chatbot Arena battles and AlpacaEval annotations (their recorded formats), and bad
input refused naming the row; a judgment the reader cannot use is counted, never silently dropped."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.data.preferences import VERDICTS, parse_verdicts, read_preferences
from assay.errors import AssayInputError


def test_the_tidy_table_and_a_verdict_column():
    t = pd.DataFrame({"q": ["1", "1", "2", "2"], "left": ["x", "x", "y", "x"], "right": ["y", "y", "x", "z"],
                      "v": ["A>>B", "a < b", "Tie", "B>>A"], "who": ["gpt", "gpt", "human", "human"],
                      "g": [1, 2, 1, 1]})
    cols = {"item": "q", "model_a": "left", "model_b": "right", "judge": "who", "game": "g"}
    p = read_preferences(t, columns=cols, verdict="v")
    assert p["preference"].tolist() == [1.0, 0.0, 0.5, 0.0] and p["weight"].tolist() == [1.0] * 4
    assert p["judge"].tolist() == ["gpt", "gpt", "human", "human"] and p["game"].tolist() == ["1", "2", "1", "1"]
    # Arena-Hard-Auto's weighting, asked for: a strong verdict counts three times
    assert read_preferences(t, columns=cols, verdict="v", strong_weight=3)["weight"].tolist() == [3.0, 1.0, 1.0, 3.0]
    # every documented verdict is read, and the mapping is antisymmetric in A and B
    for v, (share, strong) in VERDICTS.items():
        swapped = v.replace("a", "#").replace("b", "a").replace("#", "b")
        if swapped in VERDICTS:
            assert VERDICTS[swapped] == (1.0 - share, strong)


def test_bad_rows_are_named():
    base = pd.DataFrame({"item": ["1", "2"], "model_a": ["x", "y"], "model_b": ["y", "x"], "preference": [1.0, 0.0]})
    with pytest.raises(AssayInputError, match="row 2: model 'y' is compared with itself"):
        read_preferences(base.assign(model_b=["y", "y"]))
    with pytest.raises(AssayInputError, match=r"row 1: preference 1.5 is not a number in \[0, 1\]"):
        read_preferences(base.assign(preference=[1.5, 0.0]))
    with pytest.raises(AssayInputError, match="row 2: unknown verdict 'A>=B'"):
        read_preferences(base.assign(v=["A>B", "A>=B"]), verdict="v")
    with pytest.raises(AssayInputError, match="row 1: no item"):
        read_preferences(base.assign(item=[None, "2"]))
    with pytest.raises(AssayInputError, match="no column.*preference"):
        read_preferences(base.drop(columns=["preference"]))
    with pytest.raises(AssayInputError, match="strong_weight"):
        read_preferences(base.assign(v=["A>B", "tie"]), verdict="v", strong_weight=0.5)


def test_chatbot_arena_battles():
    t = pd.DataFrame({"question_id": ["a1", "a2", "a3", "a4"], "model_a": ["x", "y", "x", "z"],
                      "model_b": ["y", "x", "z", "y"], "winner": ["model_a", "model_b", "tie", "tie (bothbad)"]})
    p = read_preferences(t)
    assert p["item"].tolist() == ["a1", "a2", "a3", "a4"] and p["preference"].tolist() == [1.0, 0.0, 0.5, 0.5]
    with pytest.raises(AssayInputError, match="row 2: unknown winner 'both'"):
        read_preferences(t.assign(winner=["model_a", "both", "tie", "tie"]))


def test_alpacaeval_annotations_as_recorded(tmp_path):
    """The record format of alpaca_eval's results/<model>/<annotator>/annotations.json (preference in [1, 2]: 1
    output_1 preferred, 2 output_2, 1.5 a tie; an empty one is a failed annotation: counted, left out)."""
    recs = [{"instruction": "q1", "output_1": "a", "generator_1": "gpt4_turbo", "output_2": "b",
             "generator_2": "mymodel", "annotator": "weighted_alpaca_eval_gpt4_turbo", "preference": 1.0},
            {"instruction": "q2", "output_1": "a", "generator_1": "gpt4_turbo", "output_2": "b",
             "generator_2": "mymodel", "annotator": "weighted_alpaca_eval_gpt4_turbo", "preference": 1.73},
            {"instruction": "q3", "output_1": "a", "generator_1": "gpt4_turbo", "output_2": "b",
             "generator_2": "mymodel", "annotator": "weighted_alpaca_eval_gpt4_turbo", "preference": None}]
    (tmp_path / "annotations.json").write_text(json.dumps(recs))
    p = read_preferences(tmp_path / "annotations.json")
    assert p["item"].tolist() == ["q1", "q2"] and np.allclose(p["preference"], [1.0, 0.27])
    assert p["model_a"].tolist() == ["gpt4_turbo"] * 2 and set(p["judge"]) == {"weighted_alpaca_eval_gpt4_turbo"}
    assert p.attrs["unparsed"] == {"empty preference (a failed annotation)": 1}
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(AssayInputError, match="not JSON"):
        read_preferences(tmp_path / "bad.json")


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["x", "y", "z", None, ""]), st.sampled_from(["x", "y", "z", None]),
                          st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from(["A>B", "?"]))),
                min_size=0, max_size=6))
def test_any_table_is_read_or_refused_cleanly(rows):
    t = pd.DataFrame(rows, columns=["model_a", "model_b", "preference"]).assign(item="q")
    try:
        p = read_preferences(t)
    except AssayInputError:
        return
    assert ((p["preference"] >= 0) & (p["preference"] <= 1)).all() and (p["model_a"] != p["model_b"]).all()


def test_parse_verdicts_names_the_row_it_was_given():
    with pytest.raises(AssayInputError, match="row q7: unknown verdict"):
        parse_verdicts(["A>B", "??"], rows=["q6", "q7"])
