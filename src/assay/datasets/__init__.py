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


def synthetic_autoeval(seed: int = 0, n: int = 400, ratio: int = 5, judge_accuracy: float = 0.9) -> pd.DataFrame:
    """A synthetic R-AutoEval+ table (no real data with a redistribution licence exists for it).

    Five hypothetical quantized models with true risks 0.02 / 0.05 / 0.08 / 0.11 / 0.30 and memory
    12 / 10 / 8 / 6 / 4 GB; human losses are Bernoulli(risk); the judge reports the human loss with
    probability ``judge_accuracy`` and flips it otherwise. ``n`` labelled and ``ratio * n``
    unlabelled examples per model (the same example ids for every model).
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    frames = []
    ids = [f"ex{i:05d}" for i in range((ratio + 1) * n)]
    for name, risk, gb in (("q12", 0.02, 12), ("q10", 0.05, 10), ("q8", 0.08, 8), ("q6", 0.11, 6), ("q4", 0.30, 4)):
        loss = (rng.random(len(ids)) < risk).astype(float)
        judge = np.where(rng.random(len(ids)) < judge_accuracy, loss, 1.0 - loss)
        human = loss.copy()
        human[n:] = np.nan
        frames.append(pd.DataFrame({"candidate": name, "item": ids, "loss_human": human, "loss_judge": judge,
                                    "memory_gb": gb}))
    return pd.concat(frames, ignore_index=True)
