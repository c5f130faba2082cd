"""Scoped tokens of a PostgreSQL store, in its ``gm_tokens`` table."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg

from graymatter.store.tokens import TOKEN_COLUMNS, TokenRecord, token_from_row

Run = Callable[[Callable[[psycopg.Connection[Any]], Any]], Any]


class PostgresTokenStore:
    """Tokens in the ``gm_tokens`` table of a PostgreSQL store (created by its schema migrations).

    Every call runs through the store's ``read``/``write`` (its pool, retries and error translation), so a
    database outage is a ``StoreUnavailable`` like any other call, never a raw driver error.
    """

    def __init__(self, read: Run, write: Run) -> None:
        self._read = read
        self._write = write

    def insert(self, record: TokenRecord, token_hash: str) -> None:
        """Store a record as given (a migrated record keeps its revocation) with its verifier."""
        values = (
            record.id,
            record.label,
            record.agents,
            record.access,
            record.created_at,
            record.revoked_at,
            token_hash,
        )
        insert = f"INSERT INTO gm_tokens ({TOKEN_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s)"
        self._write(lambda c: c.execute(insert, values))

    def lookup(self, token_id: str) -> tuple[TokenRecord, str] | None:
        """The record and verifier of one token id, or ``None``."""
        query = f"SELECT {TOKEN_COLUMNS} FROM gm_tokens WHERE id = %s"
        row = self._read(lambda c: c.execute(query, (token_id,)).fetchone())
        return token_from_row(row) if row else None

    def list(self) -> list[TokenRecord]:
        """Every record, oldest first."""
        query = f"SELECT {TOKEN_COLUMNS} FROM gm_tokens ORDER BY created_at, id"
        rows = self._read(lambda c: c.execute(query).fetchall())
        return [token_from_row(row)[0] for row in rows]

    def revoke(self, token_id: str) -> bool:
        """Revoke an active token now (the database's clock); ``True`` when one was revoked."""
        query = "UPDATE gm_tokens SET revoked_at = now() WHERE id = %s AND revoked_at IS NULL"
        return bool(self._write(lambda c: c.execute(query, (token_id,)).rowcount == 1))

    def close(self) -> None:
        """The pool belongs to the PostgresStore; nothing to release here."""
