"""Bulk row building: provenances serialised once per value; exact-text keys hashed in SQL as text_hash."""

from __future__ import annotations

import sqlite3
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graymatter import Memory
from graymatter.config import MemoryConfig
from graymatter.models import Fact, Provenance
from graymatter.store.sqlite import inserts as sqlite_inserts
from graymatter.store.sqlite import rows as sqlite_rows
from graymatter.store.sqlite.inserts import plain_rows
from graymatter.store.sqlite.keys import fact_keys
from graymatter.store.sqlite.rows import AS_CREATED, text_hash
from graymatter.store.sqlite.schema import DB_FILENAME
from graymatter.store.sqlite.store import SQLiteStore

_T = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def _fact(i: int, provenance: Provenance, text: str = "") -> Fact:
    return Fact(
        id=f"01ARZ3NDEKTSV4RRFFQ69G5F{i:02d}",
        agent_id="a",
        text=text or f"note {i}",
        created_at=_T,
        accessed_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),  # equal to created_at, another object
        provenance=provenance,
    )


def test_equal_provenances_are_serialised_once_and_stored_as_each_says(tmp_path: Path) -> None:
    provenances = [
        Provenance(interface="import", client="cli"),
        Provenance(interface="import", client="cli"),  # equal value, another object (as a parsed bundle has)
        Provenance(interface="mcp", client="cli", session="s-1"),
        Provenance(),
    ]
    facts = [_fact(i, p) for i, p in enumerate(provenances)]
    texts = sqlite_inserts.provenances(facts)
    assert len(texts) == 4 and texts[id(provenances[0])] is texts[id(provenances[1])]
    assert [texts[id(p)] for p in provenances] == [
        '{"interface":"import","client":"cli"}',
        '{"interface":"import","client":"cli"}',
        '{"interface":"mcp","client":"cli","session":"s-1"}',
        "",  # the default provenance takes no bytes (schema 7; "{}" before)
    ]
    with Memory(tmp_path / "s", config=MemoryConfig(), embedder=None, summariser=None) as memory:
        assert memory.store.import_facts(facts) == (4, 0)
        assert [f.provenance for f in memory.store.get_facts([f.id for f in facts])] == provenances
    conn = sqlite3.connect(tmp_path / "s" / DB_FILENAME)
    try:
        rows = conn.execute("SELECT provenance, created_at, accessed_at FROM facts ORDER BY rowid").fetchall()
    finally:
        conn.close()
    assert [r[0] for r in rows] == [texts[id(p)] for p in provenances]
    assert all(r[2] == AS_CREATED for r in rows)  # never accessed: read back as the creation moment


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(st.characters(blacklist_categories=("Cs",)), max_size=40), min_size=1, max_size=6))
def test_the_sql_key_of_a_stored_text_is_text_hash(texts: list[str]) -> None:
    """What the settle writes (``gm_text_hash`` in SQL, schema 7) is the key lookups compute; the plain rows
    carry no key. (A lone surrogate cannot be bound to SQLite at all, so no such text is ever stored.)"""
    facts = [_fact(i, Provenance(), text or "x") for i, text in enumerate(texts)]
    with tempfile.TemporaryDirectory() as directory, SQLiteStore(directory) as store:
        keys = fact_keys([f.id for f in facts])
        assert all(len(row) == 8 for row in plain_rows(facts, keys, {"a": 1}) or [()])
        store.add_facts(facts)
        keys = store._write(lambda c: c.execute("SELECT gm_text_hash(text), text FROM facts").fetchall())
        assert sorted(keys) == sorted((text_hash(f.text), f.text) for f in facts)
        assert all(-(1 << 23) <= key < 1 << 23 for key, _ in keys)  # three bytes in a record (schema 7)
        assert all(store.find_by_text("a", f.text) for f in facts)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40), min_size=1))
def test_the_settled_keys_are_text_hash_of_each_stored_text(texts: list[str]) -> None:
    """The settle hashes in SQL (``rows.TEXT_HASH_SQL``: CRC-32 of the stored UTF-8 bytes), the lookups in
    Python (``text_hash``): the same key for any storable text, NUL and every plane included."""
    facts = [_fact(i, Provenance(), text) for i, text in enumerate(texts)]
    with pytest.MonkeyPatch.context() as patch, tempfile.TemporaryDirectory() as directory:
        patch.setattr(sqlite_inserts, "SETTLE_ROWS", 1)  # every write settles
        with SQLiteStore(directory) as store:
            store.add_facts(facts)
            join = "SELECT k.text_hash, f.text FROM facts_text AS k JOIN facts AS f ON f.rowid = k.fact_rowid"
            settled = store._write(lambda c: c.execute(join).fetchall())
            assert sorted(settled) == sorted((text_hash(f.text), f.text) for f in facts)
            assert all(store.find_by_text("a", f.text) for f in facts)


def _columns_of(db: Path) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(db)
    try:
        names = [str(r[1]) for r in conn.execute("PRAGMA table_info(facts)")]
        columns = ", ".join(f"{n}, typeof({n})" for n in names)
        return conn.execute(f"SELECT {columns} FROM facts ORDER BY rowid").fetchall()
    finally:
        conn.close()


def test_rows_bound_a_hundred_to_a_statement_are_the_rows_executemany_stores(tmp_path: Path) -> None:
    """A hundred rows to a statement, their shared agent, access, label and provenance bound once when they
    agree (the first hundred), each row's own when not (the second), the tail by ``executemany``: the
    same rows, rowids and storage classes as one ``executemany`` of every row."""
    later = datetime(2026, 1, 3, tzinfo=UTC)
    facts = [
        Fact(
            id=f"01ARZ3NDEKTSV4RRFFQ69G{i:04d}",
            agent_id="a" if i < 100 or i % 2 else "b",
            text=f"note {i}",
            created_at=_T,
            accessed_at=later if i in (150, 220) else _T,
            confidence="verified" if i in (160, 230) else "inferred",
            provenance=Provenance(interface="cli") if i in (170, 240) else Provenance(),
        )
        for i in range(250)
    ]
    stored = []
    for name, per in (("each", 1), ("hundred", 100)):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(sqlite_rows, "ROWS_PER_INSERT", per)
            with SQLiteStore(tmp_path / name) as store:
                seen: list[str] = []
                store._conn().set_trace_callback(seen.append)
                store.add_facts(facts)
                store._conn().set_trace_callback(None)
        inserts = [s for s in seen if s.startswith("INSERT INTO facts (")]
        assert len(inserts) == (250 if per == 1 else 2 + 50)
        stored.append(_columns_of(tmp_path / name / DB_FILENAME))
    assert len(stored[0]) == 250 and stored[0] == stored[1]
