"""Scoped tokens of a PostgreSQL store, in its ``gm_tokens`` table."""

from __future__ import annotations

from typing import Any

from psycopg_pool import ConnectionPool

from graymatter.store.tokens import TOKEN_COLUMNS, TokenRecord, token_from_row


class PostgresTokenStore:
    """Tokens in the ``gm_tokens`` table of a PostgreSQL store (created by its schema migrations)."""

    def __init__(self, pool: ConnectionPool[Any]) -> None:
        self._pool = pool

    def insert(self, record: TokenRecord, token_hash: str) -> None:
        """Store a record as given (a migrated record keeps its revocation) with its verifier."""
        with self._pool.connection() as conn:
            conn.execute(
                f"INSERT INTO gm_tokens ({TOKEN_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s)",
                (
                    record.id,
                    record.label,
                    record.agents,
                    record.access,
                    record.created_at,
                    record.revoked_at,
                    token_hash,
                ),
            )

    def lookup(self, token_id: str) -> tuple[TokenRecord, str] | None:
        """The record and verifier of one token id, or ``None``."""
        with self._pool.connection() as conn:
            row = conn.execute(f"SELECT {TOKEN_COLUMNS} FROM gm_tokens WHERE id = %s", (token_id,)).fetchone()
        return token_from_row(row) if row else None

    def list(self) -> list[TokenRecord]:
        """Every record, oldest first."""
        with self._pool.connection() as conn:
            rows = conn.execute(f"SELECT {TOKEN_COLUMNS} FROM gm_tokens ORDER BY created_at, id").fetchall()
        return [token_from_row(row)[0] for row in rows]

    def revoke(self, token_id: str) -> bool:
        """Revoke an active token now (the database's clock); ``True`` when one was revoked."""
        with self._pool.connection() as conn:
            cur = conn.execute(
                "UPDATE gm_tokens SET revoked_at = now() WHERE id = %s AND revoked_at IS NULL", (token_id,)
            )
            return bool(cur.rowcount == 1)

    def close(self) -> None:
        """The pool belongs to the PostgresStore; nothing to release here."""
