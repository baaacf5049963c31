"""PS-DME's selection rules (paper eq. 3) and SS-DME's random split of each configuration's data (Sec. 3.1).

:func:`select_configurations` is S(D): ``all``, ``top:K`` (the K smallest sample means), ``below:VALUE`` or a
callable. :func:`_fixed_size` says whether a rule fixes |S| before the data (``all``, ``top:K``), which decides how
the calibrator may be fixed (:mod:`assay.psdme.fcr`). :func:`split_samples` partitions every D_k into D_k^sel and
D_k^eval for SS-DME.
"""

from __future__ import annotations

import math
import re
from typing import Any, Sequence

import numpy as np

from ..errors import AssayInputError
from .arguments import _is_number

_TOP = r"(?:top[:\-]?|top-k by mean:?)(\d+)"
_BELOW = r"below[:=]?\s*([-+]?\d*\.?\d+(?:[eE][-+]?\d+)?)"


def _fixed_size(rule: Any, K: int) -> int | None:
    """|S| when the rule fixes it before the data ("all": K, "top:k": min(k, K)); None when the data decide."""
    if callable(rule):
        return None
    if rule is None or str(rule).strip().lower() == "all":
        return K
    m = re.fullmatch(_TOP, str(rule).strip().lower())
    return min(int(m.group(1)), K) if m else None


def _means(samples: np.ndarray | Sequence[np.ndarray]) -> list[float]:
    """Sample mean of every configuration; +inf for one with a failure (+inf KPI)."""
    if isinstance(samples, np.ndarray) and samples.ndim == 2:
        return np.where(np.isfinite(samples).all(axis=1), samples.mean(axis=1), math.inf).tolist()
    return [float(np.mean(v)) if np.isfinite(v).all() else math.inf for v in samples]


def select_configurations(rule: Any, samples: np.ndarray | Sequence[np.ndarray],
                          names: Sequence[str] | None = None) -> np.ndarray:
    """The selected set K-hat = S(D) of the paper (eq. 3), as indices into ``samples``.

    Parameters
    ----------
    rule : "all" | "top:K" | "below:VALUE" | callable
        ``all`` keeps every configuration; ``top:K`` the K smallest sample means (ties by position);
        ``below:VALUE`` every configuration whose sample mean is below VALUE (a configuration with a failure,
        KPI = +inf, has mean +inf). A callable receives ``{name: copy of its sample}`` (names, or the indices
        0..K-1 when ``names`` is None) and returns the names to keep, in the order to report them.
    samples : (K, n) array or list of K 1-D arrays
        The data the rule looks at (D, or D^sel for SS-DME).
    names : sequence of str, optional
        One name per configuration (what a callable rule sees and returns).

    Returns
    -------
    ndarray of int
        Indices of the selected configurations, in the rule's order (for ``top:K``, by increasing mean).
    """
    K = len(samples)
    keys = list(names) if names is not None else list(range(K))
    if callable(rule):
        index = {c: i for i, c in enumerate(keys)}
        chosen = list(rule({c: np.array(v, dtype=float) for c, v in zip(keys, samples)}))
        unknown = [c for c in chosen if c not in index]
        if unknown:
            raise AssayInputError(f"the selection returned unknown configurations: {', '.join(map(str, unknown[:5]))}")
        kept = dict.fromkeys(str(c) for c in chosen) if names is not None else dict.fromkeys(int(c) for c in chosen)
        return np.array([index[c] for c in kept], dtype=int)
    if rule is None or rule == "all":
        return np.arange(K)
    text = str(rule).strip().lower()
    m = re.fullmatch(_TOP, text)
    if m:
        k = int(m.group(1))
        if k < 1:
            raise AssayInputError("top:k needs k >= 1")
        means = _means(samples)
        if any(math.isnan(v) for v in means):  # e.g. overflowing sums: keep Python's ordering of the keys
            order = sorted(range(K), key=lambda i: (means[i], i))
        else:  # the same order (by mean, ties by position), vectorised
            order = np.argsort(np.asarray(means), kind="stable")
        return np.asarray(order[: min(k, K)], dtype=int)
    m = re.fullmatch(_BELOW, text)
    if m:
        v = float(m.group(1))
        means = _means(samples)
        return np.array([i for i in range(K) if means[i] < v], dtype=int)
    raise AssayInputError(
        f"unknown selection {rule!r}: use 'all', 'top:K' (K smallest means), 'below:VALUE' (mean below VALUE) "
        "or a callable taking {config: array} and returning configuration names"
    )


def split_samples(samples: Sequence[np.ndarray], split: float,
                  rng: np.random.Generator) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """SS-DME's partition of every D_k into D_k^sel and D_k^eval (Sec. 3.1), at random.

    For each configuration in turn, one permutation ``rng.permutation(n_k)``; its first
    m_k = round(split * n_k) points (kept in [1, n_k - 1]) select, the others build the band.

    Parameters
    ----------
    samples : sequence of 1-D ndarrays
        The observations D_k of each configuration, at least 2 each.
    split : float
        Fraction of each D_k that goes to selection, in (0, 1).
    rng : numpy.random.Generator
        The source of the permutations (consumed in the order of ``samples``).

    Returns
    -------
    (select_samples, eval_samples) : two lists of sorted arrays, in the order of ``samples``.

    Raises
    ------
    AssayInputError
        If ``split`` is not a number in (0, 1), or a sample is not 1-D with at least 2 observations.

    Examples
    --------
    >>> import numpy as np
    >>> sel, ev = split_samples([np.arange(5.), np.arange(4.)], 0.4, np.random.default_rng(0))
    >>> [len(s) for s in sel], [len(e) for e in ev]
    ([2, 2], [3, 2])
    """
    if not _is_number(split) or not (0 < float(split) < 1):
        raise AssayInputError(f"split must be a number in (0, 1), got {split!r}")
    sel, ev = [], []
    for v in samples:
        v = np.asarray(v, dtype=float)
        if v.ndim != 1 or v.size < 2:
            raise AssayInputError("split_samples needs 1-D samples with at least 2 observations each")
        perm = rng.permutation(len(v))
        m = min(max(int(round(split * len(v))), 1), len(v) - 1)
        sel.append(np.sort(v[perm[:m]]))
        ev.append(np.sort(v[perm[m:]]))
    return sel, ev
