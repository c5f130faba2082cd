"""``compact`` on the SQLite store: free pages go back, every answer stays.

The schema-9 migration copies the facts table, which would leave the old table's pages free in the file
(docs/decisions/0011, schema 9): opening an older store compacts it once after migrating. The migrated and
compacted copy must still answer exactly what schema 8 answered (``support/schema8_fixture.py`` recorded
it). ``Memory.compact`` / ``graymatter compact`` also gives back what pruning freed.
"""

from __future__ import annotations

import gzip
import json
import sqlite3
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from graymatter import Memory
from graymatter.config import MemoryConfig
from graymatter.engine.embeddings import HashingEmbedder
from graymatter.store.sqlite import store as sqlite_store
from graymatter.store.sqlite.schema import DB_FILENAME
from support.schema8_fixture import answers

DATA = Path(__file__).parent / "data"


def _fixture(tmp_path: Path, name: str) -> Path:
    directory = tmp_path / name
    directory.mkdir(mode=0o700)
    db = directory / DB_FILENAME
    db.write_bytes(gzip.decompress((DATA / f"schema8-{name}.db.gz").read_bytes()))
    db.chmod(0o600)
    return directory


def _memory(directory: Path, name: str) -> Memory:
    embedder = HashingEmbedder(32) if name == "vectors" else None
    return Memory(directory, config=MemoryConfig(async_consolidate=False), embedder=embedder, summariser=None)


def _raw(db: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


@pytest.mark.parametrize("name", ["keyword", "vectors"])
def test_an_upgraded_store_gives_its_old_pages_back_and_answers_as_schema_8_did(
    tmp_path: Path, name: str
) -> None:
    directory = _fixture(tmp_path, name)
    db = directory / DB_FILENAME
    with _memory(directory, name) as memory:  # opening migrates to schema 9, then compacts once
        assert _raw(db, "PRAGMA freelist_count") == [(0,)]  # the copied table's old pages are gone
        report = memory.compact()  # and again, asked for: nothing is lost either way
        found = json.loads(json.dumps(answers(memory)))
    recorded = json.loads(gzip.decompress((DATA / "schema8-answers.json.gz").read_bytes()))[name]
    for key in recorded:  # one key at a time: a difference names what differs
        assert found[key] == recorded[key], key
    assert report.store == f"sqlite:///{db}"
    assert report.bytes_after == db.stat().st_size  # the WAL was emptied into the file
    assert _raw(db, "PRAGMA integrity_check") == [("ok",)]
    assert _raw(db, "INSERT INTO facts_fts(facts_fts) VALUES ('integrity-check')") == []
    assert stat.S_IMODE(db.stat().st_mode) == 0o600


def test_compact_gives_back_what_pruning_freed(tmp_path: Path) -> None:
    with _memory(tmp_path / "gm", "keyword") as memory:
        facts = memory.remember_many("a", [f"deploy note {i} on the staging cluster" for i in range(3_000)])
        memory.store.delete_facts([f.id for f in facts[:2_500]])  # what pruning does to decayed facts
        db = tmp_path / "gm" / DB_FILENAME
        assert _raw(db, "PRAGMA freelist_count")[0][0] > 0
        report = memory.compact()
        kept = [f.id for f in memory.list("a")]
        hits = [h.id for h in memory.recall("a", "deploy note 2999", top_k=1)]
    assert _raw(db, "PRAGMA freelist_count") == [(0,)]
    assert report.bytes_after < report.bytes_before
    assert report.bytes_returned == report.bytes_before - report.bytes_after
    assert kept == [f.id for f in facts[2_500:]]
    assert hits == [facts[-1].id]


def test_a_reader_holding_a_snapshot_bounds_the_wait_and_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader holding a snapshot keeps the WAL from being emptied: compact waits for it a bounded time,
    reports the bytes it measured (the WAL included), and every write before and after stays."""
    monkeypatch.setattr(sqlite_store, "CHECKPOINT_WAIT_MS", 50)
    with _memory(tmp_path / "gm", "keyword") as memory:
        first = memory.remember_many("a", [f"deploy note {i} on the staging cluster" for i in range(300)])
        memory.forget("a", first[0].text)
        reader = sqlite3.connect(tmp_path / "gm" / DB_FILENAME, isolation_level=None)
        try:
            reader.execute("BEGIN")
            seen = reader.execute("SELECT count(*) FROM facts").fetchone()
            report = memory.compact()
            assert reader.execute("SELECT count(*) FROM facts").fetchone() == seen  # its snapshot holds
        finally:
            reader.close()
        later = memory.remember("a", "a write after the compaction")
        assert report.bytes_after > 0
        assert [h.id for h in memory.recall("a", "write after the compaction", top_k=1)] == [later.id]
        assert len(memory.list("a", include_superseded=False)) == 300
    assert _raw(tmp_path / "gm" / DB_FILENAME, "PRAGMA integrity_check") == [("ok",)]


def test_the_command_reports_what_it_gave_back_and_never_creates_a_store(
    cli: Callable[..., Any], gm_dir: Path
) -> None:
    missing = cli("compact")
    assert missing.code == 3 and "nothing was created" in missing.stderr
    assert not gm_dir.exists()
    assert cli("remember", "a", "Deploys happen on Tuesdays").code == 0
    done = cli("--json", "compact")
    assert done.code == 0, done.stderr
    body = json.loads(done.stdout)
    assert set(body) == {"store", "bytes_before", "bytes_after", "bytes_returned"}
    assert body["bytes_returned"] == body["bytes_before"] - body["bytes_after"] >= 0
    human = cli("compact")
    assert human.code == 0
    assert human.stdout.startswith(f"Compacted sqlite:///{gm_dir / DB_FILENAME}: ")
    assert human.stdout.rstrip().endswith("returned).")
    assert "Deploys happen on Tuesdays" in cli("recall", "a", "deploy").stdout
