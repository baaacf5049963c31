"""An LLM judge: grade (question, reference, answer) rows with a rubric, journaled, into R-AutoEval+'s judge labels.

:func:`judge` asks a judge model (any :class:`~assay.models.Model`; an OpenAI-compatible chat endpoint, or the
completions endpoint for a pretrained model with :class:`~assay.models.OpenAICompletionModel`) to grade every row,
through the crash-safe journal (a rerun with the same ``run_id`` asks nothing twice), reads each verdict with the
label rules of :func:`assay.models.extract.extract_label`, and returns a :class:`JudgeResult` whose ``labels`` table
has the columns ``assay autoeval`` reads: ``candidate, item, loss_judge`` (and ``loss_human`` when human labels are
given), plus ``verdict``, ``outcome`` and the judge's own words.

Rubric (:class:`Rubric`): a template with ``{question}``, ``{reference}`` and ``{answer}`` and a *verdict format*: the
words the judge must answer with and the loss each means (``CORRECT`` -> 0, ``INCORRECT`` -> 1 for the shipped
rubrics). Every verdict word must appear in the template, so the judge is told the format. Shipped: ``default``
(an instruction for chat models) and ``fewshot`` (four worked examples ending in ``Verdict:``, for pretrained
models through the completions endpoint, with ``stop=["\\n"]``). A file: YAML / JSON with ``template`` and
``verdicts`` (word -> loss in [0, 1]), or a plain-text template whose verdict words are CORRECT and INCORRECT.

Outcomes (:mod:`assay.models.outcomes`): a verdict read is ``answered``; an unparseable verdict, a prompt too long for
the judge, a refusal or an empty reply follow ``policy`` (``"wrong"``, the default: the graded answer counts as wrong,
loss 1; ``"correct"``: loss 0). A row whose *answer* is missing or empty is not sent to the judge (nothing to grade;
it is the candidate's failure on the item: loss 1, verdict ``no answer``, outcome ``not sent``). Timeouts and transport errors stop the
run with :class:`~assay.errors.AssayBackendError` after everything answered so far is journaled (resume with the run
id): a judge label is never made up for a request that did not go through.

Why any judge is safe: R-AutoEval+'s certificate holds whatever the judge's losses are (the judge only changes how
many human labels it saves), so a weak judge yields a weak saving, never an invalid certificate. Judge labels must
not depend on the human labels, and they do not here: the judge never sees them.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

import pandas as pd

from ..errors import AssayBackendError, AssayInputError
from .outcomes import ANSWERED, ENDPOINT_FAILURES, POLICIES, UNPARSEABLE, counts_of, headline, of_response

__all__ = ["Rubric", "RUBRICS", "judge", "JudgeResult", "parse_verdict"]

_DEFAULT_TEMPLATE = """You are grading an answer to a question. Compare the answer with the reference answer.
The answer is CORRECT if it gives the same final answer as the reference (wording, case and formatting do not
matter), and INCORRECT otherwise, or if it gives no clear answer.

Question: {question}
Reference answer: {reference}
Answer to grade: {answer}

Reply with one word, CORRECT or INCORRECT.
Verdict:"""

_FEWSHOT_TEMPLATE = """Each answer is graded against the reference answer: CORRECT if it gives the same final answer, \
INCORRECT otherwise.

Question: What is 2 + 2?
Reference answer: 4
Answer to grade: The answer is 4.
Verdict: CORRECT

Question: What is the capital of Italy?
Reference answer: Rome
Answer to grade: Milan
Verdict: INCORRECT

Question: True or False: fish live in trees.
Reference answer: False
Answer to grade: True.
Verdict: INCORRECT

Question: Which day comes after Monday?
Reference answer: Tuesday
Answer to grade: tuesday
Verdict: CORRECT

Question: {question}
Reference answer: {reference}
Answer to grade: {answer}
Verdict:"""

_PLACEHOLDERS = ("question", "reference", "answer")


@dataclass(frozen=True)
class Rubric:
    """A judge prompt template and its verdict format (``verdicts``: word -> loss in [0, 1])."""

    template: str
    verdicts: Mapping[str, float] = field(default_factory=lambda: {"CORRECT": 0.0, "INCORRECT": 1.0})
    name: str = "custom"

    def __post_init__(self) -> None:
        if not isinstance(self.template, str) or not self.template.strip():
            raise AssayInputError("a rubric needs a non-empty template")
        missing = [p for p in _PLACEHOLDERS if "{" + p + "}" not in self.template]
        if missing:
            raise AssayInputError(f"rubric {self.name!r}: the template has no {', '.join('{' + m + '}' for m in missing)}"
                                  " placeholder; it must show the judge the question, the reference and the answer")
        if not isinstance(self.verdicts, Mapping) or len(self.verdicts) < 2:
            raise AssayInputError(f"rubric {self.name!r} has no verdict format: give 'verdicts', at least two words "
                                  "the judge answers with and the loss each means, e.g. {CORRECT: 0, INCORRECT: 1}")
        clean = {}
        for word, loss in self.verdicts.items():
            if not isinstance(word, str) or not re.fullmatch(r"[A-Za-z][A-Za-z_-]*", word.strip()):
                raise AssayInputError(f"rubric {self.name!r}: verdict {word!r} must be one word of letters")
            try:
                loss = float(loss)
            except (TypeError, ValueError):
                loss = float("nan")
            if not 0.0 <= loss <= 1.0:
                raise AssayInputError(f"rubric {self.name!r}: the loss of verdict {word!r} must be in [0, 1]; got "
                                      f"{self.verdicts[word]!r}")
            if not re.search(rf"(?<![A-Za-z]){re.escape(word.strip())}(?![A-Za-z])", self.template, re.IGNORECASE):
                raise AssayInputError(f"rubric {self.name!r} has no verdict format in its template: the verdict word "
                                      f"{word!r} is never shown to the judge; say in the template how to answer "
                                      f"({' or '.join(self.verdicts)})")
            clean[word.strip().upper()] = loss
        object.__setattr__(self, "verdicts", clean)

    def prompt(self, question: str, reference: str, answer: str) -> str:
        return (self.template.replace("{question}", str(question)).replace("{reference}", str(reference))
                .replace("{answer}", str(answer)))

    @classmethod
    def load(cls, source: "str | Path | Rubric | None") -> "Rubric":
        """A shipped rubric by name (``default``, ``fewshot``), a file (YAML / JSON / plain text) or a Rubric."""
        if source is None:
            return RUBRICS["default"]
        if isinstance(source, Rubric):
            return source
        if isinstance(source, str) and source in RUBRICS:
            return RUBRICS[source]
        path = Path(source)
        if not path.exists():
            raise AssayInputError(f"no rubric {str(source)!r}: give a shipped rubric ({', '.join(RUBRICS)}) or a file")
        text = path.read_text()
        if path.suffix.lower() in (".yaml", ".yml", ".json"):
            import yaml

            try:
                spec = yaml.safe_load(text) if path.suffix.lower() != ".json" else json.loads(text)
            except (yaml.YAMLError, ValueError) as e:
                raise AssayInputError(f"rubric file {path} does not parse: {e}") from None
            if not isinstance(spec, Mapping) or "template" not in spec:
                raise AssayInputError(f"rubric file {path} needs a 'template' and 'verdicts' (word -> loss)")
            if "verdicts" not in spec:
                raise AssayInputError(f"rubric file {path} has no verdict format: add 'verdicts', the words the judge "
                                      "answers with and the loss each means, e.g. {CORRECT: 0, INCORRECT: 1}")
            return cls(spec["template"], spec["verdicts"], name=path.name)
        return cls(text, name=path.name)


RUBRICS: dict[str, Rubric] = {"default": Rubric(_DEFAULT_TEMPLATE, name="default"),
                              "fewshot": Rubric(_FEWSHOT_TEMPLATE, name="fewshot")}

def parse_verdict(text: str | None, rubric: Rubric) -> str | None:
    """The verdict word a judge's reply gives (upper case), or ``None`` when it gives none or two.

    The label rules of :func:`~assay.models.extract.extract_label` with the rubric's words, on the first line that
    holds a verdict word; a verdict word right after a negation ("not correct") means the other verdict when the
    rubric has exactly two.

    Parameters
    ----------
    text : str or None
        The judge's reply; reasoning blocks are dropped first.
    rubric : Rubric
        The rubric whose verdict words are read.

    Returns
    -------
    str or None
        The verdict word as the rubric spells it, or ``None``.

    Examples
    --------
    >>> rubric = RUBRICS["default"]
    >>> parse_verdict("The answer matches the reference.\\nCORRECT", rubric)
    'CORRECT'
    >>> parse_verdict("The answer is not correct.", rubric)
    'INCORRECT'
    """
    from .extract import extract_label, strip_reasoning

    text = strip_reasoning(text)
    if not text or not text.strip():
        return None
    words = list(rubric.verdicts)
    if len(words) == 2:
        for w in words:
            other = words[1 - words.index(w)]
            text = re.sub(rf"(?:\bnot|n't|\bno)\s+{re.escape(w)}\b", other, text, flags=re.IGNORECASE)
    return extract_label(text, {w.lower(): w for w in words})


class JudgeResult:
    """What :func:`judge` returns: ``labels`` (one row per graded row; the columns ``assay autoeval`` reads),
    ``counts`` (outcome -> n), ``run_id``, ``stats`` (the runner's counters) and ``headline``."""

    def __init__(self, labels: pd.DataFrame, counts: dict, run_id: str | None, stats: dict, policy: str,
                 rubric: Rubric, judge_name: str) -> None:
        self.labels = labels
        self.counts = counts
        self.run_id = run_id
        self.stats = stats
        self.policy = policy
        self.rubric = rubric
        self.judge_name = judge_name
        self.headline = headline(counts, policy)

    def to_dict(self) -> dict:
        return {"judge": self.judge_name, "rubric": self.rubric.name, "policy": self.policy, "run_id": self.run_id,
                "counts": self.counts, "headline": self.headline, "stats": self.stats,
                "agreement": self.agreement()}

    def agreement(self) -> dict | None:
        """How often the judge agrees with the human labels where both exist (``None`` without human labels)."""
        lab = self.labels
        if "loss_human" not in lab.columns:
            return None
        both = lab.dropna(subset=["loss_human"])
        both = both[both["outcome"] == ANSWERED]
        if not len(both):
            return {"n": 0, "agreement": None}
        agree = float((both["loss_human"].round() == both["loss_judge"].round()).mean())
        return {"n": int(len(both)), "agreement": agree}


def judge(rows: pd.DataFrame, model, *, rubric: "str | Path | Rubric | None" = None, policy: str = "wrong",
          question_col: str = "question", reference_col: str = "reference", answer_col: str = "answer",
          candidate_col: str | None = "candidate", item_col: str | None = "item", human_col: str | None = None,
          journal=None, run_id: str | None = None, concurrency: int = 8, timeout: float | None = 60.0,
          max_retries: int = 6, progress: Callable[[dict], None] | None = None, reuse: bool = False) -> JudgeResult:
    """Grade every row with the judge ``model`` and a rubric (see the module docstring).

    Parameters
    ----------
    rows : one row per answer to grade: question, reference and answer columns (names configurable); a candidate
        column (which model or configuration answered; default one candidate ``"model"``) and an item column (default
        the row number); ``human_col`` (optional) the human loss in [0, 1], empty where unlabelled.
    model : the judge (a :class:`~assay.models.Model`).
    policy : what an unparseable, too long or refused verdict counts as: ``"wrong"`` (loss 1, default) or
        ``"correct"`` (loss 0). (``"missing"`` is refused: R-AutoEval+ needs a judge loss on every row, and leaving
        out rows by the judge's behaviour would select the sample.)
    journal, run_id, concurrency, timeout, max_retries, progress, reuse : as in :func:`assay.models.run`.
    """
    from . import run as run_model

    rubric = Rubric.load(rubric)
    if policy not in POLICIES or policy == "missing":
        raise AssayInputError(f"judge policy must be 'wrong' (an unparseable verdict counts the answer wrong) or "
                              f"'correct'; got {policy!r}")
    if not isinstance(rows, pd.DataFrame) or not len(rows):
        raise AssayInputError("judge needs a non-empty table of rows to grade")
    dup_cols = rows.columns[rows.columns.duplicated()]
    if len(dup_cols):
        raise AssayInputError(f"the rows to grade have duplicate column names: {', '.join(map(str, dup_cols.unique()))}")
    need = [c for c in (question_col, reference_col, answer_col) if c not in rows.columns]
    if need:
        raise AssayInputError(f"the rows to grade have no column(s) {', '.join(map(repr, need))}; columns: "
                              f"{', '.join(map(str, rows.columns))}")
    cand = (rows[candidate_col].astype(str) if candidate_col and candidate_col in rows.columns
            else pd.Series("model", index=rows.index))
    item = (rows[item_col].astype(str) if item_col and item_col in rows.columns
            else pd.Series([str(i) for i in range(len(rows))], index=rows.index))
    dup = pd.Series(list(zip(cand, item))).duplicated()
    if dup.any():
        k = int(dup.to_numpy().nonzero()[0][0])
        raise AssayInputError(f"duplicate (candidate, item) ({cand.iloc[k]!r}, {item.iloc[k]!r}): each answer is "
                              "graded once")
    if rows[question_col].isna().any() or rows[reference_col].isna().any():
        raise AssayInputError(f"every row needs a question and a reference; {int(rows[question_col].isna().sum())} "
                              f"questions and {int(rows[reference_col].isna().sum())} references are empty")
    human = None
    if human_col:
        if human_col not in rows.columns:
            raise AssayInputError(f"no human label column {human_col!r}; columns: {', '.join(map(str, rows.columns))}")
        human = pd.to_numeric(rows[human_col], errors="coerce")
        bad = human.notna() & ~human.between(0.0, 1.0)
        if bad.any() or (rows[human_col].notna() & human.isna()).any():
            raise AssayInputError(f"human labels in {human_col!r} must be losses in [0, 1] or empty (unlabelled)")
    answers = rows[answer_col]
    has_answer = answers.notna() & answers.astype(str).str.strip().ne("")
    prompts = [rubric.prompt(q, r, a) for q, r, a, ok in zip(rows[question_col], rows[reference_col], answers,
                                                             has_answer) if ok]
    res = run_model(model, prompts, journal=journal, run_id=run_id, concurrency=concurrency, timeout=timeout,
                    max_retries=max_retries, progress=progress, reuse=reuse) if prompts else None
    responses = iter(res.responses if res is not None else [])
    out = []
    failed = []
    for k, ok in enumerate(has_answer):
        if not ok:
            out.append({"verdict": "no answer", "outcome": "not sent", "loss_judge": 1.0, "judge_text": None})
            continue
        resp = next(responses)
        status = of_response(resp)
        verdict = None
        if status is None:
            verdict = parse_verdict(resp.text, rubric)
            status = ANSWERED if verdict is not None else UNPARSEABLE
        if status in ENDPOINT_FAILURES:
            failed.append(str(resp.error))
            loss = float("nan")
        elif status == ANSWERED:
            loss = rubric.verdicts[verdict]
        else:
            loss = 1.0 - POLICIES[policy]  # "wrong": the graded answer counts as wrong (loss 1)
        out.append({"verdict": verdict, "outcome": status, "loss_judge": loss,
                    "judge_text": resp.text if resp.text is None else resp.text[:2000]})
    rid = res.run_id if res is not None else run_id
    if res is not None and all(r.outcome == "too_long" for r in res.responses):
        raise AssayInputError(f"every one of the {len(res.responses)} judge prompts is too long for the judge's context "
                              f"window ({res.responses[0].detail}); use a shorter rubric or a judge with a larger window")
    if failed:
        raise AssayBackendError(f"{len(failed)} judge requests failed on the endpoint's side after retries (first: "
                                f"{failed[0][:200]}); the verdicts so far are journaled: rerun with run id {rid}")
    labels = pd.DataFrame({"candidate": cand.to_numpy(), "item": item.to_numpy()})
    if human is not None:
        labels["loss_human"] = human.to_numpy(dtype=float)
    extra = pd.DataFrame(out)
    labels = pd.concat([labels, extra], axis=1)
    counts = counts_of(o for o in extra["outcome"] if o != "not sent")
    return JudgeResult(labels, counts, rid, dict(res.stats) if res is not None else {}, policy, rubric,
                       getattr(model, "name", type(model).__name__))
