"""What a campaign will ask and what it may cost, before anything is paid (``assay eval --plan``).

Per model (configuration) and section, the plan gives the most requests the section can send, the prompt tokens
they carry (measured on the bank's own prompts rendered with the model's template: characters / 4, the usual
rule of thumb for English text with BPE tokenizers, so an estimate) and the most completion tokens
(``max_tokens`` per answer, an upper bound), priced at the model's ``price_in`` / ``price_out``. The numbers are
upper bounds in requests: FAQ may stop early (``until_width``), answers FAQ bought are read from the journal when
the shared sample asks them again, and a resumed run pays only for what is missing.

Sections that cannot run are listed with the reason, and the rest still run. A plan over a ``[budget]`` cap is
an :class:`~assay.errors.AssayInputError` naming the cap and what to lower, raised before any request.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd

from .. import checks
from ..errors import AssayInputError
from .prompts import sample_count
from .spec import Campaign, ModelSpec

__all__ = ["Plan", "PlanRow", "plan", "sample_count", "CHARS_PER_TOKEN"]

#: why the judge section is skipped without human labels (the plan and the run say the same)
NO_HUMAN_LABELS = ("no human labels ([judge].human_labels): R-AutoEval+ certifies a risk from a few human labels and "
                   "many judge labels, and without human ones the judge's bias is unknown")
#: characters per token used to estimate prompt tokens before any request (the common rule of thumb for English)
CHARS_PER_TOKEN = 4.0


@dataclass
class PlanRow:
    """One (model, section): at most ``requests`` requests to the model, and what they may cost."""

    model: str
    section: str
    requests: int
    prompt_tokens: int  # estimated (characters / CHARS_PER_TOKEN)
    completion_tokens: int  # upper bound (max_tokens per request)
    dollars: float  # upper bound at the model's prices
    note: str = ""


@dataclass
class Plan:
    """The campaign's plan: one row per (model, section) that sends requests, the sections skipped with their
    reasons, the judge's requests, and per-model totals checked against ``[budget]``."""

    campaign: str
    fingerprint: str
    bank_size: int | None
    sample_size: int | None
    rows: list[PlanRow] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    judge_requests: int = 0
    notes: list[str] = field(default_factory=list)
    #: the items of the shared uniform sample (drawn from the seed alone): the ones human labels must be for
    sample_items: list[str] = field(default_factory=list)

    def totals(self) -> dict[str, dict]:
        """Per model: requests, prompt tokens, completion tokens and dollars summed over its sections."""
        out: dict[str, dict] = {}
        for r in self.rows:
            t = out.setdefault(r.model, {"requests": 0, "prompt_tokens": 0, "completion_tokens": 0, "dollars": 0.0})
            t["requests"] += r.requests
            t["prompt_tokens"] += r.prompt_tokens
            t["completion_tokens"] += r.completion_tokens
            t["dollars"] += r.dollars
        return out

    def to_dict(self) -> dict:
        return {"campaign": self.campaign, "fingerprint": self.fingerprint, "bank_size": self.bank_size,
                "sample_size": self.sample_size, "rows": [asdict(r) for r in self.rows], "skipped": self.skipped,
                "judge_requests": self.judge_requests, "totals": self.totals(), "notes": self.notes,
                "sample_items": self.sample_items}


def _lengths(template: str, bank: pd.DataFrame) -> np.ndarray:
    """Lengths in characters of the bank's prompts put in the template, exactly as they are asked."""
    from .prompts import render_bank

    return np.array([len(p) for p in render_bank(template, bank)], dtype=float)


def _prompt_tokens(m: ModelSpec, lens: np.ndarray, n: int) -> int:
    """Estimated prompt tokens of ``n`` requests with the bank's mean prompt length."""
    extra = len(m.system) if m.system else 0
    return int(round(n * (float(lens.mean()) + extra) / CHARS_PER_TOKEN)) if n and lens.size else 0


def _row(m: ModelSpec, section: str, n: int, lens: np.ndarray | None, note: str = "") -> PlanRow:
    pt = _prompt_tokens(m, lens, n) if lens is not None else 0
    ct = n * m.max_tokens
    return PlanRow(model=m.name, section=section, requests=int(n), prompt_tokens=pt, completion_tokens=ct,
                   dollars=(pt * m.price_in + ct * m.price_out) / 1e6, note=note)



def plan(c: Campaign, bank: pd.DataFrame | None = None) -> Plan:
    """The plan of campaign ``c`` (module docstring).

    Reads the bank (to count and measure its prompts), never a model.

    Parameters
    ----------
    c : Campaign
        The campaign.
    bank : DataFrame, optional
        The bank already read by :func:`~assay.eval.sample.load_bank`; None reads it.

    Returns
    -------
    Plan
        Per model and section the most requests, prompt and completion tokens and their price, with the skipped
        sections and notes.

    Raises
    ------
    AssayInputError
        If the plan is over a ``[budget]`` cap (questions, tokens or dollars), raised before any request.
    """
    p = Plan(campaign=c.name, fingerprint=c.fingerprint(), bank_size=None, sample_size=None)
    lens = None
    if c.bank is not None:
        if bank is None:
            from .sample import load_bank

            bank = load_bank(c)
        p.bank_size = len(bank)
    uses_sample = [s for s in ("judge", "kpi", "siren") if getattr(c, s) is not None]
    if uses_sample:
        from .prompts import uniform_sample

        p.sample_size = sample_count(c.bank.sample, p.bank_size)
        p.sample_items = [str(i) for i in uniform_sample(list(bank.index), p.sample_size, c.seed)]
    if c.judge is not None and c.judge.human_labels is None:
        p.skipped["judge"] = NO_HUMAN_LABELS
    n_hist = None
    for m in c.models:
        if c.bank is not None:
            lens = _lengths(m.template, bank)
        if c.faq is not None:
            if n_hist is None:
                from ..data.faq import history_items, read_answers

                n_hist = len(history_items(read_answers(c.faq.history, "[faq].history")))
                if n_hist != p.bank_size:
                    p.notes.append(f"FAQ asks from the {n_hist} questions of the history (the bank has "
                                   f"{p.bank_size}); its budget is a share of those")
            n_b, _ = checks.fraction_or_count(c.faq.budget, n_hist, "[faq].budget")
            p.rows.append(_row(m, "faq", n_b, lens, "at most: stops early with until_width" if c.faq.until_width
                               else "adaptively chosen questions"))
        if uses_sample:
            n_u = p.sample_size
            shared = [s for s in uses_sample if s not in p.skipped]
            if shared:
                note = (f"one uniform sample shared by {', '.join(shared)}"
                        + ("; questions FAQ already asked are read from the journal" if c.faq is not None else ""))
                p.rows.append(_row(m, "sample", n_u, lens, note))
        if c.compare is not None:
            n_c, _ = checks.fraction_or_count(c.compare.budget, p.bank_size, "[compare].budget")
            p.rows.append(_row(m, "compare", n_c, lens, f"at most: stops once goal {c.compare.goal} is met, a model "
                               "earlier once the goal needs no more of it (assay compare --replay estimates it)"))
        if c.scope is not None:
            # generated questions: their length is unknown before generation, so only the requests are planned
            p.rows.append(_row(m, "scope", c.scope.budget, None, "generated questions (prompt tokens not estimated)"))
    if c.judge is not None and "judge" not in p.skipped:
        p.judge_requests = p.sample_size * len(c.models)
    if c.kpi is not None:
        p.notes.append("kpi sends no request of its own: it reads the latency and tokens of the sample's requests")
    if c.siren is not None:
        p.notes.append("siren sends no request of its own: it scores every configuration on the shared sample")
    _check_budget(c, p)
    return p


def _check_budget(c: Campaign, p: Plan) -> None:
    cap = c.budget
    for model, t in p.totals().items():
        if cap.questions is not None and t["requests"] > cap.questions:
            raise AssayInputError(
                f"{c.source}: the plan asks model {model!r} up to {t['requests']} questions, over [budget].questions "
                f"= {cap.questions}; lower [faq].budget, [bank].sample or [scope].budget, or raise the cap")
        if cap.tokens is not None and t["prompt_tokens"] + t["completion_tokens"] > cap.tokens:
            raise AssayInputError(
                f"{c.source}: the plan may spend up to {t['prompt_tokens'] + t['completion_tokens']} tokens on model "
                f"{model!r} (prompt tokens estimated, completion tokens at max_tokens), over [budget].tokens = "
                f"{cap.tokens}; lower max_tokens or the section budgets, or raise the cap")
        if cap.dollars is not None and t["dollars"] > cap.dollars:
            raise AssayInputError(
                f"{c.source}: the plan may cost up to ${t['dollars']:.4f} on model {model!r}, over [budget].dollars = "
                f"{cap.dollars:g}; lower max_tokens or the section budgets, or raise the cap")
