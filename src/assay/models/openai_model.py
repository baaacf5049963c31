"""An OpenAI-compatible chat-completions endpoint through the official ``openai`` SDK.

Works against OpenAI, vLLM (``http://localhost:8000/v1``), Ollama (``http://localhost:11434/v1``),
llama.cpp ``llama-server``, a LiteLLM proxy: anything that speaks ``POST /v1/chat/completions``.

The SDK's own retries are switched off (``max_retries=0``): :mod:`assay.models.runner` owns
retries, backoff and concurrency, so they are counted, journaled and configurable in one place.

The API key is read from an environment variable (``api_key_env``) when the model is built. It
never appears in ``repr``, in ``params()`` (hence never in a journal key or record), in logs, or in
error messages (they are scrubbed).
"""

from __future__ import annotations

import asyncio
import email.utils
import ipaddress
import math
import os
import threading
import time
from typing import Any, Mapping, Sequence
from urllib.parse import urlsplit

from ..errors import AssayInputError
from .base import Prompt, Response, RetryableError
from .outcomes import REFUSED, TOO_LONG, TRANSPORT, is_context_length

__all__ = ["OpenAIChatModel", "OpenAICompletionModel", "parse_retry_after", "list_models"]

OPENAI_BASE_URL = "https://api.openai.com/v1"
#: Key sent to local servers (vLLM, Ollama, llama.cpp) that do not check it; the SDK needs one.
DUMMY_KEY = "EMPTY"
RETRYABLE_STATUS = frozenset({408, 409, 429})

_TLS_CONTEXT = None
_TLS_LOCK = threading.Lock()


def _tls_context():
    """The TLS context every client of this process shares: the one the SDK's HTTP client would build for itself
    (its library's default, which honours ``SSL_CERT_FILE`` / ``SSL_CERT_DIR``), built once. Building it loads the
    CA bundle, and a client is made per event loop: FAQ asks each question on a loop of its own, so building it per
    client would load the bundle once per question."""
    global _TLS_CONTEXT
    with _TLS_LOCK:
        if _TLS_CONTEXT is None:
            try:
                from httpx2 import create_ssl_context
            except ImportError:  # an SDK built on httpx
                from httpx import create_ssl_context
            _TLS_CONTEXT = create_ssl_context()
        return _TLS_CONTEXT


class _Secret:
    """Holds a secret string; its repr never shows it."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def get(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "'***'"

    __str__ = __repr__

    def __reduce__(self):  # never pickle a secret into a worker or a file
        raise TypeError("secrets are not picklable; the key is read from the environment in each process")


def parse_retry_after(headers: Mapping[str, str] | None, now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms``, or ``Retry-After`` as delta-seconds or an HTTP-date.

    Parameters
    ----------
    headers : Mapping of str to str or None
        The response headers (lower-case names are looked up).
    now : float or None, optional
        The current time in seconds since the epoch, for an HTTP-date (default: ``time.time()``).

    Returns
    -------
    float or None
        The seconds to wait (at least 0), or ``None`` when the headers give no usable value.

    Examples
    --------
    >>> parse_retry_after({"retry-after-ms": "1500"}), parse_retry_after({"retry-after": "7"})
    (1.5, 7.0)
    >>> parse_retry_after({"retry-after": "Thu, 01 Jan 1970 00:01:40 GMT"}, now=40.0)
    60.0
    """
    if not headers:
        return None
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            v = float(ms) / 1000.0
            if math.isfinite(v) and v >= 0:
                return v
    except (TypeError, ValueError):
        pass
    raw = headers.get("retry-after")
    if raw is None:
        return None
    raw = str(raw).strip()
    try:
        v = float(raw)
        return v if math.isfinite(v) and v >= 0 else None
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    now = time.time() if now is None else now
    return max(0.0, when.timestamp() - now)


def _error_text(exc) -> str:
    """The server's own error message: ``exc.message`` of the SDK, else the body's ``error.message`` / ``detail``."""
    body = getattr(exc, "body", None)
    if isinstance(body, Mapping):
        err = body.get("error", body)
        if isinstance(err, Mapping) and isinstance(err.get("message"), str):
            return err["message"]
        if isinstance(body.get("detail"), str):
            return body["detail"]
    return str(getattr(exc, "message", "") or exc)


def _connection_words(exc: BaseException, base_url: str) -> str:
    """Tell a server that is not there (refused: not running, or died) from one that dropped the request."""
    cause = exc.__cause__ or exc.__context__
    name = type(cause).__name__ if cause is not None else ""
    text = f"{name}: {cause}" if cause is not None else str(exc)
    low = text.lower()
    if name == "ConnectError" or "refused" in low or "connect call failed" in low:
        return (f"connection refused at {base_url}: nothing is listening (the server is not running, or it died); "
                f"{text}")
    if name in ("RemoteProtocolError", "ReadError", "WriteError") or "disconnected" in low or "reset" in low:
        return (f"the server at {base_url} closed the connection without an answer (it may have crashed); {text}")
    return f"connection error: {text}"


def _is_local(base_url: str) -> bool:
    host = (urlsplit(base_url).hostname or "").lower()
    if host in ("localhost", "") or host.endswith(".localhost") or host.endswith(".local"):
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    return ip.is_loopback or ip.is_private or ip.is_unspecified or ip.is_link_local


def _is_openai(base_url: str) -> bool:
    host = (urlsplit(base_url).hostname or "").lower()
    return host == "openai.com" or host.endswith(".openai.com")


def _first_choice(out: Any) -> Mapping:
    """The first choice of a completions reply's JSON, or ``malformed`` (retried) when the reply has none."""
    choices = out.get("choices") if isinstance(out, Mapping) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        raise RetryableError(None, None, f"malformed response: no choices in {str(out)[:200]!r}")
    return choices[0]


def _text_field(obj: Mapping, name: str) -> str | None:
    """A text field of a reply: a string, or ``None`` when absent or null; any other JSON there is ``malformed``."""
    v = obj.get(name)
    if v is None or isinstance(v, str):
        return v
    raise RetryableError(None, None, f"malformed response: {name} is {type(v).__name__}, not text: {str(v)[:200]!r}")


def _usage(out: Mapping) -> dict[str, int | None]:
    """``prompt_tokens`` and ``completion_tokens`` of a reply's ``usage`` (``None`` where absent or not a count)."""
    usage = out.get("usage")
    usage = usage if isinstance(usage, Mapping) else {}
    return {k: (v if isinstance(v := usage.get(k), int) and not isinstance(v, bool) else None)
            for k in ("prompt_tokens", "completion_tokens")}


def _finish_reason(choice: Mapping) -> str | None:
    v = choice.get("finish_reason")
    return v if isinstance(v, str) else None


class OpenAIChatModel:
    """A chat-completions model behind an OpenAI-compatible endpoint.

    Parameters
    ----------
    model : model name as the server knows it (e.g. ``"gpt-4o-mini"``, ``"meta-llama/Llama-3.1-8B-Instruct"``).
    base_url : endpoint root ending in ``/v1``; default ``$OPENAI_BASE_URL`` or ``https://api.openai.com/v1``.
    api_key_env : name of the environment variable holding the key (default ``OPENAI_API_KEY``).
        If it is unset, local/private endpoints get a dummy key; ``api.openai.com`` raises
        :class:`~assay.errors.AssayInputError`. ``None`` means the endpoint needs no key.
    temperature, max_tokens, seed, stop : sampling parameters sent with every request.
    extra_body : extra JSON fields merged into the request body (vLLM: ``top_k``, ``min_p``,
        ``repetition_penalty``, guided decoding...).
    timeout : per-request timeout in seconds (the SDK's HTTP timeout).
    system_prompt : prepended as a system message when a prompt is a plain string.
    stream : stream the answer (default False) to measure the time to the first token (``Response.ttft_s``) as
        well as the total time; the answer is the same either way, so it is not part of the journal key.
    context_window : the model's context window in tokens, when known. Before each request the prompt's tokens are
        counted with the server's tokenizer (llama-cpp-python ``/extras/tokenize/count``, vLLM and llama.cpp
        ``/tokenize``); a prompt whose message text alone plus ``max_tokens`` exceeds the window is answered
        ``too_long`` without being sent (the chat template only adds tokens, so this never refuses a prompt that
        fits). Without a tokenize endpoint nothing is checked before sending, and the server's own context-length
        reply still gives ``too_long``.
    """

    def __init__(self, model: str, *, base_url: str | None = None, api_key_env: str | None = "OPENAI_API_KEY",
                 temperature: float | None = 0.0, max_tokens: int | None = None, seed: int | None = None,
                 stop: str | Sequence[str] | None = None, extra_body: Mapping[str, Any] | None = None,
                 timeout: float = 60.0, system_prompt: str | None = None, stream: bool = False,
                 context_window: int | None = None) -> None:
        if not isinstance(model, str) or not model:
            raise AssayInputError(f"model must be a non-empty model name, got {model!r}")
        if timeout is not None and not (isinstance(timeout, (int, float)) and timeout > 0):
            raise AssayInputError(f"timeout must be a positive number of seconds, got {timeout!r}")
        if max_tokens is not None and (not isinstance(max_tokens, int) or max_tokens < 1):
            raise AssayInputError(f"max_tokens must be a positive integer or None, got {max_tokens!r}")
        from .secrets import redact_url, register_secret

        self.name = model
        raw = (base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_BASE_URL).rstrip("/")
        parts = urlsplit(raw)
        # credentials inside the URL (user:KEY@host, ?api-key=KEY) are secrets like the API key: registered for
        # masking everywhere, and only the client ever sees the raw URL; base_url (hashed, stored, printed) is clean
        if parts.password:
            register_secret(parts.password)
        if parts.username and parts.password is None:
            register_secret(parts.username)
        from urllib.parse import parse_qsl

        clean = redact_url(raw)
        for (name, value), (_, cvalue) in zip(parse_qsl(parts.query, keep_blank_values=True),
                                              parse_qsl(urlsplit(clean).query, keep_blank_values=True)):
            if value != cvalue:
                register_secret(value)
        self._raw_url = raw
        self.base_url = clean
        if parts.scheme not in ("http", "https"):
            raise AssayInputError(f"base_url must start with http:// or https://, got {self.base_url!r}")
        self.api_key_env = api_key_env
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.seed = seed
        self.stop = [stop] if isinstance(stop, str) else (list(stop) if stop is not None else None)
        self.extra_body = dict(extra_body) if extra_body else None
        self.timeout = float(timeout) if timeout is not None else None
        self.system_prompt = system_prompt
        self.stream = bool(stream)
        if context_window is not None and (isinstance(context_window, bool) or not isinstance(context_window, int)
                                           or context_window < 1):
            raise AssayInputError(f"context_window must be a positive number of tokens or None, got {context_window!r}")
        self.context_window = context_window
        self._tokenize_path: str | None | bool = None  # None: not probed yet; False: the server has none

        key = os.environ.get(api_key_env) if api_key_env else None
        if not key:
            if _is_openai(self.base_url):
                raise AssayInputError(
                    f"no API key for {self.base_url}: set the environment variable {api_key_env or 'OPENAI_API_KEY'}"
                    " (assay reads the key only from the environment)")
            key = DUMMY_KEY
        if key != DUMMY_KEY:
            register_secret(key)  # masked everywhere, whatever the variable holding it is called
        self._key = _Secret(key)
        self._clients: dict[int, Any] = {}  # one AsyncOpenAI per event loop (httpx pools are loop-bound)

    # -- the Model interface ------------------------------------------------------------------
    def params(self) -> dict[str, Any]:
        """Everything that defines the answer (for the journal key); never the key."""
        out = {"base_url": self.base_url, "temperature": self.temperature, "max_tokens": self.max_tokens,
               "seed": self.seed, "stop": self.stop, "extra_body": self.extra_body,
               "system_prompt": self.system_prompt}
        if self.context_window is not None:  # a known window can answer too_long before sending
            out["context_window"] = self.context_window
        return out

    # -- a prompt over a known context window, found before sending ------------------------------------------------

    def _side_request(self, path: str, *, root: bool = False, body: Any = None):
        """A ``urllib`` request to ``path`` under the base URL (or, with ``root``, under the server's root), with the
        base URL's query string and credentials carried as the SDK carries them (``user:pass@`` as basic auth,
        else the API key as a bearer token)."""
        import base64
        import json as _json
        import urllib.request
        from urllib.parse import urlsplit, urlunsplit

        parts = urlsplit(self._raw_url)
        base = parts.path.rstrip("/")
        if root and base.endswith("/v1"):
            base = base[:-3]
        netloc = parts.hostname or ""
        if ":" in netloc:
            netloc = f"[{netloc}]"
        if parts.port:
            netloc += f":{parts.port}"
        url = urlunsplit((parts.scheme, netloc, base + path, parts.query, ""))
        headers = {"Authorization": f"Bearer {self._key.get()}"}
        if parts.username is not None:
            cred = f"{parts.username}:{parts.password or ''}".encode()
            headers["Authorization"] = "Basic " + base64.b64encode(cred).decode()
        data = None
        if body is not None:
            data = _json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        return urllib.request.Request(url, data=data, headers=headers)

    def _count_tokens(self, text: str) -> int | None:
        """Tokens of ``text`` by the server's tokenizer, or ``None`` when the server has no tokenize endpoint."""
        import json as _json
        import urllib.error
        import urllib.request

        candidates = [self._tokenize_path] if isinstance(self._tokenize_path, str) else [
            "/extras/tokenize/count", "/tokenize"]
        if self._tokenize_path is False:
            return None
        for path in candidates:
            body = ({"input": text} if path.startswith("/extras") else
                    {"model": self.name, "prompt": text, "content": text})
            req = self._side_request(path, root=True, body=body)
            try:
                with urllib.request.urlopen(req, timeout=self.timeout or 30) as r:
                    out = _json.loads(r.read())
            except (urllib.error.URLError, OSError, ValueError):
                continue
            n = out.get("count") if isinstance(out, Mapping) else None
            if n is None and isinstance(out, Mapping) and isinstance(out.get("tokens"), list):
                n = len(out["tokens"])
            if isinstance(n, int):
                self._tokenize_path = path
                return n
        self._tokenize_path = False
        return None

    async def _over_window(self, texts: list[str]) -> Response | None:
        if self.context_window is None or self._tokenize_path is False:
            return None
        n = await asyncio.to_thread(self._count_tokens, "\n".join(texts))
        if n is None or n + (self.max_tokens or 0) <= self.context_window:
            return None
        return Response(text=None, latency_s=0.0, outcome=TOO_LONG,
                        detail=f"found before sending: the prompt has at least {n} tokens and {self.max_tokens or 0} "
                               f"more are asked for the answer, over the context window of {self.context_window}")

    def messages(self, prompt: Prompt) -> list[dict[str, Any]]:
        if isinstance(prompt, str):
            msgs = [{"role": "user", "content": prompt}]
            if self.system_prompt:
                msgs.insert(0, {"role": "system", "content": self.system_prompt})
            return msgs
        if isinstance(prompt, (list, tuple)) and all(isinstance(m, Mapping) and "role" in m for m in prompt):
            return [dict(m) for m in prompt]
        raise AssayInputError(
            f"a prompt must be a string or a list of chat messages {{'role': ..., 'content': ...}}, got {prompt!r:.200}")

    def _client(self):
        import openai

        loop = asyncio.get_running_loop()
        client = self._clients.get(id(loop))
        if client is None:
            # a loop id can be reused after the old loop is gone; drop clients of dead loops
            self._clients = {k: c for k, c in self._clients.items() if k == id(loop)}
            client = openai.AsyncOpenAI(base_url=self._raw_url, api_key=self._key.get(), max_retries=0,
                                        timeout=self.timeout,
                                        http_client=openai.DefaultAsyncHttpxClient(verify=_tls_context()))
            self._clients[id(loop)] = client
        return client

    async def aclose(self) -> None:
        """Close the HTTP client of the running event loop (``run()`` does this for you)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        client = self._clients.pop(id(loop), None)
        if client is not None:
            await client.close()

    async def generate(self, prompt: Prompt) -> Response:
        kwargs: dict[str, Any] = {"model": self.name, "messages": self.messages(prompt)}
        early = await self._over_window([str(m.get("content", "")) for m in kwargs["messages"]])
        if early is not None:
            return early
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        if self.max_tokens is not None:
            kwargs["max_tokens"] = self.max_tokens
        if self.seed is not None:
            kwargs["seed"] = self.seed
        if self.stop is not None:
            kwargs["stop"] = self.stop
        client = self._client()
        t0 = time.perf_counter()
        if self.stream:
            if self.extra_body:
                kwargs["extra_body"] = dict(self.extra_body)
            return await self._request(lambda: self._streamed(client, kwargs, t0), t0)
        out = await self._request(lambda: self._post(client, "/chat/completions", kwargs), t0)
        return out if isinstance(out, Response) else self._to_response(out, time.perf_counter() - t0)

    async def _post(self, client, path: str, body: dict[str, Any]) -> Any:
        """POST ``body`` (with ``extra_body`` merged over it, as the SDK merges it) to ``path`` through the SDK's
        client, and the reply's JSON as plain Python objects.

        The SDK's own ``create`` would check the parameters against its typed schema and build a pydantic object of
        the reply: with a fast local server that is a large share of this process's CPU per request, and the runner
        is CPU-bound there (``python bench/query.py``, its ``raw`` and ``raw_post`` CPU columns). Everything else is
        the SDK's: the URL, the headers and the key, the timeout, and its exceptions for a timeout, a connection
        error or an HTTP error status. A reply that is not JSON raises ``ValueError`` (``malformed`` in
        :meth:`_request`)."""
        import json as _json

        if self.extra_body:
            body = {**body, **self.extra_body}
        return _json.loads(await client.post(path, cast_to=str, body=body))

    async def _request(self, send: Any, t0: float) -> Any:
        """Await ``send()`` and turn the SDK's failures into assay's: :class:`RetryableError` for a timeout, a dropped
        or refused connection, 408/409/429/5xx and a malformed body; a :class:`Response` for any other HTTP error
        reply (``too_long`` for a context-length 400, else a permanent ``transport`` error)."""
        import openai

        try:
            return await send()
        except openai.APITimeoutError:
            raise RetryableError(None, None, f"timed out: no answer within {self.timeout} s (the server is slow, "
                                             "overloaded or stuck)", timed_out=True) from None
        except openai.APIConnectionError as exc:
            raise RetryableError(None, None, self._scrub(_connection_words(exc, self.base_url))) from None
        except openai.APIStatusError as exc:
            return self._status_error(exc, t0)
        except (openai.APIResponseValidationError, ValueError) as exc:  # malformed JSON / schema
            raise RetryableError(None, None, self._scrub(f"malformed response: {type(exc).__name__}: {exc}")[:500]) \
                from None

    async def _streamed(self, client, kwargs: dict, t0: float) -> Response:
        """One streamed request: the answer, its total time and its time to the first token (``ttft_s``)."""
        kwargs = {**kwargs, "stream": True, "stream_options": {"include_usage": True}}
        stream = await client.chat.completions.create(**kwargs)
        parts: list[str] = []
        ttft = finish = refusal = usage = None
        seen_choice = False
        async for chunk in stream:
            if getattr(chunk, "usage", None) is not None:
                usage = chunk.usage
            for choice in getattr(chunk, "choices", None) or []:
                seen_choice = True
                delta = getattr(choice, "delta", None)
                piece = getattr(delta, "content", None) if delta is not None else None
                if piece:
                    if ttft is None:
                        ttft = time.perf_counter() - t0
                    parts.append(piece)
                r = getattr(delta, "refusal", None) if delta is not None else None
                if r:
                    refusal = (refusal or "") + r
                if getattr(choice, "finish_reason", None):
                    finish = choice.finish_reason
        latency = time.perf_counter() - t0
        if not seen_choice:
            raise RetryableError(None, None, "malformed response: a stream without any choice")
        if finish is None and refusal is None:
            # every complete stream ends with a finish reason; without one the server closed it early, and the text
            # so far is not the answer (llama-cpp-python's server does this to all but one of concurrent streams)
            raise RetryableError(None, None, "the stream ended before the answer was complete (no finish reason): the "
                                             "server closed it early (llama-cpp-python's server serves one stream at a "
                                             "time; the runner then asks fewer at once)", slow_down=True)
        text = "".join(parts)
        return Response(text=None if (refusal and not text) else text, latency_s=latency, ttft_s=ttft,
                        prompt_tokens=getattr(usage, "prompt_tokens", None) if usage is not None else None,
                        completion_tokens=getattr(usage, "completion_tokens", None) if usage is not None else None,
                        finish_reason=finish, outcome=REFUSED if (refusal and not text) else None,
                        detail=f"refusal: {refusal}" if (refusal and not text) else None)

    def _status_error(self, exc, t0: float) -> Response:
        """An HTTP error reply: retried (408/409/429/5xx), the model's ``too_long`` (a context-length 400), or a
        permanent ``transport`` error (401, 404 unknown model, another 400) that is not retried."""
        status = exc.status_code
        msg = self._scrub(f"HTTP {status}: {_error_text(exc)}")
        if status in RETRYABLE_STATUS or status >= 500:
            raise RetryableError(status, parse_retry_after(exc.response.headers), msg) from None
        latency = time.perf_counter() - t0
        if is_context_length(status, msg):
            return Response(text=None, latency_s=latency, outcome=TOO_LONG, detail=msg[:500])
        if status == 404 and "model" in msg.lower():
            msg += f" (the server does not serve a model called {self.name!r}: `assay models --endpoint URL` lists them)"
        return Response(text=None, latency_s=latency, error=msg, outcome=TRANSPORT)

    # -- helpers --------------------------------------------------------------------------------
    def _to_response(self, out: Any, latency: float) -> Response:
        """A chat-completions reply (its JSON) as a :class:`Response`; a reply of another shape is ``malformed``."""
        choice = _first_choice(out)
        message = choice.get("message")
        if not isinstance(message, Mapping):
            raise RetryableError(None, None, "malformed response: choice without a message")
        text = _text_field(message, "content")
        refusal = message.get("refusal")
        refused = bool(refusal) and not text
        # a refusal is the model's answer on this item (outcome "refused"), journaled like any answer
        return Response(
            text=None if refused else (text if text is not None else ""),
            latency_s=latency, **_usage(out),
            finish_reason=_finish_reason(choice),
            outcome=REFUSED if refused else None,
            detail=f"refusal: {refusal}" if refused else None,
        )

    def _scrub(self, text: str) -> str:
        from .secrets import mask_secrets

        key = self._key.get()
        if key and key != DUMMY_KEY and len(key) >= 4:
            text = text.replace(key, "***")
        return mask_secrets(text)

    def __repr__(self) -> str:
        return (f"OpenAIChatModel(model={self.name!r}, base_url={self.base_url!r}, api_key_env={self.api_key_env!r}, "
                f"temperature={self.temperature!r}, max_tokens={self.max_tokens!r}, seed={self.seed!r})")

    def __getstate__(self):  # pickling drops the key and the clients; re-read from env on unpickle
        state = self.__dict__.copy()
        state.pop("_key", None)
        state["_clients"] = {}
        return state

    def __setstate__(self, state):
        from .secrets import register_secret

        self.__dict__.update(state)
        self.__dict__.setdefault("stream", False)
        self.__dict__.setdefault("context_window", None)
        self.__dict__.setdefault("_tokenize_path", None)
        if "_raw_url" not in state:
            self._raw_url = self.base_url
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        if key:
            register_secret(key)
        self._key = _Secret(key or DUMMY_KEY)


class OpenAICompletionModel(OpenAIChatModel):
    """A *completion* model behind an OpenAI-compatible ``POST /v1/completions`` endpoint: plain text in, the
    continuation out, no chat template.

    For pretrained (base) models, which through the chat endpoint echo the prompt or answer nothing (Gemma 3 270M,
    say): give them a prompt that the answer continues, e.g. a few-shot rubric ending in ``Verdict:``, and a ``stop``
    such as ``["\\n"]``. Same parameters, journal key, retries and outcomes as :class:`OpenAIChatModel`; a prompt must
    be a string (chat messages are refused), and ``system_prompt`` is prepended to it with a blank line.
    """

    def params(self) -> dict[str, Any]:
        return {**super().params(), "endpoint": "completions"}

    def messages(self, prompt: Prompt) -> list[dict[str, Any]]:  # pragma: no cover - not used for completions
        raise AssayInputError("a completion model takes a plain string prompt, not chat messages")

    def _text_prompt(self, prompt: Prompt) -> str:
        if not isinstance(prompt, str):
            raise AssayInputError(f"a completion model takes a plain string prompt, not {type(prompt).__name__} "
                                  "(use OpenAIChatModel for chat messages)")
        return f"{self.system_prompt}\n\n{prompt}" if self.system_prompt else prompt

    async def generate(self, prompt: Prompt) -> Response:
        kwargs: dict[str, Any] = {"model": self.name, "prompt": self._text_prompt(prompt)}
        early = await self._over_window([kwargs["prompt"]])
        if early is not None:
            return early
        for name in ("temperature", "max_tokens", "seed", "stop"):
            if getattr(self, name) is not None:
                kwargs[name] = getattr(self, name)
        client = self._client()
        t0 = time.perf_counter()
        out = await self._request(lambda: self._post(client, "/completions", kwargs), t0)
        if isinstance(out, Response):
            return out
        latency = time.perf_counter() - t0
        choice = _first_choice(out)
        return Response(text=_text_field(choice, "text") or "", latency_s=latency, **_usage(out),
                        finish_reason=_finish_reason(choice))

    def __repr__(self) -> str:
        return super().__repr__().replace("OpenAIChatModel(", "OpenAICompletionModel(", 1)


def list_models(model: OpenAIChatModel, timeout: float = 10.0) -> list[str] | None:
    """The model ids the endpoint serves (``GET {base_url}/models``), or ``None`` when it does not list them.

    ``None`` is returned for an OpenAI-style JSON error for that path: some proxies have no ``/models``.

    Raises :class:`~assay.errors.AssayBackendError` when nothing answers or the key is refused, and
    :class:`~assay.errors.AssayInputError` when what answers is not an OpenAI-compatible API (HTML, another JSON
    shape, a wrong base URL), naming the URL and what came back. Never prints the key.

    Parameters
    ----------
    model : OpenAIChatModel
        The model whose endpoint (``base_url`` and key) is asked.
    timeout : float, optional
        Seconds to wait for the answer (default 10).

    Returns
    -------
    list of str or None
        The model ids, or ``None``.

    Raises
    ------
    AssayBackendError
        When nothing answers or the key is refused (HTTP 401 / 403).
    AssayInputError
        When what answers is not an OpenAI-compatible API.
    """
    import json as _json
    import urllib.error
    import urllib.request

    from ..errors import AssayBackendError

    shown = model.base_url + "/models"
    req = model._side_request("/models")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            status, raw = resp.status, resp.read(1_000_000)
    except urllib.error.HTTPError as exc:
        status, raw = exc.code, exc.read(100_000)
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise AssayBackendError(model._scrub(f"nothing answers at {model.base_url} ({type(reason).__name__}: {reason}); "
                                             "is the server running, and is the port right?")) from None
    text = raw.decode("utf-8", "replace")
    try:
        body = _json.loads(text)
    except ValueError:
        body = None
    if status in (401, 403):
        raise AssayBackendError(f"the endpoint refused the API key (HTTP {status} on GET {shown}): set the "
                                f"environment variable named by api_key_env= ({model.api_key_env})")
    if status >= 400:
        if isinstance(body, Mapping) and ("error" in body or "detail" in body):
            return None  # an OpenAI-style API without /models: the model name cannot be checked
        raise AssayInputError(f"{model.base_url} is not an OpenAI-compatible endpoint: GET {shown} answered HTTP "
                              f"{status} with {text[:120]!r}. The base URL should end in /v1 (vLLM "
                              "http://host:8000/v1, Ollama http://host:11434/v1, llama.cpp http://host:8080/v1)")
    data = body.get("data") if isinstance(body, Mapping) else None
    if not isinstance(data, list) or not all(isinstance(m, Mapping) and isinstance(m.get("id"), str) for m in data):
        raise AssayInputError(f"{model.base_url} is not an OpenAI-compatible endpoint: GET {shown} answered "
                              f"{text[:120]!r}, not a model list {{'data': [{{'id': ...}}]}}. The base URL should "
                              "end in /v1")
    return [m["id"] for m in data]


def check_model(model: OpenAIChatModel, timeout: float = 10.0) -> None:
    """Before anything is paid: the endpoint answers like an OpenAI API and serves ``model.name``.

    A name the server does not list is refused with :class:`~assay.errors.AssayInputError` naming the models it does
    serve (Ollama's ``name`` for ``name:latest`` and a provider prefix ``org/name`` are accepted). llama.cpp's server
    answers to any name, so without this check a typo would silently evaluate whatever model it loaded.
    """
    served = list_models(model, timeout=timeout)
    if not served:
        return
    name = model.name
    if any(s == name or s == f"{name}:latest" or s.endswith("/" + name) for s in served):
        return
    shown = ", ".join(served[:20]) + (f" (and {len(served) - 20} more)" if len(served) > 20 else "")
    raise AssayInputError(f"the server at {model.base_url} does not serve a model called {name!r}; it serves: {shown}")
