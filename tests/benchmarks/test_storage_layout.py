"""benchmarks/storage_layout.py measures the layouts it names: the store's own schema, and a candidate
that differs from it exactly in the three levers (binary id, agent code, empty fact kind)."""

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


def _facts_indexes(db: Path) -> dict[str, str]:
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'facts'")
        return {str(name): str(sql) for name, sql in rows if sql}
    finally:
        conn.close()


def test_the_candidate_differs_from_the_store_schema_only_in_the_three_levers(tmp_path: Path) -> None:
    now = storage_layout._store_schema(tmp_path / "now")
    candidate = storage_layout._candidate(tmp_path / "candidate")
    before, after = _columns(now), _columns(candidate)
    assert before.pop("id") == ("TEXT", None) and after.pop("id") == ("BLOB", None)
    assert before.pop("agent_id") == ("TEXT", None) and after.pop("agent") == ("INTEGER", None)
    assert before.pop("kind") == ("TEXT", "'fact'") and after.pop("kind") == ("TEXT", "''")
    assert before == after
    indexes = _facts_indexes(candidate)
    assert indexes.keys() == _facts_indexes(now).keys()
    assert not any("agent_id" in sql or "'fact'" in sql for sql in indexes.values())


@pytest.mark.parametrize("candidate", [False, True])
def test_each_layout_takes_every_row_and_indexes_every_live_text(tmp_path: Path, candidate: bool) -> None:
    build = storage_layout._candidate if candidate else storage_layout._store_schema
    db = build(tmp_path / "store")
    texts = [f"deploys happen on day {i}" for i in range(2_500)]
    assert storage_layout._write(db, texts, candidate, full_text=True) > 0
    conn = storage_layout._connect(db)
    try:
        assert conn.execute("SELECT count(*) FROM facts").fetchone()[0] == 2_500
        matched = conn.execute("SELECT count(*) FROM facts_fts WHERE facts_fts MATCH 'deploys'").fetchone()[0]
        assert matched == 2_500
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        conn.close()


def test_a_rewrite_that_no_longer_applies_is_refused() -> None:
    with pytest.raises(RuntimeError, match="update _CANDIDATE_EDITS"):
        storage_layout._candidate_sql("table", "facts", "CREATE TABLE facts (rowid INTEGER PRIMARY KEY)")
