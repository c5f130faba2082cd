"""Store backends. ``open_store`` picks one from a directory path or a URL."""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from pathlib import Path

from graymatter.errors import InvalidInput, StoreUnavailable
from graymatter.store.base import ScoredId, Store, Vector

__all__ = ["PoolBounds", "ScoredId", "Store", "Vector", "open_store"]


@dataclass(frozen=True)
class PoolBounds:
    """A PostgreSQL store's connection pool: connections kept open, the most it opens, and how long a
    call waits for one when all are busy (``graymatter serve --pool-min/--pool-max/--pool-timeout``)."""

    min_size: int = 1
    max_size: int = 8
    timeout_s: float = 30.0


def open_store(url_or_dir: str | os.PathLike[str], *, pool: PoolBounds | None = None) -> Store:
    """Open a store.

    * a directory path, or ``sqlite:///path/to/dir``: the embedded SQLite store in that directory;
    * ``postgresql://...`` / ``postgres://...``: the PostgreSQL store (``graymatter.store.postgres``,
      imported only then, with its driver), its connection pool sized by ``pool`` (ignored by SQLite).
    """
    target = os.fspath(url_or_dir)
    if not target.strip():
        raise InvalidInput("store location is empty; pass a directory or a postgresql:// URL")
    if target.startswith(("postgresql://", "postgres://")):
        try:
            postgres = importlib.import_module("graymatter.store.postgres")
        except ModuleNotFoundError as exc:
            if exc.name in ("graymatter.store.postgres", "psycopg"):
                raise StoreUnavailable(f"PostgreSQL support is not available ({exc.name} missing)") from None
            raise
        bounds = pool or PoolBounds()
        store: Store = postgres.PostgresStore(
            target, min_size=bounds.min_size, max_size=bounds.max_size, timeout=bounds.timeout_s
        )
        return store
    if target.startswith("sqlite://"):
        target = target[len("sqlite://") :]
        if not target:
            raise InvalidInput("sqlite:// URL has no path; use sqlite:///path/to/dir")
    elif "://" in target:
        scheme = target.split("://", 1)[0]
        raise InvalidInput(
            f"unsupported store URL scheme {scheme!r}; use a directory, sqlite:// or postgresql://"
        )
    from graymatter.store.sqlite import SQLiteStore

    return SQLiteStore(Path(target))
