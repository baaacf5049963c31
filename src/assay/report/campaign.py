"""The report of an ``assay eval`` campaign: one summary table on top, then one section per method.

The summary has one row per statement (per model or configuration: each certified or estimated quantity in plain
words, its level, and what it cost in requests, tokens and model seconds); below it, what each model cost in
total, and every section skipped with its reason. Each method's section is that method's own report section
(:mod:`assay.report.faq`, ...), one per model or KPI, with its plots. Everything is read from a
:class:`~assay.eval.campaign.CampaignResult`, which ``report.json`` holds whole, so ``assay report RUN_ID``
rebuilds the page offline.
"""

from __future__ import annotations

import html
import json

import pandas as pd

from ._common import _CSS, _md_table, _table_html

__all__ = ["render_campaign_html", "render_campaign_markdown", "SECTION_TITLES"]

#: the campaign's sections, in report order, with their titles
SECTION_TITLES = {"faq": "FAQ: accuracy on the whole bank from a few adaptively chosen questions",
                  "scope": "QuickScope: certified weak regions of a generated benchmark",
                  "judge": "R-AutoEval+: risk certificates from an LLM judge and a few human labels",
                  "kpi": "PS-DME: guaranteed KPIs after the declared selection",
                  "siren": "SIREN: the configuration a search picks, with the search accounted for",
                  "compare": "compare: which configurations are better, which are tied, asked until resolved"}


def _slug(key: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in str(key))


def _facts(res) -> list[str]:
    c = res.campaign["campaign"]
    v = res.versions
    return [f"run id {res.run_id}", f"campaign fingerprint {res.fingerprint}", f"seed {res.seed}",
            f"confidence {1 - res.delta:.0%} (delta {res.delta:g}, each section in its own sense)",
            "versions " + ", ".join(f"{k} {x}" for k, x in v.items()),
            f"models: {', '.join(m['name'] for m in res.campaign['model'])}",
            f"campaign {c['name']}"]


def _summary_frame(res) -> pd.DataFrame:
    s = res.summary.rename(columns={"seconds": "model seconds"})
    if "model seconds" in s.columns:
        s["model seconds"] = s["model seconds"].astype(float).round(2)
    return s


def _totals(res) -> pd.DataFrame:
    t = res.costs
    if not len(t):
        return t
    return t[t["section"] == "total"].drop(columns=["section"]).reset_index(drop=True)


def _section_results(res):
    """(section name, Section) for the sections the campaign ran, in report order."""
    for name in SECTION_TITLES:
        sec = res.sections.get(name)
        if sec is None:
            continue
        yield name, sec


def render_campaign_html(res) -> str:
    """Render a campaign's report as one self-contained HTML page (inline SVG and CSS, no scripts, no network).

    The page opens with the campaign's facts and the summary table (one row per statement the campaign makes),
    then what each model cost, the skipped sections with their reasons, and one section per method.

    Parameters
    ----------
    res : CampaignResult
        The campaign's result (:class:`~assay.eval.campaign.CampaignResult`, as ``report.json`` holds it).

    Returns
    -------
    str
        The whole HTML document.
    """
    from . import _SECTIONS
    from .._version import __version__

    name = res.campaign["campaign"]["name"]
    title = f"assay eval: {name}"
    body = [f"<h1>{html.escape(title)}</h1>",
            "<p class='meta'>" + " · ".join(html.escape(f) for f in _facts(res)) + "</p>",
            "<section id='summary'><h2>Summary</h2><p>Each row is one statement the campaign makes, at the level "
            "beside it; "
            "requests, tokens and model seconds are what that section cost for that subject (answers shared between "
            "sections are paid once).</p>", _table_html(_summary_frame(res), floats="{:.2f}")]
    tot = _totals(res)
    if len(tot):
        body += ["<h3>Cost per model (every distinct request once)</h3>", _table_html(tot, floats="{:.4f}")]
    skipped = [(n, k, why) for n, sec in res.sections.items() for k, why in sec.skipped.items()]
    if skipped:
        body.append("<h3>Skipped</h3><ul>" + "".join(
            f"<li><b>{html.escape(n)}</b> ({html.escape(k)}): {html.escape(why)}</li>" for n, k, why in skipped)
            + "</ul>")
    body.append("</section>")
    for sname, sec in _section_results(res):
        body.append(f"<div class='campaign-section' id='eval-{sname}'><h2>{html.escape(SECTION_TITLES[sname])}</h2>")
        for note in sec.notes:
            body.append(f"<p class='warn'>{html.escape(note)}</p>")
        if not sec.results:
            body.append("<p>Nothing to report: " + html.escape("; ".join(sec.skipped.values()) or "no result")
                        + "</p>")
        for key, r in sec.results.items():
            if key != "all":
                body.append(f"<h3>{html.escape(key)}</h3>")
            fn = _SECTIONS.get(r.method)
            # the method's title is the campaign section's heading, once: not again under each model
            part = fn(r, heading=False) if fn is not None else _table_html(r.table)
            # one id per (method, subject): several models' FAQ sections on one page
            body.append(part.replace(f"<section id='{r.method}'>", f"<section id='{r.method}-{_slug(key)}'>", 1))
        body.append("</div>")
    campaign = json.dumps(res.campaign, indent=2)
    body.append("<section id='campaign-file'><h2>The campaign file, as run</h2><pre>" + html.escape(campaign)
                + "</pre></section>")
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>"
            + "\n".join(body) + f"<p class='meta'>assay {html.escape(__version__)}</p></body></html>")


def render_campaign_markdown(res) -> str:
    """Render the same report as Markdown (for a pull request or a lab notebook): summary first, then each method.

    Parameters
    ----------
    res : CampaignResult
        The campaign's result (:class:`~assay.eval.campaign.CampaignResult`, as ``report.json`` holds it).

    Returns
    -------
    str
        The Markdown text: the campaign's facts, the summary table, the cost per model, the skipped sections with
        their reasons, then one section per method (each result's own Markdown, without its title).
    """
    from . import render_markdown

    name = res.campaign["campaign"]["name"]
    out = [f"# assay eval: {name}", "", *[f"- {f}" for f in _facts(res)], "", "## Summary", "",
           _md_table(_summary_frame(res)), ""]
    tot = _totals(res)
    if len(tot):
        out += ["### Cost per model (every distinct request once)", "", _md_table(tot), ""]
    for n, sec in res.sections.items():
        for k, why in sec.skipped.items():
            out.append(f"- skipped **{n}** ({k}): {why}")
    out.append("")
    for sname, sec in _section_results(res):
        out += [f"## {SECTION_TITLES[sname]}", ""]
        out += [f"- note: {n}" for n in sec.notes]
        for key, r in sec.results.items():
            if key != "all":
                out += [f"### {key}", ""]
            # each result's own Markdown, without its title (the section's heading above says it once)
            out.append(render_markdown([r], heading=False))
    return "\n".join(out)
