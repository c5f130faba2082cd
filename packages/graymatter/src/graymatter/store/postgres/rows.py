"""PostgreSQL row decoding (validated facts, UTC timestamps) and the backend's SQL spelling."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import psycopg

from graymatter.errors import CorruptRecord
from graymatter.models import Fact, Provenance
from graymatter.store.rows import Dialect


def utc(moment: datetime | None) -> datetime | None:
    """Timestamps come back in the session time zone; models carry them as UTC like SQLite does."""
    return moment.astimezone(UTC) if moment is not None else None


def _as_is(moment: datetime) -> datetime:
    return moment


def decode_fact(row: Sequence[Any]) -> Fact:
    """A validated fact from a ``FACT_COLUMNS`` row; a malformed row raises CorruptRecord."""
    try:
        return Fact(
            id=row[0], agent_id=row[1], text=row[2], kind=row[3],
            equivalents=json.loads(row[4]) if row[4] else [],
            created_at=utc(row[5]), accessed_at=utc(row[6]), access_count=row[7],
            weight=min(1.0, max(0.0, row[8])), superseded_by=row[9], pinned=bool(row[10]),
            pinned_at=utc(row[11]), confidence=row[12],
            provenance=Provenance.model_validate_json(row[13] or "{}"),
        )  # fmt: skip
    except (ValueError, TypeError) as exc:
        raise CorruptRecord(f"fact {row[0]} cannot be decoded: {type(exc).__name__}") from None


DIALECT = Dialect("%s", "gm_", _as_is, utc, decode_fact, insertion_order="seq")


def current_model(c: psycopg.Connection[Any]) -> str | None:
    """The embedding model the stored vectors were made with, or ``None``."""
    row = c.execute("SELECT value FROM gm_meta WHERE key = 'embedding_model'").fetchone()
    return str(row[0]) if row else None


def one(row: Any) -> Any:
    """The row a query always returns (an aggregate), for the type checker."""
    if row is None:
        raise CorruptRecord("the database returned no row where one is always expected")
    return row
