"""The Markdown report (for pull requests): level, seed, n and the guarantee per section, SIREN's contrasts kept,
integers and budgets formatted as such."""

import re

from assay import autoeval, siren
from assay.datasets import load_siren_law, synthetic_autoeval
from assay.report import render_markdown


def test_markdown_states_the_guarantee_and_formats_numbers():
    s = siren.evaluate(load_siren_law(), seed=3, n_boot=200, contrasts=["tuned-vs-default"])
    a = autoeval.certify(synthetic_autoeval(0), risk_target=0.1, delta=0.1, seed=4, grid=500)
    md = render_markdown([s, a])
    assert md.count("## ") >= 3
    assert "alpha = 0.05 (confidence 95%)" in md and "seed = 3" in md and "n = 1001 (evaluation items" in md
    assert "delta = 0.1 (confidence 90%)" in md and "seed = 4" in md
    assert md.count("- guarantee: ") == 2
    assert "### contrasts" in md and "tuned-vs-default" in md
    assert "| 1.5M |" in md and "| 0 (default) |" in md  # budgets as budgets
    assert "1500000" not in md
    # certified_at (a first sample index, missing when never certified) prints as an integer, not 67.0000
    rows = [ln.split(" | ") for ln in md.split("## R-AutoEval+")[1].splitlines() if ln.startswith("| q")]
    header = [h.strip() for h in md.split("## R-AutoEval+")[1].split("\n| candidate")[1].split("\n")[0].split("|")]
    at = header.index("certified_at")
    assert rows and all(re.fullmatch(r"\d*", r[at].strip()) for r in rows), [r[at] for r in rows]
    assert "| 400 | 2000 | 5 | 0 |" in md  # counts as integers
