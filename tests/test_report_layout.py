"""The HTML report at 1,400 px in a real headless Chromium: no figure and no table runs past the page (or needs a
horizontal scroll bar), and one screenshot per section is kept as a test artifact in ``test-artifacts/report/``
(``$ASSAY_TEST_ARTIFACTS`` overrides the folder)."""

import html as html_lib
import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.cli import app

from test_report_browser import FLAGS as _BROWSER_FLAGS, _chromium  # noqa: E402  (one way to find and start Chromium)

# one worker runs this module: its module-scoped fixtures are computed once, not on each xdist worker
# slow (make check leaves it out): a browser
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("report_layout")]

FLAGS = [*_BROWSER_FLAGS, "--hide-scrollbars"]
ROOT = Path(__file__).resolve().parents[1]

PROBE = """<script>
window.addEventListener('load', () => {
  const W = document.documentElement.clientWidth, bad = [];
  document.querySelectorAll('figure, figure svg, table').forEach((el) => {
    const r = el.getBoundingClientRect();
    const sec = el.closest('section') ? el.closest('section').id : 'page';
    if (r.right > W + 0.5 || r.left < -0.5) bad.push(`${sec} ${el.tagName} spans ${Math.round(r.left)}..${Math.round(r.right)} of ${W}`);
  });
  document.querySelectorAll('.scroll').forEach((el) => {
    if (el.scrollWidth > el.clientWidth + 0.5) bad.push(`${el.closest('section').id} table needs a scroll bar (${el.scrollWidth} > ${el.clientWidth})`);
  });
  const out = document.createElement('pre'); out.id = 'layout-probe'; out.textContent = JSON.stringify({width: W, bad});
  document.body.appendChild(out);
});
</script>"""


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("demo")
    res = CliRunner().invoke(app, ["demo", "--out", str(d)])
    assert res.exit_code == 0, res.output
    return d / "report.html"


def test_nothing_overflows_at_1400px(report, tmp_path):
    exe = _chromium()
    page = tmp_path / "probe.html"
    page.write_text(report.read_text().replace("</body>", PROBE + "</body>"))
    p = subprocess.run([exe, *FLAGS, "--window-size=1400,3000", "--virtual-time-budget=5000", "--dump-dom",
                        page.as_uri()], capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, p.stderr[-2000:]
    m = re.search(r'<pre id="layout-probe">(.*?)</pre>', p.stdout, re.S)
    assert m, "the layout probe did not run"
    probe = json.loads(html_lib.unescape(m.group(1)))
    assert probe["width"] >= 1300
    assert probe["bad"] == [], probe["bad"]


def test_a_screenshot_per_section(report):
    exe = _chromium()
    html = report.read_text()
    sections = re.findall(r"<section id='([a-z-]+)'>", html)
    assert sections == ["siren", "autoeval", "psdme", "faq", "quickscope", "compare"]
    out = Path(os.environ.get("ASSAY_TEST_ARTIFACTS", ROOT / "test-artifacts")) / "report"
    out.mkdir(parents=True, exist_ok=True)
    import matplotlib.image as mpimg
    import numpy as np

    for sec in sections:
        page = out / f"{sec}.html"
        hide = "".join(f"section#{s}{{display:none}}" for s in sections if s != sec)
        page.write_text(html.replace("</head>", f"<style>{hide} h1,.meta:first-of-type{{}}</style></head>"))
        shot = out / f"{sec}.png"
        p = subprocess.run([exe, *FLAGS, "--window-size=1400,2400", f"--screenshot={shot}", page.as_uri()],
                           capture_output=True, text=True, timeout=180)
        assert p.returncode == 0 and shot.exists(), p.stderr[-2000:]
        img = mpimg.imread(shot)
        assert img.shape[1] == 1400 and np.std(img[..., :3]) > 0.05, f"{sec}: blank screenshot"
        page.unlink()
