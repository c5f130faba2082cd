"""Store backends. ``open_store`` picks one from a directory path or a URL."""

from __future__ import annotations

import importlib
import os
from pathlib import Path

from graymatter.errors import InvalidInput, StoreUnavailable
from graymatter.store.base import ScoredId, Store, Vector

__all__ = ["ScoredId", "Store", "Vector", "open_store"]


def open_store(url_or_dir: str | os.PathLike[str]) -> Store:
    """Open a store.

    * a directory path, or ``sqlite:///path/to/dir``: the embedded SQLite store in that directory;
    * ``postgresql://...`` / ``postgres://...``: the PostgreSQL store (``graymatter.store.postgres``,
      imported only then, with its driver).
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
        store: Store = postgres.PostgresStore(target)
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
