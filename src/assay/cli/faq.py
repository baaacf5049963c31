"""``assay faq``: a new model's benchmark accuracy from a few actively chosen questions (FAQ)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from ..errors import AssayInputError
from ._common import app, emit as _emit, guard as _guard, out as _out


def _print_faq(result) -> None:
    p = result.params
    level = 1 - result.level["alpha"]
    est = result.estimates
    kind = str(est["interval"].iloc[0]) if "interval" in est.columns and len(est) else "fixed-budget"
    _out.print(f"FAQ: {p['n_queries']} queries of {p['n_items']} questions ({p['n_queries'] / p['n_items']:.1%}) "
               f"at most, {level:.0%} {kind} intervals for the accuracy over the whole bank, seed = {result.seed}")
    t = Table()
    cols = [c for c in ("model", "estimate", "ci_low", "ci_high", "width", "truth", "n_queries", "gain_vs_uniform")
            if c in est.columns]
    for c in cols:
        t.add_column(c, justify="left" if c == "model" else "right")
    for row in est[cols].itertuples(index=False):
        cells = []
        for c, v in zip(cols, row):
            if c == "gain_vs_uniform":
                cells.append("" if v != v else f"{v:.2f}x")
            elif isinstance(v, float):
                cells.append(f"{v:.4f}")
            else:
                cells.append(str(v))
        t.add_row(*cells)
    _out.print(t)
    f = result.info.get("factors", {})
    if f.get("pack"):
        _out.print(f"factors: FAQ pack {f['pack']} (the FAQ paper's fit, k = {f.get('k')}; prior from its "
                   "historical models, whose answers are not shipped)")
    else:
        _out.print(f"factors: k = {f.get('k')}, weight_decay = {f.get('weight_decay')}, train log-loss "
                   f"{f.get('train_logloss', float('nan')):.3f}, held-out {f.get('heldout_logloss', float('nan')):.3f}"
                   + (f" (cached fit: {f.get('cache')})" if f.get("cache") not in (None, "not used") else ""))
    live = result.info.get("live")
    if live and live.get("headline"):
        _out.print(f"live answers, {live['headline']}")
    _out.print("gain_vs_uniform: how many uniformly sampled questions each asked question was worth (estimated)")
    line = expected_line(result.info.get("expected"))
    if line:
        _out.print(line)
    for w in result.warnings:
        _out.print(f"note: {w}")


def expected_line(e: dict | None) -> str | None:
    """What the history predicts for a new model at this budget, in one line (None when it cannot say)."""
    if not e:
        return None
    return (f"expected before any query (FAQ run on {e['held_out_models']} held-out models of the history's own "
            f"families at {e['budget']} queries): coverage {e['expected_coverage']:.3f}, saving "
            f"{e['expected_saving']:.2f}x (each question worth that many uniformly sampled ones), "
            f"{e['fallback_rate']:.0%} fell back to uniform sampling")


def _say_expected(e: dict | None) -> None:
    line = expected_line(e)
    if line:
        sys.stderr.write(line + "\n")


def _pack_name(factors: Path | None) -> str | None:
    """--factors names a shipped FAQ pack (when no file of that name exists) -> its name; a file -> None."""
    from ..datasets import FAQ_PACKS

    if factors is None or factors.exists():
        return None
    if str(factors) in FAQ_PACKS:
        return str(factors)
    raise AssayInputError(f"--factors {str(factors)!r}: no such file, nor a FAQ pack; the packs are "
                          f"{', '.join(FAQ_PACKS)} (assay datasets lists them), a file is a .npz from --save-factors")


def _pack_answers(path: Path, pack: str):
    """--new with a FAQ pack: the model's leaderboard details (a folder, or files named after a task of the pack's
    bank) in the pack's question order; any other file is an answers table with the pack's item ids."""
    from ..data.faq import read_answers
    from ..data.leaderboard import details_task
    from ..datasets import faq_pack_index, read_faq_pack_answers

    if path.is_dir() or details_task(path, set(faq_pack_index(pack)["task"])) is not None:
        return read_faq_pack_answers(path, pack)
    return read_answers(path, "new")


def _parse_budget(text: str):
    """--budget: '0.05' or '1.0' is a fraction of the bank, '67' a number of queries."""
    import re

    t = text.strip()
    if re.fullmatch(r"[0-9]+", t):
        return int(t)
    try:
        return float(t)
    except ValueError:
        raise AssayInputError(f"--budget {text!r} is neither a fraction of the bank (0.05, 1.0) nor a number of "
                              "queries (67)") from None


@app.command()
@_guard
def faq(
    history: Optional[Path] = typer.Option(None, "--history", help="Historical 0/1 answers: wide (model id column + "
                                           "one column per item; empty = missing) or long (model, item, score). Not "
                                           "needed with --factors."),
    new: Optional[Path] = typer.Option(None, "--new", help="Offline: the new model(s)' answers on every item (same "
                                       "formats; with a FAQ pack also the model's leaderboard details: a folder of "
                                       "lm-eval samples_leaderboard_<task>_<date>.jsonl or Parquet files)."),
    items: Optional[Path] = typer.Option(None, "--items", help="Live: item bank (CSV/JSONL/...) with id, prompt and reference columns."),
    budget: str = typer.Option("0.05", "--budget", help="A fraction of the bank (0.05; 1.0 = every question) or a number of queries (67). N or more = every question once, exact."),
    until_width: Optional[float] = typer.Option(None, "--until-width", help="Stop as soon as the (anytime-valid) interval is at most this wide; --budget is then the most to spend."),
    min_queries: int = typer.Option(20, "--min-queries", help="With --until-width: never stop before this many queries."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Seed of FAQ's draws (recorded; a resumed live run reuses its own)."),
    alpha: float = typer.Option(0.05, "--delta", "--alpha", help="Error level: 1 - the intervals' confidence (the paper's alpha; --alpha is an alias)."),
    uniform_mix: Optional[float] = typer.Option(None, "--uniform-mix", help="Uniform mixing tau of the sampling policy, in (0, 1]: every question keeps probability >= tau/N (default 0.5; 1 = uniform sampling)."),
    beta0: Optional[float] = typer.Option(None, "--beta0", help="Tempering exponent of the oracle scores (default 1)."),
    rho: Optional[float] = typer.Option(None, "--rho", help="Active-learning share of the budget (default 0 = off)."),
    gamma: Optional[float] = typer.Option(None, "--gamma", help="Tempering warm-up share of the budget (default 0)."),
    design: Optional[str] = typer.Option(None, "--design", help="wor (default: without replacement), wr (the paper's Algorithm 1) or naive-wor (the paper's invalid ablation)."),
    variance: Optional[str] = typer.Option(None, "--variance", help="conservative (default), increments, model or paper (eq. 8, --design wr)."),
    quantile: Optional[str] = typer.Option(None, "--quantile", help="t (default) or normal."),
    fallback: Optional[float] = typer.Option(None, "--fallback", help="Level of the test that sends a model whose answers do not follow the history to uniform sampling (default 0.05; 0 = never)."),
    calibrate: bool = typer.Option(True, "--calibrate/--no-calibrate", help="Learn the floor of the interval's standard error, the expected coverage and the expected saving on held-out families of the history (cached with the fit), or use Student t."),
    factors: Optional[Path] = typer.Option(None, "--factors", help="Fitted factors, no fitting: a .npz from "
                                             "--save-factors, or a FAQ pack by name (faq-mmlu-pro, faq-leaderboard-v2: "
                                             "the FAQ paper's Open LLM Leaderboard v2 banks, listed by assay datasets)."),
    save_factors: Optional[Path] = typer.Option(None, "--save-factors", help="Save the fitted factors to this .npz."),
    k: Optional[int] = typer.Option(None, "--k", help="Fixed latent dimension (skips cross-validation; needs --weight-decay)."),
    weight_decay: Optional[float] = typer.Option(None, "--weight-decay", help="Fixed L2 prior precision (with --k)."),
    cache: bool = typer.Option(True, "--cache/--no-cache", help="Reuse the default factor fit cached under a hash of the history ($ASSAY_CACHE_DIR or ~/.cache/assay)."),
    endpoint: Optional[str] = typer.Option(None, "--endpoint", help="Live: OpenAI-compatible base URL."),
    model: Optional[str] = typer.Option(None, "--model", help="Live: model name as the endpoint knows it."),
    api_key_env: str = typer.Option("OPENAI_API_KEY", "--api-key-env", help="Environment variable holding the API key."),
    scorer: str = typer.Option("exact", "--scorer", help="Live: exact, numeric, math, choice, label or contains, or a column of the item bank naming each item's scorer (the shipped basics bank: scorer)."),
    policy: str = typer.Option("wrong", "--policy", help="Live: unparseable answers count as wrong, or missing (stop)."),
    journal: Optional[Path] = typer.Option(None, "--journal", help="Live: SQLite journal (default $ASSAY_JOURNAL or ~/.cache/assay/journal.sqlite)."),
    run_id: Optional[str] = typer.Option(None, "--run-id", help="Live: resume this run (its seed, budget and factors must match; the seed is reused when omitted)."),
    timeout: float = typer.Option(60.0, "--timeout", help="Live: per-request timeout in seconds."),
    max_retries: int = typer.Option(6, "--max-retries", help="Live: retries per request."),
    temperature: float = typer.Option(0.0, "--temperature"),
    max_tokens: Optional[int] = typer.Option(None, "--max-tokens"),
    system_prompt: Optional[str] = typer.Option(None, "--system", help="Live: system message."),
    id_col: str = typer.Option("id", "--id-col"),
    prompt_col: str = typer.Option("prompt", "--prompt-col"),
    reference_col: str = typer.Option("reference", "--reference-col"),
    queries_out: Optional[Path] = typer.Option(None, "--queries", help="Write the asked questions (model, round, item, answer, q, phi)."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON on stdout."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Also write the JSON result to this file."),
    report: Optional[Path] = typer.Option(None, "--report", help="Also write a self-contained HTML report."),
) -> None:
    """A new model's accuracy on the whole benchmark from a few adaptively chosen questions (FAQ)."""
    from .. import faq as faq_mod
    from ..data.faq import read_answers
    from ..faq.io import load_factors, save_factors as write_factors
    from ..progress import progress_reporter

    if (new is None) == (items is None):
        raise AssayInputError("give exactly one of --new (offline: the new model's answers) or --items (live: an item "
                              "bank queried through --endpoint/--model)")
    if items is not None and (endpoint is None or model is None):
        raise AssayInputError("live mode (--items) needs --endpoint and --model")
    if (k is None) != (weight_decay is None):
        raise AssayInputError("--k and --weight-decay go together (a fixed factor model); omit both to cross-validate")
    if uniform_mix is not None and not 0 < uniform_mix <= 1:
        raise AssayInputError(f"--uniform-mix must be in (0, 1] (every question keeps probability >= it / N); got "
                              f"{uniform_mix!r}")
    bud = _parse_budget(budget)
    if history is None and factors is None:
        raise AssayInputError("give --history (earlier models' answers, to fit the factors on) or --factors (a .npz "
                              "from --save-factors, or a FAQ pack by name: faq-mmlu-pro, faq-leaderboard-v2)")
    hist = read_answers(history, "history") if history is not None else None
    fm = None
    pack = _pack_name(factors)
    if pack is not None:
        from ..datasets import faq_pack_factors

        fm = faq_pack_factors(pack)
    elif factors is not None:
        fm = load_factors(factors)
    elif k is not None:
        fm = faq_mod.FactorModel(k=k, weight_decay=weight_decay, seed=0)
    prm = dict(tau=uniform_mix, beta0=beta0, rho=rho, gamma=gamma, variance=variance, quantile=quantile, design=design,
               fallback=fallback)
    answerer = None
    if new is not None:
        target = _pack_answers(new, pack) if pack is not None else read_answers(new, "new")
    else:
        from ..faq.live import LiveAnswerer
        from ..models import OpenAIChatModel
        from ..models.journal import default_path

        llm = OpenAIChatModel(model, base_url=endpoint, api_key_env=api_key_env, temperature=temperature,
                              max_tokens=max_tokens, timeout=timeout, system_prompt=system_prompt)
        from ..models.openai_model import check_model

        check_model(llm)
        answerer = LiveAnswerer(llm, items, scorer=scorer, policy=policy, journal=journal or default_path(),
                                run_id=run_id, timeout=timeout, max_retries=max_retries, id_col=id_col,
                                prompt_col=prompt_col, reference_col=reference_col, name=model)
        target = answerer
    with progress_reporter("factor fit (per fold and candidate)") as fit_update, progress_reporter("faq rounds") as update:
        try:
            # without a history the factors are the history (FactorModel): nothing to fit or calibrate on
            result = faq_mod.evaluate(hist if hist is not None else fm, target, budget=bud, seed=seed, alpha=alpha,
                                      factors=fm, cache=cache, until_width=until_width, min_queries=min_queries,
                                      progress=update,
                                      fit_progress=fit_update, items=answerer.items if answerer else None,
                                      calibrate=calibrate, on_expected=_say_expected, **prm)
        finally:
            if answerer is not None and answerer.run_id:
                sys.stderr.write(f"run id: {answerer.run_id} (resume with --run-id {answerer.run_id}); "
                                 f"{answerer.n_requests} requests, {answerer.n_cached} from the journal\n")
    if pack is not None:
        result.info["factors"]["pack"] = pack
    if answerer is not None:
        from ..models.outcomes import headline, shaky

        counts = answerer.counts
        said = headline(counts, policy) + f"; {answerer.cut_off} cut off at the token limit"
        result.info["live"] = {"run_id": answerer.run_id, "requests": answerer.n_requests, "cached": answerer.n_cached,
                               "endpoint": answerer.model.base_url, "model": model, "scorer": scorer, "policy": policy,
                               "outcomes": counts, "cut_off": answerer.cut_off, "headline": said}
        why = shaky({**counts, "cut_off": answerer.cut_off})
        if why:
            result.info["warnings"] = [*result.warnings, f"{why}: the estimate counts them as the policy says "
                                       f"({policy!r}); it says how the model answers under these settings (raise "
                                       "--max-tokens, or check the scorer)"]
    if save_factors is not None:
        write_factors(result.factors_, save_factors)
        sys.stderr.write(f"factors saved to {save_factors}\n")
    if queries_out is not None:
        queries_out.parent.mkdir(parents=True, exist_ok=True)
        q = result.tables["queries"]
        if queries_out.suffix.lower() in (".parquet", ".pq"):
            q.to_parquet(queries_out, index=False)
        else:
            q.to_csv(queries_out, index=False)
    _emit(result, as_json, out, report, lambda: _print_faq(result))
