"""The embedded SQLite backend (one WAL file, FTS5, vectors in the same file)."""

from graymatter.store.sqlite.store import SQLiteStore

__all__ = ["SQLiteStore"]
