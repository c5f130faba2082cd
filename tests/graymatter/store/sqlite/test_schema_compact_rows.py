"""Schema 9: the compact fact row (ids in 16 bytes, agent codes, kind codes) and the in-place migration.

The stores in ``data/`` were written by graymatter at schema 8, and ``data/schema8-answers.json.gz`` holds
what it answered from them (``support/schema8_fixture.py`` made both). A copy migrated by this version must
answer exactly the same: the export, every page and cursor, listings, text lookups, neighbours, statistics,
decay, and the store's candidate searches (keyword matches with FTS5's scores, vector neighbours with their
similarities, the newest facts, document frequencies). A migration killed midway must leave the file as it
was, or migrated whole.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from graymatter.errors import CorruptRecord
from graymatter.ids import is_ulid, new_ulid, new_ulids
from graymatter.models import Fact
from graymatter.store.sqlite.keys import fact_id
from graymatter.store.sqlite.schema import DB_FILENAME, SCHEMA_VERSION
from graymatter.store.sqlite.store import SQLiteStore
from support.old_schema import old_schema_db
from support.schema8_fixture import answers, fixture_copy, fixture_memory, raw_sql, recorded


@pytest.mark.parametrize("name", ["keyword", "vectors"])
def test_a_schema_8_store_migrates_and_answers_as_schema_8_did(tmp_path: Path, name: str) -> None:
    directory = fixture_copy(tmp_path, name)
    assert raw_sql(directory / DB_FILENAME, "PRAGMA user_version") == [(8,)]
    with fixture_memory(directory, name) as memory:
        found = json.loads(json.dumps(answers(memory)))
    expected = recorded(name)
    assert found.keys() == expected.keys()
    for key in expected:  # one key at a time: a difference names what differs
        assert found[key] == expected[key], key
    db = directory / DB_FILENAME
    assert raw_sql(db, "PRAGMA user_version") == [(SCHEMA_VERSION,)]
    assert raw_sql(db, "PRAGMA integrity_check") == [("ok",)]
    assert raw_sql(db, "INSERT INTO facts_fts(facts_fts) VALUES ('integrity-check')") == []


def _schema(db: Path) -> list[tuple[Any, ...]]:
    return raw_sql(db, "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name")


def test_the_migrated_rows_are_the_compact_ones_a_new_store_writes(tmp_path: Path) -> None:
    directory = fixture_copy(tmp_path, "keyword")
    db = directory / DB_FILENAME
    before = raw_sql(db, "SELECT rowid, id, agent_id, text, kind FROM facts ORDER BY rowid")
    fts = raw_sql(db, "SELECT rowid FROM facts_fts WHERE facts_fts MATCH 'deploy OR note' ORDER BY 1")
    keys = raw_sql(db, "SELECT * FROM facts_text ORDER BY 1, 2")
    SQLiteStore(directory).close()
    SQLiteStore(tmp_path / "fresh").close()
    assert _schema(db) == _schema(tmp_path / "fresh" / DB_FILENAME)  # the schema does not depend on history
    codes = dict(raw_sql(db, "SELECT key, value FROM meta WHERE key GLOB 'agent_*'"))
    agents = sorted({str(row[2]) for row in before})
    assert codes == {
        **{f"agent_code:{agent}": str(code) for code, agent in enumerate(agents, 1)},
        **{f"agent_name:{code}": agent for code, agent in enumerate(agents, 1)},
        "agent_codes": str(len(agents)),
    }
    after = raw_sql(db, "SELECT rowid, id, agent, text, kind FROM facts ORDER BY rowid")
    assert [(r[0], fact_id(r[1]), agents[r[2] - 1], r[3], ("fact", "alias")[r[4]]) for r in after] == before
    as_text = {fact_id(r[1]) for r in after if isinstance(r[1], str)}
    assert as_text == {  # the imported ids that are no canonical ULID ("L" is no Crockford digit)
        "legacy-note-1", "legacy-note-2", "01jtlowercaseulid000000001", "LEGACY-ALIAS",
        "01JTLEGACY0000000000000003",
    }  # fmt: skip
    assert all(is_ulid(fid) == (fid not in as_text) for fid in (str(r[1]) for r in before))
    assert all(len(r[1]) == 16 for r in after if isinstance(r[1], bytes))
    assert raw_sql(db, "SELECT rowid FROM facts_fts WHERE facts_fts MATCH 'deploy OR note' ORDER BY 1") == fts
    assert raw_sql(db, "SELECT * FROM facts_text ORDER BY 1, 2") == keys
    assert "text_hash" not in {str(r[1]) for r in raw_sql(db, "PRAGMA table_info(facts)")}


def test_writes_after_the_migration_keep_every_rule(tmp_path: Path) -> None:
    directory = fixture_copy(tmp_path, "keyword")
    with fixture_memory(directory, "keyword") as memory:
        bundle = memory.export()
        again = memory.import_bundle(bundle)
        assert (again.facts_added, again.facts_skipped) == (0, len(bundle.facts))
        fresh = memory.remember_many("support-bot", ["a note after the migration on deploy windows"])[0]
        other = memory.remember("newcomer", "a new agent after the migration")
        assert memory.get(fresh.id) == fresh and memory.get(other.id) == other
        assert memory.agents() == ["__shared__", "legacy", "newcomer", "ops", "support-bot"]
        revised = memory.revise("support-bot", fresh.text, "deploy windows moved to thursday")
        assert memory.get(fresh.id).superseded_by == revised.fact.id
        assert memory.forget("legacy", "the old deploy happens on mondays") == ["legacy-note-2"]
        assert memory.pin("legacy", "billing pipeline owned by the data team") == [
            "01jtlowercaseulid000000001"
        ]
        assert [h.id for h in memory.recall("support-bot", "deploy windows thursday", top_k=1)] == [
            revised.fact.id
        ]
    db = directory / DB_FILENAME
    codes = dict(raw_sql(db, "SELECT key, value FROM meta WHERE key GLOB 'agent_*'"))
    assert codes["agent_code:newcomer"] == "5" and codes["agent_codes"] == "5"
    assert raw_sql(db, "PRAGMA integrity_check") == [("ok",)]


_OPEN = """
import sys
from graymatter.store.sqlite.store import SQLiteStore
print("opening", flush=True)
SQLiteStore(sys.argv[1]).close()
print("opened", flush=True)
"""


def _big_schema8_store(directory: Path, count: int) -> None:
    """A schema-8 file of ``count`` facts of two agents, rows as schema 8 wrote them."""
    conn = old_schema_db(directory, 8)
    conn.execute("BEGIN")
    rows = [
        (fid, "agent-a" if i % 3 else "agent-b", f"fact {i} about topic {i % 97}", 1_780_000_000_000_000 + i)
        for i, fid in enumerate(new_ulids(count))
    ]
    conn.executemany(
        "INSERT INTO facts (id, agent_id, text, created_at, accessed_at, confidence, provenance) "
        "VALUES (?, ?, ?, ?, 0, '', '')",
        rows,
    )
    conn.execute("INSERT INTO facts_fts(rowid, text) SELECT rowid, text FROM facts")
    conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def _facts(directory: Path) -> list[tuple[str, str, str]]:
    """Every fact's id, agent and text, through a store (which migrates the file first if it must)."""
    with SQLiteStore(directory) as store:
        return [(f.id, f.agent_id, f.text) for f in store.list_facts(None)]


def _open_in_child(directory: Path, kill_after: float | None) -> tuple[float, bool]:
    """Open the store in a new process (its migration runs there), killed ``kill_after`` seconds into the
    opening if given: the seconds the opening took or ran, and whether it finished."""
    child = subprocess.Popen(
        [sys.executable, "-c", _OPEN, str(directory)], stdout=subprocess.PIPE, text=True, env=os.environ
    )
    assert child.stdout is not None and child.stdout.readline() == "opening\n"
    began = time.monotonic()
    if kill_after is not None:
        time.sleep(kill_after)
        child.send_signal(signal.SIGKILL)
    finished = "opened" in child.stdout.read()
    child.wait()
    return time.monotonic() - began, finished


def test_a_migration_killed_midway_leaves_the_store_as_it_was(tmp_path: Path) -> None:
    """SIGKILL at moments spread over the migration: each time the file is still schema 8 with every row
    as it was (or, killed after the commit, schema 9); opened again, it migrates and holds every fact."""
    source = tmp_path / "source"
    _big_schema8_store(source, 20_000)
    original = (source / DB_FILENAME).read_bytes()
    expected = raw_sql(source / DB_FILENAME, "SELECT id, agent_id, text FROM facts ORDER BY rowid")
    took, finished = _open_in_child(source, None)  # a whole migration: how long one takes here
    assert finished
    midway = 0
    for round_, share in enumerate((0.5, 0.25, 0.75, 0.1, 0.4, 0.6, 0.9, 0.05)):
        directory = tmp_path / f"kill-{round_}"
        directory.mkdir(mode=0o700)
        (directory / DB_FILENAME).write_bytes(original)
        _, finished = _open_in_child(directory, took * share)
        version = raw_sql(directory / DB_FILENAME, "PRAGMA user_version")[0][0]
        assert version in (8, SCHEMA_VERSION) and (version == SCHEMA_VERSION or not finished)
        if version == 8:
            midway += 1
            assert (
                raw_sql(directory / DB_FILENAME, "SELECT id, agent_id, text FROM facts ORDER BY rowid")
                == expected
            )
        assert _facts(directory) == [(str(r[0]), str(r[1]), str(r[2])) for r in expected]
        assert raw_sql(directory / DB_FILENAME, "PRAGMA integrity_check") == [("ok",)]
        if midway == 2:
            break
    assert midway == 2  # two kills landed before the migration committed


def test_agents_coded_by_another_connection_are_named_and_an_unknown_code_is_corrupt(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "s") as first, SQLiteStore(tmp_path / "s") as second:
        early = _fact("early", "written first")
        first.add_facts([early])
        assert first.get_facts([early.id]) == [early]  # its names read: the first agent only
        late = _fact("late", "written by another store on the same file")
        second.add_facts([late])
        assert first.get_facts([late.id]) == [late]  # a code it did not know: read again
        second._write(lambda c: c.execute("UPDATE facts SET agent = 99 WHERE agent = 2"))  # type: ignore[attr-defined]
        with pytest.raises(CorruptRecord, match="cannot be decoded"):
            first.get_facts([late.id])
        assert first.get_facts([early.id]) == [early]


def _fact(agent: str, text: str) -> Fact:
    moment = datetime(2026, 6, 1, tzinfo=UTC)
    return Fact(id=new_ulid(), agent_id=agent, text=text, created_at=moment, accessed_at=moment)
