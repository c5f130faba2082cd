"""The PostgreSQL connection pool: fail-fast connect, pooled transactions with retries, error translation."""

from __future__ import annotations

import contextlib
import logging
import random
import re
import time
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from graymatter.errors import InvalidInput, StorageError, StoreUnavailable

T = TypeVar("T")

_RETRYABLE_SQLSTATES = {"40001", "40P01"}  # serialization failure, deadlock detected
_SERVER_GONE_SQLSTATES = {"57P01", "57P02", "57P03"}  # admin/crash shutdown, cannot connect now

AWAY_WAIT_S = 0.5
"""While the database is known to be away, how long a call waits for a pooled connection (then 503)."""
RECONNECT_S = 2.0
"""How long the pool retries one reconnection before giving up; the next call starts a fresh attempt,
so a database that comes back is used within about this long."""
MAX_IDLE_S = 60.0
"""Idle connections above the pool minimum are closed after this long."""


def server_gone(exc: psycopg.OperationalError) -> bool:
    """Whether a driver error means the server is unreachable (rather than that a statement failed)."""
    state = exc.sqlstate
    return state is None or state.startswith("08") or state in _SERVER_GONE_SQLSTATES


def redact_url(url: str) -> str:
    """The URL without its password (safe for logs, errors and ``Store.url``)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "postgresql://(unparseable URL)"
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{netloc[-1]}"))


def brief(exc: BaseException) -> str:
    """One line describing a driver error, without connection secrets."""
    diag = getattr(exc, "diag", None)
    primary = getattr(diag, "message_primary", None) if diag is not None else None
    lines = str(exc).strip().splitlines()
    text = primary or (lines[0] if lines else type(exc).__name__)
    return re.sub(r"password=\S+", "password=***", text)


def _open_pool(dsn: str, url: str, min_size: int, max_size: int, timeout: float) -> ConnectionPool[Any]:
    try:  # one direct attempt first: a wrong URL fails fast, with the server's reason, on one line
        psycopg.connect(dsn, connect_timeout=max(1, int(timeout)), autocommit=True).close()
    except psycopg.Error as exc:
        raise StoreUnavailable(f"cannot connect to PostgreSQL at {url}: {brief(exc)}") from None
    logging.getLogger("psycopg.pool").setLevel(logging.ERROR)  # pool reconnect chatter is not for users
    try:
        pool: ConnectionPool[Any] = ConnectionPool(
            dsn,
            min_size=min_size,
            max_size=max_size,
            timeout=timeout,
            kwargs={"autocommit": True},
            open=False,
            name="graymatter",
            reconnect_timeout=RECONNECT_S,
            max_idle=MAX_IDLE_S,
        )
        pool.open(wait=True, timeout=timeout)
    except PoolTimeout:
        raise StoreUnavailable(
            f"cannot connect to PostgreSQL at {url} within {timeout:.0f} s; check the URL, "
            "that the server is running and that it accepts this user"
        ) from None
    except psycopg.Error as exc:
        raise StoreUnavailable(f"cannot connect to PostgreSQL at {url}: {brief(exc)}") from None
    return pool


def fetch(c: psycopg.Connection[Any], query: Any, params: Any = None) -> list[Any]:
    """One statement's rows in pipeline mode: when psycopg prepares it (its fifth run on a connection),
    the preparation travels with the execution instead of costing a round trip of its own."""
    with c.pipeline():
        cursor = c.execute(query, params)
    return cursor.fetchall()


class PostgresConnections:
    """One connection pool per store; every call runs on a pooled connection, writes in one transaction."""

    def __init__(self, url: str, *, min_size: int, max_size: int, timeout: float) -> None:
        self._dsn = url.replace("postgres://", "postgresql://", 1) if url.startswith("postgres://") else url
        self.url = redact_url(self._dsn)
        self._closed = False
        self._timeout = timeout
        self._away = False
        """Set when the database stopped answering; cleared by the next call that succeeds."""
        self._generation = 0
        """Bumped by every write that can change what a recall ranks or returns (``postgres/recall.py``)."""
        self.pool = _open_pool(self._dsn, self.url, min_size, max_size, timeout)

    def close(self) -> None:
        """Close the pool (waits for connections in use to be returned). Idempotent."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(Exception):
            self.pool.close()

    def ping(self) -> None:
        """Round-trip the database (readiness probe); raises StoreUnavailable when it does not answer."""
        self._read(lambda c: c.execute("SELECT 1 FROM gm_meta LIMIT 1").fetchall())

    def _attempt(self, work: Callable[[psycopg.Connection[Any]], T], write: bool, snapshot: bool) -> T:
        wait = AWAY_WAIT_S if self._away else self._timeout
        try:
            with self.pool.connection(timeout=wait) as conn:
                if write or snapshot:
                    with conn.transaction():
                        if snapshot:
                            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                        result = work(conn)
                else:
                    result = work(conn)
        except PoolTimeout:
            self._away = True
            raise StoreUnavailable(
                f"no PostgreSQL connection available from {self.url} within {wait:g} s"
            ) from None
        self._away = False
        return result

    def _run(self, work: Callable[[psycopg.Connection[Any]], T], *, write: bool, snapshot: bool = False) -> T:
        if self._closed:
            raise StorageError("the store is closed")
        attempts = 0
        while True:
            attempts += 1
            try:
                return self._attempt(work, write, snapshot)
            except psycopg.OperationalError as exc:
                self._away = self._away or server_gone(exc)
                if exc.sqlstate in _RETRYABLE_SQLSTATES and attempts < 8:
                    time.sleep(0.005 * attempts * (0.5 + random.random()))
                    continue
                if exc.sqlstate is None and attempts < 3 and not write:
                    continue  # a read on a lost connection is safe to repeat; a write's commit is uncertain
                raise StoreUnavailable(f"PostgreSQL at {self.url} failed: {brief(exc)}") from None
            except psycopg.errors.DataError as exc:
                raise InvalidInput(f"value refused by PostgreSQL: {brief(exc)}") from None
            except psycopg.Error as exc:
                if exc.sqlstate in _RETRYABLE_SQLSTATES and attempts < 8:
                    time.sleep(0.005 * attempts * (0.5 + random.random()))
                    continue
                raise StorageError(f"PostgreSQL at {self.url} failed: {brief(exc)}") from None

    def _write(self, work: Callable[[psycopg.Connection[Any]], T]) -> T:
        self._generation += 1
        try:
            return self._run(work, write=True)
        finally:
            self._generation += 1

    def _bookkeeping_write(self, work: Callable[[psycopg.Connection[Any]], T]) -> T:
        """A write of bookkeeping only (access counts, weights, counters): recall's reads stay valid."""
        return self._run(work, write=True)

    def _read(self, work: Callable[[psycopg.Connection[Any]], T]) -> T:
        return self._run(work, write=False)

    def _snapshot_read(self, work: Callable[[psycopg.Connection[Any]], T]) -> T:
        """Run a read of several statements in one REPEATABLE READ, READ ONLY transaction: every statement
        sees the same committed state (totals and the counts they bound agree)."""
        return self._run(work, write=False, snapshot=True)
