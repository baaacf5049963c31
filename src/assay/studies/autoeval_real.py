"""R-AutoEval+ on real LLM data: risk-controlled selection of a quantized Llama-3.1-8B-Instruct
(paper Sec. 4 item 1, Fig. 1 = WSR, Fig. 6 = box plots WSR / UP, Fig. 4a / 7a = curves over n,
App. E.4 / Fig. 9 = CoQA).

Study ``autoeval-quant``. Data: the per-example loss tables released with the paper (read at run
time from ``shared/data/autoeval/llm_quantization/<dataset>/``, see that folder's README; they
have no redistribution licence, so nothing of them is copied into the package).

Protocol (the released code's, research notes ``autoeval.md`` Sec. 2.5, 2.6; differences below)
------------------------------------------------------------------------------------------
* Candidates: the 48 MX configurations in fixed-sequence order of strictly decreasing average
  bits, ``for m in 10..3: for k1 in 16, 64: for r in 8, 4, 2 -> m{m}_r{r}_k{k1}`` (checked at load
  time: the bits must decrease strictly). Memory in GB = 8.03 * bits / 8, bits = ``actual_spec[1]``.
* Loss: ``rel_loss`` = max(score of the full-precision model - score of the config, 0) with ROUGE-L
  scores. The human loss uses the ``true`` tables (ground-truth answers), the judge loss the
  ``best`` / ``med`` / ``bad`` tables (Llama-3.3-70B in BF16 / MX6 / MX4 as the reference answer).
* Per repetition one random permutation of the examples; the first 960 (TriviaQA) / 983 (CoQA)
  are the test split, the next n are labelled (human and judge loss), the next N = r * n are
  unlabelled (judge loss only). Defaults n = 150, r = 5, alpha (risk target) = 0.1, delta = 0.1.
  The same permutation serves every method, judge quality and (with ``ns``) every n of that
  repetition, as in the released code. ``splits="seeded"`` (default) draws it from the
  repetition's child seed; ``splits="reference"`` reproduces the released code's permutations
  exactly (``np.random.seed(10)`` then one ``np.random.permutation`` per repetition; notes 4.2:
  the notes' numbers were produced on those splits), so the study can be compared with the notes
  on identical data; the ``seed`` is then unused.
* Certified methods: R-Eval (rho = 0), R-AutoEval (rho = 1), R-AutoEval+ (rho = linspace(0, 1, 10),
  uniform initial weights), each an e-process tested against H0: R > alpha; model selection by
  fixed-sequence testing (each test at delta, stop at the first candidate not certified, select
  the last certified one). This is exactly :func:`assay.autoeval.certify` with ``select="fst"``,
  ``order=`` the sequence above and ``shuffle=False`` (the study has already permuted the data;
  with shuffle=False certify processes each candidate's rows in table order, which we checked).
  Betting: ``"wsr"`` (default; horizon n, c = 3/4, log(1/delta)) or ``"up"`` (universal portfolio on
  a ``grid``-point bet grid, default 10,000).
* Naive baselines of the released code (no guarantee; ``guarantee = False`` in the rows):
  ``eval`` = the last configuration (in the FST order, anywhere in the list, not FST) whose mean
  human loss on the n labelled examples is < alpha; ``autoeval`` = the same with the mean judge
  loss on the N unlabelled examples.
* Figures per (n, judge, method), over repetitions: memory of the selected config (mean, its Monte
  Carlo se, median, the upper whisker = largest value within Q3 + 1.5 IQR, which is what Fig. 1
  plots); the violation rate = fraction of repetitions whose selected config has mean true loss
  > alpha on the test split (se = sqrt(p (1 - p) / trials)); the same against the full-data mean
  loss (``violation_rate_population``: the quantity the guarantee is about, without the test
  split's sampling noise); the mean test loss of the selected config; and ``no_certified_rate``,
  the fraction of repetitions where nothing is certified (for the naive methods: nothing has a
  mean below alpha).
* When nothing is certified the released code silently fell back to config 0 (the largest
  quantized model, 12.05 GB). ``mean_gb``, ``median_gb``, violation rates and test loss count such
  runs as config 0 (comparable with the notes' numbers); ``mean_gb_certified_only`` averages over
  the runs that certified something. The released code dropped naive runs where nothing passed
  (an IndexError swallowed by a bare except); we count them as config 0 too and report their rate.
* ``paper_*`` columns: the released code's numbers as the research notes ran it (notes 4.2: WSR, 500
  repetitions; 4.3: UP, 200 repetitions; TriviaQA, n = 150, r = 5, alpha = delta = 0.1 only). The
  paper itself prints no table for this experiment (Fig. 1 shows whiskers; Fig. 6 box plots).

Differences from the released code, none of which changes the test's validity
--------------------------------------------------------------------------------
* Ville threshold: E >= 1/delta (certify's rule) instead of E >= 1/(delta - 1e-8).
* UP bet grid: midpoints of ``grid`` equal cells (certify) instead of linspace(1e-8, 1 - 1e-8, grid).
  This one matters: with the Beta(1/2, 1/2) density normalised on the released grid, its two end
  points (b = 1e-8 and 1 - 1e-8, where the density is about 3,000) carry 19.6% of the prior mass
  each, so only 61% of the prior is on useful bets and UP certifies later. On the released
  code's own 200 splits, UP R-Eval selects 6.50 GB on average here against 6.59 GB with the
  released grid (which reproduces the notes' 6.592 exactly, as does R-AutoEval+ 6.275).
* Naive ``autoeval`` uses the N unlabelled rows that follow the labelled ones; the released code
  used the first N rows after the test split (it called its loader with n = 0). Both are random
  rows disjoint from the test split, so only the Monte Carlo draw differs.
* Fig. 4a sweep: ``ns`` (the paper: linspace(100, 300, 11) with r = 3; r defaults to 3 when ``ns``
  is given and to 5 otherwise). The released code used 100 repetitions there.

Engines
-------
``engine="arrays"`` (default) runs the same test as ``certify`` on numpy arrays: the observations
come from :func:`assay.autoeval.effective_observations` per candidate, the mixture e-processes from
:func:`assay.autoeval.mixture_e_process` (WSR, all candidates at once: the function :func:`assay.autoeval.core`
runs per candidate) or :class:`assay.stats.betting.UniversalPortfolio` (UP) mixed by
:func:`assay.stats.betting.mixture_log_wealth`, and a candidate passes when
min(1, 1 / max_i E_i) <= delta, certify's FST rule. UP processes the candidates in FST order in
small blocks and stops at the first block that contains a failure, and a block stops early once
all its candidates are certified; this cannot change the selection (FST never looks past the
first failure, and a certified candidate stays certified). ``engine="certify"`` calls
:func:`assay.autoeval.certify` on a DataFrame per repetition instead (7 calls per repetition,
about 0.2 s each with WSR, almost all of it DataFrame handling: 1.4 s per repetition against
0.025 s for the arrays); the tests check that both engines select the same configurations and
that the array test's p-values equal certify's. Data files are read once per process and cached.
"""

from __future__ import annotations

import gzip
import math
import time
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd

from .. import checks
from ..autoeval import certify, effective_observations, mixture_e_process, reliance_factors
from ..errors import AssayInputError
from ..parallel import run_tasks
from ..seeds import resolve_seed
from ..stats import betting as bt
from . import StudyResult, register

__all__ = ["CONFIGS", "METHODS", "candidate_table", "default_data_dir", "study_quant", "fst_select"]

CONFIGS = tuple(f"m{m}_r{r}_k{k1}" for m in range(10, 2, -1) for k1 in (16, 64) for r in (8, 4, 2))
PARAMS_B = 8.03  # Llama-3.1-8B-Instruct, billions of weights
DATASETS = {"triviaqa": {"examples": 9960, "test": 960}, "coqa": {"examples": 7983, "test": 983}}
QUALITIES = ("best", "med", "bad")
CERTIFIED = ("r-eval", "r-autoeval", "r-autoeval+")
NAIVE = ("eval", "autoeval")
METHODS = CERTIFIED + NAIVE
REFERENCE_SEED = 10  # the released code's np.random.seed(10)
UP_BETTORS_PER_BLOCK = 20  # UP: rows (candidates x reliance factors) advanced together; 20 x 10,000 fits in cache

# Released code as the research notes ran it (autoeval.md 4.2, 4.3), TriviaQA, n = 150, r = 5,
# alpha = delta = 0.1: (mean GB, median GB or None when not printed, violation rate, mean test loss
# or None). R-Eval and Eval do not use the judge, so their numbers repeat across judges.
PAPER = {
    "wsr": {
        "trials": 500,
        ("best", "r-eval"): (6.399, 6.211, 0.026, 0.0509),
        ("best", "r-autoeval"): (6.330, 6.211, 0.002, 0.0500),
        ("best", "r-autoeval+"): (6.233, 6.179, 0.014, 0.0557),
        ("best", "eval"): (5.833, 5.772, 0.518, 0.0947),
        ("best", "autoeval"): (6.142, 6.179, 0.074, 0.0638),
        ("med", "r-eval"): (6.399, 6.211, 0.026, 0.0509),
        ("med", "r-autoeval"): (6.351, 6.211, 0.004, 0.0496),
        ("med", "r-autoeval+"): (6.248, 6.179, 0.010, 0.0549),
        ("med", "eval"): (5.833, 5.772, 0.518, 0.0947),
        ("med", "autoeval"): (6.092, 6.179, 0.148, 0.0698),
        ("bad", "r-eval"): (6.399, 6.211, 0.026, 0.0509),
        ("bad", "r-autoeval"): (6.467, 6.273, 0.008, 0.0472),
        ("bad", "r-autoeval+"): (6.380, 6.211, 0.016, 0.0508),
        ("bad", "eval"): (5.833, 5.772, 0.518, 0.0947),
        ("bad", "autoeval"): (4.172, 4.172, 1.000, 0.6787),
    },
    "up": {
        "trials": 200,
        ("best", "r-eval"): (6.592, 6.650, 0.015, 0.0437),
        ("best", "r-autoeval"): (6.406, 6.211, 0.000, 0.0474),
        ("best", "r-autoeval+"): (6.275, 6.179, 0.010, 0.0537),
        ("best", "eval"): (5.834, 5.772, 0.530, None),
        ("best", "autoeval"): (6.150, 6.179, 0.060, None),
        ("med", "r-eval"): (6.592, 6.650, 0.015, 0.0437),
        ("med", "r-autoeval"): (6.426, 6.211, 0.000, 0.0468),
        ("med", "r-autoeval+"): (6.310, 6.179, 0.015, 0.0529),
        ("med", "eval"): (5.834, 5.772, 0.530, None),
        ("med", "autoeval"): (6.091, 6.179, 0.140, None),
        ("bad", "r-eval"): (6.592, 6.650, 0.015, 0.0437),
        ("bad", "r-autoeval"): (6.540, 6.462, 0.000, 0.0437),
        ("bad", "r-autoeval+"): (6.487, 6.273, 0.015, 0.0462),
        ("bad", "eval"): (5.834, 5.772, 0.530, None),
        ("bad", "autoeval"): (4.172, None, 1.000, None),
    },
}


# --------------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------------


def default_data_dir() -> Path:
    """Return ``shared/data/autoeval`` next to the repository (src/assay/studies -> repo -> its parent).

    Returns
    -------
    pathlib.Path
        The folder's absolute path (whether or not it exists).
    """
    return Path(__file__).resolve().parents[4] / "shared" / "data" / "autoeval"


def _root(data_dir: str | Path | None, dataset: str) -> Path:
    if dataset not in DATASETS:
        raise AssayInputError(f"dataset must be one of {', '.join(DATASETS)}, got {dataset!r}")
    base = Path(data_dir) if data_dir is not None else default_data_dir()
    root = base / "llm_quantization" / dataset
    if not root.is_dir():
        raise AssayInputError(
            f"the R-AutoEval+ quantization loss tables were not found: no folder {root}. They are read at run "
            "time from shared/data/autoeval (released with the paper, no redistribution licence, so not "
            "shipped with assay); pass data_dir=<folder that contains llm_quantization/>"
        )
    return root


def _read(path: Path) -> np.ndarray:
    if not path.is_file():
        raise AssayInputError(f"missing data file {path} (see the README of the autoeval data folder)")
    with gzip.open(path) as fh:
        return np.load(fh)


@lru_cache(maxsize=None)
def _bits(root: str) -> np.ndarray:
    bits = np.array([_read(Path(root) / "actual_spec" / f"{c}.npy.gz")[1] for c in CONFIGS], dtype=float)
    if not np.all(np.diff(bits) < 0):
        raise AssayInputError(f"average bits in {root}/actual_spec do not decrease strictly in the FST order")
    bits.setflags(write=False)
    return bits


@lru_cache(maxsize=None)
def _losses(root: str, quality: str, examples: int) -> np.ndarray:
    """rel_loss of every candidate, shape (48, examples), rows in FST order; read once per process."""
    rows = []
    for c in CONFIGS:
        v = _read(Path(root) / quality / c / "rel_loss.npy.gz").reshape(-1)
        if v.shape != (examples,):
            raise AssayInputError(f"{root}/{quality}/{c}/rel_loss has {v.size} values, expected {examples}")
        rows.append(v)
    out = np.stack(rows).astype(float)
    if not (np.all(np.isfinite(out)) and out.min() >= 0 and out.max() <= 1):
        raise AssayInputError(f"{root}/{quality}: rel_loss must lie in [0, 1]")
    out.setflags(write=False)
    return out


def candidate_table(dataset: str = "triviaqa", data_dir: str | Path | None = None,
                    qualities: Sequence[str] = QUALITIES) -> pd.DataFrame:
    """The 48 candidates in FST order: bits, GB, full-data mean true loss and mean judge losses.

    Reads the released loss tables (module docstring); memory in GB = 8.03 * bits / 8.

    Parameters
    ----------
    dataset : str, default "triviaqa"
        ``"triviaqa"`` or ``"coqa"``.
    data_dir : str, Path or None, default None
        The folder that contains ``llm_quantization/``; None: ``shared/data/autoeval`` next to the repository.
    qualities : sequence of str, default ("best", "med", "bad")
        The judge qualities whose mean losses are added.

    Returns
    -------
    pandas.DataFrame
        One row per candidate, in FST order: ``config``, ``bits``, ``gb``, ``mean_true_loss`` and one
        ``mean_judge_loss_<quality>`` column per quality, each mean over all examples of the dataset.

    Raises
    ------
    AssayInputError
        If ``dataset`` is unknown or its loss tables are not found.
    """
    root = str(_root(data_dir, dataset))
    ex = DATASETS[dataset]["examples"]
    bits = _bits(root)
    out = pd.DataFrame({"config": CONFIGS, "bits": bits, "gb": PARAMS_B * bits / 8,
                        "mean_true_loss": _losses(root, "true", ex).mean(axis=1)})
    for q in qualities:
        out[f"mean_judge_loss_{q}"] = _losses(root, q, ex).mean(axis=1)
    return out


# --------------------------------------------------------------------------------------------
# Fixed-sequence testing on arrays (the test of assay.autoeval.certify, select="fst")
# --------------------------------------------------------------------------------------------


def _observations(human: np.ndarray, judge_lab: np.ndarray, judge_unl: np.ndarray, rhos: np.ndarray) -> np.ndarray:
    """q (K, S, n): effective observations of every candidate, by certify's own function."""
    return np.stack([effective_observations(human[k], judge_lab[k], judge_unl[k], rhos)[0]
                     for k in range(human.shape[0])])


def _up_max_log_e(x: np.ndarray, passes: Callable[[np.ndarray], np.ndarray], grid: int,
                  early_stop: bool) -> np.ndarray:
    """max_i log E_i of the UP mixture per candidate, x (K, S, n) = (q - alpha) / (hi - alpha).

    Candidates are advanced in FST order in blocks of about UP_BETTORS_PER_BLOCK rows (a block's
    wealth table stays in cache). With ``early_stop``, a block stops once every candidate in it
    passes, and after a block containing a failure the rest is not needed (left at -inf).
    """
    K, S, n = x.shape
    out = np.full(K, -np.inf)
    block = max(1, UP_BETTORS_PER_BLOCK // S)
    for k0 in range(0, K, block):
        xb = x[k0:k0 + block]
        B = xb.shape[0]
        up = bt.UniversalPortfolio(B * S, grid)
        best = np.full(B, -np.inf)
        for start in range(0, n, 8):  # 8 = UniversalPortfolio's renormalisation period (any chunk is exact)
            log_e_s = up.update(xb[:, :, start:start + 8].reshape(B * S, -1)).reshape(B, S, -1)
            best = np.maximum(best, bt.mixture_log_wealth(log_e_s).max(axis=-1))
            if early_stop and passes(best).all():
                break
        out[k0:k0 + B] = best
        if early_stop and not passes(best).all():
            break
    return out


def fst_select(human: np.ndarray, judge_lab: np.ndarray | None, judge_unl: np.ndarray | None, *,
               method: str, alpha: float, delta: float, betting: str = "wsr", grid: int = 10_000,
               early_stop: bool = True) -> tuple[int, np.ndarray]:
    """Fixed-sequence selection over candidates given in FST order (rows).

    human (K, n) and judge_lab (K, n): human and judge losses on the labelled examples;
    judge_unl (K, N): judge losses on the unlabelled ones (in processing order). Returns the index
    of the last certified candidate (-1 if none) and the p-values min(1, 1 / max_i E_i) (1.0 for
    candidates that FST did not need to test, with UP and ``early_stop``). A candidate is certified when its
    p-value is <= delta; FST stops at the first candidate that is not.

    Parameters
    ----------
    human : ndarray (K, n)
        Human losses on the labelled examples, one row per candidate in FST order.
    judge_lab : ndarray (K, n) or None
        Judge losses on the labelled examples (not used by R-Eval, which may pass None).
    judge_unl : ndarray (K, N) or None
        Judge losses on the unlabelled examples, in processing order (not used by R-Eval).
    method : str
        ``"r-eval"`` (rho = 0), ``"r-autoeval"`` (rho = 1) or ``"r-autoeval+"`` (rho = linspace(0, 1, 10)).
    alpha : float
        Risk target (H0: R > alpha).
    delta : float
        Level of each test.
    betting : str, default "wsr"
        ``"wsr"`` (horizon n) or ``"up"`` (universal portfolio).
    grid : int, default 10000
        Bet-grid size of the universal portfolio (``"up"`` only).
    early_stop : bool, default True
        With UP, a block of candidates stops once every candidate in it passes, and after a block containing a
    failure the rest is not tested (p-value 1.0).

    Returns
    -------
    selected : int
        Index of the last certified candidate, -1 if none.
    p : ndarray (K,)
        The p-values min(1, 1 / max_i E_i).

    Raises
    ------
    AssayInputError
        If ``method`` or ``betting`` is unknown.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> risk = np.array([0.02, 0.05, 0.3])[:, None]  # true risks of three candidates in FST order
    >>> human = (rng.random((3, 200)) < risk).astype(float)
    >>> judge_unl = (rng.random((3, 1000)) < risk).astype(float)
    >>> k, p = fst_select(human, human.copy(), judge_unl, method="r-autoeval+", alpha=0.1, delta=0.1)
    >>> k, p.round(4).tolist()
    (1, [0.0004, 0.0019, 1.0])
    >>> k, p = fst_select(human, None, None, method="r-eval", alpha=0.1, delta=0.1)
    >>> k, p.round(4).tolist()
    (1, [0.0002, 0.0006, 1.0])
    """
    rhos = reliance_factors(method)
    K, n = human.shape
    if rhos.max() > 0:
        q = _observations(human, judge_lab, judge_unl, rhos)
    else:  # R-Eval: certify's observations without a judge (rho = 0)
        q = _observations(human, np.zeros_like(human), np.zeros((K, 0)), rhos)
    hi = 1.0 + rhos

    def passes(max_log_e: np.ndarray) -> np.ndarray:
        return np.minimum(1.0, np.exp(-max_log_e)) <= delta

    if betting == "wsr":
        _, log_e = mixture_e_process(q, rhos, risk_target=alpha, delta=delta, betting="wsr", horizon=n)
        max_log_e = log_e.max(axis=-1)
    elif betting == "up":
        max_log_e = _up_max_log_e((q - alpha) / (hi - alpha)[:, None], passes, grid, early_stop)
    else:
        raise AssayInputError(f"betting must be 'wsr' or 'up', got {betting!r}")
    p = np.minimum(1.0, np.exp(-max_log_e))
    ok = p <= delta
    first_fail = int(np.argmin(ok)) if not ok.all() else K
    return first_fail - 1, p


def _naive_select(means: np.ndarray, alpha: float) -> int:
    """Released code's naive rule: the last candidate (anywhere in the order) with mean < alpha."""
    hit = np.flatnonzero(means < alpha)
    return int(hit[-1]) if hit.size else -1


def _certify_select(human, judge_lab, judge_unl, *, method, alpha, delta, betting, grid) -> int:
    """The same selection through assay.autoeval.certify on a tidy table (engine="certify")."""
    K, n = human.shape
    N = judge_unl.shape[1]
    items = np.array([f"l{i}" for i in range(n)] + [f"u{j}" for j in range(N)])
    table = pd.DataFrame({
        "candidate": np.repeat(np.array(CONFIGS), n + N),
        "item": np.tile(items, K),
        "loss_human": np.concatenate([human, np.full((K, N), np.nan)], axis=1).ravel(),
        "loss_judge": np.concatenate([judge_lab, judge_unl], axis=1).ravel(),
    })
    res = certify(table, risk_target=alpha, delta=delta, method=method, betting=betting, grid=grid,
                  select="fst", order=list(CONFIGS), shuffle=False, bounds=False)
    cert = res.info["selection"]["certified"]
    return CONFIGS.index(cert[-1]) if cert else -1


# --------------------------------------------------------------------------------------------
# One repetition
# --------------------------------------------------------------------------------------------


def _task(cfg: dict[str, Any], ss: np.random.SeedSequence) -> dict[str, Any]:
    root, qualities, ns, r = cfg["root"], cfg["qualities"], cfg["ns"], cfg["r"]
    alpha, delta, betting, grid = cfg["alpha"], cfg["delta"], cfg["betting"], cfg["grid"]
    ex, n_test = DATASETS[cfg["dataset"]]["examples"], DATASETS[cfg["dataset"]]["test"]
    true = _losses(root, "true", ex)
    judge = {q: _losses(root, q, ex) for q in qualities}
    perm = cfg.get("perm")
    if perm is None:
        perm = np.random.default_rng(ss).permutation(ex)
    test_loss = true[:, perm[:n_test]].mean(axis=1)
    sel = np.full((len(ns), len(qualities), len(METHODS)), -1, dtype=np.int64)
    kw = dict(alpha=alpha, delta=delta, betting=betting, grid=grid)
    for a, n in enumerate(ns):
        lab = perm[n_test:n_test + n]
        unl = perm[n_test + n:n_test + n + r * n]
        human = true[:, lab]
        runs = []  # (qualities index or None for all, method, judge_lab, judge_unl)
        runs.append((None, "r-eval", np.zeros_like(human), np.zeros((len(CONFIGS), r * n))))
        for b, q in enumerate(qualities):
            jl, ju = judge[q][:, lab], judge[q][:, unl]
            runs += [(b, "r-autoeval", jl, ju), (b, "r-autoeval+", jl, ju)]
            sel[a, b, METHODS.index("autoeval")] = _naive_select(ju.mean(axis=1), alpha)
        sel[a, :, METHODS.index("eval")] = _naive_select(human.mean(axis=1), alpha)
        for b, method, jl, ju in runs:
            if cfg["engine"] == "certify":
                s = _certify_select(human, jl, ju, method=method, **kw)
            else:
                s, _ = fst_select(human, jl, ju, method=method, **kw)
            sel[a, slice(None) if b is None else b, METHODS.index(method)] = s
    return {"test_loss": test_loss, "selected": sel}


# --------------------------------------------------------------------------------------------
# Aggregation
# --------------------------------------------------------------------------------------------


def _upper_whisker(v: np.ndarray) -> float:
    q1, q3 = np.percentile(v, [25, 75])
    return float(v[v <= q3 + 1.5 * (q3 - q1)].max())


def _se(v: np.ndarray) -> float:
    return float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else float("nan")


def _rows(out: list[dict[str, Any]], *, gb: np.ndarray, pop_loss: np.ndarray, params: dict[str, Any]) -> pd.DataFrame:
    test_loss = np.stack([o["test_loss"] for o in out])  # (T, K)
    sel = np.stack([o["selected"] for o in out])  # (T, len(ns), len(qualities), len(METHODS))
    T = sel.shape[0]
    alpha = params["alpha"]
    reps = np.arange(T)
    paper = PAPER.get(params["betting"]) if (
        params["dataset"] == "triviaqa" and params["r"] == 5 and params["alpha"] == 0.1 and params["delta"] == 0.1
    ) else None
    rows = []
    for a, n in enumerate(params["ns"]):
        for b, q in enumerate(params["qualities"]):
            for m, method in enumerate(METHODS):
                s = sel[:, a, b, m]
                none = s < 0
                s0 = np.where(none, 0, s)  # the released code's silent fallback to config 0
                g = gb[s0]
                tl = test_loss[reps, s0]
                viol = tl > alpha
                p_viol = float(viol.mean())
                ref = paper.get((q, method)) if (paper is not None and n == 150) else None
                rows.append({
                    "dataset": params["dataset"], "betting": params["betting"], "n": int(n), "r": params["r"],
                    "N": int(params["r"] * n), "judge": q, "method": method, "guarantee": method in CERTIFIED,
                    "trials": T,
                    "mean_gb": float(g.mean()), "mean_gb_se": _se(g), "median_gb": float(np.median(g)),
                    "whisker_gb": _upper_whisker(g),
                    "mean_gb_certified_only": float(gb[s[~none]].mean()) if (~none).any() else float("nan"),
                    "no_certified_rate": float(none.mean()),
                    "violation_rate": p_viol, "violation_rate_se": math.sqrt(p_viol * (1 - p_viol) / T),
                    "violation_rate_population": float((pop_loss[s0] > alpha).mean()),
                    "mean_test_loss": float(tl.mean()), "mean_test_loss_se": _se(tl),
                    "whisker_test_loss": _upper_whisker(tl),
                    "paper_mean_gb": ref[0] if ref else None,
                    "paper_median_gb": ref[1] if ref else None,
                    "paper_violation_rate": ref[2] if ref else None,
                    "paper_mean_test_loss": ref[3] if ref else None,
                    "paper_trials": paper["trials"] if ref else None,
                })
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------------
# The study
# --------------------------------------------------------------------------------------------


def _check_int(name: str, v: Any, low: int = 1) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
        raise AssayInputError(f"{name} must be an integer >= {low}, got {v!r}")
    return int(v)


@register("autoeval-quant")
def study_quant(
    *,
    trials: int = 500,
    n: int = 150,
    r: int | None = None,
    alpha: float = 0.1,
    delta: float = 0.1,
    betting: str = "wsr",
    qualities: Sequence[str] = QUALITIES,
    dataset: str = "triviaqa",
    ns: Sequence[int] | None = None,
    grid: int = 10_000,
    splits: str = "seeded",
    engine: str = "arrays",
    data_dir: str | Path | None = None,
    seed: int | None = 0,
    workers: int = 1,
    progress: Callable[[int, int], None] | None = None,
) -> StudyResult:
    """Quantized-LLM selection with R-Eval / R-AutoEval / R-AutoEval+ and the naive baselines
    (paper Fig. 1, 6; Fig. 4a / 7a / 9 with ``ns``). See the module docstring for the protocol.

    ``alpha`` is the risk target; ``r`` the unlabelled-per-labelled ratio (default 5, or 3 with
    ``ns``); ``splits`` "seeded" or "reference" (the released code's permutations); ``engine``
    "arrays" or "certify".

    Parameters
    ----------
    trials : int, default 500
        Repetitions (random permutations of the examples).
    n : int, default 150
        Labelled examples per repetition (ignored when ``ns`` is given).
    r : int or None, default None
        Unlabelled examples per labelled one; None: 5, or 3 with ``ns``.
    alpha : float, default 0.1
        Risk target.
    delta : float, default 0.1
        Level of each fixed-sequence test.
    betting : str, default "wsr"
        ``"wsr"`` or ``"up"``.
    qualities : sequence of str, default ("best", "med", "bad")
        Judge qualities to run (a single string is one quality).
    dataset : str, default "triviaqa"
        ``"triviaqa"`` or ``"coqa"``.
    ns : sequence of int or None, default None
        The n of the Fig. 4a sweep; each repetition's permutation serves every n.
    grid : int, default 10000
        Bet-grid size of the universal portfolio (at least 10; ``"up"`` only).
    splits : str, default "seeded"
        ``"seeded"`` (permutations from each repetition's child seed) or ``"reference"`` (the released code's
        permutations; ``seed`` is then unused).
    engine : str, default "arrays"
        ``"arrays"`` (the same test on numpy arrays) or ``"certify"`` (:func:`assay.autoeval.certify`).
    data_dir : str, Path or None, default None
        The folder that contains ``llm_quantization/``; None: ``shared/data/autoeval`` next to the repository.
    seed : int or None, default 0
        Root seed (:mod:`assay.seeds`); each repetition gets a child seed.
    workers : int, default 1
        Processes for the repetitions (the numbers do not depend on it).
    progress : callable or None, default None
        Called as ``progress(done, total)`` as repetitions finish.

    Returns
    -------
    StudyResult
        ``rows``: one row per (n, judge, method) with the memory of the selected config (``mean_gb`` and its se,
        ``median_gb``, ``whisker_gb``, ``mean_gb_certified_only``), ``violation_rate`` (test split) and its se,
        ``violation_rate_population``, ``no_certified_rate`` and ``guarantee``; ``info["oracle"]`` is FST on the
        full-data mean true loss.

    Raises
    ------
    AssayInputError
        If a count is not a positive integer, ``alpha`` or ``delta`` is not in (0, 1), ``betting``, ``splits``,
        ``engine``, ``dataset`` or a quality is unknown, ``ns`` is empty, n (1 + r) labelled and unlabelled examples
        do not fit beside the test split, or the loss tables are not found.
    """
    trials = _check_int("trials", trials)
    alpha = checks.level(alpha, "alpha")
    delta = checks.level(delta, "delta")
    if betting not in ("wsr", "up"):
        raise AssayInputError(f"betting must be 'wsr' or 'up', got {betting!r}")
    if splits not in ("seeded", "reference"):
        raise AssayInputError(f"splits must be 'seeded' or 'reference', got {splits!r}")
    if engine not in ("arrays", "certify"):
        raise AssayInputError(f"engine must be 'arrays' or 'certify', got {engine!r}")
    grid = _check_int("grid", grid, 10)
    qualities = (qualities,) if isinstance(qualities, str) else tuple(qualities)
    bad = [q for q in qualities if q not in QUALITIES]
    if not qualities or bad:
        raise AssayInputError(f"qualities must be a non-empty subset of {', '.join(QUALITIES)}, got {list(qualities)!r}")
    sweep = ns is not None
    ns = tuple(_check_int("ns entry", v) for v in ns) if sweep else (_check_int("n", n),)
    if not ns:
        raise AssayInputError("ns must name at least one n")
    r = _check_int("r", (3 if sweep else 5) if r is None else r)
    root = _root(data_dir, dataset)
    ex, n_test = DATASETS[dataset]["examples"], DATASETS[dataset]["test"]
    too_big = [v for v in ns if n_test + v * (1 + r) > ex]
    if too_big:
        raise AssayInputError(f"{dataset} has {ex} examples: {n_test} test + n (1 + r) must fit, but n = {too_big[0]}, "
                              f"r = {r} needs {n_test + too_big[0] * (1 + r)}")

    bits = _bits(str(root))
    gb = PARAMS_B * bits / 8
    pop_loss = _losses(str(root), "true", ex).mean(axis=1)
    oracle = _naive_fst(pop_loss, alpha)

    recorded, ss = resolve_seed(seed)
    common = dict(root=str(root), dataset=dataset, qualities=qualities, ns=ns, r=r, alpha=alpha, delta=delta,
                  betting=betting, grid=grid, engine=engine)
    if splits == "reference":
        legacy = np.random.RandomState(REFERENCE_SEED)
        tasks = [dict(common, rep=i, perm=legacy.permutation(ex)) for i in range(trials)]
    else:
        tasks = [dict(common, rep=i) for i in range(trials)]
    t0 = time.perf_counter()
    out = run_tasks(_task, tasks, seed=ss, workers=workers, progress=progress)
    runtime = time.perf_counter() - t0

    params = {"study": "autoeval-quant", "trials": trials, "dataset": dataset, "ns": list(ns), "n": ns[0] if len(ns) == 1 else None,
              "r": r, "alpha": alpha, "delta": delta, "betting": betting, "grid": grid if betting == "up" else None,
              "qualities": list(qualities), "splits": splits,
              "reference_seed": REFERENCE_SEED if splits == "reference" else None, "engine": engine, "configs": list(CONFIGS),
              "factors": 10, "test_examples": n_test, "examples": ex}
    rows = _rows(out, gb=gb, pop_loss=pop_loss, params=params)
    notes = [
        "selection by fixed-sequence testing over 48 MX configs in decreasing bits; memory GB = 8.03 * bits / 8",
        "runs where nothing is certified count as config 0 (12.05 GB, the released code's silent fallback) in "
        "mean_gb / median_gb / violation / test loss; mean_gb_certified_only leaves them out",
        "violation_rate: selected config's mean true loss on the test split > alpha; violation_rate_population: "
        "its full-data mean > alpha; se = sqrt(p (1 - p) / trials)",
        "eval / autoeval are the released code's naive baselines (no guarantee)",
        "paper_*: the released code run on this machine (notes/autoeval.md 4.2 WSR 500 reps, 4.3 UP 200 reps); "
        "shown for TriviaQA, n = 150, r = 5, alpha = delta = 0.1 only",
        "whisker_*: largest value within Q3 + 1.5 IQR (what Fig. 1 plots)",
    ]
    return StudyResult(
        params=params,
        level={"delta": delta, "meaning": f"P(fixed-sequence testing certifies a config whose risk exceeds {alpha:g}) "
                                          f"<= {delta:g} for the certified methods"},
        n=trials, seed=recorded, tables={"rows": rows},
        info={"notes": notes,
              "oracle": {"config": CONFIGS[oracle] if oracle >= 0 else None,
                         "gb": float(gb[oracle]) if oracle >= 0 else None,
                         "meaning": "FST on the full-data mean true loss (what an infinite sample would select)"},
              "runtime_s": round(runtime, 2)},
    )


def _naive_fst(means: np.ndarray, alpha: float) -> int:
    """FST on known means: the last candidate before the first one with mean > alpha."""
    bad = np.flatnonzero(means > alpha)
    return int(bad[0]) - 1 if bad.size else len(means) - 1
