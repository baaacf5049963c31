"""Self-contained HTML (inline SVG, no network) and Markdown reports of assay results.

Each method contributes a section; a section has plots with plain-word captions that say what the
guarantee is, and the result's tables.
"""

from __future__ import annotations

import html
import io
from typing import Iterable

import numpy as np
import pandas as pd

from ..results import Result

__all__ = ["render_html", "render_markdown", "load_results", "siren_figure", "faq_figure", "faq_protocol_figure", "quickscope_figure"]


def _svg(fig) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    text = buf.getvalue()
    return text[text.find("<svg"):]


def _budget_label(b) -> str:
    from ..data import format_budget, parse_budget

    v = parse_budget(b)
    return "default" if v == 0 else format_budget(v, compact=True)


def siren_figure(result: Result) -> str:
    """One panel per system: estimate, pointwise CI, simultaneous band and naive max by budget."""
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


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:1300px;margin:2em auto;padding:0 1em;color:#222}
figure svg{max-width:100%;height:auto} .scroll{max-width:100%;overflow-x:auto}
h1{font-size:1.6em} h2{border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;font-size:.85em;margin:1em 0} td,th{border:1px solid #ddd;padding:3px 7px;text-align:right}
th{background:#f4f6f8} td:first-child,th:first-child{text-align:left}
figure{margin:1em 0} figcaption{font-size:.9em;color:#444;max-width:900px}
.meta{color:#555;font-size:.9em} .warn{color:#a50f15}
"""


def integral_columns(df: pd.DataFrame) -> dict[str, bool]:
    """Columns whose finite values are all whole numbers (counts, budgets, first-crossing indices): they print as
    integers. Boolean and all-missing columns are not integral."""
    out = {}
    for c in df.columns:
        col = df[c]
        num = pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col)
        vals = col.dropna().to_numpy(dtype=float) if num else np.array([])
        vals = vals[np.isfinite(vals)]
        out[c] = bool(num and len(vals) and np.all(np.mod(vals, 1) == 0))
    return out


def _table_html(df: pd.DataFrame, floats: str = "{:.4f}") -> str:
    integral = integral_columns(df)

    def fmt(c, v):
        if v is None or v is pd.NA:
            return ""
        if isinstance(v, (bool, np.bool_)):
            return "yes" if v else "no"
        if isinstance(v, (int, np.integer)):
            return str(int(v))
        if isinstance(v, (float, np.floating)):
            if np.isnan(v):
                return ""
            if integral[c] and np.isfinite(v):
                return str(int(v))
            return floats.format(v)
        return html.escape(str(v))

    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    cols = list(df.columns)
    body = "".join("<tr>" + "".join(f"<td>{fmt(c, v)}</td>" for c, v in zip(cols, row)) + "</tr>"
                   for row in df.itertuples(index=False))
    # a wide table scrolls inside the page instead of running past it
    return f"<div class='scroll'><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"


def _siren_section(result: Result) -> str:
    p, lv = result.params, result.level
    level = 1 - lv.get("alpha", 0.05)
    cells = result.tables["cells"].copy()
    cells["budget"] = cells["budget"].map(_budget_label)
    show = cells[["system", "budget", "K", "selector", "estimate", "ci_low", "ci_high", "band_low", "band_high",
                  "se_heldout", "se_selection", "naive_max", "optimism"]]
    parts = [
        "<section id='siren'><h2>SIREN: selection-aware scores after tuning</h2>",
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


def autoeval_figure(result: Result) -> str:
    """E-value paths against the 1/delta line (left) and the final weights over rho (right)."""
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


def _autoeval_section(result: Result) -> str:
    p, lv = result.params, result.level
    sel = result.info.get("selection") or {}
    parts = [
        "<section id='autoeval'><h2>R-AutoEval+: certified risk with human and judge labels</h2>",
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


_UNITS = {"_s": "seconds", "_sec": "seconds", "_seconds": "seconds", "_ms": "milliseconds", "_us": "microseconds",
          "_tokens": "tokens", "_usd": "USD", "_gb": "GB", "_mb": "MB"}


def _kpi_label(result: Result) -> str:
    """The KPI's column name with its unit when the name says it (``ttft_s`` -> ``ttft_s (seconds)``)."""
    name = str(result.params.get("kpi", "kpi"))
    unit = next((u for suf, u in _UNITS.items() if name.lower().endswith(suf)), None)
    return f"{name} ({unit})" if unit else name


def psdme_figure(result: Result) -> str:
    """CDF bands of up to six selected configurations (left) and the best guaranteed KPI against the
    reliability 1 - gamma (right)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.6))
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
    tr = result.tables.get("tradeoff")
    if tr is not None and not tr.empty:
        fin = np.isfinite(tr["best_kpi"].to_numpy(dtype=float))
        a2.plot(tr["reliability"][fin], tr["best_kpi"][fin], "o-", ms=3)
    a2.set_xlabel("reliability 1 - gamma")
    a2.set_ylabel(f"best guaranteed {kpi}")
    a2.grid(alpha=0.3)
    fig.tight_layout()
    return _svg(fig)


def _no_guarantee(t: pd.DataFrame) -> pd.DataFrame:
    """Guaranteed-KPI columns: +inf (no guarantee at that reliability) shown as 'none'."""
    t = t.copy()
    for c in t.columns:
        if str(c).startswith("kpi_"):
            t[c] = [("none" if np.isposinf(v) else v) for v in t[c].to_numpy(dtype=float)]
    return t


def _psdme_section(result: Result) -> str:
    info, lv = result.info, result.level
    sel = result.tables["configs"]
    sel = sel[sel["selected"].astype(bool)]
    parts = [
        "<section id='psdme'><h2>PS-DME: guaranteed KPIs for pre-selected configurations</h2>",
        f"<p class='meta'>method {html.escape(str(info.get('method_used')))}, {html.escape(str(result.params.get('band')))} "
        f"bands, {info.get('selected_count')} of {info.get('K')} configurations selected, delta {lv.get('delta')}, "
        f"seed {result.seed}.</p>",
        f"<figure>{psdme_figure(result)}<figcaption>Left: empirical CDFs of selected configurations with their "
        f"confidence bands; the guarantee is that {html.escape(str(lv.get('meaning')))}. Right: the best KPI that "
        "some selected configuration can guarantee at each reliability level (a point is missing where no band "
        "reaches that level).</figcaption></figure>",
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


def faq_figure(result: Result) -> str:
    """Left: the running PAI estimate and its CI against the number of queries for up to six models, with the
    width uniform sampling would have at the same count. Right: how often each asked question was drawn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from scipy import stats

    q = result.tables["queries"]
    est = result.estimates
    z = float(stats.norm.ppf(1 - result.level.get("alpha", 0.05) / 2))
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.6))
    for k, (model, g) in enumerate(q.groupby("model", sort=False)):
        if k >= 6:
            break
        phi = g["phi"].to_numpy(dtype=float)
        if not np.isfinite(phi).any():  # every question asked: no running estimate to draw
            continue
        c = g["weight"].to_numpy(dtype=float) if "weight" in g else np.ones_like(phi)
        t = np.arange(1, phi.size + 1)
        sc, sc2 = np.cumsum(c), np.cumsum(c**2)
        mean = np.cumsum(c * phi) / sc
        # weighted quadratic variation of the increments around the running estimate, with the n/(n-1) plug-in
        qv = np.cumsum(c**2 * phi**2) - 2 * mean * np.cumsum(c**2 * phi) + mean**2 * sc2
        var = np.where(t > 1, qv / sc**2 * t / np.maximum(t - 1, 1), np.nan)
        half = z * np.sqrt(np.maximum(var, 0))
        # an accuracy lies in [0, 1]: the running estimate is drawn clipped to it, as the reported estimate is
        line, = a1.plot(t, np.clip(mean, 0, 1), lw=1.2, label=str(model)[:30])
        a1.fill_between(t, np.clip(mean - half, 0, 1), np.clip(mean + half, 0, 1), color=line.get_color(), alpha=0.15)
        uni = z * np.sqrt(np.clip(mean * (1 - mean), 0, None) / t)
        a1.plot(t, np.clip(mean + uni, 0, 1), ":", color=line.get_color(), lw=0.8)
        a1.plot(t, np.clip(mean - uni, 0, 1), ":", color=line.get_color(), lw=0.8)
        if "truth" in est:
            truth = est.loc[est["model"] == model, "truth"]
            if len(truth):
                a1.axhline(float(truth.iloc[0]), color=line.get_color(), lw=0.6, ls="--")
    a1.set_xlabel("queries")
    a1.set_ylabel("accuracy over the bank")
    a1.set_ylim(0, 1)
    a1.grid(alpha=0.3)
    a1.legend(fontsize=7)
    from matplotlib.ticker import MaxNLocator

    counts = q.groupby("item").size().sort_values(ascending=False)
    shown = min(len(counts), 40)
    a2.bar(np.arange(shown), counts.to_numpy()[:shown])
    a2.set_xticks(np.arange(shown))
    a2.set_xticklabels([str(i) for i in counts.index[:shown]], rotation=90, fontsize=6)
    a2.set_ylabel("times drawn (all models)")
    a2.yaxis.set_major_locator(MaxNLocator(integer=True))
    a2.set_title(f"the {shown} most drawn questions" + (f" of {len(counts)} asked" if len(counts) > shown else ""),
                 fontsize=9)
    fig.tight_layout()
    return _svg(fig)


def _faq_section(result: Result) -> str:
    p, lv = result.params, result.level
    parts = [
        "<section id='faq'><h2>FAQ: accuracy over the whole bank from a few questions</h2>",
        f"<p class='meta'>{p.get('n_queries')} queries of {p.get('n_items')} questions per model; policy tau "
        f"{p.get('tau')}, beta0 {p.get('beta0')}, rho {p.get('rho')}, gamma {p.get('gamma')}; variance "
        f"{html.escape(str(p.get('variance')))}.</p>",
        f"<figure>{faq_figure(result)}<figcaption>Left: the running estimate and its {1 - lv.get('alpha', 0.05):.0%} "
        "interval as queries accumulate (shaded), against the interval a uniform sample of the same size would give "
        "(dotted); dashed lines mark the true accuracy when it is known. The guarantee: "
        f"{html.escape(str(lv.get('meaning')))}; it holds whatever the factor model's quality, which only affects "
        "the width. The running band uses the increments' variance; the table gives the reported interval (which also "
        "floors the variance at the working model's). Right: which questions were drawn and how often (without "
        "replacement, the default, each question at most once per model).</figcaption></figure>",
        _table_html(result.estimates),
    ]
    e = result.info.get("expected")
    if e:
        parts.append(f"<p class='meta'>Expected before any query (FAQ run on {e.get('held_out_models')} held-out "
                     f"models of the history's own families at {e.get('budget')} queries): coverage "
                     f"{float(e.get('expected_coverage', float('nan'))):.3f}, saving "
                     f"{float(e.get('expected_saving', float('nan'))):.2f}x, "
                     f"{float(e.get('fallback_rate', float('nan'))):.0%} fell back to uniform sampling.</p>")
    parts += [_faq_notes(result), "</section>"]
    return "\n".join(parts)


def _faq_notes(result: Result) -> str:
    """FAQ's plain words (below 33 questions, no saving, fell back), as every FAQ output carries them."""
    return "\n".join(f"<p class='meta'>note: {html.escape(w)}</p>" for w in result.warnings)


def faq_protocol_figure(result: Result) -> str:
    """ESS against uniform sampling and coverage, by budget and method."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = result.table
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.6))
    for m, g in t.groupby("method", sort=False):
        a1.plot(g["n_queries"], g["ess_vs_uniform_mean"], "o-", ms=3, label=m)
        a2.plot(g["n_queries"], g["coverage"], "o-", ms=3, label=m)
    a1.set_xlabel("queries per model")
    a1.set_ylabel("ESS multiplier vs uniform sample mean")
    a2.axhline(1 - result.level.get("alpha", 0.05), color="k", lw=0.8, ls="--")
    a2.set_xlabel("queries per model")
    a2.set_ylabel("coverage")
    for a in (a1, a2):
        a.grid(alpha=0.3)
    a1.legend(fontsize=7)
    fig.tight_layout()
    return _svg(fig)


def _faq_protocol_section(result: Result) -> str:
    parts = [
        "<section id='faq-protocol'><h2>FAQ protocol: coverage and effective sample size</h2>",
        f"<figure>{faq_protocol_figure(result)}<figcaption>Left: how many uniformly sampled questions each method's "
        "interval is worth (squared width ratio against uniform sampling with the sample mean). Right: the share of "
        "intervals that contain the model's true accuracy over the bank; the dashed line is the nominal level."
        "</figcaption></figure>",
        _table_html(result.table),
        _faq_notes(result),
        "</section>",
    ]
    return "\n".join(parts)


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
    """Left: the top configurations by LCB with their [LCB, UCB] whiskers and means (certified in red, the true
    value as a cross when the run was simulated). Middle: certified configurations and pool size against tickets.
    Right: the hard regions: the mean utility of sampled configurations by the first two search parameters."""
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


def _quickscope_section(result: Result) -> str:
    p, lv, i = result.params, result.level, result.info
    fails = i.get("failures") or {}
    fail_txt = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in fails.items() if v) or "none"
    parts = [
        "<section id='quickscope'><h2>QuickScope: where the model is reliably weak</h2>",
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


_SECTIONS = {"siren": _siren_section, "autoeval": _autoeval_section, "psdme": _psdme_section, "faq": _faq_section,
             "faq-protocol": _faq_protocol_section, "quickscope": _quickscope_section}


def render_html(results: Iterable[Result], title: str = "assay report") -> str:
    """One self-contained HTML page (inline SVG, inline CSS, no scripts, no network)."""
    body = []
    for r in results:
        section = _SECTIONS.get(r.method)
        if section is None:
            body.append(f"<section><h2>{html.escape(r.method)}</h2>{_table_html(r.table)}</section>")
        else:
            body.append(section(r))
    from .._version import __version__

    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>"
        f"<h1>{html.escape(title)}</h1><p class='meta'>assay {__version__}</p>"
        + "\n".join(body) + "</body></html>"
    )


def load_results(obj) -> list[Result]:
    """Results from parsed JSON: one result (a dict with ``method``), a list of them, or a mapping name -> result
    (``assay demo``'s results.json). Importing the method modules registers their result classes."""
    from .. import autoeval, psdme, siren  # noqa: F401
    from .. import faq, quickscope, studies  # noqa: F401
    from ..errors import AssayInputError

    if isinstance(obj, dict) and "method" in obj:
        items = [obj]
    elif isinstance(obj, dict):
        items = list(obj.values())
    elif isinstance(obj, list):
        items = obj
    else:
        items = []
    bad = [i for i in items if not isinstance(i, dict) or "method" not in i]
    if not items or bad:
        raise AssayInputError("not an assay result: expected the JSON written by --json / --out (an object with a "
                              "'method' key), a list of them, or assay demo's results.json")
    return [Result.from_dict(i) for i in items]


_MD_TITLES = {"siren": "SIREN: selection-aware scores of tune-then-deploy procedures",
              "autoeval": "R-AutoEval+: risk certificates from human and judge labels",
              "psdme": "PS-DME: KPI bands for pre-selected configurations",
              "faq": "FAQ: accuracy from actively chosen questions",
              "faq-protocol": "FAQ protocol: coverage and efficiency on held-out models",
              "quickscope": "QuickScope: certified weak regions",
              "study": "Simulation study"}
#: further tables a Markdown section keeps besides the main one
_MD_EXTRA = {"siren": ("contrasts",), "psdme": ("best",), "quickscope": ("certified",)}


def render_markdown(results: Iterable[Result]) -> str:
    """A Markdown summary for pull requests: per result, its level, seed, sample size, the guarantee in one
    sentence, its warnings, the main table and the tables a reader needs beside it (SIREN's contrasts)."""
    out = []
    for r in results:
        lv = r.level
        out.append(f"## {_MD_TITLES.get(r.method, r.method)}\n")
        facts = []
        for key in ("alpha", "delta"):
            if key in lv:
                facts.append(f"{key} = {float(lv[key]):g} (confidence {1 - float(lv[key]):.0%})")
        facts.append(f"seed = {r.seed}" + (" (a numpy Generator: not repeatable from this report)"
                                            if r.seed is None and r.info.get("seed_source") == "generator" else ""))
        facts.append(f"n = {r.n}" + (f" ({r.n_meaning})" if r.n_meaning else ""))
        facts.append(f"assay {r.version}")
        out.append("- " + "; ".join(facts))
        if lv.get("meaning"):
            out.append(f"- guarantee: {lv['meaning']}")
        for w in r.warnings:
            out.append(f"- **warning:** {w}")
        out.append("")
        out.append(_md_table(r.table))
        for name in _MD_EXTRA.get(r.method, ()):
            t = r.tables.get(name)
            if t is not None and len(t):
                out += ["", f"### {name}", "", _md_table(t)]
        out.append("")
    return "\n".join(out)


def _md_table(df: pd.DataFrame) -> str:
    """Integers (and whole-number float columns such as counts) as integers, budgets as 1.5M, floats with 4
    decimals, missing values blank, pipes escaped."""
    from ..data import format_budget, parse_budget

    df = df.drop(columns=[c for c in ("key", "arm") if c in df.columns])
    integral = integral_columns(df)

    def fmt(c, v):
        if v is None or v is pd.NA or (isinstance(v, (float, np.floating)) and np.isnan(v)):
            return ""
        if c == "budget":
            try:
                b = parse_budget(v)
                return "0 (default)" if b == 0 else format_budget(b, compact=True)
            except Exception:  # a label that is not a budget: shown as given
                return str(v).replace("|", "\\|")
        if isinstance(v, (bool, np.bool_)):
            return "yes" if v else "no"
        if isinstance(v, (float, np.floating)) and np.isinf(v):
            return "inf" if v > 0 else "-inf"
        if isinstance(v, (int, np.integer)) or (integral[c] and isinstance(v, (float, np.floating))):
            return str(int(v))
        if isinstance(v, (float, np.floating)):
            return f"{v:.4f}"
        return str(v).replace("|", "\\|")

    cols = list(df.columns)
    lines = ["| " + " | ".join(str(c).replace("|", "\\|") for c in cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(fmt(c, v) for c, v in zip(cols, row)) + " |" for row in df.itertuples(index=False)]
    return "\n".join(lines)
