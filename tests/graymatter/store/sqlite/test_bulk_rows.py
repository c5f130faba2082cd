"""Bulk row building: provenances serialised once per value, exact-text keys computed inline as text_hash."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from graymatter import Memory
from graymatter.config import MemoryConfig
from graymatter.models import Fact, Provenance
from graymatter.store.sqlite.facts import _plain_rows, _provenances
from graymatter.store.sqlite.rows import text_hash
from graymatter.store.sqlite.schema import DB_FILENAME

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
    texts = _provenances(facts)
    assert len(texts) == 4 and texts[id(provenances[0])] is texts[id(provenances[1])]
    assert [texts[id(p)] for p in provenances] == [
        '{"interface":"import","client":"cli"}',
        '{"interface":"import","client":"cli"}',
        '{"interface":"mcp","client":"cli","session":"s-1"}',
        "{}",
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
    assert all(r[1] == r[2] for r in rows)


@given(st.text(st.characters(blacklist_categories=()), max_size=40))  # surrogates too
def test_the_inline_key_of_a_plain_row_is_text_hash(text: str) -> None:
    row = (_plain_rows([_fact(1, Provenance(), text or "x")]) or [()])[0]
    assert row[-1] == text_hash(text or "x")
