"""Every source of per-question scores, read one way for the command line, campaigns, the audit and Python alike.

A source is a score table (CSV / TSV / Parquet / JSONL, one row per model and question), a tool's log (lm-eval
``--log_samples``, inspect-ai ``.eval`` / ``.json``, HELM ``per_instance_stats.json``), or a journal run of answers
scored against a bank. :func:`read_sources` reads any mix of them into compare's long table:

``model, item, score`` and, where known, ``task``, ``cluster``, ``epoch``, ``hash`` (``scheme:value``: a question's
text hashed by one tool, compared only within its scheme), ``scorer``, ``status`` (how the answer ended:
:mod:`assay.models.outcomes`), ``finish_reason``, ``log``, ``source``.

Naming. A source given as ``NAME=PATH`` (or a mapping ``{NAME: PATH}``) names what it holds: one model -> NAME,
several -> NAME/model. Two sources holding the same model on the same questions (two runs of one model) are refused
until named, as is a log that holds one model's answers to one question twice.

Scorers. A log's task scored several ways needs one chosen (``log_scorer``: an inspect scorer, an lm-eval
``METRIC,FILTER``, a metric or filter that settles it, a HELM metric); a value that picks nothing is refused.

Journal runs. An answer is matched to a bank question by its prompt: the prompt string the model was asked, or, for
chat messages, the text of the last user message (so a run asked with a system prompt matches its bank). One answer
per question: a run holding two answers to one question (asked twice with other settings) is refused, naming it. A
run id with no answers of its own that is the parent of others (``live1`` of ``live1/plain``, ``live1/boxed``)
stands for those runs. A run scored by assay records its scorer and policy (and its bank's fingerprint); they are the
defaults here, so a run is read back as it was scored, against the bank file it recorded when none is given. Each
answer keeps its outcome and finish reason.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

from ..errors import AssayInputError
from .tables import read_plain

__all__ = ["score_records", "grader_words", "split_source", "read_sources", "read_log", "read_scores_file", "choose_scorers", "describe_sources",
           "question_text", "journal_runs", "read_journal_answers", "read_journal_scores", "bank_fingerprint",
           "LOG_FORMATS"]

#: the tool logs :func:`read_log` reads
LOG_FORMATS = ("lmeval", "inspect", "helm")
#: the columns a score table may name for each role of compare's long table (``columns=``)
ROLES = ("model", "item", "score", "task", "cluster", "epoch")


def split_source(raw: Any) -> tuple[str | None, Path]:
    """``NAME=PATH`` -> (NAME, PATH); a path that exists, or that has no ``=``, is a path with no name.

    Examples
    --------
    >>> split_source("nothing-here.csv")
    (None, PosixPath('nothing-here.csv'))
    """
    raw = str(raw)
    if Path(raw).exists() or "=" not in raw:
        return None, Path(raw)
    name, path = raw.split("=", 1)
    name = name.strip()
    if not name:
        raise AssayInputError(f"{raw!r}: NAME=PATH needs a name before '='")
    if not Path(path).exists():
        raise AssayInputError(f"{path}: no such file or directory (from {raw!r}: NAME=PATH)")
    return name, Path(path)


def _named(sources: Any) -> list[tuple[str | None, Path, str]]:
    """(name, path, how it was given) of each source: a mapping name -> path, or paths / ``NAME=PATH`` strings."""
    if sources is None:
        return []
    if isinstance(sources, (str, os.PathLike)):
        sources = [sources]
    if isinstance(sources, Mapping):
        out = []
        for name, path in sources.items():
            if not Path(path).exists():
                raise AssayInputError(f"{path}: no such file or directory (source {name!r})")
            out.append((str(name), Path(path), f"{name}={path}"))
        return out
    return [(*split_source(raw), str(raw)) for raw in sources]


# -------------------------------------------------------------------------------------------------------------------
# logs and tables


def choose_scorers(t: pd.DataFrame, where: Any, wanted: Sequence[str], task: str = "task") -> pd.DataFrame:
    """One scorer per task: an inspect scorer, an lm-eval (metric, filter) as ``METRIC,FILTER`` (``,none`` left
    out), an ``assay ingest`` table's metric. A task with one keeps it; with several, exactly one of ``wanted``
    must pick one (a value matches a scorer's whole label, its metric or its filter); none given, or none or two
    matching, is refused with the task's scorers named. The rows kept have ``metric`` = the chosen label."""
    if t.empty:
        return t
    metric, flt = _text_or_none(t["metric"]), (_text_or_none(t["filter"]) if "filter" in t.columns else None)
    if None in metric:
        from .tables import describe_rows

        raise AssayInputError(f"{where}: the 'metric' column is empty at "
                              f"{describe_rows(t.index[[m is None for m in metric]])}: every score needs its metric")
    flt = ["none" if f is None else f for f in (flt or ["none"] * len(t))]
    label = pd.Series([f"{m},{f}" for m, f in zip(metric, flt)], index=t.index).str.replace(r",none$", "",
                                                                                          regex=True)
    t = t.assign(_choice=label)
    keep = []
    for name, g in t.groupby(task, sort=False):
        offered = list(dict.fromkeys(g["_choice"]))
        pick = [c for c in offered if any(w in (c, *c.split(",", 1)) for w in wanted)] if wanted else []
        if len(offered) == 1 and len(pick) <= 1:
            pick = offered
        if len(pick) != 1:
            said = ("choose one with log_scorer= (METRIC,FILTER, or a metric or filter that settles it; give it "
                    "once per task that needs it)" if not wanted else
                    f"log_scorer= {' / '.join(wanted)} matches {len(pick) or 'none'} of them")
            raise AssayInputError(f"{where}: task {name!r} has {len(offered)} scorers ({'; '.join(offered)}); {said}")
        keep.append(g[g["_choice"] == pick[0]].assign(metric=pick[0]))
    return pd.concat(keep).drop(columns="_choice")


def _check_scorers_used(frames: list[pd.DataFrame], wanted: Sequence[str]) -> None:
    """Every ``log_scorer`` value must pick some task's scorer: one that matches none is a typo, refused."""
    offered: set[str] = set()
    for f in frames:
        if "scorer" in f.columns:
            for label in f["scorer"].dropna().astype(str).unique():
                offered.update((label, *label.split(",", 1)))
    unused = [w for w in wanted if w not in offered]
    if unused:
        raise AssayInputError(f"log_scorer= {', '.join(unused)}: no task of these sources is scored that way (their "
                              f"scorers: {', '.join(sorted(x for x in offered if ',' not in x)) or 'none'})")


def read_log(path: Any, fmt: str | None = None, log_scorer: Sequence[str] = ()) -> pd.DataFrame:
    """A tool log as compare's long table: ``model, task, item, score, epoch, scorer, log`` and ``hash`` where the
    tool hashes its questions (``lmeval:...``, ``inspect:...``)."""
    from . import logs

    path = Path(path)
    fmt = fmt or logs.detect_format(path)
    log_scorer = list(log_scorer)
    if fmt == "inspect":
        t = choose_scorers(logs.read_inspect(path), path, log_scorer)
    elif fmt == "lmeval":
        t = choose_scorers(logs.read_lmeval(path, choices="all"), path, log_scorer)
    elif fmt == "helm":
        if len(log_scorer) > 1:
            raise AssayInputError(f"{path}: a HELM run is read with one metric; got log_scorer= "
                                  f"{', '.join(log_scorer)}")
        t = logs.read_helm(path, metric=log_scorer[0] if log_scorer else "exact_match")
    else:
        raise AssayInputError(f"{path}: not a log of {', '.join(LOG_FORMATS)} (format {fmt!r})")
    f = pd.DataFrame({"model": t["model"].astype(str).to_numpy(), "task": t["task"].astype(str).to_numpy(),
                      "item": t["item"].astype(str).to_numpy(), "score": t["score"].to_numpy(),
                      "epoch": t["epoch"].to_numpy(), "scorer": t["metric"].astype(str).to_numpy(),
                      "log": t["log"].astype(str).to_numpy()})
    if "item_hash" in t and t["item_hash"].notna().any():
        f["hash"] = [None if h is None or h != h else f"{fmt}:{h}" for h in t["item_hash"]]
    _one_run_per_model(f, path)
    return f


def read_scores_file(path: Any, *, columns: Mapping[str, str] | None = None,
                     log_scorer: Sequence[str] = ()) -> pd.DataFrame:
    """A score table as compare's long table. ``columns`` maps roles (``model``, ``item``, ``score``, ``task``,
    ``cluster``, ``epoch``) to the table's columns; ``task`` and ``epoch`` (or ``repeat``) are found by name, and an
    ``assay ingest`` table's ``metric`` / ``filter`` / ``item_hash`` are understood (one scorer per task)."""
    path = Path(path)
    cols = {r: r for r in ("model", "item", "score")}
    given = dict(columns or {})
    unknown = set(given) - set(ROLES)
    if unknown:
        raise AssayInputError(f"unknown column role(s) {sorted(unknown)}; accepted: {', '.join(ROLES)}")
    cols.update(given)
    t = read_plain(path, text_columns=tuple(cols[r] for r in ("model", "item", "cluster", "task") if r in cols))
    dup = t.columns[t.columns.duplicated()]
    if len(dup):
        raise AssayInputError(f"{path}: the column {dup[0]!r} appears more than once")
    if "task" not in cols and "task" in t.columns:
        cols["task"] = "task"
    if "epoch" not in cols:
        found = next((c for c in ("epoch", "repeat") if c in t.columns), None)
        if found:
            cols["epoch"] = found
    missing = [c for c in cols.values() if c not in t.columns]
    if missing:
        hint = ", ".join(f"'{r}': 'YOUR_COLUMN'" for r, c in cols.items() if c in missing)
        raise AssayInputError(f"{path}: no column {', '.join(map(repr, missing))}; its columns are "
                              f"{', '.join(map(str, t.columns))}. Name yours with columns={{{hint}}}")
    if "metric" in t.columns:  # an assay ingest table: one scorer (metric, filter) per task
        t = choose_scorers(t.assign(_task=t[cols["task"]].astype(str) if "task" in cols else ""), path,
                           list(log_scorer), "_task")
    elif log_scorer:
        raise AssayInputError(f"{path}: log_scorer= picks a scorer of a tool log (or of a table's 'metric' column); "
                              "this table has no 'metric' column")
    f = t[list(cols.values())].rename(columns={v: k for k, v in cols.items()})
    if "item_hash" in t.columns and t["item_hash"].notna().any():
        src = _text_or_none(t["source"]) if "source" in t.columns else [None] * len(t)
        f["hash"] = [None if h is None or h != h else f"{s or 'table'}:{h}" for s, h in zip(src, t["item_hash"])]
    if "metric" in t.columns:
        f["scorer"] = t["metric"].astype(str).to_numpy()
    return f


def _one_run_per_model(f: pd.DataFrame, path: Path) -> None:
    """Within one source, a model must not answer one question in two log files (two runs of one model)."""
    if f["log"].nunique() < 2:
        return
    per = f.drop_duplicates(["model", "task", "item", "epoch", "log"]).groupby(
        ["model", "task", "item", "epoch"])["log"].nunique()
    twice = per[per > 1]
    if len(twice):
        model, task = twice.index[0][0], twice.index[0][1]
        files = sorted(set(f[(f["model"] == model) & (f["task"] == task)]["log"]))
        raise AssayInputError(f"{path}: model {model!r} answers task {task!r} in {len(files)} logs "
                              f"({', '.join(Path(x).name for x in files[:3])}): two runs of one model. Give each run "
                              "its own name: NAME1=LOG1 NAME2=LOG2 ...")


def _distinct_sources(frames: list[pd.DataFrame]) -> None:
    """Two sources holding the same model name on shared questions are two runs of one model: name them."""
    seen: dict = {}
    for f in frames:
        src = str(f["source"].iloc[0])
        for model, g in f.groupby("model", sort=False):
            keys = set(zip(g["task"], g["item"])) if "task" in g else set(g["item"])
            for other, okeys in seen.get(model, []):
                if keys & okeys:
                    raise AssayInputError(f"{other} and {src} both hold model {model!r} on the same questions (two "
                                          f"runs of one model?): name them, e.g. A={other} B={src}")
            seen.setdefault(model, []).append((src, keys))


def read_sources(sources: Any = None, *, columns: Mapping[str, str] | None = None, log_scorer: Sequence[str] = (),
                 runs: Sequence[str] = (), journal: Any = None, bank: Any = None, scorer: Any = None,
                 policy: str | None = None) -> pd.DataFrame:
    """Compare's long table from score files, tool logs and journal runs (module docstring).

    Parameters
    ----------
    sources : mapping, sequence or path, optional
        ``{NAME: PATH}``, or paths and ``NAME=PATH`` strings.
    columns : mapping, optional
        A score table's columns by role (``model``, ``item``, ``score``, ``task``, ``cluster``, ``epoch``).
    log_scorer : sequence of str
        The scorer of each log task that has several.
    runs : sequence of str
        Journal runs (each one model, named by its run id; a parent run id stands for the runs inside it).
    journal : path or Journal, optional
        The journal of ``runs`` (default: the user's).
    bank : table or path, optional
        The questions ``runs`` asked (id, prompt, reference, optionally a scorer column).
    scorer : str or callable, optional
        How ``runs`` are scored: a scorer, or a column of ``bank`` naming each question's; default what each run
        recorded, else ``exact``.
    policy : str, optional
        What an answer the scorer cannot read counts as (default: what each run recorded, else ``wrong``).

    Returns
    -------
    DataFrame
        The long table, with ``source`` (how each row's source was given).
    """
    log_scorer = list(log_scorer or [])
    frames = []
    for name, path, given in _named(sources):
        from .logs import detect_format

        fmt = detect_format(path)
        f = (read_log(path, fmt, log_scorer) if fmt in LOG_FORMATS
             else read_scores_file(path, columns=columns, log_scorer=log_scorer))
        if f.empty:
            raise AssayInputError(f"{given}: holds no scores (no rows)")
        if name is not None:
            found = list(dict.fromkeys(str(m) for m in f["model"]))
            f["model"] = name if len(found) == 1 else [None if m is None else f"{name}/{m}"
                                                       for m in _text_or_none(f["model"])]
        f["source"] = given
        frames.append(f)
    _check_scorers_used(frames, log_scorer)
    if runs:
        frames.append(read_journal_scores(runs, bank=bank, journal=journal, scorer=scorer, policy=policy)
                      .assign(source="journal"))
    if not frames:
        raise AssayInputError("give at least one score file, log or journal run")
    _distinct_sources(frames)
    table = pd.concat(frames, ignore_index=True, sort=False)
    if "task" in table.columns:
        table["task"] = table["task"].fillna("")
    return table


def _text_or_none(models: pd.Series) -> list:
    """Each row's value as text, a missing one kept missing (refused later, naming the row)."""
    return [None if m is None or (isinstance(m, float) and m != m) or m is pd.NA else str(m) for m in models]


def describe_sources(table: pd.DataFrame) -> dict:
    """What each source held (its models as named) and which scorer each task was read with: ``{"sources": [lines],
    "scorers": {task: scorers}}`` for a result's header."""
    lines = []
    named = "source" in table.columns and (table["source"].nunique() > 1
                                           or any("=" in str(x) for x in table["source"].unique()))
    if named:
        for src, g in table.groupby("source", sort=False):
            models = list(dict.fromkeys(str(m) for m in g["model"]))
            lines.append(f"{src}: {', '.join(models[:6])}" + (" ..." if len(models) > 6 else ""))
    out: dict = {"sources": lines}
    if "scored_by" in table.columns:  # journal runs: each run's grader and where it came from
        runs = table.dropna(subset=["scored_by"]).drop_duplicates(["model", "scorer"])
        out["graders"] = {str(m): ", ".join(sorted({str(x) for x in g["scorer"]})) + f" ({g['scored_by'].iloc[0]})"
                          for m, g in runs.groupby("model", sort=False)}
    if "scorer" in table.columns and "task" in table.columns:
        sc = table.dropna(subset=["scorer"]).drop_duplicates(["task", "scorer"])
        if len(sc):
            out["scorers"] = {str(t): ", ".join(sorted({str(x) for x in g["scorer"]}))
                              for t, g in sc.groupby("task", sort=False)}
    return out


# -------------------------------------------------------------------------------------------------------------------
# journal runs


def question_text(prompt: Any) -> str:
    """The text a journal's prompt is matched to a bank question by: the prompt string, or, for chat messages (a
    list, or its JSON), the text of the last user message.

    Examples
    --------
    >>> question_text('[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2?"}]')
    '2+2?'
    >>> question_text("2+2?")
    '2+2?'
    """
    msgs = prompt
    if isinstance(prompt, str):
        s = prompt.strip()
        if not s.startswith("["):
            return prompt
        try:
            msgs = json.loads(s)
        except ValueError:
            return prompt
    if isinstance(msgs, list):
        users = [m.get("content") for m in msgs if isinstance(m, dict) and m.get("role") == "user"]
        if users and isinstance(users[-1], str):
            return users[-1]
        return prompt if isinstance(prompt, str) else json.dumps(msgs)
    return "" if prompt is None else str(prompt)


def bank_fingerprint(bank: pd.DataFrame) -> str:
    """A short hash of a bank's ids, prompts and references (as :func:`assay.data.bank.read_bank` gives them), to
    tell later whether a run is read against the bank it asked."""
    h = hashlib.sha256()
    for i, p, r in zip(bank.index, bank["prompt"], bank["reference"]):
        h.update(f"{i}\x1f{p}\x1f{r}\x1e".encode())
    return h.hexdigest()[:16]


def journal_runs(runs: Sequence[str], journal: Any) -> list[str]:
    """The runs ``runs`` stand for: each run with answers of its own as it is; a run id with none, the runs inside
    it (``live1`` -> ``live1/plain``, ``live1/boxed``); an unknown one refused with the runs the journal holds."""
    out = []
    for r in runs:
        if journal.has_run(r) and journal.answer_count(r) > 0:
            out.append(r)
            continue
        inside = [x["run_id"] for x in journal.runs() if str(x["run_id"]).startswith(f"{r}/")]
        if inside:
            out.extend(inside)
        elif journal.has_run(r):
            raise AssayInputError(f"run {r!r} of the journal {journal.path} holds no answers")
        else:
            journal.run(r)  # raises, naming the runs it holds
    return list(dict.fromkeys(out))


def _recorded_bank(j: Any, runs: Sequence[str]) -> Any:
    """The bank the runs recorded (``assay query`` records its prompts file and its columns), when they agree on one
    that still exists, its columns named ``id``, ``prompt``, ``reference``; else the error asking for the bank."""
    from . import read_table

    kept = {json.dumps([(j.run(r).get("meta") or {}).get(k) for k in ("bank_file", "bank_columns")]) for r in runs}
    file, cols = json.loads(next(iter(kept))) if len(kept) == 1 else (None, None)
    if file and cols and Path(file).exists():
        t = read_table(file, text_columns=tuple(c for c in cols.values() if c))
        if all(c is None or c in t.columns for c in cols.values()):
            ids = t[cols["id"]] if cols.get("id") else pd.Series(range(len(t))).astype(str)
            return pd.DataFrame({"id": ids.astype(str).to_numpy(), "prompt": t[cols["prompt"]].to_numpy(),
                                 "reference": t[cols["reference"]].to_numpy()})
    raise AssayInputError("a journal run needs its bank (bank=): the questions it asked (id, prompt, reference "
                          "and optionally a scorer column), to score its answers against")


def _bank_of(bank: Any) -> pd.DataFrame:
    """The bank, its ids, prompts and references read as text, checked (unique ids and prompts), with every other
    column of the table kept (a column may name each question's scorer)."""
    from . import read_table
    from .bank import check_bank, read_bank

    raw = bank if isinstance(bank, pd.DataFrame) else read_table(bank, text_columns=("id", "prompt", "reference"))
    b = read_bank(raw)
    check_bank(b, bank if not isinstance(bank, pd.DataFrame) else "the bank")
    extra = [c for c in raw.columns if c not in ("id", "prompt", "reference")]
    return b.join(pd.DataFrame({c: raw[c].to_numpy() for c in extra}, index=b.index))


def grader_words(scorer: Any, meta: dict, b: pd.DataFrame) -> str:
    """Where a journal run's scorer came from, in words: ``the scorer the run was scored with``, ``asked for; the
    run was scored with math``, ``the bank's scorer column`` or ``the default (the run recorded none)``."""
    recorded = _recorded(meta, "scorer")
    if scorer is None:
        return ("the scorer the run was scored with" if recorded else
                "the bank's scorer column (the run recorded none)" if "scorer" in b.columns else
                "the default (the run recorded none)")
    return ("the scorer the run was scored with" if recorded == scorer else
            f"asked for; the run was scored with {recorded}" if recorded else "asked for")


def _scorer_of(scorer: Any, meta: dict, b: pd.DataFrame) -> tuple[Any, list | None]:
    """The scorer a run is read with: ``scorer`` if given, else the one it recorded, else the bank's ``scorer``
    column, else ``exact``; a name that is a column of the bank gives each question its own -> (name, per-row
    scorers or None)."""
    name = scorer if scorer is not None else (_recorded(meta, "scorer") or ("scorer" if "scorer" in b.columns
                                                                               else "exact"))
    if isinstance(name, str) and name in b.columns:
        empty = b[name].isna().to_numpy()
        if empty.any():
            raise AssayInputError(f"the bank's scorer column {name!r} is empty for ids "
                                  f"{', '.join(map(str, b.index[empty][:3]))}")
        return name, [str(x) for x in b[name]]
    return name, None


def read_journal_answers(run: str, *, bank: Any = None, journal: Any = None, scorer: Any = None) -> pd.DataFrame:
    """One journal run's answers matched to its bank's questions (module docstring): one row per question answered,
    ``id, prompt, reference, response, finish_reason, outcome, error, scorer`` in bank order (``scorer``: the one
    given, the one the run recorded, the bank's ``scorer`` column, else ``exact``; a name that is a column of the
    bank gives each question its own), and the run's recorded settings in ``attrs["meta"]``. Without ``bank``, the
    bank file the run recorded (``assay query`` records its prompts file)."""
    from ..models.journal import default_path, open_journal

    j, own = open_journal(journal if journal is not None else default_path())
    try:
        names = journal_runs([str(run)], j)
        if names != [str(run)]:
            raise AssayInputError(f"run {run!r} holds no answers of its own; it holds the runs "
                                  f"{', '.join(names[:8])}{' ...' if len(names) > 8 else ''}: name one of them")
        b = _bank_of(bank if bank is not None else _recorded_bank(j, names))
        ans = _answers(j, str(run), b)
    finally:
        if own:
            j.close()
    name, per_row = _scorer_of(scorer, ans.attrs["meta"], b.loc[ans["id"]])
    return ans.assign(scorer=per_row if per_row is not None else [name] * len(ans))


def _answers(j: Any, run: str, b: pd.DataFrame) -> pd.DataFrame:
    """A run's answers matched to the bank by prompt; an error record only where the run has no answer."""
    rec = j.records(run)
    meta = j.run(run).get("meta", {}) or {}
    rec = rec.assign(question=[question_text(p) for p in rec["prompt"]])
    by_prompt = {str(p): i for i, p in zip(b.index, b["prompt"])}
    rec = rec[rec["question"].map(lambda q: q in by_prompt)]
    if rec.empty:
        raise AssayInputError(f"none of run {run!r}'s prompts is a question of the bank (matched by prompt, or a "
                              "chat's last user message): give the bank it asked")
    rec = rec.assign(id=rec["question"].map(by_prompt), answered=rec["error"].isna())
    # an error record (a timeout) stands only where the run has no answer to that question
    rec = rec[rec["answered"] | ~rec["id"].isin(rec.loc[rec["answered"], "id"])]
    twice = rec[rec["answered"]]["id"]
    twice = twice[twice.duplicated()]
    if len(twice):
        shown = sorted(set(twice))
        raise AssayInputError(f"run {run!r} holds more than one answer to question(s) {', '.join(shown[:5])} (asked "
                              "again with other settings): one answer per question is read; ask into a new run id")
    rec = rec.drop_duplicates("id", keep="last").set_index("id")
    ids = [i for i in b.index if i in rec.index]
    out = pd.DataFrame({"id": ids, "prompt": b.loc[ids, "prompt"].to_numpy(),
                        "reference": b.loc[ids, "reference"].to_numpy(),
                        "response": rec.loc[ids, "text"].to_numpy(),
                        "finish_reason": rec.loc[ids, "finish_reason"].to_numpy(),
                        "outcome": rec.loc[ids, "outcome"].to_numpy(), "error": rec.loc[ids, "error"].to_numpy()})
    out.attrs["meta"] = meta
    return out


def score_records(j: Any, run: str, records: pd.DataFrame, *, bank: Any = None, scorer: Any = None,
                  policy: str | None = None) -> tuple[pd.DataFrame, str]:
    """A run's records (:meth:`assay.models.journal.Journal.records`) with each answer's bank question and score:
    ``id``, ``score`` (after the policy), ``extracted`` (the answer the scorer read), ``outcome`` (how it ended:
    answered, unparseable, ... for every record) and ``scorer``; scored against ``bank`` (default: the bank file the
    run recorded) with ``scorer`` and ``policy`` (default: what the run recorded, else ``exact`` and ``wrong``).
    Without a bank to read, the records keep their own outcome and text records say ``unscored``. Returns the table
    and a sentence saying how it was scored."""
    from ..models.outcomes import of_response
    from ..models.scoring import score_table

    out = records.copy()
    for col in ("id", "score", "extracted", "scorer"):
        out[col] = None
    out["outcome"] = [o if o is not None else of_response({"text": t, "error": e})
                      for o, t, e in zip(out["outcome"], out["text"], out["error"])]
    try:
        b = _bank_of(bank if bank is not None else _recorded_bank(j, [run]))
    except AssayInputError:
        if bank is not None:
            raise
        out["outcome"] = out["outcome"].where(out["outcome"].notna(), "unscored")
        return out, "not scored: the run recorded no bank file that still exists (give its bank)"
    by_prompt = {str(p): i for i, p in zip(b.index, b["prompt"])}
    ids = [by_prompt.get(question_text(p)) for p in out["prompt"]]
    known = [i is not None for i in ids]
    if not any(known):
        out["outcome"] = "not in the bank"
        return out, "not scored: none of the run's prompts is a question of the bank"
    meta = j.run(run).get("meta", {}) or {}
    rows = out[known]
    name, per_row = _scorer_of(scorer, meta, b.loc[[i for i in ids if i is not None]])
    scorers = per_row if per_row is not None else [name] * len(rows)
    used = policy or _recorded(meta, "policy") or "wrong"
    got = score_table(rows.assign(reference=b.loc[[i for i in ids if i is not None], "reference"].to_numpy()),
                      scorers, used, text="text")
    out.loc[known, "id"] = [i for i in ids if i is not None]
    out.loc[known, "score"] = got["score"].to_numpy()
    out.loc[known, "extracted"] = got["extracted"].to_numpy()
    out.loc[known, "outcome"] = got["status"].to_numpy()
    out.loc[known, "scorer"] = [str(x) for x in scorers]
    out.loc[[not k for k in known], "outcome"] = "not in the bank"
    return out, f"scored with {name if per_row is None else 'the bank column ' + repr(name)} ({grader_words(scorer, meta, b)}), policy {used!r}"


def _recorded(meta: dict, what: str):
    """A setting a run recorded when it was scored (``scorer``, ``policy``, ``bank``)."""
    for where in (meta, meta.get("scoring") or {}, meta.get("compare") or {}):
        if isinstance(where, dict) and where.get(what) is not None:
            return where[what]
    return None


def read_journal_scores(runs: Sequence[str], *, bank: Any = None, journal: Any = None, scorer: Any = None,
                        policy: str | None = None) -> pd.DataFrame:
    """Journal runs as compare's long table: each run is one model named by its run id (a parent run id stands for
    the runs inside it), each answer scored against the bank (``scorer`` and ``policy`` default to what the run
    recorded, else ``exact`` and ``wrong``), with its ``status`` and ``finish_reason``. An answer with no score (a
    timeout, or a failure under policy ``missing``) is left out of the scores, and counted in ``status``."""
    from ..models.journal import default_path, open_journal
    from ..models.scoring import score_table

    j, own = open_journal(journal if journal is not None else default_path())
    try:
        frames = []
        names = journal_runs([str(x) for x in runs], j)
        b = _bank_of(bank if bank is not None else _recorded_bank(j, names))
        for r in names:
            ans = _answers(j, r, b)
            meta = ans.attrs.get("meta", {})
            name, per_row = _scorer_of(scorer, meta, b.loc[ans["id"]])
            scorers = per_row if per_row is not None else [name] * len(ans)
            outs = score_table(ans, scorers, policy=policy or _recorded(meta, "policy") or "wrong")
            frames.append(pd.DataFrame({"model": r, "item": ans["id"].to_numpy(), "score": outs["score"].to_numpy(),
                                        "status": outs["status"].to_numpy(),
                                        "finish_reason": ans["finish_reason"].to_numpy(),
                                        "scorer": [str(x) for x in scorers],
                                        "scored_by": grader_words(scorer, meta, b)}))
    finally:
        if own:
            j.close()
    table = pd.concat(frames, ignore_index=True)
    return table
