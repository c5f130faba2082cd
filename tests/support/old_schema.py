"""A graymatter SQLite file created the way an older schema created it, for migration tests."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from graymatter.store.sqlite import schema
from graymatter.store.sqlite.rows import text_hash


def old_schema_db(directory: Path, version: int) -> sqlite3.Connection:
    """Create ``directory`` with a database at schema ``version`` (its migrations 1..``version`` applied, in
    WAL mode, ``gm_text_hash`` registered as those versions' code did) and return an autocommit connection
    to it; the caller writes the rows that version would have written, then closes it."""
    directory.mkdir()
    conn = sqlite3.connect(directory / schema.DB_FILENAME, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.create_function("gm_text_hash", 1, text_hash, deterministic=True)
    for step in range(1, version + 1):
        for statement in schema._MIGRATIONS[step]:
            conn.execute(statement)
    conn.execute(f"PRAGMA user_version = {version}")
    return conn
