"""Drive a QuickScope search against a simulated model with a known truth (no LLM).

The worlds themselves (a search space plus the true error rate of each configuration) live in
:mod:`assay.benchmarks.worlds`; this module only needs an object with ``space()`` and ``truth(config)``, so the search
layer does not depend on the benchmarks.

* :func:`simulate`: the one simulated driver behind ``assay scope --simulate``, the demo and the tests: a seeded
  :class:`Search` on the world's space, Bernoulli(truth) outcomes, packaged as a :class:`ScopeResult` whose ``top``
  table carries each configuration's true error rate and whose ``info["simulated"]`` counts false certificates.
* :func:`run_simulated`: the bare loop on a :class:`Search` the caller built (the studies use it with their own
  seed streams).
* :func:`uniform_baseline`: the paper's uniform-sampling baseline.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

import numpy as np
import pandas as pd

from ..errors import AssayInputError
from ..seeds import resolve_seed
from .coup import Search
from .run import ScopeResult, result_from_search
from .space import SearchSpace

__all__ = ["simulate", "run_simulated", "uniform_baseline"]


def simulate(world: Any, *, budget: int, batch: int = 20, seed: Any = 0, top: int = 50, space: SearchSpace | None = None,
             progress: Callable[[int, int], None] | None = None, **search_params: Any) -> ScopeResult:
    """Run QuickScope for ``budget`` tickets against a simulated model whose error rate is ``world.truth(config)``.

    Parameters
    ----------
    world : a :class:`assay.benchmarks.worlds.World` (or any object with ``space()``, ``truth(config)`` and ``name``).
    budget, batch : tickets to spend and tickets per batch (each ticket's outcome is Bernoulli(truth)).
    seed : int, Generator or None (resolved once; see :mod:`assay.seeds`). An int ``s`` seeds the search with ``s`` and
        the outcomes with ``default_rng(s)``; None draws such an int and records it; a Generator gives two streams
        spawned from its state (recorded as None, ``seed_source`` says so).
    top : rows of the ``top`` table.
    space : a space to search instead of the world's own (it must carry the parameters ``truth`` reads).
    progress : ``progress(tickets_told, budget)`` after every 50 batches.
    search_params : :class:`~assay.quickscope.COUPParams` fields (``certify``, ``strategy``, ``repulsion``, ``delta``...).
    """
    if not (callable(getattr(world, "truth", None)) and (space is not None or callable(getattr(world, "space", None)))):
        raise AssayInputError("world must have truth(config) and space() (e.g. assay.benchmarks.worlds.get_world("
                              f"'dyval')); got {type(world).__name__}")
    if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)) or budget < 1:
        raise AssayInputError(f"budget must be a positive number of tickets; got {budget!r}")
    if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch < 1:
        raise AssayInputError(f"batch must be a positive integer; got {batch!r}")
    if isinstance(top, bool) or not isinstance(top, (int, np.integer)) or top < 1:
        raise AssayInputError(f"top must be a positive integer; got {top!r}")
    s = resolve_seed(seed)
    if s.recorded is not None:
        search_seed, rng = s.recorded, np.random.default_rng(s.recorded)
    else:
        a, b = s.spawn(2)
        search_seed, rng = np.random.default_rng(a), np.random.default_rng(b)
    sp = space if space is not None else world.space()
    if space is not None:
        probe = sp.sample(1, np.random.default_rng(s.spawn(1)[0]))[0]
        try:
            world.truth(probe)
        except (KeyError, TypeError, ValueError) as e:
            want = ", ".join(p.name for p in world.space().params)
            raise AssayInputError(f"the space does not fit the simulated world {getattr(world, 'name', world)!r} "
                                  f"({type(e).__name__}: {e}); its parameters are: {want}") from None
    search = Search(sp, seed=search_seed, **search_params)
    while search.tickets_told < budget:
        # chunks of whole batches on one outcome stream: the same draws as a single call
        run_simulated(search, world.truth, min(int(budget), search.tickets_told + 50 * int(batch)), batch=int(batch),
                      seed=rng)
        if progress is not None:
            progress(search.tickets_told, int(budget))
    truth = [world.truth(c) for c in search.configs]
    name = getattr(world, "name", "custom")
    params = {**vars(search.params), "budget": int(budget), "batch": int(batch), "utility": "error", "world": name,
              "seed": s.recorded}
    arms = search.arms()
    cert = arms[arms["certified"]]
    res = result_from_search(search, params=params, top=int(top), extra={
        "simulated": {"world": name, "false_certifications": int(sum(truth[i] < search.tau for i in cert["arm"]))}})
    res.tables["top"]["truth"] = [truth[i] for i in res.tables["top"]["arm"]]
    if s.recorded is None:
        res.info["seed_source"] = s.source
    return res


def run_simulated(search, truth: Callable[[Mapping], float], budget: int, *, batch: int = 20, seed=None):
    """Drive ``search`` for ``budget`` tickets against Bernoulli(truth(config)) outcomes; returns the search.

    The bare loop behind :func:`simulate`: ask a batch, draw each ticket's outcome as 1 with probability
    ``truth(config)`` (computed once per configuration), tell. ``budget`` counts all tickets told, so a search that
    has already been told some continues up to ``budget``.

    Parameters
    ----------
    search : Search
        The search to drive, built by the caller.
    truth : callable
        ``truth(config) -> float`` in [0, 1], the true utility (error rate) of a configuration.
    budget : int
        Tickets the search has been told when the loop stops.
    batch : int, default 20
        Tickets per batch.
    seed : int, Generator or None, default None
        Seeds the outcomes (``numpy.random.default_rng(seed)``; a Generator is used as it is).

    Returns
    -------
    Search
        ``search`` itself, told ``budget`` tickets.

    Examples
    --------
    >>> from assay.quickscope import Integer, Search, SearchSpace
    >>> s = Search(SearchSpace([Integer("k", 0, 9)]), certify=0.5, seed=0, n0=10, surrogate=None)
    >>> s = run_simulated(s, lambda c: float(c["k"] >= 7), 400, seed=0)
    >>> s.tickets_told, sorted(s.certified()["k"])
    (400, [7, 8, 9])
    """
    rng = np.random.default_rng(seed)
    cache: dict[int, float] = {}
    while search.tickets_told < budget:
        tickets = search.ask(min(batch, budget - search.tickets_told))
        th = np.array([cache[t.arm] if t.arm in cache else cache.setdefault(t.arm, truth(t.config)) for t in tickets])
        u = (rng.random(len(tickets)) < th).astype(float)
        search.tell(list(zip([t.id for t in tickets], u)))
    return search


def uniform_baseline(space: SearchSpace, truth: Callable[[Mapping], float], budget: int, *, evals_per_config: int = 10,
                     seed=None) -> pd.DataFrame:
    """The paper's uniform-sampling baseline.

    Uniform sampling: budget // evals_per_config distinct configurations, each evaluated evals_per_config
    times; returns one row per configuration with ``n``, ``mean``, ``truth`` and a random tie-break key, ranked
    by empirical mean (ties in random order, as the paper's expected-over-ties curve).

    Parameters
    ----------
    space : SearchSpace
        The space the configurations are drawn from (distinct, without replacement).
    truth : callable
        ``truth(config) -> float`` in [0, 1], each evaluation being Bernoulli(truth(config)).
    budget : int
        Total evaluations to spend.
    evals_per_config : int, default 10
        Evaluations of each configuration.
    seed : int, Generator or None, default None
        Seeds the draws (``numpy.random.default_rng(seed)``).

    Returns
    -------
    pandas.DataFrame
        One row per configuration: its parameters, ``n``, ``mean``, ``truth`` and ``tiebreak``, sorted by ``mean``
        descending, ties by ``tiebreak``.

    Raises
    ------
    AssayInputError
        If ``evals_per_config`` < 1 or ``budget`` < ``evals_per_config`` (not even one configuration).

    Examples
    --------
    >>> from assay.quickscope import Integer, SearchSpace
    >>> df = uniform_baseline(SearchSpace([Integer("k", 0, 9)]), lambda c: c["k"] / 10, 50, seed=0)
    >>> df[["k", "n", "mean", "truth"]].round(4).values.tolist()
    [[7.0, 10.0, 0.7, 0.7], [5.0, 10.0, 0.7, 0.5], [4.0, 10.0, 0.6, 0.4], [3.0, 10.0, 0.3, 0.3], [2.0, 10.0, 0.3, 0.2]]
    """
    if evals_per_config < 1 or budget < evals_per_config:
        raise AssayInputError("uniform baseline: budget must allow at least one configuration")
    rng = np.random.default_rng(seed)
    k = budget // evals_per_config
    cfgs = space.sample_unseen(k, rng, set())
    th = np.array([truth(c) for c in cfgs])
    wins = rng.binomial(evals_per_config, th)
    df = pd.DataFrame(cfgs)
    df["n"] = evals_per_config
    df["mean"] = wins / evals_per_config
    df["truth"] = th
    df["tiebreak"] = rng.random(len(df))
    return df.sort_values(["mean", "tiebreak"], ascending=[False, True]).reset_index(drop=True)
