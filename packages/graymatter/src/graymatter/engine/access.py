"""Scoped access tokens: who may read or write which agent namespaces.

A token looks like ``gm_<id>_<secret>``: ``id`` (16 hex chars) is public and names the token in listings,
logs and provenance; ``secret`` (32 random bytes, base64url) is shown once at creation and never stored.
The store keeps only ``sha256("graymatter-token-v1:" + id + ":" + secret)``; the secret has 256 bits of
entropy, so a fast hash is enough (no password-stretching needed) and verification is a constant-time
compare.

Each token is scoped to a set of agent namespaces (``*`` = every namespace) and is ``read`` or
``read-write``. Tokens live next to the data they protect: in ``<dir>/tokens.db`` for the embedded SQLite
store, in the ``gm_tokens`` table of the database for PostgreSQL (so every server behind a load balancer
sees the same tokens and a revocation takes effect on all of them at once; lookups are not cached).

The per-store default HTTP token (``graymatter.http-token`` / ``GRAYMATTER_HTTP_TOKEN``) keeps working as
an all-namespaces read-write principal, so a single-user loopback setup needs no token management.

Enforcement: the HTTP layer authenticates the bearer token once per request (a :class:`PrincipalSource`:
:class:`TokenService`, or :class:`StaticToken` for a single fixed token) and binds the resulting
:class:`Principal` with :func:`bind_principal`; :class:`graymatter.engine.scoped.ScopedMemory` checks every
call against it, so REST and MCP over HTTP share one rule. A refused call raises :class:`AccessDenied`
before any store effect.
"""

from __future__ import annotations

import base64
import contextlib
import contextvars
import hashlib
import hmac
import os
import re
import secrets
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from graymatter.errors import AccessDenied, InvalidToken

ALL_AGENTS = "*"
TOKEN_PREFIX = "gm_"
DEFAULT_TOKEN_ID = "default"
_HASH_DOMAIN = "graymatter-token-v1"
_TOKEN_RE = re.compile(r"^gm_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$")

AccessMode = Literal["read", "read-write"]


class TokenRecord(BaseModel):
    """A stored token as listed by ``graymatter token list`` (never contains the secret)."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="Public token id (16 hex chars); recorded as provenance of writes.")
    label: str = Field(default="", description="Free-form note given at creation.")
    agents: list[str] = Field(description='Agent namespaces this token may use; ["*"] means all.')
    access: AccessMode = Field(description="read: recall/list/checkpoint reads; read-write: also writes.")
    created_at: datetime
    revoked_at: datetime | None = None

    @property
    def active(self) -> bool:
        return self.revoked_at is None


class Principal(BaseModel):
    """The authenticated caller of one request and what it may touch."""

    model_config = ConfigDict(frozen=True)

    token_id: str
    agents: frozenset[str]
    access: AccessMode

    @property
    def all_agents(self) -> bool:
        return ALL_AGENTS in self.agents

    def can_read(self, agent_id: str) -> bool:
        return self.all_agents or agent_id in self.agents

    def can_write(self, agent_id: str) -> bool:
        return self.access == "read-write" and self.can_read(agent_id)

    def check(self, agent_id: str, *, write: bool) -> None:
        """Raise :class:`AccessDenied` unless this principal may read (or write) ``agent_id``."""
        if write and self.access != "read-write":
            raise AccessDenied(f"token {self.token_id} is read-only")
        if not self.can_read(agent_id):
            raise AccessDenied(f"token {self.token_id} has no access to agent namespace {agent_id!r}")

    @classmethod
    def default(cls) -> Principal:
        """The all-namespaces read-write principal of the store's default token."""
        return cls(token_id=DEFAULT_TOKEN_ID, agents=frozenset({ALL_AGENTS}), access="read-write")


def parse_agents(spec: str) -> list[str]:
    """Parse ``--agents a,b`` into a sorted, de-duplicated list; ``*`` alone means every namespace."""
    agents = sorted({part.strip() for part in spec.split(",") if part.strip()})
    if not agents:
        raise InvalidToken("--agents needs at least one agent id (or * for all)")
    if ALL_AGENTS in agents and len(agents) > 1:
        raise InvalidToken("--agents '*' cannot be combined with named agents")
    return agents


def hash_secret(token_id: str, secret: str) -> str:
    """The stored verifier for one token."""
    return hashlib.sha256(f"{_HASH_DOMAIN}:{token_id}:{secret}".encode()).hexdigest()


def new_token() -> tuple[str, str, str]:
    """Mint a token; return ``(token_id, full_token, stored_hash)``."""
    token_id = secrets.token_hex(8)
    secret = base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode()
    return token_id, f"{TOKEN_PREFIX}{token_id}_{secret}", hash_secret(token_id, secret)


def split_token(presented: str) -> tuple[str, str] | None:
    """``(token_id, secret)`` of a well-formed scoped token, else None."""
    match = _TOKEN_RE.match(presented)
    return (match.group(1), match.group(2)) if match else None


def _now() -> datetime:
    return datetime.now(UTC)


# --------------------------------------------------------------------------------------------- storage


class TokenStore(Protocol):
    """Persistence for token records and their verifiers."""

    def insert(self, record: TokenRecord, token_hash: str) -> None: ...

    def lookup(self, token_id: str) -> tuple[TokenRecord, str] | None: ...

    def list(self) -> list[TokenRecord]: ...

    def revoke(self, token_id: str) -> bool: ...

    def close(self) -> None: ...


def _row_to_record(row: tuple[Any, ...]) -> tuple[TokenRecord, str]:
    token_id, label, agents, access, created_at, revoked_at, token_hash = row
    if isinstance(created_at, str):
        created_at = datetime.fromisoformat(created_at)
    if isinstance(revoked_at, str):
        revoked_at = datetime.fromisoformat(revoked_at)
    created_at = created_at.astimezone(UTC)
    revoked_at = revoked_at.astimezone(UTC) if revoked_at is not None else None
    agent_list = agents.split("\n") if isinstance(agents, str) else list(agents)
    record = TokenRecord(
        id=token_id,
        label=label,
        agents=agent_list,
        access=access,
        created_at=created_at,
        revoked_at=revoked_at,
    )
    return record, token_hash


class SQLiteTokenStore:
    """Tokens of an embedded store: ``<dir>/tokens.db`` (0600), safe for many processes."""

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

    def __init__(self, data_dir: str | os.PathLike[str]) -> None:
        self.path = Path(data_dir) / "tokens.db"
        self._local = threading.local()

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            if not self.path.exists():
                fd = os.open(self.path, os.O_CREAT | os.O_WRONLY | os.O_NOFOLLOW, 0o600)
                os.close(fd)
            conn = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA busy_timeout = 30000")
            conn.execute(self._SCHEMA)
            self._local.conn = conn
        return conn

    def insert(self, record: TokenRecord, token_hash: str) -> None:
        self._conn().execute(
            "INSERT INTO gm_tokens (id, label, agents, access, created_at, revoked_at, token_hash)"
            " VALUES (?, ?, ?, ?, ?, NULL, ?)",
            (
                record.id,
                record.label,
                "\n".join(record.agents),
                record.access,
                record.created_at.isoformat(),
                token_hash,
            ),
        )

    def lookup(self, token_id: str) -> tuple[TokenRecord, str] | None:
        if not self.path.exists():
            return None
        row = (
            self._conn()
            .execute(
                "SELECT id, label, agents, access, created_at, revoked_at, token_hash"
                " FROM gm_tokens WHERE id = ?",
                (token_id,),
            )
            .fetchone()
        )
        return _row_to_record(row) if row else None

    def list(self) -> list[TokenRecord]:
        if not self.path.exists():
            return []
        rows = (
            self._conn()
            .execute(
                "SELECT id, label, agents, access, created_at, revoked_at, token_hash"
                " FROM gm_tokens ORDER BY created_at, id"
            )
            .fetchall()
        )
        return [_row_to_record(row)[0] for row in rows]

    def revoke(self, token_id: str) -> bool:
        cur = self._conn().execute(
            "UPDATE gm_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
            (_now().isoformat(), token_id),
        )
        return cur.rowcount == 1

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None


class PostgresTokenStore:
    """Tokens in the ``gm_tokens`` table of a PostgreSQL store (created by its schema migrations)."""

    def __init__(self, pool: Any) -> None:
        self._pool = pool

    def insert(self, record: TokenRecord, token_hash: str) -> None:
        with self._pool.connection() as conn:
            conn.execute(
                "INSERT INTO gm_tokens (id, label, agents, access, created_at, token_hash)"
                " VALUES (%s, %s, %s, %s, %s, %s)",
                (record.id, record.label, record.agents, record.access, record.created_at, token_hash),
            )

    def lookup(self, token_id: str) -> tuple[TokenRecord, str] | None:
        with self._pool.connection() as conn:
            row = conn.execute(
                "SELECT id, label, agents, access, created_at, revoked_at, token_hash"
                " FROM gm_tokens WHERE id = %s",
                (token_id,),
            ).fetchone()
        return _row_to_record(row) if row else None

    def list(self) -> list[TokenRecord]:
        with self._pool.connection() as conn:
            rows = conn.execute(
                "SELECT id, label, agents, access, created_at, revoked_at, token_hash"
                " FROM gm_tokens ORDER BY created_at, id"
            ).fetchall()
        return [_row_to_record(row)[0] for row in rows]

    def revoke(self, token_id: str) -> bool:
        with self._pool.connection() as conn:
            cur = conn.execute(
                "UPDATE gm_tokens SET revoked_at = now() WHERE id = %s AND revoked_at IS NULL", (token_id,)
            )
            return cur.rowcount == 1

    def close(self) -> None:
        """The pool belongs to the PostgresStore; nothing to release here."""


# --------------------------------------------------------------------------------------------- service


class PrincipalSource(Protocol):
    """Turns a presented bearer token into the caller's :class:`Principal` (None: not a valid token)."""

    def authenticate(self, presented: str | None) -> Principal | None: ...


class StaticToken:
    """One fixed bearer token that authenticates as the default principal (constant-time comparison)."""

    def __init__(self, token: str) -> None:
        self._expected = token.encode()

    def authenticate(self, presented: str | None) -> Principal | None:
        if presented and hmac.compare_digest(presented.encode(), self._expected):
            return Principal.default()
        return None


class TokenService:
    """Create, list, revoke and verify scoped tokens on one :class:`TokenStore`."""

    def __init__(self, store: TokenStore, *, default_token: str | None = None) -> None:
        self.store = store
        self._default = StaticToken(default_token) if default_token else None

    def create(
        self, agents: Iterable[str], *, read_only: bool = False, label: str = ""
    ) -> tuple[str, TokenRecord]:
        """Create a token; return ``(full_token, record)``. The full token is never retrievable again."""
        agent_list = sorted(set(agents))
        if not agent_list or any(not a.strip() for a in agent_list):
            raise InvalidToken("a token needs at least one non-blank agent id (or * for all)")
        if ALL_AGENTS in agent_list and len(agent_list) > 1:
            raise InvalidToken("'*' cannot be combined with named agents")
        if len(label) > 200 or any(ch in label for ch in "\r\n\x00"):
            raise InvalidToken("--label must be one line of at most 200 characters")
        token_id, token, token_hash = new_token()
        record = TokenRecord(
            id=token_id,
            label=label,
            agents=agent_list,
            access="read" if read_only else "read-write",
            created_at=_now(),
        )
        self.store.insert(record, token_hash)
        return token, record

    def list(self) -> list[TokenRecord]:
        return self.store.list()

    def revoke(self, token_id: str) -> bool:
        """Revoke by public id (or by full token); True when an active token was revoked."""
        parts = split_token(token_id)
        if parts is not None:
            token_id = parts[0]
        if not re.fullmatch(r"[0-9a-f]{16}", token_id):
            raise InvalidToken("token id must be 16 hex characters (see `graymatter token list`)")
        return self.store.revoke(token_id)

    def authenticate(self, presented: str | None) -> Principal | None:
        """The principal for a presented bearer token, or None when it is unknown, malformed or revoked."""
        if not presented:
            return None
        if self._default is not None and (default := self._default.authenticate(presented)) is not None:
            return default
        parts = split_token(presented)
        if parts is None:
            return None
        token_id, secret = parts
        found = self.store.lookup(token_id)
        if found is None:
            # Still spend a hash so unknown ids and wrong secrets take the same path.
            hmac.compare_digest(hash_secret(token_id, secret), "0" * 64)
            return None
        record, stored_hash = found
        if not hmac.compare_digest(hash_secret(token_id, secret), stored_hash) or not record.active:
            return None
        return Principal(token_id=record.id, agents=frozenset(record.agents), access=record.access)


def open_token_store(store: Any) -> TokenStore:
    """The token store that belongs to an opened graymatter store (SQLite data dir or PostgreSQL pool)."""
    pool = getattr(store, "pool", None)
    if pool is not None:
        return PostgresTokenStore(pool)
    data_dir = getattr(store, "data_dir", None) or getattr(store, "directory", None)
    if data_dir is None:
        path = getattr(store, "path", None)
        if path is None:
            raise TypeError(f"cannot locate a token store for {type(store).__name__}")
        data_dir = Path(path).parent
    return SQLiteTokenStore(data_dir)


# --------------------------------------------------------------------------------------------- enforcement

_current_principal: contextvars.ContextVar[Principal | None] = contextvars.ContextVar(
    "graymatter_principal", default=None
)


def current_principal() -> Principal | None:
    """The principal bound to the running request, or None for local interfaces (CLI, stdio, library)."""
    return _current_principal.get()


@contextlib.contextmanager
def bind_principal(principal: Principal | None) -> Iterator[None]:
    """Bind ``principal`` to the current context (and tasks spawned from it) for the duration."""
    token = _current_principal.set(principal)
    try:
        yield
    finally:
        _current_principal.reset(token)
