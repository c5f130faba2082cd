"""The embedded SQLite backend (one WAL file, FTS5, vectors in the same file)."""
