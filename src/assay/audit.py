"""Grader audit: the accuracy of one run's answers that holds even when the grader misreads some of them.

Every grader misreads some answers (rules, math-verify, an LLM judge alike), and an accuracy computed from its scores
inherits its errors. The estimand here is the **true accuracy of the run's N scored answers**, theta = (1/N) sum_j
y_j, where y_j is 1 when answer j is right as a person reads it. A person checks a few answers, drawn one at a time
without replacement; the grader's score f_j is the prediction for the rest.

Sampling (:func:`sample`). Answers the reader is unsure of are drawn more often: an answer is *flagged* by label-free
signals (two readers disagree on it, its final sentence holds several values, it was cut off by its token limit,
the grader found no answer in it), and at draw t, with R_t the answers not yet drawn,

    q_t(j) = floor / |R_t| + (1 - floor) w_j / sum_{i in R_t} w_i,     w_j = ``weight`` if flagged else 1,

so every remaining answer keeps probability at least floor / |R_t|. The draws and their probabilities are fixed
before anyone reads an answer (they depend on the flags alone), and are kept beside the sheet (``<sheet>.plan.json``).

Increments (FAQ's without-replacement doubly robust increment, the grader as the prediction). At draw t of answer I_t,

    phi_t = (1/N) [ sum_{drawn before} y + sum_{i in R_t} f_i + (y_{I_t} - f_{I_t}) / q_t(I_t) ],

E[phi_t | past] = theta exactly, whatever the grader's quality, and phi_t lies in [L_t, U_t] with L_t and U_t known
before the label (the worst remaining answer with y = 0 or 1). Their bounds narrow as |R_t| / N.

Interval. The increments feed :class:`assay.stats.betting.IncrementCS` (the one implementation behind adaptive
``compare`` too): one-sided betting e-processes at every point of a grid, so the interval is a finite-sample
confidence sequence, valid at every n at once: a person may stop at any row (the sample is the rows before the first
blank), and it is never of zero width while answers are left unchecked, also in a stratum where no error was seen.

Rates. The grader's false-positive rate (scored right, read wrong, among the answers read wrong) and false-negative
rate (scored wrong, read right, among those read right) are estimated by the same unbiased increments, with 0 as
the prediction of each count.
"""

from __future__ import annotations

import hashlib
import math
import re
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from .data.audit import plan_path, read_run
from .errors import AssayInputError
from .results import Result, build
from .stats.sampling import bounds, fixed_weight_draws, increment, increment_terms, running_sums
from .stats.sequences import IncrementCS

__all__ = ["AuditResult", "sample", "evaluate", "read_run", "flag", "plan_path", "plan_draws", "Plan",
           "audit_interval"]


#: the sheet's columns, in order (a person sees these and nothing of the grader's)
SHEET_COLUMNS = ("order", "id", "prompt", "reference", "response", "human")
DEFAULT_FLOOR = 0.5
DEFAULT_WEIGHT = 2.0


# --------------------------------------------------------------------------------------------
# the run: answers with the grader's scores
# --------------------------------------------------------------------------------------------


def _fingerprint(run: pd.DataFrame) -> str:
    h = hashlib.sha256()
    for i, s in zip(run["id"], run["score"]):
        h.update(f"{i}\x1f{int(s)}\x1e".encode())
    return h.hexdigest()[:16]


# --------------------------------------------------------------------------------------------
# flags: label-free signals that the grader may have misread an answer
# --------------------------------------------------------------------------------------------

_VALUE = re.compile(r"\\frac\{[^{}]*\}\{[^{}]*\}|\$[^$]+\$|[-+]?\d[\d,]*(?:\.\d+)?")


def _last_sentence(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    if not lines:
        return ""
    parts = [p for p in re.split(r"(?<!\d)[.!?](?:\s+|$)", lines[-1]) if p.strip()]
    return parts[-1] if parts else lines[-1]


def _second_reader(name: str | None) -> str | None:
    return {"math": "math-verify", "numeric": "math", "exact": "contains"}.get(str(name).lower() if name else "")


def flag(run: pd.DataFrame, *, readers: bool = True) -> pd.DataFrame:
    """The label-free signals per answer (columns ``readers_disagree``, ``several_values``, ``cut_off``,
    ``no_answer`` and their union ``flagged``).

    ``readers_disagree``: a second reader scores the answer otherwise (``math`` vs math-verify alone on the whole
    response, ``numeric`` vs ``math``, ``exact`` vs ``contains``); off with ``readers=False`` or for other scorers.
    """
    from .models.scoring import make_scorer

    resp = run["response"].fillna("").astype(str)
    several = np.array([len({m.group(0) for m in _VALUE.finditer(_last_sentence(t))}) >= 2 for t in resp])
    cut = (run["finish_reason"].astype(str) == "length").to_numpy()
    none = (run["status"].astype(str) == "unparseable").to_numpy()
    disagree = np.zeros(len(run), bool)
    if readers:
        for k in range(len(run)):
            other = _second_reader(run["scorer"].iloc[k])
            if other is None:
                continue
            try:
                if other == "math-verify":
                    from .models.mathverify import TIMEOUT, same_answer

                    got = same_answer([str(run["reference"].iloc[k])], resp.iloc[k])
                    alt = None if got in (None, TIMEOUT) else float(got[0])
                else:
                    o = make_scorer(other)(resp.iloc[k], run["reference"].iloc[k])
                    alt = o.score if o.ok else None
            except AssayInputError:  # the second reader cannot use this reference (a symbolic one for numeric)
                continue
            disagree[k] = (alt if alt is not None else 0.0) != run["score"].iloc[k]
    out = pd.DataFrame({"readers_disagree": disagree, "several_values": several, "cut_off": cut, "no_answer": none},
                       index=run.index)
    out["flagged"] = out.any(axis=1)
    return out


# --------------------------------------------------------------------------------------------
# the engine (vectorised over independent audits, for the Monte Carlo study)
# --------------------------------------------------------------------------------------------


class Plan(NamedTuple):
    """The draws of audits (rows) and what their increments need, fixed before any label: the answers drawn
    ``order``, each draw's probability ``q``, the grader's sum over the answers left before it ``rest``, and the
    lowest and highest possible (y - f) / q over them, ``lo_w`` and ``hi_w`` ((A, n) each)."""

    order: np.ndarray
    q: np.ndarray
    rest: np.ndarray
    lo_w: np.ndarray
    hi_w: np.ndarray


def plan_draws(w: np.ndarray, f: np.ndarray, m: int, floor: float, *, rng: np.random.Generator | None = None,
               order: np.ndarray | None = None) -> Plan:
    """``m`` draws without replacement for each row of weights ``w`` (A, N) with the probabilities of the module
    docstring (the shared engine, :func:`assay.stats.sampling.fixed_weight_draws`), and the grader scores ``f``
    (A, N) as the prediction: drawn with ``rng``, or the given ``order`` (A, m) replayed."""
    w = np.atleast_2d(np.asarray(w, float))
    f = np.atleast_2d(np.asarray(f, float))
    A = w.shape[0]
    out = Plan(np.empty((A, m), np.int64), *(np.empty((A, m)) for _ in range(4)))
    rows = np.arange(A)
    for d in fixed_weight_draws(w, m, floor, rng=rng, order=None if order is None else np.atleast_2d(order)):
        out.order[:, d.t] = d.items
        out.q[:, d.t] = d.q[rows, d.items]
        out.rest[:, d.t], out.lo_w[:, d.t], out.hi_w[:, d.t] = increment_terms(f, d.q, d.left, 0.0, 1.0)
    return out


def audit_interval(y_at, f_at, q_at, rest, lo_w, hi_w, N: int, delta: float, grid: int = 1024):
    """The estimate and the confidence sequence's interval at the last draw, per audit (A,): from labels ``y_at``
    and the plan's arrays (A, n each)."""
    y_at, f_at, q_at, rest, lo_w, hi_w = (np.atleast_2d(np.asarray(x, float))
                                          for x in (y_at, f_at, q_at, rest, lo_w, hi_w))
    A, n = y_at.shape
    before = running_sums(y_at)
    phi = increment(before, rest, y_at, f_at, q_at, N)
    L, U = bounds(before, rest, lo_w, hi_w, N)
    cs = IncrementCS(np.full(A, float(delta)), 0.0, 1.0, grid=grid)
    idx = np.arange(A)
    for t in range(n):
        cs.update(idx, phi[:, t:t + 1], L[:, t:t + 1], U[:, t:t + 1])
    if n == N:
        cs.set_exact(idx, y_at.sum(axis=1) / N)
    lo, hi = cs.interval()
    est = np.clip(phi.mean(axis=1) if n else np.full(A, np.nan), lo, hi)
    return est, lo, hi


def _count_estimate(z_at, q_at, N: int) -> np.ndarray:
    """Unbiased estimate of the total of z over the N answers from the draws (prediction 0)."""
    z_at = np.atleast_2d(z_at)
    if not z_at.shape[1]:
        return np.full(z_at.shape[0], np.nan)
    return (running_sums(z_at) + z_at / q_at).mean(axis=1)


# --------------------------------------------------------------------------------------------
# the two steps
# --------------------------------------------------------------------------------------------


def sample(run: Any, n: int, *, seed: Any = 0, floor: float = DEFAULT_FLOOR, weight: float = DEFAULT_WEIGHT,
           out: str | Path | None = None, readers: bool = True) -> pd.DataFrame:
    """Draw ``n`` answers of ``run`` for a person to check, one at a time without replacement.

    ``run``: a scored table (DataFrame or file) or a journal run, as :func:`assay.data.audit.read_run` reads it.
    Returns the sheet (``order``, ``id``, ``prompt``, ``reference``, ``response`` and an empty ``human`` column: not
    the grader's score nor the flags), with the draws' plan (ids, probabilities, flags, the run's fingerprint, the
    seed) in ``sheet.attrs["plan"]``. With ``out``, both are written (:func:`assay.data.audit.write_sheet`: the sheet
    by extension, the plan beside it as ``<name>.plan.json``; an existing file is never overwritten).
    """
    from .data.audit import write_sheet
    from .seeds import resolve_seed

    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 1:
        raise AssayInputError(f"n= must be a whole number >= 1; got {n!r}")
    try:
        floor, weight = float(floor), float(weight)
    except (TypeError, ValueError):
        raise AssayInputError(f"floor and weight must be numbers; got {floor!r}, {weight!r}") from None
    if not (0.0 < floor <= 1.0):
        raise AssayInputError(f"floor must be in (0, 1]; got {floor!r}")
    if not (math.isfinite(weight) and weight >= 1.0):
        raise AssayInputError(f"weight must be a number >= 1; got {weight!r}")
    run = read_run(run)
    N = len(run)
    if n > N:
        raise AssayInputError(f"n={n} is larger than the run ({N} scored answers)")
    s = resolve_seed(seed)
    fl = flag(run, readers=readers)
    w = np.where(fl["flagged"].to_numpy(), weight, 1.0)
    drawn = plan_draws(w[None, :], run["score"].to_numpy()[None, :], int(n), floor, rng=s.rng())
    order, q_at = drawn.order[0], drawn.q
    sheet = pd.DataFrame({"order": np.arange(1, n + 1), "id": run["id"].to_numpy()[order],
                          "prompt": run["prompt"].to_numpy()[order], "reference": run["reference"].to_numpy()[order],
                          "response": run["response"].to_numpy()[order], "human": [""] * n})
    plan = {"assay_audit": 1, "N": N, "n": int(n), "seed": s.recorded, "floor": floor, "weight": weight,
            "fingerprint": _fingerprint(run), "ids": [str(i) for i in run["id"]],
            "flagged": [bool(x) for x in fl["flagged"]], "order": [int(i) for i in order],
            "q": [float(x) for x in q_at[0]], "grader_accuracy": float(run["score"].mean()),
            "signals": {c: int(fl[c].sum()) for c in fl.columns}}
    sheet.attrs["plan"] = plan
    if out is not None:
        write_sheet(sheet, plan, out)
    return sheet


class AuditResult(Result):
    """What :func:`evaluate` finds. Attributes (also the main table ``estimate``, one row): ``estimate`` with
    ``ci_low`` / ``ci_high`` (the run's true accuracy: a finite-sample confidence sequence at level 1 - delta),
    ``raw`` (the grader's accuracy), ``fpr`` / ``fnr`` (the grader's estimated error rates; ``None`` when there is
    nothing to estimate them on), ``n_checked`` of ``m_drawn`` answers checked, ``N`` answers in the run,
    ``errors_seen``; the table ``strata``: answers checked and grader errors seen, flagged and not."""

    method = "audit"
    main_table = "estimate"

    def _row(self) -> dict:
        return self.tables["estimate"].iloc[0].to_dict()

    def __getattr__(self, name: str) -> Any:
        if name in ("estimate", "ci_low", "ci_high", "raw", "fpr", "fnr", "n_checked", "m_drawn", "N", "errors_seen"):
            v = self._row()[name]
            if v is None or (isinstance(v, float) and math.isnan(v)):
                return None if name in ("estimate", "fpr", "fnr") else v
            return int(v) if name in ("n_checked", "m_drawn", "N", "errors_seen") else float(v)
        raise AttributeError(name)

    @property
    def delta(self) -> float:
        return float(self.level["delta"])

    def summary(self) -> str:
        est = "n/a" if self.estimate is None else f"{self.estimate:.4f}"
        rate = lambda x: "n/a" if x is None else f"{x:.3f}"  # noqa: E731
        return (f"{self.n_checked} of {self.m_drawn} drawn answers checked (of {self.N}); grader's accuracy "
                f"{self.raw:.4f}; corrected accuracy {est} [{self.ci_low:.4f}, {self.ci_high:.4f}] "
                f"({100 * (1 - self.delta):g}%, finite-sample, valid at any stopping row); grader errors seen "
                f"{self.errors_seen}; estimated false-positive rate {rate(self.fpr)}, false-negative rate {rate(self.fnr)} "
                f"(point estimates)")


def _check_plan(plan: dict) -> None:
    """A plan with every field :func:`sample` writes, of the right kinds and lengths (not a damaged file)."""
    try:
        N, order = int(plan["N"]), [int(i) for i in plan["order"]]
        ok = (len(plan["ids"]) == N == len(plan["flagged"]) and len(plan["q"]) == len(order)
              and all(0 <= i < N for i in order) and len(set(order)) == len(order)
              and 0 < float(plan["floor"]) <= 1 and float(plan["weight"]) >= 1 and isinstance(plan["fingerprint"], str))
    except (KeyError, TypeError, ValueError):
        ok = False
    if not ok:
        raise AssayInputError("the audit's plan file is damaged (a field is missing or does not fit the draws); draw "
                              "the audit afresh")


def evaluate(run: Any, labels: Any, *, plan: Any = None, delta: float = 0.05, grid: int = 1024) -> AuditResult:
    """Read a person's checks back and correct the grader's accuracy (module docstring).

    ``labels``: the sheet :func:`sample` wrote (a file, or its DataFrame), with ``human`` filled in: 1 (the answer is
    right), 0 (wrong) or blank. Rows are taken in file order and the sample is the rows before the first blank.
    ``plan``: the plan :func:`sample` made (default: the ``.plan.json`` beside the sheet file, or the DataFrame's
    ``attrs["plan"]``).
    """
    from .checks import level
    from .data.audit import read_plan, read_sheet

    delta = level(delta)
    run = read_run(run)
    sheet = read_sheet(labels)
    plan = read_plan(plan, labels)
    _check_plan(plan)
    ids = [str(i) for i in run["id"]]
    if plan.get("ids") != ids:
        raise AssayInputError("the audit file's plan was drawn from another run (its answer ids differ from the run's)")
    if plan.get("fingerprint") != _fingerprint(run):
        raise AssayInputError("the run's grader scores changed since the audit was drawn; audit it afresh")
    order = np.asarray(plan["order"], np.int64)
    m = len(order)
    if len(sheet) != m:
        raise AssayInputError(f"the audit file has {len(sheet)} rows; {m} answers were drawn")
    want = [ids[i] for i in order]
    got = [str(x) for x in sheet["id"]]
    for k, (a, b) in enumerate(zip(want, got)):
        if a != b:
            raise AssayInputError(f"row {k + 1} of the audit file has id {b!r}, but draw {k + 1} was {a!r}: the rows "
                                  "must stay in the order they were drawn (and no row may be removed)")
    y = []
    for k, v in enumerate(sheet["human"]):
        s = "" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v).strip()
        if s in ("", "nan", "None"):
            break
        if s in ("1", "1.0", "0", "0.0"):
            y.append(float(s))
        else:
            raise AssayInputError(f"row {k + 1} of the audit file (id {got[k]!r}): human must be 0, 1 or blank; got "
                                  f"{v!r}")
    n = len(y)
    f = run["score"].to_numpy(float)
    N = len(f)
    w = np.where(np.asarray(plan["flagged"], bool), float(plan["weight"]), 1.0)
    q_at, a_sum, lo_w, hi_w = plan_draws(w[None, :], f[None, :], n, float(plan["floor"]), order=order[None, :n])[1:]
    if not np.allclose(q_at[0], np.asarray(plan["q"][:n], float)):
        raise AssayInputError("the plan's probabilities do not follow from its flags: the plan file was edited")
    ya = np.asarray(y, float)[None, :]
    fa = f[order[:n]][None, :]
    est, lo, hi = audit_interval(ya, fa, q_at, a_sum, lo_w, hi_w, N, delta, grid=grid)
    fp = _count_estimate(((fa == 1) & (ya == 0)).astype(float), q_at, N)[0]
    fn = _count_estimate(((fa == 0) & (ya == 1)).astype(float), q_at, N)[0]
    theta = float(est[0]) if n else None
    neg, pos = (None, None) if theta is None else (N * (1 - theta), N * theta)
    fpr = None if not neg or neg <= 0 else float(np.clip(fp / neg, 0, 1))
    fnr = None if not pos or pos <= 0 else float(np.clip(fn / pos, 0, 1))
    flagged = np.asarray(plan["flagged"], bool)[order[:n]]
    err = (ya[0] != fa[0])
    strata = {"flagged": {"checked": int(flagged.sum()), "errors": int(err[flagged].sum()),
                          "in_run": int(np.sum(plan["flagged"]))},
              "not_flagged": {"checked": int((~flagged).sum()), "errors": int(err[~flagged].sum()),
                              "in_run": int(N - np.sum(plan["flagged"]))}}
    row = {"estimate": theta, "ci_low": float(lo[0]), "ci_high": float(hi[0]), "raw": float(f.mean()), "fpr": fpr,
           "fnr": fnr, "n_checked": n, "m_drawn": m, "N": N, "errors_seen": int(err.sum())}
    strata_t = pd.DataFrame([{"stratum": k, **v} for k, v in strata.items()])
    return build(AuditResult, params={"floor": float(plan["floor"]), "weight": float(plan["weight"]), "grid": grid,
                                      "fingerprint": plan["fingerprint"]},
                 n=n, n_meaning="answers checked by a person", delta=float(delta),
                 meaning="the interval holds the run's true accuracy with probability >= 1 - delta, at whichever row "
                         "the person stopped (a finite-sample confidence sequence)",
                 seed=plan.get("seed"), tables={"estimate": pd.DataFrame([row]), "strata": strata_t})
