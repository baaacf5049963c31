"""The FAQ sections: one FAQ result (running estimate and interval, the questions drawn) and the FAQ protocol
(coverage and effective sample size by budget and method).
"""

from __future__ import annotations

import html

import numpy as np

from ..results import Result
from ._common import _open, _svg, _table_html


def faq_figure(result: Result) -> str:
    """Draw the figure of an FAQ run.

    Left: the running PAI estimate and its CI against the number of queries for up to six models, with the
    width uniform sampling would have at the same count. Right: how often each asked question was drawn
    (omitted when every question asked was drawn exactly once).

    Parameters
    ----------
    result : Result
        A result of the ``"faq"`` method (its ``"queries"`` table and estimates).

    Returns
    -------
    str
        The figure as inline SVG markup (from ``<svg`` on, no XML header), ready to embed in an HTML page.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from scipy import stats

    q = result.tables["queries"]
    est = result.estimates
    z = float(stats.norm.ppf(1 - result.level.get("alpha", 0.05) / 2))
    counts = q.groupby("item").size().sort_values(ascending=False)
    if _drawn_once(result):  # every question drawn once: the right panel would be a row of bars of height 1
        fig, a1 = plt.subplots(1, 1, figsize=(6, 3.6))
        a2 = None
    else:
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
    if a2 is None:
        fig.tight_layout()
        return _svg(fig)
    from matplotlib.ticker import MaxNLocator

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


def _drawn_once(result: Result) -> bool:
    """Every question asked was drawn exactly once (one model, without replacement): nothing to show per question."""
    q = result.tables["queries"]
    return len(q) > 0 and bool((q.groupby("item").size() == 1).all())


def _faq_section(result: Result, heading: bool = True) -> str:
    p, lv = result.params, result.level
    parts = [
        _open("faq", "FAQ: accuracy over the whole bank from a few questions", heading),
        f"<p class='meta'>{p.get('n_queries')} queries of {p.get('n_items')} questions per model; policy tau "
        f"{p.get('tau')}, beta0 {p.get('beta0')}, rho {p.get('rho')}, gamma {p.get('gamma')}; variance "
        f"{html.escape(str(p.get('variance')))}.</p>",
        # asked live: how the model's answers ended (outcomes, cut-offs), or that a table records none
        "<p class='meta'>Answers: " + html.escape(str((result.info.get("live") or {}).get("headline")
                                                      or "outcomes not recorded (scores read from a table)")) + ".</p>",
        f"<figure>{faq_figure(result)}<figcaption>{'' if _drawn_once(result) else 'Left: '}"
        f"{'T' if _drawn_once(result) else 't'}he running estimate and its {1 - lv.get('alpha', 0.05):.0%} "
        "interval as queries accumulate (shaded), against the interval a uniform sample of the same size would give "
        "(dotted); dashed lines mark the true accuracy when it is known. The guarantee: "
        f"{html.escape(str(lv.get('meaning')))}; it holds whatever the factor model's quality, which only affects "
        "the width. The running band uses the increments' variance; the table gives the reported interval (which also "
        "floors the variance at the working model's). " + (
            f"Each of the {result.tables['queries']['item'].nunique()} questions asked was drawn once (without "
            "replacement, the default, a question is asked at most once per model)." if _drawn_once(result) else
            "Right: which questions were drawn and how often (without replacement, the default, each question at most "
            "once per model).") + "</figcaption></figure>",
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
    """Draw ESS against uniform sampling and coverage, by budget and method.

    Parameters
    ----------
    result : Result
        A result of the ``"faq-protocol"`` study: its table has one row per method and budget
        (``method``, ``n_queries``, ``ess_vs_uniform_mean``, ``coverage``).

    Returns
    -------
    str
        The figure as inline SVG markup (from ``<svg`` on, no XML header), ready to embed in an HTML page.
    """
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


def _faq_protocol_section(result: Result, heading: bool = True) -> str:
    parts = [
        _open("faq-protocol", "FAQ protocol: coverage and effective sample size", heading),
        f"<figure>{faq_protocol_figure(result)}<figcaption>Left: how many uniformly sampled questions each method's "
        "interval is worth (squared width ratio against uniform sampling with the sample mean). Right: the share of "
        "intervals that contain the model's true accuracy over the bank; the dashed line is the nominal level."
        "</figcaption></figure>",
        _table_html(result.table),
        _faq_notes(result),
        "</section>",
    ]
    return "\n".join(parts)
