"""The posting window of PostgreSQL word search: a word in more facts than one search scores is searched in
the newest facts first (by insertion order, entered by fact id), with the whole index's BM25, and a window
too thin for the namespace gives way to the full search in the same statement (store/postgres/bm25.py,
ADR 0018 "Recall and ingest, session 5"). The windows are the SQLite store's for facts written in sequence."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from graymatter import Memory
from graymatter.config import MemoryConfig
from graymatter.store.postgres import PostgresStore
from graymatter.store.sqlite import SQLiteStore

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(240)]


@pytest.fixture
def memory(pg_dsn: str) -> Iterator[Memory]:
    config = MemoryConfig(async_consolidate=False)
    opened = Memory(store=PostgresStore(pg_dsn), config=config, embedder=None, summariser=None)
    yield opened
    opened.close()


def _seqs(dsn: str) -> dict[str, int]:
    with psycopg.connect(dsn) as conn:
        return {fid: seq for fid, seq in conn.execute("SELECT id, seq FROM gm_facts")}


def _store(memory: Memory) -> PostgresStore:
    store = memory.store
    assert isinstance(store, PostgresStore)
    return store


def test_a_frequent_word_is_scored_in_the_newest_facts_with_the_full_index_scores(
    memory: Memory, pg_dsn: str
) -> None:
    # 300 facts say "alpha", with lengths that differ so that BM25 orders them; the old ones are the best.
    memory.remember_many("a", [f"alpha {'filler ' * (i % 7)}note {i}" for i in range(300)])
    store = _store(memory)
    full = store.keyword_search(["a"], ["alpha"], 300)  # no window: 300 postings are within the default
    assert len(full) == 300
    store.max_scored_postings = 60  # a fifth of the postings: the newest fifth of the insertion order
    windowed = store.keyword_search(["a"], ["alpha"], 10)
    seq = _seqs(pg_dsn)
    floor = math.floor((1.0 - 60 / 300) * max(seq.values()))
    in_window = [hit for hit in full if seq[hit.fact_id] > floor]
    assert len(in_window) == 60
    assert windowed == in_window[:10]  # the same scores and order as the full search, inside the window
    assert [hit.fact_id for hit in full[:10]] != [hit.fact_id for hit in windowed]  # older facts were left
    # two words: each fact's parts summed as in the full search; the window counts both words' postings
    memory.remember_many("a", [f"beta alpha {'filler ' * (i % 5)}" for i in range(40)])
    both = store.keyword_search(["a"], ["alpha", "beta"], 400)
    store.max_scored_postings = 170  # 340 + 40 postings: the newest 170 / 380 of the facts
    seq = _seqs(pg_dsn)
    floor = math.floor((1.0 - 170 / 380) * max(seq.values()))
    assert (
        store.keyword_search(["a"], ["alpha", "beta"], 30)
        == [hit for hit in both if seq[hit.fact_id] > floor][:30]
    )


def test_a_window_too_thin_for_the_namespace_gives_way_to_the_full_search(memory: Memory) -> None:
    memory.remember_many("old", [f"alpha old note {i}" for i in range(30)])
    memory.remember_many("new", [f"alpha new note {i}" for i in range(270)])
    store = _store(memory)
    full = store.keyword_search(["old"], ["alpha"], 20)
    store.max_scored_postings = 60  # the window holds only facts of "new"
    assert store.keyword_search(["old"], ["alpha"], 20) == full
    assert len(full) == 20
    assert (
        store.keyword_search(["old", "new"], ["alpha"], 20)
        != store.keyword_search(["new"], ["alpha"], 300)[:20]
    )


def test_recall_ranks_inside_the_window_on_a_large_store_as_sqlite_does(
    memory: Memory, tmp_path: Path
) -> None:
    lite = Memory(
        tmp_path / "lite", config=MemoryConfig(async_consolidate=False), embedder=None, summariser=None
    )
    try:
        for each in (memory, lite):
            each.remember_many("a", ["deploy deploy"])  # the best match, and the oldest fact
            each.remember_many("a", [f"deploy note {i}" for i in range(400)])
        store = _store(memory)
        assert memory.recall("a", "deploy", 3)[0].text == "deploy deploy"
        store.max_scored_postings = 150  # the newest 150 / 401: enough for recall's 100 candidates
        lite_store = lite.store
        assert isinstance(lite_store, SQLiteStore)
        lite_store.max_scored_postings = 150
        hits = memory.recall("a", "deploy", 3)
        # Facts past (1 - 150/401) x 401 = 251 in insertion order: notes 250 on, in insertion order.
        assert [h.text for h in hits] == ["deploy note 250", "deploy note 251", "deploy note 252"]
        assert [(h.text, h.score) for h in hits] == [(h.text, h.score) for h in lite.recall("a", "deploy", 3)]
    finally:
        lite.close()
