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
    ├── StorageError ── StoreUnavailable, SchemaTooNew, CorruptDatabase
    ├── CorruptRecord, EmbeddingError, ProviderError
    └── AccessDenied, HttpSecurityError, CliUsageError, ToolFailure
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

_T = TypeVar("_T")


class GraymatterError(Exception):
    """Base class of every graymatter error."""

    code: str = "graymatter_error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class InvalidInput(GraymatterError, ValueError):
    """The request was malformed; nothing was changed."""

    code = "invalid_input"


class NotFound(GraymatterError, LookupError):
    """No live record matched the request."""

    code = "not_found"


class NoCheckpoint(NotFound):
    """The agent has no checkpoint (or none with the requested id)."""

    code = "no_checkpoint"


class StorageError(GraymatterError):
    """The store failed to serve the request (I/O, locking, permissions, ...)."""

    code = "storage_error"


class StoreUnavailable(StorageError):
    """The store cannot be opened or reached at all."""

    code = "store_unavailable"


class SchemaTooNew(StorageError):
    """The database was written by a newer graymatter; it is left untouched."""

    code = "schema_too_new"


class CorruptDatabase(StorageError):
    """The database file is damaged, truncated or not a graymatter database; it is left untouched."""

    code = "corrupt_database"


class CorruptRecord(GraymatterError):
    """A stored record exists but cannot be decoded."""

    code = "corrupt_record"


class EmbeddingError(GraymatterError):
    """An embedding provider failed. Writes never surface this; the fact is queued for re-embedding."""

    code = "embedding_error"


class ProviderError(GraymatterError):
    """An LLM provider used for consolidation failed or answered with something unusable."""

    code = "provider_error"


class InvalidToken(InvalidInput):
    """A token argument or scope definition is malformed."""


class AccessDenied(GraymatterError):
    """The authenticated principal may not perform this operation on this agent namespace (HTTP 403)."""

    code = "forbidden"


class HttpSecurityError(GraymatterError):
    """The HTTP security settings are unusable (e.g. --no-auth on a public address)."""

    code = "http_security"


class CliUsageError(GraymatterError):
    """A command-line usage error (exit 2)."""

    code = "usage_error"


class ToolFailure(GraymatterError):
    """An MCP tool error whose message is sent to the caller word for word (text-only ``isError``)."""

    code = "tool_failure"


def for_error(table: Mapping[type[BaseException], _T], exc: BaseException, default: _T) -> _T:
    """The entry of ``table`` for the nearest class of ``exc`` along its MRO, else ``default``."""
    for cls in type(exc).__mro__:
        if cls in table:
            return table[cls]
    return default


__all__ = [
    "AccessDenied",
    "CliUsageError",
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
