"""The campaign report (issue 25): HTML in headless Chromium with no console messages, the summary on top and every
method's section with its plot; the Markdown; the JSON rebuilds the same page offline."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from fake_openai_server import FakeOpenAIServer  # noqa: E402
from test_eval_campaign import _campaign, _judge  # noqa: E402
from test_report_browser import _chromium, _run  # noqa: E402

from assay.eval import campaign as camp  # noqa: E402
from assay.report.campaign import render_campaign_html, render_campaign_markdown  # noqa: E402


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("campaign")
    with FakeOpenAIServer(retry_after=0) as srv:
        c = _campaign(tmp, srv.base_url)
        res = camp.run(c, journal=tmp / "j.sqlite", judge_model=_judge())
    return res, camp.write_report(res, tmp / "report")


@pytest.mark.slow
def test_the_campaign_report_in_chromium(result):
    res, folder = result
    exe = _chromium()
    p, console = _run(exe, (folder / "report.html").as_uri(), "--dump-dom")
    assert p.returncode == 0, p.stderr[-2000:]
    assert console == [], console
    dom = p.stdout
    ids = re.findall(r'<(?:section|div class="campaign-section") id="([a-z0-9_-]+)"', dom)
    # the summary first, then each method in campaign order, one FAQ section per model, then the file
    assert ids == ["summary", "eval-faq", "faq-short", "faq-long", "eval-judge", "autoeval-all", "eval-kpi",
                   "psdme-latency_s", "psdme-completion_tokens", "eval-siren", "siren-all", "campaign-file"]
    assert len(ids) == len(set(ids))
    summary = dom.split('id="summary"')[1].split("</section>")[0]
    statements, costs = summary.split("</table>")[:2]
    assert statements.count("<tr>") - 1 == len(res.summary)  # a header row and one row per statement
    assert costs.count("<tr>") - 1 == 2  # and what each of the two models cost
    for sec in re.split(r'<section id="(?:faq|autoeval|psdme|siren)-', dom)[1:]:
        assert "<svg" in sec.split("</section>")[0]


def test_the_markdown_and_the_json_rebuild(result):
    res, folder = result
    md = (folder / "report.md").read_text()
    assert md.startswith("# assay eval: t") and "## Summary" in md and "| subject | section | statement |" in md
    assert md.index("## Summary") < md.index("## FAQ") < md.index("## R-AutoEval+") < md.index("## PS-DME")
    assert "skipped **kpi** (ttft_s)" in md
    back = camp.CampaignResult.from_dict(json.loads((folder / "report.json").read_text()))
    # the same page: identical apart from inside the plots (matplotlib stamps each SVG with its date and random ids)
    def text(page: str) -> str:
        return re.sub(r"<svg.*?</svg>", "<svg/>", page, flags=re.S)

    page = (folder / "report.html").read_text()
    again = render_campaign_html(back)
    assert text(again) == text(page) and again.count("<svg") == page.count("<svg") > 0
    assert render_campaign_markdown(back) == md


def test_one_heading_per_method_and_each_model_by_its_own_name(result):
    """Each method's title once, as its campaign section's heading, then one heading per model (the configuration's
    name), not the method's title again under every model; FAQ's table names the configuration, not "new"."""
    res, folder = result
    page = (folder / "report.html").read_text()
    titles = re.findall(r"<h2>(.*?)</h2>", page)
    assert len(titles) == len(set(titles))  # no title twice
    assert not re.search(r"<section id='(?:faq|autoeval|psdme|siren|quickscope)[^']*'><h2>", page)
    for model in ("short", "long"):
        assert f"<h3>{model}</h3>" in page
    faq = res.sections["faq"].results
    assert [list(r.estimates["model"]) for r in faq.values()] == [["short"], ["long"]]
    md = (folder / "report.md").read_text()
    assert md.count("## FAQ") == 1 and "#### FAQ" not in md and "### short" in md


def test_an_empty_chart_is_a_sentence():
    """FAQ's per-question chart when every question was drawn once, and PS-DME's guaranteed-KPI chart when no band
    reaches any reliability level, are sentences, not a row of bars of height 1 or empty axes."""
    import numpy as np
    import pandas as pd

    from assay import faq, psdme
    from assay.report import render_html

    rng = np.random.default_rng(0)
    hist = pd.DataFrame((rng.random((40, 60)) < 0.6).astype(float), columns=[f"q{j}" for j in range(60)])
    new = pd.DataFrame((rng.random((1, 60)) < 0.6).astype(float), columns=hist.columns)
    r = faq.evaluate(hist, new, budget=10, seed=0, calibrate=False)
    page = render_html([r])
    assert "Each of the 10 questions asked was drawn once" in page and "most drawn questions" not in page
    few = pd.DataFrame({"config": ["a"] * 5 + ["b"] * 5, "kpi": rng.random(10)})
    p = psdme.bands(few, select="all", seed=0)
    assert not np.isfinite(p.tables["tradeoff"]["best_kpi"].to_numpy(dtype=float)).any()
    page = render_html([p])
    assert "No band reaches any of the reliability levels" in page and "best guaranteed" not in page
