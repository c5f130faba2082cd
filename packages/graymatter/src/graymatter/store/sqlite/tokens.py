"""Scoped tokens of an embedded store, in ``<dir>/tokens.db``."""

from __future__ import annotations

import os
import sqlite3
import threading
from datetime import UTC, datetime
from pathlib import Path

from graymatter.store.tokens import TOKEN_COLUMNS, TokenRecord, token_from_row

_SCHEMA = """
    CREATE TABLE IF NOT EXISTS gm_tokens (
        id TEXT PRIMARY KEY,
        label TEXT NOT NULL DEFAULT '',
        agents TEXT NOT NULL,
        access TEXT NOT NULL CHECK (access IN ('read', 'read-write')),
        created_at TEXT NOT NULL,
        revoked_at TEXT,
        token_hash TEXT NOT NULL
    )
"""


class SQLiteTokenStore:
    """Tokens of an embedded store: ``<dir>/tokens.db`` (0600), safe for many processes."""

    def __init__(self, data_dir: str | os.PathLike[str]) -> None:
        self.path = Path(data_dir) / "tokens.db"
        self._local = threading.local()

    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            if not self.path.exists():
                fd = os.open(self.path, os.O_CREAT | os.O_WRONLY | os.O_NOFOLLOW, 0o600)
                os.close(fd)
            conn = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA busy_timeout = 30000")
            conn.execute(_SCHEMA)
            self._local.conn = conn
        return conn

    def insert(self, record: TokenRecord, token_hash: str) -> None:
        """Store a record as given (a migrated record keeps its revocation) with its verifier."""
        revoked = record.revoked_at.isoformat() if record.revoked_at is not None else None
        self._conn().execute(
            f"INSERT INTO gm_tokens ({TOKEN_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                record.id,
                record.label,
                "\n".join(record.agents),
                record.access,
                record.created_at.isoformat(),
                revoked,
                token_hash,
            ),
        )

    def lookup(self, token_id: str) -> tuple[TokenRecord, str] | None:
        """The record and verifier of one token id, or ``None``."""
        if not self.path.exists():
            return None
        query = f"SELECT {TOKEN_COLUMNS} FROM gm_tokens WHERE id = ?"
        row = self._conn().execute(query, (token_id,)).fetchone()
        return token_from_row(row) if row else None

    def list(self) -> list[TokenRecord]:
        """Every record, oldest first."""
        if not self.path.exists():
            return []
        rows = (
            self._conn().execute(f"SELECT {TOKEN_COLUMNS} FROM gm_tokens ORDER BY created_at, id").fetchall()
        )
        return [token_from_row(row)[0] for row in rows]

    def revoke(self, token_id: str) -> bool:
        """Revoke an active token now; ``True`` when one was revoked."""
        cur = self._conn().execute(
            "UPDATE gm_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
            (datetime.now(UTC).isoformat(), token_id),
        )
        return cur.rowcount == 1

    def close(self) -> None:
        """Close this thread's connection."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
