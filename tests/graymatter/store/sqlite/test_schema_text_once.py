"""Schema 4: each text stored once (hashed exact-text key, external-content FTS5) and the migration to it."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from graymatter import Memory
from graymatter.config import MemoryConfig
from graymatter.store.sqlite import schema
from graymatter.store.sqlite.keys import LIVE_SQL, fact_key
from graymatter.store.sqlite.rows import text_hash
from graymatter.store.sqlite.schema import DB_FILENAME
from support.old_schema import old_schema_db

_T0 = 1_764_000_000_000_000  # microseconds since the epoch
_COLUMNS = "id, agent_id, text, kind, equivalents, created_at, accessed_at, superseded_by, pinned, provenance"


def _ulid(i: int) -> str:
    return f"01JTMIGRATION{i:013d}"


def _old_store(directory: Path) -> list[tuple[object, ...]]:
    """A schema-3 database written the way schema-3 graymatter wrote it (full-text copy of each live
    fact's text, ``facts_agent_text``); returns its fact rows."""
    conn = old_schema_db(directory, 3)
    rows: list[tuple[object, ...]] = []
    for i in range(40):
        retired = _ulid(100) if i % 10 == 3 else None
        session = json.dumps({"interface": "library", "session": "s1"}) if i >= 36 else '{"interface":"cli"}'
        rows.append((_ulid(i), "a", f"fact {i} about deploy windows", "fact", None, _T0 + i, _T0 + i, retired,
                     int(i == 7), session))  # fmt: skip
    rows.append((_ulid(40), "a", "k8s", "alias", '["kubernetes"]', _T0 + 40, _T0 + 40, None, 0, "{}"))
    rows.append(
        (_ulid(41), "b", "fact 1 about deploy windows", "fact", None, _T0 + 41, _T0 + 41, None, 0, "{}")
    )
    for row in rows:
        cursor = conn.execute(f"INSERT INTO facts ({_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?)", row)
        if row[3] == "fact" and row[7] is None:
            conn.execute("INSERT INTO facts_fts(rowid, text) VALUES (?, ?)", (cursor.lastrowid, row[2]))
    conn.close()
    return rows


def _indexed(db: Path, query: str) -> list[int]:
    with sqlite3.connect(db) as conn:
        found = conn.execute("SELECT rowid FROM facts_fts WHERE facts_fts MATCH ? ORDER BY rowid", (query,))
        rowids = [int(r[0]) for r in found]
    conn.close()
    return rowids


def _live_rowids(db: Path) -> list[int]:
    with sqlite3.connect(db) as conn:
        found = conn.execute(f"SELECT rowid FROM facts WHERE {LIVE_SQL.format(row='')} ORDER BY rowid")
        rowids = [int(r[0]) for r in found]
    conn.close()
    return rowids


def test_a_schema_3_store_migrates_keeping_every_fact(tmp_path: Path) -> None:
    rows = _old_store(tmp_path / "s")
    db = tmp_path / "s" / DB_FILENAME
    with Memory(tmp_path / "s", config=MemoryConfig(), embedder=None, summariser=None) as memory:
        listed = memory.list("a", include_superseded=True, include_aliases=True) + memory.list("b")
        assert sorted(f.id for f in listed) == sorted(str(r[0]) for r in rows)
        assert {f.id: f.text for f in listed} == {str(r[0]): str(r[2]) for r in rows}
        assert {f.id for f in listed if not f.live} == {_ulid(i) for i in range(40) if i % 10 == 3}
        hits = memory.recall("a", "deploy windows", top_k=50)
        assert sorted(h.id for h in hits) == sorted(_ulid(i) for i in range(40) if i % 10 != 3)
        assert [f.id for f in memory.store.find_by_text("a", "fact 3 about deploy windows")] == [_ulid(3)]
        assert [f.id for f in memory.store.find_by_text("a", "k8s", "alias")] == [_ulid(40)]
        assert memory.pin("a", "fact 8 about deploy windows") == [_ulid(8)]
        assert memory.forget("a", "fact 9 about deploy windows") == [_ulid(9)]
        assert [h.text for h in memory.recall("a", "kubernetes")] == []
    with sqlite3.connect(db) as conn:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        objects = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        hashes = conn.execute(  # every fact's exact-text key (schema 9 keeps none in the row)
            "SELECT f.text, k.text_hash FROM facts_text AS k JOIN facts AS f ON f.rowid = k.fact_rowid"
        ).fetchall()
        fts_config = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'facts_fts'").fetchone()[0]
        check = conn.execute("INSERT INTO facts_fts(facts_fts) VALUES ('integrity-check')").fetchall()
    conn.close()
    assert (version, check) == (schema.SCHEMA_VERSION, [])
    assert "facts_agent_text" not in objects and {"facts_text", "facts_vocab"} <= objects  # schema 5: keys
    assert "content='facts'" in fts_config
    assert len(hashes) == len(rows) and all(h == text_hash(t) for t, h in hashes)
    assert _indexed(db, "deploy") == _live_rowids(db)


def test_the_index_holds_exactly_the_live_facts_through_every_write(tmp_path: Path) -> None:
    db = tmp_path / "s" / DB_FILENAME
    with Memory(tmp_path / "s", config=MemoryConfig(), embedder=None, summariser=None) as memory:
        facts = memory.remember_many("a", [f"note {i} on the staging cluster" for i in range(30)])
        memory.remember("a", "note on the staging cluster, single")
        memory.alias("a", "staging", ["preprod"])
        memory.revise("a", "note 4 on the staging cluster", "note four on the staging cluster")
        memory.forget("a", "note 5 on the staging cluster")
        assert memory.store.delete_facts([facts[6].id, facts[4].id]) == [facts[6].id, facts[4].id]
        report = memory.import_bundle(
            memory.export("a").model_copy(update={"exported_at": facts[0].created_at})
        )
        assert report.facts_added == 0 and report.facts_skipped == 31
        assert _indexed(db, "staging") == _live_rowids(db)
        with sqlite3.connect(db) as conn:  # another program tombstoning a row directly keeps the index exact
            conn.execute(
                "UPDATE facts SET superseded_by = ? WHERE id = ?", (facts[7].id, fact_key(facts[8].id))
            )
        conn.close()
        assert _indexed(db, "staging") == _live_rowids(db)
        assert facts[8].id not in {h.id for h in memory.recall("a", "staging cluster", top_k=50)}


def test_import_skips_known_and_repeated_ids_in_one_write(tmp_path: Path) -> None:
    with Memory(tmp_path / "src", config=MemoryConfig(), embedder=None, summariser=None) as source:
        source.remember_many("a", ["alpha fact", "beta fact", "gamma fact"])
        bundle = source.export("a")
    doubled = bundle.model_copy(update={"facts": [*bundle.facts, bundle.facts[0]]})
    with Memory(tmp_path / "dst", config=MemoryConfig(), embedder=None, summariser=None) as target:
        target.remember("a", "already here")
        first = target.import_bundle(doubled)
        again = target.import_bundle(bundle)
        assert (first.facts_added, first.facts_skipped) == (3, 1)
        assert (again.facts_added, again.facts_skipped) == (0, 3)
        assert sorted(h.text for h in target.recall("a", "fact", top_k=10)) == [
            "alpha fact",
            "beta fact",
            "gamma fact",
        ]
