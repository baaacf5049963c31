"""Which model is preferred, which are tied, where each ranks, from pairwise preferences (issue 54; the Python entry
point, not yet behind a command).

A Bradley-Terry fit (:mod:`assay.compare.bt`: centred strengths, the sandwich covariance clustered by item) gives
every pair's strength difference theta_a - theta_b with a standard error; the pair intervals hold together by a
studentized max-t over the K (K - 1) / 2 differences (the maximum of |c'Z| / se over the pairs, Z ~ N(0, cov), as
compare's asymptotic guarantee does for scores), and the verdicts, rank intervals and tiers are read off them. Each
pair's predicted win probability sigma(theta_a - theta_b) carries the interval its difference's maps to. A pair never
compared directly is ordered only through the model (``direct`` counts its judgments: 0 says so).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from ..data.preferences import read_preferences
from ..errors import AssayInputError
from ..results import build
from ..seeds import resolve_seed
from . import core
from .api import CompareResult
from .bt import fit_bt

__all__ = ["evaluate_preferences"]


def _crit(cov: np.ndarray, a: np.ndarray, b: np.ndarray, se: np.ndarray, delta: float, rng, n_boot: int) -> float:
    """The (1 - delta) quantile of max over pairs of |Z_a - Z_b| / se, Z ~ N(0, cov)."""
    ev, Q = np.linalg.eigh(cov)
    L = Q * np.sqrt(np.clip(ev, 0.0, None))
    keep = se > 0
    mx = np.zeros(n_boot)
    for s in range(0, n_boot, 256):
        G = rng.standard_normal((min(256, n_boot - s), len(cov))) @ L.T
        mx[s:s + len(G)] = np.max(np.abs(G[:, a[keep]] - G[:, b[keep]]) / se[keep], axis=1) if keep.any() else 0.0
    return float(np.quantile(mx, 1.0 - delta))


def evaluate_preferences(source: Any, *, delta: float = 0.05, margin: float | None = None, seed: Any = None,
                         n_boot: int = 4000, **read) -> CompareResult:
    """Compare models from pairwise preferences: Bradley-Terry strengths (logit scale, centred), every pair's
    difference with an interval holding together with the others, verdicts, rank intervals and tiers.

    ``source`` is anything :func:`assay.data.preferences.read_preferences` reads (``read`` passes its options:
    ``columns=``, ``verdict=``, ``strong_weight=``). The clusters are the items. ``margin``: a pair whose difference
    of strengths lies inside +-margin (logits) is ``equivalent``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> th = {"x": 1.0, "y": 0.0, "z": -1.0}
    >>> rows = []
    >>> for i in range(300):
    ...     m1, m2 = rng.choice(list(th), 2, replace=False)
    ...     rows.append({"item": str(i), "model_a": m1, "model_b": m2,
    ...                  "preference": float(rng.random() < 1 / (1 + np.exp(th[m2] - th[m1])))})
    >>> res = evaluate_preferences(pd.DataFrame(rows), seed=0)
    >>> res.pairs[["model_a", "model_b", "verdict"]].values.tolist()
    [['x', 'y', 'a better'], ['x', 'z', 'a better'], ['y', 'z', 'a better']]
    """
    from .. import checks

    delta = checks.level(delta)
    t = read_preferences(source, **read)
    names = sorted(set(t["model_a"]) | set(t["model_b"]))
    code = {m: i for i, m in enumerate(names)}
    a_i, b_i = t["model_a"].map(code).to_numpy(), t["model_b"].map(code).to_numpy()
    K = len(names)
    if K < 2:
        raise AssayInputError("preferences between at least 2 models are needed")
    cl = t["item"].to_numpy()
    fit = fit_bt(a_i, b_i, t["preference"].to_numpy(), K, weight=t["weight"].to_numpy(), clusters=cl)
    seed = resolve_seed(seed)
    a, b = core.pair_index(K)
    d = fit.theta[a] - fit.theta[b]
    se = np.sqrt(np.maximum(fit.cov[a, a] + fit.cov[b, b] - 2.0 * fit.cov[a, b], 0.0))
    c = _crit(fit.cov, a, b, se, float(delta), seed.rng(), int(n_boot))
    lo, hi = d - c * se, d + c * se
    verdict, inside = core.verdicts(lo, hi, margin)
    rank_low, rank_high, tier = core.ranks_and_tiers(fit.theta, lo, hi)
    # judgments per pair (a < b, in pair_index order: lo * K + hi) and per model, counted at once
    lo_i, hi_i = np.minimum(a_i, b_i), np.maximum(a_i, b_i)
    n_direct = np.bincount(lo_i * K + hi_i, minlength=K * K)[a * K + b]
    sig = lambda x: 1.0 / (1.0 + np.exp(-x))  # noqa: E731
    # each strength's interval: a second family, Bonferroni over the K models (its own level, as for scores)
    se_m = np.sqrt(np.clip(np.diag(fit.cov), 0.0, None))
    z_m = float(stats.norm.isf(float(delta) / (2 * K)))
    models = {"model": names, "estimate": fit.theta, "ci_low": fit.theta - z_m * se_m,
              "ci_high": fit.theta + z_m * se_m, "rank_low": rank_low, "rank_high": rank_high,
              "may_be_best": rank_low == 1, "tier": tier,
              "answered": np.bincount(a_i, minlength=K) + np.bincount(b_i, minlength=K), "exact": np.zeros(K, bool)}
    pairs = {"model_a": [names[i] for i in a], "model_b": [names[i] for i in b], "estimate": d, "ci_low": lo,
             "ci_high": hi, "verdict": list(verdict), "within_margin": inside, "p_win": sig(d), "p_win_low": sig(lo),
             "p_win_high": sig(hi), "direct": n_direct, "exact": np.zeros(len(a), bool)}
    notes = []
    if (n_direct == 0).any():
        notes.append(f"{int((n_direct == 0).sum())} pair(s) never compared directly: ordered only through the model "
                     "(direct = 0)")
    meaning = (f"the {len(a)} pair intervals of strength differences, with their verdicts, rank intervals and tiers, "
               f"hold together with probability about {1 - delta:.0%} (asymptotic: Bradley-Terry by maximum "
               f"likelihood, the sandwich covariance clustered by item over {fit.clusters} items, a studentized max-t "
               "over the pairs); the strengths' intervals a second family, each at delta / K")
    res = build(CompareResult, params={"guarantee": "asymptotic", "margin": margin, "design": "bradley-terry",
                                       "n_boot": int(n_boot)},
                n=int(fit.clusters), n_meaning="items (clusters) judged", meaning=meaning, seed=seed,
                tables={"models": models, "pairs": pairs}, delta=float(delta), warnings=notes,
                info={"estimand": "each model's Bradley-Terry strength (logit scale, centred: the strengths sum to 0, "
                                  "no anchor model) best fitting the preferences on the population of items these "
                                  "are a sample of; ties count as half a win each way", "scope": "population",
                      "judgments": int(len(t)), "unparsed": t.attrs.get("unparsed", {}), "critical": c})
    return res
