"""A real HTTP server on 127.0.0.1 that speaks the OpenAI chat-completions wire protocol.

Answers follow a deterministic rule (:func:`answer_for`): "What is A + B?" -> "The answer is \\boxed{A+B}"
(the sum computed), anything else -> "echo: <prompt>". Failure modes can be scheduled per prompt
(``server.plan(prompt, ["429", "503", ...])``) or for the next requests whatever their prompt
(``server.plan_next([...])``):

``"ok"``        a normal answer
``"429"``       429 with ``Retry-After: <server.retry_after>`` (seconds) and an OpenAI error body
``"503"``/``"500"``  server errors
``"400"``       a permanent error
``"401echo"``   401 whose message echoes the Authorization header (to test that clients scrub it)
``"malformed"`` 200 with ``Content-Type: application/json`` and a body that is not JSON
``"noshape"``   200 with JSON that is not a completion (no choices)
``"slow"``      sleeps ``server.slow_s`` seconds (past the client timeout), then answers
``"drop"``      closes the socket without any response

``server.delay_s`` delays every answer. The server counts requests per prompt (``counts``), the
requests in flight and their maximum (``max_in_flight``), and records the Authorization headers it
saw, and the last request body (``last_body``). ``POST /v1/completions`` (a ``prompt``, the answer as ``text``)
is served like the chat path. Everything is bounded: sleeps wake up when the server stops, the server thread is a
daemon, and :meth:`FakeOpenAIServer.__exit__` always shuts it down. Loopback only.
"""

from __future__ import annotations

import collections
import json
import re
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["FakeOpenAIServer", "answer_for", "question", "is_correct"]

_Q = re.compile(r"What is (-?\d+) \+ (-?\d+)\?")
_A = re.compile(r"\\boxed\{(-?\d+)\}")


def question(a: int, b: int) -> str:
    return f"What is {a} + {b}?"


def answer_for(prompt: str) -> str:
    m = _Q.search(prompt)
    if m:
        return f"The answer is \\boxed{{{int(m.group(1)) + int(m.group(2))}}}"
    return f"echo: {prompt}"


def is_correct(prompt: str, text: str | None) -> bool:
    """Score an answer against the rule (the grader the tests use)."""
    m, a = _Q.search(prompt), _A.search(text or "")
    return bool(m and a and int(a.group(1)) == int(m.group(1)) + int(m.group(2)))


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 1024
    allow_reuse_address = True


class FakeOpenAIServer:
    """Context manager: ``with FakeOpenAIServer() as srv: ... srv.base_url ...``."""

    def __init__(self, *, delay_s: float = 0.0, slow_s: float = 2.0, retry_after: float | str = 1) -> None:
        self.delay_s = delay_s
        self.slow_s = slow_s
        self.retry_after = retry_after
        self.counts: collections.Counter[str] = collections.Counter()
        self.modes_served: list[str] = []
        self.auth_headers: set[str] = set()
        self.last_body: dict | None = None
        self.in_flight = 0
        self.max_in_flight = 0
        self.total = 0
        self._plans: dict[str, collections.deque] = {}
        self._next: collections.deque = collections.deque()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- control -----------------------------------------------------------------------------
    def plan(self, prompt: str, modes) -> None:
        with self._lock:
            self._plans.setdefault(prompt, collections.deque()).extend(modes)

    def plan_next(self, modes) -> None:
        with self._lock:
            self._next.extend(modes)

    def reset_counts(self) -> None:
        with self._lock:
            self.counts.clear()
            self.max_in_flight = 0
            self.total = 0
            self.modes_served.clear()

    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    # -- lifecycle ---------------------------------------------------------------------------
    def __enter__(self) -> "FakeOpenAIServer":
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out in separate writes: avoid 40 ms stalls

            def log_message(self, *args):  # keep test output quiet
                pass

            def do_POST(self):
                owner._handle(self)

            def do_GET(self):
                self._send(404, {"error": {"message": "not found"}})

            def _send(self, status, obj, headers=None):
                body = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for k, v in (headers or {}).items():
                    self.send_header(k, str(v))
                self.end_headers()
                self.wfile.write(body)

        self._httpd = _Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True, name="fake-openai-server")
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._httpd is not None:
            try:
                self._httpd.shutdown()
            finally:
                self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    # -- one request ---------------------------------------------------------------------------
    def _handle(self, h) -> None:
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            self._respond(h)
        finally:
            with self._lock:
                self.in_flight -= 1

    def _respond(self, h) -> None:
        length = int(h.headers.get("Content-Length") or 0)
        raw = h.rfile.read(length) if length else b""
        auth = h.headers.get("Authorization")
        path = h.path.rstrip("/")
        if path not in ("/v1/chat/completions", "/v1/completions"):
            h._send(404, {"error": {"message": f"unknown path {h.path}"}})
            return
        chat = path == "/v1/chat/completions"
        try:
            req = json.loads(raw)
            if chat:
                messages = req["messages"]
                prompt = next((m["content"] for m in reversed(messages) if m.get("role") == "user"), "")
            else:
                messages = [{"content": req["prompt"]}]
                prompt = str(req["prompt"])
        except (ValueError, KeyError, TypeError):
            h._send(400, {"error": {"message": "bad request body", "type": "invalid_request_error"}})
            return
        with self._lock:
            self.last_body = req
            if auth:
                self.auth_headers.add(auth)
            self.counts[prompt] += 1
            self.total += 1
            plan = self._plans.get(prompt)
            if plan:
                mode = plan.popleft()
            elif self._next:
                mode = self._next.popleft()
            else:
                mode = "ok"
            self.modes_served.append(mode)

        if self.delay_s:
            self._stop.wait(self.delay_s)
        if mode == "429":
            h._send(429, {"error": {"message": "Rate limit reached", "type": "rate_limit_error"}},
                    {"Retry-After": self.retry_after})
        elif mode in ("500", "503", "400"):
            h._send(int(mode), {"error": {"message": f"error {mode}", "type": "server_error"}})
        elif mode == "401echo":
            h._send(401, {"error": {"message": f"Incorrect API key provided: {auth}", "type": "auth_error"}})
        elif mode == "malformed":
            h._send(200, b'{"id": "chatcmpl-x", "choices": [ this is not json')
        elif mode == "noshape":
            h._send(200, {"id": "chatcmpl-x", "object": "chat.completion", "choices": []})
        elif mode == "drop":
            h.close_connection = True
            try:
                h.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        else:
            if mode == "slow":
                self._stop.wait(self.slow_s)
            text = answer_for(prompt)
            pt = sum(len(str(m.get("content", "")).split()) for m in messages)
            ct = len(text.split())
            try:
                choice = ({"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop",
                           "logprobs": None} if chat else {"index": 0, "text": text, "finish_reason": "stop"})
                h._send(200, {
                    "id": f"chatcmpl-{self.total}", "object": "chat.completion" if chat else "text_completion",
                    "created": int(time.time()), "model": req.get("model", "fake"), "choices": [choice],
                    "usage": {"prompt_tokens": pt, "completion_tokens": ct, "total_tokens": pt + ct},
                })
            except OSError:  # the client gave up (timeout) and closed the socket
                h.close_connection = True
