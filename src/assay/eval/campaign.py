"""Run a campaign: every section of the file, one run id, one journal, one result (``assay eval``).

The order, and what each section asks:

1. **Per model, FAQ and QuickScope** (independent of each other and across models; on Ray they run in
   parallel): FAQ asks the questions its policy picks, one at a time, through :class:`assay.faq.live.LiveAnswerer`
   with the bank's prompts rendered by the model's template (:func:`assay.eval.prompts.render`), and
   :func:`assay.faq.evaluate` gives the accuracy on the whole bank; QuickScope (:func:`assay.quickscope.run`)
   asks the generator's questions and certifies the weak regions.
2. **Per model, the shared uniform sample** (:func:`assay.eval.sample.run_sample`), read from the journal where
   FAQ already bought an answer (same model, same rendered prompt, same parameters: the same request key), so no
   answer is paid for twice.
3. **On the sample**: the judge grades every answer and R-AutoEval+ (:func:`assay.autoeval.certify`) certifies
   each model's risk, with Holm's procedure over the models (family-wise error at most delta) when there are
   several; PS-DME (:func:`assay.eval.sample.kpi_section`) bands each KPI after the declared selection rule;
   SIREN (:func:`assay.siren.evaluate`) scores "search the first b configurations, deploy the one the search
   picks" for each budget b of ``[siren].budgets``.

Every request goes through the one journal, each (model, section) in its own journal run with an id derived from
the campaign (:func:`assay.eval.sample.section_run_id`), under the campaign's run id
(:func:`assay.eval.sample.campaign_run_id`), whose journal record holds the campaign file. So ``kill -9`` at any
point loses nothing paid for: :func:`resume` (``assay eval --resume RUN_ID``) reads the campaign back from the
journal and runs it again; every answer already journaled is read, not asked, and the sections draw exactly what
they drew before (their draws depend on the campaign seed and the answers only), so the result is the one an
uninterrupted run gives.

A section that cannot run (no human labels, a KPI the endpoint does not report, an input the method refuses) is
skipped with the reason, and the rest still runs. An endpoint failure (:class:`~assay.errors.AssayBackendError`)
stops the campaign: the answers obtained are journaled, and the error says how to resume.
"""

from __future__ import annotations

import dataclasses
import platform
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from .. import checks
from ..errors import AssayInputError
from .plan import NO_HUMAN_LABELS
from .prompts import render_bank
from .sample import campaign_run_id, kpi_section, load_bank, make_model, run_sample, section_run_id, section_seed
from .spec import Campaign, ModelSpec, parse_campaign

__all__ = ["CampaignResult", "Section", "run", "resume", "load_campaign_of_run", "Event", "write_report",
           "report_of_run", "summary_rows"]

#: the per-model sections, in the order they run
PER_MODEL = ("faq", "scope", "sample")


@dataclass
class Event:
    """A progress event: ``section`` and ``subject`` (a model, or "judge"), ``done`` of ``total`` requests or
    rounds, the current interval ``width`` when the section has one, and ``status`` ("running", "done",
    "skipped" with ``note`` the reason)."""

    section: str
    subject: str
    done: int = 0
    total: int | None = None
    width: float | None = None
    status: str = "running"
    note: str = ""


@dataclass
class Section:
    """One method's part of a campaign: its results by key (a model, a KPI, or "all"), what was skipped and why."""

    name: str
    results: dict[str, Any] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


@dataclass
class CampaignResult:
    """Everything a campaign produced: the sections' results, the shared sample, what each (model, section) cost
    (``costs``: requests, prompt and completion tokens, model seconds and dollars, from the journal), one plain
    statement per certified or estimated quantity (``summary``), and the provenance (campaign file, seed,
    versions, run id) from which :mod:`assay.report` rebuilds the report offline."""

    run_id: str
    campaign: dict
    fingerprint: str
    seed: int
    delta: float
    sections: dict[str, Section]
    sample: pd.DataFrame | None
    costs: pd.DataFrame
    summary: pd.DataFrame
    versions: dict[str, str]
    journal: str

    def to_dict(self) -> dict:
        from ..results import to_jsonable

        secs = {}
        for name, s in self.sections.items():
            secs[name] = {"results": {k: r.to_dict() for k, r in s.results.items()}, "skipped": dict(s.skipped),
                          "notes": list(s.notes)}
        infinite: list = []
        out = {"kind": "assay-eval", "run_id": self.run_id, "campaign": self.campaign, "fingerprint": self.fingerprint,
               "seed": self.seed, "delta": self.delta, "versions": self.versions, "journal": self.journal,
               "summary": to_jsonable(self.summary.to_dict(orient="list"), infinite, ("summary",)),
               "costs": to_jsonable(self.costs.to_dict(orient="list"), infinite, ("costs",)),
               "sample": (None if self.sample is None else
                          to_jsonable(self.sample.drop(columns=["prompt"]).to_dict(orient="list"), infinite,
                                      ("sample",))),
               "sections": secs}
        if infinite:
            out["infinite"] = infinite
        return out

    @classmethod
    def from_dict(cls, obj: dict) -> "CampaignResult":
        from .. import autoeval, faq, psdme, quickscope, siren  # noqa: F401  (registers their result classes)
        from ..results import Result

        if not isinstance(obj, dict) or obj.get("kind") != "assay-eval":
            raise AssayInputError("not an assay eval result (its JSON has no \"kind\": \"assay-eval\")")
        sections = {}
        for name, s in obj["sections"].items():
            sections[name] = Section(name, {k: Result.from_dict(r) for k, r in s["results"].items()},
                                     dict(s["skipped"]), list(s["notes"]))
        sample = None if obj.get("sample") is None else pd.DataFrame(obj["sample"])
        return cls(obj["run_id"], obj["campaign"], obj["fingerprint"], int(obj["seed"]), float(obj["delta"]), sections,
                   sample, pd.DataFrame(obj["costs"]), pd.DataFrame(obj["summary"]), dict(obj["versions"]),
                   obj.get("journal", ""))


# -- building blocks -------------------------------------------------------------------------------------------------


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": platform.python_version()}
    for pkg in ("assay", "numpy", "scipy", "pandas", "openai"):
        try:
            out[pkg] = version(pkg if pkg != "assay" else "assay-eval")
        except PackageNotFoundError:
            if pkg == "assay":
                from .. import __version__

                out[pkg] = __version__
    return out


def _bank_for(c: Campaign, m: ModelSpec, bank: pd.DataFrame) -> pd.DataFrame:
    """The bank with ``m``'s template applied: the prompts FAQ asks are the ones the shared sample asks."""
    return pd.DataFrame({"id": bank.index.to_numpy(), "prompt": render_bank(m.template, bank),
                         "reference": bank["reference"].to_numpy(), "scorer": bank["scorer"].to_numpy()})


def _emit(progress, **kw) -> None:
    if progress is not None:
        progress(Event(**kw))




def _faq_one(c: Campaign, m: ModelSpec, bank: pd.DataFrame, journal: str, make, progress) -> Any:
    from .. import faq
    from ..data.faq import history_items, read_answers
    from ..faq.live import LiveAnswerer

    if c.bank.policy == "correct":
        raise AssayInputError("[bank].policy = 'correct' cannot serve FAQ, which needs a label for every question it "
                              "asks: use 'wrong' (the default) or 'missing'")
    hist = read_answers(c.faq.history, "[faq].history")
    bank = _bank_for(c, m, bank)
    hist_items = history_items(hist)
    absent = [i for i in hist_items if i not in set(bank["id"])]
    if absent:
        raise AssayInputError(f"{len(absent)} of the history's {len(hist_items)} questions are not in the bank "
                              f"(e.g. {', '.join(map(repr, absent[:3]))}): FAQ can only ask questions the bank holds")
    ans = LiveAnswerer(make(m), bank, scorer="scorer", policy=c.bank.policy, journal=journal,
                       run_id=section_run_id(c, m.name, "faq"), timeout=m.timeout, reuse=True, name=m.name)
    total: dict[str, int] = {}

    def rounds(done: int, tot: int) -> None:
        total["n"] = tot
        _emit(progress, section="faq", subject=m.name, done=done, total=tot)

    def expected(summary) -> None:
        if summary:
            es = summary.get("expected_saving")
            _emit(progress, section="faq", subject=m.name, status="running",
                  note=(f"expected: coverage {summary.get('expected_coverage', float('nan')):.3f}, saving "
                        f"{es:.2f}x uniform" if es is not None else ""))

    def width(t: int, w: float) -> None:  # the current anytime-valid width, valid whenever it is read
        _emit(progress, section="faq", subject=m.name, done=t, total=total.get("n"), width=w)

    res = faq.evaluate(hist, ans, budget=c.faq.budget, seed=section_seed(c, "faq", m.name), delta=c.delta,
                       until_width=c.faq.until_width, fallback=c.faq.fallback, calibrate=c.faq.calibrate,
                       progress=rounds, on_expected=expected, on_width=width)
    from ..models.outcomes import headline, shaky

    res.info["bank_size"] = len(bank)  # its statements say whether the history covers the whole bank
    res.info["live"] = {"run_id": ans.run_id, "requests": ans.n_requests, "cached": ans.n_cached, "model": m.model,
                        "endpoint": m.endpoint, "policy": c.bank.policy, "outcomes": ans.counts, "cut_off": ans.cut_off,
                        "headline": headline(ans.counts, c.bank.policy) + f"; {ans.cut_off} cut off at the token "
                                                                          "limit"}
    why = shaky({**ans.counts, "cut_off": ans.cut_off})
    if why:
        res.info["warnings"] = [*res.warnings, f"{m.name}: {why}: its estimate counts them as the policy says "
                                f"({c.bank.policy!r}); raise max_tokens, or check the scorer"]
    est = res.estimates.iloc[0]
    _emit(progress, section="faq", subject=m.name, done=int(est["n_queries"]), total=total.get("n"),
          width=float(est["width"]), status="done")
    return res


def _scope_one(c: Campaign, m: ModelSpec, bank: pd.DataFrame | None, journal: str, make, progress) -> Any:
    import inspect

    from .. import quickscope as qs
    from ..benchmarks import get_generator

    s = c.scope
    gen = get_generator(s.generator)
    if s.space is not None:
        space = qs.SearchSpace.from_yaml(s.space)
    elif m.context_window is not None and "context_window" in inspect.signature(gen.space).parameters:
        space = gen.space(context_window=m.context_window, reserve=m.max_tokens)
    else:
        space = gen.space()
    kw = {"certify": s.certify} if s.certify is not None else {}
    policy = c.bank.policy if c.bank is not None else "wrong"
    _emit(progress, section="scope", subject=m.name, done=0, total=s.budget)  # started: the display says so at once

    def status(st: dict) -> None:  # each answer as it arrives, with the search's current figure
        _emit(progress, section="scope", subject=m.name, done=st["answered"], total=st["budget"],
              note=f"{st['certified']} certified so far")

    res = qs.run(space, gen, make(m), budget=s.budget, batch=min(20, s.budget), seed=section_seed(c, "scope", m.name),
                 utility=s.utility, journal=journal, run_id=section_run_id(c, m.name, "scope"),
                 concurrency=m.concurrency, timeout=m.timeout, policy=policy, delta=c.delta, reuse=True,
                 on_status=status, **kw)
    _emit(progress, section="scope", subject=m.name, done=s.budget, total=s.budget, status="done",
          note=f"{res.info.get('n_certified', 0)} certified")
    return res


def _sample_one(c: Campaign, m: ModelSpec, bank: pd.DataFrame, journal: str, make, progress) -> pd.DataFrame:
    def rep(name: str, st: dict) -> None:
        _emit(progress, section="sample", subject=name, done=int(st.get("done", 0)), total=st.get("total"))

    _emit(progress, section="sample", subject=m.name, done=0, total=None)
    rows = run_sample(c, bank=bank, journal=journal, models=make, progress=rep, only=[m.name], reuse=True)
    _emit(progress, section="sample", subject=m.name, done=len(rows), total=len(rows), status="done")
    return rows


_RUNNERS = {"faq": _faq_one, "scope": _scope_one, "sample": _sample_one}


@dataclass(frozen=True)
class _Unit:
    """One (section, model) unit of work, as an executor ships it: the campaign, the bank read once, the journal;
    ``make`` builds the model of a spec (tests pass their own), ``progress`` stays in the driving process."""
    c: Campaign
    section: str
    model: str
    bank: pd.DataFrame | None
    journal: str
    make: Callable[[ModelSpec], Any] | None = None
    progress: Callable[[Event], None] | None = None


def _task(u: _Unit, ss=None) -> tuple[str, str, str, Any]:
    """One (section, model) unit: ``("ok", result)`` or ``("skipped", reason)``; a pure function of the campaign
    and the journal (its draws come from its child of the campaign seed), so any executor gives the same numbers."""
    c = u.c
    m = next(x for x in c.models if x.name == u.model)
    try:
        return u.section, u.model, "ok", _RUNNERS[u.section](c, m, u.bank, u.journal,
                                                          u.make or (lambda spec: make_model(spec, c.seed)),
                                                          u.progress)
    except AssayInputError as e:
        if u.section == "sample":
            raise
        _emit(u.progress, section=u.section, subject=u.model, status="skipped", note=str(e))
        return u.section, u.model, "skipped", str(e)


def _run_units(units: list[_Unit], backend: str, address: str | None, workers: int | None) -> list:
    if backend == "serial" or len(units) <= 1:
        return [_task(u) for u in units]
    from ..parallel import RayExecutor, spawn

    if backend != "ray":
        raise AssayInputError(f"backend must be 'serial' or 'ray'; got {backend!r}")
    # progress callbacks live in this process: on Ray the display shows each unit when it finishes
    stripped = [dataclasses.replace(u, progress=None) for u in units]
    ex = RayExecutor(workers or min(len(units), 8), address)
    out = ex.map(_task, stripped, spawn(0, len(stripped)))
    for (section, name, kind, value), u in zip(out, units):
        if kind == "skipped":
            _emit(u.progress, section=section, subject=name, status="skipped", note=value)
        else:
            _emit(u.progress, section=section, subject=name, status="done",
                  done=len(value) if isinstance(value, pd.DataFrame) else 0)
    return out


def _judge_section(c: Campaign, rows: pd.DataFrame, journal: str, judge_model, progress) -> Section:
    from .. import autoeval
    from ..models import OpenAIChatModel, OpenAICompletionModel
    from ..models.judge import judge as run_judge

    sec = Section("judge")
    j = c.judge
    if j.human_labels is None:
        sec.skipped["all"] = NO_HUMAN_LABELS
        _emit(progress, section="judge", subject="judge", status="skipped", note=sec.skipped["all"])
        return sec
    from ..data import read_table

    human = read_table(j.human_labels, text_columns=("item", "model"))
    need = [k for k in ("item", j.human_col) if k not in human.columns]
    if need:
        raise AssayInputError(f"[judge].human_labels {j.human_labels.name} has no column(s) {', '.join(need)}; "
                              f"columns: {', '.join(map(str, human.columns))}")
    if "model" not in human.columns:
        if len(c.models) > 1:
            raise AssayInputError(f"[judge].human_labels {j.human_labels.name}: with several [[model]] blocks each "
                                  "human label belongs to one model's answer: add a 'model' column naming the "
                                  "[[model]]")
        human = human.assign(model=c.models[0].name)
    key = human[["model", "item"]].astype(str)
    if key.duplicated().any():
        k = key[key.duplicated()].iloc[0]
        raise AssayInputError(f"[judge].human_labels has two labels for model {k['model']!r}, item {k['item']!r}")
    lab = rows.merge(human[["model", "item", j.human_col]].astype({"model": str, "item": str}),
                     on=["model", "item"], how="left")
    n_lab = int(lab[j.human_col].notna().sum())
    if n_lab == 0:
        sec.skipped["all"] = (f"none of the human labels in {j.human_labels.name} is on an item of the shared "
                              "sample (the labels must be for the sampled items: `assay eval --plan --json` lists "
                              "them as sample_items)")
        _emit(progress, section="judge", subject="judge", status="skipped", note=sec.skipped["all"])
        return sec
    if judge_model is None:
        cls = OpenAICompletionModel if j.completions else OpenAIChatModel
        judge_model = cls(j.model, base_url=j.endpoint, api_key_env=j.api_key_env, temperature=0.0, max_tokens=16,
                          seed=c.seed, stop=["\n"] if j.completions else None)
    graded = run_judge(lab, judge_model, rubric=j.rubric, question_col="question", reference_col="reference",
                       answer_col="text", candidate_col="model", item_col="item", human_col=j.human_col,
                       journal=journal, run_id=f"{campaign_run_id(c)}/judge", reuse=True,
                       progress=lambda st: _emit(progress, section="judge", subject="judge",
                                                 done=int(st.get("done", 0)), total=st.get("total")))
    table = graded.labels.copy()
    if j.loss == "0-1":
        for col in ("loss_judge", "loss_human"):
            table[col] = np.where(table[col].isna(), np.nan, (table[col] >= 0.5).astype(float))
    several = len(c.models) > 1
    labelled = table.groupby("candidate", sort=False)["loss_human"].agg(lambda v: int(v.notna().sum()))
    unlabelled = table.groupby("candidate", sort=False)["loss_human"].agg(lambda v: int(v.isna().sum()))
    method = "r-autoeval+"
    if (unlabelled < labelled).any():
        # R-AutoEval+ pairs each human label with at least one judge-only row; with more human labels than that,
        # the judge has nothing to add and the human labels alone (R-Eval) are the test
        method = "r-eval"
        few = ", ".join(map(str, unlabelled[unlabelled < labelled].index))
        sec.notes.append(f"more human labels than judge-only rows for {few}: "
                         "certified from the human labels alone (R-Eval); the judge's verdicts are reported, not used")
    cols = ["candidate", "item", "loss_human", "loss_judge"]
    cost_col = None
    if several:
        # among the certified configurations, the cheapest per answer is reported as the best (mean cost at the
        # models' prices, else mean completion tokens, when the endpoint reported them)
        for col in ("cost", "completion_tokens"):
            per = rows.groupby("model")[col].mean()
            if per.notna().all() and (per > 0).any():
                table["answer_cost"] = table["candidate"].map(per).to_numpy(float)
                cols, cost_col = cols + ["answer_cost"], "answer_cost"
                break
    res = autoeval.certify(table[cols], risk_target=j.risk_target, delta=c.delta, seed=section_seed(c, "judge"),
                           select="holm" if several else None, method=method, cost_col=cost_col)
    res.info["judge"] = {"model": j.model, "rubric": str(j.rubric), "run_id": graded.run_id, "cost_col": cost_col,
                         "outcomes": graded.counts, "human_labels": n_lab, "agreement": graded.agreement()}
    sec.results["all"] = res
    _emit(progress, section="judge", subject="judge", done=len(table), total=len(table), status="done",
          note=f"{len(res.certified)} of {len(c.models)} certified")
    return sec


def _compare_section(c: Campaign, bank: pd.DataFrame, journal: str, make, progress) -> Section:
    """compare: the [[model]] blocks asked questions of the bank, each only as long as [compare].goal needs it
    (:mod:`assay.compare.adaptive`), until the goal is met or [compare].budget questions a model are spent."""
    from ..compare.live import query_until_resolved

    budget, _ = checks.fraction_or_count(c.compare.budget, len(bank), "[compare].budget")
    made = {m.name: (make or (lambda spec: make_model(spec, c.seed)))(m) for m in c.models}
    banks = {m.name: _bank_for(c, m, bank) for m in c.models}

    def rounds(asked: int, total: int, unresolved: int) -> None:
        _emit(progress, section="compare", subject="all", done=asked, total=total,
              note=f"{unresolved} pair(s) the goal still needs")

    # the paired design needs a score for every question of every model: under [bank].policy = "missing" an unscored
    # answer counts as wrong here, and the result says so
    policy = "wrong" if c.bank.policy == "missing" else c.bank.policy
    res = query_until_resolved(made, banks[c.models[0].name], scorer="scorer", policy=policy, journal=journal,
                               delta=c.delta, margin=c.compare.margin, budget=budget, batch=c.compare.batch,
                               seed=section_seed(c, "compare"), concurrency=min(m.concurrency for m in c.models),
                               timeout=max(m.timeout for m in c.models), progress=rounds, banks=banks,
                               run_ids={m.name: section_run_id(c, m.name, "compare") for m in c.models},
                               goal=c.compare.goal, k=c.compare.k, guarantee=c.compare.guarantee,
                               history=None if c.compare.history is None else
                               (c.compare.history if isinstance(c.compare.history, str) else str(c.compare.history)))
    if c.bank.policy == "missing":
        res.info.setdefault("warnings", []).append(
            "[bank].policy is 'missing', but every question needs a score for every model in a paired comparison: "
            "here an unparseable, too long or refused answer counts as wrong")
    _emit(progress, section="compare", subject="all", done=int(res.params["queried"]), total=budget, status="done",
          note=res.info["live"]["stopped"])
    return Section("compare", {"all": res})


def _siren_section(c: Campaign, rows: pd.DataFrame) -> Section:
    from .. import siren

    sec = Section("siren")
    names = [m.name for m in c.models]
    scores = rows.pivot(index="item", columns="model", values="score")
    unscored = scores.isna().any(axis=1)
    if unscored.any():
        sec.notes.append(f"{int(unscored.sum())} sampled items without a score for every configuration (policy "
                         "'missing') are left out: SIREN compares the configurations on the same items")
        scores = scores[~unscored]
    if len(scores) < 4:
        sec.skipped["all"] = f"SIREN needs at least 4 items scored for every configuration; {len(scores)} are"
        return sec
    frames = []
    for b in c.siren.budgets:
        for name in names[:b]:
            frames.append(pd.DataFrame({"system": c.name, "budget": b, "artifact": name, "item": scores.index,
                                        "score": scores[name].to_numpy(float)}))
    table = pd.concat(frames, ignore_index=True)
    contrasts = ["budget-gains"] if len(c.siren.budgets) > 1 else []
    res = siren.evaluate(table, reps=c.siren.splits, delta=c.delta, seed=section_seed(c, "siren"), contrasts=contrasts)
    res.info["search"] = {"order": names, "meaning": "budget b: the search tries the first b [[model]] configurations "
                          "in file order and deploys the one it scores best"}
    sec.results["all"] = res
    return sec


def _costs(c: Campaign, journal: str) -> pd.DataFrame:
    """Per (model, section): requests paid (journal records of its run), prompt / completion tokens, model seconds
    (sum of request latencies) and dollars; a "total" row per model counts each distinct request once."""
    from ..models.journal import Journal

    rows = []
    prices = {m.name: (m.price_in, m.price_out) for m in c.models}
    with Journal(journal) as j:
        runs = [(m.name, s, section_run_id(c, m.name, s)) for m in c.models for s in (*PER_MODEL, "compare")]
        runs.append(("judge", "judge", f"{campaign_run_id(c)}/judge"))
        per_model: dict[str, list] = {}
        for name, section, rid in runs:
            if not j.has_run(rid):
                continue
            rec = j.records(rid)
            rec = rec[rec["error"].isna()] if len(rec) else rec
            if not len(rec):
                continue
            per_model.setdefault(name, []).append(rec)
            rows.append(_cost_row(name, section, rec, prices.get(name, (0.0, 0.0))))
        for name, recs in per_model.items():
            if name == "judge":
                continue
            allrec = pd.concat(recs, ignore_index=True).drop_duplicates("key")
            rows.append(_cost_row(name, "total", allrec, prices[name]))
    cols = ["model", "section", "requests", "prompt_tokens", "completion_tokens", "seconds", "dollars"]
    return pd.DataFrame(rows, columns=cols)


def _cost_row(name: str, section: str, rec: pd.DataFrame, price: tuple[float, float]) -> dict:
    pt = pd.to_numeric(rec["prompt_tokens"], errors="coerce")
    ct = pd.to_numeric(rec["completion_tokens"], errors="coerce")
    return {"model": name, "section": section, "requests": int(len(rec)),
            "prompt_tokens": int(pt.fillna(0).sum()), "completion_tokens": int(ct.fillna(0).sum()),
            "seconds": float(pd.to_numeric(rec["latency_s"], errors="coerce").fillna(0).sum()),
            "dollars": float((pt.fillna(0).sum() * price[0] + ct.fillna(0).sum() * price[1]) / 1e6)}


# -- the summary: one plain statement per quantity ------------------------------------------------------------------


#: where a section's statements are paid for: (model, section) of the journal runs whose cost a statement carries
_COST_OF: dict[str, Callable[[str], tuple[str, str]]] = {
    "judge": lambda subject: ("judge", "judge"),   # the judge's verdicts, whatever candidate a statement is about
    "kpi": lambda subject: (subject, "sample"),    # PS-DME asks nothing: the KPIs are the shared sample's requests
}


def summary_rows(c: Campaign, sections: dict[str, Section], costs: pd.DataFrame) -> pd.DataFrame:
    """One row per statement of every section's results.

    A row holds the subject (model, configuration or KPI), section, the statement in plain words, its level, and what
    the section cost for that subject (requests, tokens, model seconds). Each method's result states its own claims
    (:meth:`assay.results.Result.statements`); a skipped subject gets one ``"skipped: <why>"`` row.

    Parameters
    ----------
    c : Campaign
        The campaign.
    sections : dict of str to Section
        The sections run, by name, with their results and skipped subjects.
    costs : DataFrame
        What each (model, section) cost: ``model``, ``section``, ``requests``, ``prompt_tokens``,
        ``completion_tokens``, ``seconds``.

    Returns
    -------
    DataFrame
        Columns ``subject, section, statement, level, requests, tokens, seconds``.
    """
    rows: list[dict] = []

    def cost(model: str, section: str) -> dict:
        sel = costs[(costs["model"] == model) & (costs["section"] == section)]
        if not len(sel):
            return {"requests": 0, "tokens": 0, "seconds": 0.0}
        r = sel.iloc[0]
        return {"requests": int(r["requests"]), "tokens": int(r["prompt_tokens"] + r["completion_tokens"]),
                "seconds": float(r["seconds"])}

    for name, sec in sections.items():
        for key, why in sec.skipped.items():
            rows.append({"subject": key, "section": name, "statement": f"skipped: {why}", "level": "",
                         **cost(key, name)})
        for key, res in sec.results.items():
            for st in res.statements():
                subject = st.subject or key  # "": the model this section's result is about
                rows.append({"subject": subject, "section": name, "statement": str(st), "level": st.level,
                             **cost(*_COST_OF.get(name, lambda s: (s, name))(subject))})
    return pd.DataFrame(rows, columns=["subject", "section", "statement", "level", "requests", "tokens", "seconds"])


# -- the run --------------------------------------------------------------------------------------------------------


def run(c: Campaign, *, journal: str | Path | None = None, backend: str = "serial", address: str | None = None,
        workers: int | None = None, progress: Callable[[Event], None] | None = None,
        models: Callable[[ModelSpec], Any] | None = None, judge_model: Any = None) -> CampaignResult:
    """Run campaign ``c`` (see the module docstring); rerunning it, or :func:`resume`, pays only for what is missing.

    A campaign over its ``[budget]`` caps stops at planning, before any request.

    Parameters
    ----------
    c : Campaign
        The campaign to run.
    journal : str or Path, optional
        The journal file (default: the campaign's ``journal``, else ``$ASSAY_JOURNAL`` or the user cache).
    backend : {"serial", "ray"}, default "serial"
        Where the per-model FAQ, QuickScope and sample units run: here, or on a Ray cluster; the numbers do not
        depend on it.
    address : str, optional
        The Ray cluster's address, as in :class:`assay.parallel.RayExecutor`.
    workers : int, optional
        Ray workers (default: one per unit, at most 8).
    progress : callable, optional
        Called with an :class:`Event` as sections advance.
    models : callable, optional
        Builds the Model of a ``[[model]]`` spec (tests pass their own).
    judge_model : Model, optional
        The judge (tests pass their own).

    Returns
    -------
    CampaignResult
        The sections' results, the shared sample, the costs, the summary and the provenance.

    Raises
    ------
    AssayInputError
        When the campaign is over its budget caps or its inputs are invalid.
    """
    from ..models.journal import Journal, default_path
    from .plan import plan as make_plan

    bank = load_bank(c) if c.bank is not None else None  # read once, for every section
    make_plan(c, bank)  # a campaign over its [budget] caps stops here, before any request
    jpath = str(Path(journal) if journal is not None else (c.journal or default_path()))
    rid = campaign_run_id(c)
    with Journal(jpath) as j:
        j.start_run(rid, meta={"kind": "assay-eval", "campaign": c.to_file_data(), "fingerprint": c.fingerprint(),
                               "seed": c.seed, "source": str(c.source)})
    status = "failed"
    try:
        sections: dict[str, Section] = {s: Section(s) for s in c.sections()}
        units = [_Unit(c, s, m.name, bank, jpath, models, progress) for s in ("faq", "scope") if s in sections
                 for m in c.models]
        for section, name, kind, value in _run_units(units, backend, address, workers):
            if kind == "ok":
                sections[section].results[name] = value
            else:
                sections[section].skipped[name] = value
        rows = None
        if any(s in sections for s in ("judge", "kpi", "siren")):
            units = [_Unit(c, "sample", m.name, bank, jpath, models, progress) for m in c.models]
            rows = pd.concat([v for *_, v in _run_units(units, backend, address, workers)], ignore_index=True)
        if "judge" in sections:
            sections["judge"] = _guarded("judge", lambda: _judge_section(c, rows, jpath, judge_model, progress),
                                         progress)
        if "kpi" in sections:
            def kpi() -> Section:
                res, skipped = kpi_section(c, rows)
                return Section("kpi", res, skipped)
            sections["kpi"] = _guarded("kpi", kpi, progress)
        if "siren" in sections:
            sections["siren"] = _guarded("siren", lambda: _siren_section(c, rows), progress)
        if "compare" in sections:
            sections["compare"] = _guarded("compare", lambda: _compare_section(c, bank, jpath, models, progress),
                                           progress)
        costs = _costs(c, jpath)
        result = CampaignResult(rid, c.to_dict(), c.fingerprint(), c.seed, c.delta, sections, rows, costs,
                                summary_rows(c, sections, costs), _versions(), jpath)
        status = "done"
        return result
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    finally:
        with Journal(jpath) as j:
            j.finish_run(rid, status)


def _guarded(name: str, fn: Callable[[], Section], progress) -> Section:
    try:
        return fn()
    except AssayInputError as e:
        _emit(progress, section=name, subject="all", status="skipped", note=str(e))
        return Section(name, skipped={"all": str(e)})


def _run_meta(run_id: str, journal: str | Path | None) -> dict:
    """The journal record of campaign run ``run_id``; clear errors for a missing journal, run or kind."""
    from ..models.journal import Journal, default_path

    jpath = Path(journal) if journal is not None else default_path()
    if not jpath.exists():
        raise AssayInputError(f"no journal at {jpath}: pass the journal the campaign used (journal=)")
    with Journal(jpath) as j:
        if not j.has_run(run_id):
            raise AssayInputError(f"run {run_id!r} is not in the journal {jpath}; `assay runs list` shows its runs")
        meta = j.run(run_id)["meta"]
    if meta.get("kind") != "assay-eval":
        raise AssayInputError(f"run {run_id!r} is not an `assay eval` campaign (it was started by another command)")
    return meta


def load_campaign_of_run(run_id: str, journal: str | Path | None = None) -> Campaign:
    """The campaign a run was started with, read back from the journal.

    Its file need not exist any more; the bank, history and label files it names must.

    Parameters
    ----------
    run_id : str
        The campaign's run id.
    journal : str or Path, optional
        The journal the campaign used; None reads the default journal.

    Returns
    -------
    Campaign
        The campaign, parsed from the journal's record.

    Raises
    ------
    AssayInputError
        If there is no such journal, the run is not in it or is not an ``assay eval`` campaign, it has no campaign
        record, or the campaign read back does not match the one the run was started with.
    """
    meta = _run_meta(run_id, journal)
    if "campaign" not in meta:
        raise AssayInputError(f"run {run_id!r} has no campaign record to resume from")
    source = Path(meta.get("source") or f"run {run_id}")
    c = parse_campaign(meta["campaign"], source=str(source), base=source.parent if source.suffix else None)
    if c.fingerprint() != meta.get("fingerprint"):
        raise AssayInputError(f"run {run_id!r}: the campaign read back from the journal does not match the one the run "
                              "was started with (the files it names may have moved); rerun the campaign file instead")
    return c


def resume(run_id: str, *, journal: str | Path | None = None, **kw) -> CampaignResult:
    """Finish run ``run_id`` (``assay eval --resume``).

    The campaign is read from the journal and run again; every answer already journaled is read, not asked, so the
    result is the one an uninterrupted run gives.

    Parameters
    ----------
    run_id : str
        The campaign's run id.
    journal : str or Path, optional
        The journal the campaign used; None reads the default journal and runs with the campaign's own.
    **kw
        Passed to :func:`run` (``backend``, ``address``, ``workers``, ``progress``, ``models``, ``judge_model``).

    Returns
    -------
    CampaignResult
        The campaign's result.

    Raises
    ------
    AssayInputError
        If the campaign cannot be read back (see :func:`load_campaign_of_run`).
    """
    c = load_campaign_of_run(run_id, journal)
    return run(c, journal=journal if journal is not None else c.journal, **kw)


def write_report(res: CampaignResult, folder: str | Path) -> Path:
    """Write ``report.json``, ``report.md`` and ``report.html`` into ``folder``.

    ``report.json`` holds everything, for ``assay report RUN_ID`` (secrets masked); where it is written is recorded
    in the campaign's journal run.

    Parameters
    ----------
    res : CampaignResult
        The campaign's result.
    folder : str or Path
        The folder, created if missing.

    Returns
    -------
    Path
        ``folder``.
    """
    import json

    from ..models.journal import Journal
    from ..models.secrets import mask_secrets
    from ..report.campaign import render_campaign_html, render_campaign_markdown

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "report.json").write_text(mask_secrets(json.dumps(res.to_dict(), indent=2, allow_nan=False)) + "\n")
    (folder / "report.md").write_text(render_campaign_markdown(res))
    (folder / "report.html").write_text(render_campaign_html(res))
    if res.journal:
        with Journal(res.journal) as j:
            if j.has_run(res.run_id):
                j.start_run(res.run_id, meta={"report": str((folder / "report.json").resolve())})
                j.finish_run(res.run_id, "done")
    return folder


def report_of_run(run_id: str, journal: str | Path | None = None) -> CampaignResult:
    """The saved result of campaign run ``run_id`` (the ``report.json`` its run recorded in the journal).

    Parameters
    ----------
    run_id : str
        The campaign's run id.
    journal : str or Path, optional
        The journal the campaign used; None reads the default journal.

    Returns
    -------
    CampaignResult
        The result read back from ``report.json``.

    Raises
    ------
    AssayInputError
        If there is no such journal or run, the run is not an ``assay eval`` campaign, or it has no saved report
        (``assay eval --resume RUN_ID`` rebuilds it from the journal without asking anything already answered).
    """
    import json

    path = _run_meta(run_id, journal).get("report")
    if not path or not Path(path).exists():
        raise AssayInputError(f"run {run_id!r} has no saved report{f' ({path} is gone)' if path else ''}: "
                              f"`assay eval --resume {run_id}` rebuilds it from the journal without asking anything "
                              "already answered")
    return CampaignResult.from_dict(json.loads(Path(path).read_text()))
