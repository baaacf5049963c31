"""Secret hygiene: what assay stores, hashes or prints never holds a credential.

Three rules, applied to everything written to the journal, a log, a report or an error message:

* :func:`scrub` drops every mapping key named like a secret (``api_key``, ``authorization``, ``token``, ...; at any
  depth), so a key passed as a parameter never reaches a file and never changes a request's hash;
* :func:`mask_secrets` masks secret values inside text: values registered with :func:`register_secret` (a model
  registers the key it read), values of secret-looking environment variables (``*API_KEY*``, ``*TOKEN*``, ...),
  bearer tokens, ``sk-...`` keys and credentials inside URLs;
* :func:`redact_url` removes ``user:password@`` and masks secret-looking query values of a URL: only the HTTP client
  sees a raw URL.

Parameters such as ``max_tokens`` or ``prompt_tokens`` are not secrets: they change the answer, so they are kept and
hashed.
"""

from __future__ import annotations

import functools
import os
import re
from typing import Any, Mapping

__all__ = ["scrub", "mask_secrets", "redact_url", "register_secret", "MASK"]

# Matched against the key lower-cased with '-' and ' ' turned into '_'. 'max_tokens', 'prompt_tokens'
# and the like are ordinary parameters and must NOT match (they change the answer, so they are hashed).
_SECRET_KEY = re.compile(
    r"^(?:x_)?(?:[a-z0-9]+_)*(?:api_?key|apikey|secret(?:_key)?|client_secret|password|passwd)$"
    r"|^(?:proxy_)?(?:authorization|auth|bearer|cookie|set_cookie)$"
    r"|^(?:(?:access|auth|bearer|api|refresh|id|session|hf|github|openai|x)_)?token$"
)
_SECRET_ENV = re.compile(r"API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD", re.IGNORECASE)
# token-looking strings only (a digit, 16+ characters), so prose such as "Bearer bonds" is left alone
_BEARER = re.compile(r"\b(Bearer|bearer|BEARER)\s+(?=[A-Za-z0-9._~+/=-]*\d)[A-Za-z0-9._~+/=-]{16,}")
_SK_KEY = re.compile(r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}")
MASK = _MASK = "***"


def _is_secret_key(name: Any) -> bool:
    if not isinstance(name, str):
        return False
    return _is_secret_name(name)


@functools.lru_cache(maxsize=4096)
def _is_secret_name(name: str) -> bool:
    return bool(_SECRET_KEY.match(re.sub(r"[\s-]+", "_", name.strip().lower())))


_SCALARS = (str, int, float, bool, type(None))


def scrub(obj: Any) -> Any:
    """A copy of ``obj`` with every mapping key named like a secret dropped, at any depth.

    Parameters
    ----------
    obj : Any
        A value: mappings are copied (keys as strings, secret-named keys dropped), lists and tuples become lists,
        anything else is returned as it is.

    Returns
    -------
    Any
        The scrubbed copy.

    Examples
    --------
    >>> scrub({"model": "m", "api_key": "sk-" + "x" * 24, "headers": [{"Authorization": "Bearer t", "n": 1}]})
    {'model': 'm', 'headers': [{'n': 1}]}
    """
    t = type(obj)
    if t in _SCALARS:  # the common case first: no abstract-class checks (they dominated the cost of a write)
        return obj
    if t is dict or isinstance(obj, Mapping):
        return {str(k): scrub(v) for k, v in obj.items() if not _is_secret_key(k)}
    if t is list or t is tuple or isinstance(obj, (list, tuple)):
        return [scrub(v) for v in obj]
    return obj


def _env_secrets() -> list[str]:
    vals = {v for k, v in os.environ.items() if _SECRET_ENV.search(k) and isinstance(v, str) and len(v) >= 8}
    return sorted(vals, key=len, reverse=True)


# values that are secret whatever their environment variable is called: a model registers its own key here
_REGISTERED: set[str] = set()


def register_secret(value: str | None) -> None:
    """Mask ``value`` in everything assay stores or prints from now on (journal, logs, results, errors).

    The model's API key is registered when the model reads it, so masking no longer depends on the name of the
    environment variable that held it (``--api-key-env MY_LLM_CRED``). Values shorter than 6 characters are not
    registered (masking them would garble ordinary text).

    Parameters
    ----------
    value : str or None
        The secret; ``None``, a non-string or a value shorter than 6 characters is ignored.
    """
    if isinstance(value, str) and len(value) >= 6:
        _REGISTERED.add(value)


# credentials inside URLs: user:password@ and query parameters named like secrets
_URL_USERINFO = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<userinfo>[^/\s@]+)@")
_URL_QUERY_SECRET = re.compile(
    r"(?P<name>[?&;](?:api[-_]?key|apikey|key|access[-_]?token|token|auth|authorization|sig|signature|password|"
    r"passwd|secret|client[-_]?secret|code)=)(?P<value>[^&#\s\"']+)", re.IGNORECASE)


def redact_url(url: str | None) -> str | None:
    """``url`` without credentials.

    ``user:KEY@`` is removed and secret-looking query values (``api-key``, ``key``, ``token``, ``sig``, ...) are
    masked. What is hashed, stored and printed; the client alone keeps the raw URL.

    Parameters
    ----------
    url : str or None
        The URL.

    Returns
    -------
    str or None
        The redacted URL, or ``None`` when ``url`` is None.

    Examples
    --------
    >>> redact_url("https://user:fake-password@host.example/v1?api-key=xxxxxxxx&x=1")
    'https://host.example/v1?api-key=***&x=1'
    """
    if url is None:
        return None
    out = _URL_USERINFO.sub(lambda m: m.group("scheme"), str(url))
    return _URL_QUERY_SECRET.sub(lambda m: m.group("name") + _MASK, out)


def _secret_pattern() -> "re.Pattern | None":
    """One regex matching every registered secret and every value of a secret-looking environment variable
    (longest first), rebuilt only when that set changes: masking runs on every stored record. The environment is
    rescanned only when it changed (a fingerprint of its raw bytes; scanning it for every record cost more than the
    rest of the write); a newly registered secret takes effect at once."""
    try:
        stamp = hash(frozenset(os.environ._data.items()))  # type: ignore[attr-defined]
    except AttributeError:  # pragma: no cover - not CPython's os.environ
        stamp = hash(frozenset(os.environ.items()))
    env = _PATTERN_CACHE.get("env")
    if env is None or env[0] != stamp:
        env = (stamp, frozenset(_env_secrets()))
        _PATTERN_CACHE["env"] = env
    values = tuple(sorted(_REGISTERED | env[1], key=len, reverse=True))
    cached = _PATTERN_CACHE.get("key")
    if cached is None or cached[0] != values:
        pat = re.compile("|".join(re.escape(v) for v in values)) if values else None
        _PATTERN_CACHE["key"] = cached = (values, pat)
    return cached[1]


_PATTERN_CACHE: dict[str, tuple] = {}


def mask_secrets(text: str) -> str:
    """Mask secrets in ``text``.

    What is masked: registered secrets, values of secret-looking environment variables, bearer tokens, ``sk-...``
    keys and credentials inside URLs.

    Parameters
    ----------
    text : str
        The text to mask.

    Returns
    -------
    str
        ``text`` with each secret replaced by ``***``.

    Examples
    --------
    >>> mask_secrets("key sk-" + "x" * 24 + " sent")
    'key *** sent'
    >>> mask_secrets("Authorization: Bearer fake-token-0000000000")
    'Authorization: Bearer ***'
    """
    pat = _secret_pattern()
    if pat is not None:
        text = pat.sub(_MASK, text)
    if "earer" in text or "EARER" in text:
        text = _BEARER.sub(lambda m: f"{m.group(1)} {_MASK}", text)
    if "://" in text:
        text = _URL_USERINFO.sub(lambda m: m.group("scheme") + _MASK + "@", text)
    if "=" in text:
        text = _URL_QUERY_SECRET.sub(lambda m: m.group("name") + _MASK, text)
    if "sk-" in text:
        text = _SK_KEY.sub(_MASK, text)
    return text
