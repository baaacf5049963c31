"""Small real data sets shipped inside the package (see README.md in this folder for provenance)."""

from __future__ import annotations

from importlib import resources

import pandas as pd

__all__ = ["load_siren_law", "SHIPPED", "path"]

SHIPPED = {
    "siren-law": (
        "siren_law_dspy.parquet",
        "MMLU-Pro Law, DSPy-tuned prompts for 3 open models at 4 budgets + default, 1,001 items (SIREN)",
    ),
}


def path(name: str) -> str:
    """File system path of a shipped data set (usable with ``assay siren PATH``)."""
    from ..errors import AssayInputError

    if name not in SHIPPED:
        raise AssayInputError(f"no shipped data set {name!r}; available: {', '.join(SHIPPED)}")
    return str(resources.files(__package__).joinpath(SHIPPED[name][0]))


def load_siren_law() -> pd.DataFrame:
    """MMLU-Pro Law, DSPy tuner, 3 open models: a tidy SIREN table (69,069 rows).

    Columns ``system, budget, artifact, item, score``: for each of Qwen3-8B, Llama-3.1-8B-Instruct
    and Mistral-7B-Instruct-v0.3, the frozen shortlist at token budgets 500K / 1.5M / 3M / 6.5M
    (K = 4-6 artifacts) and the untuned default prompt (budget 0), each scored 0/1 on the same
    1,001 evaluation items. From the public SIREN release (MIT); items from MMLU-Pro (MIT).
    """
    with resources.files(__package__).joinpath("siren_law_dspy.parquet").open("rb") as fh:
        df = pd.read_parquet(fh)
    for c in ("system", "artifact"):
        df[c] = df[c].astype(str)
    df["item"] = df["item"].astype(str)
    df["score"] = df["score"].astype(float)
    return df
