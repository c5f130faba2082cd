"""The checkpoint thread: committed WAL pages reach the database file without a writer checkpointing."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from graymatter import Memory
from graymatter.config import MemoryConfig
from graymatter.store.sqlite.connection import WAL_BACKSTOP_PAGES
from graymatter.store.sqlite.schema import DB_FILENAME


def _memory(directory: Path) -> Memory:
    return Memory(directory, config=MemoryConfig(async_consolidate=False), embedder=None, summariser=None)


def _checkpointers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "graymatter-checkpoint"]


def test_writes_are_checkpointed_in_the_background_and_the_thread_stops_on_close(tmp_path: Path) -> None:
    before = set(_checkpointers())
    memory = _memory(tmp_path / "s")
    db = tmp_path / "s" / DB_FILENAME
    conn = memory.store._conn()  # type: ignore[attr-defined]
    assert conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == WAL_BACKSTOP_PAGES
    size = db.stat().st_size
    memory.remember("a", "a one-shot command writes once or twice")
    assert set(_checkpointers()) == before  # ... and starts no thread
    memory.forget("a", "a one-shot command writes once or twice")
    for i in range(20):  # a few hundred pages: far below the writers' own checkpoint at the backstop
        memory.remember_many("a", [f"fact {i}-{j} about the background checkpoint" for j in range(100)])
    deadline = time.monotonic() + 30
    while db.stat().st_size <= size and time.monotonic() < deadline:
        time.sleep(0.02)
    assert db.stat().st_size > size  # only the checkpoint thread copies pages back below the backstop
    started = set(_checkpointers()) - before
    assert len(started) == 1
    memory.close()
    assert not any(t.is_alive() for t in started)
    reopened = _memory(tmp_path / "s")
    try:
        assert len(reopened.list("a", include_superseded=False)) == 2000
        assert set(_checkpointers()) - before == set()  # reading starts no checkpoint thread
    finally:
        reopened.close()
