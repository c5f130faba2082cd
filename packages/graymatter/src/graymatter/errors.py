"""Typed errors. Every error carries a stable machine-readable ``code`` and a one-line message.

The hierarchy keeps three failure families apart, because callers react differently to each:

* absence (``NotFound`` / ``NoCheckpoint``): nothing stored matches; a normal outcome;
* bad input (``InvalidInput``): the request was refused before any effect;
* storage trouble (``StorageError`` and subclasses, ``CorruptRecord``): the store could not serve the
  request. ``NoCheckpoint`` is never raised for storage failures or undecodable records.
"""

from __future__ import annotations


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


__all__ = [
    "CorruptDatabase",
    "CorruptRecord",
    "EmbeddingError",
    "GraymatterError",
    "InvalidInput",
    "NoCheckpoint",
    "NotFound",
    "ProviderError",
    "SchemaTooNew",
    "StorageError",
    "StoreUnavailable",
]
