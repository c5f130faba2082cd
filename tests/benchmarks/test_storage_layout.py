"""benchmarks/storage_layout.py measures the layouts it names: the store's own schema (9), parts of it, and
schema 8 as the migrations built it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from benchmarks import storage_layout


def _columns(db: Path) -> dict[str, tuple[str, str | None]]:
    conn = sqlite3.connect(db)
    try:
        return {r[1]: (r[2], r[4]) for r in conn.execute("PRAGMA table_info(facts)")}
    finally:
        conn.close()


def _facts_indexes(db: Path) -> set[str]:
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'facts'")
        return {str(name) for (name,) in rows}
    finally:
        conn.close()


def test_the_layouts_are_schema_9_and_schema_8_as_the_store_builds_them(tmp_path: Path) -> None:
    now = storage_layout._store_schema(tmp_path / "now")
    before = storage_layout._schema8(tmp_path / "before")
    new, old = _columns(now), _columns(before)
    assert new.pop("id") == ("BLOB", None) and old.pop("id") == ("TEXT", None)
    assert new.pop("agent") == ("INTEGER", None) and old.pop("agent_id") == ("TEXT", None)
    assert new.pop("kind") == ("INTEGER", "0") and old.pop("kind") == ("TEXT", "'fact'")
    assert old.pop("text_hash") == ("INTEGER", None)
    assert {k: v[0] for k, v in new.items()} == {k: v[0] for k, v in old.items()}
    assert {"facts_listing", *storage_layout.PARTIAL} <= _facts_indexes(now)
    assert {"facts_listing", "facts_session", "facts_decay_due"} <= _facts_indexes(before)


@pytest.mark.parametrize("compact", [False, True])
def test_each_layout_takes_every_row_and_indexes_every_live_text(tmp_path: Path, compact: bool) -> None:
    build = storage_layout._store_schema if compact else storage_layout._schema8
    db = build(tmp_path / "store")
    texts = [f"deploys happen on day {i}" for i in range(2_500)]
    assert storage_layout._write(db, texts, compact, full_text=True) > 0
    conn = storage_layout._connect(db)
    try:
        assert conn.execute("SELECT count(*) FROM facts").fetchone()[0] == 2_500
        matched = conn.execute("SELECT count(*) FROM facts_fts WHERE facts_fts MATCH 'deploys'").fetchone()[0]
        assert matched == 2_500
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        conn.close()


def test_the_upgrade_row_measures_a_migration_and_the_compaction_after_it() -> None:
    figures = storage_layout._upgrade(2_000)
    assert figures["compacted_bytes_per_fact"] < figures["migrated_bytes_per_fact"]
    assert figures["schema8_bytes_per_fact"] > 0
    assert figures["migrate_s"] > 0 and figures["compact_s"] > 0
