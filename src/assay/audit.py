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
With k of the n checked answers read right, theta lies in [k / N, 1 - (n - k) / N] for certain; the interval is
intersected with that range and the estimate clipped to the result (a certain set keeps the coverage; in the rare
audit where the two do not meet, the sequence has missed and the certain range is given).

Error counts and rates. The draws' probabilities depend on an answer only through its flag, so given how many
flagged and unflagged answers were drawn, the ones drawn of each kind are a uniform sample of that kind. A count
over the run (the grader's false positives: scored right, read wrong; false negatives: scored wrong, read right) is
estimated stratum by stratum, N_h times the share seen among the n_h checked (:func:`count_estimate`): unbiased
given every stratum has a checked answer, exactly the count when every answer is checked, and always within what
the checks prove (at least the count seen, at most seen plus the answers unchecked). A stratum with no answer
checked yet takes the share seen over all checked answers (the one case with a bias). The false-positive rate
divides the false positives by the number of wrong answers estimated the same way, the false-negative rate the
false negatives by the right ones: ratios of such counts (not unbiased; in [0, 1], and exact at the census).
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
           "audit_interval", "count_estimate", "grader_words", "run_outcomes"]


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
    lo, hi = _within_proof(lo, hi, y_at.sum(axis=1), n, N)
    est = np.clip(phi.mean(axis=1) if n else np.full(A, np.nan), lo, hi)
    return est, lo, hi


def _within_proof(lo, hi, k, n: int, N: int):
    """The interval [lo, hi] intersected with [k / N, 1 - (n - k) / N], where the accuracy is for certain with k of
    n checked answers right; where they do not meet (the sequence missed), the certain range."""
    sure_lo, sure_hi = k / N, (k + N - n) / N
    a, b = np.maximum(lo, sure_lo), np.minimum(hi, sure_hi)
    empty = a > b
    return np.where(empty, sure_lo, a), np.where(empty, sure_hi, b)


def count_estimate(z_at, g_at, sizes) -> np.ndarray:
    """The total of z over the N answers, per audit (A,), stratum by stratum (module docstring): from the drawn
    values ``z_at`` (A, n), their strata ``g_at`` (A, n; integers 0 .. G - 1) and the strata's sizes ``sizes``
    (A, G). NaN before any draw.

    Examples
    --------
    >>> import numpy as np
    >>> count_estimate(np.array([[1.0, 0.0, 1.0]]), np.array([[0, 0, 1]]), np.array([[10, 2]])).tolist()
    [7.0]
    """
    z_at = np.atleast_2d(np.asarray(z_at, float))
    g_at = np.atleast_2d(np.asarray(g_at, np.int64))
    sizes = np.atleast_2d(np.asarray(sizes, float))
    if not z_at.shape[1]:
        return np.full(z_at.shape[0], np.nan)
    hit = g_at[:, :, None] == np.arange(sizes.shape[1])  # (A, n, G)
    seen = np.einsum("an,ang->ag", z_at, hit.astype(float))
    checked = hit.sum(axis=1)
    scaled = np.where(checked > 0, sizes * seen / np.maximum(checked, 1), sizes * z_at.mean(axis=1, keepdims=True))
    return scaled.sum(axis=1)


# --------------------------------------------------------------------------------------------
# what the audit says of the run: the grader audited, how its answers ended
# --------------------------------------------------------------------------------------------

_SOURCES = {"recorded": "the scorer the run was scored with", "asked": "the scorer asked for",
            "bank": "the bank's scorer column", "column": "the table's scorer column",
            "table": "the table's score column", "default": "the default: no scorer recorded or given"}


def grader_words(grader: dict) -> str:
    """The grader audited and where it came from, as said (``math (the scorer the run was scored with)``), from
    :func:`read_run`'s ``attrs["audit"]["grader"]``.

    Examples
    --------
    >>> grader_words({"name": "exact", "source": "asked", "recorded": "numeric"})
    'exact (the scorer asked for; the run was scored with numeric)'
    """
    where = _SOURCES.get(grader.get("source"), str(grader.get("source")))
    other = grader.get("recorded")
    if grader.get("source") == "asked" and other:
        where += ", not the table's score column" if other == "score column" else f"; the run was scored with {other}"
    return f"{grader['name']} ({where})" if grader.get("name") else where


def run_outcomes(run: pd.DataFrame) -> dict:
    """How the run's answers ended, from :func:`read_run`'s ``status`` and ``finish_reason``: ``status`` (outcome ->
    count; None when not recorded), ``cut_off`` (finish reason ``length``; None when not recorded), ``left_out``
    (outcome -> count of the answers left out without a score: timed out, transport errors), ``said`` (in words)
    and ``warning`` (a sentence when more than a fifth of the answers are unparseable or cut off, else None).

    Examples
    --------
    >>> import pandas as pd
    >>> run = pd.DataFrame({"status": ["answered", "unparseable", "answered"], "finish_reason": ["stop", "length",
    ...                                                                                          "stop"]})
    >>> run_outcomes(run)["said"]
    'outcomes: 2 answered, 1 unparseable; 1 cut off'
    """
    from .models.outcomes import LABELS, MODEL_FAILURES, OUTCOMES, SHAKY_SHARE

    status, finish = (run[c].astype(object).where(run[c].notna(), None).to_numpy(object)
                      for c in ("status", "finish_reason"))
    has_status, has_finish = any(x is not None for x in status), any(x is not None for x in finish)
    names, counts = np.unique(np.array(["not recorded" if x is None else str(x) for x in status]), return_counts=True)
    rank = {k: i for i, k in enumerate(OUTCOMES)}
    tally = dict(sorted(zip(names.tolist(), counts.tolist()), key=lambda kv: (rank.get(kv[0], len(rank)), kv[0])))
    cut = finish == "length"
    left = dict(run.attrs.get("audit", {}).get("left_out") or {})
    said = ("outcomes: " + ", ".join(f"{v} {LABELS.get(k, k)}" for k, v in tally.items())) if has_status else (
        "outcomes not recorded")
    said += f"; {int(cut.sum())} cut off" if has_finish else ("; cut-offs not recorded" if has_status else "")
    said += ("; left out: " + ", ".join(f"{v} {LABELS.get(k, k)}" for k, v in left.items())) if left else ""
    # the rule every method warns by (models.outcomes: SHAKY_SHARE, the model's failures and the cut-offs), counted
    # per answer here: an answer unparseable and cut off counts once
    failed = np.isin(status.astype(str), sorted(MODEL_FAILURES))
    bad = int((failed | cut).sum())
    kinds = ("unparseable" if set(status[failed]) <= {"unparseable"} else "unparseable, refused or too long")
    warning = (f"{bad} of {len(run)} answers ({100 * bad / len(run):.0f}%) are {kinds} or cut off: the accuracy "
               "rests on answers the model did not finish or the grader could not read"
               ) if bad > SHAKY_SHARE * len(run) else None
    return {"status": tally if has_status else None, "cut_off": int(cut.sum()) if has_finish else None,
            "left_out": left, "said": said, "warning": warning}


def _about(run: pd.DataFrame) -> dict:
    """The grader audited (with its words) and the run's outcomes, for a sheet's attrs and a result's info."""
    grader = dict(run.attrs.get("audit", {}).get("grader") or {"name": None, "source": "table", "recorded": None})
    grader["said"] = grader_words(grader)
    outcomes = run_outcomes(run)
    warning = outcomes.pop("warning")
    return {"grader": grader, "outcomes": outcomes, "warnings": [warning] if warning else []}


# --------------------------------------------------------------------------------------------
# the two steps
# --------------------------------------------------------------------------------------------


def sample(run: Any, n: int, *, seed: Any = 0, floor: float = DEFAULT_FLOOR, weight: float = DEFAULT_WEIGHT,
           out: str | Path | None = None, readers: bool = True) -> pd.DataFrame:
    """Draw ``n`` answers of ``run`` for a person to check, one at a time without replacement.

    ``run``: a scored table (DataFrame or file) or a journal run, as :func:`assay.data.audit.read_run` reads it.
    Returns the sheet (``order``, ``id``, ``prompt``, ``reference``, ``response`` and an empty ``human`` column: not
    the grader's score nor the flags), with the draws' plan (ids, probabilities, flags, the run's fingerprint, the
    seed) in ``sheet.attrs["plan"]``, and what the audit says of the run in ``sheet.attrs["run"]``: the grader
    audited and where it came from (``grader``, with ``said``), how its answers ended (``outcomes``:
    :func:`run_outcomes`) and ``warnings``. With ``out``, the sheet and the plan are written
    (:func:`assay.data.audit.write_sheet`: the sheet by extension, the plan beside it as ``<name>.plan.json``; an
    existing file is never overwritten).
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
    sheet.attrs["run"] = _about(run)
    if out is not None:
        write_sheet(sheet, plan, out)
    return sheet


class AuditResult(Result):
    """What :func:`evaluate` finds. Attributes (also the main table ``estimate``, one row): ``estimate`` with
    ``ci_low`` / ``ci_high`` (the run's true accuracy: a finite-sample confidence sequence at level 1 - delta,
    within what the checks prove), ``raw`` (the grader's accuracy), ``fpr`` / ``fnr`` (the grader's estimated error
    rates; ``None`` when there is nothing to estimate them on), ``false_positives`` / ``false_negatives`` (its
    estimated error counts in the run), ``n_checked`` of ``m_drawn`` answers checked, ``N`` answers in the run,
    ``errors_seen``; the table ``strata``: answers checked and grader errors seen, flagged and not. ``info["grader"]``
    names the grader audited and where it came from (``said``: in words), ``info["outcomes"]`` how the run's answers
    ended (:func:`run_outcomes`)."""

    method = "audit"
    main_table = "estimate"
    _FLOATS = ("estimate", "ci_low", "ci_high", "raw", "fpr", "fnr", "false_positives", "false_negatives")
    _INTS = ("n_checked", "m_drawn", "N", "errors_seen")

    def _row(self) -> dict:
        return self.tables["estimate"].iloc[0].to_dict()

    def __getattr__(self, name: str) -> Any:
        if name in self._FLOATS or name in self._INTS:
            v = self._row().get(name)
            if v is None or (isinstance(v, float) and math.isnan(v)):
                return None if name in ("estimate", "fpr", "fnr", "false_positives", "false_negatives") else v
            return int(v) if name in self._INTS else float(v)
        raise AttributeError(name)

    @property
    def delta(self) -> float:
        return float(self.level["delta"])

    def summary(self) -> str:
        est = "n/a" if self.estimate is None else f"{self.estimate:.4f}"
        rate = lambda x: "n/a" if x is None else f"{x:.3f}"  # noqa: E731
        grader = (self.info.get("grader") or {}).get("said")
        outcomes = (self.info.get("outcomes") or {}).get("said")
        return (f"{self.n_checked} of {self.m_drawn} drawn answers checked (of {self.N}); "
                + (f"grader audited: {grader}; " if grader else "")
                + f"grader's accuracy {self.raw:.4f}; corrected accuracy {est} [{self.ci_low:.4f}, "
                f"{self.ci_high:.4f}] ({100 * (1 - self.delta):g}%, finite-sample, valid at any stopping row); grader "
                f"errors seen {self.errors_seen}; estimated false-positive rate {rate(self.fpr)}, false-negative rate "
                f"{rate(self.fnr)} (point estimates)" + (f"; {outcomes}" if outcomes else ""))


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


def _checked(run: pd.DataFrame, sheet: pd.DataFrame, plan: dict) -> tuple[np.ndarray, np.ndarray]:
    """The draws' order (m,) and the person's checks (n,): the plan and the sheet checked against the run (the same
    answers and scores, the rows in the order drawn), the rows read up to the first blank."""
    _check_plan(plan)
    ids = [str(i) for i in run["id"]]
    if plan.get("ids") != ids:
        raise AssayInputError("the audit file's plan was drawn from another run (its answer ids differ from the run's)")
    if plan.get("fingerprint") != _fingerprint(run):
        raise AssayInputError("the run's grader scores changed since the audit was drawn; audit it afresh")
    order = np.asarray(plan["order"], np.int64)
    if len(sheet) != len(order):
        raise AssayInputError(f"the audit file has {len(sheet)} rows; {len(order)} answers were drawn")
    got = [str(x) for x in sheet["id"]]
    for k, (a, b) in enumerate(zip((ids[i] for i in order), got)):
        if a != b:
            raise AssayInputError(f"row {k + 1} of the audit file has id {b!r}, but draw {k + 1} was {a!r}: the rows "
                                  "must stay in the order they were drawn (and no row may be removed)")
    y = []
    for k, v in enumerate(sheet["human"]):
        s = "" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v).strip()
        if s in ("", "nan", "None"):
            break
        if s not in ("1", "1.0", "0", "0.0"):
            raise AssayInputError(f"row {k + 1} of the audit file (id {got[k]!r}): human must be 0, 1 or blank; got "
                                  f"{v!r}")
        y.append(float(s))
    return order, np.asarray(y, float)


def _grader_errors(y: np.ndarray, f_at: np.ndarray, flagged: np.ndarray, order: np.ndarray) -> dict:
    """The grader's estimated error counts and rates (module docstring), the flag as the stratum: ``false_positives``,
    ``false_negatives``, ``fpr``, ``fnr`` (None where there is nothing to estimate on)."""
    g = flagged[order[:len(y)]].astype(np.int64)[None, :]
    sizes = np.array([[np.sum(~flagged), np.sum(flagged)]])
    fp, fn, wrong, right = (float(count_estimate(z[None, :], g, sizes)[0])
                            for z in (f_at * (1 - y), (1 - f_at) * y, 1 - y, y))
    ok = lambda x: None if math.isnan(x) else x  # noqa: E731
    return {"false_positives": ok(fp), "false_negatives": ok(fn), "fpr": fp / wrong if wrong > 0 else None,
            "fnr": fn / right if right > 0 else None}


def evaluate(run: Any, labels: Any, *, plan: Any = None, delta: float = 0.05, grid: int = 1024) -> AuditResult:
    """Read a person's checks back and correct the grader's accuracy (module docstring).

    ``labels``: the sheet :func:`sample` wrote (a file, or its DataFrame), with ``human`` filled in: 1 (the answer is
    right), 0 (wrong) or blank. Rows are taken in file order and the sample is the rows before the first blank.
    ``plan``: the plan :func:`sample` made (default: the ``.plan.json`` beside the sheet file, or the DataFrame's
    ``attrs["plan"]``). The result names the grader audited and the run's outcomes (:class:`AuditResult`), and warns
    when more than a fifth of the answers are unparseable or cut off.
    """
    from .checks import level
    from .data.audit import read_plan, read_sheet

    delta = level(delta)
    run = read_run(run)
    sheet = read_sheet(labels)
    plan = read_plan(plan, labels)
    order, y = _checked(run, sheet, plan)
    n, m = len(y), len(order)
    f = run["score"].to_numpy(float)
    N = len(f)
    flagged = np.asarray(plan["flagged"], bool)
    w = np.where(flagged, float(plan["weight"]), 1.0)
    q_at, a_sum, lo_w, hi_w = plan_draws(w[None, :], f[None, :], n, float(plan["floor"]), order=order[None, :n])[1:]
    if not np.allclose(q_at[0], np.asarray(plan["q"][:n], float)):
        raise AssayInputError("the plan's probabilities do not follow from its flags: the plan file was edited")
    f_at = f[order[:n]]
    est, lo, hi = audit_interval(y[None, :], f_at[None, :], q_at, a_sum, lo_w, hi_w, N, delta, grid=grid)
    fl, err = flagged[order[:n]], y != f_at
    strata = {"flagged": {"checked": int(fl.sum()), "errors": int(err[fl].sum()), "in_run": int(flagged.sum())},
              "not_flagged": {"checked": int((~fl).sum()), "errors": int(err[~fl].sum()),
                              "in_run": int(N - flagged.sum())}}
    row = {"estimate": float(est[0]) if n else None, "ci_low": float(lo[0]), "ci_high": float(hi[0]),
           "raw": float(f.mean()), **_grader_errors(y, f_at, flagged, order), "n_checked": n, "m_drawn": m, "N": N,
           "errors_seen": int(err.sum())}
    about = _about(run)
    strata_t = pd.DataFrame([{"stratum": k, **v} for k, v in strata.items()])
    return build(AuditResult, params={"floor": float(plan["floor"]), "weight": float(plan["weight"]), "grid": grid,
                                      "fingerprint": plan["fingerprint"]},
                 n=n, n_meaning="answers checked by a person", delta=float(delta),
                 meaning="the interval holds the run's true accuracy with probability >= 1 - delta, at whichever row "
                         "the person stopped (a finite-sample confidence sequence)",
                 seed=plan.get("seed"), tables={"estimate": pd.DataFrame([row]), "strata": strata_t},
                 warnings=about["warnings"], info={"grader": about["grader"], "outcomes": about["outcomes"]})
