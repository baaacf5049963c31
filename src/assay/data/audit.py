"""The audit's files (:mod:`assay.audit`): the run to audit, read from a scored table or a journal run; the sheet a
person fills and the draws' plan beside it, written once and read back. The method itself reads and writes nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import AssayInputError

__all__ = ["read_run", "plan_path", "write_sheet", "read_sheet", "read_plan"]


def read_run(run: Any, *, bank: Any = None, scorer: str | None = None, journal: Any = None,
             policy: str = "wrong") -> pd.DataFrame:
    """The run to audit, one row per scored answer: ``id``, ``prompt``, ``reference``, ``response``, ``score`` (the
    grader's, 0 or 1), ``finish_reason``, ``status`` and ``scorer``.

    ``run`` is a scored table (a DataFrame or a file with ``id``, ``response`` (or ``text``), ``reference`` unless
    ``bank`` gives it, and ``score`` unless ``scorer`` is named), or the id of a journal run, read against ``bank``
    by :func:`assay.data.sources.read_journal_answers` (the one rule for matching an answer to its question; the
    scorer defaults to the one the run recorded, then the bank's ``scorer`` column, then ``exact``). Answers whose
    request failed (timeout, transport) are not part of the run's accuracy and are left out; every other answer
    needs a score of 0 or 1.

    ``attrs["audit"]`` says which grader the scores are, where it came from and which answers were left out:
    ``{"grader": {"name", "source", "recorded"}, "left_out": {outcome: count}}``. ``source`` is ``recorded`` (the
    scorer the run was scored with), ``asked`` (``scorer=``), ``bank`` (the bank's ``scorer`` column), ``column``
    (the table's ``scorer`` column), ``table`` (the table's own ``score`` column) or ``default`` (``exact``);
    ``recorded`` is the scorer the run recorded (a journal run) or ``"score column"`` (a table's own scores),
    whatever was used. A table read before keeps what it said.
    """
    prior = run.attrs.get("audit") if isinstance(run, pd.DataFrame) else None
    if isinstance(run, pd.DataFrame) or (isinstance(run, (str, Path)) and Path(run).exists()):
        t = _table_run(run, bank)
        grader = _table_grader(t, scorer, bank)
    else:
        from .sources import _recorded, read_journal_answers  # the same room: the one rule for a recorded setting

        t = read_journal_answers(str(run), bank=bank, journal=journal, scorer=scorer)
        recorded = _recorded(t.attrs.get("meta") or {}, "scorer")
        if recorded is not None and (scorer is None or scorer == recorded):
            source = "recorded"
        else:
            source = "asked" if scorer is not None else "bank" if _bank_scorers(bank) else "default"
        grader = {"name": _names(t["scorer"]), "source": source, "recorded": recorded}
        scorer = t["scorer"].tolist()
    for col in ("prompt", "finish_reason", "status"):
        if col not in t.columns:
            t[col] = None
    if "reference" not in t.columns:
        raise AssayInputError("the run has no 'reference' column: give its bank (bank=)")
    if scorer is not None or "score" not in t.columns:
        from ..models.scoring import score_table

        names = scorer if isinstance(scorer, list) else (t["scorer"].astype(str).tolist() if (
            "scorer" in t.columns and scorer is None) else [scorer or "exact"] * len(t))
        got = score_table(t, names, policy)
        t = t.assign(score=got["score"].to_numpy(), status=got["status"].to_numpy(), scorer=names)
    out = _scored(t)
    gone = t.loc[t["score"].isna(), "status"]
    left_out = {str(k): int(v) for k, v in gone.fillna("no score").astype(str).value_counts(sort=False).items()}
    if prior and grader["source"] == "table" and bank is None:  # a run read before, passed again
        grader, left_out = prior["grader"], prior.get("left_out") or left_out
    out.attrs = {"audit": {"grader": grader, "left_out": left_out}}
    return out


def _names(scorers: pd.Series) -> str | None:
    """The scorers of a run's answers in one name (``math``; ``math, numeric`` when its questions differ)."""
    named = [str(x) for x in scorers.dropna().unique()]
    return ", ".join(sorted(named)) if named else None


def _bank_scorers(bank: Any) -> bool:
    """Whether the bank given has a ``scorer`` column (the bank a run recorded has none)."""
    if bank is None:
        return False
    if isinstance(bank, pd.DataFrame):
        return "scorer" in bank.columns
    from . import read_table

    return "scorer" in read_table(bank, text_columns=("id", "prompt", "reference")).columns


def _table_grader(t: pd.DataFrame, scorer: str | None, bank: Any) -> dict:
    """Which grader a table's scores will be and where it comes from (:func:`read_run`)."""
    own = "score" in t.columns
    if scorer is not None:
        return {"name": str(scorer), "source": "asked", "recorded": "score column" if own else None}
    if own:
        return {"name": _names(t["scorer"]) if "scorer" in t.columns else None, "source": "table",
                "recorded": "score column"}
    if "scorer" in t.columns:
        return {"name": _names(t["scorer"]), "source": "bank" if t.attrs.get("scorer_from_bank") else "column",
                "recorded": None}
    return {"name": "exact", "source": "default", "recorded": None}


def _table_run(run: Any, bank: Any) -> pd.DataFrame:
    """A scored table's answers, their references (and prompts, scorers) from the bank where given."""
    from . import read_table
    from .bank import read_bank

    t = run.copy() if isinstance(run, pd.DataFrame) else read_table(run, text_columns=("id", "reference"))
    dup = t.columns[t.columns.duplicated()]
    if len(dup):
        raise AssayInputError(f"the run has the column {dup[0]!r} twice")
    if "response" not in t.columns and "text" in t.columns:
        t = t.rename(columns={"text": "response"})
    if "id" not in t.columns or "response" not in t.columns:
        raise AssayInputError("the run needs columns 'id' and 'response' (or 'text'); columns: "
                          f"{', '.join(map(str, t.columns))}")
    t["id"] = t["id"].astype(str)
    if t["id"].duplicated().any():
        raise AssayInputError(f"the run repeats the id {t['id'][t['id'].duplicated()].iloc[0]!r}")
    if bank is not None:
        raw = bank if isinstance(bank, pd.DataFrame) else read_table(bank, text_columns=("id", "prompt", "reference"))
        b = read_bank(raw, scorer_col="scorer" if "scorer" in raw.columns else None)
        missing = [i for i in t["id"] if i not in b.index]
        if missing:
            raise AssayInputError(f"{len(missing)} ids of the run are not in the bank, e.g. {missing[0]!r}")
        t["reference"] = b.loc[t["id"], "reference"].to_numpy()
        if "prompt" not in t.columns:
            t["prompt"] = b.loc[t["id"], "prompt"].to_numpy()
        if "scorer" in b.columns and "scorer" not in t.columns:
            t["scorer"] = b.loc[t["id"], "scorer"].to_numpy()
            t.attrs["scorer_from_bank"] = True
    return t


def _scored(t: pd.DataFrame) -> pd.DataFrame:
    """The answers with a grader's score (the others' requests failed), each 0 or 1."""
    t = t[t["score"].notna()].reset_index(drop=True)
    s = pd.to_numeric(t["score"], errors="coerce")
    bad = ~s.isin([0, 1])
    if bad.any():
        k = int(np.flatnonzero(bad.to_numpy())[0])
        raise AssayInputError(f"the grader's score of {t['id'].iloc[k]!r} is {t['score'].iloc[k]!r}; an audit needs 0 "
                              "or 1 for every answer")
    t["score"] = s.astype(float)
    if "scorer" not in t.columns:
        t["scorer"] = None
    if not len(t):
        raise AssayInputError("the run has no scored answer to audit")
    return t[["id", "prompt", "reference", "response", "score", "finish_reason", "status", "scorer"]]


def plan_path(sheet: str | Path) -> Path:
    """Where the plan of a sheet is kept: beside it, ``<name>.plan.json``."""
    p = Path(sheet)
    return p.with_name(p.stem + ".plan.json")


def write_sheet(sheet: pd.DataFrame, plan: dict, out: str | Path) -> None:
    """Write the sheet (CSV, Parquet or JSONL by extension) and its plan beside it; an existing file is never
    overwritten (it may hold a person's labels)."""
    for p in (Path(out), plan_path(out)):
        if p.exists():
            raise AssayInputError(f"{p} exists (it may hold a person's labels); give another -o, or move it away")
    from .tables import write_table

    write_table(sheet, out)
    plan_path(out).write_text(json.dumps(plan) + "\n")


def read_sheet(sheet: Any) -> pd.DataFrame:
    """A filled sheet (a file or a DataFrame) with its ``id`` and ``human`` columns, every cell as text."""
    from . import read_table

    t = sheet.copy() if isinstance(sheet, pd.DataFrame) else read_table(sheet, text_columns=("id", "human"))
    for c in ("id", "human"):
        if c not in t.columns:
            raise AssayInputError(f"the audit file has no {c!r} column; columns: {', '.join(map(str, t.columns))}")
    return t


def read_plan(plan: Any, sheet: Any) -> dict:
    """The draws' plan: a dict as it is, a path, or (``None``) the ``.plan.json`` beside the sheet file."""
    if isinstance(plan, dict):
        return plan
    if plan is None:
        if isinstance(sheet, pd.DataFrame):
            plan = sheet.attrs.get("plan")
            if plan is None:
                raise AssayInputError("give plan= (the .plan.json written beside the sheet, or sample()'s "
                                      "sheet.attrs['plan']) with a DataFrame of labels")
            return plan
        plan = plan_path(sheet)
    p = Path(plan)
    if not p.exists():
        raise AssayInputError(f"no plan {p}: the audit file must sit beside the .plan.json written with it")
    try:
        out = json.loads(p.read_text())
    except ValueError:
        raise AssayInputError(f"{p} is not a plan written by assay audit (not JSON)") from None
    if not isinstance(out, dict) or out.get("assay_audit") != 1:
        raise AssayInputError(f"{p} is not a plan written by assay audit")
    return out
