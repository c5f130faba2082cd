"""Embedded SQLite store: one database file, WAL, FTS5 (porter unicode61), vectors searched with numpy.

Concurrency: any number of processes open the same file. Readers never block writers (WAL); every write
is one ``BEGIN IMMEDIATE`` transaction, with SQLite's busy timeout plus a bounded retry loop on top, so a
lock conflict is waited out instead of reaching the user.

Safety: the file is validated (magic bytes, page size, truncation) before SQLite touches it, and a
database written by a newer schema or by something that is not graymatter is refused without a single
byte being written.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar, get_args

from graymatter.errors import CorruptDatabase, CorruptRecord, SchemaTooNew, StorageError, StoreUnavailable
from graymatter.fsutil import FILE_MODE, ensure_private_dir
from graymatter.models import Checkpoint, Fact, Interface, Link, MemoryStats, Provenance
from graymatter.numeric import load_numpy
from graymatter.store.base import ScoredId, Vector

DB_FILENAME = "graymatter.db"
SCHEMA_VERSION = 1
BUSY_TIMEOUT_MS = 5_000
WRITE_RETRY_BUDGET_S = 120.0
FTS_TOKENIZER = "porter unicode61 remove_diacritics 2"
_SQLITE_MAGIC = b"SQLite format 3\x00"

T = TypeVar("T")

_EMBED_NONE, _EMBED_PENDING, _EMBED_DONE = 0, 1, 2

_MIGRATIONS: dict[int, list[str]] = {
    1: [
        """CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID""",
        """CREATE TABLE facts (
            rowid INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            agent_id TEXT NOT NULL,
            text TEXT NOT NULL,
            kind TEXT NOT NULL DEFAULT 'fact',
            equivalents TEXT,
            created_at INTEGER NOT NULL,
            accessed_at INTEGER NOT NULL,
            access_count INTEGER NOT NULL DEFAULT 0,
            weight REAL NOT NULL DEFAULT 1.0,
            superseded_by TEXT,
            pinned INTEGER NOT NULL DEFAULT 0,
            pinned_at INTEGER,
            confidence TEXT NOT NULL DEFAULT 'inferred',
            provenance TEXT NOT NULL DEFAULT '{}',
            embed_state INTEGER NOT NULL DEFAULT 0
        )""",
        """CREATE INDEX facts_live_recent ON facts(agent_id, created_at, id)
           WHERE superseded_by IS NULL AND kind = 'fact'""",
        """CREATE INDEX facts_agent_text ON facts(agent_id, text)""",
        """CREATE INDEX facts_agent_kind ON facts(agent_id, kind, created_at)""",
        """CREATE INDEX facts_superseded_by ON facts(superseded_by) WHERE superseded_by IS NOT NULL""",
        """CREATE INDEX facts_pending ON facts(embed_state) WHERE embed_state = 1""",
        f"""CREATE VIRTUAL TABLE facts_fts USING fts5(text, tokenize='{FTS_TOKENIZER}')""",
        """CREATE VIRTUAL TABLE facts_vocab USING fts5vocab(facts_fts, 'row')""",
        """CREATE TABLE vectors (
            fact_rowid INTEGER PRIMARY KEY,
            agent_id TEXT NOT NULL,
            confidence INTEGER NOT NULL,
            vec BLOB NOT NULL
        )""",
        """CREATE INDEX vectors_agent ON vectors(agent_id, fact_rowid)""",
        """CREATE TABLE checkpoints (
            rowid INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            agent_id TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            state TEXT NOT NULL,
            messages TEXT,
            message_count INTEGER NOT NULL DEFAULT 0,
            metadata TEXT NOT NULL DEFAULT '{}',
            provenance TEXT NOT NULL DEFAULT '{}'
        )""",
        """CREATE INDEX checkpoints_agent ON checkpoints(agent_id, created_at DESC, id DESC)""",
        """CREATE TABLE links (
            rowid INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            agent_id TEXT NOT NULL,
            source TEXT NOT NULL,
            target TEXT NOT NULL,
            relation TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            provenance TEXT NOT NULL DEFAULT '{}',
            UNIQUE (agent_id, source, target, relation)
        )""",
    ],
}

_CONFIDENCE_CODE = {"unverified": -1, "inferred": 0, "verified": 1}
_KINDS = ("fact", "alias")
_INTERFACES = frozenset(get_args(Interface))
_PROVENANCE_CACHE: dict[str, Provenance] = {}


def _provenance(raw: str) -> Provenance:
    """A Provenance from its stored JSON text; validated once per distinct text, then cached."""
    cached = _PROVENANCE_CACHE.get(raw)
    if cached is None:
        data = json.loads(raw)
        if (
            not isinstance(data, dict)
            or not set(data) <= {"interface", "client", "token_id"}
            or data.get("interface", "library") not in _INTERFACES
            or not all(isinstance(data.get(k), str | None) for k in ("client", "token_id"))
        ):
            raise ValueError("malformed provenance")
        cached = Provenance.model_construct(**data)
        if len(_PROVENANCE_CACHE) < 4096:
            _PROVENANCE_CACHE[raw] = cached
    return cached


def _us(moment: datetime) -> int:
    """Datetime -> integer microseconds since the epoch (UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    delta = moment - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _dt(micros: int | None) -> datetime | None:
    if micros is None:
        return None
    return _EPOCH + timedelta(microseconds=int(micros))


_FACT_FIELDS = frozenset(Fact.model_fields)


def _construct_fact_fast(values: dict[str, Any]) -> Fact:
    """``Fact.model_construct`` for complete, trusted rows, without its per-field default handling."""
    fact = Fact.__new__(Fact)
    object.__setattr__(fact, "__dict__", values)
    object.__setattr__(fact, "__pydantic_fields_set__", set(_FACT_FIELDS))
    object.__setattr__(fact, "__pydantic_extra__", None)
    object.__setattr__(fact, "__pydantic_private__", None)
    return fact


def _pick_fact_constructor() -> Callable[[dict[str, Any]], Fact]:
    """Use the fast constructor only if it is indistinguishable from ``model_construct`` here."""
    sample = {
        "id": "01ARZ3NDEKTSV4RRFFQ69G5FAV",
        "agent_id": "a",
        "text": "t",
        "kind": "fact",
        "equivalents": [],
        "created_at": _EPOCH,
        "accessed_at": _EPOCH,
        "access_count": 0,
        "weight": 1.0,
        "superseded_by": None,
        "pinned": False,
        "pinned_at": None,
        "confidence": "inferred",
        "provenance": Provenance.model_construct(),
    }
    try:
        fast, slow = _construct_fact_fast(dict(sample)), Fact.model_construct(**sample)
        if fast == slow and fast.model_fields_set == slow.model_fields_set and fast.live:
            return _construct_fact_fast
    except Exception:  # a future pydantic changed its internals: fall back to the public API
        pass
    return lambda values: Fact.model_construct(**values)


_construct_fact = _pick_fact_constructor()


def _placeholders(count: int) -> str:
    return ",".join("?" * count)


def _chunks(items: Sequence[T], size: int = 500) -> Iterable[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _fts_safe(term: str) -> str:
    """Drop what SQLite cannot carry inside a quoted FTS5 string: NUL and lone surrogates."""
    cleaned = term.replace("\x00", " ")
    if any(0xD800 <= ord(ch) <= 0xDFFF for ch in cleaned):
        cleaned = "".join(" " if 0xD800 <= ord(ch) <= 0xDFFF else ch for ch in cleaned)
    return cleaned.replace('"', '""')


def fts_match_expression(terms: Sequence[str]) -> str:
    """An FTS5 MATCH expression OR-ing the terms, each quoted so no input can be FTS5 syntax.

    A term with several words is a phrase (words adjacent, in order)."""
    return " OR ".join('"' + _fts_safe(term) + '"' for term in terms)


def validate_database_file(path: Path, settle_attempts: int = 5, settle_s: float = 0.05) -> None:
    """Refuse a file that is not a complete SQLite database, without modifying it.

    Checks the magic bytes, the page size, that the file holds whole pages and that it is not shorter
    than the page count its header declares (a truncated copy). An empty file is a new database.

    A checkpoint writes page 1 (with the new page count) before the pages that extend the file, so a
    size mismatch is re-read a few times, and accepted while a non-empty WAL can still complete it.
    """
    hint = "move it aside or restore a backup; it was not modified"
    for attempt in range(settle_attempts):
        try:
            size = path.stat().st_size
            if size == 0:
                return
            with open(path, "rb") as handle:
                header = handle.read(100)
        except OSError as exc:
            raise StoreUnavailable(f"cannot read database file {path}: {exc.strerror or exc}") from None
        if len(header) < 100 or header[:16] != _SQLITE_MAGIC:
            raise CorruptDatabase(
                f"{path} is not a graymatter database (not SQLite, or damaged header); {hint}"
            )
        page_size = int.from_bytes(header[16:18], "big")
        page_size = 65_536 if page_size == 1 else page_size
        if page_size < 512 or page_size & (page_size - 1):
            raise CorruptDatabase(f"{path} has a damaged header (page size {page_size}); {hint}")
        change_counter = int.from_bytes(header[24:28], "big")
        valid_for = int.from_bytes(header[92:96], "big")
        declared = int.from_bytes(header[28:32], "big") * page_size
        if size % page_size:
            problem = f"{size} bytes is not a whole number of pages"
        elif change_counter == valid_for and declared > size:
            wal = path.with_name(path.name + "-wal")
            if wal.exists() and wal.stat().st_size > 0:
                return  # an unfinished checkpoint: the WAL still holds those pages and SQLite completes it
            problem = f"{size} bytes, header declares {declared}"
        else:
            return
        if attempt + 1 < settle_attempts:
            time.sleep(settle_s)
    raise CorruptDatabase(f"{path} is truncated ({problem}); {hint}")


def _is_busy(exc: sqlite3.Error) -> bool:
    message = str(exc).lower()
    return "locked" in message or "busy" in message


def _translate(exc: sqlite3.Error, path: Path) -> Exception:
    message = str(exc)
    lowered = message.lower()
    hint = "move it aside or restore a backup"
    if "not a database" in lowered or "malformed" in lowered or "corrupt" in lowered:
        return CorruptDatabase(f"database {path} is corrupt ({message}); {hint}")
    if "readonly" in lowered or "read-only" in lowered:
        return StoreUnavailable(
            f"database {path} is read-only ({message}); fix permissions or pass another --dir"
        )
    if "unable to open" in lowered:
        return StoreUnavailable(
            f"cannot open database {path} ({message}); check that the directory is writable"
        )
    if _is_busy(exc):
        return StorageError(f"database {path} stayed locked by other processes for too long ({message})")
    return StorageError(f"database {path} failed: {message}")


class SQLiteStore:
    """The embedded store. Thread-safe: each thread uses its own connection."""

    def __init__(self, data_dir: str | os.PathLike[str]) -> None:
        self.data_dir = Path(data_dir).expanduser()
        self.path = self.data_dir / DB_FILENAME
        self.url = f"sqlite:///{self.path}"
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._conn_lock = threading.Lock()
        self._closed = False
        self._vector_cache: dict[str, _VectorCache] = {}
        self._vector_lock = threading.Lock()
        ensure_private_dir(self.data_dir)
        if self.path.is_symlink() or (self.path.exists() and not self.path.is_file()):
            raise StoreUnavailable(f"{self.path} is not a regular file; move it aside or pass another --dir")
        if self.path.exists():
            validate_database_file(self.path)
        else:
            self._create_file()
        self._open_schema()

    # -- connection management ---------------------------------------------------------------------
    def _create_file(self) -> None:
        try:
            fd = os.open(
                self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), FILE_MODE
            )
            os.close(fd)
        except FileExistsError:
            return
        except OSError as exc:
            raise StoreUnavailable(
                f"cannot create {self.path}: {exc.strerror or exc}; check that {self.data_dir} is writable"
            ) from None

    def _connect(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(
                self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
            )
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        except sqlite3.Error as exc:
            raise _translate(exc, self.path) from None
        with self._conn_lock:
            self._connections.append(conn)
        return conn

    def _conn(self) -> sqlite3.Connection:
        if self._closed:
            raise StorageError("the store is closed")
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            self._configure(conn)
            self._local.conn = conn
        return conn

    @staticmethod
    def _configure(conn: sqlite3.Connection) -> None:
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA temp_store = MEMORY")
        conn.execute("PRAGMA cache_size = -16000")
        conn.execute("PRAGMA journal_size_limit = 67108864")  # WAL shrinks back to 64 MiB

    def _open_schema(self) -> None:
        conn = self._connect()
        self._local.conn = conn
        try:
            version, tables = self._read_schema_state(conn)
            if version > SCHEMA_VERSION:
                raise SchemaTooNew(
                    f"{self.path} was written by a newer graymatter (schema {version}, this version reads "
                    f"up to {SCHEMA_VERSION}); upgrade graymatter. The database was not modified."
                )
            if version == 0 and tables:
                raise CorruptDatabase(
                    f"{self.path} is an SQLite database but not a graymatter one; move it aside. "
                    "It was not modified."
                )
            if version < SCHEMA_VERSION:
                self._migrate()
            else:
                self._configure(conn)
        except sqlite3.Error as exc:
            self.close()
            raise _translate(exc, self.path) from None
        except BaseException:
            self.close()
            raise

    @staticmethod
    def _read_schema_state(conn: sqlite3.Connection) -> tuple[int, int]:
        """``(user_version, number of schema objects)`` read in one snapshot, retrying lock conflicts.

        One read transaction matters: a concurrent first open commits its tables and the version together,
        so a snapshot never shows tables without the version (which would look like a foreign database).
        """
        deadline = time.monotonic() + WRITE_RETRY_BUDGET_S
        while True:
            try:
                conn.execute("BEGIN")
                try:
                    tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
                    version = conn.execute("PRAGMA user_version").fetchone()[0]
                finally:
                    conn.execute("COMMIT")
                return int(version), int(tables)
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc) or time.monotonic() >= deadline:
                    raise
                time.sleep(0.01 + random.random() * 0.02)

    def _migrate(self) -> None:
        conn = self._local.conn
        deadline = time.monotonic() + WRITE_RETRY_BUDGET_S
        while True:  # switching to WAL needs a moment without other writers
            try:
                conn.execute("PRAGMA journal_mode = WAL")
                break
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc) or time.monotonic() >= deadline:
                    raise
                time.sleep(0.01 + random.random() * 0.02)
        self._configure(conn)

        def apply(c: sqlite3.Connection) -> None:
            current = c.execute("PRAGMA user_version").fetchone()[0]
            if current > SCHEMA_VERSION:
                raise SchemaTooNew(
                    f"{self.path} was upgraded by a newer graymatter meanwhile; upgrade graymatter"
                )
            for version in range(current + 1, SCHEMA_VERSION + 1):
                for statement in _MIGRATIONS[version]:
                    c.execute(statement)
                c.execute(
                    "INSERT OR REPLACE INTO meta(key, value) VALUES ('schema_version', ?)", (str(version),)
                )
                c.execute(f"PRAGMA user_version = {version}")

        self._write(apply)

    def close(self) -> None:
        """Close every connection this store opened. Idempotent."""
        self._closed = True
        with self._conn_lock:
            connections, self._connections = self._connections, []
        for conn in connections:
            with contextlib.suppress(sqlite3.Error):
                conn.close()
        self._local = threading.local()

    def __enter__(self) -> SQLiteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- transaction helpers -----------------------------------------------------------------------
    def _write(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``work`` in one BEGIN IMMEDIATE transaction, retrying lock conflicts with backoff."""
        deadline = time.monotonic() + WRITE_RETRY_BUDGET_S
        delay = 0.005
        while True:
            conn = self._conn()
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    result = work(conn)
                    conn.execute("COMMIT")
                    return result
                except BaseException:
                    if conn.in_transaction:
                        with contextlib.suppress(sqlite3.Error):
                            conn.execute("ROLLBACK")
                    raise
            except sqlite3.OperationalError as exc:
                if _is_busy(exc) and time.monotonic() < deadline:
                    time.sleep(delay * (0.5 + random.random()))
                    delay = min(delay * 2, 0.25)
                    continue
                raise _translate(exc, self.path) from None
            except sqlite3.Error as exc:
                raise _translate(exc, self.path) from None

    def _read(self, work: Callable[[sqlite3.Connection], T]) -> T:
        deadline = time.monotonic() + WRITE_RETRY_BUDGET_S
        while True:
            conn = self._conn()
            try:
                return work(conn)
            except sqlite3.OperationalError as exc:
                if _is_busy(exc) and time.monotonic() < deadline:
                    time.sleep(0.01 + random.random() * 0.02)
                    continue
                raise _translate(exc, self.path) from None
            except sqlite3.Error as exc:
                raise _translate(exc, self.path) from None

    # -- row decoding ------------------------------------------------------------------------------
    _FACT_COLUMNS = (
        "id, agent_id, text, kind, equivalents, created_at, accessed_at, access_count, weight, "
        "superseded_by, pinned, pinned_at, confidence, provenance"
    )

    @staticmethod
    def _fact(row: Sequence[Any]) -> Fact:
        """Decode a trusted row without re-validation (hot path); malformed rows raise CorruptRecord."""
        try:
            if row[3] not in _KINDS or row[12] not in _CONFIDENCE_CODE:
                raise ValueError("unknown kind or confidence label")
            equivalents = json.loads(row[4]) if row[4] else []
            if not isinstance(equivalents, list):
                raise ValueError("malformed equivalents column")
            return _construct_fact(
                {
                    "id": row[0],
                    "agent_id": row[1],
                    "text": row[2],
                    "created_at": _dt(row[5]),
                    "accessed_at": _dt(row[6]),
                    "access_count": int(row[7]),
                    "weight": min(1.0, max(0.0, float(row[8]))),
                    "superseded_by": row[9],
                    "pinned": bool(row[10]),
                    "pinned_at": _dt(row[11]),
                    "confidence": row[12],
                    "kind": row[3],
                    "equivalents": equivalents,
                    "provenance": _provenance(row[13] or "{}"),
                }
            )
        except (ValueError, TypeError) as exc:
            raise CorruptRecord(f"fact {row[0]} cannot be decoded: {type(exc).__name__}") from None

    @staticmethod
    def _checkpoint(row: Sequence[Any]) -> Checkpoint:
        try:
            state = json.loads(row[4])
            messages = json.loads(row[5]) if row[5] is not None else None
            return Checkpoint(
                id=row[0],
                agent_id=row[1],
                created_at=_dt(row[2]),
                message_count=row[3],
                state=state,
                messages=messages,
                metadata=json.loads(row[6] or "{}"),
                provenance=Provenance.model_validate_json(row[7] or "{}"),
            )
        except (ValueError, TypeError) as exc:
            raise CorruptRecord(
                f"checkpoint {row[0]} of agent {row[1]!r} cannot be decoded ({type(exc).__name__})"
            ) from None

    @staticmethod
    def _link(row: Sequence[Any]) -> Link:
        try:
            return Link(
                id=row[0],
                agent_id=row[1],
                source=row[2],
                target=row[3],
                relation=row[4],
                created_at=_dt(row[5]),
                provenance=Provenance.model_validate_json(row[6] or "{}"),
            )
        except (ValueError, TypeError) as exc:
            raise CorruptRecord(f"link {row[0]} cannot be decoded: {type(exc).__name__}") from None

    # -- facts -------------------------------------------------------------------------------------
    def _insert_fact(self, c: sqlite3.Connection, fact: Fact, embed_state: int) -> int:
        cursor = c.execute(
            "INSERT INTO facts (id, agent_id, text, kind, equivalents, created_at, accessed_at, "
            "access_count, "
            "weight, superseded_by, pinned, pinned_at, confidence, provenance, embed_state) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                fact.id,
                fact.agent_id,
                fact.text,
                fact.kind,
                json.dumps(fact.equivalents, ensure_ascii=False) if fact.equivalents else None,
                _us(fact.created_at),
                _us(fact.accessed_at),
                fact.access_count,
                fact.weight,
                fact.superseded_by,
                int(fact.pinned),
                _us(fact.pinned_at) if fact.pinned_at else None,
                fact.confidence,
                fact.provenance.model_dump_json(exclude_none=True),
                embed_state,
            ),
        )
        rowid = int(cursor.lastrowid or 0)
        if fact.kind == "fact" and fact.superseded_by is None:
            c.execute("INSERT INTO facts_fts(rowid, text) VALUES (?, ?)", (rowid, fact.text))
        return rowid

    def _current_model(self, c: sqlite3.Connection) -> str | None:
        row = c.execute("SELECT value FROM meta WHERE key = 'embedding_model'").fetchone()
        return row[0] if row else None

    def _bump(self, c: sqlite3.Connection, key: str) -> None:
        c.execute(
            "INSERT INTO meta(key, value) VALUES (?, '1') "
            "ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1",
            (key,),
        )

    def add_facts(
        self,
        facts: Sequence[Fact],
        vectors: Sequence[Vector | None] | None = None,
        embedding_model: str | None = None,
    ) -> None:
        vectors = list(vectors) if vectors is not None else [None] * len(facts)
        if len(vectors) != len(facts):
            raise ValueError("vectors must align with facts")

        def work(c: sqlite3.Connection) -> None:
            model = self._current_model(c)
            touched_agents: set[str] = set()
            for fact, vector in zip(facts, vectors, strict=True):
                embeddable = fact.kind == "fact" and fact.superseded_by is None and model is not None
                usable = embeddable and vector is not None and embedding_model == model
                state = _EMBED_DONE if usable else (_EMBED_PENDING if embeddable else _EMBED_NONE)
                rowid = self._insert_fact(c, fact, state)
                if usable:
                    self._put_vector(c, rowid, fact, vector)
                    touched_agents.add(fact.agent_id)
            for agent in touched_agents:
                self._bump(c, f"vec_added:{agent}")

        self._write(work)

    def import_facts(self, facts: Sequence[Fact]) -> tuple[int, int]:
        def work(c: sqlite3.Connection) -> tuple[int, int]:
            model = self._current_model(c)
            added = skipped = 0
            for fact in facts:
                if c.execute("SELECT 1 FROM facts WHERE id = ?", (fact.id,)).fetchone():
                    skipped += 1
                    continue
                embeddable = fact.kind == "fact" and fact.superseded_by is None and model is not None
                self._insert_fact(c, fact, _EMBED_PENDING if embeddable else _EMBED_NONE)
                added += 1
            return added, skipped

        return self._write(work)

    def get_facts(self, fact_ids: Sequence[str]) -> list[Fact]:
        ids = list(dict.fromkeys(fact_ids))
        if not ids:
            return []

        def work(c: sqlite3.Connection) -> list[Fact]:
            found: dict[str, Fact] = {}
            for chunk in _chunks(ids):
                rows = c.execute(
                    f"SELECT {self._FACT_COLUMNS} FROM facts WHERE id IN ({_placeholders(len(chunk))})", chunk
                ).fetchall()
                for row in rows:
                    found[row[0]] = self._fact(row)
            return [found[i] for i in ids if i in found]

        return self._read(work)

    def find_by_text(self, agent_id: str, text: str, kind: str = "fact") -> list[Fact]:
        rows = self._read(
            lambda c: c.execute(
                f"SELECT {self._FACT_COLUMNS} FROM facts INDEXED BY facts_agent_text "
                "WHERE agent_id = ? AND text = ? AND kind = ? "
                "ORDER BY created_at, id",
                (agent_id, text, kind),
            ).fetchall()
        )
        return [self._fact(r) for r in rows]

    def list_facts(
        self,
        agent_id: str | None = None,
        *,
        include_superseded: bool = True,
        kinds: Sequence[str] = ("fact",),
    ) -> list[Fact]:
        clauses = [f"kind IN ({_placeholders(len(kinds))})"]
        params: list[Any] = list(kinds)
        if agent_id is not None:
            clauses.append("agent_id = ?")
            params.append(agent_id)
        if not include_superseded:
            clauses.append("superseded_by IS NULL")
        sql = f"SELECT {self._FACT_COLUMNS} FROM facts WHERE {' AND '.join(clauses)} ORDER BY created_at, id"
        rows = self._read(lambda c: c.execute(sql, params).fetchall())
        return [self._fact(r) for r in rows]

    def supersedes(self, fact_ids: Sequence[str]) -> dict[str, list[str]]:
        ids = list(dict.fromkeys(fact_ids))
        if not ids:
            return {}

        def work(c: sqlite3.Connection) -> dict[str, list[str]]:
            out: dict[str, list[str]] = {}
            for chunk in _chunks(ids):
                for by, fact_id in c.execute(
                    "SELECT superseded_by, id FROM facts WHERE superseded_by IN "
                    f"({_placeholders(len(chunk))}) "
                    "ORDER BY created_at, id",
                    list(chunk),
                ).fetchall():
                    out.setdefault(by, []).append(fact_id)
            return out

        return self._read(work)

    def neighbours(self, fact_ids: Sequence[str], window: int) -> dict[str, list[str]]:
        ids = list(dict.fromkeys(fact_ids))
        if not ids or window <= 0:
            return {}
        live = "superseded_by IS NULL AND kind = 'fact'"
        side_sql = (
            "SELECT * FROM (SELECT ? AS src, id, created_at FROM facts INDEXED BY facts_live_recent "
            f"WHERE agent_id = ? AND {live} AND (created_at, id) {{op}} (?, ?) ORDER BY {{order}} LIMIT ?)"
        )
        before_sql = side_sql.format(op="<", order="created_at DESC, id DESC")
        after_sql = side_sql.format(op=">", order="created_at, id")

        def work(c: sqlite3.Connection) -> dict[str, list[str]]:
            anchors: dict[str, tuple[str, int]] = {}
            for chunk in _chunks(ids):
                for fact_id, agent, created in c.execute(
                    f"SELECT id, agent_id, created_at FROM facts WHERE {live} "
                    f"AND id IN ({_placeholders(len(chunk))})",
                    list(chunk),
                ).fetchall():
                    anchors[fact_id] = (agent, created)
            found: dict[str, list[tuple[int, str]]] = {fid: [] for fid in ids if fid in anchors}
            known = list(found)
            for chunk in _chunks(known, 200):  # two sub-selects per fact, one statement per chunk
                parts: list[str] = []
                params: list[Any] = []
                for fact_id in chunk:
                    agent, created = anchors[fact_id]
                    for sql in (before_sql, after_sql):
                        parts.append(sql)
                        params.extend((fact_id, agent, created, fact_id, window))
                for src, other, created in c.execute(" UNION ALL ".join(parts), params).fetchall():
                    found[src].append((created, other))
            return {fid: [other for _, other in sorted(rows)] for fid, rows in found.items()}

        return self._read(work)

    def aliases(self, agent_ids: Sequence[str]) -> list[Fact]:
        if not agent_ids:
            return []
        rows = self._read(
            lambda c: c.execute(
                f"SELECT {self._FACT_COLUMNS} FROM facts WHERE agent_id IN ({_placeholders(len(agent_ids))}) "
                "AND kind = 'alias' AND superseded_by IS NULL ORDER BY created_at, id",
                list(agent_ids),
            ).fetchall()
        )
        return [self._fact(r) for r in rows]

    def _remove_from_indexes(self, c: sqlite3.Connection, rows: Sequence[tuple[int, str]]) -> None:
        """Drop full-text and vector entries of the given (rowid, agent_id) facts."""
        agents: set[str] = set()
        for rowid, agent in rows:
            c.execute("DELETE FROM facts_fts WHERE rowid = ?", (rowid,))
            if c.execute("DELETE FROM vectors WHERE fact_rowid = ?", (rowid,)).rowcount:
                agents.add(agent)
        for agent in agents:
            self._bump(c, f"vec_removed:{agent}")

    def supersede(self, fact_ids: Sequence[str], superseded_by: str) -> list[str]:
        ids = list(dict.fromkeys(fact_ids))

        def work(c: sqlite3.Connection) -> list[str]:
            changed: list[str] = []
            index_rows: list[tuple[int, str]] = []
            for fact_id in ids:
                row = c.execute(
                    "SELECT rowid, agent_id, kind FROM facts WHERE id = ? AND superseded_by IS NULL",
                    (fact_id,),
                ).fetchone()
                if row is None:
                    continue
                c.execute(
                    "UPDATE facts SET superseded_by = ?, embed_state = 0 WHERE rowid = ?",
                    (superseded_by, row[0]),
                )
                if row[2] == "fact":
                    index_rows.append((row[0], row[1]))
                changed.append(fact_id)
            self._remove_from_indexes(c, index_rows)
            return changed

        return self._write(work) if ids else []

    def set_pinned(self, fact_ids: Sequence[str], pinned: bool, at: datetime) -> list[str]:
        ids = list(dict.fromkeys(fact_ids))

        def work(c: sqlite3.Connection) -> list[str]:
            changed = []
            for fact_id in ids:
                cursor = c.execute(
                    "UPDATE facts SET pinned = ?, pinned_at = ? WHERE id = ? AND superseded_by IS NULL "
                    "AND pinned != ?",
                    (int(pinned), _us(at) if pinned else None, fact_id, int(pinned)),
                )
                if cursor.rowcount:
                    changed.append(fact_id)
            return changed

        return self._write(work) if ids else []

    def record_access(self, fact_ids: Sequence[str], at: datetime) -> None:
        ids = list(dict.fromkeys(fact_ids))
        if not ids:
            return
        stamp = _us(at)

        def work(c: sqlite3.Connection) -> None:
            for chunk in _chunks(ids):
                c.execute(
                    "UPDATE facts SET access_count = access_count + 1, accessed_at = max(accessed_at, ?) "
                    f"WHERE superseded_by IS NULL AND id IN ({_placeholders(len(chunk))})",
                    [stamp, *chunk],
                )

        self._write(work)

    def update_weights(self, weights: dict[str, float]) -> int:
        if not weights:
            return 0

        def work(c: sqlite3.Connection) -> int:
            changed = 0
            for fact_id, weight in weights.items():
                changed += c.execute(
                    "UPDATE facts SET weight = ? WHERE id = ? AND weight > ?", (weight, fact_id, weight)
                ).rowcount
            return changed

        return self._write(work)

    def delete_facts(self, fact_ids: Sequence[str]) -> list[str]:
        ids = list(dict.fromkeys(fact_ids))

        def work(c: sqlite3.Connection) -> list[str]:
            deleted: list[str] = []
            index_rows: list[tuple[int, str]] = []
            for fact_id in ids:
                row = c.execute(
                    "SELECT rowid, agent_id FROM facts WHERE id = ? AND pinned = 0", (fact_id,)
                ).fetchone()
                if row is None:
                    continue
                index_rows.append((row[0], row[1]))
                c.execute("DELETE FROM facts WHERE rowid = ?", (row[0],))
                deleted.append(fact_id)
            self._remove_from_indexes(c, index_rows)
            return deleted

        return self._write(work) if ids else []

    def agents(self) -> list[str]:
        rows = self._read(
            lambda c: c.execute(
                "SELECT agent_id FROM facts UNION SELECT agent_id FROM checkpoints "
                "UNION SELECT agent_id FROM links "
                "ORDER BY 1"
            ).fetchall()
        )
        return [r[0] for r in rows]

    def stats(self, agent_id: str) -> MemoryStats:
        def work(c: sqlite3.Connection) -> MemoryStats:
            row = c.execute(
                "SELECT "
                " sum(kind = 'fact' AND superseded_by IS NULL),"
                " sum(kind = 'fact' AND superseded_by IS NOT NULL),"
                " sum(kind = 'alias' AND superseded_by IS NULL),"
                " sum(pinned AND superseded_by IS NULL),"
                " min(CASE WHEN kind = 'fact' AND superseded_by IS NULL THEN created_at END),"
                " max(CASE WHEN kind = 'fact' AND superseded_by IS NULL THEN created_at END),"
                " avg(CASE WHEN kind = 'fact' AND superseded_by IS NULL THEN weight END),"
                " sum(embed_state = 1 AND superseded_by IS NULL)"
                " FROM facts WHERE agent_id = ?",
                (agent_id,),
            ).fetchone()
            checkpoints = c.execute(
                "SELECT count(*) FROM checkpoints WHERE agent_id = ?", (agent_id,)
            ).fetchone()[0]
            links = c.execute("SELECT count(*) FROM links WHERE agent_id = ?", (agent_id,)).fetchone()[0]
            return MemoryStats(
                agent_id=agent_id,
                fact_count=row[0] or 0,
                superseded_count=row[1] or 0,
                alias_count=row[2] or 0,
                pinned_count=row[3] or 0,
                checkpoint_count=checkpoints,
                link_count=links,
                pending_embeddings=row[7] or 0,
                oldest_at=_dt(row[4]),
                newest_at=_dt(row[5]),
                avg_weight=round(float(row[6]), 6) if row[6] is not None else 0.0,
            )

        return self._read(work)

    # -- candidate retrieval -----------------------------------------------------------------------
    def _query_tokenizer(self, c: sqlite3.Connection) -> None:
        if getattr(self._local, "qtok", False):
            return
        c.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.gm_qtok USING fts5(t, tokenize='{FTS_TOKENIZER}')"
        )
        c.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.gm_qtok_vocab USING fts5vocab(temp, gm_qtok, 'instance')"
        )
        self._local.qtok = True

    def document_frequencies(self, terms: Sequence[str]) -> dict[str, int]:
        terms = list(dict.fromkeys(terms))
        if not terms:
            return {}

        def work(c: sqlite3.Connection) -> dict[str, int]:
            self._query_tokenizer(c)
            c.execute("DELETE FROM temp.gm_qtok")
            c.executemany(
                "INSERT INTO temp.gm_qtok(rowid, t) VALUES (?, ?)", [(i + 1, t) for i, t in enumerate(terms)]
            )
            stems: dict[int, list[str]] = {}
            for term, doc in c.execute("SELECT term, doc FROM temp.gm_qtok_vocab").fetchall():
                stems.setdefault(int(doc), []).append(term)
            c.execute("DELETE FROM temp.gm_qtok")
            result: dict[str, int] = {}
            for i, term in enumerate(terms):
                counts = []
                for stem in stems.get(i + 1, []):
                    row = c.execute("SELECT doc FROM facts_vocab WHERE term = ?", (stem,)).fetchone()
                    counts.append(int(row[0]) if row else 0)
                result[term] = min(counts) if counts else 0
            return result

        return self._read(work)

    @staticmethod
    def _confidence_clause(confidences: Sequence[str] | None, column: str, params: list[Any]) -> str:
        if confidences is None:
            return ""
        params.extend(confidences)
        return f" AND {column} IN ({_placeholders(len(confidences))})"

    def keyword_search(
        self,
        agent_ids: Sequence[str],
        terms: Sequence[str],
        limit: int,
        confidences: Sequence[str] | None = None,
    ) -> list[ScoredId]:
        terms = [t for t in terms if t.strip()]
        if not terms or not agent_ids or limit <= 0 or confidences == []:
            return []
        match = fts_match_expression(terms)
        filters: list[Any] = [*agent_ids]
        where = f"f.agent_id IN ({_placeholders(len(agent_ids))})"
        where += self._confidence_clause(confidences, "f.confidence", filters)
        inner_limit = max(2 * limit, 50)

        def work(c: sqlite3.Connection) -> list[tuple[str, float]]:
            # Rank inside FTS5 first (no per-match join), then filter the best rows by namespace/confidence.
            inner = c.execute(
                "SELECT rowid, bm25(facts_fts) AS s FROM facts_fts WHERE facts_fts MATCH ? "
                "ORDER BY s, rowid LIMIT ?",
                (match, inner_limit),
            ).fetchall()
            if not inner:
                return []
            score = dict(inner)
            ranked: list[tuple[float, int, str]] = []
            for chunk in _chunks(list(score)):
                for rowid, fact_id, created in c.execute(
                    "SELECT f.rowid, f.id, f.created_at FROM facts f NOT INDEXED "
                    f"WHERE f.rowid IN ({_placeholders(len(chunk))}) AND {where}",
                    [*chunk, *filters],
                ).fetchall():
                    ranked.append((score[rowid], created, fact_id))
            ranked.sort()
            # Answer from the FTS5 cut unless it was full and too few of its rows belong to the namespace.
            # Every fact scoring better than the cut is in it; facts tied with the cut's last score are
            # admitted in insertion (rowid) order, which is deterministic and never reorders the list.
            if len(inner) < inner_limit or len(ranked) >= limit:
                return [(fact_id, s) for s, _, fact_id in ranked[:limit]]
            return c.execute(
                "SELECT f.id, bm25(facts_fts) AS s FROM facts_fts JOIN facts f ON f.rowid = facts_fts.rowid "
                f"WHERE facts_fts MATCH ? AND {where} ORDER BY s, f.created_at, f.id LIMIT ?",
                [match, *filters, limit],
            ).fetchall()

        return [ScoredId(fid, -float(score)) for fid, score in self._read(work)]

    def rank_info(self, fact_ids: Sequence[str]) -> dict[str, tuple[datetime, str]]:
        ids = list(dict.fromkeys(fact_ids))
        if not ids:
            return {}

        def work(c: sqlite3.Connection) -> dict[str, tuple[datetime, str]]:
            out: dict[str, tuple[datetime, str]] = {}
            for chunk in _chunks(ids):
                for fact_id, created, confidence in c.execute(
                    "SELECT id, created_at, confidence FROM facts WHERE superseded_by IS NULL "
                    f"AND kind = 'fact' AND id IN ({_placeholders(len(chunk))})",
                    list(chunk),
                ).fetchall():
                    out[fact_id] = (_dt(created), confidence)
            return out

        return self._read(work)

    def recent(
        self, agent_ids: Sequence[str], limit: int, confidences: Sequence[str] | None = None
    ) -> list[str]:
        if not agent_ids or limit <= 0 or confidences == []:
            return []
        params: list[Any] = []
        parts = []
        for agent in agent_ids:
            part_params: list[Any] = [agent]
            clause = self._confidence_clause(confidences, "confidence", part_params)
            parts.append(
                "SELECT * FROM (SELECT id, created_at FROM facts INDEXED BY facts_live_recent "
                f"WHERE agent_id = ? AND superseded_by IS NULL AND kind = 'fact'{clause} "
                "ORDER BY created_at DESC, id LIMIT ?)"
            )
            params.extend([*part_params, limit])
        sql = " UNION ALL ".join(parts) + " ORDER BY created_at DESC, id LIMIT ?"
        params.append(limit)
        rows = self._read(lambda c: c.execute(sql, params).fetchall())
        return [r[0] for r in rows]

    # -- vectors -----------------------------------------------------------------------------------
    def _put_vector(self, c: sqlite3.Connection, rowid: int, fact: Fact, vector: Vector) -> None:
        np = load_numpy()

        array = np.asarray(vector, dtype=np.float32)
        norm = float(np.linalg.norm(array))
        if norm > 0:
            array = array / norm
        c.execute(
            "INSERT OR REPLACE INTO vectors(fact_rowid, agent_id, confidence, vec) VALUES (?,?,?,?)",
            (rowid, fact.agent_id, _CONFIDENCE_CODE.get(fact.confidence, 0), array.tobytes()),
        )

    def embedding_model(self) -> str | None:
        return self._read(self._current_model)

    def reset_embeddings(self, model: str | None) -> int:
        def work(c: sqlite3.Connection) -> int:
            agents = [r[0] for r in c.execute("SELECT DISTINCT agent_id FROM vectors").fetchall()]
            c.execute("DELETE FROM vectors")
            for agent in agents:
                self._bump(c, f"vec_removed:{agent}")
            if model is None:
                c.execute("DELETE FROM meta WHERE key = 'embedding_model'")
                c.execute("UPDATE facts SET embed_state = 0 WHERE embed_state != 0")
                return 0
            c.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('embedding_model', ?)", (model,))
            return c.execute(
                "UPDATE facts SET embed_state = 1 WHERE kind = 'fact' AND superseded_by IS NULL"
            ).rowcount

        with self._vector_lock:
            self._vector_cache.clear()
        return self._write(work)

    def pending_embeddings(self, limit: int) -> list[Fact]:
        rows = self._read(
            lambda c: c.execute(
                f"SELECT {self._FACT_COLUMNS} FROM facts WHERE embed_state = 1 AND superseded_by IS NULL "
                "ORDER BY rowid LIMIT ?",
                (limit,),
            ).fetchall()
        )
        return [self._fact(r) for r in rows]

    def pending_embedding_count(self) -> int:
        return self._read(
            lambda c: c.execute(
                "SELECT count(*) FROM facts WHERE embed_state = 1 AND superseded_by IS NULL"
            ).fetchone()[0]
        )

    def set_vectors(self, items: Iterable[tuple[str, Vector]], model: str) -> int:
        items = list(items)

        def work(c: sqlite3.Connection) -> int:
            if self._current_model(c) != model:
                return 0
            stored = 0
            agents: set[str] = set()
            for fact_id, vector in items:
                row = c.execute(
                    f"SELECT rowid, {self._FACT_COLUMNS} FROM facts WHERE id = ? "
                    "AND superseded_by IS NULL AND kind = 'fact'",
                    (fact_id,),
                ).fetchone()
                if row is None:
                    continue
                fact = self._fact(row[1:])
                self._put_vector(c, row[0], fact, vector)
                c.execute("UPDATE facts SET embed_state = 2 WHERE rowid = ?", (row[0],))
                agents.add(fact.agent_id)
                stored += 1
            for agent in agents:  # vectors of older rows: the in-memory cache must reload in full
                self._bump(c, f"vec_removed:{agent}")
            return stored

        return self._write(work) if items else 0

    def _vector_matrix(self, c: sqlite3.Connection, agent_id: str) -> _VectorCache:
        np = load_numpy()

        rows = c.execute(
            "SELECT key, value FROM meta WHERE key IN (?, ?)",
            (f"vec_added:{agent_id}", f"vec_removed:{agent_id}"),
        ).fetchall()
        marks = dict(rows)
        added, removed = marks.get(f"vec_added:{agent_id}", "0"), marks.get(f"vec_removed:{agent_id}", "0")
        with self._vector_lock:
            cache = self._vector_cache.get(agent_id)
        if cache is not None and cache.added == added and cache.removed == removed:
            return cache
        if cache is not None and cache.removed == removed:
            fresh = c.execute(
                "SELECT fact_rowid, confidence, vec FROM vectors WHERE agent_id = ? AND fact_rowid > ? "
                "ORDER BY fact_rowid",
                (agent_id, cache.max_rowid),
            ).fetchall()
            base = cache
        else:
            fresh = c.execute(
                "SELECT fact_rowid, confidence, vec FROM vectors WHERE agent_id = ? ORDER BY fact_rowid",
                (agent_id,),
            ).fetchall()
            base = None
        rowids = np.fromiter((r[0] for r in fresh), dtype=np.int64, count=len(fresh))
        confs = np.fromiter((r[1] for r in fresh), dtype=np.int8, count=len(fresh))
        dims = {len(r[2]) for r in fresh}
        if len(dims) > 1:
            raise CorruptRecord(f"vectors of agent {agent_id!r} have mixed dimensions; re-embed the store")
        if fresh:
            # An owned, writeable copy: matmul on a read-only frombuffer view skips BLAS (80x slower).
            raw = np.frombuffer(b"".join(r[2] for r in fresh), dtype=np.float32)
            matrix = raw.reshape(len(fresh), -1).copy()
        else:
            matrix = np.zeros((0, base.matrix.shape[1] if base is not None else 0), dtype=np.float32)
        if base is not None and len(base.rowids):
            if fresh and base.matrix.shape[1] != matrix.shape[1]:
                raise CorruptRecord(
                    f"vectors of agent {agent_id!r} have mixed dimensions; re-embed the store"
                )
            rowids = np.concatenate([base.rowids, rowids])
            confs = np.concatenate([base.confidences, confs])
            matrix = np.concatenate([base.matrix, matrix]) if fresh else base.matrix
        cache = _VectorCache(added, removed, rowids, confs, matrix)
        with self._vector_lock:
            self._vector_cache[agent_id] = cache
        return cache

    def vector_search(
        self,
        agent_ids: Sequence[str],
        query: Vector,
        model: str,
        limit: int,
        confidences: Sequence[str] | None = None,
    ) -> list[ScoredId]:
        np = load_numpy()

        if not agent_ids or limit <= 0 or confidences == []:
            return []
        q = np.asarray(query, dtype=np.float32)
        norm = float(np.linalg.norm(q))
        if norm == 0 or not np.isfinite(norm):
            return []
        q = q / norm
        allowed = (
            None if confidences is None else np.array([_CONFIDENCE_CODE[c] for c in confidences], np.int8)
        )

        def work(c: sqlite3.Connection) -> list[ScoredId]:
            if self._current_model(c) != model:
                return []
            pooled: list[tuple[float, int]] = []
            for agent in dict.fromkeys(agent_ids):
                cache = self._vector_matrix(c, agent)
                if not len(cache.rowids) or cache.matrix.shape[1] != q.shape[0]:
                    continue
                sims = cache.matrix @ q
                if allowed is not None:
                    sims = np.where(np.isin(cache.confidences, allowed), sims, -np.inf)
                take = min(limit, len(sims))
                top = np.argpartition(-sims, take - 1)[:take] if take < len(sims) else np.arange(len(sims))
                values = sims[top]
                keep = np.isfinite(values)
                pooled.extend(zip(values[keep].tolist(), cache.rowids[top][keep].tolist(), strict=True))
            if not pooled:
                return []
            rowids = [r for _, r in pooled]
            meta: dict[int, tuple[str, int]] = {}
            for chunk in _chunks(rowids):
                for rowid, fact_id, created in c.execute(
                    f"SELECT rowid, id, created_at FROM facts WHERE superseded_by IS NULL AND rowid IN "
                    f"({_placeholders(len(chunk))})",
                    list(chunk),
                ).fetchall():
                    meta[rowid] = (fact_id, created)
            ranked = sorted(((-s, meta[r][1], meta[r][0]) for s, r in pooled if r in meta))
            return [ScoredId(fact_id, -neg) for neg, _, fact_id in ranked[:limit]]

        return self._read(work)

    # -- checkpoints -------------------------------------------------------------------------------
    _CHECKPOINT_COLUMNS = "id, agent_id, created_at, message_count, state, messages, metadata, provenance"

    @staticmethod
    def _checkpoint_params(cp: Checkpoint) -> tuple[Any, ...]:
        return (
            cp.id,
            cp.agent_id,
            _us(cp.created_at),
            json.dumps(cp.state, ensure_ascii=False),
            json.dumps(cp.messages, ensure_ascii=False) if cp.messages is not None else None,
            cp.message_count,
            json.dumps(cp.metadata, ensure_ascii=False),
            cp.provenance.model_dump_json(exclude_none=True),
        )

    _CHECKPOINT_INSERT = (
        "INSERT INTO checkpoints (id, agent_id, created_at, state, messages, message_count, "
        "metadata, provenance) VALUES (?,?,?,?,?,?,?,?)"
    )

    def save_checkpoint(self, checkpoint: Checkpoint) -> None:
        params = self._checkpoint_params(checkpoint)
        self._write(lambda c: c.execute(self._CHECKPOINT_INSERT, params))

    def import_checkpoints(self, checkpoints: Sequence[Checkpoint]) -> tuple[int, int]:
        def work(c: sqlite3.Connection) -> tuple[int, int]:
            added = 0
            for cp in checkpoints:
                if not c.execute("SELECT 1 FROM checkpoints WHERE id = ?", (cp.id,)).fetchone():
                    c.execute(self._CHECKPOINT_INSERT, self._checkpoint_params(cp))
                    added += 1
            return added, len(checkpoints) - added

        return self._write(work)

    def latest_checkpoint(self, agent_id: str) -> Checkpoint | None:
        row = self._read(
            lambda c: c.execute(
                f"SELECT {self._CHECKPOINT_COLUMNS} FROM checkpoints WHERE agent_id = ? "
                "ORDER BY created_at DESC, id DESC LIMIT 1",
                (agent_id,),
            ).fetchone()
        )
        return self._checkpoint(row) if row else None

    def get_checkpoint(self, checkpoint_id: str) -> Checkpoint | None:
        row = self._read(
            lambda c: c.execute(
                f"SELECT {self._CHECKPOINT_COLUMNS} FROM checkpoints WHERE id = ?", (checkpoint_id,)
            ).fetchone()
        )
        return self._checkpoint(row) if row else None

    def list_checkpoints(self, agent_id: str | None = None, limit: int | None = None) -> list[Checkpoint]:
        params: list[Any] = []
        sql = f"SELECT {self._CHECKPOINT_COLUMNS} FROM checkpoints"
        if agent_id is not None:
            sql += " WHERE agent_id = ?"
            params.append(agent_id)
        sql += " ORDER BY created_at DESC, id DESC"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        rows = self._read(lambda c: c.execute(sql, params).fetchall())
        return [self._checkpoint(r) for r in rows]

    # -- links -------------------------------------------------------------------------------------
    _LINK_COLUMNS = "id, agent_id, source, target, relation, created_at, provenance"
    _LINK_INSERT = (
        "INSERT INTO links (id, agent_id, source, target, relation, created_at, provenance) "
        "VALUES (?,?,?,?,?,?,?) ON CONFLICT DO NOTHING"
    )

    @staticmethod
    def _link_params(link: Link) -> tuple[Any, ...]:
        return (
            link.id,
            link.agent_id,
            link.source,
            link.target,
            link.relation,
            _us(link.created_at),
            link.provenance.model_dump_json(exclude_none=True),
        )

    def add_link(self, link: Link) -> Link:
        def work(c: sqlite3.Connection) -> Link:
            c.execute(self._LINK_INSERT, self._link_params(link))
            row = c.execute(
                f"SELECT {self._LINK_COLUMNS} FROM links WHERE agent_id = ? AND source = ? AND "
                "target = ? AND relation = ?",
                (link.agent_id, link.source, link.target, link.relation),
            ).fetchone()
            return self._link(row)

        return self._write(work)

    def import_links(self, links: Sequence[Link]) -> tuple[int, int]:
        def work(c: sqlite3.Connection) -> tuple[int, int]:
            added = sum(c.execute(self._LINK_INSERT, self._link_params(link)).rowcount for link in links)
            return added, len(links) - added

        return self._write(work)

    def links(self, agent_ids: Sequence[str] | None = None) -> list[Link]:
        params: list[Any] = []
        sql = f"SELECT {self._LINK_COLUMNS} FROM links"
        if agent_ids is not None:
            if not agent_ids:
                return []
            sql += f" WHERE agent_id IN ({_placeholders(len(agent_ids))})"
            params.extend(agent_ids)
        sql += " ORDER BY created_at, id"
        rows = self._read(lambda c: c.execute(sql, params).fetchall())
        return [self._link(r) for r in rows]

    # -- counters ----------------------------------------------------------------------------------
    def bump_write_counter(self, agent_id: str, by: int = 1) -> int:
        key = f"writes:{agent_id}"

        def work(c: sqlite3.Connection) -> int:
            c.execute(
                "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET "
                "value = CAST(value AS INTEGER) + ?",
                (key, str(by), by),
            )
            return int(c.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()[0])

        return self._write(work)

    def reset_write_counter(self, agent_id: str) -> None:
        self._write(lambda c: c.execute("DELETE FROM meta WHERE key = ?", (f"writes:{agent_id}",)))


class _VectorCache:
    """Normalised vectors of one agent held in memory, refreshed incrementally from the database."""

    __slots__ = ("added", "confidences", "matrix", "max_rowid", "removed", "rowids")

    def __init__(self, added: str, removed: str, rowids: Any, confidences: Any, matrix: Any) -> None:
        self.added, self.removed = added, removed
        self.rowids, self.confidences, self.matrix = rowids, confidences, matrix
        self.max_rowid = int(rowids.max()) if len(rowids) else 0
