"""The QuickScope section: the top configurations by LCB, certification over time, and the hard regions."""

from __future__ import annotations

import html

import numpy as np
import pandas as pd

from ..results import Result
from ._common import _open, _svg, _table_html


def _config_label(row: pd.Series, names: list[str]) -> str:
    parts = []
    for n in names:
        v = row.get(n)
        if v is None or (isinstance(v, float) and np.isnan(v)):
            continue
        parts.append(f"{v:.2f}" if isinstance(v, float) and not float(v).is_integer() else str(v if not isinstance(v, float) else int(v)))
    return " / ".join(parts)[:48]


def _tick(v) -> str:
    """A tick label: whole numbers without decimals, other floats with 2, text in full."""
    if isinstance(v, (float, np.floating)):
        return str(int(v)) if float(v).is_integer() else f"{v:.2f}"
    return str(v)


def quickscope_figure(result: Result) -> str:
    """Draw the figure of a Quickscope search.

    Left: the top configurations by LCB with their [LCB, UCB] whiskers and means (certified in red, the true
    value as a cross when the run was simulated). Middle: certified configurations and pool size against tickets.
    Right: the hard regions: the mean utility of sampled configurations by the first two search parameters.

    Parameters
    ----------
    result : Result
        A result of the ``"quickscope"`` method (its ``"top"`` table and, when present, its ``"trace"``).

    Returns
    -------
    str
        The figure as inline SVG markup (from ``<svg`` on, no XML header), ready to embed in an HTML page.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    top = result.tables["top"].head(20)
    trace = result.tables.get("trace", pd.DataFrame())
    utility = "error rate" if result.params.get("utility", "error") == "error" else "utility"
    skip = {"arm", "n", "estimate", "ci_low", "ci_high", "certified", "certified_at_ticket", "origin", "key", "truth"}
    names = [c for c in top.columns if c not in skip]
    fig, (a1, a2, a3) = plt.subplots(1, 3, figsize=(14, 4.2), gridspec_kw={"width_ratios": [1.4, 1, 1]})
    y = np.arange(len(top))[::-1]
    if len(top):
        cert = top["certified"].astype(bool).to_numpy()
        col = np.where(cert, "#c0392b", "#2c6fbb")
        a1.hlines(y, top["ci_low"], top["ci_high"], colors=col, lw=2.5, alpha=0.7)
        a1.plot(top["estimate"], y, "k|", ms=8, label="empirical mean")
        if "truth" in top:
            a1.plot(top["truth"], y, "x", color="#27ae60", ms=5, label="true value (simulation)")
        if result.info.get("tau") is not None:
            a1.axvline(float(result.info["tau"]), color="k", ls="--", lw=0.8, label="tau")
        a1.set_yticks(y)
        a1.set_yticklabels([f"{_config_label(r, names)}  (n={int(r['n'])})" for _, r in top.iterrows()], fontsize=6)
        a1.set_xlim(0, 1.02)
        a1.set_xlabel(utility)
        a1.legend(fontsize=6, loc="lower left")
    a1.set_title("top configurations by LCB", fontsize=9)
    if len(trace):
        from matplotlib.ticker import MaxNLocator

        a2.plot(trace["tickets"], trace["certified"], color="#c0392b", label="certified")
        a2.set_ylabel("certified configurations", color="#c0392b")
        # counts: whole-number ticks, and an axis from 0 even when nothing was certified
        a2.set_ylim(0, max(1, int(trace["certified"].max())) * 1.08)
        a2.yaxis.set_major_locator(MaxNLocator(integer=True))
        b2 = a2.twinx()
        b2.plot(trace["tickets"], trace["pool"], color="#7f8c8d", lw=0.8)
        b2.set_ylabel("configurations tried", color="#7f8c8d")
        b2.set_ylim(0, max(1, int(trace["pool"].max())) * 1.08)
        b2.yaxis.set_major_locator(MaxNLocator(integer=True))
        a2.xaxis.set_major_locator(MaxNLocator(nbins=4, integer=True))
        a2.set_xlabel("tickets (model calls)")
    a2.set_title("certification over time", fontsize=9)
    full = result.tables["top"]
    if len(names) >= 1 and len(full):
        g0 = names[0]
        if len(names) >= 2 and full[names[1]].nunique() <= 25:
            piv = full.pivot_table(index=g0, columns=names[1], values="estimate", aggfunc="mean")
            im = a3.imshow(piv.to_numpy(dtype=float), aspect="auto", cmap="Reds", vmin=0, vmax=1)
            a3.set_yticks(range(len(piv.index)))
            a3.set_yticklabels([_tick(v) for v in piv.index], fontsize=6)
            a3.set_xticks(range(len(piv.columns)))
            a3.set_xticklabels([_tick(v) for v in piv.columns], fontsize=6, rotation=90)
            a3.set_xlabel(names[1])
            a3.set_ylabel(g0)
            cb = fig.colorbar(im, ax=a3, fraction=0.05)
            cb.set_label(f"mean {utility}", fontsize=7)
        else:
            m = full.groupby(g0)["estimate"].mean()
            a3.barh([_tick(v) for v in m.index], m.to_numpy())
            a3.set_xlabel(f"mean {utility}")
    a3.set_title("hard regions among the top configurations", fontsize=9)
    fig.tight_layout()
    return _svg(fig)


def _quickscope_section(result: Result, heading: bool = True) -> str:
    p, lv, i = result.params, result.level, result.info
    fails = i.get("failures") or {}
    fail_txt = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in fails.items() if v) or "none"
    parts = [
        _open("quickscope", "QuickScope: where the model is reliably weak", heading),
        f"<p class='meta'>{i.get('tickets')} model calls in batches of {p.get('batch')}; {i.get('pool')} configurations "
        f"tried, {i.get('n_certified')} certified at tau = {i.get('tau')} ({html.escape(str(p.get('strategy')))}); "
        f"utility {html.escape(str(p.get('utility')))}; delta = {p.get('delta')}; failures: {html.escape(fail_txt)}.</p>",
        f"<figure>{quickscope_figure(result)}<figcaption>Left: the configurations with the highest lower confidence "
        "bound, each with its [LCB, UCB] interval (red: certified) and its empirical mean. The guarantee: "
        f"{html.escape(str(lv.get('meaning')))}. So a certified configuration's true utility is at least tau, and "
        "every interval drawn contains the true mean, except with that small probability for the whole run at once. "
        "Middle: certifications and configurations tried as the budget is spent. Right: average utility of the top "
        "configurations by their first two parameters: where the hard region lies.</figcaption></figure>",
        _table_html(result.table.drop(columns=[c for c in ("key", "arm") if c in result.table.columns]).head(20),
                    floats="{:.3f}"),
        "</section>",
    ]
    return "\n".join(parts)
