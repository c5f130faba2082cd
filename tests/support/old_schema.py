"""A graymatter SQLite file created the way an older schema created it, for migration tests."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from graymatter.store.sqlite import schema
from graymatter.store.sqlite.keys import fact_key
from graymatter.store.sqlite.rows import text_hash


def old_schema_db(directory: Path, version: int) -> sqlite3.Connection:
    """Create ``directory`` with a database at schema ``version`` (its migrations 1..``version`` applied, in
    WAL mode, ``gm_text_hash`` registered as those versions' code did) and return an autocommit connection
    to it; the caller writes the rows that version would have written, then closes it."""
    directory.mkdir()
    conn = sqlite3.connect(directory / schema.DB_FILENAME, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.create_function("gm_text_hash", 1, text_hash, deterministic=True)
    conn.create_function("gm_fact_key", 1, fact_key, deterministic=True)
    for step in range(1, version + 1):
        for statement in schema._MIGRATIONS[step]:
            conn.execute(statement)
    conn.execute(f"PRAGMA user_version = {version}")
    return conn


def migrate_to(db: Path, version: int) -> None:
    """Apply the migrations after the file's version up to ``version`` in one transaction, as the store does
    (for a test of one step that reads the rows in that step's own layout; opening a store would go on to
    the current schema)."""
    conn = sqlite3.connect(db, isolation_level=None)
    conn.create_function("gm_text_hash", 1, text_hash, deterministic=True)
    conn.create_function("gm_fact_key", 1, fact_key, deterministic=True)
    try:
        conn.execute("BEGIN IMMEDIATE")
        current = conn.execute("PRAGMA user_version").fetchone()[0]
        for step in range(current + 1, version + 1):
            for statement in schema._MIGRATIONS[step]:
                conn.execute(statement)
            conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('schema_version', ?)", (str(step),))
            conn.execute(f"PRAGMA user_version = {step}")
        conn.execute("COMMIT")
    finally:
        conn.close()
