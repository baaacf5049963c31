"""The documentation cannot drift: every README / docs code block that shows output is executed and compared.

Two kinds of block are executed (any other fence, e.g. ``bash`` or ``python``, is only shown):

* ``console``: lines starting with ``$ `` are shell commands (a trailing ``\\`` continues a command on the next line);
  the lines up to the next ``$ `` are the expected standard output (progress lines and notes on stderr are not
  compared: they carry timings). The commands of one file run in order in one scratch folder, so a block may use a
  file an earlier block wrote.
* ``pycon``: a Python session (``>>> `` / ``... ``) run with :mod:`doctest`; the blocks of one file share names.

Comparison: trailing blanks are ignored, and a line holding only ``...`` matches any number of lines (doctest's
ELLIPSIS, which also works inside a line). A console command must exit 0 unless the block ends the command with
``# exit N``.
"""

from __future__ import annotations

import doctest
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# slow (make check leaves it out): a subprocess per documented command
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]
FENCE = re.compile(r"^```(\w+)[^\n]*\n(.*?)^```\s*$", re.S | re.M)


def blocks(path: Path, kind: str) -> list[tuple[int, str]]:
    text = path.read_text()
    return [(text[: m.start()].count("\n") + 1, m.group(2)) for m in FENCE.finditer(text) if m.group(1) == kind]


def console_steps(body: str) -> list[tuple[str, str, int]]:
    """(command, expected output, expected exit code) for each ``$`` line of a console block."""
    steps: list[tuple[str, list[str], int]] = []
    lines = body.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("$ "):
            cmd = line[2:]
            while cmd.endswith("\\") and i + 1 < len(lines):
                i += 1
                cmd = cmd[:-1] + " " + lines[i].strip()
            code = 0
            m = re.search(r"\s+#\s*exit\s+(\d+)\s*$", cmd)
            if m:
                code, cmd = int(m.group(1)), cmd[: m.start()]
            steps.append((cmd, [], code))
        elif steps:
            steps[-1][1].append(line)
        i += 1
    return [(c, "\n".join(out).rstrip() + "\n" if out else "", code) for c, out, code in steps]


def _checker_matches(expected: str, got: str) -> bool:
    norm = "\n".join(line.rstrip() for line in got.splitlines()).strip("\n") + "\n"
    want = "\n".join(line.rstrip() for line in expected.splitlines()).strip("\n") + "\n"
    return doctest.OutputChecker().check_output(want, norm, doctest.ELLIPSIS)


CONSOLE = [p for p in FILES if blocks(p, "console")]
PYCON = [p for p in FILES if blocks(p, "pycon")]


def _env(tmp: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    # the run's shared fit cache (conftest.py): a fit the docs show is made once per run, not once per page
    env.update(CI="true", COLUMNS="200", NO_COLOR="1", TERM="dumb",
               ASSAY_CACHE_DIR=os.environ.get("ASSAY_CACHE_DIR") or str(tmp / ".cache"),
               ASSAY_JOURNAL=str(tmp / "journal.sqlite"), MPLBACKEND="Agg", PYTHONWARNINGS="ignore")
    env.pop("FORCE_COLOR", None)
    return env


def test_docs_have_executed_examples():
    assert CONSOLE, "no console blocks found: the docs show no checked output"
    names = {p.name for p in CONSOLE}
    for page in ("README.md", "siren.md", "autoeval.md", "psdme.md", "faq.md", "quickscope.md"):
        assert page in names, f"{page} has no executed console example"


@pytest.mark.parametrize("path", CONSOLE, ids=[str(p.relative_to(ROOT)) for p in CONSOLE])
def test_console_blocks(path, tmp_path):
    """All console blocks of one file, in order, in one scratch folder (a later block may use an earlier one's files)."""
    env = _env(tmp_path)
    for line, body in blocks(path, "console"):
        for cmd, expected, code in console_steps(body):
            r = subprocess.run(cmd, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
            got = r.stdout
            assert r.returncode == code, (f"{path.name}:{line}: `{cmd}` exited {r.returncode}, the docs say {code}:\n"
                                          f"{got}\n{r.stderr[-3000:]}")
            if expected:
                assert _checker_matches(expected, got), (
                    f"{path.name}:{line}: `{cmd}` printed\n{got}\nbut the docs show\n{expected}")


@pytest.mark.parametrize("path", PYCON, ids=[str(p.relative_to(ROOT)) for p in PYCON])
def test_pycon_blocks(path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ASSAY_CACHE_DIR", os.environ.get("ASSAY_CACHE_DIR") or str(tmp_path / ".cache"))
    monkeypatch.setenv("CI", "true")
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    globs: dict = {}
    for line, body in blocks(path, "pycon"):
        test = parser.get_doctest(body, globs, f"{path.name}:{line}", str(path), line)
        runner.run(test, clear_globs=False)
    res = runner.summarize(verbose=False)
    assert res.failed == 0, f"{res.failed} example(s) in {path.name} differ from what they print (see above)"


def test_mkdocs_builds_strict(tmp_path):
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent))
    if mkdocs is None:
        pytest.fail("mkdocs is not installed: `make test` installs it with the test extra")
    r = subprocess.run([mkdocs, "build", "--strict", "--site-dir", str(tmp_path / "site")], cwd=ROOT,
                       capture_output=True, text=True, timeout=600, env={**os.environ, "CI": "true", "NO_MKDOCS_2_WARNING": "1"})
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    for page in ("index.html", "siren/index.html", "architecture/index.html", "api/index.html"):
        assert (tmp_path / "site" / page).exists(), f"{page} was not built"
