"""Drive a QuickScope search against a model: generate, query concurrently through the journal, score, tell.

:func:`run` loops ``ask(batch) -> generate one instance per ticket -> query the model for the whole batch
concurrently (:func:`assay.models.run`, journaled) -> score -> utility -> tell`` until ``budget`` tickets are
spent, and returns a :class:`ScopeResult` (top configurations with their bounds, the certified set, the
certification trace, failures).

Resuming. Everything is a deterministic function of ``seed`` and the outcomes: ticket t's instance is drawn
with ``default_rng([seed, t])`` and the search's own draws come from ``seed``. Rerunning with the same seed,
journal and ``run_id`` replays the same batches; the journal answers the requests already made and only the
rest go to the endpoint.

Outcomes (:mod:`assay.models.outcomes`). Every ticket's request ends in one outcome, recorded in its row
(``status``) and counted in ``info["failures"]``. The model's failures on the question (``unparseable``, ``too_long``
for its context window, ``refused`` / empty) are its answer and follow ``policy``: ``"wrong"`` (default, as
lm-evaluation-harness and inspect-ai score them: correct = 0), ``"correct"`` (correct = 1) or ``"missing"`` (utility
``failure_utility``, the paper's App. B.3 choice). The endpoint's failures (``timeout``, ``transport`` after the
runner's retries) and a generator that raises are not the model's answer: utility ``failure_utility`` (default 0,
"treated as correct", so the search does not chase infrastructure errors). Only endpoint failures can stop a run: if
every ticket of ``max_failed_batches`` consecutive batches fails on the endpoint's side, the run stops with
:class:`AssayBackendError` (endpoint down) naming the run id to resume; a generator that fails on every ticket of
as many batches stops it with :class:`AssayInputError`. A model that answers badly, however badly, never stops a run.

Utilities: ``"error"`` = 1 - correct (correct only at score 1.0); ``"cwe"`` (complexity-weighted error) =
(1 - correct) / max(1, complexity(config)), the generator's complexity (DyVal: log2(children^depth)); or a
callable ``(outcome: dict, config: dict) -> float in [0, 1]``.
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable, Mapping

import numpy as np
import pandas as pd

from ..errors import AssayBackendError, AssayInputError
from ..models.outcomes import ANSWERED, ENDPOINT_FAILURES, POLICIES, UNPARSEABLE, of_response
from ..results import Result, Statement, build
from .coup import Search

__all__ = ["ScopeResult", "run", "make_utility", "result_from_search"]


class ScopeResult(Result):
    """A QuickScope search: ``top`` (main; configurations ranked by LCB with bounds and counts), ``certified``
    (in order of certification), ``trace`` (per batch: tickets, pool, certified, epsilon, tau), ``evaluations``
    (one row per ticket when run against a model: config key, status, correct, utility)."""

    method = "quickscope"
    main_table = "top"

    @classmethod
    def _table_names(cls) -> tuple[str, ...]:
        return ("top", "certified", "trace", "evaluations")

    def statements(self) -> list[Statement]:
        """One sentence: how many question templates are certified to fail above the threshold (or that none was
        set), with the level every certificate holds at together."""
        cert, i = self.tables["certified"], self.info
        tau = i.get("tau")
        if tau is None:
            text = (f"{i.get('tickets')} generated questions searched; no certificate threshold ([scope].certify) "
                    "was set")
        elif len(cert):
            text = (f"{len(cert)} question template(s) certified to have error rate above {tau:g} (of {i.get('pool')} "
                    "tried)")
        else:
            text = (f"no template certified above error rate {tau:g} after {i.get('tickets')} questions "
                    f"({i.get('pool')} templates tried)")
        delta = self.params.get("delta", self.level.get("delta"))
        return [Statement(text, "", f"all certificates at once, error <= {float(delta):g}")]

    def summary(self) -> str:
        p, i = self.params, self.info
        cert = (f"{i.get('n_certified')} certified at tau = {i['tau']:g}" if i.get("tau") is not None
                else "no certificate threshold")
        lines = [f"QuickScope (assay {self.version}): {i.get('tickets')} tickets, {i.get('pool')} configurations tried, "
                 f"{cert}; bounds hold simultaneously w.p. >= {1 - p.get('delta', 0.01):.0%}"]
        fails = i.get("failures") or {}
        if any(fails.values()):
            lines.append("failures (utility %s): %s" % (p.get("failure_utility"),
                                                        ", ".join(f"{k} {v}" for k, v in fails.items() if v)))
        top = self.tables["top"]
        if len(top):
            keep = [c for c in top.columns if c not in ("arm", "key", "certified_at_ticket", "origin")]
            shown = top[keep].head(10)
            shown = shown.loc[:, ~shown.isna().all()]
            lines.append(shown.to_string(index=False, float_format=lambda x: f"{x:.3f}", na_rep=""))
        lines += [f"note: {w}" for w in i.get("warnings", [])]
        return "\n".join(lines)


def make_utility(utility: Any, generator: Any = None) -> Callable[[Mapping, Mapping], float]:
    """The utility function of a search: ``"error"``, ``"cwe"`` or a callable ``(outcome, config) -> [0, 1]``.

    ``"error"`` is 1 - correct; ``"cwe"`` is (1 - correct) / max(1, complexity(config)),
    with the generator's ``complexity``.

    Parameters
    ----------
    utility : str or callable
        ``"error"``, ``"cwe"`` or a callable ``(outcome, config) -> [0, 1]``, returned as it is.
    generator : Any, optional
        The generator; ``"cwe"`` needs its ``complexity(config)`` method.

    Returns
    -------
    callable
        A function ``(outcome, config) -> float``.

    Raises
    ------
    AssayInputError
        If ``utility`` is ``"cwe"`` and the generator has no ``complexity``, or ``utility`` is neither a known name
        nor a callable.

    Examples
    --------
    >>> u = make_utility("error")
    >>> u({"correct": True}, {}), u({"correct": False}, {})
    (0.0, 1.0)
    """
    if callable(utility):
        return utility
    if utility == "error":
        return lambda out, cfg: 1.0 - float(out["correct"])
    if utility == "cwe":
        comp = getattr(generator, "complexity", None)
        if comp is None:
            raise AssayInputError("the cwe utility needs a generator with complexity(config)")
        return lambda out, cfg: (1.0 - float(out["correct"])) / max(1.0, float(comp(cfg)))
    raise AssayInputError(f"utility must be 'error', 'cwe' or a callable; got {utility!r}")


def _score_ticket(resp, inst, ticket, generator, ufn, policy: str, failure_utility: float, row: dict):
    """``(status, correct, utility)`` of one answered ticket; writes the error or detail into ``row``."""
    status = of_response(resp)
    sc = None
    if status is None:
        try:
            sc = generator.score(resp.text, inst)
        except Exception as e:
            row["error"] = f"scorer: {type(e).__name__}: {e}"[:200]
        status = ANSWERED if sc is not None else UNPARSEABLE
    elif status in ENDPOINT_FAILURES:
        row["error"] = str(resp.error)[:200]
        return status, None, failure_utility
    else:
        row["error"] = str(resp.detail or resp.error or "empty answer")[:200]
    if status == ANSWERED:
        correct = 1.0 if float(sc) >= 1.0 else 0.0
    elif policy == "missing":
        return status, None, failure_utility
    else:
        correct = POLICIES[policy]
    u = ufn({"correct": correct, "score": float(sc) if sc is not None else correct, "text": resp.text}, ticket.config)
    if u is None or not (0.0 <= float(u) <= 1.0) or math.isnan(float(u)):
        raise AssayInputError(f"utility returned {u!r} for ticket {ticket.id} (config {ticket.config}); utilities "
                              "must be in [0, 1]")
    return status, correct, u


def result_from_search(search: Search, *, params: Mapping, tickets: pd.DataFrame | None = None, top: int = 50,
                       failures: Mapping | None = None, extra: Mapping | None = None) -> ScopeResult:
    """Package a finished (or paused) :class:`Search` as a :class:`ScopeResult`.

    The result's tables are ``top`` (the ``top`` configurations ranked by LCB, from ``search.top``), ``certified``
    (in order of certification), ``trace`` (one row per batch) and ``evaluations`` (``tickets``, or empty). Its
    ``info`` holds the search's status (tickets, pool, number certified, tau, epsilon, refits, whether the space is
    exhausted), ``failures`` and the last 500 search events, updated with ``extra``; a ``"warnings"`` entry of
    ``extra`` becomes the result's warnings. The statement it carries: all [ci_low, ci_high] bounds (LCB, UCB) of all
    configurations hold at all times, and every certificate (LCB >= tau) is correct, with probability >= 1 - delta.

    Parameters
    ----------
    search : Search
        The search to report (its seed and ``params.delta`` are recorded).
    params : Mapping
        The run's parameters, recorded in the result.
    tickets : pandas.DataFrame or None, default None
        One row per ticket (the ``evaluations`` table); None gives an empty table.
    top : int, default 50
        Rows of the ``top`` table.
    failures : Mapping or None, default None
        Counts of failed tickets by outcome, stored as ``info["failures"]``.
    extra : Mapping or None, default None
        More ``info`` entries (e.g. ``run_id``, ``seconds``, ``warnings``).

    Returns
    -------
    ScopeResult
        ``n`` is the number of tickets (model calls) told to the search.

    Examples
    --------
    >>> from assay.quickscope import Integer, Search, SearchSpace
    >>> from assay.quickscope.simulate import run_simulated
    >>> s = Search(SearchSpace([Integer("k", 0, 9)]), certify=0.5, seed=0, n0=10, surrogate=None)
    >>> s = run_simulated(s, lambda c: float(c["k"] >= 7), 400, seed=0)
    >>> r = result_from_search(s, params={"budget": 400})
    >>> r.info["tickets"], r.info["n_certified"], list(r.tables)
    (400, 3, ['top', 'certified', 'trace', 'evaluations'])
    """
    st = search.status()
    info = {"tickets": st["tickets"], "pool": st["pool"], "n_certified": st["certified"], "tau": search.tau,
            "epsilon": st["epsilon"], "refits": st["refits"], "exhausted": search.exhausted,
            "failures": dict(failures or {}), "events": search.events[-500:]}
    info.update(extra or {})
    warnings = info.pop("warnings", [])
    tables = {"top": search.top(top), "certified": search.certified(), "trace": pd.DataFrame(search.trace),
              "evaluations": tickets if tickets is not None else pd.DataFrame()}
    return build(ScopeResult, params=params, n=st["tickets"], n_meaning="tickets (model calls) told to the search",
                 meaning="all [ci_low, ci_high] bounds (LCB, UCB) of all configurations hold at all times, and every "
                         "certificate (LCB >= tau) is correct, with probability >= 1 - delta",
                 seed=search.seed, tables=tables, delta=search.params.delta, warnings=warnings, info=info)


def check_space(space, generator, *, seed=0, n: int = 20) -> list[str]:
    """Generate instances for ``n`` configurations drawn from ``space`` before any model call.

    Every draw failing means the space does not fit the generator (other parameter names, values out of range):
    :class:`AssayInputError` at once, before any budget is spent. Some draws failing is reported as a note.
    """
    rng = np.random.default_rng([int(seed), 7])
    cfgs = space.sample(n, rng)
    errors = []
    for k, cfg in enumerate(cfgs):
        try:
            generator.generate(dict(cfg), np.random.default_rng([int(seed), 7, k]))
        except Exception as e:
            errors.append((dict(cfg), f"{type(e).__name__}: {e}"))
    if errors and len(errors) == len(cfgs):
        cfg, err = errors[0]
        gname = getattr(generator, "name", type(generator).__name__)
        raise AssayInputError(f"the search space does not fit the generator {gname!r}: none of {len(cfgs)} sampled "
                              f"configurations could be generated (e.g. {cfg}: {err}); check the parameter names and "
                              "ranges against the generator's own space")
    if errors:
        cfg, err = errors[0]
        return [f"{len(errors)} of {len(cfgs)} configurations sampled before the run could not be generated (e.g. "
                f"{cfg}: {err}); such tickets count as failures"]
    return []


def _status(on_status, search: Search, budget: int, answered: int) -> None:
    if on_status is not None:
        st = search.status()
        on_status({"tickets": search.tickets_told, "budget": int(budget), "answered": int(answered),
                   "certified": int(st["certified"]), "pool": int(st["pool"])})


def run(space, generator, model, *, budget: int, batch: int = 20, seed: int | None = 0, utility: Any = "error",
        journal=None, run_id: str | None = None, concurrency: int = 8, timeout: float | None = 120.0,
        max_retries: int = 4, failure_utility: float = 0.0, max_failed_batches: int = 3, policy: str = "wrong",
        progress: Callable[[int, int], None] | None = None, search: Search | None = None, reuse: bool = False,
        on_status: Callable[[dict], None] | None = None, **search_params: Any) -> ScopeResult:
    """Run QuickScope for ``budget`` model calls in batches of ``batch`` (see the module docstring).

    Each batch: ask the search for tickets, generate one instance per ticket with ``default_rng([seed, ticket])``,
    query the model for the batch concurrently through the journal, score, turn each outcome into a utility and tell
    it to the search. A space that does not fit the generator is caught before any model call (:func:`check_space`).

    Parameters
    ----------
    space : SearchSpace
        The configurations (question templates) to search; unused when ``search`` is given.
    generator : object
        Has ``generate(config, rng) -> Instance`` and ``score(text, instance)`` (and ``complexity(config)`` for
        ``utility="cwe"``).
    model : Model or callable
        An :class:`~assay.models.Model` (endpoint) or a plain callable ``prompt -> text`` (wrapped).
    budget : int
        Model calls (tickets) to spend, at least one batch.
    batch : int, default 20
        Tickets per batch.
    seed : int, Generator or None, default 0
        Resolved once, before any work (:mod:`assay.seeds`); a Generator gives an integer drawn from it, and
        generation and the search derive their streams from that recorded integer, so the run replays from it.
    utility : "error", "cwe" or callable, default "error"
        How an outcome becomes a utility in [0, 1] (module docstring, :func:`make_utility`).
    journal : Journal, path or None, default None
        Where requests and answers are recorded (:func:`assay.models.run`); None: no journal.
    run_id : str or None, default None
        Journal run to write to or resume; a new id if None.
    concurrency : int, default 8
        Cap on requests in flight.
    timeout : float or None, default 120.0
        Per-attempt timeout in seconds (None: the model's own).
    max_retries : int, default 4
        Retries per request after the first attempt.
    failure_utility : float, default 0.0
        Utility, in [0, 1], of a ticket the endpoint or the generator failed on (and of a model failure under
        ``policy="missing"``).
    max_failed_batches : int, default 3
        Consecutive batches failing entirely on the endpoint's side (or in the generator) that stop the run.
    policy : str, default "wrong"
        What an unparseable, too long or refused answer counts as: ``"wrong"``, ``"correct"`` or ``"missing"``.
    progress : callable or None, default None
        Called as ``progress(tickets, budget)`` after each batch is told to the search.
    search : Search or None, default None
        A search to continue instead of a new ``Search(space, seed=seed, **search_params)``.
    reuse : bool, default False
        An answer the journal holds for the same request from any run is read, not asked again.
    on_status : callable or None, default None
        Called with ``{"tickets", "budget", "answered", "certified", "pool"}`` as each answer of a batch arrives
        (``answered``: tickets told plus answers of the batch in flight) and after each batch (a display that must
        speak while a slow model works through a batch).
    **search_params
        :class:`~assay.quickscope.COUPParams` fields (``certify``, ``strategy``, ``repulsion``, ...).

    Returns
    -------
    ScopeResult
        Top configurations with their bounds, the certified set, the certification trace and one row per ticket
        (``evaluations``); ``info`` holds ``failures``, ``run_id`` and ``seconds``.

    Raises
    ------
    AssayInputError
        If ``budget`` or ``batch`` is not a positive integer, ``budget`` is smaller than one batch,
        ``failure_utility`` is not in [0, 1], ``policy`` is unknown, ``model`` is neither a Model nor a callable,
        ``generator`` lacks ``generate`` or ``score``, the space does not fit the generator, or the generator fails on
        every ticket of ``max_failed_batches`` batches in a row (or on every ticket of the run).
    AssayBackendError
        If every request of ``max_failed_batches`` batches in a row fails on the endpoint's side (the message names
        the run id to resume).

    Examples
    --------
    A callable model that is wrong on templates ``k >= 8``; their error rate 1 is certified above 0.5:

    >>> import re
    >>> from assay.benchmarks import Instance
    >>> from assay.quickscope import Integer, SearchSpace
    >>> class Add:
    ...     def generate(self, config, rng):
    ...         a = int(rng.integers(0, 100))
    ...         return Instance(f"What is {a} + {config['k']}?", a + config["k"], {})
    ...     def score(self, text, inst):
    ...         return float(text == str(inst.reference))
    >>> def model(prompt):
    ...     a, k = (int(x) for x in re.findall(r"[0-9]+", prompt))
    ...     return str(a + k + (k >= 8))
    >>> res = run(SearchSpace([Integer("k", 0, 9)]), Add(), model, budget=200, seed=0, certify=0.5, n0=10,
    ...           surrogate=None)
    >>> res.info["tickets"], sorted(res.tables["certified"]["k"])
    (200, [8, 9])
    """
    _check_run_args(budget, batch, failure_utility, policy)
    from ..seeds import resolve_seed

    # resolved once, before any work; a Generator gives an integer drawn from it (generation and the search derive
    # their streams from that integer, so the run replays from the recorded value)
    recorded, ss = resolve_seed(seed)
    seed = recorded if recorded is not None else int(ss.generate_state(1)[0] % (2**31))
    model = _as_model(model)
    for attr in ("generate", "score"):
        if not callable(getattr(generator, attr, None)):
            raise AssayInputError(f"generator must have generate(config, rng) and score(text, instance); no {attr!r}")
    ufn = make_utility(utility, generator)
    if search is None:
        search = Search(space, seed=seed, **search_params)
    preflight = check_space(search.space, generator, seed=seed)
    failures = {"unparseable": 0, "too_long": 0, "refused": 0, "timeout": 0, "transport": 0, "generation": 0,
                "bad_utility": 0}
    rows: list[dict] = []
    failed_streak = gen_streak = 0
    t0 = time.perf_counter()
    while search.tickets_told < budget:
        tickets = search.ask(min(batch, budget - search.tickets_told))
        insts, gen_err = _generate_batch(generator, tickets, seed)
        responses, run_id = _query_batch(model, insts, search, budget, on_status, journal=journal, run_id=run_id,
                                         concurrency=concurrency, timeout=timeout, max_retries=max_retries,
                                         reuse=reuse)
        n_endpoint, n_gen = _tell_batch(search, tickets, insts, gen_err, responses, generator, ufn, policy,
                                        failure_utility, failures, rows)
        # a batch where nothing reached the model (endpoint failures, perhaps mixed with generator failures)
        failed_streak = failed_streak + 1 if (n_endpoint and n_endpoint + n_gen == len(tickets)) else 0
        gen_streak = gen_streak + 1 if n_gen == len(tickets) else 0
        if progress is not None:
            progress(search.tickets_told, budget)
        _status(on_status, search, budget, search.tickets_told)
        _check_streaks(gen_streak, failed_streak, max_failed_batches, rows, failures, run_id)
    notes = _run_notes(preflight, search, failures, rows, policy, failure_utility)
    params = {**{k: v for k, v in vars(search.params).items()}, "budget": int(budget), "batch": int(batch),
              "utility": utility if isinstance(utility, str) else getattr(utility, "__name__", "custom"),
              "generator": getattr(generator, "name", type(generator).__name__),
              "model": getattr(model, "name", None), "failure_utility": failure_utility, "policy": policy,
              "seed": seed}
    return result_from_search(search, params=params, tickets=pd.DataFrame(rows), failures=failures,
                              extra={"run_id": run_id, "seconds": time.perf_counter() - t0, "warnings": notes})


def _check_run_args(budget, batch, failure_utility: float, policy: str) -> None:
    """Refuse a budget, batch size, failure utility or policy :func:`run` cannot use."""
    if int(budget) != budget or budget < 1:
        raise AssayInputError(f"budget must be a positive number of model calls; got {budget!r}")
    if int(batch) != batch or batch < 1:
        raise AssayInputError(f"batch must be a positive integer; got {batch!r}")
    if budget < batch:
        raise AssayInputError(f"budget ({budget}) is smaller than one batch ({batch}): lower batch= or raise budget=")
    if not 0.0 <= failure_utility <= 1.0:
        raise AssayInputError(f"failure_utility must be in [0, 1]; got {failure_utility!r}")
    if policy not in POLICIES:
        raise AssayInputError(f"policy must be one of {', '.join(POLICIES)} (what an unparseable, too long or refused "
                              f"answer counts as); got {policy!r}")


def _as_model(model):
    """The model as an assay Model: a plain callable ``prompt -> text`` is wrapped."""
    from ..models import CallableModel

    if not hasattr(model, "generate"):
        if not callable(model):
            raise AssayInputError("model must be an assay Model or a callable prompt -> text")
        model = CallableModel(model)
    return model


def _generate_batch(generator, tickets: list, seed: int) -> tuple[list[Any], dict[int, str]]:
    """One instance per ticket (None where the generator raised) and the generator's errors by ticket id."""
    insts: list[Any] = []
    gen_err: dict[int, str] = {}
    for t in tickets:
        try:
            insts.append(generator.generate(t.config, np.random.default_rng([int(seed), t.id])))
        except Exception as e:  # a generator bug must not stall the search: recorded, counted
            insts.append(None)
            gen_err[t.id] = f"{type(e).__name__}: {e}"
    return insts, gen_err


def _query_batch(model, insts: list[Any], search: Search, budget: int, on_status, *, journal, run_id,
                 concurrency: int, timeout, max_retries: int, reuse: bool) -> tuple[dict[int, Any], str | None]:
    """Ask the model the batch's generated questions concurrently; returns the responses by position and the run id."""
    from ..models import run as run_prompts

    ok = [k for k, inst in enumerate(insts) if inst is not None]
    responses: dict[int, Any] = {}
    if ok:
        told_before = search.tickets_told

        def answered(st: dict, told_before=told_before) -> None:
            _status(on_status, search, budget, told_before + int(st.get("done", 0)))

        res = run_prompts(model, [insts[k].question for k in ok], journal=journal, run_id=run_id,
                          concurrency=concurrency, timeout=timeout, max_retries=max_retries, reuse=reuse,
                          progress=answered if on_status is not None else None)
        run_id = res.run_id
        for k, resp in zip(ok, res.responses):
            responses[k] = resp
    return responses, run_id


def _tell_batch(search: Search, tickets: list, insts: list[Any], gen_err: dict[int, str], responses: dict[int, Any],
                generator, ufn, policy: str, failure_utility: float, failures: dict,
                rows: list[dict]) -> tuple[int, int]:
    """Score each ticket, record its row and failures, tell the utilities; returns (endpoint failures, generator
    failures) of the batch."""
    told, n_endpoint, n_gen = [], 0, 0
    for k, t in enumerate(tickets):
        row = {"ticket": t.id, "arm": t.arm, "config": search.space.key(t.config), "phase": t.phase}
        if insts[k] is None:
            status, correct, u = "generation_failure", None, failure_utility
            failures["generation"] += 1
            n_gen += 1
            row["error"] = gen_err[t.id]
        else:
            status, correct, u = _score_ticket(responses[k], insts[k], t, generator, ufn, policy,
                                               failure_utility, row)
            if status != ANSWERED:
                failures[status] += 1
            if status in ENDPOINT_FAILURES:
                n_endpoint += 1
        row.update({"status": status, "correct": correct, "utility": float(u)})
        rows.append(row)
        told.append((t.id, float(u)))
    search.tell(told)
    return n_endpoint, n_gen


def _last_error(rows: list[dict]) -> str:
    """The error of the last ticket that has one ("" if none)."""
    return next((r["error"] for r in reversed(rows) if r.get("error")), "")


def _check_streaks(gen_streak: int, failed_streak: int, max_failed_batches: int, rows: list[dict], failures: dict,
                   run_id) -> None:
    """Stop the run when the generator or the endpoint has failed on every ticket of too many batches in a row."""
    if gen_streak >= max_failed_batches:
        last = _last_error(rows)
        raise AssayInputError(f"the generator failed on every ticket of {gen_streak} batches in a row "
                              f"(last: {last}); nothing was evaluated")
    if failed_streak >= max_failed_batches:
        last = _last_error(rows)
        raise AssayBackendError(f"every request of {failed_streak} batches in a row failed on the endpoint's side "
                                f"({failures['timeout']} timed out, {failures['transport']} transport errors; last: "
                                f"{last[:200]}); the endpoint looks down. Answers so far are in the journal: "
                                f"resume with run id {run_id} and the same seed")


def _run_notes(preflight: list[str], search: Search, failures: dict, rows: list[dict], policy: str,
               failure_utility: float) -> list[str]:
    """The run's warnings: the preflight notes, the model's failures and the share of tickets not evaluated (a run
    where the generator failed on every ticket is refused)."""
    n_told = max(search.tickets_told, 1)
    notes = list(preflight)
    if failures["generation"] == search.tickets_told and search.tickets_told:
        last = _last_error(rows)
        raise AssayInputError(f"the generator failed on every one of the {search.tickets_told} tickets (last: {last}); "
                              "nothing was evaluated: the search space does not fit the generator")
    model_fail = failures["unparseable"] + failures["too_long"] + failures["refused"]
    if model_fail:
        notes.append(f"{model_fail} of {search.tickets_told} answers were the model's failures ("
                     f"{failures['unparseable']} unparseable, {failures['too_long']} too long for the model, "
                     f"{failures['refused']} refused or empty): " + {
                         "wrong": "scored as wrong (policy 'wrong')", "correct": "scored as correct (policy 'correct')",
                         "missing": f"counted as utility {failure_utility:g} (policy 'missing')"}[policy])
    other = failures["generation"] + failures["timeout"] + failures["transport"] + (
        model_fail if policy == "missing" else 0)
    share = other / n_told
    if share > 0.2:
        notes.append(f"{other} of {search.tickets_told} tickets ({share:.0%}) were not evaluated "
                     f"({failures['generation']} generation failures, {failures['timeout']} timeouts, "
                     f"{failures['transport']} transport errors"
                     + (f", {model_fail} model failures under policy 'missing'" if policy == "missing" else "")
                     + f"); each counted as utility {failure_utility:g}, so the ranking and certificates rest on fewer "
                     "evaluations than the budget suggests")
    return notes
