"""Ties resolved by asking only what is needed: several models asked questions of a bank, round by round, each
model only as long as the goal needs it, the next questions drawn where they decide the open claims, every request
journaled, until the goal is met, the budget is spent or the bank runs out.

:func:`query_until_resolved` asks models behind endpoints; :func:`replay` replays a complete score table as if its
models were live, through the same engine (:mod:`assay.compare.adaptive`, where the design, the increments, the
guarantees and the goals are described), and says what a uniform run would have asked.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np
import pandas as pd

from ..data.bank import read_bank
from ..data.compare import read_score_table
from .. import checks
from ..errors import AssayInputError
from ..seeds import resolve_seed
from . import adaptive, core
from .api import CompareResult, _meaning, plural

__all__ = ["query_until_resolved", "replay", "Replay", "read_history"]


def _positive(name: str, v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
        raise AssayInputError(f"{name} must be a positive integer; got {v!r}")
    return int(v)


def _check_common(goal, k, guarantee, margin, K: int, floor: Any = adaptive.FLOOR) -> tuple[str, int]:
    if isinstance(floor, bool) or not isinstance(floor, (int, float, np.number)) or not 0 < float(floor) <= 1:
        raise AssayInputError(f"floor must be a number in (0, 1] (the share of each draw spread uniformly); got "
                              f"{floor!r}")
    if guarantee not in adaptive.GUARANTEES:
        raise AssayInputError(adaptive.NOT_EXACT if guarantee == "exact" else
                              f"guarantee must be one of {', '.join(adaptive.GUARANTEES)}; got {guarantee!r}")
    if margin is not None:
        if isinstance(margin, bool) or not isinstance(margin, (int, float, np.number)) or not 0 < float(margin) < 1:
            raise AssayInputError(f"margin must be a number in (0, 1) (a difference of mean scores); got {margin!r}")
    return adaptive.check_goal(goal, k, K)


def read_history(history: Any, bank_ids: list[str]) -> Any:
    """The factor model a history gives for a bank: a shipped FAQ pack's name, a fitted
    :class:`assay.faq.FactorModel`, or a past 0/1 score table (earlier models x question ids: a wide table, a long
    ``model, item, score`` one, or a CSV / Parquet file of either), fitted with FAQ's default fit (cached).

    Raises :class:`AssayInputError` for a table with missing or non-0/1 scores (FAQ's factor model is Bernoulli) or
    one that shares fewer than half of the bank's question ids."""
    from ..datasets.faq_packs import faq_pack_factors, faq_packs
    from ..faq import FactorModel, fitted_factors

    if isinstance(history, str) and history in faq_packs():
        fm = faq_pack_factors(history)
    elif isinstance(history, FactorModel):
        fm = fitted_factors(history)
    else:
        from ..data.faq import as_matrix

        table = read_score_table(history, "history")
        try:
            mat = as_matrix(table, "history", allow_missing=False)
        except AssayInputError as e:
            raise AssayInputError(f"{e} (the history feeds FAQ's factor model, which is Bernoulli: it needs every "
                                  "earlier model's 0/1 score on every question it holds)") from None
        fm = fitted_factors(table if not isinstance(table, str) else mat)
    ids = {str(c) for c in fm.col_labels_}
    shared = sum(str(i) in ids for i in bank_ids)
    if 2 * shared < len(bank_ids):
        raise AssayInputError(f"the history shares {shared} of the bank's {len(bank_ids)} question ids; it needs at "
                              "least half of them (the ids must match the bank's `id` column)")
    return fm


def _items_to_resolve(d, half, n, N):
    """Further questions each pair would need to resolve a difference of the size observed: the half-width shrinks
    like sqrt((1 - n/N) / n) (sampling without replacement from the bank), so n' solves
    1/n' - 1/N = (1/n - 1/N) (|d| / half)^2; at most the questions left."""
    d, half, n = (np.asarray(x, dtype=float) for x in (d, half, n))
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = 1.0 / N + (1.0 / np.maximum(n, 1) - 1.0 / N) * (np.abs(d) / half) ** 2
        need = np.ceil(1.0 / inv) - n
    need = np.where(np.abs(d) > 0, np.clip(need, 0, N - n), N - n)
    return need


def _package(run: adaptive.AdaptiveRun, names: list[str], item_ids: list[str], *, goal: str, k: int | None,
             guarantee: str, delta: float, margin: float | None, seed, budget: int, batch: int, N: int,
             history: str | None, **params) -> CompareResult:
    from ..results import build

    K = len(names)
    a, b = core.pair_index(K)
    nm = np.array(names, dtype=object)
    verdict, inside = core.verdicts(run.d_lo, run.d_hi, margin)
    better = run.better
    implied = (verdict == "unresolved") & (better[a, b] | better[b, a])
    rank_low, rank_high, tier = core.ranks_and_tiers(np.nan_to_num(run.est), run.d_lo, run.d_hi, better=better)
    half = (run.d_hi - run.d_lo) / 2.0
    need = _items_to_resolve(run.d, half, run.pair_n, N)
    need = np.where((verdict == "unresolved") & ~implied, need, np.nan)
    models = {"model": names, "estimate": run.est, "ci_low": run.lo, "ci_high": run.hi, "rank_low": rank_low,
              "rank_high": rank_high, "may_be_best": rank_low == 1, "tier": tier, "answered": run.n_asked,
              "exact": run.n_asked == N, "n_asked": run.n_asked, "left_round": run.left_round,
              "left_reason": run.left_reason, "status": [s or "" for s in run.status]}
    pairs = {"model_a": list(nm[a]), "model_b": list(nm[b]), "estimate": run.d, "ci_low": run.d_lo,
             "ci_high": run.d_hi, "verdict": list(verdict), "within_margin": inside, "n_items": run.pair_n,
             "items_to_resolve": need, "exact": run.pair_n == N, "implied": implied}
    T = len(run.order)
    draws = pd.DataFrame({"draw": np.arange(1, T + 1), "round": run.draw_round + 1,
                          "item": [item_ids[i] for i in run.order], "q": run.q,
                          "questions_left": N - np.arange(T)})
    rows = []
    for rr in run.rounds:
        for m in rr["models"]:
            rows.append({"round": rr["round"] + 1, "model": names[m], "questions": rr["questions"]})
    rounds = pd.DataFrame(rows, columns=["round", "model", "questions"])
    what = {"all": "every pair ordered or equivalent within the margin" if margin is not None else
            "every pair ordered or known equal",
            "best": "the best model certified", "top-k": f"the top {k} certified"}[goal]
    notes = []
    if implied.any():
        notes.append(f"{plural(int(implied.sum()), 'pair')} ordered through other models (a > b and b > c give "
                     "a > c, every claim holding at once) though its own interval contains 0: `implied` in pairs")
    if guarantee == "asymptotic":
        notes.append(f"asymptotic: confidence sequences from a martingale central limit theorem, reported after "
                     f"{adaptive.BURN_IN} questions with a variance floor; guarantee='finite' holds at any sample size")
    info = {"estimand": (f"each model's mean score over the {N} questions of the bank, asked without replacement "
                         "(each question weighted equally), and each pair's difference"), "scope": "bank",
            "goal": goal, "k": k, "goal_met": bool(run.met), "stopped": run.reason, "goal_wanted": what,
            "questions": int(T), "bank_size": N, "history": history,
            "per_claim_level": {"pairs": float(run.alpha), "models": float(run.alpha)},
            "families": "one: every model and pair claim (a union bound)", "units": int(T)}
    meaning = _meaning("finite", delta, K) if guarantee == "finite" else (
        f"every model interval, pair interval, verdict, rank interval and tier hold together with probability about "
        f"{1 - delta:.0%} at every round (asymptotic confidence sequences, Waudby-Smith et al. 2024, Bonferroni over "
        f"the {K + len(a)} claims)")
    res = build(CompareResult, params={"guarantee": guarantee, "margin": margin, "goal": goal, "k": k,
                                       "queried": int(T), "budget": budget, "bank_size": N, "batch": batch,
                                       "resolved": bool(run.met), **params},
                n=int(run.n_asked.min()) if K else 0, n_meaning="questions every model answered",
                meaning=meaning, seed=seed,
                tables={"models": models, "pairs": pairs, "rounds": rounds, "draws": draws}, delta=delta,
                warnings=notes, info=info)
    return res


def _posterior(fm, item_ids, K: int):
    """FAQ's factor model as the engine's predictor (None without a history)."""
    if fm is None:
        return None
    from ..faq import FactorPosterior

    return FactorPosterior(fm, item_ids, K)


def _engine(ask, names, N, *, goal, k, guarantee, margin, delta, budget, batch, seed, fm, item_ids, floor,
            progress, record=None, max_memory=adaptive.MAX_MEMORY):
    K = len(names)
    pred = _posterior(fm, item_ids, K)
    return adaptive.run(ask, K, N, goal=goal, k=k, guarantee=guarantee, margin=margin, delta=delta, budget=budget,
                        batch=batch, rng=seed.rng(), predictor=pred, floor=floor, progress=progress, record=record,
                        max_memory=max_memory)


def query_until_resolved(
    models: Mapping[str, Any],
    bank: Any,
    *,
    goal: str = "all",
    k: int | None = None,
    guarantee: str = "finite",
    history: Any = None,
    margin: float | None = None,
    delta: float = 0.05,
    budget: int = 100,
    batch: int = 10,
    seed: Any = 0,
    scorer: str = "exact",
    policy: str = "wrong",
    journal: Any = None,
    run_id: str = "compare",
    concurrency: int = 4,
    timeout: float | None = 60.0,
    progress: Callable[[int, int, int], None] | None = None,
    answered: Callable[[str, int, int], None] | None = None,
    banks: Mapping[str, Any] | None = None,
    run_ids: Mapping[str, str] | None = None,
    floor: float = adaptive.FLOOR,
    max_memory: float | None = adaptive.MAX_MEMORY,
) -> CompareResult:
    """Ask ``models`` (name -> :class:`~assay.models.Model`) questions of ``bank`` until the goal is met.

    Parameters
    ----------
    bank : table (or file) with ``id``, ``prompt``, ``reference`` (and a ``scorer`` column when ``scorer`` names
        it). The models in play are asked the same questions, drawn without replacement (:mod:`.adaptive`).
    goal, k : ``"all"`` (every pair ordered or equivalent within the margin), ``"best"`` (the best model certified;
        with a margin, the models that may be best equivalent within it) or ``"top-k"`` with ``k``.
    guarantee : ``"finite"`` (betting confidence sequences, valid at any sample size) or ``"asymptotic"``.
    history : a past 0/1 score table on the bank's ids, a shipped FAQ pack name or a fitted FactorModel: the next
        questions are drawn where it predicts the open pairs disagree (each question left keeping at least
        ``floor`` / questions left); validity does not depend on it.
    margin, delta : the equivalence margin and the error level of every claim at once.
    budget : at most this many questions per model (at most the bank); ``batch``: questions per round.
    scorer, policy : how each answer is scored (:func:`assay.models.scoring.score`); policy ``"wrong"`` or
        ``"correct"`` (every question needs a score).
    journal, run_id : every request is journaled under ``run_id/<model>``, every round's draws (items and their
        probabilities) as a note of ``run_id``: the same call resumes, reading every answer already paid for. The
        runs record the scorer, the policy and the bank's fingerprint, which :func:`assay.data.sources.read_sources`
        reads them back with.
    progress : called as ``progress(questions asked, budget, pairs the goal still needs)`` after each round.
    answered : called as ``answered(model, answers done, of)`` after each answer within a round (a round of slow
        models takes minutes: this says it is moving).
    banks : optional per model (name -> table), the same questions with that model's own prompts;
        ``run_ids``: optional per model journal runs (default ``run_id/<model>``).
    max_memory : refuse up front a run whose estimated peak memory is above it (bytes; None: no limit).

    Returns
    -------
    CompareResult: ``models`` (with ``n_asked``, ``left_round``, ``left_reason``), ``pairs``, ``rounds`` (the
    questions asked per round and model) and ``draws`` (every draw's question and probability);
    ``info["stopped"]`` says why the run stopped and ``info["goal_met"]`` whether the goal was met.
    """
    from ..models.journal import open_journal

    if not isinstance(models, Mapping) or len(models) < 2:
        raise AssayInputError("compare needs at least 2 models (a mapping name -> model)")
    if policy not in ("wrong", "correct"):
        raise AssayInputError(f"policy must be 'wrong' or 'correct' here (every question needs a score); got {policy!r}")
    budget, batch = _positive("budget", budget), _positive("batch", batch)
    names = [str(n) for n in models]
    goal, kk = _check_common(goal, k, guarantee, margin, len(names), floor)
    k = kk if goal == "top-k" else None
    delta = checks.level(delta)
    asker = _Asker(models, names, bank, banks, scorer, policy, run_id, run_ids, concurrency, timeout)
    N, item_ids = len(asker.bank), [str(i) for i in asker.bank.index]
    fm = None if history is None else read_history(history, item_ids)
    budget = min(budget, N)
    seed = resolve_seed(seed)
    # what decides the draws and the verdicts (the budget only where the run stops: a rerun may ask further, or read
    # a shorter run back from the journal)
    settings = {"goal": goal, "k": k, "guarantee": guarantee, "margin": margin, "delta": float(delta),
                "batch": batch, "seed": seed.recorded, "floor": float(floor),
                "history": None if fm is None else fm.fingerprint(), "models": names, "bank": N}
    j, own_j = open_journal(journal)
    try:
        asker.journal, asker.answered = j, answered
        _start(j, run_id, settings)
        ar = _engine(asker.ask, names, N, goal=goal, k=k, guarantee=guarantee, margin=margin, delta=float(delta),
                     budget=budget, batch=batch, seed=seed, fm=fm, item_ids=item_ids, floor=floor, progress=progress,
                     record=asker.record, max_memory=max_memory)
        asker.finish(ar)
        if j is not None:
            j.finish_run(run_id, status="done")
    finally:
        if own_j and j is not None:
            j.close()
    res = _package(ar, names, item_ids, goal=goal, k=k, guarantee=guarantee, delta=float(delta), margin=margin,
                   seed=seed, budget=budget, batch=batch, N=N, history=None if fm is None else
                   getattr(fm, "pack_", None) or "a score table", scorer=str(scorer), policy=policy, run_id=run_id)
    res.info["live"] = {"requests": asker.requests, "outcomes": asker.counts, "questions": int(len(ar.order)),
                        "stopped": _stopped_phrase(ar, goal, k)}
    _say_outcomes(res, ar, names, {n: {**asker.counts[n], "cut_off": asker.cut[n]} for n in names}, policy)
    _population_claims(res, ar, names, item_ids, seed=seed, delta=float(delta), margin=margin, history=fm is not None)
    return res


def _say_outcomes(res: CompareResult, ar: adaptive.AdaptiveRun, names: list[str], counts: dict, policy: str) -> None:
    """Each model's outcomes beside its claims, the warnings they call for, and the pairs identical on the bank."""
    from . import claims

    res.info["outcomes"] = {n: dict(counts.get(n) or {}) for n in names}
    res.tables["models"]["outcomes"] = [claims.outcome_words(res.info["outcomes"][n]) for n in names]
    a, b = core.pair_index(len(names))
    same = claims.identical_pairs(ar.S, a, b) & (res.pairs["verdict"] == "equal").to_numpy()
    notes = claims.outcome_notes(res.info["outcomes"], res.models, res.pairs, policy=policy)
    notes += claims.equal_notes(res.pairs, same, res.pairs["n_items"].to_numpy(), "bank")
    res.info["warnings"] = list(dict.fromkeys([*res.warnings, *notes]))


def _population_claims(res: CompareResult, ar: adaptive.AdaptiveRun, names: list[str], item_ids: list[str], *,
                       seed, delta: float, margin: float | None, history: bool) -> None:
    """Beside the claims about the bank, those the same answers support about questions like these (the bank as a
    sample of a population, as ``assay compare --run`` reads them: asymptotic), when every model answered the same
    questions drawn without a history and the run did not stop on what it saw; otherwise why none is shown."""
    from .api import evaluate

    N = len(item_ids)
    n = ar.n_asked
    why = None
    if history:
        why = ("the draws were weighted by a history, so the questions asked are not a simple random sample of the "
               "bank")
    elif n.min() != n.max():
        why = "models left after different numbers of questions (each left once its claims were settled)"
    elif n.min() < N and ar.met:
        why = ("the run stopped once its goal was met, on what it saw, so its questions are not a sample of a size "
               "fixed in advance")
    elif n.min() < 2:
        why = "fewer than 2 questions were asked"
    if why is not None:
        res.info["population"] = {"shown": False, "why": why,
                                  "said": f"no claim about questions like these is shown: {why}"}
        return
    cols = np.sort(ar.order[: int(n.min())])
    S = ar.S[:, cols]
    table = pd.DataFrame({"model": np.repeat(names, len(cols)), "item": np.tile([item_ids[i] for i in cols],
                                                                                len(names)), "score": S.ravel()})
    pop = evaluate(table, guarantee="asymptotic", delta=delta, margin=margin, seed=seed)  # scorers' scores: [0, 1]
    v = pop.pairs["verdict"].value_counts().to_dict()
    said = (f"on questions like these (the {len(cols):,} questions as a sample of a population; the same answers, as "
            f"assay compare --run reads them, asymptotic): {v.get('a better', 0) + v.get('b better', 0)} of "
            f"{len(pop.pairs)} pairs ordered, {v.get('unresolved', 0)} unresolved"
            + (f", {v.get('equivalent', 0)} equivalent within +-{margin:g}" if margin is not None else ""))
    res.tables["population_models"] = pop.models.drop(columns=["outcomes"], errors="ignore")
    res.tables["population_pairs"] = pop.pairs
    res.info["population"] = {"shown": True, "said": said, "guarantee": "asymptotic",
                              "level": pop.level["meaning"], "questions": int(len(cols))}


def _start(j: Any, run_id: str, settings: dict) -> None:
    """Start (or resume) the run in the journal; a run started with other settings would draw other questions:
    refused, saying which differ."""
    if j is None:
        return
    if j.has_run(run_id):
        stored = j.run(run_id)["meta"].get("compare")
        if stored is not None and stored != settings:
            diff = [x for x in sorted(set(stored) | set(settings)) if stored.get(x) != settings.get(x)]
            raise AssayInputError(
                f"run {run_id} was started with other compare settings ("
                + "; ".join(f"{x}: started with {stored.get(x)!r}, now {settings.get(x)!r}" for x in diff)
                + "); resuming would draw other questions: repeat them, or give another run_id=")
    j.start_run(run_id, meta={"compare": settings})


class _Asker:
    """The models behind the engine's ``ask(models, items)``: each round's questions asked of every model in play
    (concurrently, through the journal), scored against the bank, with each model's requests and outcomes counted;
    the round's draws kept as a note of the run before they are asked."""

    def __init__(self, models, names, bank, banks, scorer, policy, run_id, run_ids, concurrency, timeout) -> None:
        from ..data.bank import check_bank
        from ..data.sources import bank_fingerprint
        from ..models.scoring import check_references

        if not isinstance(bank, pd.DataFrame):  # a file: its ids, prompts and references as text
            from ..data import read_table

            bank = read_table(bank, text_columns=("id", "prompt", "reference"))
        by_column = isinstance(scorer, str) and scorer in bank.columns
        b = read_bank(bank, scorer_col=scorer if by_column else None)
        self.scorers = b["scorer"].tolist() if by_column else [scorer] * len(b)
        check_references(self.scorers, b["reference"].tolist(), b.index)
        self.prompts: dict[str, pd.Series] = {}
        for name in models:
            own = b if banks is None or name not in banks else read_bank(banks[name])
            if list(own.index) != list(b.index):
                raise AssayInputError(f"the bank of model {name!r} does not hold the same questions, in the same order")
            check_bank(own, f"the bank of model {name!r}" if own is not b else "the bank")
            self.prompts[str(name)] = own["prompt"]
        if len(b) < 2:
            raise AssayInputError("the bank needs at least 2 questions")
        self.bank, self.names, self.models = b, names, [models[n] for n in models]
        self.policy, self.run_id, self.concurrency, self.timeout = policy, run_id, concurrency, timeout
        self.runs = {n: (run_ids or {}).get(n, f"{run_id}/{n}") for n in names}
        self.counts: dict[str, dict[str, int]] = {n: {} for n in names}
        self.answered: Callable[[str, int, int], None] | None = None  # within a round: (model, done, of)
        self.cut: dict[str, int] = {n: 0 for n in names}  # answers cut off at the token limit
        self.requests = {n: 0 for n in names}
        self.journal = None
        self.meta = {"scorer": str(scorer), "policy": policy, "bank": bank_fingerprint(b)}

    def record(self, r, play, items, q) -> None:
        """The round's draws and their probabilities, kept before any of its questions is asked."""
        if self.journal is None:
            return
        self.journal.set_note(self.run_id, f"draws/{r + 1}", {
            "round": r + 1, "models": [self.names[int(m)] for m in play],
            "items": [str(self.bank.index[i]) for i in items], "q": [float(x) for x in q]})

    def ask(self, play, items) -> np.ndarray:
        from ..models.scoring import score_rows

        ids = [self.bank.index[i] for i in items]
        out = np.empty((len(play), len(items)))
        for m, res in asyncio.run(self._gather(play, ids)):
            name = self.names[m]
            self.requests[name] += int(res.stats.get("requests", 0))
            prompts = [self.prompts[name][i] for i in ids]
            outs = score_rows([r.text for r in res.responses], self.bank.loc[ids, "reference"].tolist(),
                              [self.scorers[i] for i in items], self.policy,
                              outcomes=[r.outcome for r in res.responses], prompts=prompts,
                              finish_reasons=[r.finish_reason for r in res.responses],
                              errors=[r.error for r in res.responses])
            row = list(play).index(m)
            for col, (i, o) in enumerate(zip(ids, outs)):
                if o.final_score is None:
                    raise AssayInputError(f"question {i!r} of model {name!r} has no score ({o.status})")
                out[row, col] = o.final_score
                self.counts[name][o.status] = self.counts[name].get(o.status, 0) + 1
            self.cut[name] += int(sum(r.finish_reason == "length" for r in res.responses))
        return out

    async def _gather(self, play, ids):
        from ..models import run_prompts

        async def one_model(m):
            name = self.names[m]
            tell = None if self.answered is None else (lambda st, name=name: self.answered(name, st["done"],
                                                                                          st["total"]))
            res = await run_prompts(self.models[m], [self.prompts[name][i] for i in ids], journal=self.journal,
                                    run_id=self.runs[name], concurrency=self.concurrency, timeout=self.timeout,
                                    seed=0, progress=tell)
            return m, res

        try:
            return await asyncio.gather(*[one_model(int(m)) for m in play])
        finally:
            for m in play:
                aclose = getattr(self.models[int(m)], "aclose", None)
                if aclose is not None:
                    await aclose()

    def finish(self, ar: adaptive.AdaptiveRun) -> None:
        """Each model's run records how it was scored and where it left the play."""
        if self.journal is None:
            return
        for m, name in enumerate(self.names):
            self.journal.start_run(self.runs[name], meta={**self.meta, "compare": {
                "left_round": int(ar.left_round[m]), "left_reason": ar.left_reason[m], "n_asked": int(ar.n_asked[m])}})
            self.journal.finish_run(self.runs[name], status="settled" if ar.left_reason[m] == "settled" else "done")


def _stopped_phrase(ar: adaptive.AdaptiveRun, goal: str, k: int | None) -> str:
    if ar.met:
        return {"all": "every pair resolved", "best": "the best certified",
                "top-k": f"the top {k} certified"}[goal]
    return ar.reason


#: seeds a replay runs by default
REPLAYS = 5


@dataclass
class Replay:
    """A replay: the adaptive run's result, and the questions asked per model by it (``asked``) and by a uniform run
    of the same engine on the same seed (``asked_uniform``: no history, draws uniform), both on the first seed; and
    ``runs``, each seed's totals (seed, asked, asked_uniform, goal_met)."""

    result: CompareResult
    asked: pd.Series
    asked_uniform: pd.Series
    runs: pd.DataFrame | None = None  # per seed: seed, asked, asked_uniform, goal_met

    @property
    def saving(self) -> float:
        """Questions asked in all by the adaptive run over those of the uniform run."""
        return float(self.asked.sum()) / max(float(self.asked_uniform.sum()), 1.0)


def _replay_matrix(table: Any) -> tuple[np.ndarray, list[str], list[str]]:
    t = read_score_table(table, "replay table")
    if isinstance(t, pd.DataFrame) and t.columns.duplicated().any():
        dup = sorted({str(c) for c in t.columns[t.columns.duplicated()]})
        raise AssayInputError(f"replay table: column(s) {', '.join(dup)} appear more than once")
    if isinstance(t, pd.DataFrame) and {"model", "item", "score"} <= set(t.columns):
        if t.duplicated(["model", "item"]).any():
            raise AssayInputError("replay table: a (model, item) pair appears more than once")
        if t[["model", "item"]].isna().any().any():
            raise AssayInputError("replay table: a row without a model or an item")
        t = t.pivot(index="model", columns="item", values="score")
    if not isinstance(t, pd.DataFrame):
        raise AssayInputError("replay table: give a wide table (models x question ids), a long one with model, item "
                              "and score columns, or a CSV / Parquet file of either")
    try:
        M = t.to_numpy(dtype=float)
    except (TypeError, ValueError):
        raise AssayInputError("replay table: every score must be a number") from None
    if M.shape[0] < 2 or M.shape[1] < 2:
        raise AssayInputError(f"replay table: needs at least 2 models and 2 questions; got {M.shape[0]} x {M.shape[1]}")
    if not np.all(np.isfinite(M)):
        miss = int((~np.isfinite(M)).sum())
        raise AssayInputError(f"replay table: {miss} missing or non-finite score(s); a replay needs every model's "
                              "score on every question (the estimand is each model's mean over the whole bank)")
    if len(set(map(str, t.index))) != len(t.index) or len(set(map(str, t.columns))) != len(t.columns):
        raise AssayInputError("replay table: model names and question ids must be unique")
    return M, [str(x) for x in t.index], [str(x) for x in t.columns]


def replay(table: Any, *, goal: str = "all", k: int | None = None, guarantee: str = "finite", history: Any = None,
           margin: float | None = None, delta: float = 0.05, batch: int = 10, budget: int | None = None,
           seed: Any = 0, floor: float = adaptive.FLOOR, low: float | None = None,
           high: float | None = None, max_memory: float | None = adaptive.MAX_MEMORY,
           progress: Callable[[int, int, int], None] | None = None, replays: int = REPLAYS) -> Replay:
    """Replay a complete score table (models x questions) as live models through the adaptive engine, on
    ``replays`` seeds.

    Plans a live comparison before paying for it: the result is what :func:`query_until_resolved` would return had
    the models answered as in the table (on the first seed), and ``asked_uniform`` what the same engine asks with
    uniform draws and no history. How many questions a run asks depends on its draws, so the replay is repeated on
    ``replays`` seeds (``seed``, ``seed + 1``, ...): ``Replay.runs`` holds each seed's questions asked, adaptive and
    uniform, and ``info["replay"]`` their mean and spread and the history's effect (the ratio of the two, with its
    Monte Carlo standard error over the seeds). ``budget`` (questions per model) defaults to the whole bank; scores
    are in [low, high] (default: the table's own range, at least [0, 1]). A run whose estimated peak memory is above
    ``max_memory`` bytes is refused before it starts (:func:`assay.compare.adaptive.check_memory`: the finite
    guarantee keeps a grid of bets per pair, the asymptotic one a few numbers); ``progress`` as for
    :func:`query_until_resolved`, for the first adaptive run.
    """
    M, names, item_ids = _replay_matrix(table)
    K, N = M.shape
    goal, kk = _check_common(goal, k, guarantee, margin, K, floor)
    k = kk if goal == "top-k" else None
    delta = checks.level(delta)
    batch = _positive("batch", batch)
    budget = N if budget is None else min(_positive("budget", budget), N)
    lo = min(0.0, float(M.min())) if low is None else float(low)
    hi = max(1.0, float(M.max())) if high is None else float(high)
    if M.min() < lo or M.max() > hi:
        raise AssayInputError(f"replay table: scores outside [{lo}, {hi}]")
    replays = _positive("replays", replays)
    fm = None if history is None else read_history(history, item_ids)
    seed = resolve_seed(seed)
    seeds = ([seed] + [resolve_seed(seed.recorded + i) for i in range(1, replays)] if seed.recorded is not None
             else [seed] + [resolve_seed(s) for s in seed.spawn(replays - 1)])

    def ask(play, items):
        return M[np.ix_(play, items)]

    def engine(fm_, sd, report=None):
        pred = _posterior(fm_, item_ids, K)
        return adaptive.run(ask, K, N, goal=goal, k=k, guarantee=guarantee, margin=margin, delta=float(delta),
                            budget=budget, batch=batch, rng=sd.rng(), predictor=pred, floor=floor, low=lo, high=hi,
                            max_memory=max_memory, progress=report)

    rows, first = [], None
    for i, sd in enumerate(seeds):
        ar = engine(fm, sd, progress if i == 0 else None)
        uni = ar if fm is None else engine(None, sd)
        rows.append({"seed": sd.recorded, "asked": int(ar.n_asked.sum()), "asked_uniform": int(uni.n_asked.sum()),
                     "goal_met": bool(ar.met)})
        first = first or (ar, uni)
    ar, uni = first
    used = None if fm is None else (getattr(fm, "pack_", None) or (str(history) if isinstance(history, (str, Path))
                                                                   else "a score table"))
    res = _package(ar, names, item_ids, goal=goal, k=k, guarantee=guarantee, delta=float(delta), margin=margin,
                   seed=seed, budget=budget, batch=batch, N=N, history=used, replay=True)
    res.info["live"] = {"questions": int(len(ar.order)), "stopped": _stopped_phrase(ar, goal, k)}
    runs = pd.DataFrame(rows)
    res.info["replay"] = {"asked": int(ar.n_asked.sum()), "asked_uniform": int(uni.n_asked.sum()),
                          "true_means": dict(zip(names, M.mean(axis=1).tolist())), "history": used,
                          **replay_spread(runs, fm is not None)}
    return Replay(res, pd.Series(ar.n_asked, index=names, name="asked"),
                  pd.Series(uni.n_asked, index=names, name="asked_uniform"), runs)


def replay_spread(runs: pd.DataFrame, history: bool) -> dict:
    """The questions asked over the seeds (mean, standard deviation, range), adaptive and uniform, and with a
    history its effect: the mean over seeds of adaptive / uniform, with its Monte Carlo standard error."""
    R = len(runs)

    def spread(col):
        x = runs[col].to_numpy(float)
        return {"mean": float(x.mean()), "sd": float(x.std(ddof=1)) if R > 1 else 0.0, "min": int(x.min()),
                "max": int(x.max())}

    out = {"replays": R, "seeds": [s for s in runs["seed"]], "runs": runs.to_dict("records"),
           "asked_spread": spread("asked"), "asked_uniform_spread": spread("asked_uniform"),
           "goal_met_share": float(runs["goal_met"].mean())}
    if history:
        ratio = runs["asked"].to_numpy(float) / np.maximum(runs["asked_uniform"].to_numpy(float), 1.0)
        out["history_effect"] = {"ratio_mean": float(ratio.mean()),
                                 "ratio_se": float(ratio.std(ddof=1) / np.sqrt(R)) if R > 1 else float("nan"),
                                 "ratio_min": float(ratio.min()), "ratio_max": float(ratio.max())}
    return out
