"""Schema versioning: creation, forward migration, concurrent first opens, private file modes."""

from __future__ import annotations

import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from graymatter import Memory
from graymatter.config import MemoryConfig
from graymatter.store.sqlite import SQLiteStore
from graymatter.store.sqlite import schema as sqlite_store
from graymatter.store.sqlite.schema import DB_FILENAME, SCHEMA_VERSION
from support.env import hermetic_env


def _version(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
    conn.close()
    return int(version)


def test_new_store_is_private_wal_and_versioned(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s")
    store.close()
    db = tmp_path / "s" / DB_FILENAME
    assert stat.S_IMODE((tmp_path / "s").stat().st_mode) == 0o700
    assert stat.S_IMODE(db.stat().st_mode) == 0o600
    assert _version(db) == SCHEMA_VERSION
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


def test_empty_file_is_initialised(tmp_path: Path) -> None:
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / DB_FILENAME).touch()
    with Memory(tmp_path / "s", config=MemoryConfig(), embedder=None) as memory:
        assert memory.remember("a", "works").text == "works"


def test_forward_migration_applies_newer_steps_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with Memory(tmp_path / "s", config=MemoryConfig(), embedder=None) as memory:
        fact = memory.remember("a", "kept across the migration")
    steps = dict(sqlite_store._MIGRATIONS)
    steps[SCHEMA_VERSION + 1] = ["CREATE TABLE migration_probe (x INTEGER)"]
    monkeypatch.setattr(sqlite_store, "_MIGRATIONS", steps)
    monkeypatch.setattr(sqlite_store, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    for _ in range(2):  # the second open finds the new version and migrates nothing
        with Memory(tmp_path / "s", config=MemoryConfig(), embedder=None) as memory:
            assert memory.get(fact.id).text == "kept across the migration"
    db = tmp_path / "s" / DB_FILENAME
    assert _version(db) == SCHEMA_VERSION + 1
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == str(
            SCHEMA_VERSION + 1
        )
        assert conn.execute("SELECT count(*) FROM migration_probe").fetchone()[0] == 0
    conn.close()


def test_concurrent_first_opens_create_one_schema(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from graymatter import Memory\n"
        "from graymatter.config import MemoryConfig\n"
        "with Memory(sys.argv[1], config=MemoryConfig(), embedder=None) as m:\n"
        "    m.remember('a', 'from ' + sys.argv[2])\n"
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(tmp_path / "s"), str(i)],
            env=hermetic_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(6)
    ]
    for proc in procs:
        _out, err = proc.communicate(timeout=120)
        assert (proc.returncode, err) == (0, "")
    with Memory(tmp_path / "s", config=MemoryConfig(), embedder=None) as memory:
        assert sorted(f.text for f in memory.list("a")) == [f"from {i}" for i in range(6)]
