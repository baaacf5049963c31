"""The R-AutoEval+ section: e-value paths against 1/delta, the judge reliance rho, and the certificates."""

from __future__ import annotations

import html

import numpy as np
import pandas as pd

from ..results import Result
from ._common import _open, _svg, _table_html


def autoeval_figure(result: Result) -> str:
    """E-value paths against the 1/delta line (left) and the final weights over rho (right).

    Parameters
    ----------
    result : Result
        An autoeval result (its ``paths`` info, ``rhos`` parameter and ``candidates`` table are drawn; at most 12
        candidates).

    Returns
    -------
    str
        The figure as inline SVG.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = result.info.get("paths", {})
    rhos = np.asarray(result.params.get("rhos", [0.0]))
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.4))
    t = result.tables["candidates"].set_index("candidate")
    for cand, pth in list(paths.items())[:12]:
        le = np.asarray(pth["log_e"], dtype=float)
        a1.plot(np.arange(1, len(le) + 1), le / np.log(10), lw=1.2,
                label=f"{cand} ({'certified' if bool(t.loc[cand, 'certified']) else 'not certified'})")
        a2.plot(rhos, pth["weights"], "o-", ms=3, lw=1)
    lv = float(t["test_level"].iloc[0])
    a1.axhline(np.log10(1 / lv), color="k", ls="--", lw=1, label=f"1/delta = {1 / lv:g}")
    a1.set_xlabel("labelled examples processed")
    a1.set_ylabel("log10 e-value")
    a1.legend(fontsize=7)
    a1.grid(alpha=0.3)
    a2.set_xlabel("reliance on the judge, rho")
    a2.set_ylabel("weight at the end")
    a2.grid(alpha=0.3)
    fig.tight_layout()
    return _svg(fig)


def _autoeval_columns(t: pd.DataFrame) -> pd.DataFrame:
    """The columns a reader of the certificate needs, in reading order (the page is not a spreadsheet)."""
    keep = ["candidate", "n", "N", "certified", "certified_at", "p_value", "risk_upper", "ci_low", "ci_high",
            "mean_human", "mean_judge", "rho_weighted", "cost"]
    t = t[[c for c in keep if c in t.columns]]
    return t.loc[:, ~t.isna().all()]


def _autoeval_section(result: Result, heading: bool = True) -> str:
    p, lv = result.params, result.level
    sel = result.info.get("selection") or {}
    parts = [
        _open("autoeval", "R-AutoEval+: certified risk with human and judge labels", heading),
        f"<p class='meta'>{html.escape(str(p.get('method')))}, {html.escape(str(p.get('betting')))} bets, risk target "
        f"{p.get('risk_target')}, delta {lv.get('delta')}, seed {result.seed}.</p>",
        f"<figure>{autoeval_figure(result)}<figcaption>Left: each candidate's evidence (e-value) that its risk is below "
        f"{p.get('risk_target')}, as labelled examples are processed; a candidate is certified when its curve crosses "
        f"the dashed line, and a candidate whose true risk is above the target crosses it with probability at most "
        f"{lv.get('delta')}. Right: how much the test relied on the judge's labels at the end (rho = 0: human labels "
        "only; rho = 1: full trust in the judge after bias correction).</figcaption></figure>",
        _table_html(_autoeval_columns(result.tables["candidates"])),
        "<p class='meta'>All columns (e-values, test levels, unused unlabelled rows) are in the JSON result.</p>",
    ]
    if sel.get("procedure"):
        best = sel.get("best")
        parts.append(f"<p><b>{html.escape(sel['procedure'])}</b>: " + (
            "no candidate is certified." if best is None else f"best certified candidate: <b>{html.escape(str(best))}</b>.")
            + "</p>")
    parts.append("</section>")
    return "\n".join(parts)
