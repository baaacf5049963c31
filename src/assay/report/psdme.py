"""The PS-DME section: CDF bands of the selected configurations and the guaranteed KPI by reliability."""

from __future__ import annotations

import html

import numpy as np
import pandas as pd

from ..results import Result
from ._common import _open, _svg, _table_html


_UNITS = {"_s": "seconds", "_sec": "seconds", "_seconds": "seconds", "_ms": "milliseconds", "_us": "microseconds",
          "_tokens": "tokens", "_usd": "USD", "_gb": "GB", "_mb": "MB"}


def _kpi_label(result: Result) -> str:
    """The KPI's column name with its unit when the name says it (``ttft_s`` -> ``ttft_s (seconds)``)."""
    name = str(result.params.get("kpi", "kpi"))
    unit = next((u for suf, u in _UNITS.items() if name.lower().endswith(suf)), None)
    return f"{name} ({unit})" if unit else name


def psdme_figure(result: Result) -> str:
    """Draw CDF bands of up to six selected configurations (left) and the best guaranteed KPI against the
    reliability 1 - gamma (right).

    The right panel is omitted when no band reaches any reliability level.

    Parameters
    ----------
    result : Result
        A result of the ``"psdme"`` method (its ``"bands"`` and ``"tradeoff"`` tables).

    Returns
    -------
    str
        The figure as inline SVG markup (from ``<svg`` on, no XML header), ready to embed in an HTML page.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    guaranteed = _guarantees(result)
    if guaranteed:
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.6))
    else:  # no band reaches any reliability level: the right panel would be empty axes; the section says so instead
        fig, a1 = plt.subplots(1, 1, figsize=(6, 3.6))
        a2 = None
    bands = result.tables.get("bands")
    if bands is not None and not bands.empty:
        for k, (cfg, g) in enumerate(bands.groupby("config", sort=False)):
            if k >= 6:
                break
            x = g["x"].to_numpy()
            fin = np.isfinite(x)
            line, = a1.step(x[fin], g["ecdf"].to_numpy()[fin], where="post", lw=1.2, label=str(cfg))
            a1.fill_between(x[fin], g["lower"].to_numpy()[fin], g["upper"].to_numpy()[fin], step="post",
                            color=line.get_color(), alpha=0.15)
        a1.legend(fontsize=7)
    kpi = _kpi_label(result)
    a1.set_xlabel(f"{kpi} (lower is better)")
    a1.set_ylabel("CDF")
    a1.grid(alpha=0.3)
    if a2 is not None:
        tr = result.tables["tradeoff"]
        fin = np.isfinite(tr["best_kpi"].to_numpy(dtype=float))
        a2.plot(tr["reliability"][fin], tr["best_kpi"][fin], "o-", ms=3)
        a2.set_xlabel("reliability 1 - gamma")
        a2.set_ylabel(f"best guaranteed {kpi}")
        a2.grid(alpha=0.3)
    fig.tight_layout()
    return _svg(fig)


def _guarantees(result: Result) -> bool:
    """Some selected configuration guarantees a KPI at some reliability level of the trade-off table."""
    tr = result.tables.get("tradeoff")
    return tr is not None and not tr.empty and bool(np.isfinite(tr["best_kpi"].to_numpy(dtype=float)).any())


def _levels(result: Result) -> str:
    tr = result.tables.get("tradeoff")
    if tr is None or tr.empty:
        return "none in the table"
    return ", ".join(f"{float(r):g}" for r in tr["reliability"])


def _no_guarantee(t: pd.DataFrame) -> pd.DataFrame:
    """Guaranteed-KPI columns: +inf (no guarantee at that reliability) shown as 'none'."""
    t = t.copy()
    for c in t.columns:
        if str(c).startswith("kpi_"):
            t[c] = [("none" if np.isposinf(v) else v) for v in t[c].to_numpy(dtype=float)]
    return t


def _psdme_section(result: Result, heading: bool = True) -> str:
    info, lv = result.info, result.level
    sel = result.tables["configs"]
    sel = sel[sel["selected"].astype(bool)]
    parts = [
        _open("psdme", "PS-DME: guaranteed KPIs for pre-selected configurations", heading),
        f"<p class='meta'>method {html.escape(str(info.get('method_used')))}, {html.escape(str(result.params.get('band')))} "
        f"bands, {info.get('selected_count')} of {info.get('K')} configurations selected, delta {lv.get('delta')}, "
        f"seed {result.seed}.</p>",
        f"<figure>{psdme_figure(result)}<figcaption>" + (
            f"Left: empirical CDFs of selected configurations with their confidence bands; the guarantee is that "
            f"{html.escape(str(lv.get('meaning')))}. Right: the best KPI that some selected configuration can "
            "guarantee at each reliability level (a point is missing where no band reaches that level)."
            if _guarantees(result) else
            f"Empirical CDFs of selected configurations with their confidence bands; the guarantee is that "
            f"{html.escape(str(lv.get('meaning')))}. No band reaches any of the reliability levels "
            f"({_levels(result)}), so no {html.escape(_kpi_label(result))} is guaranteed at any of them yet: the bands "
            "are as wide as this many observations per configuration allow, and more observations narrow them."
        ) + "</figcaption></figure>",
        _table_html(_no_guarantee(sel.drop(columns=["selected"]))),
        f"<p class='meta'>kpi_R: the {html.escape(_kpi_label(result))} each configuration guarantees at reliability R "
        "('none': its band never reaches R); level: each band's miscoverage after the selection adjustment.</p>",
    ]
    if info.get("method_reason"):
        parts.append(f"<p class='meta'>{html.escape(info['method_reason'])}</p>")
    for w in result.warnings:
        parts.append(f"<p class='meta'>{html.escape(w)}</p>")
    parts.append("</section>")
    return "\n".join(parts)
