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

Each command line runs in a shell as written. The ``assay`` it finds first on PATH hands its arguments, environment,
working folder and standard streams to a server process (:data:`_SERVER`, one per test process) that has loaded the
third-party libraries the commands use (NumPy, pandas, SciPy, Typer: about 1.2 s of every command's 1.5 s when each
started a fresh interpreter); the server forks a child for the command, which runs the console script's ``main()``
with them, loading assay's own modules itself, and its exit code becomes the shim's.
"""

from __future__ import annotations

import doctest
import os
import re
import shutil
import subprocess
import sys
import tempfile
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


#: the fork server: loads :data:`PRELOAD`, then for each connection forks a child that receives the caller's
#: stdin, stdout and stderr (SCM_RIGHTS) with its argv, working folder and environment, runs the console script's
#: ``main()`` as `.venv/bin/assay` would (SystemExit and uncaught exceptions as the interpreter treats them, then the
#: atexit handlers), and sends back the exit code
_SERVER = r"""
import atexit, json, os, signal, socket, struct, sys, threading

PRELOAD = {preload!r}
SCRIPT = {script!r}


def child(conn):
    code = 70
    try:
        data, fds, _, _ = socket.recv_fds(conn, 1 << 16, 3)
        while len(data) < 4 or len(data) < 4 + struct.unpack("!I", data[:4])[0]:
            more = conn.recv(1 << 16)
            if not more:
                raise EOFError("the shim hung up")
            data += more
        msg = json.loads(data[4:])
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(msg["cwd"])
        os.environ.clear()
        os.environ.update(msg["env"])
        sys.argv = [SCRIPT, *msg["argv"]]
        sys.path[0] = os.path.dirname(SCRIPT)
        try:
            from assay.cli import main

            code = main()
        except SystemExit as e:
            code = e.code
        except BaseException:
            sys.excepthook(*sys.exc_info())
            code = 1
        if code is None:
            code = 0
        elif not isinstance(code, int):
            print(code, file=sys.stderr)
            code = 1
        threading._shutdown()
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        try:
            conn.sendall(struct.pack("!i", code & 0xFF))
        finally:
            os._exit(code & 0xFF)


if __name__ == "__main__":
    try:  # killed with the test process that started it, whatever way that one ends
        import ctypes

        ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass
    for name in PRELOAD:
        __import__(name)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(sys.argv[1])
    srv.listen(64)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while True:
        conn, _ = srv.accept()
        if os.fork() == 0:
            srv.close()
            child(conn)
        conn.close()
"""

#: what ``assay`` is on the commands' PATH: sends its argv, working folder and environment with its three standard
#: streams to the server, waits for the command's exit code and exits with it
_SHIM = r"""#!{python} -IS
import json, os, socket, struct, sys

s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect({address!r})
body = json.dumps({{"argv": sys.argv[1:], "cwd": os.getcwd(), "env": dict(os.environ)}}).encode()
socket.send_fds(s, [struct.pack("!I", len(body))], [0, 1, 2])
s.sendall(body)
reply = b""
while len(reply) < 4:
    chunk = s.recv(4 - len(reply))
    if not chunk:
        sys.stderr.write("assay (docs test shim): the command's process ended without an exit code\n")
        sys.exit(70)
    reply += chunk
sys.exit(struct.unpack("!i", reply)[0])
"""

#: the third-party modules the documented commands load (measured with -X importtime); anything else, assay's own
#: modules included, each command loads itself
PRELOAD = ("numpy", "pandas", "pyarrow.parquet", "pyarrow.dataset", "scipy.stats", "scipy.special", "scipy.optimize",
           "scipy.integrate", "sklearn.ensemble", "typer", "typer.rich_utils", "rich.console", "rich.table", "pydantic")


@pytest.fixture(scope="module")
def assay_server():
    """The folder holding the ``assay`` shim, with its server running; stopped with the module."""
    folder = Path(tempfile.mkdtemp(prefix="assay-docs-", dir="/tmp"))  # short: a socket's path has 107 bytes at most
    address = str(folder / "server.sock")
    script = str(Path(sys.executable).parent / "assay")
    (folder / "server.py").write_text(_SERVER.format(preload=PRELOAD, script=script))
    shim = folder / "bin" / "assay"
    shim.parent.mkdir()
    shim.write_text(_SHIM.format(python=sys.executable, address=address))
    shim.chmod(0o755)
    with open(folder / "server.log", "wb") as log:
        proc = subprocess.Popen([sys.executable, str(folder / "server.py"), address], env=_env(folder),
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log)
    try:
        line = proc.stdout.readline()  # "ready", or nothing when the server died
        assert line == b"ready\n", f"the docs' assay server did not start:\n{(folder / 'server.log').read_text()}"
        yield shim.parent
    finally:
        proc.kill()
        proc.wait(timeout=30)
        proc.stdout.close()
        shutil.rmtree(folder, ignore_errors=True)


def _env(tmp: Path, shims: Path | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    if shims is not None:
        env["PATH"] = str(shims) + os.pathsep + env["PATH"]
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


@pytest.mark.xdist_group("docs")  # one worker, one server: it takes about 1.2 s to start
@pytest.mark.parametrize("path", CONSOLE, ids=[str(p.relative_to(ROOT)) for p in CONSOLE])
def test_console_blocks(path, tmp_path, assay_server):
    """All console blocks of one file, in order, in one scratch folder (a later block may use an earlier one's files)."""
    env = _env(tmp_path, assay_server)
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
