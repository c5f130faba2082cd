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
import functools
import os
import sqlite3
import threading
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from graymatter.errors import StorageError, StoreUnavailable
from graymatter.fsutil import ensure_private_dir
from graymatter.store.sqlite import schema
from graymatter.store.sqlite.connection import BUSY_TIMEOUT_MS, retry_busy, translate
from graymatter.store.sqlite.decay import SQLiteDecay
from graymatter.store.sqlite.facts import SQLiteFactWrites
from graymatter.store.sqlite.files import create_database_file, database_bytes, validate_database_file
from graymatter.store.sqlite.keys import AgentNames
from graymatter.store.sqlite.reads import PAGES, SQLiteFactReads
from graymatter.store.sqlite.rows import DIALECT, decode_fact
from graymatter.store.sqlite.search import SQLiteKeywordSearch
from graymatter.store.sqlite.tokens import SQLiteTokenStore
from graymatter.store.sqlite.vectors import SQLiteVectors, VectorCache
from graymatter.store.tokens import TokenStore

if TYPE_CHECKING:
    from graymatter.store.base import Store

CHECKPOINT_WAIT_MS = 5_000
"""After ``VACUUM`` the WAL holds the whole new file until a checkpoint copies it back and empties it; a
reader still inside the old snapshot holds that up, and :meth:`SQLiteStore.compact` waits for readers this
long (then the WAL stays until a later checkpoint, which every write brings)."""


class SQLiteStore(SQLiteFactWrites, SQLiteFactReads, SQLiteKeywordSearch, SQLiteVectors, SQLiteDecay):
    """The embedded store. Thread-safe: each thread uses its own connection."""

    kind = "sqlite"
    _dialect = DIALECT

    def __init__(self, data_dir: str | os.PathLike[str]) -> None:
        self.data_dir = Path(data_dir).expanduser()
        super().__init__(self.data_dir / schema.DB_FILENAME)
        self.url = f"sqlite:///{self.path}"
        names = AgentNames(self._read)
        self._dialect = replace(DIALECT, decode_fact=functools.partial(decode_fact, agent_name=names))
        self._page_spelling = replace(PAGES, dialect=self._dialect)
        self._vector_cache: dict[str, VectorCache] = {}
        self._vector_lock = threading.Lock()
        ensure_private_dir(self.data_dir)
        if self.path.is_symlink() or (self.path.exists() and not self.path.is_file()):
            raise StoreUnavailable(f"{self.path} is not a regular file; move it aside or pass another --dir")
        if self.path.exists():
            validate_database_file(self.path)
        else:
            create_database_file(self.path, self.data_dir)
        if 0 < schema.open_schema(self) < schema.REWRITES_FACTS:
            with contextlib.suppress(StorageError):  # the store works without it: ``compact`` can follow
                self.compact()  # an upgraded store should not grow by the old table it no longer reads

    def __enter__(self) -> SQLiteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def ping(self) -> None:
        """Round-trip the database file (readiness probe); raises a StorageError when it cannot be read."""
        self._read(lambda c: c.execute("SELECT 1 FROM meta LIMIT 1").fetchall())

    def token_store(self) -> TokenStore:
        """The scoped tokens of this store: ``<dir>/tokens.db``."""
        return SQLiteTokenStore(self.data_dir)

    def compact(self) -> tuple[int, int]:
        """Merge the full-text index into one segment, ``VACUUM`` the file and empty the WAL; return the
        bytes of file and WAL before and after.

        ``VACUUM`` rebuilds the file without its free pages (a schema migration leaves the old table's,
        pruning and supersession leave others) and keeps every rowid (each table has an ``INTEGER PRIMARY
        KEY`` or none), so the full-text index, text keys and vectors stay valid. It is one write
        transaction: other processes keep reading, writers wait, and a failure (a full disk) changes
        nothing. It needs free space about the store's size twice over: a copy in SQLite's temporary
        directory (``SQLITE_TMPDIR``, not memory) and the new pages in the WAL."""
        before = database_bytes(self.path)
        self._write(lambda c: c.execute("INSERT INTO facts_fts(facts_fts) VALUES ('optimize')"))
        try:
            conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        except sqlite3.Error as exc:
            raise translate(exc, self.path) from None
        try:
            conn.execute("PRAGMA temp_store = FILE")  # the store's connections keep temp tables in memory
            retry_busy(lambda: conn.execute("VACUUM"))
            conn.execute(f"PRAGMA busy_timeout = {CHECKPOINT_WAIT_MS}")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        except sqlite3.Error as exc:
            raise translate(exc, self.path) from None
        finally:
            conn.close()
        return before, database_bytes(self.path)

    # -- counters ----------------------------------------------------------------------------------
    def bump_write_counter(self, agent_id: str, by: int = 1) -> int:
        """Atomically add ``by`` to the agent's writes-since-consolidation counter; return the new value."""
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
        """Zero the agent's writes-since-consolidation counter."""
        self._write(lambda c: c.execute("DELETE FROM meta WHERE key = ?", (f"writes:{agent_id}",)))


if TYPE_CHECKING:

    def _implements_store(store: SQLiteStore) -> Store:
        """The type checker proves here that the backend implements the whole ``Store`` protocol."""
        return store
