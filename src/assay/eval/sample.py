"""The campaign's shared uniform sample, asked live, and the PS-DME section that reads its KPIs.

:func:`run_sample` asks every model (configuration) the same uniformly drawn items of the bank
(:func:`assay.eval.prompts.uniform_sample`), through :func:`assay.models.run` and the crash-safe journal, one
journal run per model with an id derived from the campaign (:func:`section_run_id`), so rerunning the same
campaign file with the same seed reads every answer already paid for from the journal and asks only the rest.
Each answer is scored against the bank's reference with the bank's scorer and policy, and its KPIs are kept:
latency and time to first token (seconds, measured on the client), prompt and completion tokens (as the endpoint
reports them) and cost (at the model's prices).

:func:`kpi_section` turns those rows into one PS-DME result per KPI (:func:`assay.psdme.bands`): the
configurations are the models, the selection rule is the one the campaign file declared before any KPI was
seen, and the guaranteed KPI is reported at failure probability 1 - ``[kpi].target``. A KPI the endpoint did not
report (no token counts, no streaming for ``ttft_s``) is skipped with the reason, and the other KPIs still run.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import pandas as pd

from ..errors import AssayBackendError, AssayInputError
from .prompts import render_bank, sample_count, uniform_sample
from .spec import Campaign, ModelSpec

__all__ = ["campaign_run_id", "section_run_id", "section_seed", "make_model", "load_bank", "run_sample", "kpi_section"]

#: PS-DME's name for each band the campaign file may declare
_BANDS = {"dkw": "dkw", "bj": "berk-jones"}


def campaign_run_id(c: Campaign) -> str:
    """The campaign's run id: its name, the fingerprint of its file's content and its seed (same file, same id).

    Parameters
    ----------
    c : Campaign
        The campaign.

    Returns
    -------
    str
        ``eval-<name>-<first 8 characters of the fingerprint>-s<seed>``.
    """
    return f"eval-{c.name}-{c.fingerprint()[:8]}-s{c.seed}"


def section_run_id(c: Campaign, model: str, section: str) -> str:
    """The journal run of one model's part of one section.

    Parameters
    ----------
    c : Campaign
        The campaign.
    model : str
        The model's name.
    section : str
        The section's name.

    Returns
    -------
    str
        ``<campaign run id>/<model>/<section>``.

    Examples
    --------
    >>> from assay.eval.spec import parse_campaign
    >>> c = parse_campaign({"campaign": {"name": "t", "seed": 5}, "scope": {"budget": 5},
    ...                     "model": [{"name": "a", "endpoint": "http://127.0.0.1:9/v1", "model": "m"}]})
    >>> section_run_id(c, "a", "scope")
    'eval-t-...-s5/a/scope'
    """
    return f"{campaign_run_id(c)}/{model}/{section}"


def section_seed(c: Campaign, section: str, model: str | None = None) -> int:
    """The seed of one section's draws for one model (or, ``model=None``, for the section as a whole).

    It is a child of the campaign seed, spawned by the section's place in :data:`~assay.eval.spec.SECTIONS` and the
    model's place in the file (DESIGN's seed rule). Sections and models draw independent streams, and adding a section
    or a model after the others changes nobody else's draws.

    The models' own ``seed`` request parameter stays the campaign seed (:func:`make_model`): it is part of every
    journaled request, and a new value would make answers already paid for look new.

    Parameters
    ----------
    c : Campaign
        The campaign.
    section : str
        The section's name, one of :data:`~assay.eval.spec.SECTIONS`.
    model : str, optional
        The model's name; None: the section as a whole.

    Returns
    -------
    int
        The seed.

    Examples
    --------
    >>> from assay.eval.spec import parse_campaign
    >>> c = parse_campaign({"campaign": {"name": "t", "seed": 5}, "scope": {"budget": 5},
    ...                     "model": [{"name": "a", "endpoint": "http://127.0.0.1:9/v1", "model": "m"}]})
    >>> section_seed(c, "scope", "a"), section_seed(c, "scope")
    (3509516835, 3767054407)
    """
    from .spec import SECTIONS

    key = (SECTIONS.index(section),) if model is None else (
        SECTIONS.index(section), [m.name for m in c.models].index(model))
    return int(np.random.SeedSequence(c.seed, spawn_key=key).generate_state(1)[0])


def make_model(m: ModelSpec, seed: int | None = None):
    """The :class:`~assay.models.Model` that asks ``m``'s endpoint (chat, or completions for a pretrained model).

    Parameters
    ----------
    m : ModelSpec
        The ``[[model]]`` section: model name, endpoint, API key variable and generation settings.
    seed : int, optional
        The sampling seed sent with each request.

    Returns
    -------
    OpenAIChatModel or OpenAICompletionModel
        The model client.
    """
    from ..models import OpenAIChatModel, OpenAICompletionModel

    cls = OpenAICompletionModel if m.completions else OpenAIChatModel
    return cls(m.model, base_url=m.endpoint, api_key_env=m.api_key_env, temperature=m.temperature,
               max_tokens=m.max_tokens, seed=seed, timeout=m.timeout, system_prompt=m.system,
               context_window=m.context_window, stream=m.stream)


def load_bank(c: Campaign) -> pd.DataFrame:
    """The bank indexed by item id with ``prompt``, ``reference``, ``scorer`` and, if named, ``choices``.

    Parameters
    ----------
    c : Campaign
        The campaign, with a ``[bank]`` section.

    Returns
    -------
    DataFrame
        The bank; without a scorer column every item gets ``[bank].scorer``.

    Raises
    ------
    AssayInputError
        If the campaign has no ``[bank]``, or the bank file cannot be read as one.
    """
    from ..data.bank import read_bank

    b = c.bank
    if b is None:
        raise AssayInputError(f"{c.source}: this section needs a [bank]")
    bank = read_bank(b.path, id_col=b.id_col, prompt_col=b.prompt_col, reference_col=b.reference_col,
                     scorer_col=b.scorer_col, choices_col=b.choices_col, label=f"{c.source}: [bank].")
    if b.scorer_col is None:
        bank["scorer"] = b.scorer
    from ..models.scoring import check_references  # a reference its scorer cannot use: before any request

    check_references(bank["scorer"].astype(str).tolist(), bank["reference"].tolist(), bank.index,
                     where=f"{c.source}: [bank]")
    return bank


def run_sample(c: Campaign, *, bank: pd.DataFrame | None = None, journal=None,
               models: Callable[[ModelSpec], object] | None = None,
               progress: Callable[[str, dict], None] | None = None, only: list[str] | None = None,
               reuse: bool = False) -> pd.DataFrame:
    """Ask every model (or the ones named in ``only``) the campaign's shared sample.

    The result has one row per (model, item) with the question, reference, answer, its score and KPIs.

    Parameters
    ----------
    c : Campaign
        The campaign.
    bank : DataFrame, optional
        The campaign's bank, when the caller has read it (:func:`load_bank`).
    journal : str or Path, optional
        The journal file (default: the user cache's).
    models : callable, optional
        Builds the Model of a spec (default :func:`make_model`; tests pass their own).
    progress : callable, optional
        ``progress(model_name, stats)`` is called as requests complete.
    only : list of str, optional
        The models to ask (default: all).
    reuse : bool, default False
        An answer the journal holds for the same request from any run (FAQ's, of the same campaign) is read, not
        bought again.

    Returns
    -------
    DataFrame
        Columns ``model, item, question, reference, prompt, text, status, score, latency_s, ttft_s, prompt_tokens,
        completion_tokens, cached, run_id, cost``.

    Raises
    ------
    AssayInputError
        When the campaign has no bank or the bank is invalid.
    AssayBackendError
        When requests to a model fail after retries (the answers obtained are in the journal: rerun to ask only the
        missing ones).
    """
    from ..models import run as run_model
    from ..models.journal import default_path
    from ..models.scoring import score_rows

    bank = load_bank(c) if bank is None else bank
    ids = uniform_sample(list(bank.index), sample_count(c.bank.sample, len(bank)), c.seed)
    sub = bank.loc[ids]
    frames = []
    for m in c.models:
        if only is not None and m.name not in only:
            continue
        llm = (models or (lambda spec: make_model(spec, c.seed)))(m)
        prompts = render_bank(m.template, sub)
        res = run_model(llm, prompts, journal=journal or default_path(), run_id=section_run_id(c, m.name, "sample"),
                        concurrency=m.concurrency, timeout=m.timeout, reuse=reuse,
                        progress=(lambda st, name=m.name: progress(name, st)) if progress else None)
        failed = [r for r in res.responses if r.error is not None]
        if failed:
            raise AssayBackendError(f"{len(failed)} of {len(prompts)} requests to model {m.name!r} failed after "
                                    f"retries ({failed[0].error}); the answers obtained are in the journal: rerun the "
                                    "same campaign to ask only the missing ones")
        outs = score_rows([r.text for r in res.responses], sub["reference"].tolist(), sub["scorer"].tolist(),
                          c.bank.policy, outcomes=[r.outcome for r in res.responses], prompts=prompts,
                          finish_reasons=[r.finish_reason for r in res.responses])
        rows = pd.DataFrame([r.to_dict() for r in res.responses])
        frames.append(pd.DataFrame({
            "model": m.name, "item": ids, "question": sub["prompt"].astype(str).to_numpy(),
            "reference": sub["reference"].to_numpy(), "prompt": prompts, "text": rows["text"],
            "status": [o.status for o in outs],
            "score": [o.final_score for o in outs], "latency_s": rows["latency_s"].astype(float),
            "ttft_s": pd.to_numeric(rows["ttft_s"], errors="coerce"),
            "prompt_tokens": pd.to_numeric(rows["prompt_tokens"], errors="coerce"),
            "completion_tokens": pd.to_numeric(rows["completion_tokens"], errors="coerce"),
            "cached": rows["cached"].astype(bool), "run_id": res.run_id}))
    out = pd.concat(frames, ignore_index=True)
    prices = {m.name: (m.price_in, m.price_out) for m in c.models}
    p_in = out["model"].map(lambda n: prices[n][0])
    p_out = out["model"].map(lambda n: prices[n][1])
    out["cost"] = (out["prompt_tokens"] * p_in + out["completion_tokens"] * p_out) / 1e6
    return out


def _rule(c: Campaign) -> str:
    k = c.kpi
    return {"all": "all", "best_mean": "top:1"}.get(k.select, f"top:{k.k}")


def kpi_section(c: Campaign, rows: pd.DataFrame) -> tuple[dict, dict[str, str]]:
    """PS-DME per KPI of ``c.kpi.metrics`` on the sample's rows.

    A KPI the endpoint did not report for some model is skipped with the reason (for ``ttft_s``: set
    ``stream = true`` in ``[[model]]``).

    Parameters
    ----------
    c : Campaign
        The campaign, with a ``[kpi]`` section.
    rows : DataFrame
        The sample's rows: a ``model`` column and one column per metric.

    Returns
    -------
    results : dict of str to PsdmeResult
        ``{metric: PsdmeResult}``.
    skipped : dict of str to str
        ``{metric: why skipped}``.
    """
    from .. import psdme

    k = c.kpi
    results, skipped = {}, {}
    for metric in k.metrics:
        vals = pd.to_numeric(rows[metric], errors="coerce")
        missing = rows.loc[vals.isna(), "model"].unique()
        if len(missing):
            skipped[metric] = (f"the endpoint did not report {metric} for {len(missing)} model(s) "
                               f"({', '.join(map(str, missing[:3]))})"
                               + ("; set stream = true in [[model]] to measure the time to the first token"
                                  if metric == "ttft_s" else ""))
            continue
        # the KPI column keeps the metric's name, so the result (its tables, plots and words) says "latency_s"
        table = pd.DataFrame({"config": rows["model"].to_numpy(), metric: vals.to_numpy(float)})
        results[metric] = psdme.bands(table, columns={"kpi": metric}, select=_rule(c), delta=c.delta,
                                      band=_BANDS[k.band], gammas=(round(1.0 - k.target, 12),),
                                      seed=section_seed(c, "kpi"),
                                      tradeoff_points=0)
    return results, skipped
