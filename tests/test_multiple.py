"""Family-wise error procedures on p-values (assay.stats.multiple): Bonferroni, Holm, fixed sequence.

Rules checked by hand on small examples, the comparison rule p <= level (1 + 1e-9) shared with
assay.autoeval, and a seeded Monte Carlo check that the family-wise error stays <= delta under the global null
(tolerance: 3 Monte Carlo standard errors at the boundary, sqrt(delta (1 - delta) / trials)).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from hypothesis import given, settings
from hypothesis import strategies as st

from assay import stats
from assay.errors import AssayInputError
from assay.stats import multiple
from assay.stats.multiple import bonferroni, fixed_sequence, holm, rejects

DELTA = 0.1


def test_exported_from_stats():
    assert stats.bonferroni is bonferroni and stats.holm is holm and stats.fixed_sequence is fixed_sequence
    assert stats.multiple is multiple


def test_rejects_rule_with_relative_slack():
    assert rejects(0.1, 0.1) and rejects(0.1 * (1 + 5e-10), 0.1)
    assert not rejects(0.1 * (1 + 2e-9), 0.1)
    np.testing.assert_array_equal(rejects(np.array([0.05, 0.1, 0.2]), 0.1), [True, True, False])
    # the autoeval single-test rule is this one
    from assay.autoeval import _passes

    for p in (0.1, 0.1 * (1 + 5e-10), 0.1 * (1 + 2e-9), 0.3):
        assert _passes(p, 0.1) == rejects(p, 0.1)


def test_bonferroni_by_hand():
    p = np.array([0.01, 0.02, 0.021, 0.5, 0.0])
    np.testing.assert_array_equal(bonferroni(p, DELTA), [True, True, False, False, True])  # threshold 0.02
    assert bonferroni(np.zeros(0), DELTA).shape == (0,)


def test_holm_by_hand_and_contains_bonferroni():
    # sorted: 0.001 (<= 0.1/4), 0.03 (<= 0.1/3), 0.04 (<= 0.1/2), 0.2 (> 0.1/1) -> three rejections
    p = np.array([0.04, 0.2, 0.001, 0.03])
    np.testing.assert_array_equal(holm(p, DELTA), [True, False, True, True])
    np.testing.assert_array_equal(bonferroni(p, DELTA), [False, False, True, False])
    # step-down stops at the first failure even if a later p-value would pass its own threshold
    # (0.01 <= 0.1/4; 0.06 > 0.1/3 stops it, although 0.09 <= 0.1/1 would pass its own threshold)
    np.testing.assert_array_equal(holm(np.array([0.09, 0.01, 0.07, 0.06]), DELTA), [False, True, False, False])
    rng = np.random.default_rng(3)
    for _ in range(200):
        p = rng.random(6) ** 3
        assert (holm(p, DELTA) >= bonferroni(p, DELTA)).all()


def test_holm_ties_in_input_order():
    p = np.array([0.05, 0.05, 0.01])
    np.testing.assert_array_equal(holm(p, DELTA), [True, True, True])  # 0.01 <= 0.1/3, 0.05 <= 0.1/2, 0.05 <= 0.1


def test_fixed_sequence_stops_at_first_failure():
    p = np.array([0.01, 0.09, 0.5, 0.0])
    np.testing.assert_array_equal(fixed_sequence(p, DELTA), [True, True, False, False])
    # a given order (a subset): index 3 first, then 0, then 2 (fails), 1 is never reached
    np.testing.assert_array_equal(fixed_sequence(p, DELTA, order=[3, 0, 2, 1]), [True, False, False, True])
    np.testing.assert_array_equal(fixed_sequence(p, DELTA, order=[3]), [False, False, False, True])
    np.testing.assert_array_equal(fixed_sequence(p, DELTA, order=[]), [False] * 4)


@pytest.mark.parametrize("call,match", [
    (lambda: holm(np.array([[0.1]]), DELTA), "one-dimensional"),
    (lambda: bonferroni([0.1, float("nan")], DELTA), r"\[0, 1\]"),
    (lambda: holm([1.2], DELTA), r"\[0, 1\]"),
    (lambda: bonferroni([0.1], 1.0), "delta must be"),
    (lambda: holm([0.1], True), "delta must be"),
    (lambda: fixed_sequence([0.1, 0.2], DELTA, order=[0, 2]), "order must list indices"),
    (lambda: fixed_sequence([0.1, 0.2], DELTA, order=[0, 0]), "twice"),
])
def test_bad_input(call, match):
    with pytest.raises(AssayInputError, match=match):
        call()


def _fwer(procedure, p):
    return float(np.mean([procedure(row).any() for row in p]))  # every hypothesis is a true null


@pytest.mark.parametrize("dependence", ["independent", "identical", "antithetic"])
def test_fwer_under_the_global_null(dependence):
    """K = 5 true nulls with uniform p-values: P(some rejection) <= delta for each procedure."""
    trials, K = 4000, 5
    rng = np.random.default_rng(2024)
    u = rng.random((trials, K))
    if dependence == "identical":
        u = np.repeat(u[:, :1], K, axis=1)
    elif dependence == "antithetic":  # pairs (u, 1 - u): negative dependence
        u[:, 1::2] = 1.0 - u[:, 0:K - 1:2]
    limit = DELTA + 3 * math.sqrt(DELTA * (1 - DELTA) / trials)
    for name, proc in (("bonferroni", lambda p: bonferroni(p, DELTA)), ("holm", lambda p: holm(p, DELTA)),
                       ("fixed_sequence", lambda p: fixed_sequence(p, DELTA))):
        fwer = _fwer(proc, u)
        print(f"{dependence} {name}: FWER {fwer:.4f} (limit {limit:.4f})")
        assert fwer <= limit, (dependence, name, fwer)
    # fixed sequence spends all of delta on the first hypothesis: its FWER is delta itself
    assert abs(_fwer(lambda p: fixed_sequence(p, DELTA), u) - DELTA) <= 3 * math.sqrt(DELTA * (1 - DELTA) / trials)


def test_fwer_with_some_false_nulls():
    """Two false nulls (p-values near 0) and three true nulls: errors on the true nulls stay <= delta."""
    trials, K = 4000, 5
    rng = np.random.default_rng(7)
    p = rng.random((trials, K))
    p[:, [0, 3]] = rng.random((trials, 2)) * 1e-3  # false nulls, first in the fixed order
    null = np.array([False, True, True, False, True])
    limit = DELTA + 3 * math.sqrt(DELTA * (1 - DELTA) / trials)
    for proc in (lambda q: bonferroni(q, DELTA), lambda q: holm(q, DELTA),
                 lambda q: fixed_sequence(q, DELTA, order=[0, 3, 1, 2, 4])):
        masks = np.array([proc(row) for row in p])
        assert np.mean((masks & null).any(axis=1)) <= limit
        assert masks[:, [0, 3]].mean() > 0.9  # power on the false nulls


@given(p=st.lists(st.floats(0, 1), min_size=1, max_size=8),
       delta=st.floats(0.001, 0.5), procedure=st.sampled_from(["bonferroni", "holm", "fst"]))
@settings(max_examples=300, deadline=None, derandomize=True)
def test_adjusted_p_values_reject_exactly_what_the_procedure_rejects(p, delta, procedure):
    from assay.stats.multiple import adjusted, bonferroni, fixed_sequence, holm, rejects

    arr = np.array(p)
    order = list(range(len(p)))[::-1]
    fn = {"bonferroni": lambda: bonferroni(arr, delta), "holm": lambda: holm(arr, delta),
          "fst": lambda: fixed_sequence(arr, delta, order=order)}[procedure]
    adj = adjusted(arr, procedure, order=order if procedure == "fst" else None)
    assert ((adj >= arr - 1e-15) & (adj <= 1)).all()
    # away from the boundary (the procedures' SLACK), rejected exactly when the adjusted p-value is <= delta
    clear = np.abs(adj - delta) > 1e-9 * max(delta, 1e-300) + 1e-12
    assert (fn()[clear] == rejects(adj, delta)[clear]).all()
