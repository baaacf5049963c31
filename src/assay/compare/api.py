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
from . import claims, core

__all__ = ["CompareResult", "evaluate", "check_require", "Requirement", "parse_require"]


class CompareResult(Result):
    """Every model's mean score and rank interval (``models``, the main table) and every pair's paired difference
    with its simultaneous interval and verdict (``pairs``); with several tasks, each task's model means and pairs
    (``tasks``, ``task_pairs``). Which claims hold together, and how surely, is the result's guarantee
    (``level["meaning"]``)."""

    method = "compare"
    main_table = "models"

    @classmethod
    def _table_names(cls) -> tuple[str, ...]:
        return ("models", "pairs", "tasks", "task_pairs", "rounds", "draws", "population_models", "population_pairs")

    @property
    def models(self) -> pd.DataFrame:
        return self.tables["models"]

    @property
    def pairs(self) -> pd.DataFrame:
        return self.tables["pairs"]

    @property
    def tasks(self) -> pd.DataFrame | None:
        """Each task's model means with their intervals (None with one task or none)."""
        return self.tables.get("tasks")

    @property
    def task_pairs(self) -> pd.DataFrame | None:
        """Each task's pair differences, intervals and verdicts (None with one task or none)."""
        return self.tables.get("task_pairs")

    def statements(self) -> list[Statement]:
        """The result's headline: one sentence per model (best first), then one for the pairs (subject ``"all"``;
        when the models were asked until resolved, how many questions and why it stopped), each saying what it is
        about (these N questions, or questions like these) and, where a model's answers did not all end well, how
        they ended."""
        p, lv, info = self.pairs, self.level, self.info
        conf = f"{1 - float(lv['delta']):.0%}"
        level = self._level_words(conf)
        where = claims.scope_words(info)
        outcomes = info.get("outcomes") or (info.get("live") or {}).get("outcomes") or {}
        out = []
        for r in self.models.sort_values(["rank_low", "estimate"], ascending=[True, False]).itertuples(index=False):
            rank = f"rank {r.rank_low}" if r.rank_low == r.rank_high else f"rank {r.rank_low}-{r.rank_high}"
            c = outcomes.get(str(r.model))
            not_well = c and (claims.shaky(c) or c.get("cut_off") or sum(
                int(c.get(o, 0)) for o in ("unparseable", "too_long", "refused", "timeout", "transport")))
            said = f"; {claims.outcome_words(c, str(self.params.get('policy') or 'wrong'))}" if not_well else ""
            warn = " (warning: " + claims.shaky(c) + ")" if claims.shaky(c) else ""
            out.append(Statement(f"{r.model}: {r.estimate:.3f} [{r.ci_low:.3f}, {r.ci_high:.3f}] {where}, {rank}, "
                                 f"tier {r.tier}" + (", may be the best" if r.may_be_best else "") + warn + said,
                                 str(r.model), level))
        counts = p["verdict"].value_counts().to_dict()
        ordered = counts.get("a better", 0) + counts.get("b better", 0)
        parts = [f"{ordered} ordered"]
        if counts.get("equal", 0):
            parts.append(f"{counts['equal']} equal")
        if self.params.get("margin") is not None:
            parts.append(f"{counts.get('equivalent', 0)} equivalent within +-{float(self.params['margin']):g}")
        parts.append(f"{counts.get('unresolved', 0)} unresolved")
        live = info.get("live")
        out.append(Statement(f"{plural(len(p), 'pair')} {where}: {', '.join(parts)}; {level}"
                             + (f" ({plural(live.get('questions'), 'question')} each, {live.get('stopped')})"
                                if live and "goal" not in info else ""), "all", level))
        if "goal" in info:  # asked adaptively: which goal, whether it was met, who was asked how much
            asked = ", ".join(f"{r.model} {r.n_asked}" for r in self.models.itertuples(index=False))
            top = [str(m) for m in self.models.loc[self.models["rank_low"] == 1, "model"]]
            tie = (f" (a tie: {', '.join(top)} may each be the best)" if info.get("goal") == "best" and len(top) > 1
                   and info["goal_met"] else "")
            out.append(Statement(("goal met: " if info["goal_met"] else "goal NOT met: ") + info["goal_wanted"]
                                 + f" {where}" + tie + ("" if info["goal_met"] else f" ({info['stopped']})")
                                 + f"; questions asked: {asked} (of the bank's {info['bank_size']})", "goal", level))
        pop = info.get("population")
        if pop:
            out.append(Statement(pop["said"], "population", pop.get("level", level)))
        return out

    def _level_words(self, conf: str) -> str:
        guarantee = self.params["guarantee"]
        if guarantee == "finite":
            return f"every claim at once, at least {conf} at any sample size (finite)"
        if guarantee == "exact":
            return (f"every verdict at once, at least {conf} at this number of questions (exact); the intervals "
                    f"further families, each at least {conf}")
        if "goal" in self.info:
            return f"every claim at once, about {conf} at every round (asymptotic)"
        return (f"every pair claim at once, about {conf} (asymptotic); the model intervals a second family, about "
                f"{conf}")

    def summary(self) -> str:
        p = self.params
        where = (f"asked {self.models['n_asked'].min()}-{self.models['n_asked'].max()} questions each of the bank's "
                 f"{self.info.get('bank_size')} (goal {p.get('goal')})" if "goal" in self.info else
                 f"on {plural(self.n, 'question')} every model answered")
        lines = [f"compare (assay {self.version}): {len(self.models)} models {where}, {p['guarantee']} guarantee, "
                 f"delta {self.level['delta']:g}"
                 + (f", margin {p['margin']:g}" if p.get("margin") is not None else ""),
                 f"estimand: {self.info.get('estimand')}"]
        epochs = epochs_line(self.info.get("epochs") or {})
        if epochs:
            lines.append(epochs)
        lines.append(self.models.to_string(index=False, float_format=lambda x: f"{x:.4f}"))
        shown = self.pairs.drop(columns=[c for c in ("n_items",) if c in self.pairs])
        lines.append(shown.to_string(index=False, float_format=lambda x: f"{x:.4f}"))
        if self.task_pairs is not None:
            lines.append(self.tasks.to_string(index=False, float_format=lambda x: f"{x:.4f}"))
            lines.append(self.task_pairs.to_string(index=False, float_format=lambda x: f"{x:.4f}"))
        lines += [f"note: {w}" for w in self.warnings]
        lines += [("require ok: " if r["certified"] else "require FAILED: ") + r["detail"]
                  for r in self.info.get("require", [])]
        lines.append(f"Guarantee: {self.level['meaning']}.")
        return "\n".join(lines)


def plural(n, noun: str) -> str:
    """``1 pair``, ``3 pairs``."""
    return f"{n} {noun}" + ("" if n == 1 else "s")


def epochs_line(epochs: dict) -> str:
    """How many epochs per question each model's scores average, when any has more than one."""
    if not epochs or all(abs(float(v) - 1.0) < 1e-9 for v in epochs.values()):
        return ""
    return "epochs per question (averaged first): " + ", ".join(f"{m} {float(v):g}" for m, v in epochs.items())


def _estimand(design: CompareDesign, guarantee: str, weight: str) -> str:
    unit = "question"
    if design.clusters is not None:
        sizes = np.bincount(design.clusters)
        if guarantee in ("finite", "exact") and sizes.min() != sizes.max():
            return ("the mean over the population of clusters of each cluster's mean score (each cluster weighted "
                    "equally, whatever its size; the clusters are the sampled units), and its differences")
        unit = "question, clusters of questions the sampled units"
    T = design.n_tasks
    if T > 1 and weight == "tasks":
        return (f"the mean over the {T} tasks of each model's mean score on the population of questions each task's "
                f"are a random sample of (each task weighted equally, whatever its size; each {unit} weighted "
                "equally within its task; a question's epochs averaged first), and each pair's difference")
    pooled = f"; the {T} tasks pooled, each weighing as much as its questions" if T > 1 else ""
    return (f"each model's mean score over the population of questions this file's are a random sample of (each "
            f"{unit} weighted equally{pooled}; a question's epochs averaged first), and each pair's difference of "
            "means")


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
        if self.strict and self.margin == 0:  # A>B is the pair's verdict ('exact': a test sharper than its interval)
            ok = ok or row["verdict"].iloc[0] == ("a better" if sign > 0 else "b better")
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
        raise AssayInputError(f"require={text!r}: write A>B (A certified better than B) or A>=B-0.01 (A not worse "
                              "than B by more than 0.01)")
    a, op, rhs = m.group("a"), m.group("op"), m.group("rhs")
    b, margin = rhs, 0.0
    if rhs not in models:
        mm = _MARGIN.match(rhs)
        if mm and mm.group("b") in models:
            b, margin = mm.group("b"), float(mm.group("m"))
    for name in (a, b):
        if name not in models:
            raise AssayInputError(f"require={text!r}: no model {name!r}; the models are {', '.join(models)}")
    if a == b:
        raise AssayInputError(f"require={text!r}: a model is compared with another one")
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
        Per requirement, whether it is certified and a sentence with the interval of the difference of means. The
        outcomes are also recorded in ``res.info["require"]`` (claim, certified, detail), which the printed summary,
        the JSON and the reports show.

    Raises
    ------
    AssayInputError
        If a requirement cannot be parsed (see :func:`parse_require`).
    """
    models = list(res.models["model"])
    out = [parse_require(r, models).holds(res.pairs) for r in requires]
    if out:
        res.info["require"] = [{"claim": str(r), "certified": bool(ok), "detail": line}
                               for r, (ok, line) in zip(requires, out)]
    return out


def evaluate(
    table: Any = None,
    *,
    columns: Mapping[str, str] | None = None,
    bounds: Sequence[float] = (0.0, 1.0),
    guarantee: str = "asymptotic",
    delta: float = 0.05,
    margin: float | None = None,
    seed: Any = None,
    n_boot: int = 4000,
    require_complete: bool = False,
    weight: str = "questions",
    log_scorer: Sequence[str] = (),
    runs: Sequence[str] = (),
    journal: Any = None,
    bank: Any = None,
    scorer: Any = None,
    policy: str | None = None,
) -> CompareResult:
    """Compare several models scored on the same questions: every model's mean and rank, every pair's difference,
    with the claims holding together (``guarantee`` says how surely).

    Parameters
    ----------
    table : long table, one row per (model, question[, epoch]): ``model``, ``item``, ``score`` and optionally
        ``task`` (a question is a (task, item): two tasks never share a question), ``cluster`` (questions sampled
        in groups), ``epoch`` (repeated answers, averaged per question first) and ``hash`` (the question's text
        hash: a key whose hash differs between rows is refused); ``columns`` maps these names to the table's. Or
        the sources to read it from (:func:`assay.data.sources.read_sources`): ``{"plain": "logs/a", "brief":
        "logs/b"}``, a path, or a list of paths and ``NAME=PATH`` strings (score files, lm-eval / inspect / HELM
        logs), as the command line reads them.
    bounds : the scores' range (default [0, 1]: 0/1 or fractional); a score outside it is an error.
    guarantee : ``"asymptotic"`` (the default: paired, cluster-robust; the pair claims, with the verdicts, rank
        intervals and tiers read off them, simultaneous by a studentized max-t, and the model intervals a second
        family; degenerate claims exact) or ``"finite"`` (finite-sample and anytime-valid: betting confidence
        sequences, one family, a union bound over every claim). :mod:`assay.compare.core` says how.
    delta : the error level of each family of claims (default 0.05).
    margin : optional equivalence margin m: a pair whose interval contains 0 and lies inside +-m is ``equivalent``.
    seed : the bootstrap's draws (asymptotic) or the order the questions are read in (finite).
    n_boot : bootstrap draws (asymptotic).
    require_complete : refuse a table where some model lacks a question another answered.
    weight : with several tasks, how the pooled comparison weighs them: ``"questions"`` (each question equally, the
        default: a task weighs as much as its questions) or ``"tasks"`` (each task equally). Either way the result
        also has a per-task view (``tasks``, ``task_pairs``), simultaneous over the tasks and their claims.
    log_scorer : the scorer of each log task scored several ways (an inspect scorer, an lm-eval ``METRIC,FILTER``,
        a metric or filter that settles it, a HELM metric).
    runs, journal, bank, scorer, policy : journal runs to compare too (each one model, named by its run id; a parent
        run id stands for the runs inside it), the journal, the bank they asked, and how their answers are scored
        (default: what each run recorded, else ``exact`` and ``wrong``).

    Returns
    -------
    CompareResult with tables ``models`` (model, estimate, ci_low, ci_high, rank_low, rank_high, may_be_best,
    tier, answered, exact) and ``pairs`` (model_a, model_b, estimate = mean(a) - mean(b), ci_low, ci_high, verdict,
    within_margin, n_items, items_to_resolve, exact); with several tasks ``tasks`` and ``task_pairs``.

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
    if weight not in WEIGHTS:
        raise AssayInputError(f"weight must be one of {', '.join(WEIGHTS)}; got {weight!r}")
    delta = checks.level(delta)
    if margin is not None and (isinstance(margin, bool) or not isinstance(margin, (int, float))
                               or not (math.isfinite(margin) and margin > 0)):
        raise AssayInputError(f"margin must be a positive number; got {margin!r}")
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 200:
        raise AssayInputError(f"n_boot must be an integer >= 200; got {n_boot!r}")
    seed = resolve_seed(seed)
    read_from = None
    if isinstance(table, pd.DataFrame) and runs:
        raise AssayInputError("runs= reads journal runs as sources: give the other sources as paths ({name: path}) "
                              "beside them, not a table")
    if not isinstance(table, pd.DataFrame) or runs:
        from ..data.sources import describe_sources, read_sources

        table = read_sources(table, columns=columns, log_scorer=log_scorer, runs=runs, journal=journal, bank=bank,
                             scorer=scorer, policy=policy)
        read_from, columns = describe_sources(table), None
    elif log_scorer:
        raise AssayInputError("log_scorer= picks a scorer of a log: give the sources (paths, or {name: path}), not a "
                              "table")
    table, outcomes = _scored_only(table, (columns or {}).get("model", "model"))
    design = prepare_compare(table, columns=columns, bounds=bounds, require_complete=require_complete)
    rng = seed.rng()
    T = design.n_tasks
    by_tasks = T > 1 and weight == "tasks"
    if by_tasks and guarantee == "exact":
        raise AssayInputError("guarantee='exact' tests the questions pooled (weight='questions'); to weigh each task "
                              "equally use guarantee='finite' or 'asymptotic' (each task's own comparison is in the "
                              "per-task tables under any guarantee)")
    out = _run(design, np.arange(len(design.items)), guarantee, float(delta), rng, int(n_boot), by_tasks, margin)
    res = _package(design, out, guarantee=guarantee, delta=float(delta), margin=margin, seed=seed,
                   n_boot=int(n_boot), bounds=(design.low, design.high), require_complete=require_complete,
                   columns=dict(columns or {}), weight=weight)
    if T > 1:
        _per_task(res, design, guarantee, float(delta), rng, int(n_boot), margin)
    if read_from is not None:
        res.info.update(read_from)
    _say_outcomes(res, outcomes, design)
    return res


def _say_outcomes(res: CompareResult, outcomes: dict, design: CompareDesign) -> None:
    """Each model's outcomes beside its claims (a column of the models table, ``info["outcomes"]``), the warnings
    they call for, and the pairs that scored the same on every question."""
    res.info["outcomes"] = {m: outcomes.get(str(m)) for m in design.models}
    res.tables["models"]["outcomes"] = [claims.outcome_words(outcomes.get(m)) for m in design.models]
    a, b = core.pair_index(len(design.models))
    same = claims.identical_pairs(design.S, a, b)
    notes = claims.outcome_notes(res.info["outcomes"], res.models, res.pairs,
                                 policy=str(res.params.get("policy") or "wrong"))
    notes += claims.equal_notes(res.pairs, same, res.pairs["n_items"].to_numpy(), "population")
    res.info["warnings"] = list(dict.fromkeys([*res.warnings, *notes]))


def _scored_only(table: pd.DataFrame, model: str = "model") -> tuple[pd.DataFrame, dict]:
    """Each model's outcome counts (:func:`assay.compare.claims.tally`: None where its source records none), and
    the table without the rows that have no score (a timeout, a failure under policy ``missing``), counted."""
    counts = claims.tally(table, model)
    if "status" not in table.columns or "score" not in table.columns:
        return table, counts
    return table[table["score"].notna()], counts


#: how several tasks are weighed in the pooled comparison
WEIGHTS = ("questions", "tasks")


def _run(design: CompareDesign, cols: np.ndarray, guarantee: str, delta: float, rng, n_boot: int,
         by_tasks: bool, margin: float | None = None) -> core.CompareCore:
    """The core on the questions ``cols`` of the design (clusters recoded), tasks weighed equally when
    ``by_tasks``."""
    S = design.S[:, cols]
    clusters = None
    if design.clusters is not None:
        clusters = np.unique(design.clusters[cols], return_inverse=True)[1].astype(np.int64)
    strata = weights = None
    if by_tasks:
        strata = np.unique(design.tasks[cols], return_inverse=True)[1].astype(np.int64)
        weights = 1.0 / np.bincount(strata)[strata]
    if guarantee == "asymptotic":
        return core.asymptotic(S, clusters, delta=delta, low=design.low, high=design.high, rng=rng, n_boot=n_boot,
                               weights=weights, strata=strata)
    if guarantee == "exact":
        from .exact import exact

        return exact(S, clusters, delta=delta, low=design.low, high=design.high, rng=rng, margin=margin)
    return core.finite(S, clusters, delta=delta, low=design.low, high=design.high, rng=rng, strata=strata)


def _verdicts(out: core.CompareCore, margin: float | None) -> tuple[np.ndarray, np.ndarray]:
    """Each pair's verdict and whether it is inside the margin: from the tests where the guarantee has them
    (``exact``), else from the pair intervals."""
    if out.better is None:
        return core.verdicts(out.d_lo, out.d_hi, margin)
    v = np.full(len(out.better), "unresolved", dtype=object)
    v[out.better > 0] = "a better"
    v[out.better < 0] = "b better"
    v[(out.better == 0) & out.equivalent] = "equivalent"
    return v, np.asarray(out.equivalent, bool)


def _better_matrix(out: core.CompareCore) -> np.ndarray | None:
    """(K, K) booleans, [i, j] when i is certified better than j by a test (None: read off the intervals)."""
    if out.better is None:
        return None
    K = len(out.est)
    a, b = core.pair_index(K)
    m = np.zeros((K, K), bool)
    m[a[out.better > 0], b[out.better > 0]] = True
    m[b[out.better < 0], a[out.better < 0]] = True
    return m


def _meaning(guarantee: str, delta: float, K: int) -> str:
    P = K * (K - 1) // 2
    conf = f"{1 - delta:.0%}"
    if guarantee == "asymptotic":
        pairs = ("the pair interval, with its verdict and the rank intervals and tiers, holds" if P == 1 else
                 f"the {P} pair intervals, with their verdicts and the rank intervals and tiers, hold together")
        return (f"{pairs} with probability about {conf}, and the {K} model intervals hold together, as a second "
                f"family, about {conf} (asymptotic: paired, cluster-robust, studentized max-t over each family; a "
                f"claim with fewer than {core.MIN_DIFFER} answers off the common value gets an exact binomial "
                "interval; each pair interval is cut to what its two model intervals imply)")
    if guarantee == "exact":
        nulls = "the pairs' one-sided nulls" if P > 1 else "the pair's two one-sided nulls"
        return (f"every verdict, rank interval and tier hold together with probability at least {conf} at this number "
                f"of questions (finite-sample, not anytime: Holm over {nulls}, each an exact test: McNemar's for 0/1 "
                f"scores, fixed-n betting otherwise); as second and third families, "
                + (f"the {P} pair intervals hold together at least {conf} (each at delta / {P})" if P > 1 else
                   f"the pair interval holds at least {conf}")
                + f", and the {K} model intervals at least {conf} (each at delta / {K}: Clopper-Pearson for 0/1 "
                "scores, fixed-n betting otherwise)")
    return (f"every model interval, pair interval, verdict, rank interval and tier hold together with probability at "
            f"least {conf} at every sample size (finite-sample, anytime-valid betting confidence sequences, one "
            f"family: a union bound over the {K + P} claims)")


def _package(design: CompareDesign, out: core.CompareCore, *, guarantee, delta, margin, seed,
             **params) -> CompareResult:
    K = len(design.models)
    a, b = core.pair_index(K)
    names = np.array(design.models, dtype=object)
    verdict, inside = _verdicts(out, margin)
    rank_low, rank_high, tier = core.ranks_and_tiers(out.est, out.d_lo, out.d_hi, better=_better_matrix(out))
    n = len(design.items)
    need = core.items_to_resolve(out.d, out.half, out.units, n)
    need = np.where(verdict == "unresolved", need, np.nan)
    exact_m = np.zeros(K, bool) if out.exact_models is None else out.exact_models
    exact_d = np.zeros(len(a), bool) if out.exact_pairs is None else out.exact_pairs
    models = {"model": list(design.models), "estimate": out.est, "ci_low": out.lo, "ci_high": out.hi,
              "rank_low": rank_low, "rank_high": rank_high, "may_be_best": rank_low == 1, "tier": tier,
              "answered": [int(design.answered.get(m, n)) for m in design.models], "exact": exact_m}
    pairs = {"model_a": list(names[a]), "model_b": list(names[b]), "estimate": out.d, "ci_low": out.d_lo,
             "ci_high": out.d_hi, "verdict": list(verdict), "within_margin": inside,
             "n_items": np.full(len(a), n, dtype=np.int64), "items_to_resolve": need, "exact": exact_d}
    notes = list(design.notes)
    pool = params.pop("pool_phrase", f"the {design.n_items_any:,} questions in the data")
    over = np.isfinite(need) & (need > design.n_items_any)
    if over.any():
        notes.append(f"{plural(int(over.sum()), 'unresolved pair')} would need more questions than {pool} to resolve "
                     "a difference of the size observed (items_to_resolve is a planning estimate from the observed "
                     "effect)")
    if exact_m.any() or exact_d.any():
        shown = [str(m) for m in names[exact_m]] + [f"{x} / {y}" for x, y in zip(names[a][exact_d], names[b][exact_d])]
        notes.append(f"{plural(len(shown), 'claim')} with fewer than {core.MIN_DIFFER} answers off the common value "
                     f"(a model almost always right or wrong, two models that almost always agree) "
                     f"{'gets' if len(shown) == 1 else 'get'} an exact binomial interval instead of a standard "
                     f"error: {', '.join(shown[:6])}"
                     + (" ..." if len(shown) > 6 else ""))
    if out.better is not None:  # exact: a verdict comes from its test, sharper than the pair's interval
        wide = (out.better != 0) & (out.d_lo <= 0) & (out.d_hi >= 0)
        if wide.any():
            shown = [f"{x} / {y}" for x, y in zip(names[a][wide], names[b][wide])]
            one = len(shown) == 1
            notes.append(f"{plural(len(shown), 'pair')} ordered by {'its' if one else 'their'} exact test "
                         f"({out.tests}) though {'its interval contains' if one else 'their intervals contain'} 0: the "
                         f"intervals are a family of their own, less sharp than the tests: {', '.join(shown[:6])}"
                         + (" ..." if len(shown) > 6 else ""))
    if guarantee == "asymptotic" and design.clusters is not None and out.units < 20:
        notes.append(f"only {out.units} clusters: the intervals use Student t (multivariate, {out.df:g} degrees of "
                     "freedom, fewer for a claim whose variance sits on a few clusters) and may still be "
                     "optimistic; guarantee='exact' holds at this number of clusters")
    elif guarantee == "asymptotic" and design.clusters is None and out.units < 30:
        notes.append(f"only {out.units} questions: the asymptotic intervals may be optimistic (claims with few "
                     "answers off the common value are exact); guarantee='exact' holds at this number of questions")
    by_tasks = design.n_tasks > 1 and params.get("weight") == "tasks"
    if design.n_tasks > 1:
        sizes = np.bincount(design.tasks, minlength=design.n_tasks)
        shown = ", ".join(f"{t} {s}" for t, s in zip(design.task_labels, sizes))
        notes.append(f"{design.n_tasks} tasks (questions: {shown}) " + (
            "weighted equally in the pooled comparison (--weight tasks)" if by_tasks else
            "pooled with each question weighted equally (--weight tasks weighs each task equally)")
            + "; each task's own comparison is in the per-task tables")
    info = {"estimand": _estimand(design, guarantee, str(params.get("weight", "questions"))), "scope": "population",
            "units": int(out.units),
            "clusters": design.clusters is not None, "questions_any_model": design.n_items_any,
            "epochs": design.epochs, "critical": float(out.crit),
            "per_claim_level": {"pairs": float(out.alpha_pairs), "models": float(out.alpha_models),
                                **({"exact_pairs": float(out.alpha_exact_pairs)} if exact_d.any() else {}),
                                **({"exact_models": float(out.alpha_exact_models)} if exact_m.any() else {})},
            "families": ("pairs (with verdicts, ranks and tiers); models" if guarantee == "asymptotic" else
                         "verdicts (with ranks and tiers); pair intervals; model intervals" if guarantee == "exact"
                         else "one: every model and pair claim"),
            "df": out.df}
    if out.tests is not None:
        info["tests"] = out.tests
    if design.task_labels is not None:
        info["task_labels"] = list(design.task_labels)
    return build(CompareResult, params={"guarantee": guarantee, "margin": margin, **params},
                 n=n, n_meaning="questions every model answered", meaning=_meaning(guarantee, delta, K),
                 seed=seed, tables={"models": models, "pairs": pairs}, delta=delta, warnings=notes, info=info)


def _per_task(res: CompareResult, design: CompareDesign, guarantee: str, delta: float, rng, n_boot: int,
              margin: float | None) -> None:
    """Each task's own comparison, simultaneous over the tasks: each task at 1 - (1 - delta)^(1/T) (asymptotic; the
    tasks' questions are independent samples, so the T families hold together about 1 - delta) or delta / T (finite:
    a union bound). A task with fewer than 2 units is left out, with a note."""
    T = design.n_tasks
    d_t = 1.0 - (1.0 - delta) ** (1.0 / T) if guarantee == "asymptotic" else delta / T  # exact, finite: a union
    a, b = core.pair_index(len(design.models))
    frames_m, frames_p, skipped = [], [], []
    names = np.array(design.models, dtype=object)
    for t, label in enumerate(design.task_labels):
        cols = np.flatnonzero(design.tasks == t)
        units = len(cols) if design.clusters is None else len(np.unique(design.clusters[cols]))
        if units < 2:
            skipped.append(label)
            continue
        out = _run(design, cols, guarantee, d_t, rng, n_boot, False, margin)
        verdict, _ = _verdicts(out, margin)
        frames_m.append(pd.DataFrame({"task": label, "model": names, "estimate": out.est, "ci_low": out.lo,
                                      "ci_high": out.hi, "n_items": len(cols)}))
        frames_p.append(pd.DataFrame({"task": label, "model_a": names[a], "model_b": names[b], "estimate": out.d,
                                      "ci_low": out.d_lo, "ci_high": out.d_hi, "verdict": verdict,
                                      "n_items": len(cols)}))
    empty_m = ["task", "model", "estimate", "ci_low", "ci_high", "n_items"]
    empty_p = ["task", "model_a", "model_b", "estimate", "ci_low", "ci_high", "verdict", "n_items"]
    rows_m = pd.concat(frames_m, ignore_index=True) if frames_m else pd.DataFrame(columns=empty_m)
    rows_p = pd.concat(frames_p, ignore_index=True) if frames_p else pd.DataFrame(columns=empty_p)
    res.tables["tasks"] = rows_m
    res.tables["task_pairs"] = rows_p
    res.info["per_task_level"] = d_t
    res.level["meaning"] += (
        f"; per task: every task's model and pair claims hold together over the {T} tasks, each task's families at "
        + (f"1 - (1 - delta)^(1/{T}) = {1 - d_t:.4f} (the tasks' questions are independent samples)"
           if guarantee == "asymptotic" else f"delta / {T} (a union bound)"))
    if skipped:
        res.info["warnings"] = res.warnings + [f"task(s) {', '.join(skipped)}: fewer than 2 questions (or clusters) "
                                               "every model answered, left out of the per-task tables"]
