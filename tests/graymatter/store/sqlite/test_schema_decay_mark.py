"""Schema 7: the listing index without the id, never-visited facts found behind a per-agent creation mark,
no text hash, default label or unused access moment in new rows.

The 6 -> 7 migration keeps every row of every table (facts visited and not, pinned, tombstones, aliases,
session turns, vectors, links, checkpoints, settled and unsettled text keys); the decay walk finds what the
dropped ``facts_decay_fresh`` index found, including facts an import or an unpin puts behind the mark.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from graymatter import Memory
from graymatter.config import MemoryConfig
from graymatter.ids import new_ulid
from graymatter.models import Fact
from graymatter.store.sqlite import decay as sqlite_decay
from graymatter.store.sqlite import inserts as sqlite_inserts
from graymatter.store.sqlite import schema
from graymatter.store.sqlite.keys import fact_key
from graymatter.store.sqlite.rows import at_micros, text_hash
from graymatter.store.sqlite.schema import DB_FILENAME
from graymatter.store.sqlite.store import SQLiteStore
from support.old_schema import migrate_to, old_schema_db

HOUR = 3_600_000_000
NOW = datetime(2026, 6, 1, tzinfo=UTC)
_T0 = int(NOW.timestamp()) * 1_000_000 - 100 * HOUR  # 100 hours before NOW
_TABLES = {
    "facts": "SELECT * FROM facts ORDER BY rowid",
    "vectors": "SELECT * FROM vectors ORDER BY rowid",
    "links": "SELECT id, agent_id, source, target, relation, created_at, provenance FROM links ORDER BY id",
    "checkpoints": "SELECT * FROM checkpoints ORDER BY rowid",
}
"""Every row of each table (links lost their rowid at schema 8, so they are read by their columns)."""
_FACT_COLUMNS = (
    "id, agent_id, text, kind, equivalents, created_at, accessed_at, access_count, superseded_by, pinned, "
    "pinned_at, confidence, provenance, embed_state, decay_due_at, text_hash"
)


def _ulid(i: int) -> str:
    return f"01JTDECAYMARK{i:013d}"


def _fact_rows() -> list[tuple[object, ...]]:
    """40 facts of ``a`` and 5 of ``b``: every 5th visited (``decay_due_at`` set), #7 pinned, every 9th a
    tombstone, 30-34 session turns, a recently accessed one (#12), and an alias."""
    rows: list[tuple[object, ...]] = []
    for i in range(45):
        agent = "a" if i < 40 else "b"
        created = _T0 + (i // 2) * HOUR  # created-at ties, two facts each
        accessed = NOW_US - HOUR // 4 if i == 12 else created
        visited = created + 200 * HOUR if i % 5 == 0 else None
        provenance = json.dumps({"session": "s1"}) if 30 <= i < 35 else "{}"
        text = f"fact {i} about the release train"
        retired = _ulid(99) if i % 9 == 4 else None
        label = "verified" if i % 4 == 0 else "inferred"
        rows.append((_ulid(i), agent, text, "fact", None, created, accessed, int(i == 12), retired,
                     int(i == 7),
                     created if i == 7 else None, label, provenance, 2 if i < 3 else 0, visited,
                     text_hash(text)))  # fmt: skip
    alias = ["kubernetes"]
    rows.append((_ulid(50), "a", "k8s", "alias", json.dumps(alias), _T0, _T0, 0, None, 0, None, "inferred",
                 "{}", 0, None, text_hash("k8s")))  # fmt: skip
    return rows


NOW_US = int(NOW.timestamp()) * 1_000_000


def _schema6_store(directory: Path) -> None:
    """A schema-6 database written the way schema 6 wrote it: keys settled up to rowid 30, the rest past the
    mark; vectors of three facts, a link, a checkpoint, a write counter."""
    conn = old_schema_db(directory, 6)
    conn.execute("BEGIN")
    conn.executemany(f"INSERT INTO facts ({_FACT_COLUMNS}) VALUES ({','.join('?' * 16)})", _fact_rows())
    conn.execute(
        "INSERT INTO facts_fts(rowid, text) SELECT rowid, text FROM facts WHERE "
        + schema.INDEXED_SQL.format(row="")
    )
    conn.execute("INSERT INTO facts_text SELECT text_hash, rowid FROM facts WHERE rowid <= 30 ORDER BY 1, 2")
    conn.execute("UPDATE meta SET value = '30' WHERE key = 'text_settled'")
    conn.executemany(
        "INSERT INTO vectors(fact_rowid, agent_id, confidence, vec) VALUES (?, 'a', 0, ?)",
        [(rowid, bytes(range(rowid, rowid + 8))) for rowid in (1, 2, 3)],
    )
    conn.execute(
        "INSERT INTO links(id, agent_id, source, target, relation, created_at) "
        "VALUES (?, 'a', ?, ?, 'cites', ?)",
        (_ulid(60), _ulid(1), _ulid(2), _T0),
    )
    conn.execute(
        "INSERT INTO checkpoints(id, agent_id, created_at, state, messages, message_count) "
        "VALUES (?, 'a', ?, '{\"step\":1}', '[]', 0)",
        (_ulid(61), _T0),
    )
    conn.execute("INSERT INTO meta(key, value) VALUES ('writes:a', '7')")
    conn.execute("COMMIT")
    conn.close()


def _snapshot(db: Path) -> dict[str, list[tuple[object, ...]]]:
    conn = sqlite3.connect(db)
    try:
        out = {t: conn.execute(sql).fetchall() for t, sql in _TABLES.items()}
        out["facts_text"] = conn.execute("SELECT * FROM facts_text ORDER BY 1, 2").fetchall()
        out["meta"] = conn.execute(
            "SELECT key, value FROM meta WHERE key NOT IN ('schema_version') AND key NOT LIKE 'decay_mark:%' "
            "ORDER BY 1"
        ).fetchall()
        out["fts"] = conn.execute(
            "SELECT rowid FROM facts_fts WHERE facts_fts MATCH 'release' ORDER BY 1"
        ).fetchall()
    finally:
        conn.close()
    return out


def test_schema_6_migrates_to_7_keeping_every_row_and_setting_the_marks(tmp_path: Path) -> None:
    _schema6_store(tmp_path / "s")
    db = tmp_path / "s" / DB_FILENAME
    before = _snapshot(db)
    migrate_to(db, 7)  # the rows read in schema 7's layout; the store then goes on to the current schema
    after = _snapshot(db)
    settled = [(text_hash(str(r[2])), rowid) for rowid, r in enumerate(_fact_rows(), 1) if rowid <= 30]
    assert after.pop("facts_text") == sorted(settled)  # re-keyed to 24 bits, the same facts
    before.pop("facts_text")
    assert after == before
    conn = sqlite3.connect(db)
    try:
        objects = {str(r[0]) for r in conn.execute("SELECT name FROM sqlite_master WHERE tbl_name = 'facts'")}
        listing = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'facts_listing'").fetchone()[0]
        marks = dict(conn.execute("SELECT key, value FROM meta WHERE key LIKE 'decay_mark:%'").fetchall())
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 7
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        conn.close()
    assert "facts_decay_fresh" not in objects and "facts_decay_due" in objects
    assert listing.endswith("(agent_id, kind, created_at, superseded_by)")
    # a: fact 1 is its oldest never-visited unpinned fact; b: all of its facts are unvisited from 40 on
    assert marks == {"decay_mark:a": str(_T0), "decay_mark:b": str(_T0 + 20 * HOUR)}
    with SQLiteStore(tmp_path / "s") as store:
        assert store.find_by_text("a", "fact 35 about the release train")[0].id == _ulid(35)  # unsettled
        assert store.find_by_text("a", "fact 3 about the release train")[0].id == _ulid(3)  # settled
        page = store.facts_page("a", before=None, limit=7, live=None)
        rows = [r for r in _fact_rows() if r[1] == "a" and r[3] == "fact"]
        newest = [r[0] for r in sorted(rows, key=lambda r: (r[5], r[0]), reverse=True)]  # type: ignore[return-value]
        assert [f.id for f in page.facts] == newest[:7]
        assert page.before is not None
        second = store.facts_page("a", before=page.before, limit=100, live=None)  # a cursor inside a tie
        assert [f.id for f in second.facts] == newest[7:]


def _expected_fresh(rows: list[tuple[object, ...]], agent: str) -> list[str]:
    """What the dropped index found: unvisited, unpinned facts idle for an hour, oldest access first."""
    fresh_before = NOW_US - HOUR
    keep = [r for r in rows if r[1] == agent and r[3] == "fact" and r[14] is None and not r[9]]
    keep = [r for r in keep if int(r[6]) <= fresh_before]  # type: ignore[call-overload]
    return [str(r[0]) for r in sorted(keep, key=lambda r: (r[5], r[0]))]  # type: ignore[return-value]


def test_after_the_migration_a_cycle_finds_what_the_fresh_index_found(tmp_path: Path) -> None:
    _schema6_store(tmp_path / "s")
    with SQLiteStore(tmp_path / "s") as store:
        found = store.decay_due("a", NOW, NOW - timedelta(hours=1), 100)
        assert [f.id for f in found] == _expected_fresh(_fact_rows(), "a")
        recent = store.get_facts([_ulid(12)])[0]  # used a quarter of an hour ago: scheduled, not handed back
        conn = sqlite3.connect(tmp_path / "s" / DB_FILENAME)
        due_at = conn.execute(
            "SELECT decay_due_at FROM facts WHERE id = ?", (fact_key(_ulid(12)),)
        ).fetchone()[0]
        conn.close()
        assert at_micros(due_at) == recent.accessed_at + timedelta(hours=1)
        later = NOW + timedelta(hours=1)
        assert _ulid(12) in [f.id for f in store.decay_due("a", later, later - timedelta(hours=1), 100)]


def _fact(text: str, at: datetime, **kw: object) -> Fact:
    return Fact(id=new_ulid(), agent_id="a", text=text, created_at=at, accessed_at=at, **kw)  # type: ignore[arg-type]


def _visit_all(store: SQLiteStore, now: datetime) -> None:
    """Schedule every due fact far ahead (what a cycle records), so that only new arrivals are due later."""
    due = store.decay_due("a", now, now - timedelta(hours=1), 10_000)
    store.record_decay({f.id: (f.weight, now + timedelta(days=30)) for f in due})


def test_facts_put_behind_the_mark_are_still_found(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "s") as store:
        store.add_facts([_fact(f"new {i}", NOW - timedelta(hours=5)) for i in range(3)])
        pinned = _fact("pinned", NOW - timedelta(hours=4), pinned=True, pinned_at=NOW)
        store.add_facts([pinned])
        _visit_all(store, NOW)  # the mark is now at NOW - 1h
        assert store.decay_due("a", NOW, NOW - timedelta(hours=1), 10) == []
        old = _fact("imported from last year", NOW - timedelta(days=300))
        store.import_facts([old])  # behind the mark: the mark moves back
        assert [f.id for f in store.decay_due("a", NOW, NOW - timedelta(hours=1), 10)] == [old.id]
        _visit_all(store, NOW)
        assert store.decay_due("a", NOW, NOW - timedelta(hours=1), 10) == []
        assert store.set_pinned([pinned.id], False, NOW) == [pinned.id]  # behind the mark, never visited:
        assert [f.id for f in store.decay_due("a", NOW, NOW - timedelta(hours=1), 10)] == [pinned.id]
        conn = sqlite3.connect(tmp_path / "s" / DB_FILENAME)  # due an hour after its last access, as before
        due_at = conn.execute(
            "SELECT decay_due_at FROM facts WHERE id = ?", (fact_key(pinned.id),)
        ).fetchone()[0]
        conn.close()
        assert at_micros(due_at) == pinned.accessed_at + timedelta(hours=1)


def test_one_call_walks_a_bounded_window_and_resumes_at_the_mark(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_decay, "FRESH_SCAN", 4)
    with SQLiteStore(tmp_path / "s") as store:
        facts = [_fact(f"note {i}", NOW - timedelta(hours=10 - i / 10)) for i in range(10)]
        store.add_facts(facts)
        store.record_decay({f.id: (1.0, NOW + timedelta(days=30)) for f in facts if f.text != "note 9"})
        seen = [store.decay_due("a", NOW, NOW - timedelta(hours=1), 10) for _ in range(3)]
        assert [[f.id for f in s] for s in seen] == [[], [], [facts[9].id]]  # 4 entries a call


def test_a_memory_cycle_after_an_hour_decays_facts_written_in_bulk(tmp_path: Path) -> None:
    config = MemoryConfig(async_consolidate=False)
    with Memory(tmp_path / "m", config=config, embedder=None, summariser=None) as memory:
        written = memory.remember_many("a", [f"bulk note {i}" for i in range(30)])
        assert memory.store.decay_due("a", NOW, NOW - timedelta(hours=1), 100) == []  # written after NOW
        future = written[0].created_at + timedelta(hours=30)
        assert [f.id for f in memory.store.decay_due("a", future, future - timedelta(hours=1), 100)] == [
            f.id for f in written
        ]


def _raw(db: Path, sql: str, *params: object) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def test_rows_before_and_after_the_migration_read_and_filter_alike(tmp_path: Path) -> None:
    """Schema 7 rows store the default label as '' and a never-used fact's access as 0, and no text hash;
    rows written before keep 'inferred', the moment and the hash: every read and filter sees the same."""
    _schema6_store(tmp_path / "s")
    db = tmp_path / "s" / DB_FILENAME
    with SQLiteStore(tmp_path / "s") as store:
        new = [_fact(f"new fact {i} about the release train", NOW - timedelta(hours=i)) for i in range(3)]
        new.append(_fact("new verified fact about the release train", NOW, confidence="verified"))
        store.add_facts(new)
        assert store.get_facts([f.id for f in new]) == new
        raw = "SELECT confidence, accessed_at, provenance FROM facts WHERE id = ?"  # no text_hash since 9
        assert _raw(db, raw, fact_key(new[0].id)) == [("", 0, "")]
        legacy = [r for r in _fact_rows() if r[1] == "a" and r[3] == "fact" and r[8] is None]
        inferred = {str(r[0]) for r in legacy if r[11] == "inferred"} | {f.id for f in new[:3]}
        verified = {str(r[0]) for r in legacy if r[11] == "verified"} | {new[3].id}
        page = store.facts_page("a", before=None, limit=100, confidence="inferred")
        assert {f.id for f in page.facts} == inferred
        assert {
            f.id for f in store.facts_page("a", before=None, limit=100, confidence="verified").facts
        } == verified
        assert set(store.recent(["a"], 100, ["inferred"])) == inferred
        library = store.facts_page("a", before=None, limit=100, interface="library").facts
        assert {f.id for f in library} == inferred | verified  # '' and '{}' and a session: all library
        assert store.facts_page("a", before=None, limit=100, interface="mcp").facts == []
        hits = store.keyword_search(["a"], ["release"], 100, ["inferred"])
        assert {h.fact_id for h in hits} == inferred
        labels = {fid: label for fid, (_, label) in store.rank_info([*inferred, *verified]).items()}
        assert labels == {**dict.fromkeys(inferred, "inferred"), **dict.fromkeys(verified, "verified")}


def test_an_access_of_a_never_used_fact_keeps_the_later_moment(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "s") as store:
        fact = _fact("used later", NOW)
        store.add_facts([fact])
        store.record_access([fact.id], NOW - timedelta(days=1))  # earlier than its creation: kept
        assert store.get_facts([fact.id])[0].accessed_at == NOW
        store.record_accesses({fact.id: 2}, NOW + timedelta(hours=2))
        got = store.get_facts([fact.id])[0]
        assert (got.accessed_at, got.access_count) == (NOW + timedelta(hours=2), 3)


def test_deleting_a_fact_removes_its_settled_key_hashed_in_sql(tmp_path: Path) -> None:
    _schema6_store(tmp_path / "s")
    db = tmp_path / "s" / DB_FILENAME
    with SQLiteStore(tmp_path / "s") as store:
        fresh = [_fact(f"settled later {i}", NOW) for i in range(3)]
        store.add_facts(fresh)
        store._write(lambda c: c.execute(sqlite_inserts.SETTLE, (0,)))  # type: ignore[attr-defined]
        keys = {int(r[0]): r[1] for r in _raw(db, "SELECT fact_rowid, text_hash FROM facts_text")}
        assert keys[47] == text_hash("settled later 0")
        assert store.delete_facts([_ulid(3), fresh[0].id]) == [_ulid(3), fresh[0].id]
    rowids = {int(r[0]) for r in _raw(db, "SELECT fact_rowid FROM facts_text")}
    assert 4 not in rowids and 47 not in rowids and {5, 48} <= rowids


def test_the_walk_past_the_mark_is_one_index_range_and_rows_by_rowid(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "s") as store:
        plan = store._read(  # type: ignore[attr-defined]
            lambda c: c.execute(f"EXPLAIN QUERY PLAN {sqlite_decay._WINDOW}", ("a", 0, 1, 10)).fetchall()
        )
    steps = [str(r[3]) for r in plan]
    assert steps == [
        "MATERIALIZE w",
        "SEARCH facts USING COVERING INDEX facts_listing "
        "(agent=? AND kind=? AND created_at>? AND created_at<?)",
        "SCALAR SUBQUERY 1",  # the agent's code (schema 9): one probe of meta
        "SEARCH meta USING PRIMARY KEY (key=?)",
        "SCAN w",  # at most FRESH_SCAN entries, each row read by rowid
        "SEARCH f USING INTEGER PRIMARY KEY (rowid=?)",
        "USE TEMP B-TREE FOR ORDER BY",  # the window's entries, not the agent's facts
    ]


def _traced(store: SQLiteStore, call: Any) -> list[str]:
    seen: list[str] = []
    conn = store._conn()
    conn.set_trace_callback(seen.append)
    try:
        call()
    finally:
        conn.set_trace_callback(None)
    return seen


def test_a_cycle_with_nothing_past_the_mark_writes_nothing(tmp_path: Path) -> None:
    """While an agent is written to (every fact younger than an hour), its cycles only read: no write
    transaction competes with the writer. The first walk over visited facts moves the mark, once."""
    with SQLiteStore(tmp_path / "s") as store:
        store.add_facts([_fact(f"young {i}", NOW - timedelta(minutes=i)) for i in range(5)])
        seen = _traced(store, lambda: store.decay_due("a", NOW, NOW - timedelta(hours=1), 10))
        assert not any(s.startswith(("BEGIN IMMEDIATE", "UPDATE", "INSERT")) for s in seen), seen
        old = [_fact(f"old {i}", NOW - timedelta(hours=3)) for i in range(3)]
        store.add_facts(old)
        _visit_all(store, NOW)  # hands them back; the mark stays at the first until they are recorded
        moved = _traced(store, lambda: store.decay_due("a", NOW, NOW - timedelta(hours=1), 10))
        assert [s for s in moved if s.startswith("BEGIN IMMEDIATE")] == ["BEGIN IMMEDIATE"]
        again = _traced(store, lambda: store.decay_due("a", NOW, NOW - timedelta(hours=1), 10))
        assert not any(s.startswith("BEGIN IMMEDIATE") for s in again), again
