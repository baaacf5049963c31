"""``assay.compare.evaluate``: which of several models is better, which are tied, where each one ranks, with every
claim holding at once. The data layer (:mod:`assay.data.compare`), the core (:mod:`assay.compare.core`) and the one
packager (:func:`assay.results.build`)."""

from __future__ import annotations

import math
import re
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from ..data.compare import CompareDesign, prepare_compare
from .. import checks
from ..errors import AssayInputError
from ..results import Result, Statement, build
from ..seeds import resolve_seed
from . import core

__all__ = ["CompareResult", "evaluate", "check_require", "Requirement", "parse_require"]


class CompareResult(Result):
    """Every model's mean score and rank interval (``models``, the main table) and every pair's paired difference
    with its simultaneous interval and verdict (``pairs``), all holding together at the result's level."""

    method = "compare"
    main_table = "models"

    @classmethod
    def _table_names(cls) -> tuple[str, ...]:
        return ("models", "pairs")

    @property
    def models(self) -> pd.DataFrame:
        return self.tables["models"]

    @property
    def pairs(self) -> pd.DataFrame:
        return self.tables["pairs"]

    def statements(self) -> list[Statement]:
        """The result's headline: one sentence per model (best first), then one for the pairs (subject ``"all"``;
        when the models were asked until resolved, how many questions and why it stopped)."""
        p, lv = self.pairs, self.level
        conf = f"{1 - float(lv['delta']):.0%}"
        guarantee = self.params["guarantee"]
        level = (f"every claim at once, at least {conf} at any sample size" if guarantee == "finite" else
                 f"every claim at once, about {conf} (asymptotic)")
        out = []
        live = self.info.get("live")
        # asked live: every model's answers that were not scored as given (unparseable, too long, refused, empty)
        # are said beside its score, with what the policy counted them as
        outcomes = (live or {}).get("outcomes", {})
        for r in self.models.sort_values(["rank_low", "estimate"], ascending=[True, False]).itertuples(index=False):
            rank = f"rank {r.rank_low}" if r.rank_low == r.rank_high else f"rank {r.rank_low}-{r.rank_high}"
            said = ""
            if str(r.model) in outcomes:
                from ..models.outcomes import headline

                said = f"; {headline(outcomes[str(r.model)], str(self.params.get('policy', 'wrong')))}"
            out.append(Statement(f"{r.model}: {r.estimate:.3f} [{r.ci_low:.3f}, {r.ci_high:.3f}], {rank}, tier {r.tier}"
                                 + (", may be the best" if r.may_be_best else "") + said, str(r.model), level))
        counts = p["verdict"].value_counts().to_dict()
        out.append(Statement(f"{len(p)} pairs: {counts.get('a better', 0) + counts.get('b better', 0)} ordered, "
                             f"{counts.get('equivalent', 0)} equivalent within the margin, "
                             f"{counts.get('unresolved', 0)} unresolved; every claim at once at {conf} ({guarantee})"
                             + (f" ({live.get('questions')} questions each, {live.get('stopped')})" if live else ""),
                             "all", level))
        return out

    def summary(self) -> str:
        p = self.params
        lines = [f"compare (assay {self.version}): {len(self.models)} models on {self.n} questions every model "
                 f"answered, {p['guarantee']} guarantee, delta {self.level['delta']:g}"
                 + (f", margin {p['margin']:g}" if p.get("margin") is not None else ""),
                 f"estimand: {self.info.get('estimand')}"]
        lines.append(self.models.to_string(index=False, float_format=lambda x: f"{x:.4f}"))
        shown = self.pairs.drop(columns=[c for c in ("n_items",) if c in self.pairs])
        lines.append(shown.to_string(index=False, float_format=lambda x: f"{x:.4f}"))
        lines += [f"note: {w}" for w in self.warnings]
        return "\n".join(lines)


def _estimand(design: CompareDesign, guarantee: str) -> str:
    unit = "question"
    if design.clusters is not None:
        sizes = np.bincount(design.clusters)
        if guarantee == "finite" and sizes.min() != sizes.max():
            return ("the mean over the population of clusters of each cluster's mean score (each cluster weighted "
                    "equally, whatever its size; the clusters are the sampled units), and its differences")
        unit = "question (clusters of questions are the sampled units)"
    return (f"each model's mean score over the population of questions this file's are a random sample of (each "
            f"{unit} weighted equally; a question's epochs averaged first), and each pair's difference of means")


class Requirement:
    """``A>B`` (A certified better than B) or ``A>=B-0.01`` (A certified not worse than B by more than 0.01)."""

    def __init__(self, text: str, a: str, b: str, margin: float, strict: bool) -> None:
        self.text, self.a, self.b, self.margin, self.strict = text, a, b, margin, strict

    def holds(self, pairs: pd.DataFrame) -> tuple[bool, str]:
        row = pairs[(pairs["model_a"] == self.a) & (pairs["model_b"] == self.b)]
        sign = 1.0
        if row.empty:
            row = pairs[(pairs["model_a"] == self.b) & (pairs["model_b"] == self.a)]
            sign = -1.0
        if row.empty:
            return False, f"{self.text}: no pair {self.a!r} / {self.b!r}"
        lo = float(row["ci_low"].iloc[0]) if sign > 0 else -float(row["ci_high"].iloc[0])
        hi = float(row["ci_high"].iloc[0]) if sign > 0 else -float(row["ci_low"].iloc[0])
        bound = -self.margin
        ok = lo > bound if self.strict else lo >= bound
        return ok, (f"{self.text}: mean({self.a}) - mean({self.b}) in [{lo:.4f}, {hi:.4f}], "
                    + ("certified" if ok else "not certified"))


_REQ = re.compile(r"^\s*(?P<a>.+?)\s*(?P<op>>=|>)\s*(?P<rhs>.+?)\s*$")
_MARGIN = re.compile(r"^(?P<b>.+?)\s*-\s*(?P<m>\d+(?:\.\d*)?|\.\d+)$")


def parse_require(text: str, models: Sequence[str]) -> Requirement:
    """Parse ``A>B`` or ``A>=B-0.01`` against the models' names (a name may itself contain ``-``).

    Parameters
    ----------
    text : str
        The requirement: ``A>B`` (A certified better than B) or ``A>=B-0.01`` (A not worse than B by more than
        0.01).
    models : Sequence of str
        The models' names.

    Returns
    -------
    Requirement
        The parsed requirement.

    Raises
    ------
    AssayInputError
        If ``text`` is not of either form, names a model not in ``models``, or compares a model with itself.

    Examples
    --------
    >>> r = parse_require("gpt-4>=llama-3-0.01", ["gpt-4", "llama-3"])
    >>> r.a, r.b, r.margin, r.strict
    ('gpt-4', 'llama-3', 0.01, False)
    """
    m = _REQ.match(str(text))
    if not m:
        raise AssayInputError(f"--require {text!r}: write A>B (A certified better than B) or A>=B-0.01 (A not worse "
                              "than B by more than 0.01)")
    a, op, rhs = m.group("a"), m.group("op"), m.group("rhs")
    b, margin = rhs, 0.0
    if rhs not in models:
        mm = _MARGIN.match(rhs)
        if mm and mm.group("b") in models:
            b, margin = mm.group("b"), float(mm.group("m"))
    for name in (a, b):
        if name not in models:
            raise AssayInputError(f"--require {text!r}: no model {name!r}; the models are {', '.join(models)}")
    if a == b:
        raise AssayInputError(f"--require {text!r}: a model is compared with another one")
    return Requirement(text, a, b, margin, strict=op == ">")


def check_require(res: CompareResult, requires: Sequence[str]) -> list[tuple[bool, str]]:
    """Each requirement (``A>B``, ``A>=B-0.01``) with whether the result certifies it and a sentence.

    Parameters
    ----------
    res : CompareResult
        The comparison.
    requires : Sequence of str
        The requirements (see :func:`parse_require`).

    Returns
    -------
    list of (bool, str)
        Per requirement, whether it is certified and a sentence with the interval of the difference of means.

    Raises
    ------
    AssayInputError
        If a requirement cannot be parsed (see :func:`parse_require`).
    """
    models = list(res.models["model"])
    return [parse_require(r, models).holds(res.pairs) for r in requires]


def evaluate(
    table: pd.DataFrame,
    *,
    columns: Mapping[str, str] | None = None,
    bounds: Sequence[float] = (0.0, 1.0),
    guarantee: str = "asymptotic",
    delta: float = 0.05,
    margin: float | None = None,
    seed: Any = None,
    n_boot: int = 4000,
    require_complete: bool = False,
) -> CompareResult:
    """Compare several models scored on the same questions: every model's mean and rank, every pair's difference,
    all claims holding together with probability at least 1 - ``delta``.

    Parameters
    ----------
    table : long table, one row per (model, question[, epoch]): ``model``, ``item``, ``score`` and optionally
        ``cluster`` (questions sampled in groups) and ``epoch`` (repeated answers, averaged per question first);
        ``columns`` maps these names to the table's.
    bounds : the scores' range (default [0, 1]: 0/1 or fractional); a score outside it is an error.
    guarantee : ``"asymptotic"`` (paired, cluster-robust, simultaneous by a studentized max-t bootstrap; the
        default) or ``"finite"`` (finite-sample and anytime-valid: betting confidence sequences, a union bound over
        every claim). :mod:`assay.compare.core` says how.
    delta : the error level of the whole family of claims (default 0.05).
    margin : optional equivalence margin m: a pair whose interval contains 0 and lies inside +-m is ``equivalent``.
    seed : the bootstrap's draws (asymptotic) or the order the questions are read in (finite).
    n_boot : bootstrap draws (asymptotic).
    require_complete : refuse a table where some model lacks a question another answered.

    Returns
    -------
    CompareResult with tables ``models`` (model, estimate, ci_low, ci_high, rank_low, rank_high, may_be_best,
    tier) and ``pairs`` (model_a, model_b, estimate = mean(a) - mean(b), ci_low, ci_high, verdict, within_margin,
    n_items, items_to_resolve).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from assay import compare
    >>> rng = np.random.default_rng(0)
    >>> t = pd.DataFrame({"model": np.repeat(["a", "b", "c"], 400), "item": np.tile(np.arange(400), 3),
    ...                   "score": (rng.random(1200) < np.repeat([0.8, 0.6, 0.58], 400)).astype(float)})
    >>> res = compare.evaluate(t, seed=0)
    >>> res.pairs[["model_a", "model_b", "verdict"]].to_string(index=False)
    ... # doctest: +NORMALIZE_WHITESPACE
    'model_a model_b    verdict\\n      a       b   a better\\n      a       c   a better\\n      b       c unresolved'
    """
    if guarantee not in core.GUARANTEES:
        raise AssayInputError(f"guarantee must be one of {', '.join(core.GUARANTEES)}; got {guarantee!r}")
    delta = checks.level(delta)
    if margin is not None and (isinstance(margin, bool) or not isinstance(margin, (int, float))
                               or not (math.isfinite(margin) and margin > 0)):
        raise AssayInputError(f"margin must be a positive number; got {margin!r}")
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 200:
        raise AssayInputError(f"n_boot must be an integer >= 200; got {n_boot!r}")
    seed = resolve_seed(seed)
    design = prepare_compare(table, columns=columns, bounds=bounds, require_complete=require_complete)
    rng = seed.rng()
    fn = core.asymptotic if guarantee == "asymptotic" else core.finite
    kw = {"n_boot": int(n_boot)} if guarantee == "asymptotic" else {}
    out = fn(design.S, design.clusters, delta=float(delta), low=design.low, high=design.high, rng=rng, **kw)
    return _package(design, out, guarantee=guarantee, delta=float(delta), margin=margin, seed=seed,
                    n_boot=int(n_boot), bounds=(design.low, design.high), require_complete=require_complete,
                    columns=dict(columns or {}))


def _package(design: CompareDesign, out: core.CompareCore, *, guarantee, delta, margin, seed, **params) -> CompareResult:
    K = len(design.models)
    a, b = core.pair_index(K)
    names = np.array(design.models, dtype=object)
    verdict, inside = core.verdicts(out.d_lo, out.d_hi, margin)
    rank_low, rank_high, tier = core.ranks_and_tiers(out.est, out.d_lo, out.d_hi)
    n = len(design.items)
    need = core.items_to_resolve(out.d, out.half, out.units, n)
    need = np.where(verdict == "unresolved", need, np.nan)
    models = {"model": list(design.models), "estimate": out.est, "ci_low": out.lo, "ci_high": out.hi,
              "rank_low": rank_low, "rank_high": rank_high, "may_be_best": rank_low == 1, "tier": tier}
    pairs = {"model_a": list(names[a]), "model_b": list(names[b]), "estimate": out.d, "ci_low": out.d_lo,
             "ci_high": out.d_hi, "verdict": list(verdict), "within_margin": inside,
             "n_items": design.shared[a, b].astype(np.int64), "items_to_resolve": need}
    notes = list(design.notes)
    over = np.isfinite(need) & (need > design.n_items_any)
    if over.any():
        notes.append(f"{int(over.sum())} unresolved pair(s) would need more questions than the {design.n_items_any} "
                     "this table holds to resolve a difference of the size observed (items_to_resolve is a planning "
                     "estimate from the observed effect)")
    if guarantee == "asymptotic" and out.units < 30:
        notes.append(f"only {out.units} {'clusters' if design.clusters is not None else 'questions'}: the asymptotic "
                     "intervals use Student t with that many minus one degrees of freedom, and may still be "
                     "optimistic; guarantee='finite' holds at any sample size")
    meaning = ("every model interval, every pair interval and every rank claim hold together with probability "
               + (f"about {1 - delta:.0%} (asymptotic: paired, cluster-robust, studentized max-t bootstrap)"
                  if guarantee == "asymptotic" else
                  f"at least {1 - delta:.0%} at every sample size (finite-sample, anytime-valid betting confidence "
                  "sequences, a union bound over the claims)"))
    info = {"estimand": _estimand(design, guarantee), "units": int(out.units),
            "clusters": design.clusters is not None, "questions_any_model": design.n_items_any,
            "epochs": design.epochs, "critical": float(out.crit)}
    return build(CompareResult, params={"guarantee": guarantee, "margin": margin, **params},
                 n=n, n_meaning="questions every model answered", meaning=meaning, seed=seed,
                 tables={"models": models, "pairs": pairs}, delta=delta, warnings=notes, info=info)
