"""``compact`` on the SQLite store: free pages go back, every answer stays.

The schema-9 migration copies the facts table, which would leave the old table's pages free in the file
(docs/decisions/0011, schema 9): opening an older store compacts it once after migrating. The migrated and
compacted copy must still answer exactly what schema 8 answered (``support/schema8_fixture.py`` recorded
it). ``Memory.compact`` / ``graymatter compact`` also gives back what pruning freed.
"""

from __future__ import annotations

import json
import sqlite3
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from graymatter.store.sqlite import store as sqlite_store
from graymatter.store.sqlite.schema import DB_FILENAME
from support.schema8_fixture import answers, fixture_copy, fixture_memory, raw_sql, recorded


@pytest.mark.parametrize("name", ["keyword", "vectors"])
def test_an_upgraded_store_gives_its_old_pages_back_and_answers_as_schema_8_did(
    tmp_path: Path, name: str
) -> None:
    directory = fixture_copy(tmp_path, name)
    db = directory / DB_FILENAME
    with fixture_memory(directory, name) as memory:  # opening migrates to schema 9, then compacts once
        assert raw_sql(db, "PRAGMA freelist_count") == [(0,)]  # the copied table's old pages are gone
        report = memory.compact()  # and again, asked for: nothing is lost either way
        found = json.loads(json.dumps(answers(memory)))
    expected = recorded(name)
    for key in expected:  # one key at a time: a difference names what differs
        assert found[key] == expected[key], key
    assert report.store == f"sqlite:///{db}"
    assert report.bytes_after == db.stat().st_size  # the WAL was emptied into the file
    assert raw_sql(db, "PRAGMA integrity_check") == [("ok",)]
    assert raw_sql(db, "INSERT INTO facts_fts(facts_fts) VALUES ('integrity-check')") == []
    assert stat.S_IMODE(db.stat().st_mode) == 0o600


def test_compact_gives_back_what_pruning_freed(tmp_path: Path) -> None:
    with fixture_memory(tmp_path / "gm", "keyword") as memory:
        facts = memory.remember_many("a", [f"deploy note {i} on the staging cluster" for i in range(3_000)])
        memory.store.delete_facts([f.id for f in facts[:2_500]])  # what pruning does to decayed facts
        db = tmp_path / "gm" / DB_FILENAME
        assert raw_sql(db, "PRAGMA freelist_count")[0][0] > 0
        report = memory.compact()
        kept = [f.id for f in memory.list("a")]
        hits = [h.id for h in memory.recall("a", "deploy note 2999", top_k=1)]
    assert raw_sql(db, "PRAGMA freelist_count") == [(0,)]
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
    with fixture_memory(tmp_path / "gm", "keyword") as memory:
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
    assert raw_sql(tmp_path / "gm" / DB_FILENAME, "PRAGMA integrity_check") == [("ok",)]


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


def test_a_process_with_the_store_open_answers_the_same_after_another_compacts_it(
    cli: Callable[..., Any], gm_dir: Path
) -> None:
    """A server keeps its connections and its memory of cut rows while ``graymatter compact`` runs in
    another process: its answers stay the same, and its writes afterwards land."""
    queries = ["deploy window", "staging cluster note", "note 17"]
    with fixture_memory(gm_dir, "keyword") as server:
        facts = server.remember_many("a", [f"deploy note {i} on the staging cluster" for i in range(2_000)])
        server.store.delete_facts([f.id for f in facts[:1_500]])
        before = [[(h.id, h.ranks) for h in server.recall_explain("a", q, top_k=10)] for q in queries]
        done = cli("--json", "compact")
        assert done.code == 0, done.stderr
        assert json.loads(done.stdout)["bytes_returned"] > 0
        after = [[(h.id, h.ranks) for h in server.recall_explain("a", q, top_k=10)] for q in queries]
        later = server.remember("a", "a write after the other process compacted")
        found = [h.id for h in server.recall("a", "write after the other process compacted", top_k=1)]
    assert after == before  # the same facts, with the same per-signal ranks
    assert all(len(hits) == 10 for hits in before)
    assert found == [later.id]
