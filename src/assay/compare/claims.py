"""What a comparison's claims are about and what they rest on, said beside every claim.

* **Scope.** A comparison of answers to questions that are a sample of a population makes claims about "questions
  like these" (``scope = "population"``: the files and journal runs compared with :func:`assay.compare.evaluate`);
  one that asked models questions of a bank without replacement makes claims about "these N questions" (``scope =
  "bank"``: :func:`assay.compare.live.query_until_resolved`, where a model asked the whole bank has its mean known
  exactly). Both are right about what they measured; a reader needs to know which was measured.
* **Outcomes.** Each model's answers by how they ended (:mod:`assay.models.outcomes`: answered, unparseable, too
  long for the model, refused or empty, timed out, transport errors) and, apart, how many were cut off at the token
  limit (finish reason ``length``). A source that does not record them says so. A claim resting on a model with more
  than a fifth of its answers unparseable or cut off carries a warning: its score counts answers it did not finish,
  or the parser could not read, as the policy says (wrong by default).
* **Equal is not equivalent.** Without a margin no pair is "equivalent"; a difference known exactly to be 0 (a
  bank read whole) is "equal", and two models that scored the same on every question are said "identical on all N
  questions".
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import pandas as pd

from ..models.outcomes import MODEL_FAILURES, SHAKY_SHARE, shaky

__all__ = ["SHAKY_SHARE", "scope_words", "tally", "outcome_words", "shaky", "outcome_notes", "identical_pairs",
           "equal_notes", "replay_words"]



def scope_words(info: Mapping[str, Any]) -> str:
    """``on these 30 questions`` (the bank) or ``on questions like these`` (the population a sample stands for)."""
    if info.get("scope") == "bank":
        return f"on these {int(info.get('bank_size') or 0):,} questions"
    return "on questions like these"


def tally(table: pd.DataFrame, model: str = "model") -> dict[str, dict[str, int] | None]:
    """Each model's outcome counts from a long table's ``status`` (and ``finish_reason``: ``cut_off``), None for a
    model whose rows do not record them; ``model`` names the table's model column (none: no counts)."""
    from ..models.outcomes import OUTCOMES

    out: dict[str, dict[str, int] | None] = {}
    if model not in table.columns or table.columns.duplicated().any():  # the table's reader refuses it, naming why
        return out
    has_status = "status" in table.columns
    has_finish = "finish_reason" in table.columns
    for m, g in table.groupby(model, sort=False):
        status = g["status"] if has_status else pd.Series(dtype=object)
        if not has_status or status.isna().all():
            out[str(m)] = None
            continue
        c = {o: int((status == o).sum()) for o in OUTCOMES}
        c["cut_off"] = int((g["finish_reason"].astype(str) == "length").sum()) if has_finish else 0
        c["cut_off_recorded"] = bool(has_finish and g["finish_reason"].notna().any())
        out[str(m)] = c
    return out


def outcome_words(c: Mapping[str, int] | None, policy: str | None = None, compact: bool = False) -> str:
    """``30 answers: 14 answered, 16 unparseable; 15 cut off at the token limit`` (kinds with no answer left out;
    with a ``policy``, what the model's failures were scored as), or ``not recorded``.

    Examples
    --------
    >>> outcome_words({"answered": 14, "unparseable": 16, "cut_off": 15}, "wrong")
    '30 answers: 14 answered, 16 unparseable (scored as wrong); 15 cut off at the token limit'
    """
    if c is None:
        return "not recorded"
    from ..models.outcomes import LABELS, OUTCOMES

    total = sum(int(c.get(o, 0)) for o in OUTCOMES)
    parts = [f"{int(c.get(o, 0))} {LABELS[o]}" for o in OUTCOMES if int(c.get(o, 0)) or o == "answered"]
    if compact:  # a table cell: 30: 14 answered, 16 unparseable; 15 cut off
        cut = f"; {int(c.get('cut_off', 0))} cut off" if c.get("cut_off_recorded", True) else ""
        return f"{total}: " + ", ".join(parts) + cut
    line = f"{total} answers: " + ", ".join(parts)
    if policy and sum(int(c.get(o, 0)) for o in MODEL_FAILURES):
        line += " ({})".format({"wrong": "scored as wrong", "missing": "left out",
                                "correct": "scored as right"}.get(policy, f"policy {policy}"))
    if c.get("cut_off_recorded", True):
        line += f"; {int(c.get('cut_off', 0))} cut off at the token limit"
    else:
        line += "; cut-offs not recorded"
    return line


def outcome_notes(outcomes: Mapping[str, Any], models: pd.DataFrame, pairs: pd.DataFrame,
                  policy: str = "wrong") -> list[str]:
    """The warnings a result carries: for each model whose answers are shaky and that a verdict or a "may be the
    best" rests on, what it rests on; and which models' sources record no outcomes."""
    counted = {"wrong": "counted as wrong", "missing": "left out", "correct": "counted as right"}.get(policy, policy)
    notes = []
    decided = set(pairs.loc[pairs["verdict"] != "unresolved", "model_a"]) | set(
        pairs.loc[pairs["verdict"] != "unresolved", "model_b"])
    best = (set(models.loc[models["may_be_best"] & (models["rank_high"] < len(models)), "model"]) if len(models)
            else set())
    for m in models["model"]:
        why = shaky(outcomes.get(str(m)))
        if why and (m in decided or m in best):
            notes.append(f"{m}: {why} ({counted}); the verdicts and the rank resting on {m} say how it answers under "
                         "these settings, not what it knows (raise the token limit, or check the scorer, and compare "
                         "again)")
    missing = [str(m) for m in models["model"] if outcomes.get(str(m), "absent") is None]
    if missing:
        whose = "its source keeps" if len(missing) == 1 else "their sources keep"
        notes.append(f"outcomes not recorded for {', '.join(missing[:6])}{' ...' if len(missing) > 6 else ''} "
                     f"({whose} scores only): answers not finished, or not read by the scorer, are not told apart")
    return notes


def identical_pairs(S: np.ndarray, a: np.ndarray, b: np.ndarray, cells: int = 1 << 22) -> np.ndarray:
    """(P,) whether the two models of each pair scored the same on every question both were asked (NaN: not
    asked). Without NaN, from the rows' equality classes (no pairs x questions array, whatever the number of
    models); with NaN, pairs in slices of about ``cells`` cells.

    Examples
    --------
    >>> S = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 0.0]])
    >>> identical_pairs(S, np.array([0, 0, 1]), np.array([1, 2, 2])).tolist()
    [True, False, False]
    """
    if not np.isnan(S).any():
        cls = np.unique(S, axis=0, return_inverse=True)[1].ravel()
        return cls[a] == cls[b]
    out = np.zeros(len(a), bool)
    step = max(1, cells // max(S.shape[1], 1))
    for s in range(0, len(a), step):
        x, y = S[a[s:s + step]], S[b[s:s + step]]
        both = ~np.isnan(x) & ~np.isnan(y)
        out[s:s + step] = np.where(both, x == y, True).all(axis=1) & both.any(axis=1)
    return out


def equal_notes(pairs: pd.DataFrame, identical: np.ndarray, n_items: np.ndarray, scope: str) -> list[str]:
    """A sentence for the pairs that scored the same on every question: "identical on all N questions" (what that
    means for the claim in this scope)."""
    notes = []
    rows = pairs.loc[identical]
    for r, n in zip(rows.itertuples(index=False), np.asarray(n_items)[identical]):
        tail = ("so their means on these questions are equal" if scope == "bank" else
                "no difference seen, so nothing tells them apart on questions like these (unresolved is not a tie)")
        notes.append(f"{r.model_a} / {r.model_b}: identical on all {int(n):,} questions, {tail}")
    return notes


def replay_words(rp: dict) -> str:
    """What a replay found over its seeds: questions asked (mean, spread), the uniform run's, the history's effect."""
    a, u = rp.get("asked_spread"), rp.get("asked_uniform_spread")
    if not a:  # a result saved before replays ran several seeds
        return (f"replay: {rp['asked']:,} questions asked in all; a uniform run of the same engine on the same seed "
                f"asks {rp['asked_uniform']:,}")
    seeds = rp.get("seeds") or []
    which = (f"{rp['replays']} seeds ({seeds[0]}-{seeds[-1]})" if seeds and all(isinstance(x, int) for x in seeds)
             else f"{rp['replays']} seeds")
    line = (f"replay over {which}: {a['mean']:,.0f} questions asked in all on average (sd {a['sd']:,.0f}, "
            f"{a['min']:,}-{a['max']:,}; the tables show the first seed's run, {rp['asked']:,}); goal met in "
            f"{rp['goal_met_share']:.0%} of them")
    h = rp.get("history_effect")
    if h:
        line += (f"; uniform draws without the history ask {u['mean']:,.0f} (sd {u['sd']:,.0f}); with the history "
                 f"{rp.get('history')}: {h['ratio_mean']:.2f}x the uniform run's questions (Monte Carlo s.e. "
                 f"{h['ratio_se']:.2f}; {h['ratio_min']:.2f}-{h['ratio_max']:.2f} over the seeds)")
    else:
        line += "; no history: the draws are uniform"
    return line
