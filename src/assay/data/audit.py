"""The audit's files (:mod:`assay.audit`): the run to audit, read from a scored table or a journal run; the sheet a
person fills and the draws' plan beside it, written once and read back. The method itself reads and writes nothing.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import AssayInputError

__all__ = ["read_run", "plan_path", "write_sheet", "read_sheet", "read_plan"]


def _prompt_text(p: Any) -> str:
    """A journal's prompt (a string, or chat messages as JSON) as the text of its last user message."""
    if isinstance(p, str):
        s = p.strip()
        if s.startswith("["):
            try:
                msgs = json.loads(s)
            except ValueError:
                return p
            users = [m.get("content") for m in msgs if isinstance(m, dict) and m.get("role") == "user"]
            if users and isinstance(users[-1], str):
                return users[-1]
        return p
    return "" if p is None else str(p)


def read_run(run: Any, *, bank: Any = None, scorer: str | None = None, journal: Any = None,
             policy: str = "wrong") -> pd.DataFrame:
    """The run to audit, one row per scored answer: ``id``, ``prompt``, ``reference``, ``response``, ``score`` (the
    grader's, 0 or 1), ``finish_reason``, ``status`` and ``scorer``.

    ``run`` is a scored table (a DataFrame or a file with ``id``, ``response`` (or ``text``), ``reference`` unless
    ``bank`` gives it, and ``score`` unless ``scorer`` is named), or the id of a journal run (with ``bank``: its
    questions are matched to the run's answers by prompt, and ``scorer`` scores them; default the bank's ``scorer``
    column, else ``exact``). Answers whose request failed (timeout, transport) are not part of the run's accuracy
    and are left out; every other answer needs a score of 0 or 1.
    """
    from . import read_table
    from .bank import read_bank
    from ..models.scoring import make_scorer, score_response

    b = None
    if bank is not None:
        raw = bank if isinstance(bank, pd.DataFrame) else read_table(bank, text_columns=("id",))
        has_scorer = "scorer" in raw.columns
        b = read_bank(raw, scorer_col="scorer" if has_scorer else None)
    if isinstance(run, pd.DataFrame) or (isinstance(run, (str, Path)) and Path(run).exists()):
        t = run.copy() if isinstance(run, pd.DataFrame) else read_table(run, text_columns=("id",))
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
        if b is not None:
            missing = [i for i in t["id"] if i not in b.index]
            if missing:
                raise AssayInputError(f"{len(missing)} ids of the run are not in the bank, e.g. {missing[0]!r}")
            t["reference"] = b.loc[t["id"], "reference"].to_numpy()
            if "prompt" not in t.columns:
                t["prompt"] = b.loc[t["id"], "prompt"].to_numpy()
            if "scorer" in b.columns and "scorer" not in t.columns:
                t["scorer"] = b.loc[t["id"], "scorer"].to_numpy()
    else:
        if b is None:
            raise AssayInputError(f"{run!r} is neither a file nor a DataFrame; for a journal run give --bank (its "
                                  "questions and references)")
        from ..models.journal import default_path, open_journal

        j, own = open_journal(journal if journal is not None else default_path())
        if j is None:
            raise AssayInputError("no journal to read the run from (give --journal)")
        try:
            recs = j.records(str(run))
        finally:
            if own:
                j.close()
        recs = recs.assign(question=[_prompt_text(p) for p in recs["prompt"]]).drop_duplicates("question", keep="last")
        by_prompt = recs.set_index("question")
        rows = []
        for i, row in b.iterrows():
            if row["prompt"] in by_prompt.index:
                r = by_prompt.loc[row["prompt"]]
                rows.append({"id": str(i), "prompt": row["prompt"], "reference": row["reference"],
                             "response": r["text"], "finish_reason": r["finish_reason"], "error": r["error"],
                             "outcome": r["outcome"], **({"scorer": row["scorer"]} if "scorer" in b.columns else {})})
        if not rows:
            raise AssayInputError(f"no answer of journal run {run!r} is to a question of the bank (matched by prompt)")
        t = pd.DataFrame(rows)
    for col in ("prompt", "finish_reason", "status"):
        if col not in t.columns:
            t[col] = None
    if "reference" not in t.columns:
        raise AssayInputError("the run has no 'reference' column: give --bank")
    if scorer is not None or "score" not in t.columns:
        names = t["scorer"].astype(str) if ("scorer" in t.columns and scorer is None) else pd.Series(
            [scorer or "exact"] * len(t))
        scorers = {n: make_scorer(n) for n in names.unique()}
        def cell(col: str, k: int) -> str | None:
            v = t[col].iloc[k] if col in t.columns else None
            return None if v is None or (isinstance(v, float) and math.isnan(v)) else str(v)

        outs = [score_response(cell("response", k), cell("error", k), t["reference"].iloc[k], scorers[names.iloc[k]],
                               policy, outcome=cell("outcome", k), prompt=t["prompt"].iloc[k],
                               finish_reason=cell("finish_reason", k))
                for k in range(len(t))]
        t["score"] = [o.final_score for o in outs]
        t["status"] = [o.status for o in outs]
        t["scorer"] = names.to_numpy()
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
