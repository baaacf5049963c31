"""The SIREN section: selection-aware scores by (system, budget), with the simultaneous band and the contrasts."""

from __future__ import annotations

import html

import numpy as np

from ..results import Result
from ._common import _open, _budget_label, _svg, _table_html


def siren_figure(result: Result) -> str:
    """Draw one panel per system: estimate, pointwise CI, simultaneous band and naive max by budget.

    Parameters
    ----------
    result : Result
        A result of the ``"siren"`` method (its ``"cells"`` table).

    Returns
    -------
    str
        The figure as inline SVG markup (from ``<svg`` on, no XML header), ready to embed in an HTML page.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cells = result.tables["cells"]
    systems = list(dict.fromkeys(cells["system"]))
    n = len(systems)
    cols = min(3, n)
    rows = int(np.ceil(n / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False, sharey=True)
    for ax, s in zip(axes.ravel(), systems):
        t = cells[cells["system"] == s].reset_index(drop=True)
        x = np.arange(len(t))
        # budgets are categories: one band box per budget, not a ribbon drawn between them
        ax.bar(x, t["band_high"] - t["band_low"], bottom=t["band_low"], width=0.55, color="#c6dbef",
               label="simultaneous band (all cells at once)")
        ax.errorbar(x, t["estimate"], yerr=[t["estimate"] - t["ci_low"], t["ci_high"] - t["estimate"]],
                    fmt="o", color="#08519c", capsize=3, label="SIREN estimate, pointwise CI")
        ax.plot(x, t["naive_max"], "x", color="#cb181d", label="naive max (same data)")
        ax.set_xticks(x, [_budget_label(b) for b in t["budget"]])
        ax.set_title(str(s), fontsize=10)
        ax.set_xlabel("tuning budget")
        ax.grid(alpha=0.3)
    for ax in axes.ravel()[n:]:
        ax.axis("off")
    axes[0, 0].set_ylabel("score")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.tight_layout(rect=(0, 0.1 / rows, 1, 1))
    # one legend for the figure, below the panels, where it covers no data
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=8, frameon=False)
    return _svg(fig)


def _siren_section(result: Result, heading: bool = True) -> str:
    p, lv = result.params, result.level
    level = 1 - lv.get("alpha", 0.05)
    cells = result.tables["cells"].copy()
    cells["budget"] = cells["budget"].map(_budget_label)
    show = cells[["system", "budget", "K", "selector", "estimate", "ci_low", "ci_high", "band_low", "band_high",
                  "se_heldout", "se_selection", "naive_max", "optimism"]]
    parts = [
        _open("siren", "SIREN: selection-aware scores after tuning", heading),
        f"<p class='meta'>M = {result.n} items, R = {p.get('reps')} splits, selector {p.get('selector')}, "
        f"temperature {p.get('temperature')}, {p.get('n_boot')} bootstrap draws, seed {result.seed}.</p>",
        f"<figure>{siren_figure(result)}<figcaption>Each dot is the estimated fresh-data score of the "
        f"procedure 'tune at this budget, then deploy' for that model; the bar is its {level:.0%} confidence "
        f"interval, and the shaded box (the simultaneous band) covers every cell of the grid at once with probability {level:.0%}. "
        "Red crosses show the best shortlisted prompt's score on the same items that chose it (the naive "
        "report): the gap to the dot is the winner's-curse optimism.</figcaption></figure>",
        _table_html(show),
    ]
    con = result.tables.get("contrasts")
    if con is not None and not con.empty:
        parts.append(f"<h3>Contrasts ({level:.0%} intervals; paired on the same items)</h3><p class='meta'>Scanning "
                     "several contrasts for a finding? Read verdict_simultaneous (its interval holds for every contrast at "
                     "once); verdict_pointwise is valid only for one contrast chosen before looking.</p>")
        parts.append(_table_html(con[["contrast", "estimate", "ci_low", "ci_high", "simultaneous_low",
                                      "simultaneous_high", "verdict_pointwise", "verdict_simultaneous"]]))
    for w in result.info.get("warnings", []):
        parts.append(f"<p class='warn'>{html.escape(w)}</p>")
    parts.append("</section>")
    return "\n".join(parts)
