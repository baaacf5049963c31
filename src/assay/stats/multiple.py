"""Family-wise error control from the p-values of K hypotheses: Bonferroni, Holm, fixed sequence.

Each hypothesis k has a valid p-value p_k (P(p_k <= u) <= u under its null, for every u). A procedure returns
the set of rejected hypotheses (a boolean mask aligned with ``p``) such that

    P(at least one true null is rejected) <= delta                                      (FWER)

whatever the dependence between the p-values (Bonferroni, Holm) or along a fixed order given before seeing
the data (fixed sequence). In R-AutoEval+ (Park, Zecchin, Simeone, Sec. 4) a rejected null "risk > alpha"
is a certified candidate; the paper uses fixed-sequence testing (Bauer 1991) and Bonferroni (its [7], [9]).

Comparison rule: ``p <= level * (1 + 1e-9)``. The relative slack lets a p-value computed as 1/E with
E = 1/level, which rounding can push a hair above ``level``, count as reaching it; every procedure
here and every single test of :mod:`assay.autoeval` uses this same rule.

Pure numpy; no pandas.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .. import checks
from ..errors import AssayInputError

__all__ = ["SLACK", "rejects", "bonferroni", "holm", "fixed_sequence", "adjusted"]

#: relative slack of the comparison p <= level (1 + SLACK)
SLACK = 1e-9


def rejects(p, level):
    """Test ``p <= level * (1 + SLACK)``, elementwise: a bool for scalars, a bool array otherwise.

    Parameters
    ----------
    p : float or array_like
        p-value(s).
    level : float or array_like
        Level(s) to compare against, broadcast against ``p``.

    Returns
    -------
    bool or numpy.ndarray of bool
        True where the p-value reaches the level.

    Examples
    --------
    >>> rejects(0.05, 0.05), rejects([0.01, 0.05 * (1 + 1e-12), 0.06], 0.05).tolist()
    (True, [True, True, False])
    """
    out = np.asarray(p, dtype=float) <= np.asarray(level, dtype=float) * (1.0 + SLACK)
    return bool(out) if out.ndim == 0 else out


def _pvalues(p) -> np.ndarray:
    arr = np.asarray(p, dtype=float)
    if arr.ndim != 1:
        raise AssayInputError(f"p-values must be a one-dimensional array, got shape {arr.shape}")
    if np.isnan(arr).any() or (arr < 0).any() or (arr > 1).any():
        raise AssayInputError("p-values must lie in [0, 1] (no NaN)")
    return arr


def bonferroni(p: Sequence[float] | np.ndarray, delta: float) -> np.ndarray:
    """Bonferroni: reject H_k when p_k <= delta / K.

    Parameters
    ----------
    p : array (K,)
        Valid p-values.
    delta : float
        Family-wise error level.

    Returns
    -------
    ndarray of bool (K,)
        The rejected hypotheses.
    """
    arr = _pvalues(p)
    delta = checks.level(delta)
    if arr.size == 0:
        return np.zeros(0, dtype=bool)
    return np.asarray(rejects(arr, delta / arr.size), dtype=bool).reshape(arr.shape)


def holm(p: Sequence[float] | np.ndarray, delta: float) -> np.ndarray:
    """Holm's step-down procedure: sort the p-values ascending (ties in input order) and reject the
    j-th smallest (j = 0, 1, ...) while p_(j) <= delta / (K - j); stop at the first that fails.

    Rejects everything Bonferroni rejects, and possibly more, at the same family-wise error.

    Parameters
    ----------
    p : array (K,)
        Valid p-values.
    delta : float
        Family-wise error level.

    Returns
    -------
    ndarray of bool (K,)
        The rejected hypotheses, aligned with ``p``.
    """
    arr = _pvalues(p)
    delta = checks.level(delta)
    K = arr.size
    out = np.zeros(K, dtype=bool)
    for j, k in enumerate(np.argsort(arr, kind="stable")):
        if not rejects(arr[k], delta / (K - j)):
            break
        out[k] = True
    return out


def fixed_sequence(p: Sequence[float] | np.ndarray, delta: float, order: Sequence[int] | np.ndarray | None = None) -> np.ndarray:
    """Fixed-sequence testing (Bauer 1991) of K hypotheses in a pre-specified order.

    Test the hypotheses in a pre-specified order, each at the full level delta, and stop at the first one not
    rejected.

    Parameters
    ----------
    p : array (K,)
        Valid p-values.
    delta : float
        Family-wise error level (also the level of each test).
    order : sequence of int, optional
        Indices into ``p`` in testing order (all of them or a subset; hypotheses not listed are never
        rejected). Default ``0, 1, ..., K-1``. It must not depend on the data being tested.

    Returns
    -------
    ndarray of bool (K,)
        The rejected hypotheses, aligned with ``p``: a prefix of ``order``.

    Raises
    ------
    AssayInputError
        When the p-values are not a 1-D array in [0, 1], ``delta`` is not strictly between 0 and 1, or ``order``
        lists an index outside ``0 .. K-1`` or an index twice.

    Examples
    --------
    >>> p = [0.01, 0.04, 0.03, 0.5]
    >>> fixed_sequence(p, 0.05).tolist()
    [True, True, True, False]
    >>> fixed_sequence(p, 0.05, order=[2, 0, 3, 1]).tolist()
    [True, False, True, False]
    """
    arr = _pvalues(p)
    delta = checks.level(delta)
    K = arr.size
    if order is None:
        idx = np.arange(K)
    else:
        idx = np.asarray(order)
        if idx.ndim != 1 or (idx.size and (idx.dtype.kind not in "iu" or idx.min() < 0 or idx.max() >= K)):
            raise AssayInputError(f"order must list indices between 0 and {K - 1}, got {list(order)!r}")
        if len(set(idx.tolist())) != idx.size:
            raise AssayInputError("order lists an index twice")
    out = np.zeros(K, dtype=bool)
    for k in idx:
        if not rejects(arr[k], delta):
            break
        out[k] = True
    return out


def adjusted(p: Sequence[float] | np.ndarray, procedure: str,
             order: Sequence[int] | np.ndarray | None = None) -> np.ndarray:
    """Adjusted p-values of Bonferroni, Holm or fixed-sequence testing.

    Hypothesis k is rejected by ``procedure`` at family-wise level delta exactly when its adjusted p-value is at
    most delta (up to :data:`SLACK`), for every delta at once.

    ``"bonferroni"``: min(1, K p_k). ``"holm"``: the running maximum, over the p-values sorted ascending, of
    min(1, (K - j) p_(j)). ``"fst"`` (fixed sequence, in ``order``): the running maximum of p along the order;
    hypotheses not in ``order`` get 1.

    Parameters
    ----------
    p : array (K,)
        Valid p-values.
    procedure : {"bonferroni", "holm", "fst"}
        The procedure whose adjusted p-values are returned.
    order : sequence of int, optional
        For ``"fst"``: indices into ``p`` in testing order (default ``0, 1, ..., K-1``); ignored otherwise.

    Returns
    -------
    ndarray of float (K,)
        The adjusted p-values, aligned with ``p``.

    Raises
    ------
    AssayInputError
        When the p-values are not a 1-D array in [0, 1] or ``procedure`` is unknown.

    Examples
    --------
    >>> p = [0.01, 0.04, 0.03, 0.5]
    >>> adjusted(p, "bonferroni").round(4).tolist()
    [0.04, 0.16, 0.12, 1.0]
    >>> adjusted(p, "holm").round(4).tolist()
    [0.04, 0.09, 0.09, 0.5]
    >>> adjusted(p, "fst", order=[2, 0]).round(4).tolist()
    [0.03, 1.0, 0.03, 1.0]
    """
    arr = _pvalues(p)
    K = arr.size
    if procedure == "bonferroni":
        return np.minimum(1.0, K * arr)
    out = np.ones(K)
    if procedure == "holm":
        srt = np.argsort(arr, kind="stable")
        out[srt] = np.maximum.accumulate(np.minimum(1.0, (K - np.arange(K)) * arr[srt]))
        return out
    if procedure == "fst":
        idx = np.arange(K) if order is None else np.asarray(order, dtype=int)
        out[idx] = np.maximum.accumulate(arr[idx]) if idx.size else out[idx]
        return out
    raise AssayInputError(f"procedure must be bonferroni, holm or fst; got {procedure!r}")
