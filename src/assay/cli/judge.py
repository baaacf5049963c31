"""``assay judge``: grade (question, reference, answer) rows with an LLM judge into R-AutoEval+'s judge labels."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import typer

from ..errors import AssayInputError
from ._common import app, guard as _guard, out as _out


@app.command()
@_guard
def judge(
    answers: Path = typer.Argument(..., help="Rows to grade (CSV/Parquet/JSONL): question, reference, answer; e.g. the -o file of `assay query --reference-col`."),
    model: str = typer.Option(..., "--model", help="The judge model, as the endpoint knows it (use a different model from the one graded)."),
    endpoint: Optional[str] = typer.Option(None, "--endpoint", help="OpenAI-compatible base URL of the judge."),
    completions: bool = typer.Option(False, "--completions", help="Use /v1/completions (a pretrained model; pair with --rubric fewshot)."),
    rubric: str = typer.Option("default", "--rubric", help="default, fewshot, or a rubric file (YAML/JSON with template and verdicts, or a text template with CORRECT/INCORRECT)."),
    policy: str = typer.Option("wrong", "--policy", help="What an unparseable, too long or refused verdict counts as: wrong (loss 1, default) or correct (loss 0)."),
    question_col: str = typer.Option("prompt", "--question-col"),
    reference_col: str = typer.Option("reference", "--reference-col"),
    answer_col: str = typer.Option("text", "--answer-col"),
    candidate_col: str = typer.Option("candidate", "--candidate-col", help="Which model or configuration answered (one candidate when absent)."),
    item_col: str = typer.Option("id", "--item-col", help="Item id column (row numbers when absent)."),
    human_col: Optional[str] = typer.Option(None, "--human-col", help="Human loss in [0, 1], empty where unlabelled; copied to loss_human."),
    api_key_env: str = typer.Option("OPENAI_API_KEY", "--api-key-env", help="Environment variable holding the judge's API key."),
    concurrency: int = typer.Option(8, "--concurrency"),
    timeout: float = typer.Option(60.0, "--timeout", help="Per-request timeout in seconds."),
    max_retries: int = typer.Option(6, "--max-retries"),
    temperature: float = typer.Option(0.0, "--temperature"),
    max_tokens: int = typer.Option(16, "--max-tokens", help="The verdict is one word; a few tokens suffice."),
    run_id: Optional[str] = typer.Option(None, "--run-id", help="Resume this run: verdicts already in the journal are not asked again."),
    journal: Optional[Path] = typer.Option(None, "--journal", help="SQLite journal (default $ASSAY_JOURNAL or ~/.cache/assay/journal.sqlite)."),
    output: Path = typer.Option(..., "-o", "--out", help="Judge labels (CSV/Parquet/JSONL): candidate, item, loss_judge[, loss_human], verdict, outcome; `assay autoeval` reads it."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON summary on stdout."),
) -> None:
    """Ask a judge model to grade answers against references (journaled, resumable) and write R-AutoEval+ labels."""
    from .. import data as d
    from ..models import OpenAIChatModel, OpenAICompletionModel
    from ..models.journal import default_path
    from ..models.secrets import mask_secrets
    from ..models.judge import Rubric, judge as run_judge
    from ..models.openai_model import check_model
    from ..progress import progress_reporter

    table = d.read_table(answers, text_columns=tuple(c for c in (item_col, candidate_col) if c))
    rb = Rubric.load(rubric)
    cls = OpenAICompletionModel if completions else OpenAIChatModel
    llm = cls(model, base_url=endpoint, api_key_env=api_key_env, temperature=temperature, max_tokens=max_tokens,
              timeout=timeout, stop=["\n"] if completions else None)
    if not len(table):
        raise AssayInputError(f"{answers} has no rows to grade")
    check_model(llm)
    with progress_reporter(f"judge {model}") as update:
        def progress(st: dict) -> None:
            update(st["done"], st["total"], f"{st['in_flight']} in flight, {st['cached']} from journal")

        res = run_judge(table, llm, rubric=rb, policy=policy, question_col=question_col, reference_col=reference_col,
                        answer_col=answer_col, candidate_col=candidate_col, item_col=item_col, human_col=human_col,
                        journal=journal or default_path(), run_id=run_id, concurrency=concurrency, timeout=timeout,
                        max_retries=max_retries, progress=progress)
    if res.run_id:
        sys.stderr.write(f"run id: {res.run_id} (resume with --run-id {res.run_id})\n")
    d.write_table(res.labels, output)
    summary = res.to_dict()
    if as_json:
        sys.stdout.write(mask_secrets(json.dumps(summary, indent=2, default=str)) + "\n")
        return
    lab = res.labels
    graded = lab[lab["outcome"] == "answered"]
    _out.print(f"judge {model} (rubric {rb.name}): {len(graded)} of {len(lab)} answers graded, "
               f"{int((lab['outcome'] == 'not sent').sum())} had no answer to grade (loss 1); {res.headline}",
               highlight=False)
    for cand, g in lab.groupby("candidate", sort=False):
        _out.print(f"  {cand}: judge says {float(1 - g['loss_judge'].mean()):.3f} correct on {len(g)} rows", highlight=False)
    agr = res.agreement()
    if agr and agr.get("n"):
        _out.print(f"agreement with the human labels: {agr['agreement']:.3f} on {agr['n']} rows", highlight=False)
    _out.print(f"labels written to {output} (candidate, item, loss_judge{', loss_human' if human_col else ''}); "
               f"next: assay autoeval {output} --risk-target A", highlight=False)
