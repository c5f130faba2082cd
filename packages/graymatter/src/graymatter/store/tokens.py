"""Scoped-token records and the ``TokenStore`` protocol each backend implements."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

AccessMode = Literal["read", "read-write"]

TOKEN_COLUMNS = "id, label, agents, access, created_at, revoked_at, token_hash"


class TokenRecord(BaseModel):
    """A stored token as listed by ``graymatter token list`` (never contains the secret)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    id: str = Field(description="Public token id (16 hex chars); recorded as provenance of writes.")
    label: str = Field(default="", description="Free-form note given at creation.")
    agents: list[str] = Field(description='Agent namespaces this token may use; ["*"] means all.')
    access: AccessMode = Field(description="read: recall/list/checkpoint reads; read-write: also writes.")
    created_at: datetime
    revoked_at: datetime | None = None

    @property
    def active(self) -> bool:
        return self.revoked_at is None


class TokenStore(Protocol):
    """Persistence for token records and their verifiers."""

    def insert(self, record: TokenRecord, token_hash: str) -> None:
        """Store a record as given (a migrated record keeps its revocation) with its verifier."""

    def lookup(self, token_id: str) -> tuple[TokenRecord, str] | None:
        """The record and verifier of one token id, or ``None``."""

    def list(self) -> list[TokenRecord]:
        """Every record, oldest first."""

    def revoke(self, token_id: str) -> bool:
        """Revoke an active token now; ``True`` when one was revoked."""

    def close(self) -> None:
        """Release what this token store opened."""


def _utc(value: Any) -> datetime | None:
    """A stored timestamp (ISO text on SQLite, a datetime on PostgreSQL) in UTC."""
    if value is None:
        return None
    moment = datetime.fromisoformat(value) if isinstance(value, str) else value
    return moment.astimezone(UTC)


def token_from_row(row: Sequence[Any]) -> tuple[TokenRecord, str]:
    """``(record, verifier)`` from a :data:`TOKEN_COLUMNS` row of either backend."""
    token_id, label, agents, access, created_at, revoked_at, token_hash = row
    agent_list = agents.split("\n") if isinstance(agents, str) else list(agents)
    record = TokenRecord(
        id=token_id, label=label, agents=agent_list, access=access,
        created_at=_utc(created_at), revoked_at=_utc(revoked_at),
    )  # fmt: skip
    return record, token_hash
