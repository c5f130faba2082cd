"""Schema 8: links are one table clustered by id (``WITHOUT ROWID``) plus the unique (agent, source, target,
relation) index, instead of a rowid table and two unique indexes.

The 7 -> 8 migration keeps every row of every table (facts live, tombstoned, pinned, an alias, a session
turn, vectors, links of two agents, checkpoints, settled text keys, write counters and decay marks); the
migrated links table is the one a new store creates; both uniqueness rules still hold and the link
statements are index-backed.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from graymatter.models import Link
from graymatter.store.rows import LINK_COLUMNS
from graymatter.store.sqlite import schema
from graymatter.store.sqlite.schema import DB_FILENAME
from graymatter.store.sqlite.store import SQLiteStore
from support.old_schema import migrate_to, old_schema_db

_T0 = 1_780_000_000_000_000
_SNAPSHOT = {
    "facts": "SELECT * FROM facts ORDER BY rowid",
    "vectors": "SELECT * FROM vectors ORDER BY fact_rowid",
    "checkpoints": "SELECT * FROM checkpoints ORDER BY rowid",
    "links": f"SELECT {LINK_COLUMNS} FROM links ORDER BY id",
    "facts_text": "SELECT * FROM facts_text ORDER BY 1, 2",
    "meta": "SELECT key, value FROM meta WHERE key <> 'schema_version' ORDER BY 1",
    "fts": "SELECT rowid FROM facts_fts WHERE facts_fts MATCH 'train' ORDER BY 1",
}
_LINKS = [  # id, agent, source, target, relation, created_at (a tie on created_at: ordered by id)
    ("01JTLINK0000000000000000003", "a", "fact 1", "fact 2", "cites", _T0 + 5),
    ("01JTLINK0000000000000000001", "a", "fact 2", "fact 3", "cites", _T0 + 5),
    ("01JTLINK0000000000000000002", "b", "fact 1", "fact 2", "cites", _T0 + 1),
    ("01JTLINK0000000000000000004", "a", "fact 1", "fact 2", "supports", _T0 + 9),
]


def _schema7_store(directory: Path) -> Path:
    """A schema-7 database written the way schema 7 wrote it, with a row in every table."""
    db = directory / DB_FILENAME
    conn = old_schema_db(directory, 7)
    conn.execute("BEGIN")
    facts = [  # id, agent, text, kind, equivalents, created, accessed, superseded_by, pinned, provenance
        ("01JTFACT001", "a", "fact 1 of the train", "fact", None, _T0, 0, None, 0, ""),
        ("01JTFACT002", "a", "fact 2 of the train", "fact", None, _T0 + 1, _T0 + 7, None, 1, ""),
        ("01JTFACT003", "a", "fact 3 of the train", "fact", None, _T0 + 2, 0, "01JTX", 0, ""),
        ("01JTFACT004", "a", "k8s", "alias", json.dumps(["kubernetes"]), _T0, 0, None, 0, ""),
        ("01JTFACT005", "b", "turn of the train", "fact", None, _T0 + 3, 0, None, 0,
         json.dumps({"session": "s1"})),
    ]  # fmt: skip
    conn.executemany(
        "INSERT INTO facts (id, agent_id, text, kind, equivalents, created_at, accessed_at, superseded_by, "
        "pinned, provenance) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        facts,
    )
    conn.execute(
        "INSERT INTO facts_fts(rowid, text) SELECT rowid, text FROM facts WHERE "
        + schema.INDEXED_SQL.format(row="")
    )
    conn.execute("INSERT INTO facts_text SELECT gm_text_hash(text), rowid FROM facts WHERE rowid <= 3")
    conn.execute("UPDATE meta SET value = '3' WHERE key = 'text_settled'")
    conn.execute("INSERT INTO vectors VALUES (1, 'a', 0, ?), (5, 'b', 1, ?)", (b"\x01\x02", b"\x03\x04"))
    conn.executemany(f"INSERT INTO links ({LINK_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, '{{}}')", _LINKS)
    conn.execute(
        "INSERT INTO checkpoints(id, agent_id, created_at, state, messages, message_count) "
        "VALUES ('01JTCKPT0000000000000000001', 'a', ?, '{\"step\":1}', '[]', 0)",
        (_T0,),
    )
    conn.execute("INSERT INTO meta(key, value) VALUES ('writes:a', '7'), ('decay_mark:a', ?)", (str(_T0),))
    conn.execute("COMMIT")
    conn.close()
    return db


def _snapshot(db: Path) -> dict[str, list[tuple[object, ...]]]:
    conn = sqlite3.connect(db)
    try:
        return {name: conn.execute(sql).fetchall() for name, sql in _SNAPSHOT.items()}
    finally:
        conn.close()


def _links_schema(db: Path) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(
            "SELECT type, name, sql FROM sqlite_master WHERE tbl_name = 'links' ORDER BY name"
        ).fetchall()
    finally:
        conn.close()


def test_schema_7_migrates_to_8_keeping_every_row(tmp_path: Path) -> None:
    db = _schema7_store(tmp_path / "s")
    before = _snapshot(db)
    assert len(before["links"]) == 4 and all(before.values())
    migrate_to(db, 8)  # the rows read in schema 8's layout; a store goes on to the current schema
    assert _snapshot(db) == before
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 8
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        conn.close()
    SQLiteStore(tmp_path / "fresh").close()
    migrated = _links_schema(db)
    fresh = _links_schema(tmp_path / "fresh" / DB_FILENAME)
    assert migrated == fresh  # the schema does not depend on history
    assert [(kind, name) for kind, name, _ in migrated] == [
        ("table", "links"),
        ("index", "sqlite_autoindex_links_2"),
    ]
    assert str(migrated[0][2]).endswith("WITHOUT ROWID")


def _link(link_id: str, agent: str, source: str, target: str, relation: str = "cites") -> Link:
    return Link(
        id=link_id, agent_id=agent, source=source, target=target, relation=relation,
        created_at=datetime(2026, 6, 1, tzinfo=UTC),
    )  # fmt: skip


def test_links_of_a_migrated_store_read_and_stay_unique_as_before(tmp_path: Path) -> None:
    _schema7_store(tmp_path / "s")
    with SQLiteStore(tmp_path / "s") as store:
        assert [link.id for link in store.links()] == [
            "01JTLINK0000000000000000002",
            "01JTLINK0000000000000000001",  # created-at tie: by id
            "01JTLINK0000000000000000003",
            "01JTLINK0000000000000000004",
        ]
        assert [link.id for link in store.links(["b"])] == ["01JTLINK0000000000000000002"]
        again = store.add_link(_link("01JTLINK0000000000000000009", "a", "fact 1", "fact 2"))
        assert again.id == "01JTLINK0000000000000000003"  # the known (agent, source, target, relation)
        added = store.import_links(
            [
                _link("01JTLINK0000000000000000001", "a", "x", "y"),  # a known id: skipped
                _link("01JTLINK0000000000000000008", "b", "fact 1", "fact 2"),  # a known edge: skipped
                _link("01JTLINK0000000000000000007", "b", "fact 2", "fact 3"),
            ]
        )
        assert added == (1, 2)
        assert len(store.links()) == 5
        assert store.agents() == ["a", "b"]


def test_link_statements_are_index_backed(tmp_path: Path) -> None:
    db = _schema7_store(tmp_path / "s")
    SQLiteStore(tmp_path / "s").close()
    conn = sqlite3.connect(db)
    try:

        def plan(sql: str, params: int) -> list[str]:
            return [str(r[3]) for r in conn.execute(f"EXPLAIN QUERY PLAN {sql}", ("a",) * params)]

        edge = plan(
            f"SELECT {LINK_COLUMNS} FROM links WHERE agent_id = ? AND source = ? AND target = ? "
            "AND relation = ?",
            4,
        )
        count = plan("SELECT count(*) FROM links WHERE agent_id = ?", 1)
        by_id = plan("SELECT agent_id FROM links WHERE id = ?", 1)
    finally:
        conn.close()
    index = "sqlite_autoindex_links_2"
    assert edge == [f"SEARCH links USING INDEX {index} (agent_id=? AND source=? AND target=? AND relation=?)"]
    assert count == [f"SEARCH links USING COVERING INDEX {index} (agent_id=?)"]
    assert by_id == ["SEARCH links USING PRIMARY KEY (id=?)"]
