"""Per-thread SQLite connections, BEGIN IMMEDIATE writes with bounded retries, and error translation."""

from __future__ import annotations

import contextlib
import random
import sqlite3
import threading
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from graymatter.errors import CorruptDatabase, StorageError, StoreUnavailable
from graymatter.store.sqlite.keys import fact_key
from graymatter.store.sqlite.rows import text_hash

BUSY_TIMEOUT_MS = 5_000
WRITE_RETRY_BUDGET_S = 120.0

T = TypeVar("T")


def is_busy(exc: sqlite3.Error) -> bool:
    """Whether the error is a lock conflict with another connection (worth waiting out)."""
    message = str(exc).lower()
    return "locked" in message or "busy" in message


def translate(exc: sqlite3.Error, path: Path) -> Exception:
    """The graymatter error a driver error stands for, with a hint at the fix."""
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
    if is_busy(exc):
        return StorageError(f"database {path} stayed locked by other processes for too long ({message})")
    return StorageError(f"database {path} failed: {message}")


def retry_busy(step: Callable[[], T]) -> T:
    """Run ``step``, retrying a lock conflict for up to the write retry budget."""
    deadline = time.monotonic() + WRITE_RETRY_BUDGET_S
    while True:
        try:
            return step()
        except sqlite3.OperationalError as exc:
            if not is_busy(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(0.01 + random.random() * 0.02)


WAL_BACKSTOP_PAGES = 4_000
"""A committing connection checkpoints the WAL itself only past this many pages (16 MiB; SQLite's default
is 1,000): below it the store's checkpoint thread copies committed pages back in the background."""
CHECKPOINT_EVERY_S = 0.1
"""The checkpoint thread runs at most this often while writes come in (a passive checkpoint each time).
Every checkpoint copies again the pages the writes since the last one changed (the tail leaves of each
index, FTS5's structure): at 20 ms, under a stream of bulk writes, that re-copying cost about 5 % of ingest
CPU; at 100 ms the WAL still holds at most a tenth of a second of writes (docs/decisions/0011, session 7)."""
CHECKPOINT_AFTER_COMMITS = 8
"""The thread starts at this process's 8th write transaction on the store: a one-shot command (a CLI
``remember``: two or three) never pays for a thread and a connection it would not use."""


def _stored_key(value: str | bytes | int | float | None) -> str | bytes | int | float | None:
    """``keys.fact_key`` of a stored id (anything but a text, which no id should be, is kept as it is)."""
    return fact_key(value) if isinstance(value, str) else value


def configure(conn: sqlite3.Connection) -> None:
    """Per-connection settings (the journal mode is set once, by the schema migration)."""
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA temp_store = MEMORY")
    conn.execute("PRAGMA cache_size = -16000")
    conn.execute("PRAGMA journal_size_limit = 67108864")  # WAL shrinks back to 64 MiB
    conn.execute(f"PRAGMA wal_autocheckpoint = {WAL_BACKSTOP_PAGES}")


class Checkpointer:
    """A daemon thread with its own connection that copies committed WAL pages back into the database
    (``PRAGMA wal_checkpoint(PASSIVE)``: it never blocks a writer or a reader) after writes, at most every
    :data:`CHECKPOINT_EVERY_S`. The copy and its ``fsync`` leave the writer's commit, and SQLite releases
    the GIL while it runs. Started by the :data:`CHECKPOINT_AFTER_COMMITS`-th write; a committing connection
    still checkpoints past :data:`WAL_BACKSTOP_PAGES`, so the WAL stays bounded without this thread."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._commits = 0

    def written(self) -> None:
        """A write transaction committed: checkpoint soon."""
        if self._thread is None:
            self._commits += 1  # racy under threads: the thread starts a commit or two later, never twice
            if self._commits < CHECKPOINT_AFTER_COMMITS:
                return
            with self._lock:
                if self._thread is None and not self._stop.is_set():
                    self._thread = threading.Thread(
                        target=self._run, name="graymatter-checkpoint", daemon=True
                    )
                    self._thread.start()
        self._wake.set()

    def _run(self) -> None:
        try:
            conn = sqlite3.connect(self._path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        except sqlite3.Error:
            return  # the committing connections' own checkpoints remain
        try:
            while self._wake.wait() and not self._stop.is_set():
                self._wake.clear()
                with contextlib.suppress(sqlite3.Error):  # busy or failed: the next write asks again
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                self._stop.wait(CHECKPOINT_EVERY_S)
        finally:
            conn.close()

    def close(self) -> None:
        """Stop the thread (after the checkpoint it may be running). Idempotent."""
        with self._lock:
            self._stop.set()
            thread = self._thread
        self._wake.set()
        if thread is not None:
            thread.join(BUSY_TIMEOUT_MS / 1000)


class SQLiteConnections:
    """The connections of one database file: one per thread, all closed together."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._conn_lock = threading.Lock()
        self._closed = False
        self._checkpointer = Checkpointer(path)

    def _connect(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(
                self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
            )
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            # exact-text keys are computed in SQL (the settle, the delete trigger: schema 7)
            conn.create_function("gm_text_hash", 1, text_hash, deterministic=True)
            conn.create_function("gm_crc32", 1, zlib.crc32, deterministic=True)  # rows.TEXT_HASH_SQL
            conn.create_function("gm_fact_key", 1, _stored_key, deterministic=True)  # migration 9
        except sqlite3.Error as exc:
            raise translate(exc, self.path) from None
        with self._conn_lock:
            self._connections.append(conn)
        return conn

    def _conn(self) -> sqlite3.Connection:
        if self._closed:
            raise StorageError("the store is closed")
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            configure(conn)
            self._local.conn = conn
        return conn

    def close(self) -> None:
        """Close every connection this store opened. Idempotent."""
        self._closed = True
        self._checkpointer.close()
        with self._conn_lock:
            connections, self._connections = self._connections, []
        for conn in connections:
            with contextlib.suppress(sqlite3.Error):
                conn.close()
        self._local = threading.local()

    def _write(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``work`` in one BEGIN IMMEDIATE transaction, retrying lock conflicts with backoff."""
        deadline = time.monotonic() + WRITE_RETRY_BUDGET_S
        delay = 0.005
        while True:
            conn = self._conn()
            try:
                result = self._transaction(conn, work)
                self._checkpointer.written()
                return result
            except sqlite3.OperationalError as exc:
                if is_busy(exc) and time.monotonic() < deadline:
                    time.sleep(delay * (0.5 + random.random()))
                    delay = min(delay * 2, 0.25)
                    continue
                raise translate(exc, self.path) from None
            except sqlite3.Error as exc:
                raise translate(exc, self.path) from None

    @staticmethod
    def _transaction(conn: sqlite3.Connection, work: Callable[[sqlite3.Connection], T]) -> T:
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

    def _read(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``work`` on this thread's connection, retrying lock conflicts."""
        deadline = time.monotonic() + WRITE_RETRY_BUDGET_S
        while True:
            conn = self._conn()
            try:
                return work(conn)
            except sqlite3.OperationalError as exc:
                if is_busy(exc) and time.monotonic() < deadline:
                    time.sleep(0.01 + random.random() * 0.02)
                    continue
                raise translate(exc, self.path) from None
            except sqlite3.Error as exc:
                raise translate(exc, self.path) from None
