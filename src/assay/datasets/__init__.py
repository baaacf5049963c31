"""Small real data sets shipped inside the package (see README.md in this folder for provenance)."""

from __future__ import annotations

from importlib import resources

import pandas as pd

__all__ = ["load_basics", "load_siren_law", "load_llmperf", "synthetic_autoeval", "simulated_faq", "load_faq_factors",
           "SHIPPED", "path", "FAQ_PACKS", "faq_packs", "load_faq_pack", "faq_pack_index", "faq_pack_factors",
           "read_faq_pack_answers"]

SHIPPED = {
    "siren-law": (
        "siren_law_dspy.parquet",
        "MMLU-Pro Law, DSPy-tuned prompts for 3 open models at 4 budgets + default, 1,001 items (SIREN)",
    ),
    "basics": (
        "basics.parquet",
        "303 easy questions in four answer shapes (number, True/False, multiple choice, one word), written here, for "
        "live runs: id, prompt, reference, scorer",
    ),
}


def path(name: str) -> str:
    """File system path of a shipped data set (usable with ``assay siren PATH``).

    Parameters
    ----------
    name : str
        A key of :data:`SHIPPED` (``siren-law``, ``basics``).

    Returns
    -------
    str
        The path of the data set's file.

    Raises
    ------
    AssayInputError
        If no data set of that name is shipped.
    """
    from ..errors import AssayInputError

    if name not in SHIPPED:
        raise AssayInputError(f"no shipped data set {name!r}; available: {', '.join(SHIPPED)}")
    return str(resources.files(__package__).joinpath(SHIPPED[name][0]))


def load_basics() -> pd.DataFrame:
    """The ``basics`` item bank (:mod:`assay.benchmarks.basics`, ``make_bank(seed=0)``).

    303 distinct questions with columns ``id, prompt, reference, scorer, shape, topic``; ``scorer`` names the scorer
    that reads each item's answer.

    Returns
    -------
    DataFrame
        One row per question; ``id`` and ``reference`` as text.
    """
    with resources.files(__package__).joinpath("basics.parquet").open("rb") as fh:
        df = pd.read_parquet(fh)
    return df.astype({"id": str, "reference": str})


def load_siren_law() -> pd.DataFrame:
    """MMLU-Pro Law, DSPy tuner, 3 open models: a tidy SIREN table (69,069 rows).

    Columns ``system, budget, artifact, item, score``: for each of Qwen3-8B, Llama-3.1-8B-Instruct
    and Mistral-7B-Instruct-v0.3, the frozen shortlist at token budgets 500K / 1.5M / 3M / 6.5M
    (K = 4-6 artifacts) and the untuned default prompt (budget 0), each scored 0/1 on the same
    1,001 evaluation items. From the public SIREN release (MIT); items from MMLU-Pro (MIT).

    Returns
    -------
    DataFrame
        The tidy table (``system``, ``artifact`` and ``item`` as text, ``score`` as float).
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

    Parameters
    ----------
    seed : int, optional
        The seed of the random draws. Default 0.
    n : int, optional
        The number of labelled examples per model. Default 400.
    ratio : int, optional
        The number of unlabelled examples per labelled one. Default 5.
    judge_accuracy : float, optional
        The probability that the judge reports the human loss. Default 0.9.

    Returns
    -------
    pandas.DataFrame
        One row per model and example, columns ``candidate, item, loss_human, loss_judge, memory_gb``
        (``loss_human`` NaN on the unlabelled examples).

    Examples
    --------
    >>> df = synthetic_autoeval(n=100, ratio=2)
    >>> df.shape, df["candidate"].unique().tolist(), int(df["loss_human"].notna().sum())
    ((1500, 5), ['q12', 'q10', 'q8', 'q6', 'q4'], 500)
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


def load_llmperf() -> pd.DataFrame:
    """LLMPerf leaderboard per-request latencies: a tidy PS-DME table (2,845 rows, K = 19 configurations).

    Columns ``config, ttft_s, end_to_end_latency_s, error``: one row per request; ``config`` is a
    (provider, Llama-2 chat model size) API endpoint such as ``anyscale_7b`` or ``groq_70b``; 150
    requests each (replicate_70b: 145), issued by Anyscale's LLMPerf tool in Dec 2023 / Jan 2024
    (550 input tokens, 150 output tokens, concurrency 5). KPI: time to first token or end-to-end
    latency in seconds, lower is better.

    Failure policy: ``error`` is True when the request returned an error code (HTTP 429, -100, -1:
    539 requests, mostly lepton_* (130 of 150 each), bedrock_13b (97) and bedrock_70b (49)). The
    source records latency 0 or meaningless values for those requests; they must not be read as
    fast responses, so both latency columns are set to +inf for them (a failure is worse than any
    finite latency). Keep them and analyse with ``assay.psdme.bands(..., failures="worst")``.

    Provenance: github.com/ray-project/llmperf-leaderboard at commit
    27aa9b6a6c4282f6d5599b9199fbb57256a2dcd8, ``raw_data/individual/*.json``; licence Apache-2.0
    (see LICENSE-APACHE-llmperf and README.md in this folder). No row was dropped; successful
    requests keep their recorded values unchanged.

    Returns
    -------
    DataFrame
        One row per request.

    Examples
    --------
    >>> df = load_llmperf()
    >>> df.shape, df["config"].nunique()
    ((2845, 4), 19)
    """
    with resources.files(__package__).joinpath("llmperf_ttft.parquet").open("rb") as fh:
        df = pd.read_parquet(fh)
    df["config"] = df["config"].astype(str)
    for c in ("ttft_s", "end_to_end_latency_s"):
        df[c] = df[c].astype(float)
    df["error"] = df["error"].astype(bool)
    return df


SHIPPED["llmperf"] = (
    "llmperf_ttft.parquet",
    "LLMPerf leaderboard, per-request TTFT and end-to-end latency of 19 LLM API endpoints "
    "(Apache-2.0); errored requests = +inf",
)


def load_faq_factors() -> dict:
    """The FAQ paper's fitted MMLU-Pro factors for the 1,351 math questions and 600 historical models.

    ``V`` and ``doc_id`` hold the questions, ``U`` the models; Apache-2.0 (see README.md).
    P(correct) = sigmoid(U[i] . V[j]).

    Returns
    -------
    dict of str to ndarray
        The arrays of the file by name: ``V`` (1,351 x 64), ``U`` (600 x 64), ``doc_id`` (1,351) and ``u_rows``
        (600).
    """
    import numpy as np

    with resources.files(__package__).joinpath("faq_mmlu_pro_math_factors.npz").open("rb") as fh:
        z = np.load(fh)
        return {k: z[k] for k in z.files}


def simulated_faq(seed: int = 0, n_history: int = 500, n_new: int = 5):
    """A simulated FAQ setting from the paper's real fitted factors: 0/1 answers drawn from sigmoid(U V^T).

    The models are disjoint rows of the shipped U (:func:`load_faq_factors`), drawn at random.

    Parameters
    ----------
    seed : int, optional
        The seed of the model choice and the answers. Default 0.
    n_history : int, optional
        The number of historical models. Default 500.
    n_new : int, optional
        The number of new models. Default 5.

    Returns
    -------
    tuple of (pandas.DataFrame, pandas.DataFrame, pandas.Series)
        ``(history, new, truth)``: wide DataFrames (rows models, columns question ids = MMLU-Pro doc ids)
        for ``n_history`` historical and ``n_new`` new models (disjoint rows of U), and each new model's true
        accuracy over the bank (the mean of its simulated answers, which is what FAQ estimates).

    Raises
    ------
    AssayInputError
        When ``n_history + n_new`` exceeds the number of shipped model factors.

    Examples
    --------
    >>> history, new, truth = simulated_faq(n_history=50, n_new=2)
    >>> history.shape, new.shape, truth.round(2).to_dict()
    ((50, 1351), (2, 1351), {'new0': 0.44, 'new1': 0.25})
    """
    import numpy as np

    from ..errors import AssayInputError

    f = load_faq_factors()
    U, V = f["U"].astype(float), f["V"].astype(float)
    if n_history + n_new > len(U):
        raise AssayInputError(f"n_history + n_new must be <= {len(U)} (the shipped model factors)")
    rng = np.random.default_rng(seed)
    rows = rng.permutation(len(U))[: n_history + n_new]
    p = 1.0 / (1.0 + np.exp(-(U[rows] @ V.T)))
    Z = (rng.random(p.shape) < p).astype(float)
    items = [str(d) for d in f["doc_id"]]
    names = [f"hist{i:03d}" for i in range(n_history)] + [f"new{i}" for i in range(n_new)]
    df = pd.DataFrame(Z, columns=items, index=pd.Index(names, name="model"))
    new = df.iloc[n_history:]
    return df.iloc[:n_history], new, new.mean(axis=1).rename("truth")


SHIPPED["faq-factors"] = (
    "faq_mmlu_pro_math_factors.npz",
    "FAQ paper's fitted MMLU-Pro math factors (1,351 questions x K=64, 600 models; Apache-2.0); "
    "assay.datasets.simulated_faq draws answers from them",
)

# the FAQ paper's fitted factors for both Open LLM Leaderboard v2 banks (faq_packs.py; README.md: question order)
from .faq_packs import (FAQ_PACKS, faq_pack_factors, faq_pack_index, faq_packs, load_faq_pack,  # noqa: E402
                        read_faq_pack_answers)

for _name, (_file, _bank, _folder, _desc) in FAQ_PACKS.items():
    SHIPPED[_name] = (_file, _desc)
