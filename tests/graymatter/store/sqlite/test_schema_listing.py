"""Schemas 5 and 6: one listing index, exact-text keys settled in bulk, the migrations, a bulk write's SQL."""

from __future__ import annotations

import json
import sqlite3
from datetime import timedelta
from pathlib import Path

import pytest

from graymatter import Memory
from graymatter.config import MemoryConfig
from graymatter.models import Provenance
from graymatter.store.rows import NewFacts
from graymatter.store.sqlite import inserts as sqlite_inserts
from graymatter.store.sqlite import schema
from graymatter.store.sqlite.keys import fact_key
from graymatter.store.sqlite.rows import text_hash
from graymatter.store.sqlite.schema import DB_FILENAME
from support.old_schema import old_schema_db

_T0 = 1_764_000_000_000_000  # microseconds since the epoch
_COLUMNS = (
    "id, agent_id, text, kind, equivalents, created_at, accessed_at, superseded_by, pinned, provenance, "
)
_COLUMNS += "text_hash"


_SHORT = "INSERT INTO facts (id, agent, text, created_at, accessed_at, access_count, confidence, provenance"


def _ulid(i: int) -> str:
    return f"01JTLISTING{i:015d}"


def _old_store(directory: Path, version: int) -> list[tuple[object, ...]]:
    """A schema-4 or schema-5 database written the way graymatter of that schema wrote it (exact-text
    hashes in the row, under the ``facts_text_hash`` index); returns its fact rows."""
    conn = old_schema_db(directory, version)
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


@pytest.mark.parametrize("version", [4, 5])
def test_an_older_store_migrates_keeping_every_fact_and_every_order(tmp_path: Path, version: int) -> None:
    rows = _old_store(tmp_path / "s", version)
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
    assert (
        "facts_listing" in objects
        and not {"facts_live_recent", "facts_agent_kind", "facts_text_hash"} & objects
    )
    with sqlite3.connect(db) as conn:  # every migrated fact's exact-text key is settled
        keys = conn.execute("SELECT text_hash, fact_rowid FROM facts_text ORDER BY 2").fetchall()
        mark = conn.execute("SELECT value FROM meta WHERE key = 'text_settled'").fetchone()[0]
        texts = conn.execute("SELECT text, rowid FROM facts WHERE rowid <= 61 ORDER BY 2").fetchall()
    conn.close()
    assert keys == [(text_hash(text), rowid) for text, rowid in texts] and len(keys) == 61 and int(mark) >= 61


def test_a_fact_enters_the_row_the_full_text_index_and_two_indexes(tmp_path: Path) -> None:
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


def test_a_bulk_write_inserts_a_hundred_rows_a_statement_and_a_fixed_number_of_other_statements(
    tmp_path: Path,
) -> None:
    config = MemoryConfig(async_consolidate=False)
    with Memory(tmp_path / "s", config=config, embedder=None, summariser=None) as memory:
        first = _statements(memory, 1)  # the agent's first write gives it its code (schema 9)
        small, large, ragged = _statements(memory, 10), _statements(memory, 500), _statements(memory, 250)
        conn = memory.store._conn()  # type: ignore[attr-defined]
        rows = conn.execute("SELECT text FROM facts ORDER BY rowid").fetchall()
    written = [f"note {n} {i} on the staging cluster" for n in (1, 10, 500, 250) for i in range(n)]
    codes = [s for s in first if s.startswith("INSERT INTO meta")]
    assert len(codes) == 2 and "RETURNING" in codes[0] and "'agent_code:a', '1'" in codes[1]
    assert [r[0] for r in rows] == written  # in order, every row once
    for statements, per_statement in ((small, [1] * 10), (large, [100] * 5), (ragged, [100, 100] + [1] * 50)):
        inserts = [s for s in statements if s.startswith("INSERT INTO facts (")]
        others = [s for s in statements if not s.startswith("INSERT INTO facts (")]
        assert all(s.startswith(_SHORT + ") VALUES") for s in inserts)
        assert [s.count(" on the staging cluster'") for s in inserts] == per_statement
        assert [s.split("(")[0].split(" WHERE")[0].split(" = ")[0].strip() for s in others] == [
            "BEGIN IMMEDIATE",
            "SELECT value FROM meta",
            "UPDATE meta SET value",  # the agent's decay mark, lowered only by an older fact (schema 7)
            "SELECT value FROM meta",  # the agent's code (schema 9)
            "SELECT coalesce",
            "INSERT INTO facts_fts",
            "COMMIT",
        ]


def _keys(db: Path) -> tuple[list[int], int]:
    with sqlite3.connect(db) as conn:
        rowids = [int(r[0]) for r in conn.execute("SELECT fact_rowid FROM facts_text ORDER BY 1")]
        mark = int(conn.execute("SELECT value FROM meta WHERE key = 'text_settled'").fetchone()[0])
    conn.close()
    return sorted(rowids), mark


def test_text_lookups_find_facts_before_and_after_their_keys_settle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_inserts, "SETTLE_ROWS", 25)
    db = tmp_path / "s" / DB_FILENAME
    config = MemoryConfig(async_consolidate=False)
    with Memory(tmp_path / "s", config=config, embedder=None, summariser=None) as memory:
        batches = [memory.remember_many("a", [f"batch {b} note {i}" for i in range(10)]) for b in range(2)]
        assert _keys(db) == ([], 0)  # 20 facts wait past the mark
        assert [f.id for f in memory.store.find_by_text("a", "batch 1 note 4")] == [batches[1][4].id]
        batches.append(memory.remember_many("a", [f"batch 2 note {i}" for i in range(10)]))
        assert _keys(db) == (list(range(1, 31)), 30)  # the 25th fact past the mark settles all 30
        tail = memory.remember("a", "a note past the mark")
        twin = memory.remember("b", "batch 0 note 3")  # same text, other agent: never mixed up
        for fact in [batches[0][3], batches[2][9], tail, twin]:
            assert [f.id for f in memory.store.find_by_text(fact.agent_id, fact.text)] == [fact.id]
        assert memory.forget("a", "batch 0 note 3") == [batches[0][3].id]
        assert memory.forget("a", "a note past the mark") == [tail.id]
        assert memory.store.find_by_text("a", "batch 0 note 3")[0].superseded_by is not None
        assert memory.store.find_by_text("a", "never written") == []


def test_deleting_the_newest_fact_lowers_the_mark_so_its_rowid_can_return(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_inserts, "SETTLE_ROWS", 5)
    db = tmp_path / "s" / DB_FILENAME
    config = MemoryConfig(async_consolidate=False)
    with Memory(tmp_path / "s", config=config, embedder=None, summariser=None) as memory:
        facts = memory.remember_many("a", [f"note {i}" for i in range(8)])
        assert _keys(db) == (list(range(1, 9)), 8)
        assert memory.store.delete_facts([facts[7].id, facts[2].id]) == [facts[7].id, facts[2].id]
        assert _keys(db) == ([1, 2, 4, 5, 6, 7], 7)  # keys of deleted rows gone, the mark below rowid 8
        again = memory.remember("a", "a new note")  # SQLite gives it rowid 8 again
        assert [f.id for f in memory.store.find_by_text("a", "a new note")] == [again.id]
        assert (
            memory.store.find_by_text("a", "note 7") == [] and memory.store.find_by_text("a", "note 2") == []
        )
        assert [f.id for f in memory.store.find_by_text("a", "note 6")] == [facts[6].id]


def test_a_text_lookup_reads_keys_and_rows_by_key_never_a_walk(tmp_path: Path) -> None:
    from graymatter.store.sqlite.reads import _BY_TEXT

    with Memory(tmp_path / "s", config=MemoryConfig(), embedder=None, summariser=None) as memory:
        memory.remember_many("a", [f"note {i}" for i in range(200)])
        plan = memory.store._read(  # type: ignore[attr-defined]
            lambda c: c.execute(
                f"EXPLAIN QUERY PLAN SELECT id FROM facts {_BY_TEXT}", [1, 1, "a", "x", "fact"]
            ).fetchall()
        )
    steps = [str(r[3]) for r in plan]
    assert steps[0] == "SEARCH facts USING INTEGER PRIMARY KEY (rowid=?)"
    assert "SEARCH facts_text USING PRIMARY KEY (text_hash=?)" in steps
    assert "SEARCH facts USING INTEGER PRIMARY KEY (rowid>?)" in steps
    assert not any(s.startswith("SCAN") or "facts_listing" in s for s in steps), steps


def _stored(db: Path, ids: list[str]) -> list[tuple[object, ...]]:
    """Every column of the given facts, with each value's storage class (rowid aside)."""
    with sqlite3.connect(db) as conn:
        names = [str(r[1]) for r in conn.execute("PRAGMA table_info(facts)") if r[1] != "rowid"]
        columns = ", ".join(f"{n}, typeof({n})" for n in names)
        marks = ",".join("?" * len(ids))
        keys = [fact_key(i) for i in ids]
        rows = conn.execute(f"SELECT {columns} FROM facts WHERE id IN ({marks}) ORDER BY id", keys).fetchall()
    conn.close()
    return rows


def test_plain_new_facts_are_stored_exactly_as_the_full_insert_stores_them(tmp_path: Path) -> None:
    """A bulk write's facts take the short insert built from the columns they were made of
    (``store.rows.NewFacts``); other plain new facts take the short insert built from the models; a batch
    with anything else takes the full one. All store the same values, of the same storage classes (250
    facts: two statements of a hundred rows and fifty rows one by one)."""
    with Memory(tmp_path / "x", config=MemoryConfig(), embedder=None, summariser=None) as maker:
        facts = maker._new_facts("a", [f"plain note {i}" for i in range(250)], "verified", Provenance())
        alias = maker.alias("z", "k8s", ["kubernetes"])
    assert type(facts) is NewFacts
    stores, inserts = {}, {}
    cases = (("new", facts), ("plain", list(facts)), ("full", [*facts, alias]), ("import", list(facts)))
    for name, batch in cases:
        with Memory(tmp_path / name, config=MemoryConfig(), embedder=None, summariser=None) as memory:
            seen: list[str] = []
            memory.store._conn().set_trace_callback(seen.append)  # type: ignore[attr-defined]
            if name == "import":  # an import of plain facts takes the short insert too
                assert memory.store.import_facts(batch) == (250, 0)
            else:
                memory.store.add_facts(batch)
            memory.store._conn().set_trace_callback(None)  # type: ignore[attr-defined]
        stores[name] = _stored(tmp_path / name / DB_FILENAME, [f.id for f in facts])
        inserts[name] = {s.split(") VALUES")[0] for s in seen if s.startswith("INSERT INTO facts (")}
    assert len(stores["plain"]) == 250
    assert stores["new"] == stores["plain"] == stores["full"] == stores["import"]
    assert inserts["new"] == inserts["plain"] == inserts["import"] == {_SHORT}
    assert len(inserts["full"]) == 1 and inserts["full"] != {_SHORT}


def test_accessed_facts_are_plain_and_stored_exactly_as_the_full_insert_stores_them(tmp_path: Path) -> None:
    """An import of facts a recall has touched (an access count and a later last access) takes the short
    insert too, and stores what the full insert stores."""
    with Memory(tmp_path / "x", config=MemoryConfig(), embedder=None, summariser=None) as maker:
        made = maker._new_facts("a", [f"plain note {i}" for i in range(120)], "inferred", Provenance())
        alias = maker.alias("z", "k8s", ["kubernetes"])
    later = made[0].created_at + timedelta(hours=2)
    facts = [f.model_copy(update={"access_count": i % 3, "accessed_at": later if i % 3 else f.accessed_at})
             for i, f in enumerate(made)]  # fmt: skip
    stores, inserts = {}, {}
    for name, batch in (("plain", facts), ("full", [*facts, alias])):
        with Memory(tmp_path / name, config=MemoryConfig(), embedder=None, summariser=None) as memory:
            seen: list[str] = []
            memory.store._conn().set_trace_callback(seen.append)  # type: ignore[attr-defined]
            assert memory.store.import_facts(batch)[0] == len(batch)
            memory.store._conn().set_trace_callback(None)  # type: ignore[attr-defined]
            assert memory.store.get_facts([f.id for f in facts]) == facts
        stores[name] = _stored(tmp_path / name / DB_FILENAME, [f.id for f in facts])
        inserts[name] = {s.split(") VALUES")[0] for s in seen if s.startswith("INSERT INTO facts (")}
    assert len(stores["plain"]) == 120 and stores["plain"] == stores["full"]
    assert inserts["plain"] == {_SHORT} and inserts["full"] != {_SHORT}
