"""The request journal: every model request and its answer, appended to SQLite.

A record is keyed by ``(run_id, key)``, where ``key = request_key(model, prompt, params)`` is the
sha256 of the canonical JSON of the request. A repeated request is answered from the journal, a run
can be resumed by id, and an answer survives ``kill -9`` of the process the moment ``put`` returns.

Durability: the database runs in WAL mode and every ``put`` is its own committed transaction. In WAL
mode a commit appends the transaction to the ``-wal`` file with a ``write()`` before ``put`` returns,
so it is in the OS page cache and survives SIGKILL of the process even with ``synchronous=NORMAL``.
We use ``synchronous=FULL`` (the default, ``synchronous="NORMAL"`` is accepted) which also fsyncs the
WAL on every commit, so a completed answer also survives an OS crash or power loss. The cost, one
fsync per answer (about a millisecond), is negligible next to a paid model call of about a second.

Secrets: parameters, metadata, requests and responses are scrubbed before hashing and storing: keys
named like ``api_key`` / ``authorization`` / ``token`` (case-insensitive, at any depth) are dropped,
and values of secret-looking environment variables (``*API_KEY*``, ``*TOKEN*``, ...) are masked in
whatever is stored. So the API key never reaches the journal file, and it never changes the hash.

Errors: a response whose ``error`` field is set is stored for the record but is not a completed
answer: :meth:`Journal.get` and :meth:`Journal.lookup_any` ignore it and a later :meth:`Journal.put`
of the same key replaces it. A completed answer is never overwritten (first answer wins).

Recognised response fields (all optional; the whole response is kept as JSON): ``text`` (or OpenAI
``choices[0].message.content`` / ``choices[0].text``), ``finish_reason`` (or in ``choices[0]``),
``latency_s`` (or ``latency``), ``usage.prompt_tokens`` / ``usage.completion_tokens`` (or top level),
``error``. Recognised request fields: ``model``, ``prompt`` (or ``messages``), ``params``.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import re
import secrets as _secrets
import sqlite3
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

if TYPE_CHECKING:  # pandas is imported where used: a runner that only gets / puts stays light
    import pandas as pd

from ..errors import AssayInputError

__all__ = ["DEFAULT_PATH", "default_path", "request_key", "scrub", "Journal", "RECORD_COLUMNS"]

SCHEMA_VERSION = 1


def default_path() -> Path:
    """The journal path: ``$ASSAY_JOURNAL`` if set, else ``~/.cache/assay/journal.sqlite``.

    Read at call time, so a changed environment is honoured; :data:`DEFAULT_PATH` is its value at import.
    """
    env = os.environ.get("ASSAY_JOURNAL")
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "assay" / "journal.sqlite"


DEFAULT_PATH: Path = default_path()

# -- secrets -----------------------------------------------------------------------------------------

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
_MASK = "***"


def _is_secret_key(name: Any) -> bool:
    if not isinstance(name, str):
        return False
    return bool(_SECRET_KEY.match(re.sub(r"[\s-]+", "_", name.strip().lower())))


def scrub(obj: Any) -> Any:
    """A copy of ``obj`` with every mapping key named like a secret dropped, at any depth."""
    if isinstance(obj, Mapping):
        return {str(k): scrub(v) for k, v in obj.items() if not _is_secret_key(k)}
    if isinstance(obj, (list, tuple)):
        return [scrub(v) for v in obj]
    return obj


def _env_secrets() -> list[str]:
    vals = {v for k, v in os.environ.items() if _SECRET_ENV.search(k) and isinstance(v, str) and len(v) >= 8}
    return sorted(vals, key=len, reverse=True)


def _mask_secrets(text: str) -> str:
    """Mask values of secret-looking environment variables and bearer tokens in stored text."""
    for value in _env_secrets():
        if value in text:
            text = text.replace(value, _MASK)
    text = _BEARER.sub(lambda m: f"{m.group(1)} {_MASK}", text)
    return _SK_KEY.sub(_MASK, text)


# -- canonical JSON and the request key ------------------------------------------------------------------


def _default(o: Any) -> Any:
    # numpy scalars / arrays, sets, paths: anything a caller may reasonably pass as a parameter
    if hasattr(o, "tolist"):
        return o.tolist()
    if hasattr(o, "item"):
        return o.item()
    if isinstance(o, (set, frozenset)):
        return sorted(o, key=repr)
    if isinstance(o, (bytes, bytearray)):
        return o.decode("utf-8", "replace")
    if isinstance(o, (_dt.datetime, _dt.date)):
        return o.isoformat()
    return str(o)


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_default)


def _dumps(obj: Any) -> str:
    return _mask_secrets(_canonical(scrub(obj)))


def request_key(model: str, prompt: Any, params: Mapping[str, Any] | None) -> str:
    """sha256 hex of the canonical JSON of ``{"model", "prompt", "params"}``, secrets dropped from params.

    Canonical: ``sort_keys=True``, ``separators=(",", ":")``, ``ensure_ascii=False``; so the key does
    not depend on dict order, and tuples and lists hash alike.
    """
    import hashlib

    if params is None:
        params = {}
    if not isinstance(params, Mapping):
        raise AssayInputError(f"request params must be a mapping, got {type(params).__name__}")
    payload = {"model": model, "prompt": prompt, "params": scrub(params)}
    return hashlib.sha256(_canonical(payload).encode("utf-8")).hexdigest()


# -- helpers ------------------------------------------------------------------------------------------------


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="microseconds")


def _new_run_id() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%d-%H%M%S-") + _secrets.token_hex(3)


def _int_or_none(v: Any) -> int | None:
    try:
        if v is None or isinstance(v, bool):
            return None
        f = float(v)
        return int(f) if math.isfinite(f) else None
    except (TypeError, ValueError):
        return None


def _float_or_none(v: Any) -> float | None:
    try:
        if v is None or isinstance(v, bool):
            return None
        f = float(v)
        return f if math.isfinite(f) else None
    except (TypeError, ValueError):
        return None


def _first_choice(response: Mapping) -> Mapping:
    choices = response.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], Mapping):
        return choices[0]
    return {}


def _response_fields(response: Mapping) -> dict[str, Any]:
    usage = response.get("usage") if isinstance(response.get("usage"), Mapping) else {}
    err = response.get("error")
    if err is not None and not isinstance(err, str):
        err = _canonical(err)
    latency = response.get("latency_s", response.get("latency"))
    return {
        "latency_s": _float_or_none(latency),
        "prompt_tokens": _int_or_none(usage.get("prompt_tokens", response.get("prompt_tokens"))),
        "completion_tokens": _int_or_none(usage.get("completion_tokens", response.get("completion_tokens"))),
        "error": (_mask_secrets(err) if err else None),
    }


def _text_of(response: Mapping) -> Any:
    if "text" in response:
        return response["text"]
    ch = _first_choice(response)
    msg = ch.get("message")
    if isinstance(msg, Mapping) and "content" in msg:
        return msg["content"]
    return ch.get("text")


def _as_str(v: Any) -> str | None:
    if v is None:
        return None
    return v if isinstance(v, str) else _canonical(v)


RECORD_COLUMNS = [
    "run_id", "key", "created", "model", "prompt", "text", "finish_reason", "latency_s",
    "prompt_tokens", "completion_tokens", "total_tokens", "error", "params", "request", "response",
]


class Journal:
    """A SQLite journal of model requests and responses (WAL mode, one commit per answer).

    Parameters
    ----------
    path : file of the journal; ``None`` -> :func:`default_path` (``$ASSAY_JOURNAL`` or
        ``~/.cache/assay/journal.sqlite``). Parent folders are created.
    synchronous : ``"FULL"`` (default: survives process kill and power loss) or ``"NORMAL"``
        (survives process kill only).
    busy_timeout_s : how long a writer waits for another process's lock before failing (seconds).

    Safe to share between threads (one connection, guarded by a lock); several ``Journal`` objects or
    processes may write the same file concurrently (SQLite locking, busy timeout).
    """

    def __init__(self, path: str | os.PathLike | None = None, *, synchronous: str = "FULL",
                 busy_timeout_s: float = 30.0) -> None:
        self.path = Path(path).expanduser() if path is not None else default_path()
        if str(synchronous).upper() not in ("FULL", "NORMAL", "EXTRA"):
            raise AssayInputError(f"synchronous must be FULL, NORMAL or EXTRA, got {synchronous!r}")
        if self.path.is_dir():
            raise AssayInputError(f"journal path {self.path} is a folder; give a file such as {self.path / 'journal.sqlite'}")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise AssayInputError(f"cannot create the folder of the journal {self.path}: {exc}") from None
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self._conn = self._connect(str(synchronous).upper(), busy_timeout_s)

    def _connect(self, synchronous: str, busy_timeout_s: float) -> sqlite3.Connection:
        # Two processes creating the same fresh file race on the switch to WAL, which SQLite reports
        # as SQLITE_BUSY without consulting the busy handler; so retry "locked" / "busy" until timeout.
        import random
        import time

        deadline = time.monotonic() + busy_timeout_s
        delay = 0.005
        while True:
            try:
                # isolation_level=None: autocommit; writes use explicit BEGIN IMMEDIATE ... COMMIT
                conn = sqlite3.connect(str(self.path), timeout=busy_timeout_s, isolation_level=None,
                                       check_same_thread=False)
            except sqlite3.Error as exc:
                raise AssayInputError(f"cannot open the journal {self.path}: {exc}") from None
            try:
                conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
                mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
                if str(mode).lower() != "wal":  # WAL is persistent: only a fresh file needs the switch
                    mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                if str(mode).lower() != "wal":
                    raise AssayInputError(f"journal {self.path}: could not switch to WAL mode (got {mode!r}); "
                                          "is it on a file system without shared memory (e.g. a network share)?")
                conn.execute(f"PRAGMA synchronous = {synchronous}")
                self._create_schema(conn)
                return conn
            except sqlite3.OperationalError as exc:
                conn.close()
                msg = str(exc).lower()
                if ("locked" in msg or "busy" in msg) and time.monotonic() < deadline:
                    time.sleep(delay * (0.5 + random.random()))
                    delay = min(delay * 2, 0.25)
                    continue
                if "locked" in msg or "busy" in msg:
                    raise AssayInputError(f"the journal {self.path} stayed locked by another process for "
                                          f"{busy_timeout_s:g} s") from None
                raise AssayInputError(
                    f"{self.path} is not a readable assay journal (SQLite says: {exc}); "
                    "point --journal / ASSAY_JOURNAL at another file or move this one away") from None
            except sqlite3.DatabaseError as exc:
                conn.close()
                raise AssayInputError(
                    f"{self.path} is not a readable assay journal (SQLite says: {exc}); "
                    "point --journal / ASSAY_JOURNAL at another file or move this one away") from None
            except BaseException:
                conn.close()
                raise

    # -- plumbing ------------------------------------------------------------------------------------

    @staticmethod
    def _create_schema(conn: sqlite3.Connection) -> None:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise AssayInputError(f"journal schema version {version} is newer than this assay understands "
                                  f"({SCHEMA_VERSION}); upgrade assay")
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS runs ("
                " run_id TEXT PRIMARY KEY, created TEXT NOT NULL, updated TEXT NOT NULL,"
                " meta TEXT NOT NULL DEFAULT '{}', status TEXT NOT NULL DEFAULT 'running')")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS records ("
                " run_id TEXT NOT NULL, key TEXT NOT NULL, created TEXT NOT NULL,"
                " request TEXT NOT NULL, response TEXT NOT NULL, latency_s REAL,"
                " prompt_tokens INTEGER, completion_tokens INTEGER, error TEXT,"
                " PRIMARY KEY (run_id, key))")
            conn.execute("CREATE INDEX IF NOT EXISTS records_key ON records(key)")
            if version < SCHEMA_VERSION:
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            raise AssayInputError(f"the journal {self.path} is closed")
        return self._conn

    def _write(self, statements: list[tuple[str, tuple]]) -> None:
        with self._lock:
            c = self.conn
            c.execute("BEGIN IMMEDIATE")
            try:
                for sql, args in statements:
                    c.execute(sql, args)
                c.execute("COMMIT")
            except BaseException:
                c.execute("ROLLBACK")
                raise

    def _query(self, sql: str, args: tuple = ()) -> list[tuple]:
        with self._lock:
            return self.conn.execute(sql, args).fetchall()

    def _known_runs_message(self, run_id: str) -> str:
        ids = [r[0] for r in self._query("SELECT run_id FROM runs ORDER BY created DESC, run_id DESC")]
        if not ids:
            return f"unknown run id {run_id!r}: the journal {self.path} has no runs"
        head = ", ".join(ids[:5])
        more = f" and {len(ids) - 5} more (see `assay runs list`)" if len(ids) > 5 else ""
        return f"unknown run id {run_id!r} in journal {self.path}; known runs (newest first): {head}{more}"

    def _require_run(self, run_id: str) -> tuple:
        rows = self._query("SELECT run_id, created, updated, meta, status FROM runs WHERE run_id = ?", (run_id,))
        if not rows:
            raise AssayInputError(self._known_runs_message(run_id))
        return rows[0]

    @staticmethod
    def _check_id(run_id: Any) -> str:
        if not isinstance(run_id, str) or not run_id.strip() or run_id != run_id.strip():
            raise AssayInputError(f"run id must be a non-empty string without surrounding spaces, got {run_id!r}")
        return run_id

    # -- the interface ------------------------------------------------------------------------------------

    def start_run(self, run_id: str | None = None, meta: Mapping | None = None) -> str:
        """Start a run (new time-sortable id ``YYYYmmdd-HHMMSS-xxxxxx`` when ``None``) or resume one.

        Resuming keeps every record; a given ``meta`` is merged into the stored one (new keys win).
        """
        if meta is not None and not isinstance(meta, Mapping):
            raise AssayInputError(f"run meta must be a mapping, got {type(meta).__name__}")
        now = _now()
        with self._lock:
            if run_id is None:
                run_id = _new_run_id()
                while self._query("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)):
                    run_id = _new_run_id()
            self._check_id(run_id)
            rows = self._query("SELECT meta FROM runs WHERE run_id = ?", (run_id,))
            if rows:
                merged = json.loads(rows[0][0] or "{}")
                merged.update(scrub(dict(meta or {})))
                self._write([("UPDATE runs SET updated = ?, meta = ?, status = 'running' WHERE run_id = ?",
                              (now, _dumps(merged), run_id))])
            else:
                self._write([("INSERT OR IGNORE INTO runs (run_id, created, updated, meta, status) "
                              "VALUES (?, ?, ?, ?, 'running')", (run_id, now, now, _dumps(dict(meta or {}))))])
        return run_id

    def get(self, run_id: str, key: str) -> dict | None:
        """The stored response of a completed request ``key`` in ``run_id``, else ``None``."""
        rows = self._query("SELECT response FROM records WHERE run_id = ? AND key = ? AND error IS NULL",
                           (run_id, key))
        return json.loads(rows[0][0]) if rows else None

    def lookup_any(self, key: str) -> dict | None:
        """A completed answer for ``key`` from any run (the oldest, i.e. the first paid for), else ``None``."""
        rows = self._query("SELECT response FROM records WHERE key = ? AND error IS NULL "
                           "ORDER BY created, rowid LIMIT 1", (key,))
        return json.loads(rows[0][0]) if rows else None

    def put(self, run_id: str, key: str, request: Mapping, response: Mapping) -> None:
        """Record an answer and commit at once. First completed answer wins; a stored error may be replaced.

        A run id that was never started is created on the fly.
        """
        self._check_id(run_id)
        if not isinstance(key, str) or not key:
            raise AssayInputError(f"record key must be a non-empty string (see request_key), got {key!r}")
        if not isinstance(request, Mapping) or not isinstance(response, Mapping):
            raise AssayInputError("request and response must be mappings (dicts), got "
                                  f"{type(request).__name__} and {type(response).__name__}")
        clean = scrub(dict(response))
        f = _response_fields(clean)
        now = _now()
        self._write([
            ("INSERT OR IGNORE INTO runs (run_id, created, updated, meta, status) VALUES (?, ?, ?, '{}', 'running')",
             (run_id, now, now)),
            # first answer wins: only a stored *error* is replaced, never a completed answer
            ("INSERT INTO records (run_id, key, created, request, response, latency_s, prompt_tokens,"
             " completion_tokens, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
             " ON CONFLICT(run_id, key) DO UPDATE SET created = excluded.created, request = excluded.request,"
             " response = excluded.response, latency_s = excluded.latency_s,"
             " prompt_tokens = excluded.prompt_tokens, completion_tokens = excluded.completion_tokens,"
             " error = excluded.error WHERE records.error IS NOT NULL",
             (run_id, key, now, _dumps(dict(request)), _mask_secrets(_canonical(clean)), f["latency_s"],
              f["prompt_tokens"], f["completion_tokens"], f["error"])),
            ("UPDATE runs SET updated = ? WHERE run_id = ?", (now, run_id)),
        ])

    def finish_run(self, run_id: str, status: str = "done") -> None:
        """Mark a run finished (``status``: e.g. ``done``, ``failed``, ``interrupted``)."""
        self._require_run(run_id)
        self._write([("UPDATE runs SET status = ?, updated = ? WHERE run_id = ?", (str(status), _now(), run_id))])

    def has_run(self, run_id: str) -> bool:
        return bool(self._query("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)))

    def _run_summaries(self, where: str = "", args: tuple = ()) -> list[dict]:
        rows = self._query(
            "SELECT r.run_id, r.created, r.updated, r.status, r.meta,"
            " COUNT(c.key), COALESCE(SUM(c.error IS NOT NULL), 0),"
            " COALESCE(SUM(c.prompt_tokens), 0), COALESCE(SUM(c.completion_tokens), 0)"
            " FROM runs r LEFT JOIN records c ON c.run_id = r.run_id " + where +
            " GROUP BY r.run_id ORDER BY r.created, r.run_id", args)
        out = []
        for run_id, created, updated, status, meta, n, n_err, pt, ct in rows:
            out.append({
                "run_id": run_id, "created": created, "updated": updated, "status": status,
                "n_records": int(n), "n_errors": int(n_err), "tokens": int(pt) + int(ct),
                "prompt_tokens": int(pt), "completion_tokens": int(ct), "meta": json.loads(meta or "{}"),
            })
        return out

    def runs(self) -> list[dict]:
        """Every run, oldest first: run_id, created, updated, status, n_records, n_errors, tokens
        (prompt + completion), prompt_tokens, completion_tokens, meta."""
        return self._run_summaries()

    def run(self, run_id: str) -> dict:
        """The summary of one run (as in :meth:`runs`); unknown id -> AssayInputError."""
        self._require_run(run_id)
        return self._run_summaries("WHERE r.run_id = ?", (run_id,))[0]

    def records(self, run_id: str) -> pd.DataFrame:
        """One row per record of ``run_id``, in the order they were recorded.

        Columns (:data:`RECORD_COLUMNS`): run_id, key, created, model, prompt, text, finish_reason,
        latency_s, prompt_tokens, completion_tokens, total_tokens, error, params, request, response.
        ``prompt`` / ``text`` are strings (JSON for chat messages); ``params``, ``request`` and
        ``response`` are the stored JSON, so an export loses nothing.
        """
        import pandas as pd

        self._require_run(run_id)
        rows = self._query(
            "SELECT run_id, key, created, request, response, latency_s, prompt_tokens, completion_tokens, error"
            " FROM records WHERE run_id = ? ORDER BY rowid", (run_id,))
        data = []
        for rid, key, created, req_s, resp_s, lat, pt, ct, err in rows:
            req = json.loads(req_s)
            resp = json.loads(resp_s)
            req = req if isinstance(req, dict) else {}
            resp = resp if isinstance(resp, dict) else {}
            prompt = req.get("prompt", req.get("messages"))
            finish = resp.get("finish_reason", _first_choice(resp).get("finish_reason"))
            data.append((rid, key, created, _as_str(req.get("model")), _as_str(prompt), _as_str(_text_of(resp)),
                         _as_str(finish), lat, pt, ct, None, err,
                         _canonical(req.get("params", {})), req_s, resp_s))
        df = pd.DataFrame(data, columns=RECORD_COLUMNS)
        df["latency_s"] = df["latency_s"].astype("float64")
        for col in ("prompt_tokens", "completion_tokens"):
            df[col] = pd.array(df[col].tolist(), dtype="Int64")
        total = df["prompt_tokens"].fillna(0) + df["completion_tokens"].fillna(0)
        df["total_tokens"] = total.mask(df["prompt_tokens"].isna() & df["completion_tokens"].isna()).astype("Int64")
        for col in ("run_id", "key", "created", "model", "prompt", "text", "finish_reason", "error",
                    "params", "request", "response"):
            df[col] = df[col].astype("object")
        return df

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                try:
                    self._conn.close()
                finally:
                    self._conn = None

    def __enter__(self) -> "Journal":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:  # pragma: no cover - best effort
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self) -> str:
        return f"Journal({str(self.path)!r})"
