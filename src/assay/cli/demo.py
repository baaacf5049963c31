"""``assay demo``: every method on data shipped inside the package."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from ._common import app, guard as _guard, out as _out
from .siren import _print_siren
from .autoeval import _print_autoeval
from .psdme import _print_psdme
from .faq import _print_faq
from .scope import _print_scope
from .compare import _print_compare


@app.command()
@_guard
def demo(
    out: Path = typer.Option(Path("demo-out"), "-o", "--out", help="Folder for results.json and report.html."),
    seed: int = typer.Option(0, "--seed", help="Random seed."),
    as_json: bool = typer.Option(False, "--json", help="Print results.json on stdout."),
) -> None:
    """Run every method on data shipped inside the package; write DIR/results.json and DIR/report.html."""
    import time


    from .. import autoeval as ae, compare as cmp, faq as faq_mod, psdme as ps, siren as siren_mod
    from ..datasets import load_llmperf, load_siren_law, simulated_faq, synthetic_autoeval
    from ..benchmarks.worlds import get_world
    from ..quickscope.simulate import simulate as qs_simulate
    from ..report import render_html

    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    steps = 6

    def step(k: int, what: str) -> None:
        sys.stderr.write(f"demo {k}/{steps}: {what} ({time.perf_counter() - t0:.0f} s)\n")
        sys.stderr.flush()

    step(1, "SIREN on MMLU-Pro Law (shipped, MIT)")
    sres = siren_mod.evaluate(load_siren_law(), seed=seed, contrasts=["tuned-vs-default", "pairwise"], temperature=0.1)
    step(2, "R-AutoEval+ on a simulation (5 quantized models, judge 90% accurate)")
    ares = ae.certify(synthetic_autoeval(seed), risk_target=0.1, delta=0.1, select="fst", order_by="memory_gb",
                      cost_col="memory_gb", seed=seed, interval=True)
    ares.info["data"] = "simulation (synthetic losses; no licensed real data ships for R-AutoEval+)"
    step(3, "PS-DME on LLMPerf latencies (shipped, Apache-2.0)")
    pres = ps.bands(load_llmperf(), select="top:5", delta=0.1, method="ps-dme", band="berk-jones",
                    gammas=(0.05, 0.1, 0.2), columns={"kpi": "ttft_s"}, failures="worst", seed=seed)
    step(4, "FAQ: simulated answers from the paper's MMLU-Pro math factors (shipped, Apache-2.0), factors refitted by assay")
    hist, new, truth = simulated_faq(seed, n_history=300, n_new=5)
    fres = faq_mod.evaluate(hist, new, budget=0.05, seed=seed,
                            factors=faq_mod.FactorModel(k=8, weight_decay=3.0, seed=seed))
    fres.estimates["truth"] = truth.to_numpy()
    fres.info["data"] = ("simulation: 0/1 answers drawn from sigmoid(U V^T) with the FAQ paper's fitted MMLU-Pro math "
                         "factors; 300 historical and 5 new simulated models")
    step(5, "QuickScope on a simulated model over the DyVal space (known error rates)")
    qres = qs_simulate(get_world("dyval-ceiling"), budget=3000, batch=20, seed=seed, certify=0.9)
    qres.info["data"] = "simulation: a model whose error rate on each DyVal template is a known function (no LLM)"
    step(6, "compare: 3 models, each with its default prompt and a DSPy-tuned one, on MMLU-Pro Law (shipped, MIT)")
    cres = cmp.evaluate(_law_configurations(load_siren_law()), seed=seed, margin=0.02)
    cres.info["data"] = ("the shipped SIREN release (MMLU-Pro Law, 1,001 questions): each model's default prompt and "
                         "its first DSPy-tuned prompt at the largest budget, scored on the same questions")
    allres = [sres, ares, pres, fres, qres, cres]
    results = {"siren": sres.to_dict(), "autoeval": ares.to_dict(), "psdme": pres.to_dict(), "faq": fres.to_dict(),
               "quickscope": qres.to_dict(), "compare": cres.to_dict()}
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    (out / "report.html").write_text(render_html(allres, title="assay demo"))
    sys.stderr.write(f"demo done in {time.perf_counter() - t0:.0f} s\n")
    if as_json:
        sys.stdout.write(json.dumps(results, indent=2) + "\n")
        return
    _out.print("SIREN on MMLU-Pro Law (3 models, DSPy tuner, 4 budgets + default; shipped data)", style="bold")
    _print_siren(sres)
    _out.print("\nR-AutoEval+ model selection (SIMULATION: 5 quantized models, judge 90% accurate)", style="bold")
    _print_autoeval(ares)
    _out.print("\nPS-DME: guaranteed time-to-first-token of the 5 fastest LLM APIs (LLMPerf; shipped data)", style="bold")
    _print_psdme(pres)
    _out.print("\nFAQ: accuracy over 1,351 MMLU-Pro math questions from 5% of them (SIMULATED answers from the "
               "paper's factors)", style="bold")
    _print_faq(fres)
    _out.print("\nQuickScope: certified-hard DyVal templates of a SIMULATED model (3,000 calls)", style="bold")
    _print_scope(qres, rows=10)
    _out.print("\ncompare: 3 models x (default prompt, a DSPy-tuned prompt) on 1,001 MMLU-Pro Law questions (shipped "
               "data)", style="bold")
    _print_compare(cres, [])
    _out.print(f"\nwrote {out / 'results.json'}\nreport: {(out / 'report.html').resolve()}")


def _law_configurations(law):
    """Six configurations of the shipped law table: each model's default prompt (budget 0) and its first tuned prompt
    at the largest budget, as a long table model / item / score."""
    import pandas as pd

    top = law["budget"].max()
    default = law[law["budget"] == 0].assign(model=lambda t: t["system"] + " (default)")
    tuned = law[(law["budget"] == top) & (law["artifact"] == "a0")].assign(model=lambda t: t["system"] + " (tuned)")
    return pd.concat([default, tuned])[["model", "item", "score"]]
