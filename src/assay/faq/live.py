"""Live querying for FAQ: ask a model one question at a time through the crash-safe journal.

:class:`LiveAnswerer` turns a :class:`~assay.models.Model` and an item bank (id, prompt, reference) into the
callable ``answer(item_id) -> 0/1`` that :func:`assay.faq.evaluate` accepts. Every request goes through
:func:`assay.models.run` with a journal, so a run interrupted at any point resumes: rerun with the same
``run_id`` and the same FAQ seed, FAQ draws the same questions (its draws depend only on the seed and the
answers), the journal answers those already asked, and only the rest are requested.

Outcomes (:mod:`assay.models.outcomes`). An endpoint failure (timeout, transport error after the retries)
raises :class:`~assay.errors.AssayBackendError`: the answer is unknown and FAQ cannot use a missing label (the
answers obtained so far stay in the journal). The model's failures on the item (an unparseable answer, a prompt
too long for its context window, a refusal or an empty answer) follow ``policy``: ``"wrong"`` (default: counted as a
wrong answer, as lm-evaluation-harness and inspect-ai score them) or ``"missing"`` (stop with an error). Each is
counted in :attr:`LiveAnswerer.counts`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from ..data.bank import read_bank
from ..errors import AssayBackendError, AssayInputError

__all__ = ["LiveAnswerer", "read_bank", "TOO_LONG_STOP"]

#: a live FAQ run stops with an input error when its first this-many questions were all too long for the model
TOO_LONG_STOP = 10


class LiveAnswerer:
    """``answer(item_id) -> 0 or 1`` by querying ``model`` on the bank's prompt and scoring against its reference.

    ``reuse``: an answer the journal holds for the same request (model, prompt, parameters) from any run is read, not
    asked again (as :func:`assay.models.run` with ``reuse=True``).

    ``name``: the model's name in FAQ's tables (default "new").

    Attributes: ``run_id`` (journal run; pass it back to resume), ``n_requests`` (answers that needed a request),
    ``n_cached`` (answers found in the journal), ``outcomes`` (item id -> scoring outcome dict).
    """

    def __init__(self, model, bank, *, scorer: Any = "exact", policy: str = "wrong", journal=None,
                 run_id: str | None = None, timeout: float | None = 60.0, max_retries: int = 6,
                 id_col: str = "id", prompt_col: str = "prompt", reference_col: str = "reference",
                 reuse: bool = False, name: str | None = None) -> None:
        from ..models.scoring import SCORERS, make_scorer

        if policy not in ("wrong", "missing"):
            raise AssayInputError(f"policy must be 'wrong' or 'missing' for FAQ (a label is needed); got {policy!r}")
        self.model = model
        by_column = isinstance(scorer, str) and scorer not in SCORERS and isinstance(bank, (pd.DataFrame, str, Path))
        self.bank = read_bank(bank, id_col=id_col, prompt_col=prompt_col, reference_col=reference_col)
        if by_column:
            raw = bank if isinstance(bank, pd.DataFrame) else None
            if raw is None:
                from ..data import read_table

                raw = read_table(bank, text_columns=(id_col,))
            if scorer not in raw.columns:
                raise AssayInputError(f"unknown scorer {scorer!r}: neither a scorer ({', '.join(SCORERS)}) nor a column "
                                      f"of the item bank ({', '.join(map(str, raw.columns))})")
            self.bank = read_bank(raw, id_col=id_col, prompt_col=prompt_col, reference_col=reference_col,
                                  scorer_col=scorer)
            self.scorers = {name: make_scorer(name) for name in self.bank["scorer"].unique()}
        self.scorer = None if by_column else make_scorer(scorer)
        from ..models.scoring import check_references  # a reference the scorer cannot use: before any request

        check_references([self.scorers[x] for x in self.bank["scorer"]] if by_column else self.scorer,
                         self.bank["reference"].tolist(), self.bank.index)
        self.scorer_name = scorer if isinstance(scorer, str) else getattr(scorer, "__name__", "custom")
        self.policy = policy
        self.journal = journal
        self.run_id = run_id
        self.timeout = timeout
        self.max_retries = max_retries
        self.reuse = bool(reuse)
        self.name = str(name) if name else "new"
        self.n_requests = 0
        self.n_cached = 0
        self.outcomes: dict[str, dict] = {}

    @property
    def counts(self) -> dict[str, int]:
        """How the questions asked so far ended: ``{outcome: n}`` (:mod:`assay.models.outcomes`)."""
        from ..models.outcomes import counts_of

        return counts_of(o["status"] for o in self.outcomes.values())

    @property
    def cut_off(self) -> int:
        """How many of the answers so far were cut off at the token limit (finish reason ``length``)."""
        return sum(o.get("finish_reason") == "length" for o in self.outcomes.values())

    @property
    def items(self) -> list[str]:
        return list(self.bank.index)

    def _journal(self):
        from ..models.journal import open_journal

        return open_journal(self.journal)

    def recorded_meta(self) -> dict | None:
        """The FAQ settings recorded when this run was started (None for a new run or no journal)."""
        if self.run_id is None:
            return None
        j, own = self._journal()
        if j is None:
            return None
        try:
            if not j.has_run(self.run_id):
                return None
            return j.run(self.run_id)["meta"].get("faq")
        finally:
            if own:
                j.close()

    def bind(self, meta: dict) -> None:
        """Record FAQ's settings (seed, budget, factors fingerprint, policy, items) in the run, or check them on resume.

        A run is resumed only with exactly the settings it was started with: any other seed, budget, factors or
        policy draws other questions, so the journal's answers would silently mix two runs. Mismatch ->
        :class:`~assay.errors.AssayInputError` naming what differs.
        """
        j, own = self._journal()
        if j is None:
            return
        try:
            if self.run_id is not None and j.has_run(self.run_id):
                stored = j.run(self.run_id)["meta"].get("faq")
                if stored is not None:
                    diff = [k for k in sorted(set(stored) | set(meta)) if stored.get(k) != meta.get(k)]
                    if diff:
                        parts = "; ".join(f"{k}: started with {stored.get(k)!r}, now {meta.get(k)!r}" for k in diff)
                        raise AssayInputError(
                            f"run {self.run_id} was started with other FAQ settings ({parts}). Resuming it would mix "
                            "the answers of two different runs: repeat the original settings (the seed is reused "
                            "when none is given), or start a new run (run_id=None)")
                    return
            self.run_id = j.start_run(self.run_id, meta={"faq": meta})
        finally:
            if own:
                j.close()

    def __call__(self, item_id: str) -> int:
        from ..models import run
        from ..models.scoring import score_rows

        item_id = str(item_id)
        if item_id not in self.bank.index:
            raise AssayInputError(f"item {item_id!r} is not in the item bank")
        row = self.bank.loc[item_id]
        res = run(self.model, [row["prompt"]], journal=self.journal, run_id=self.run_id, timeout=self.timeout,
                  max_retries=self.max_retries, reuse=self.reuse)
        self.run_id = res.run_id
        cached = int(res.stats.get("cached", 0))
        self.n_cached += cached
        self.n_requests += 1 - cached
        resp = res.responses[0]
        if resp.error:
            raise AssayBackendError(f"item {item_id!r}: the endpoint failed after retries ({resp.error}); answers so far "
                                    f"are in the journal, resume with run id {self.run_id}")
        scorer = self.scorer if self.scorer is not None else self.scorers[row["scorer"]]
        out = score_rows([resp.text], [row["reference"]], [scorer], self.policy, outcomes=[resp.outcome],
                         prompts=[row["prompt"]], finish_reasons=[resp.finish_reason])[0]
        self.outcomes[item_id] = {**out.to_dict(), "finish_reason": resp.finish_reason}
        statuses = [o["status"] for o in self.outcomes.values()]
        if len(statuses) >= TOO_LONG_STOP and all(st == "too_long" for st in statuses):
            raise AssayInputError(f"the first {len(statuses)} questions asked are all too long for the model's context "
                                  f"window ({resp.detail}); the bank's prompts do not fit this model: shorten them or "
                                  f"serve the model with a larger window (answers so far are in run {self.run_id})")
        if out.final_score is None:
            raise AssayBackendError(f"item {item_id!r}: the answer could not be scored ({out.status}: "
                                    f"{(resp.text or '')[:80]!r}) and policy is 'missing'; use policy 'wrong' to count "
                                    "unparseable answers as wrong")
        return int(round(float(out.final_score)))
