"""The request journal: every model request and its answer, appended to SQLite.

A record is keyed by ``(run_id, key)``, where ``key = request_key(model, prompt, params)`` is the
sha256 of the canonical JSON of the request. A repeated request is answered from the journal, a run
can be resumed by id, and an answer survives ``kill -9`` of the process the moment ``put`` returns.

Durability: the database runs in WAL mode. A commit appends the transaction to the ``-wal`` file with a
``write()`` before it returns, so it is in the OS page cache and survives SIGKILL of the process even with
``synchronous=NORMAL``. With ``synchronous=FULL`` (the default; ``"NORMAL"`` and ``"EXTRA"`` are accepted) the WAL
is also fsynced, so a completed answer survives an OS crash or power loss: by every ``put`` and :meth:`Journal.batch`
before it returns; the query runner, which writes an answer as it arrives (:meth:`Journal.batch_start`), fsyncs on a
thread of its own, one fsync for all the answers committed since the last, and always before ``run()`` returns. So
a killed process loses nothing it had received, and a power loss at most the answers of the last few milliseconds
(paid for, asked again on resume). An fsync can take as long as a fast local server takes to answer, so an answer
never waits for an fsync of its own (``python bench/query.py``).

Secrets: parameters, metadata, requests and responses pass :mod:`assay.models.secrets` before they are hashed or
stored (keys named like secrets dropped, secret values masked), so an API key never reaches the journal file and
never changes a request's hash.

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
import os
import secrets as _secrets
import sqlite3
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

if TYPE_CHECKING:  # pandas is imported where used: a runner that only gets / puts stays light
    import pandas as pd

    from .base import RequestJournal

from ..errors import AssayInputError
from .records import (Bump, Claim, Finish, Operation, Prepared, Put, Release, _as_str, _canonical, _checked_record,
                      _dumps, _first_choice, _float_or_none, _outcome_of, _text_of, request_key)
from .secrets import mask_secrets, scrub

__all__ = ["DEFAULT_PATH", "default_path", "request_key", "Journal", "open_journal", "Put", "Finish", "Claim",
           "Release", "Bump", "Prepared", "RECORD_COLUMNS", "SCHEMA", "SCHEMA_VERSION"]

SCHEMA_VERSION = 3

#: The journal's schema, all of it. One SQLite file; four tables:
#:
#: * ``runs``: one row per run id, with its ``meta`` (JSON: model, params, what the method recorded, e.g. FAQ's seed)
#:   and ``status`` (running, done, incomplete, interrupted, failed);
#: * ``records``: one row per (run id, request key): the ``request`` (model, prompt, params; secrets scrubbed) and the
#:   ``response`` as JSON (every field of :class:`~assay.models.base.Response`: text, latency_s, ttft_s, tokens,
#:   finish_reason, outcome, detail, error), with latency, tokens and error also as columns for queries. A row whose
#:   ``error`` is set (a timeout or transport error) is kept for the record but is not an answer: it is asked again
#:   on resume and replaced by the first answer; a completed answer is never overwritten;
#: * ``claims`` (v2): which live process holds a key it is asking (owner ``host:pid:token``, lease expiry), so two
#:   processes on one run never pay twice for it;
#: * ``counters`` (v2): per run, requests sent, and answers paid for but thrown away (timeouts, duplicates);
#: * ``notes`` (v3): a run's own records, by name: what a method keeps beside its requests (a live comparison's
#:   settings and each round's draws, a query's scorer and bank), JSON, secrets masked (:meth:`Journal.note`).
#:   Journals of schema 2 kept a live comparison's draws as request/response rows keyed ``draws/...``; they are read
#:   as notes, and left out of :meth:`Journal.records`.
#:
#: :data:`RECORD_COLUMNS` are the columns of :meth:`Journal.records` (and ``assay runs export``).
SCHEMA: tuple[str, ...] = (
    "CREATE TABLE IF NOT EXISTS runs ("
    " run_id TEXT PRIMARY KEY, created TEXT NOT NULL, updated TEXT NOT NULL,"
    " meta TEXT NOT NULL DEFAULT '{}', status TEXT NOT NULL DEFAULT 'running')",
    "CREATE TABLE IF NOT EXISTS records ("
    " run_id TEXT NOT NULL, key TEXT NOT NULL, created TEXT NOT NULL,"
    " request TEXT NOT NULL, response TEXT NOT NULL, latency_s REAL,"
    " prompt_tokens INTEGER, completion_tokens INTEGER, error TEXT,"
    " PRIMARY KEY (run_id, key))",
    "CREATE INDEX IF NOT EXISTS records_key ON records(key)",
    "CREATE TABLE IF NOT EXISTS claims ("
    " run_id TEXT NOT NULL, key TEXT NOT NULL, owner TEXT NOT NULL, expires REAL NOT NULL,"
    " PRIMARY KEY (run_id, key))",
    "CREATE TABLE IF NOT EXISTS counters ("
    " run_id TEXT NOT NULL, name TEXT NOT NULL, value INTEGER NOT NULL DEFAULT 0,"
    " PRIMARY KEY (run_id, name))",
    "CREATE TABLE IF NOT EXISTS notes ("
    " run_id TEXT NOT NULL, name TEXT NOT NULL, created TEXT NOT NULL, value TEXT NOT NULL,"
    " PRIMARY KEY (run_id, name))",
)

#: a request record (not a schema-2 note: a live comparison kept its draws as rows keyed ``draws/1``, ...)
_REQUEST_KEY = "key NOT GLOB 'draws/*'"


def default_path() -> Path:
    """The journal path: ``$ASSAY_JOURNAL`` if set, else ``~/.cache/assay/journal.sqlite``.

    Read at call time, so a changed environment is honoured; :data:`DEFAULT_PATH` is its value at import.

    Returns
    -------
    Path
        The path of the journal file (``~`` expanded).
    """
    env = os.environ.get("ASSAY_JOURNAL")
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "assay" / "journal.sqlite"


DEFAULT_PATH: Path = default_path()

# -- helpers ------------------------------------------------------------------------------------------------


def open_journal(journal: "RequestJournal | str | os.PathLike | None") -> "tuple[RequestJournal | None, bool]":
    """``(journal, owned)`` for a journal argument: a path, a journal object or ``None``.

    A path is opened as a :class:`Journal` (``owned``: the caller closes it), a journal
    object (anything that implements :class:`~assay.models.base.RequestJournal`) is used as it is, ``None`` stays
    ``None``.

    Parameters
    ----------
    journal : RequestJournal, str, os.PathLike or None
        A journal object, the path of a journal file, or ``None`` for no journal.

    Returns
    -------
    journal : RequestJournal or None
        The journal to use.
    owned : bool
        True when it was opened here from a path, so the caller must close it.
    """
    from .base import RequestJournal

    if journal is None or isinstance(journal, RequestJournal):
        return journal, False
    return Journal(Path(journal)), True


def _private_file(path: Path) -> None:
    """Create ``path``'s folder (0700, for the folders created here) and the file itself (0600) before SQLite opens
    it: a journal holds every prompt and answer, and SQLite creates its -wal and -shm files with the main file's
    permissions. An existing journal readable by others is tightened to 0600."""
    missing = []
    parent = path.parent
    while not parent.exists():
        missing.append(parent)
        parent = parent.parent
    for d in reversed(missing):
        d.mkdir(mode=0o700)
        os.chmod(d, 0o700)  # mkdir's mode is filtered by the umask
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    os.close(fd)
    if os.stat(path).st_mode & 0o077:
        try:
            os.chmod(path, 0o600)
        except PermissionError:  # someone else's file: leave it, SQLite will say if it cannot write
            pass


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="microseconds")


def _new_run_id() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%d-%H%M%S-") + _secrets.token_hex(3)


_UPSERT_HEAD = ("INSERT INTO records (run_id, key, created, request, response, latency_s, prompt_tokens,"
                " completion_tokens, error) VALUES ")
_UPSERT_TAIL = (" ON CONFLICT(run_id, key) DO UPDATE SET created = excluded.created, request = excluded.request,"
                " response = excluded.response, latency_s = excluded.latency_s,"
                " prompt_tokens = excluded.prompt_tokens, completion_tokens = excluded.completion_tokens,"
                " error = excluded.error WHERE records.error IS NOT NULL")


def _nothing() -> None:
    """The commit of an empty batch."""


def _many(c: sqlite3.Connection, head: str, tail: str, rows: list[tuple], chunk: int = 400) -> None:
    """One multi-row statement per ``chunk`` rows instead of ``executemany``: the sqlite3 module releases and
    retakes the GIL around every row it steps, which made a writer thread wait for the event loop once per row."""
    for k in range(0, len(rows), chunk):
        part = rows[k:k + chunk]
        one = "(" + ",".join("?" * len(part[0])) + ")"
        c.execute(head + ",".join([one] * len(part)) + tail, [v for row in part for v in row])


# INSERT ... RETURNING reports which rows an upsert wrote (SQLite 3.35, 2021); older libraries read first
_RETURNING = sqlite3.sqlite_version_info >= (3, 35, 0)

RECORD_COLUMNS = [
    "run_id", "key", "created", "model", "prompt", "text", "finish_reason", "latency_s",
    "prompt_tokens", "completion_tokens", "total_tokens", "error", "params", "request", "response",
    "ttft_s", "outcome",
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
            _private_file(self.path)
        except OSError as exc:
            raise AssayInputError(f"cannot create the journal {self.path}: {exc}") from None
        self._lock = threading.RLock()
        self._wlock = threading.Lock()  # a plain lock: batch_start's commit may release it on another thread
        self._sync, self._busy = str(synchronous).upper(), busy_timeout_s
        self._wconn: sqlite3.Connection | None = None
        self._conn: sqlite3.Connection | None = None
        self._known_runs: set = set()  # runs this object wrote in a committed transaction (runs are never deleted)
        self._touched: dict[str, float] = {}  # run id -> when batch() last set its 'updated' stamp
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
                    "use another journal file (ASSAY_JOURNAL) or move this one away") from None
            except sqlite3.DatabaseError as exc:
                conn.close()
                raise AssayInputError(
                    f"{self.path} is not a readable assay journal (SQLite says: {exc}); "
                    "use another journal file (ASSAY_JOURNAL) or move this one away") from None
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
            for statement in SCHEMA:
                conn.execute(statement)
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

    def completed_keys(self, run_id: str, keys: Sequence[str]) -> set:
        """The subset of ``keys`` with a completed answer in ``run_id`` (one query per 500 keys)."""
        with self._lock:
            return self._completed(self.conn, run_id, list(keys))

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

    def put(self, run_id: str, key: str, request: Mapping, response: Mapping) -> str:
        """Record one answer, durable when it returns: a one-operation :meth:`batch` of a :class:`Put` (``"stored"``
        or ``"duplicate"``). First completed answer wins; a stored error may be replaced. A run id that was never
        started is created on the fly."""
        return self.batch([Put(run_id, key, request, response)])[0]

    # -- the runner's batched writes (claims, answers, counters) ------------------------------------------

    def _writer(self) -> sqlite3.Connection:
        """A second connection for :meth:`batch`, so a commit (and its fsync) in the writer thread never holds the
        lock the readers on the main connection need (WAL: readers and one writer proceed together)."""
        if getattr(self, "_wconn", None) is None:
            # FULL: the writer commits without an fsync (the WAL write alone survives kill -9) and sync() makes the
            # commits durable against power loss, once for many; see batch_start
            self._wconn = self._connect("NORMAL" if self._sync == "FULL" else self._sync, self._busy)
        return self._wconn

    def sync(self) -> None:
        """Make every transaction committed so far durable against power loss: one fsync of the write-ahead log.

        :meth:`batch` calls it itself (with ``synchronous="FULL"``); a caller of :meth:`batch_start` calls it when its
        commits must survive an OS crash, from any thread, as often as it likes (an fsync covers every commit before
        it). Nothing to do with ``synchronous="NORMAL"`` (process kill only) or ``"EXTRA"`` (every commit fsyncs)."""
        if self._sync != "FULL":
            return
        try:
            fd = os.open(str(self.path) + "-wal", os.O_RDWR)
        except FileNotFoundError:  # nothing written in WAL mode (or checkpointed and removed on close): nothing to sync
            return
        try:
            os.fsync(fd)
        except OSError as exc:
            raise AssayInputError(f"the journal {self.path} could not be written to disk (fsync: {exc}); answers "
                                  "received since the last sync may be lost on a power failure") from None
        finally:
            os.close(fd)

    def batch(self, ops: Sequence[Operation]) -> list[Any]:
        """Run several operations (:class:`Put`, :class:`Finish`, :class:`Claim`, :class:`Release`, :class:`Bump`,
        or :class:`Prepared` ones) in ONE transaction, one fsync for all, and return one result per operation (each
        operation's class says what it returns).

        The work is set-based: a handful of SQLite calls per batch whatever its size (answers: one upsert that
        returns the keys it wrote, one counters statement). Durable against power loss when it returns (with
        ``synchronous="FULL"``: :meth:`sync`).
        """
        out, commit = self.batch_start(ops)
        commit()
        self.sync()
        return out

    def batch_start(self, ops: Sequence[Operation]) -> tuple[list[Any], Callable[[], None]]:
        """:meth:`batch` up to its COMMIT: ``(results, commit)``. The results hold once ``commit()`` has returned
        (call it exactly once, from any thread); until then the journal's writer is held and other writers wait.

        With ``synchronous="FULL"`` (the default) ``commit()`` writes the transaction to the write-ahead log without
        an fsync: once it returns, the answers survive the process being killed (``kill -9``: the data is in the
        operating system's hands), and :meth:`sync` makes them survive a power loss too, one fsync for every commit
        before it. The runner commits on the event loop (a write, no wait for the disk), gives the answer's slot
        back at once, and syncs on a thread of its own, and always before ``run()`` returns."""
        import time

        if not ops:
            return [], _nothing
        out: list[Any] = [None] * len(ops)
        # serialise outside the write lock (the runner does it as each answer arrives: see prepare())
        ops = [self.prepare(op) for op in ops]
        self._wlock.acquire()
        try:
            c = self._writer()
            c.execute("BEGIN IMMEDIATE")
        except BaseException:
            self._wlock.release()
            raise
        try:
            now_t, now = time.time(), _now()
            self._store_answers(c, ops, out, now_t, now)
            self._grant_claims(c, ops, out, now_t)
            self._release_and_bump(c, ops)
        except BaseException:
            try:
                c.execute("ROLLBACK")
            finally:
                self._wlock.release()
            raise
        return out, self._committer(c, {p.op.run_id for p in ops if isinstance(p, Prepared)})

    def _store_answers(self, c: sqlite3.Connection, ops: list, out: list, now_t: float, now: str) -> None:
        """The batch's answers (:class:`Prepared` puts), one upsert per run; each gets "stored" or "duplicate", and
        the runs' counters (requests, timeouts, duplicates) and claims follow."""
        puts = [(i, p) for i, p in enumerate(ops) if isinstance(p, Prepared)]
        if not puts:
            return
        by_run: dict[str, list] = {}
        for i, p in puts:
            by_run.setdefault(p.op.run_id, []).append((i, p))
        counts: dict[str, dict[str, int]] = {}
        for run_id, items in by_run.items():
            rows, release = [], []
            for i, p in items:
                rows.append(p.row[:2] + (now,) + p.row[3:])
                if not p.ok and isinstance(p.op, Finish) and p.op.owner is not None:
                    release.append((run_id, p.op.key, p.op.owner))
            if run_id not in self._known_runs:
                c.execute("INSERT OR IGNORE INTO runs (run_id, created, updated, meta, status) "
                          "VALUES (?, ?, ?, '{}', 'running')", (run_id, now, now))
            written = self._upsert(c, run_id, rows)
            seen: set = set()
            cnt = counts.setdefault(run_id, {})
            for i, p in items:
                key, ok = p.op.key, p.ok
                # a completed answer that changed no row met one stored before it (or earlier in this batch): paid
                # for, thrown away, counted
                dup = ok and (key not in written or key in seen)
                if ok:
                    seen.add(key)
                if isinstance(p.op, Finish):
                    for name, n in p.op.counts.items():
                        cnt[name] = cnt.get(name, 0) + int(n)
                if dup:
                    cnt["duplicates"] = cnt.get("duplicates", 0) + 1
                out[i] = "duplicate" if dup else "stored"
            # the run's 'updated' stamp at most once a second (finish_run sets the last one)
            if now_t - self._touched.get(run_id, 0.0) >= 1.0:
                c.execute("UPDATE runs SET updated = ? WHERE run_id = ?", (now, run_id))
                self._touched[run_id] = now_t
            if release:
                c.executemany("DELETE FROM claims WHERE run_id = ? AND key = ? AND owner = ?", release)
        self._bump_all(c, counts)

    def _grant_claims(self, c: sqlite3.Connection, ops: list, out: list, now_t: float) -> None:
        """The batch's :class:`Claim` operations: "done" (answered already), "busy" (another live owner holds the
        key) or "claimed" (a dead owner's or an expired lease is taken over)."""
        import socket

        claims = [(i, op) for i, op in enumerate(ops) if isinstance(op, Claim)]
        if not claims:
            return
        host = socket.gethostname()
        by_run: dict[str, list] = {}
        for i, op in claims:
            by_run.setdefault(op.run_id, []).append((i, op))
        for run_id, items in by_run.items():
            keys = [op.key for _, op in items]
            done = self._completed(c, run_id, keys)
            held = self._claims(c, run_id, keys)
            grant = []
            for i, op in items:
                key, owner, ttl = op.key, op.owner, op.ttl_s
                if key in done:
                    out[i] = "done"
                    continue
                row = held.get(key)
                if row and row[0] != owner and row[1] > now_t:
                    o_host, _, rest = row[0].partition(":")
                    pid_s = rest.split(":")[0]
                    pid = int(pid_s) if pid_s.isdigit() else -1
                    stale = o_host == host and pid != os.getpid() and not _pid_alive(pid)
                    if not stale:
                        out[i] = "busy"
                        continue
                grant.append((run_id, key, owner, now_t + float(ttl)))
                held[key] = (owner, now_t + float(ttl))
                out[i] = "claimed"
            if grant:
                _many(c, "INSERT OR REPLACE INTO claims (run_id, key, owner, expires) VALUES ", "", grant)

    def _release_and_bump(self, c: sqlite3.Connection, ops: list) -> None:
        """The batch's :class:`Release` and :class:`Bump` operations."""
        rel = [(op.run_id, op.key, op.owner) for op in ops if isinstance(op, Release)]
        if rel:
            c.executemany("DELETE FROM claims WHERE run_id = ? AND key = ? AND owner = ?", rel)
        bumps: dict[str, dict[str, int]] = {}
        for op in ops:
            if isinstance(op, Bump):
                cnt = bumps.setdefault(op.run_id, {})
                for name, n in op.counts.items():
                    cnt[name] = cnt.get(name, 0) + int(n)
        self._bump_all(c, bumps)

    def _committer(self, c: sqlite3.Connection, runs: set) -> Callable[[], None]:
        """The ``commit()`` of :meth:`batch_start`: COMMIT once, release the writer, remember the runs created."""
        state = {"open": True}

        def commit() -> None:
            if not state["open"]:
                raise AssayInputError("this journal batch was committed already")
            state["open"] = False
            try:
                c.execute("COMMIT")
                self._known_runs.update(runs)
            except BaseException:
                self._known_runs.clear()  # a rolled-back INSERT of a run must be done again
                try:
                    c.execute("ROLLBACK")
                except sqlite3.Error:
                    pass
                raise
            finally:
                self._wlock.release()

        return commit

    def _upsert(self, c: sqlite3.Connection, run_id: str, rows: list[tuple]) -> set:
        """Insert ``rows`` (first completed answer wins; a stored error may be replaced) and return the keys whose
        row was written. With SQLite >= 3.35 one statement does both (``RETURNING``); before, the keys already
        answered are read first."""
        if _RETURNING:
            written: set = set()
            for k in range(0, len(rows), 400):
                part = rows[k:k + 400]
                one = "(" + ",".join("?" * len(part[0])) + ")"
                written.update(r[0] for r in c.execute(
                    _UPSERT_HEAD + ",".join([one] * len(part)) + _UPSERT_TAIL + " RETURNING key",
                    [v for row in part for v in row]).fetchall())
            return written
        keys = [row[1] for row in rows]
        done_before = self._completed(c, run_id, keys)
        _many(c, _UPSERT_HEAD, _UPSERT_TAIL, rows)
        # a key answered before is not written, whatever the row; an error row meeting it is not written either
        return {row[1] for row in rows if row[1] not in done_before}

    def prepare(self, op: Operation) -> Operation:
        """A :class:`Put` or :class:`Finish` with its record serialised, as a :class:`Prepared`; other operations
        are returned as they are, anything else is refused.

        The runner calls this on the event loop's thread before handing the operation to its writer thread, so the
        writer holds the GIL only for SQLite calls (which release it): a writer busy with JSON while the loop
        waits for the GIL after every socket read cost 40% of the runner's throughput (the convoy effect).
        Already prepared operations pass through."""
        if isinstance(op, Put):
            self._check_id(op.run_id)
            row = self._record_row(op.run_id, op.key, op.request, op.response, "")
            return Prepared(op, row, op.response.get("error") is None)
        if isinstance(op, (Prepared, Claim, Release, Bump)):
            return op
        raise AssayInputError(f"unknown journal operation {op!r}: give a Put, Finish, Claim, Release or Bump "
                              "(assay.models.journal)")

    @staticmethod
    def _completed(c: sqlite3.Connection, run_id: str, keys: list[str]) -> set:
        done: set = set()
        for k in range(0, len(keys), 500):
            part = keys[k:k + 500]
            q = ("SELECT key FROM records WHERE run_id = ? AND error IS NULL AND key IN (%s)"
                 % ",".join("?" * len(part)))
            done.update(r[0] for r in c.execute(q, (run_id, *part)))
        return done

    @staticmethod
    def _claims(c: sqlite3.Connection, run_id: str, keys: list[str]) -> dict:
        held: dict = {}
        for k in range(0, len(keys), 500):
            part = keys[k:k + 500]
            q = "SELECT key, owner, expires FROM claims WHERE run_id = ? AND key IN (%s)" % ",".join("?" * len(part))
            held.update({r[0]: (r[1], r[2]) for r in c.execute(q, (run_id, *part))})
        return held

    @staticmethod
    def _record_row(run_id: str, key: str, request: Mapping, response: Mapping, now: str) -> tuple:
        clean, f = _checked_record(key, request, response)
        return (run_id, key, now, _dumps(dict(request)), mask_secrets(_canonical(clean)), f["latency_s"],
                f["prompt_tokens"], f["completion_tokens"], f["error"])

    @staticmethod
    def _bump_all(c: sqlite3.Connection, counts: Mapping[str, Mapping[str, int]]) -> None:
        """Add ``counts`` (run id -> {counter: n}) to the counters in one statement."""
        rows = [(run_id, str(name), int(n)) for run_id, cnt in counts.items() for name, n in cnt.items() if n]
        if rows:
            c.execute("INSERT INTO counters (run_id, name, value) VALUES " + ",".join(["(?, ?, ?)"] * len(rows)) +
                      " ON CONFLICT(run_id, name) DO UPDATE SET value = value + excluded.value",
                      [v for row in rows for v in row])

    def counters(self, run_id: str) -> dict[str, int]:
        """The run's counters: requests sent, and answers paid for but thrown away (timeouts, duplicates)."""
        return {k: int(v) for k, v in self._query("SELECT name, value FROM counters WHERE run_id = ? ORDER BY name",
                                                  (run_id,))}

    # -- a run's own records --------------------------------------------------------------------------------

    def set_note(self, run_id: str, name: str, value: Any) -> None:
        """Keep ``value`` (anything JSON can hold; secrets masked) as the run's record ``name``: a method's own record
        beside its requests (settings, a plan, a round's draws). A name is written once: the same value again is a
        no-op, another value is refused (the run would mix two plans); a run id never started is created."""
        self._check_id(run_id)
        if not isinstance(name, str) or not name:
            raise AssayInputError(f"a note's name must be a non-empty string, got {name!r}")
        old = self.note(run_id, name)
        new = json.loads(_dumps(value))
        if old is not None:
            if old != new:
                raise AssayInputError(f"run {run_id!r} already keeps another {name!r}: its records would mix two runs; "
                                      "start a new run id")
            return
        now = _now()
        self._write([("INSERT OR IGNORE INTO runs (run_id, created, updated, meta, status) VALUES (?, ?, ?, '{}', "
                      "'running')", (run_id, now, now)),
                     ("INSERT INTO notes (run_id, name, created, value) VALUES (?, ?, ?, ?)",
                      (run_id, name, now, _canonical(new)))])

    def note(self, run_id: str, name: str) -> Any:
        """The run's record ``name`` (:meth:`set_note`), or None; a schema-2 journal's record kept as a request row
        under that key is read too."""
        rows = self._query("SELECT value FROM notes WHERE run_id = ? AND name = ?", (run_id, name))
        if rows:
            return json.loads(rows[0][0])
        rows = self._query(f"SELECT response FROM records WHERE run_id = ? AND key = ? AND NOT ({_REQUEST_KEY})",
                           (run_id, name))
        return json.loads(rows[0][0]) if rows else None

    def notes(self, run_id: str) -> dict[str, Any]:
        """Every record the run keeps (:meth:`set_note`), by name, in the order they were written."""
        legacy = self._query(f"SELECT key, response FROM records WHERE run_id = ? AND NOT ({_REQUEST_KEY}) "
                             "ORDER BY rowid", (run_id,))
        rows = self._query("SELECT name, value FROM notes WHERE run_id = ? ORDER BY rowid", (run_id,))
        return {k: json.loads(v) for k, v in legacy + rows}

    def answer_count(self, run_id: str) -> int:
        """The completed answers the run holds (its notes and failed requests not counted)."""
        return int(self._query(f"SELECT count(*) FROM records WHERE run_id = ? AND error IS NULL AND {_REQUEST_KEY}",
                               (run_id,))[0][0])

    def finish_run(self, run_id: str, status: str = "done") -> None:
        """Mark a run finished (``status``: e.g. ``done``, ``failed``, ``interrupted``)."""
        self._require_run(run_id)
        # claims on answered keys are spent (a claim on a completed key always yields "done"); batch() leaves them
        # for this one statement rather than deleting them commit by commit
        self._write([("UPDATE runs SET status = ?, updated = ? WHERE run_id = ?", (str(status), _now(), run_id)),
                     ("DELETE FROM claims WHERE run_id = ? AND key IN "
                      "(SELECT key FROM records WHERE run_id = ? AND error IS NULL)", (run_id, run_id))])

    def has_run(self, run_id: str) -> bool:
        return bool(self._query("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)))

    def _run_summaries(self, where: str = "", args: tuple = ()) -> list[dict]:
        rows = self._query(
            "SELECT r.run_id, r.created, r.updated, r.status, r.meta,"
            " COUNT(c.key), COALESCE(SUM(c.error IS NOT NULL), 0),"
            " COALESCE(SUM(c.prompt_tokens), 0), COALESCE(SUM(c.completion_tokens), 0)"
            " FROM runs r LEFT JOIN records c ON c.run_id = r.run_id AND "
            + _REQUEST_KEY.replace("key", "c.key") + " " + where +
            " GROUP BY r.run_id ORDER BY r.created, r.run_id", args)
        counts: dict[str, dict[str, int]] = {}
        for rid, name, value in self._query("SELECT run_id, name, value FROM counters"):
            counts.setdefault(rid, {})[name] = int(value)
        out = []
        for run_id, created, updated, status, meta, n, n_err, pt, ct in rows:
            c = counts.get(run_id, {})
            out.append({
                "run_id": run_id, "created": created, "updated": updated, "status": status,
                "n_records": int(n), "n_errors": int(n_err), "tokens": int(pt) + int(ct),
                "prompt_tokens": int(pt), "completion_tokens": int(ct), "meta": json.loads(meta or "{}"),
                "requests_sent": c.get("requests", 0), "thrown_away_timeouts": c.get("timeouts", 0),
                "thrown_away_duplicates": c.get("duplicates", 0),
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
        latency_s, prompt_tokens, completion_tokens, total_tokens, error, params, request, response, ttft_s (time to
        the first token of a streamed answer), outcome (:func:`assay.models.outcomes.of_response`: too_long, refused,
        timeout, transport, or None for text to score).
        ``prompt`` / ``text`` are strings (JSON for chat messages); ``params``, ``request`` and
        ``response`` are the stored JSON, so an export loses nothing.
        """
        import pandas as pd

        self._require_run(run_id)
        rows = self._query(
            "SELECT run_id, key, created, request, response, latency_s, prompt_tokens, completion_tokens, error"
            f" FROM records WHERE run_id = ? AND {_REQUEST_KEY} ORDER BY rowid", (run_id,))
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
                         _canonical(req.get("params", {})), req_s, resp_s, _float_or_none(resp.get("ttft_s")),
                         _outcome_of(resp, err)))
        df = pd.DataFrame(data, columns=RECORD_COLUMNS)
        df["latency_s"] = df["latency_s"].astype("float64")
        df["ttft_s"] = df["ttft_s"].astype("float64")
        for col in ("prompt_tokens", "completion_tokens"):
            df[col] = pd.array(df[col].tolist(), dtype="Int64")
        total = df["prompt_tokens"].fillna(0) + df["completion_tokens"].fillna(0)
        df["total_tokens"] = total.mask(df["prompt_tokens"].isna() & df["completion_tokens"].isna()).astype("Int64")
        for col in ("run_id", "key", "created", "model", "prompt", "text", "finish_reason", "error",
                    "params", "request", "response", "outcome"):
            df[col] = df[col].astype("object")
        return df

    def close(self) -> None:
        with self._wlock:
            if getattr(self, "_wconn", None) is not None:
                try:
                    self._wconn.close()
                finally:
                    self._wconn = None
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
