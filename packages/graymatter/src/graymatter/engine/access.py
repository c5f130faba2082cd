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
import re
import secrets
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import Protocol

from pydantic import BaseModel, ConfigDict

from graymatter.errors import AccessDenied, InvalidToken
from graymatter.store.tokens import AccessMode, TokenRecord, TokenStore

ALL_AGENTS = "*"
TOKEN_PREFIX = "gm_"
DEFAULT_TOKEN_ID = "default"
_HASH_DOMAIN = "graymatter-token-v1"
_TOKEN_RE = re.compile(r"^gm_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$")


class Principal(BaseModel):
    """The authenticated caller of one request and what it may touch."""

    model_config = ConfigDict(frozen=True)

    token_id: str | None
    """The public id recorded in provenance; None for a lone static token, whose writes record none."""
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
    def default(cls, token_id: str | None = DEFAULT_TOKEN_ID) -> Principal:
        """The all-namespaces read-write principal of a static token (by default the store's default one)."""
        return cls(token_id=token_id, agents=frozenset({ALL_AGENTS}), access="read-write")


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


# --------------------------------------------------------------------------------------------- service


class PrincipalSource(Protocol):
    """Turns a presented bearer token into the caller's :class:`Principal` (None: not a valid token)."""

    def authenticate(self, presented: str | None) -> Principal | None: ...


class StaticToken:
    """One fixed bearer token for every namespace, read-write (constant-time comparison).

    ``token_id`` names it in provenance: ``mcp serve --http``'s token has none (its writes record no token
    id); the store's default token of ``graymatter serve`` is :data:`DEFAULT_TOKEN_ID`.
    """

    def __init__(self, token: str, *, token_id: str | None) -> None:
        self._expected = token.encode()
        self._principal = Principal.default(token_id)

    def authenticate(self, presented: str | None) -> Principal | None:
        if presented and hmac.compare_digest(presented.encode(), self._expected):
            return self._principal
        return None


class TokenService:
    """Create, list, revoke and verify scoped tokens on one :class:`TokenStore`."""

    def __init__(self, store: TokenStore, *, default_token: str | None = None) -> None:
        self.store = store
        self._default = StaticToken(default_token, token_id=DEFAULT_TOKEN_ID) if default_token else None

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
