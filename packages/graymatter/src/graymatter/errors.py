"""Typed errors. Every error carries a stable machine-readable ``code`` and a one-line message.

The hierarchy keeps three failure families apart, because callers react differently to each:

* absence (``NotFound`` / ``NoCheckpoint``): nothing stored matches; a normal outcome;
* bad input (``InvalidInput``): the request was refused before any effect;
* storage trouble (``StorageError`` and subclasses, ``CorruptRecord``): the store could not serve the
  request. ``NoCheckpoint`` is never raised for storage failures or undecodable records.

The faces add their own members (``AccessDenied``, ``HttpSecurityError``, ``CliUsageError``,
``ToolFailure``), so one ``except GraymatterError`` sees every refusal. Each face maps the family once, by a
table keyed by class that :func:`for_error` reads along the error's MRO::

    GraymatterError
    ├── InvalidInput (ValueError) ── InvalidToken
    ├── NotFound (LookupError) ── NoCheckpoint
    ├── Conflict
    ├── StorageError ── StoreUnavailable, SchemaTooNew, CorruptDatabase
    ├── CorruptRecord, EmbeddingError, ProviderError
    └── AccessDenied, HttpSecurityError, CliUsageError, ToolFailure
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, TypeVar

_T = TypeVar("_T")


class GraymatterError(Exception):
    """Base class of every graymatter error."""

    code: ClassVar[str] = "graymatter_error"

    def __init_subclass__(cls, *, code: str | None = None, **kwargs: Any) -> None:
        """``class X(GraymatterError, code="x")`` gives ``X`` its stable code; without one it inherits."""
        super().__init_subclass__(**kwargs)
        if code is not None:
            cls.code = code

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class InvalidInput(GraymatterError, ValueError, code="invalid_input"):
    """The request was malformed; nothing was changed."""


class NotFound(GraymatterError, LookupError, code="not_found"):
    """No live record matched the request."""


class NoCheckpoint(NotFound, code="no_checkpoint"):
    """The agent has no checkpoint (or none with the requested id)."""


class StoreNotFound(NotFound, code="store_not_found"):
    """A command that only reads named a store that does not exist (nothing was created)."""


class UnknownAgent(NotFound, code="unknown_agent"):
    """The agent id has no facts, checkpoints or links in this store (a typo looks like lost memory)."""


class Conflict(GraymatterError, code="conflict"):
    """A concurrent change got there first (the fact to revise was already retired); nothing changed."""


class StorageError(GraymatterError, code="storage_error"):
    """The store failed to serve the request (I/O, locking, permissions, ...)."""


class StoreUnavailable(StorageError, code="store_unavailable"):
    """The store cannot be opened or reached at all."""


class SchemaTooNew(StorageError, code="schema_too_new"):
    """The database was written by a newer graymatter; it is left untouched."""


class CorruptDatabase(StorageError, code="corrupt_database"):
    """The database file is damaged, truncated or not a graymatter database; it is left untouched."""


class CorruptRecord(GraymatterError, code="corrupt_record"):
    """A stored record exists but cannot be decoded."""


class EmbeddingError(GraymatterError, code="embedding_error"):
    """An embedding provider failed. Writes never surface this; the fact is queued for re-embedding."""


class ProviderError(GraymatterError, code="provider_error"):
    """An LLM provider used for consolidation failed or answered with something unusable."""


class InvalidToken(InvalidInput):
    """A token argument or scope definition is malformed."""


class AccessDenied(GraymatterError, code="forbidden"):
    """The authenticated principal may not perform this operation on this agent namespace (HTTP 403)."""


class HttpSecurityError(GraymatterError, code="http_security"):
    """The HTTP security settings are unusable (e.g. --no-auth on a public address)."""


class CliUsageError(GraymatterError, code="usage_error"):
    """A command-line usage error (exit 2)."""


class ToolFailure(GraymatterError, code="tool_failure"):
    """An MCP tool error whose message is sent to the caller word for word (text-only ``isError``)."""


def for_error(table: Mapping[type[BaseException], _T], exc: BaseException, default: _T) -> _T:
    """The entry of ``table`` for the nearest class of ``exc`` along its MRO, else ``default``."""
    for cls in type(exc).__mro__:
        if cls in table:
            return table[cls]
    return default


__all__ = [
    "AccessDenied",
    "CliUsageError",
    "Conflict",
    "CorruptDatabase",
    "CorruptRecord",
    "EmbeddingError",
    "GraymatterError",
    "HttpSecurityError",
    "InvalidInput",
    "InvalidToken",
    "NoCheckpoint",
    "NotFound",
    "ProviderError",
    "SchemaTooNew",
    "StorageError",
    "StoreUnavailable",
    "ToolFailure",
    "for_error",
]
