"""The prompts a campaign sends and the uniform sample its sections share.

:func:`render` puts a bank item into a model's template by plain text replacement of ``{question}`` and
``{choices}`` (never ``str.format``: a prompt may hold JSON or code braces, which stay as written).

:func:`uniform_sample` draws the campaign's shared sample of the bank: ``n`` distinct item ids, uniformly
without replacement, from the campaign seed alone. R-AutoEval+, PS-DME and SIREN need items drawn at random
(FAQ's adaptively chosen questions are not), and a resumed run must draw the same items, so the draw depends
only on the seed and the bank's ids (in the bank's order), never on what was asked before.
"""

from __future__ import annotations

import re
from typing import Sequence

import numpy as np

from .. import checks
from ..errors import AssayInputError

__all__ = ["render", "render_bank", "uniform_sample", "SAMPLE_STREAM"]

#: the child of the campaign seed that draws the shared sample (other sections use other children)
SAMPLE_STREAM = 1
_PLACEHOLDER = re.compile(r"\{question\}|\{choices\}")


def render(template: str, question: str, choices: str | None = None) -> str:
    """``template`` with ``{question}`` (and ``{choices}``) replaced by the item's text; other braces stay.

    The replacement is one pass, so a question that itself contains ``"{choices}"`` is left as written.

    Parameters
    ----------
    template : str
        The model's prompt template.
    question : str
        The item's question.
    choices : str, optional
        The item's answer choices as text.

    Returns
    -------
    str
        The prompt.

    Raises
    ------
    AssayInputError
        When the template uses ``{choices}`` but the item has none (``[bank].choices_col``).

    Examples
    --------
    >>> print(render("Q: {question} {json} Choices: {choices}", "2+2?", "A) 4"))
    Q: 2+2? {json} Choices: A) 4
    """
    if "{choices}" in template and choices is None:
        raise AssayInputError("the template uses {choices} but the item has none ([bank].choices_col)")
    # one pass, so a question that itself contains "{choices}" is left as written
    values = {"{question}": question, "{choices}": choices}
    return _PLACEHOLDER.sub(lambda m: values[m.group(0)] if values[m.group(0)] is not None else m.group(0), template)


def render_bank(template: str, bank) -> list[str]:
    """Every question of ``bank`` (its ``prompt`` and, when present, ``choices`` columns) put in ``template``.

    The one place a campaign renders its prompts (the plan measures these, the sample, FAQ and compare ask them).

    Parameters
    ----------
    template : str
        The prompt template, with ``{question}`` (and ``{choices}``) (see :func:`render`).
    bank : DataFrame
        The bank, with a ``prompt`` and optionally a ``choices`` column.

    Returns
    -------
    list of str
        One prompt per row of ``bank``, in order.

    Examples
    --------
    >>> import pandas as pd
    >>> render_bank("Q: {question} {choices}", pd.DataFrame({"prompt": ["2+2?"], "choices": ["A) 4 B) 5"]}))
    ['Q: 2+2? A) 4 B) 5']
    """
    choices = bank["choices"] if "choices" in bank.columns else [None] * len(bank)
    return [render(template, str(q), None if ch is None else str(ch)) for q, ch in zip(bank["prompt"], choices)]


def uniform_sample(ids: Sequence[str], n: int, seed: int) -> list[str]:
    """``n`` distinct ids of ``ids`` drawn uniformly without replacement from ``seed``.

    All of them are returned, in a random order, when ``n >= len(ids)``. The draw uses the :data:`SAMPLE_STREAM`
    child of the seed.

    Parameters
    ----------
    ids : sequence of str
        The bank's ids, in the bank's order (unique).
    n : int
        The sample size (at least 1).
    seed : int
        The campaign seed.

    Returns
    -------
    list of str
        The sampled ids, in the order drawn.

    Raises
    ------
    AssayInputError
        When the ids are not unique, the bank is empty, or ``n < 1``.

    Examples
    --------
    >>> uniform_sample(["a", "b", "c", "d", "e"], 3, seed=0)
    ['e', 'd', 'c']
    """
    ids = list(ids)
    if len(set(ids)) != len(ids):
        raise AssayInputError("the bank's ids are not unique; the shared sample needs one id per item")
    if not ids:
        raise AssayInputError("the bank is empty: there is nothing to sample")
    if n < 1:
        raise AssayInputError(f"the sample size must be at least 1; got {n}")
    rng = np.random.default_rng(np.random.SeedSequence(int(seed)).spawn(SAMPLE_STREAM + 1)[SAMPLE_STREAM])
    pick = rng.permutation(len(ids))[: min(int(n), len(ids))]
    return [ids[i] for i in pick]

def sample_count(size: float | int, N: int) -> int:
    """``[bank].sample`` (a fraction of the bank or a count) -> a count of at most N, by the one budget rule
    (:func:`assay.checks.fraction_or_count`: fewer than 2 questions is refused)."""
    return checks.fraction_or_count(size, N, "[bank].sample")[0]
