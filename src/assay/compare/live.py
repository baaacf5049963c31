"""Ties resolved by asking only what is needed: several models asked questions of a bank, uniformly at random and
without replacement, in one seeded order shared by all of them, journaled, until every pair is ordered or equivalent
within the margin, or the budget is spent.

Stopping when the comparison looks resolved is valid because the intervals are the finite guarantee's confidence
sequences (:func:`assay.compare.core.finite`), read in the order the questions were asked and for sampling without
replacement from the bank (the target is each model's mean over the whole bank): they hold at every number of
questions at once, including the one at which the run decided to stop. Scores not drawn by this run never enter it.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

import numpy as np
import pandas as pd

from ..data.bank import read_bank
from ..data.compare import CompareDesign
from .. import checks
from ..errors import AssayInputError
from ..seeds import resolve_seed
from . import core
from .api import CompareResult, _package

__all__ = ["query_until_resolved"]


def _unique_prompts(bank: pd.DataFrame, model: str) -> None:
    """A bank whose prompts repeat cannot tell the answers of the repeated questions apart (the journal keys an
    answer by its prompt): refused, naming the ids."""
    dup = bank["prompt"].duplicated(keep=False)
    if dup.any():
        ids = list(bank.index[dup])
        raise AssayInputError(f"the bank asks the same prompt for several questions (ids {', '.join(map(str, ids[:6]))}"
                              + (" ..." if len(ids) > 6 else "") + f"; model {model!r}): each question needs its own "
                              "prompt, or its answers cannot be told apart")


def _resolved(out: core.CompareCore, margin: float | None) -> bool:
    v, _ = core.verdicts(out.d_lo, out.d_hi, margin)
    return bool((v != "unresolved").all())


def query_until_resolved(
    models: Mapping[str, Any],
    bank: Any,
    *,
    scorer: str = "exact",
    policy: str = "wrong",
    journal: Any = None,
    run_id: str = "compare",
    delta: float = 0.05,
    margin: float | None = None,
    budget: int = 100,
    batch: int = 10,
    seed: Any = 0,
    concurrency: int = 4,
    timeout: float | None = 60.0,
    progress: Callable[[int, int, int], None] | None = None,
    banks: Mapping[str, Any] | None = None,
    run_ids: Mapping[str, str] | None = None,
) -> CompareResult:
    """Ask ``models`` (name -> :class:`~assay.models.Model`) questions of ``bank`` until every pair is resolved.

    Parameters
    ----------
    bank : table (or file) with ``id``, ``prompt``, ``reference`` (and a ``scorer`` column when ``scorer`` names
        it); each model is asked the same questions in one order drawn from ``seed``, without replacement.
    scorer, policy : how each answer is scored (:func:`assay.models.scoring.score`); policy ``"wrong"`` or
        ``"correct"`` (every question needs a score).
    journal, run_id : every request is journaled under ``run_id/<model>``: the same call resumes, reading every
        answer already paid for.
    delta, margin : the error level of every claim at once and the equivalence margin.
    budget : at most this many questions per model (at most the bank); ``batch``: questions asked per round.
    progress : called as ``progress(questions asked, budget, pairs unresolved)`` after each round.
    banks : optional per model (name -> table), the same questions (ids, references, scorers) with that model's own
        prompts (a campaign's templates); ``run_ids``: optional per model journal runs (default ``run_id/<model>``).

    Returns
    -------
    CompareResult under the finite guarantee, for the bank's own means; ``params`` record the questions asked and
    whether the run stopped because every pair was resolved; ``info["live"]`` the requests and outcomes.
    """
    from ..models import run as run_prompts
    from ..models.scoring import make_scorer, score

    if not isinstance(models, Mapping) or len(models) < 2:
        raise AssayInputError("compare needs at least 2 models (a mapping name -> model)")
    if policy not in ("wrong", "correct"):
        raise AssayInputError(f"policy must be 'wrong' or 'correct' here (every question needs a score); got {policy!r}")
    for name, v in (("budget", budget), ("batch", batch)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise AssayInputError(f"{name} must be a positive integer; got {v!r}")
    delta = checks.level(delta)
    by_column = isinstance(scorer, str) and isinstance(bank, pd.DataFrame) and scorer in bank.columns
    b = read_bank(bank, scorer_col=scorer if by_column else None)
    scorers = ({name: make_scorer(name) for name in b["scorer"].unique()} if by_column else None)
    one = None if by_column else make_scorer(scorer)
    prompts_of = {}
    for name in models:
        own = b if banks is None or name not in banks else read_bank(banks[name])
        if list(own.index) != list(b.index):
            raise AssayInputError(f"the bank of model {name!r} does not hold the same questions, in the same order")
        _unique_prompts(own, name)
        prompts_of[str(name)] = own["prompt"]
    N = len(b)
    if N < 2:
        raise AssayInputError("the bank needs at least 2 questions")
    budget = min(int(budget), N)
    seed = resolve_seed(seed)
    order = seed.rng().permutation(N)
    names = [str(n) for n in models]
    K = len(names)
    S = np.empty((K, 0))
    asked = 0
    counts: dict[str, dict[str, int]] = {n: {} for n in names}
    requests = {n: 0 for n in names}
    out = None
    while asked < budget:
        take = order[asked:asked + min(int(batch), budget - asked)]
        ids = [b.index[i] for i in take]
        block = np.empty((K, len(take)))
        for k, name in enumerate(names):
            res = run_prompts(models[name], [prompts_of[name][i] for i in ids], journal=journal,
                              run_id=(run_ids or {}).get(name, f"{run_id}/{name}"), concurrency=concurrency,
                              timeout=timeout, seed=0)
            requests[name] += int(res.stats.get("requests", 0))
            for j, (i, resp) in enumerate(zip(ids, res.responses)):
                sc = scorers[b.at[i, "scorer"]] if scorers else one
                o = score(resp, b.at[i, "reference"], sc, policy=policy, prompt=prompts_of[name][i])
                if o.final_score is None:
                    raise AssayInputError(f"question {i!r} of model {name!r} has no score ({o.status})")
                block[k, j] = o.final_score
                counts[name][o.status] = counts[name].get(o.status, 0) + 1
        S = np.concatenate([S, block], axis=1)
        asked = S.shape[1]
        out = core.finite(S, None, delta=float(delta), low=0.0, high=1.0, rng=None, horizon=budget, population=N)
        unresolved = int((core.verdicts(out.d_lo, out.d_hi, margin)[0] == "unresolved").sum())
        if progress is not None:
            progress(asked, budget, unresolved)
        if unresolved == 0:
            break
    items = [str(b.index[i]) for i in order[:asked]]
    design = CompareDesign(models=names, items=items, S=S, clusters=None, cluster_labels=None,
                           shared=np.full((K, K), asked), n_items_any=N, epochs={}, low=0.0, high=1.0)
    stopped = _resolved(out, margin)
    res = _package(design, out, guarantee="finite", delta=float(delta), margin=margin, seed=seed,
                   queried=asked, budget=budget, bank_size=N, resolved=stopped, batch=int(batch), scorer=str(scorer),
                   policy=policy, run_id=run_id, pool_phrase=f"the bank's {N}")
    res.info["estimand"] = (f"each model's mean score over the {N} questions of the bank, asked without replacement "
                            "in one seeded order (each question weighted equally), and each pair's difference")
    res.info["live"] = {"requests": requests, "outcomes": counts, "questions": asked,
                        "stopped": "every pair resolved" if stopped else "budget spent"}
    return res
