"""Read the per-sample outputs people already have into assay's tidy long table.

Output columns (one row per scored unit; ids are strings, missing stays missing):

``model, task, variant, item, epoch, metric, score`` plus, where the source has them, ``filter`` and
``item_hash`` (a hash of the question: lm-eval's ``doc_hash``, the sha256 of inspect's sample input),
``score_original`` / ``score_human`` / ``editor`` (inspect: the judge's or scorer's original value and a human edit
kept apart), ``latency_s`` (inspect ``total_time``, HELM ``inference_runtime``), ``source`` (the tool), ``log`` (the
file the row came from).

* lm-evaluation-harness ``--log_samples``: a directory (searched recursively) or ``samples_<task>_<date>.jsonl``
  files; the model name comes from the ``results_<date>.json`` beside them. One line per (doc_id, filter): pick
  the ``filter`` (default: the first one seen per task) and the ``metric`` (default: the first scalar metric of
  the line), or ask for every (metric, filter) choice at once (``choices="all"``). ``item`` = ``doc_id``;
  ``item_hash`` = ``doc_hash`` (identity across runs). ``variant`` = the task name with its few-shot count
  (``task@5shot``), or a label you pass.
* inspect-ai logs: ``.eval`` (zip; zstd-compressed members are read with ``zstandard``) or ``.json``. ``item`` =
  the sample ``id`` (ints and strings mixed in one dataset become strings), ``epoch`` = its epoch; one row per
  scorer (or the ``scorer`` you pick); ``model`` from the log unless you name it. Values: C = 1, P = 0.5, I = 0,
  N = 0, yes/true = 1, no/false = 0, numbers as they are. A score edited by a person (an entry with ``provenance``
  in the score's history) gives ``score_human`` (the edited value) while ``score_original`` keeps the first value:
  the human vs judge split of R-AutoEval+ (``to_autoeval``).
* HELM ``per_instance_stats.json`` (a run directory or the file): ``metric`` by name (default ``exact_match``),
  unperturbed instances unless ``perturbation`` is given, ``epoch`` = ``train_trial_index`` + 1,
  ``inference_runtime`` as ``latency_s`` (a PS-DME KPI).
* Generic CSV / Parquet / JSONL, wide (one column per item) or long: :func:`assay.data.read_table`.
"""

from __future__ import annotations

import json
import math
import re
import struct
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import AssayInputError
from .tables import read_plain

__all__ = ["read_lmeval", "read_inspect", "read_helm", "read_any", "detect_format", "score_value", "to_autoeval"]

_DATE = re.compile(r"_\d{4}-\d{2}-\d{2}T[0-9\-.:]+$")
_LETTER = {"C": 1.0, "P": 0.5, "I": 0.0, "N": 0.0}
_WORD = {"yes": 1.0, "true": 1.0, "correct": 1.0, "no": 0.0, "false": 0.0, "incorrect": 0.0}


def score_value(v: Any) -> float:
    """A score value as a float in [0, 1] (NaN when it has no scalar meaning: dicts, lists, None).

    Booleans and numbers are taken as they are; text is read as a letter grade, a word or a number.

    Parameters
    ----------
    v : Any
        The score as logged.

    Returns
    -------
    float
        The score, or NaN.

    Examples
    --------
    >>> [score_value(x) for x in ["C", "yes", "0.5", None]]
    [1.0, 1.0, 0.5, nan]
    """
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, (int, float, np.integer, np.floating)):
        return float(v)
    if isinstance(v, str):
        s = v.strip()
        if s in _LETTER:
            return _LETTER[s]
        if s.lower() in _WORD:
            return _WORD[s.lower()]
        try:
            return float(s)
        except ValueError:
            return math.nan
    return math.nan


# -- lm-evaluation-harness ------------------------------------------------------------------------------------

def _lmeval_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    files = sorted(path.rglob("samples_*.jsonl"))
    if not files:
        raise AssayInputError(f"{path}: no lm-eval samples_<task>_<date>.jsonl files (run lm-eval with its --log_samples option)")
    return files


def jsonl_samples(f: Path):
    """The samples of an lm-eval ``samples_*.jsonl`` file, one dict per non-empty line; a line that is not a JSON
    object is an AssayInputError naming the file and line."""
    for k, line in enumerate(f.read_text().splitlines()):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            raise AssayInputError(f"{f}:{k + 1}: not JSON ({e})") from None
        if not isinstance(rec, dict):
            raise AssayInputError(f"{f}:{k + 1}: a samples line must be a JSON object (one sample); got "
                                  f"{type(rec).__name__}")
        yield rec


def read_lmeval(path, *, metric: str | None = None, filter: str | None = None, model: str | None = None,
                variant: str | None = None, choices: str = "first") -> pd.DataFrame:
    """lm-evaluation-harness ``--log_samples`` output (see the module docstring).

    Parameters
    ----------
    path : str or Path
        A directory (searched recursively for ``samples_<task>_<date>.jsonl``) or one samples file; the model name
        comes from the ``results_<date>.json`` beside it.
    metric : str, optional
        The metric to read (default: the first scalar metric of each line); lines without it are skipped.
    filter : str, optional
        The filter to read (default: the first one seen per task).
    model : str, optional
        The model name to record (default: from the results file, else the directory's name).
    variant : str, optional
        The variant label (default: the task name with its few-shot count, ``task@5shot``).
    choices : {"first", "all"}, default "first"
        ``"all"``: one row per scalar metric and filter of each line (every choice a log offers, for the caller to
        pick from); ``"first"``: the metric and filter above.

    Returns
    -------
    DataFrame
        The tidy long table (module docstring), with ``filter`` and ``item_hash``; ``attrs["skipped"]`` counts the
        lines without a scalar value of the metric.

    Raises
    ------
    AssayInputError
        When the path does not exist, holds no samples file, a line is not a JSON object, or no scalar score is found.
    """
    path = Path(path)
    if not path.exists():
        raise AssayInputError(f"{path}: no such file or directory")
    rows: list[dict] = []
    skipped = 0
    logged: set[str] = set()
    for f in _lmeval_files(path):
        stem = f.name[len("samples_"):-len(".jsonl")] if f.name.startswith("samples_") else f.stem
        task = _DATE.sub("", stem)
        date = stem[len(task) + 1:]
        meta = {}
        res = sorted(f.parent.glob(f"results_{date}.json")) or sorted(f.parent.glob("results_*.json"))
        if res:
            try:
                meta = json.loads(res[0].read_text())
            except (json.JSONDecodeError, UnicodeDecodeError):
                meta = {}
            if not isinstance(meta, dict):
                meta = {}
        mname = model or meta.get("model_name") or f.parent.name
        shots = meta.get("n-shot")
        nshot = shots.get(task) if isinstance(shots, dict) else None
        var = variant or (f"{task}@{nshot}shot" if nshot is not None else task)
        chosen_filter = filter
        for rec in jsonl_samples(f):
            flt = rec.get("filter", "none")
            if chosen_filter is None and choices != "all":
                chosen_filter = flt
            if chosen_filter is not None and flt != chosen_filter:
                continue
            listed = rec.get("metrics")
            listed = [str(x) for x in listed] if isinstance(listed, (list, tuple)) else []
            names = [metric] if metric else listed
            found = [n for n in names if n in rec and isinstance(rec[n], (int, float, bool))]
            logged.update(listed)
            if not found:  # this task does not log the metric, or its value is not a scalar (lists, tuples)
                skipped += 1
                continue
            doc_hash = rec.get("doc_hash")
            for m in (found if choices == "all" else found[:1]):
                rows.append({"model": str(mname), "task": task, "variant": var, "item": str(rec.get("doc_id")),
                             "item_hash": doc_hash, "epoch": 1, "metric": m,
                             "filter": flt, "score": float(rec[m]), "source": "lm-eval", "log": str(f)})
    df = pd.DataFrame(rows)
    if df.empty:
        if metric:
            raise AssayInputError(f"{path}: no metric {metric!r}; the samples log {', '.join(sorted(logged)) or 'none'}")
        raise AssayInputError(f"{path}: no scalar per-sample scores found (filter {filter!r})")
    df.attrs["skipped"] = skipped
    return df


# -- inspect-ai -----------------------------------------------------------------------------------------------

def _zip_member(path: Path, zf: zipfile.ZipFile, name: str) -> bytes:
    info = zf.getinfo(name)
    if info.compress_type != 93:  # stored / deflate: the standard library reads these
        return zf.read(name)
    try:
        import zstandard
    except ImportError:
        raise AssayInputError(f"{path}: zstd-compressed inspect log; install zstandard (pip install zstandard)") from None
    with open(path, "rb") as fh:
        fh.seek(info.header_offset)
        head = fh.read(30)
        if head[:4] != b"PK\x03\x04":
            raise AssayInputError(f"{path}: corrupt zip member {name!r}")
        n, e = struct.unpack("<HH", head[26:30])
        fh.seek(info.header_offset + 30 + n + e)
        data = fh.read(info.compress_size)
    return zstandard.ZstdDecompressor().decompress(data, max_output_size=max(info.file_size, 1))


def _inspect_log(path: Path) -> tuple[dict, list[dict]]:
    """(eval spec, samples) of a .eval or .json log."""
    if path.suffix == ".json":
        try:
            log = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise AssayInputError(f"{path}: not JSON ({e})") from None
        if not isinstance(log, dict) or not isinstance(log.get("eval"), dict):
            raise AssayInputError(f"{path}: not an inspect log (no 'eval' object)")
        return log["eval"], _sample_list(path, log.get("samples"))
    try:
        zf = zipfile.ZipFile(path)
    except zipfile.BadZipFile:
        raise AssayInputError(f"{path}: cannot be read as an inspect .eval log: the file is damaged or incomplete "
                              "(an .eval log is a zip archive and this one does not open as one: was the run "
                              "interrupted, or the file cut short in a copy?)") from None
    def load(name):
        try:
            return json.loads(_zip_member(path, zf, name))
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise AssayInputError(f"{path}: member {name} is not JSON ({e})") from None

    with zf:
        names = zf.namelist()
        if "header.json" in names:
            head = load("header.json")
        elif "_journal/start.json" in names:
            head = load("_journal/start.json")
        else:
            raise AssayInputError(f"{path}: no header.json in the .eval archive")
        if not isinstance(head, dict) or not isinstance(head.get("eval"), dict):
            raise AssayInputError(f"{path}: the archive's header has no 'eval' object")
        spec = head["eval"]
        members = [n for n in names if n.startswith("samples/") and n.endswith(".json")]
        if members:
            samples = _sample_list(path, [load(n) for n in members])
        elif "summaries.json" in names:
            samples = _sample_list(path, load("summaries.json"))
        else:
            samples = []
    return spec, samples


def _sample_list(path: Path, samples) -> list[dict]:
    if samples is None:
        return []
    if not isinstance(samples, list) or not all(isinstance(s, dict) for s in samples):
        raise AssayInputError(f"{path}: 'samples' must be a list of sample objects")
    return samples


def read_inspect(path, *, scorer: str | None = None, variant: str | None = None,
                 model: str | None = None) -> pd.DataFrame:
    """inspect-ai ``.eval`` / ``.json`` logs: a file or a directory of them (see the module docstring).

    Parameters
    ----------
    path : str or Path
        A log file, or a directory searched recursively for ``.eval`` and ``.json`` logs.
    scorer : str, optional
        Read only this scorer (default: one row per scorer).
    variant : str, optional
        The variant label (default: the task name with its task arguments, ``task[k=v,...]``).
    model : str, optional
        The model name to record (default: the log's).

    Returns
    -------
    DataFrame
        The tidy long table (module docstring), with ``item_hash`` (of the sample's input), ``score_original``,
        ``score_human``, ``editor`` and ``latency_s``.

    Raises
    ------
    AssayInputError
        When the path does not exist or holds no logs, a score is malformed, the scorer is absent, or no sample is
        scored.
    """
    path = Path(path)
    if not path.exists():
        raise AssayInputError(f"{path}: no such file or directory")
    files = [path] if path.is_file() else sorted([*path.rglob("*.eval"), *path.rglob("*.json")])
    if not files:
        raise AssayInputError(f"{path}: no inspect .eval or .json logs")
    rows: list[dict] = []
    for f in files:
        spec, samples = _inspect_log(f)
        args = spec.get("task_args") if isinstance(spec.get("task_args"), dict) else {}
        var = variant or (spec.get("task", "") + ("[" + ",".join(f"{k}={v}" for k, v in sorted(args.items())) + "]"
                                                  if args else ""))
        for s in samples:
            ihash = _input_hash(s.get("input"))
            scores = s.get("scores") or {}
            if not isinstance(scores, dict):
                raise AssayInputError(f"{f}: sample {s.get('id')!r} has 'scores' that is not an object")
            if scorer is not None and scorer not in scores and scores:
                raise AssayInputError(f"{f}: no scorer {scorer!r}; scorers: {', '.join(scores)}")
            for name, sc in scores.items():
                if scorer is not None and name != scorer:
                    continue
                if not isinstance(sc, dict):
                    raise AssayInputError(f"{f}: score {name!r} of sample {s.get('id')!r} is not an object")
                hist = sc.get("history") if isinstance(sc.get("history"), list) else []
                edits = [h for h in hist if isinstance(h, dict) and h.get("provenance")]
                original = score_value(hist[0].get("value")) if hist else score_value(sc.get("value"))
                human = score_value(sc.get("value")) if edits else math.nan
                rows.append({"model": model or str(spec.get("model")), "task": str(spec.get("task")), "variant": var,
                             "item": str(s.get("id")), "item_hash": ihash, "epoch": _epoch(f, s), "metric": name,
                             "score": score_value(sc.get("value")), "score_original": original, "score_human": human,
                             "editor": (edits[-1]["provenance"].get("author") if edits else None),
                             "latency_s": s.get("total_time"), "source": "inspect", "log": str(f)})
    df = pd.DataFrame(rows)
    if df.empty:
        raise AssayInputError(f"{path}: the logs hold no scored samples")
    return df


def _input_hash(value: Any) -> str | None:
    """The sha256 of an inspect sample's input (text or chat messages): the same question hashes the same in every
    log of it, whatever the model, system prompt or epoch."""
    if value is None:
        return None
    import hashlib

    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _epoch(f: Path, s: dict) -> int:
    e = s.get("epoch", 1)
    if isinstance(e, bool) or not isinstance(e, (int, float)) or not math.isfinite(e) or e != int(e) or e < 1:
        raise AssayInputError(f"{f}: sample {s.get('id')!r} has epoch {e!r}; epochs are whole numbers >= 1")
    return int(e)


def to_autoeval(df: pd.DataFrame, *, candidate: str = "model") -> pd.DataFrame:
    """R-AutoEval+ table from an inspect table.

    One row per (candidate, item), ``loss_judge`` = 1 - the original score, ``loss_human`` = 1 - the human edit (NaN
    where no person reviewed the item).

    Repeats of one question (inspect epochs) are NOT independent examples: the certificate's i.i.d. unit is the
    question. So the epochs of an item are averaged into one example: an item that a person reviewed on some of
    its epochs gets the mean human loss over those epochs and the mean judge loss over the SAME epochs (the pair the
    rectifier compares); an item nobody reviewed gets the mean judge loss over all its epochs. When several epochs
    exist, ``df.attrs["note"]`` says how many were averaged per item.

    Parameters
    ----------
    df : DataFrame
        An inspect table, with ``score_original``, ``score_human`` and ``item`` columns.
    candidate : str, default "model"
        The column naming the candidate.

    Returns
    -------
    DataFrame
        Columns ``candidate``, ``item``, ``loss_human``, ``loss_judge``.

    Raises
    ------
    AssayInputError
        If ``df`` lacks ``score_original``, ``score_human`` or ``item``.
    """
    need = {"score_original", "score_human", "item"}
    if not need <= set(df.columns):
        raise AssayInputError("to_autoeval needs score_original and score_human (an inspect table)")
    t = pd.DataFrame({"candidate": df[candidate].astype(str).to_numpy(), "item": df["item"].astype(str).to_numpy(),
                      "judge": 1.0 - df["score_original"].to_numpy(dtype=float),
                      "human": 1.0 - df["score_human"].to_numpy(dtype=float)})
    t["reviewed"] = t["human"].notna()
    g = t.groupby(["candidate", "item"], sort=False)
    any_rev = g["reviewed"].transform("any")
    # judge loss: over the reviewed epochs for a reviewed item, over all epochs otherwise
    t["judge_used"] = np.where(any_rev & ~t["reviewed"], np.nan, t["judge"])
    out = t.groupby(["candidate", "item"], sort=False).agg(loss_judge=("judge_used", "mean"),
                                                            loss_human=("human", "mean"),
                                                            epochs=("judge", "size")).reset_index()
    out = out[["candidate", "item", "loss_human", "loss_judge", "epochs"]]
    max_ep = int(out["epochs"].max()) if len(out) else 1
    if max_ep > 1:
        out.attrs["note"] = (f"{len(t)} samples are {len(out)} items with up to {max_ep} epochs each: the epochs of an "
                             "item were averaged into one example (repeats of one question are not independent), "
                             "so n counts questions")
    return out.drop(columns="epochs")


# -- HELM -----------------------------------------------------------------------------------------------------

def read_helm(path, *, metric: str = "exact_match", split: str | None = None, perturbation: str | None = None,
              model: str | None = None) -> pd.DataFrame:
    """HELM ``per_instance_stats.json`` (a run directory, the file, or a suite directory of runs).

    A run that does not compute the metric is skipped (an error if none does).

    Parameters
    ----------
    path : str or Path
        A run directory, the file, or a suite directory searched recursively.
    metric : str, default "exact_match"
        The per-instance metric to read, by name.
    split : str, optional
        Read only the stats of this split.
    perturbation : str, optional
        Read the instances with this perturbation (default: the unperturbed ones).
    model : str, optional
        The model name to record (default: from ``run_spec.json``, else the run directory's name).

    Returns
    -------
    DataFrame
        The tidy long table (module docstring), with ``inference_runtime`` as ``latency_s``.

    Raises
    ------
    AssayInputError
        When the path does not exist, holds no stats file, a file is not JSON, or no run has the metric.
    """
    path = Path(path)
    if not path.exists():
        raise AssayInputError(f"{path}: no such file or directory")
    files = [path] if path.is_file() else sorted(path.rglob("per_instance_stats.json"))
    if not files:
        raise AssayInputError(f"{path}: no HELM per_instance_stats.json")
    rows: list[dict] = []
    missing: list = []
    for f in files:
        run = f.parent
        spec = {}
        if (run / "run_spec.json").exists():
            spec = json.loads((run / "run_spec.json").read_text())
        mname = model or ((spec.get("adapter_spec") or {}).get("model")) or run.name
        task = spec.get("name", run.name)
        try:
            data = json.loads(f.read_text())
        except json.JSONDecodeError as e:
            raise AssayInputError(f"{f}: not JSON ({e})") from None
        seen_metrics: set[str] = set()
        for inst in data:
            pert = (inst.get("perturbation") or {}).get("name")
            if pert != perturbation:
                continue
            val, lat = math.nan, math.nan
            for st in inst.get("stats", []):
                nm = st.get("name") or {}
                if split is not None and nm.get("split") != split:
                    continue
                seen_metrics.add(nm.get("name"))
                if nm.get("name") == metric and st.get("count", 1):
                    val = float(st.get("mean", st.get("sum", math.nan)))
                elif nm.get("name") == "inference_runtime" and st.get("count", 1):
                    lat = float(st.get("mean", math.nan))
            rows.append({"model": str(mname), "task": str(task), "variant": str(task), "item": str(inst.get("instance_id")),
                         "epoch": int(inst.get("train_trial_index", 0)) + 1, "metric": metric, "score": val,
                         "latency_s": lat, "source": "helm", "log": str(f)})
        if metric not in seen_metrics:  # this run does not compute the metric: skipped (an error if none does)
            rows = [r for r in rows if not (r["task"] == str(task) and r["model"] == str(mname))]
            missing.append((f, seen_metrics))
    if not rows:
        f, seen = missing[0]
        raise AssayInputError(f"{f}: no per-instance metric {metric!r}; available: "
                              f"{', '.join(sorted(m for m in seen if m))}")
    return pd.DataFrame(rows)


# -- dispatch -------------------------------------------------------------------------------------------------

def detect_format(path) -> str:
    """The format of a log file or folder: ``lmeval``, ``inspect``, ``helm`` or ``table``.

    Parameters
    ----------
    path : str or Path
        A file or a directory.

    Returns
    -------
    str
        ``lmeval``, ``inspect``, ``helm`` or ``table``.

    Raises
    ------
    AssayInputError
        If ``path`` is a directory with no lm-eval samples, HELM per_instance_stats.json or inspect logs, or a
        ``.json`` file cannot be read.
    """
    p = Path(path)
    if p.is_dir():
        if any(p.rglob("samples_*.jsonl")):
            return "lmeval"
        if any(p.rglob("per_instance_stats.json")):
            return "helm"
        if any(p.rglob("*.eval")):
            return "inspect"
        raise AssayInputError(f"{p}: a directory with no lm-eval samples, HELM per_instance_stats.json or inspect logs")
    if p.name.startswith("samples_") and p.suffix == ".jsonl":
        return "lmeval"
    if p.name == "per_instance_stats.json":
        return "helm"
    if p.suffix == ".eval":
        return "inspect"
    if p.suffix == ".json":
        try:
            with open(p, encoding="utf-8", errors="replace") as fh:
                head = fh.read(4096)
        except OSError as e:
            raise AssayInputError(f"{p}: {e}") from None
        if '"eval"' in head and ('"status"' in head or '"version"' in head):
            return "inspect"
    return "table"


def read_any(path, *, format: str = "auto", **kwargs: Any) -> pd.DataFrame:
    """Read ``path`` in the given (or detected) format into the tidy table.

    Parameters
    ----------
    path : str or Path
        A log file or folder, or a plain table.
    format : {"auto", "lmeval", "inspect", "helm", "table"}, default "auto"
        The format; ``auto`` detects it (:func:`detect_format`).
    **kwargs : Any
        Options of the format's reader (lm-eval: ``metric``, ``filter``, ``model``, ``variant``, ``choices``;
        inspect: ``scorer``, ``variant``, ``model``; HELM: ``metric``, ``split``, ``perturbation``, ``model``); None
        values are ignored, and an option the format does not take is an error naming the options it does.

    Returns
    -------
    DataFrame
        The tidy table.

    Raises
    ------
    AssayInputError
        If ``format`` is unknown (readers raise it for files they cannot read).
    """
    fmt = detect_format(path) if format == "auto" else format
    readers = {"lmeval": read_lmeval, "inspect": read_inspect, "helm": read_helm}
    if fmt in readers:
        allowed = {"lmeval": {"metric", "filter", "model", "variant", "choices"},
                   "inspect": {"scorer", "variant", "model"},
                   "helm": {"metric", "split", "perturbation", "model"}}[fmt]
        given = {k: v for k, v in kwargs.items() if v is not None}
        refused = sorted(set(given) - allowed)
        if refused:
            raise AssayInputError(f"{path}: a {fmt} log does not take {', '.join(refused)} (it takes "
                                  f"{', '.join(sorted(allowed))})")
        return readers[fmt](path, **given)
    if fmt == "table":
        given = sorted(k for k, v in kwargs.items() if v is not None)
        if given:
            raise AssayInputError(f"{path}: a plain table does not take {', '.join(given)} (those are options of "
                                  "tool logs; rename or filter the table's own columns instead)")
        return read_plain(path)
    raise AssayInputError(f"unknown format {format!r}; use auto, lmeval, inspect, helm or table")
