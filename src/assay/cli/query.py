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
    import pandas as pd

    from .. import data as d
    from ..errors import AssayBackendError
    from ..models import OpenAIChatModel, run as run_model
    from ..models.openai_model import check_model
    from ..models.journal import default_path
    from ..models.outcomes import headline
    from ..models.scoring import count_outcomes, make_scorer, score
    from ..progress import progress_reporter

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
    if reference_col and reference_col not in table.columns:
        raise AssayInputError(f"no reference column {reference_col!r}; columns: {', '.join(map(str, table.columns))}")
    if scorer in table.columns:  # one scorer per row, named in a column
        scorers = {name: make_scorer(str(name)) for name in table[scorer].dropna().unique()}
        if table[scorer].isna().any():
            raise AssayInputError(f"the scorer column {scorer!r} is empty at {d.describe_rows(table.index[table[scorer].isna()])}")
        row_scorers = [scorers[name] for name in table[scorer]]
    else:
        row_scorers = [make_scorer(scorer)] * len(table)
    scorer_fn = row_scorers if reference_col else None
    if scorer_fn is not None:  # a reference the scorer cannot use is said before any request is paid for
        from ..models.scoring import check_references

        check_references(row_scorers, table[reference_col].tolist(), ids, where=str(prompts))
    llm = OpenAIChatModel(model, base_url=endpoint, api_key_env=api_key_env, temperature=temperature,
                          max_tokens=max_tokens, seed=seed, timeout=timeout, system_prompt=system_prompt,
                          stream=stream, context_window=context_window)
    if not no_check:
        check_model(llm)  # an endpoint that is not OpenAI-compatible, or a model it does not serve: before any request
    with progress_reporter(f"query {model}") as update:
        def progress(st: dict) -> None:
            tokens = (st.get("prompt_tokens") or 0) + (st.get("completion_tokens") or 0)
            update(st["done"], st["total"], f"{st['in_flight']} in flight, {st['retries']} retries, "
                                            f"{st['cached']} from journal, {tokens:,} tokens")

        result = run_model(llm, table[prompt_col].astype(str).tolist(), journal=journal or default_path(), run_id=run_id,
                           concurrency=concurrency, rpm=rpm, max_retries=max_retries, timeout=timeout,
                           progress=progress)
    sys.stderr.write(f"run id: {result.run_id} (resume with --run-id {result.run_id})\n")
    if result.responses and all(r.outcome == "too_long" for r in result.responses):
        raise AssayInputError(f"every one of the {len(result.responses)} prompts is too long for the model's context "
                              f"window ({result.responses[0].detail}); shorten the prompts, lower --max-tokens, or "
                              "serve the model with a larger window")
    rows = pd.DataFrame([r.to_dict() for r in result.responses])
    rows.insert(0, "id", ids)
    rows.insert(1, "prompt", table[prompt_col].astype(str).tolist())
    summary: dict[str, Any] = {"run_id": result.run_id, "model": model, "endpoint": llm.base_url, "stats": result.stats}
    if scorer_fn is not None:
        outs = [score(r, ref, fn, policy=policy, prompt=p)
                for r, ref, fn, p in zip(result.responses, table[reference_col].tolist(), scorer_fn,
                                         table[prompt_col].astype(str).tolist())]
        rows["reference"] = table[reference_col].tolist()
        rows["extracted"] = [o.extracted for o in outs]
        rows["status"] = [o.status for o in outs]
        rows["score"] = [o.final_score for o in outs]
        scored = [o.final_score for o in outs if o.final_score is not None]
        counts = count_outcomes(outs)
        summary["scoring"] = {"scorer": scorer, "policy": policy, "counts": counts,
                              "accuracy": (sum(scored) / len(scored)) if scored else None, "scored": len(scored),
                              "headline": headline(counts, policy)}
    if output is not None:
        d.write_table(rows, output)
    if as_json:
        from ..results import to_jsonable

        from ..models.secrets import mask_secrets

        sys.stdout.write(mask_secrets(json.dumps(to_jsonable({**summary, "rows": rows}), indent=2)) + "\n")
    else:
        st = result.stats
        _out.print(f"{st['done']} of {st['total']} answered ({st['cached']} from the journal, {st['retries']} retries, "
                   f"{st['errors']} errors), run id {result.run_id}", highlight=False)
        if "scoring" in summary:
            sc = summary["scoring"]
            acc = "n/a" if sc["accuracy"] is None else f"{sc['accuracy']:.4f}"
            _out.print(f"accuracy {acc} on {sc['scored']} scored; {sc['headline']}", highlight=False)
        if output is not None:
            _out.print(f"rows written to {output}")
    if result.stats.get("errors"):
        raise AssayBackendError(f"{result.stats['errors']} requests failed after retries; rerun with --run-id "
                                f"{result.run_id} to retry only those")


