"""The posting window of SQLite keyword search: a word in more facts than one search scores is searched in
the newest facts first, with the whole index's BM25, and a window too thin for the namespace gives way to
the full search (store/sqlite/search.py, ADR 0011 "Recall latency, session 4")."""

from __future__ import annotations

import sqlite3

import pytest

from graymatter import Memory
from graymatter.store.sqlite import SQLiteStore
from graymatter.store.sqlite.keys import fact_id


def _rowids(store: SQLiteStore) -> dict[str, int]:
    conn: sqlite3.Connection = store._conn()
    return {fact_id(key): rowid for key, rowid in conn.execute("SELECT id, rowid FROM facts")}


@pytest.mark.parametrize("budget", [60, 77, 131])
def test_a_frequent_word_is_scored_in_the_newest_facts_with_the_full_index_scores(
    memory: Memory, budget: int
) -> None:
    # 300 facts say "alpha", with lengths that differ so that BM25 orders them; the old ones are the best.
    # Seven facts without it come first, so the window's bound (a share of the newest rowid, 307) has a
    # fraction.
    memory.remember_many("a", [f"beta note {i}" for i in range(7)])
    texts = [f"alpha {'filler ' * (i % 7)}note {i}" for i in range(300)]
    memory.remember_many("a", texts)
    store = memory.store
    assert isinstance(store, SQLiteStore)
    full = store.keyword_search(["a"], ["alpha"], 300)  # no window: 300 postings are within the default
    assert len(full) == 300
    # a fifth of the postings at 60: the newest fifth of the rowids, above 245.6; the statement rounds
    # every bound down to the integer FTS5 can seek to
    store.max_scored_postings = budget
    windowed = store.keyword_search(["a"], ["alpha"], 10)
    rowid = _rowids(store)
    newest = max(rowid.values())
    floor = (1.0 - budget / 300) * newest
    in_window = [hit for hit in full if rowid[hit.fact_id] > floor]
    assert windowed == in_window[:10]  # the same scores and order as the full search, inside the window
    assert [hit.fact_id for hit in full[:10]] != [hit.fact_id for hit in windowed]  # older facts were left


def test_a_window_too_thin_for_the_namespace_gives_way_to_the_full_search(memory: Memory) -> None:
    memory.remember_many("old", [f"alpha old note {i}" for i in range(30)])
    memory.remember_many("new", [f"alpha new note {i}" for i in range(270)])
    store = memory.store
    assert isinstance(store, SQLiteStore)
    full = store.keyword_search(["old"], ["alpha"], 20)
    store.max_scored_postings = 60  # the window holds only facts of "new"
    assert store.keyword_search(["old"], ["alpha"], 20) == full
    assert len(full) == 20


def test_recall_ranks_inside_the_window_on_a_large_store(memory: Memory) -> None:
    memory.remember_many("a", ["deploy deploy"])  # the best match, and the oldest fact
    memory.remember_many("a", [f"deploy note {i}" for i in range(400)])
    store = memory.store
    assert isinstance(store, SQLiteStore)
    assert memory.recall("a", "deploy", 3)[0].text == "deploy deploy"
    store.max_scored_postings = 150  # the newest 150 / 401 of the rowids: enough for recall's 100 candidates
    hits = memory.recall("a", "deploy", 3)
    # Rowids above (1 - 150/401) x 401 = 251: notes 250 on; equal scores and times keep insertion order.
    assert [h.text for h in hits] == ["deploy note 250", "deploy note 251", "deploy note 252"]
