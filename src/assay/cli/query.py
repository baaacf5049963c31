"""``assay query``: ask an OpenAI-compatible endpoint every prompt of a file, journaled and resumable."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Optional

import typer

from ..errors import AssayInputError
from ._common import app, guard as _guard, out as _out


@app.command()
@_guard
def query(
    prompts: Path = typer.Argument(..., help="Prompts: CSV/TSV/Parquet/JSONL/JSON with a prompt column, or a .txt file (one per line)."),
    model: str = typer.Option(..., "--model", help="Model name as the endpoint knows it."),
    endpoint: Optional[str] = typer.Option(None, "--endpoint", help="OpenAI-compatible base URL, e.g. http://localhost:8000/v1 (vLLM), http://localhost:11434/v1 (Ollama); default $OPENAI_BASE_URL or OpenAI."),
    api_key_env: str = typer.Option("OPENAI_API_KEY", "--api-key-env", help="Environment variable holding the API key (never logged or journaled)."),
    concurrency: int = typer.Option(8, "--concurrency", help="Maximum requests in flight (backs off on 429/503, recovers)."),
    rpm: Optional[float] = typer.Option(None, "--rpm", help="Requests-per-minute limit."),
    timeout: float = typer.Option(60.0, "--timeout", help="Per-request timeout in seconds."),
    max_retries: int = typer.Option(6, "--max-retries", help="Retries per request (exponential backoff with jitter, Retry-After honoured)."),
    run_id: Optional[str] = typer.Option(None, "--run-id", help="Resume this run: answers already in the journal are not requested again."),
    journal: Optional[Path] = typer.Option(None, "--journal", help="SQLite journal (default $ASSAY_JOURNAL or ~/.cache/assay/journal.sqlite)."),
    temperature: float = typer.Option(0.0, "--temperature"),
    max_tokens: Optional[int] = typer.Option(None, "--max-tokens"),
    seed: Optional[int] = typer.Option(None, "--seed", help="Sampling seed sent to the endpoint."),
    system_prompt: Optional[str] = typer.Option(None, "--system", help="System message."),
    prompt_col: str = typer.Option("prompt", "--prompt-col"),
    id_col: str = typer.Option("id", "--id-col", help="Item id column (row numbers when absent)."),
    reference_col: Optional[str] = typer.Option(None, "--reference-col", help="Reference answers: score the responses."),
    scorer: str = typer.Option("exact", "--scorer", help="exact, numeric, math (LaTeX and symbolic answers, by value with math-verify), choice, label (True/False/N/A) or contains; or a column naming each row's scorer (e.g. the shipped basics bank's 'scorer')."),
    policy: str = typer.Option("wrong", "--policy", help="What an unparseable, too long or refused answer counts as: wrong (default, as lm-eval and inspect), missing or correct. Timeouts and transport errors are never scored."),
    context_window: Optional[int] = typer.Option(None, "--context-window", help="The model's context window in tokens: prompts that cannot fit are answered too_long without being sent (counted by the server's tokenizer when it has one)."),
    stream: bool = typer.Option(False, "--stream", help="Stream answers to record the time to the first token (ttft_s) as well as the total time."),
    output: Optional[Path] = typer.Option(None, "-o", "--out", "--output", help="Write one row per prompt (CSV/Parquet/JSONL by extension)."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON summary (and rows) on stdout."),
    no_check: bool = typer.Option(False, "--no-check", help="Skip the check that the endpoint lists the model (GET /models) before sending."),
) -> None:
    """Send prompts to an OpenAI-compatible endpoint through the crash-safe journal; optionally score them."""
    from ..errors import AssayBackendError
    from ..models import OpenAIChatModel
    from ..models.openai_model import check_model

    table, ids = _read_prompts(prompts, prompt_col, id_col)
    row_scorers = _scorers(table, scorer, reference_col, ids, prompts) if reference_col else None
    llm = OpenAIChatModel(model, base_url=endpoint, api_key_env=api_key_env, temperature=temperature,
                          max_tokens=max_tokens, seed=seed, timeout=timeout, system_prompt=system_prompt,
                          stream=stream, context_window=context_window)
    if not no_check:
        check_model(llm)  # an endpoint that is not OpenAI-compatible, or a model it does not serve: before any request
    result = _ask(llm, model, table[prompt_col].astype(str).tolist(), journal, run_id, concurrency, rpm, max_retries,
                  timeout)
    rows, summary = _rows(result, table, ids, prompt_col, reference_col, row_scorers, scorer, policy, model, llm)
    if row_scorers is not None:  # the run says how it was scored: read back with the same scorer (assay audit, compare)
        _record_scoring(journal, result.run_id, scorer, policy, prompts, table, ids, prompt_col, reference_col, id_col)
    if output is not None:
        from .. import data as d

        d.write_table(rows, output)
    _say(summary, rows, as_json, output, result)
    if result.stats.get("errors"):
        raise AssayBackendError(f"{result.stats['errors']} requests failed after retries; rerun with --run-id "
                                f"{result.run_id} to retry only those")


def _read_prompts(prompts: Path, prompt_col: str, id_col: str):
    """The prompts file as a table (a .txt file: one prompt a line) and each row's id (row numbers without one)."""
    import pandas as pd

    from .. import data as d

    if prompts.suffix.lower() == ".txt":
        if not prompts.exists():
            raise AssayInputError(f"no such file: {prompts}")
        lines = [ln for ln in prompts.read_text().splitlines() if ln.strip()]
        table = pd.DataFrame({prompt_col: lines})
    else:
        table = d.read_table(prompts, text_columns=(id_col,))
    if prompt_col not in table.columns:
        raise AssayInputError(f"no prompt column {prompt_col!r}; columns: {', '.join(map(str, table.columns))} (use --prompt-col)")
    if table[prompt_col].isna().any():
        raise AssayInputError(f"empty prompts at {d.describe_rows(table.index[table[prompt_col].isna()])}")
    ids = table[id_col].astype(str).tolist() if id_col in table.columns else [str(i) for i in range(len(table))]
    return table, ids


def _scorers(table, scorer: str, reference_col: str, ids: list[str], where: Path) -> list:
    """Each row's scorer (``--scorer`` names one for all, or a column naming each row's), its references checked
    before any request is paid for."""
    from .. import data as d
    from ..models.scoring import check_references, make_scorer

    if reference_col not in table.columns:
        raise AssayInputError(f"no reference column {reference_col!r}; columns: {', '.join(map(str, table.columns))}")
    if scorer in table.columns:  # one scorer per row, named in a column
        if table[scorer].isna().any():
            raise AssayInputError(f"the scorer column {scorer!r} is empty at {d.describe_rows(table.index[table[scorer].isna()])}")
        made = {name: make_scorer(str(name)) for name in table[scorer].unique()}
        row_scorers = [made[name] for name in table[scorer]]
    else:
        row_scorers = [make_scorer(scorer)] * len(table)
    check_references(row_scorers, table[reference_col].tolist(), ids, where=str(where))
    return row_scorers


def _ask(llm, model: str, prompts: list[str], journal, run_id, concurrency, rpm, max_retries, timeout):
    """Every prompt through the journal, with progress; refused when every one is too long for the model."""
    from ..models import run as run_model
    from ..models.journal import default_path
    from ..progress import progress_reporter

    with progress_reporter(f"query {model}") as update:
        def progress(st: dict) -> None:
            tokens = (st.get("prompt_tokens") or 0) + (st.get("completion_tokens") or 0)
            update(st["done"], st["total"], f"{st['in_flight']} in flight, {st['retries']} retries, "
                                            f"{st['cached']} from journal, {tokens:,} tokens")

        result = run_model(llm, prompts, journal=journal or default_path(), run_id=run_id, concurrency=concurrency,
                           rpm=rpm, max_retries=max_retries, timeout=timeout, progress=progress)
    sys.stderr.write(f"run id: {result.run_id} (resume with --run-id {result.run_id})\n")
    if result.responses and all(r.outcome == "too_long" for r in result.responses):
        raise AssayInputError(f"every one of the {len(result.responses)} prompts is too long for the model's context "
                              f"window ({result.responses[0].detail}); shorten the prompts, lower --max-tokens, or "
                              "serve the model with a larger window")
    return result


def _rows(result, table, ids, prompt_col, reference_col, row_scorers, scorer, policy, model, llm):
    """One row per prompt (the answer, and when scored its extracted answer, status and score) and the summary."""
    import pandas as pd

    from ..models.outcomes import headline
    from ..models.scoring import count_outcomes, score_rows

    rows = pd.DataFrame([r.to_dict() for r in result.responses])
    rows.insert(0, "id", ids)
    rows.insert(1, "prompt", table[prompt_col].astype(str).tolist())
    summary: dict[str, Any] = {"run_id": result.run_id, "model": model, "endpoint": llm.base_url, "stats": result.stats}
    if row_scorers is None:
        return rows, summary
    rs = result.responses
    outs = score_rows([r.text for r in rs], table[reference_col].tolist(), row_scorers, policy,
                      outcomes=[r.outcome for r in rs], prompts=table[prompt_col].astype(str).tolist(),
                      finish_reasons=[r.finish_reason for r in rs], errors=[r.error for r in rs])
    rows["reference"] = table[reference_col].tolist()
    rows["extracted"] = [o.extracted for o in outs]
    rows["status"] = [o.status for o in outs]
    rows["score"] = [o.final_score for o in outs]
    scored = [o.final_score for o in outs if o.final_score is not None]
    counts = count_outcomes(outs)
    summary["scoring"] = {"scorer": scorer, "policy": policy, "counts": counts,
                          "accuracy": (sum(scored) / len(scored)) if scored else None, "scored": len(scored),
                          "headline": headline(counts, policy)}
    return rows, summary


def _record_scoring(journal, run_id: str, scorer: str, policy: str, prompts: Path, table, ids, prompt_col,
                    reference_col, id_col) -> None:
    """The run's scorer, policy and bank (the file and its fingerprint) in its journal meta."""
    import pandas as pd

    from ..data.bank import as_reference
    from ..data.sources import bank_fingerprint
    from ..models.journal import Journal, default_path

    bank = pd.DataFrame({"prompt": table[prompt_col].astype(str).to_numpy(),
                         "reference": [as_reference(r) for r in table[reference_col]]}, index=ids)
    with Journal(journal or default_path()) as j:
        status = j.run(run_id)["status"]
        j.start_run(run_id, meta={"scorer": scorer, "policy": policy, "bank": bank_fingerprint(bank),
                                  "bank_file": str(Path(prompts).resolve()),
                                  "bank_columns": {"id": id_col if id_col in table.columns else None,
                                                   "prompt": prompt_col, "reference": reference_col}})
        j.finish_run(run_id, status=status)


def _say(summary: dict, rows, as_json: bool, output, result) -> None:
    if as_json:
        from ..models.secrets import mask_secrets
        from ..results import to_jsonable

        sys.stdout.write(mask_secrets(json.dumps(to_jsonable({**summary, "rows": rows}), indent=2)) + "\n")
        return
    st = result.stats
    _out.print(f"{st['done']} of {st['total']} answered ({st['cached']} from the journal, {st['retries']} retries, "
               f"{st['errors']} errors), run id {result.run_id}", highlight=False)
    if "scoring" in summary:
        sc = summary["scoring"]
        acc = "n/a" if sc["accuracy"] is None else f"{sc['accuracy']:.4f}"
        _out.print(f"accuracy {acc} on {sc['scored']} scored; {sc['headline']}", highlight=False)
    if output is not None:
        _out.print(f"rows written to {output}")
