"""Schema 5: one listing index instead of two, the migration to it, and what a bulk write costs in SQL."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from graymatter import Memory
from graymatter.config import MemoryConfig
from graymatter.store.sqlite import schema
from graymatter.store.sqlite.rows import text_hash
from graymatter.store.sqlite.schema import DB_FILENAME

_T0 = 1_764_000_000_000_000  # microseconds since the epoch
_COLUMNS = (
    "id, agent_id, text, kind, equivalents, created_at, accessed_at, superseded_by, pinned, provenance, "
)
_COLUMNS += "text_hash"


def _ulid(i: int) -> str:
    return f"01JTLISTING{i:015d}"


def _schema_4_store(directory: Path) -> list[tuple[object, ...]]:
    """A schema-4 database written the way schema-4 graymatter wrote it; returns its fact rows."""
    directory.mkdir()
    conn = sqlite3.connect(directory / DB_FILENAME, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.create_function("gm_text_hash", 1, text_hash, deterministic=True)
    for version in (1, 2, 3, 4):
        for statement in schema._MIGRATIONS[version]:
            conn.execute(statement)
    conn.execute("PRAGMA user_version = 4")
    rows: list[tuple[object, ...]] = []
    for i in range(60):
        agent = "a" if i < 50 else "b"
        retired = _ulid(100) if i % 7 == 3 else None
        created = _T0 + (i // 3) * 1_000  # ties on created_at, three facts each
        session = json.dumps({"session": "s1"}) if 40 <= i < 45 else "{}"
        text = f"fact {i} about the release train"
        rows.append((_ulid(i), agent, text, "fact", None, created, created, retired, int(i == 8), session,
                     text_hash(text)))  # fmt: skip
    rows.append((_ulid(60), "a", "k8s", "alias", '["kubernetes"]', _T0, _T0, None, 0, "{}", text_hash("k8s")))
    conn.execute("BEGIN")
    conn.executemany(f"INSERT INTO facts ({_COLUMNS}) VALUES ({','.join('?' * 11)})", rows)
    conn.execute(
        "INSERT INTO facts_fts(rowid, text) SELECT rowid, text FROM facts WHERE "
        + schema.INDEXED_SQL.format(row="")
    )
    conn.execute("COMMIT")
    conn.close()
    return rows


def _objects(db: Path) -> set[str]:
    with sqlite3.connect(db) as conn:
        names = {str(r[0]) for r in conn.execute("SELECT name FROM sqlite_master WHERE tbl_name = 'facts'")}
    conn.close()
    return names


def test_a_schema_4_store_migrates_keeping_every_fact_and_every_order(tmp_path: Path) -> None:
    rows = _schema_4_store(tmp_path / "s")
    db = tmp_path / "s" / DB_FILENAME
    newest_first = sorted(((r[5], r[0]) for r in rows if r[1] == "a" and r[3] == "fact"), reverse=True)
    live_newest_first = [
        fid for created, fid in newest_first if next(r for r in rows if r[0] == fid)[7] is None
    ]
    with Memory(tmp_path / "s", config=MemoryConfig(), embedder=None, summariser=None) as memory:
        listed = memory.list("a", include_superseded=True, include_aliases=True) + memory.list("b")
        assert {f.id: f.text for f in listed} == {str(r[0]): str(r[2]) for r in rows}
        walked, before = [], None
        while True:  # pages of 4 split the created-at ties: the cursor must carry the id
            page = memory.store.facts_page("a", before=before, limit=4, live=None)
            walked += [f.id for f in page.facts]
            if page.before is None:
                break
            before = page.before
        assert walked == [fid for _, fid in newest_first]
        live = memory.store.facts_page("a", before=None, limit=100, live=True)
        assert [f.id for f in live.facts] == live_newest_first
        assert [f.id for f in memory.aliases("a")] == [_ulid(60)]
        assert memory.store.agents() == ["a", "b"]
        assert memory.forget("a", "fact 5 about the release train") == [_ulid(5)]
        assert _ulid(5) not in {f.id for f in memory.store.facts_page("a", before=None, limit=100).facts}
        assert {h.id for h in memory.recall("a", "release train", top_k=100)} == set(live_newest_first) - {
            _ulid(5)
        }
    with sqlite3.connect(db) as conn:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        integrity = conn.execute("PRAGMA integrity_check").fetchall()
    conn.close()
    assert (version, integrity) == (schema.SCHEMA_VERSION, [("ok",)])
    objects = _objects(db)
    assert "facts_listing" in objects and not {"facts_live_recent", "facts_agent_kind"} & objects


def test_a_fact_enters_the_row_the_full_text_index_and_four_indexes(tmp_path: Path) -> None:
    """The write path's cost pinned as structure: which indexes a new keyword-only fact is written to."""
    db = tmp_path / "s" / DB_FILENAME
    with Memory(tmp_path / "s", config=MemoryConfig(), embedder=None, summariser=None) as memory:
        memory.remember_many("a", [f"plain note {i}" for i in range(20)])
    with sqlite3.connect(db) as conn:
        conn.execute("ANALYZE facts")  # one sqlite_stat1 row per index holding entries: its entry count first
        holding = dict(conn.execute("SELECT idx, stat FROM sqlite_stat1 WHERE tbl = 'facts'").fetchall())
    conn.close()
    assert {name: stat.split()[0] for name, stat in holding.items()} == {
        "sqlite_autoindex_facts_1": "20",
        "facts_listing": "20",
        "facts_decay_fresh": "20",
        "facts_text_hash": "20",
    }


def _statements(memory: Memory, count: int) -> list[str]:
    """The SQL statements one ``remember_many`` of ``count`` facts runs on the writing connection (not the
    ones FTS5 runs inside them)."""
    seen: list[str] = []
    conn = memory.store._conn()  # type: ignore[attr-defined]
    conn.set_trace_callback(lambda sql: None if sql.startswith("--") else seen.append(sql))  # "--": nested
    try:
        memory.remember_many("a", [f"note {count} {i} on the staging cluster" for i in range(count)])
    finally:
        conn.set_trace_callback(None)
    return seen


def test_a_bulk_write_is_one_insert_per_row_and_a_fixed_number_of_other_statements(tmp_path: Path) -> None:
    config = MemoryConfig(async_consolidate=False)
    with Memory(tmp_path / "s", config=config, embedder=None, summariser=None) as memory:
        small, large = _statements(memory, 10), _statements(memory, 500)
    inserts = [s for s in large if s.startswith("INSERT INTO facts (")]
    others = [s for s in large if not s.startswith("INSERT INTO facts (")]
    assert len(inserts) == 500
    assert len(small) - 10 == len(others)
    assert [s.split("(")[0].split(" WHERE")[0].strip() for s in others] == [
        "BEGIN IMMEDIATE",
        "SELECT value FROM meta",
        "SELECT coalesce",
        "INSERT INTO facts_fts",
        "COMMIT",
    ]
