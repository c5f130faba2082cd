"""Keyword cuts with their facts' columns remembered by rowid answer exactly as the cuts that join them, and
the memory is dropped with every change of the index (store/sqlite/search.py, ADR 0011 "Recall latency,
session 7")."""

from __future__ import annotations

import sqlite3
from typing import Any

from graymatter import Memory
from graymatter.store.sqlite import SQLiteStore
from graymatter.store.sqlite.keys import fact_key
from graymatter.store.sqlite.search import _read_known, _structure

SEARCHES: list[tuple[list[str], list[str], int, list[str] | None]] = [
    (["a"], ["payment", "deploy"], 10, None),
    (["a", "b"], ["payment"], 5, ["inferred"]),
    (["b"], ["payment deploy"], 20, ["verified", "unverified"]),
    (["a", "b"], ["deploy", "tuesday"], 3, None),
    (["nobody"], ["payment"], 5, None),
    (["b"], ["payment"], 40, ["verified"]),
]


def _both(store: SQLiteStore) -> list[tuple[Any, Any]]:
    """Each search answered from the remembered rows (twice: filling, then reading) and by the join."""
    out = []
    for agents, terms, limit, labels in SEARCHES:
        store.remember_cut_rows = True
        store.keyword_scores_ranked(agents, terms, limit, labels)
        remembered = store.keyword_scores_ranked(agents, terms, limit, labels)
        store.remember_cut_rows = False
        joined = store.keyword_scores_ranked(agents, terms, limit, labels)
        store.remember_cut_rows = True
        out.append((remembered, joined))
    return out


def _statements(store: SQLiteStore, run: Any) -> list[str]:
    conn: sqlite3.Connection = store._conn()
    seen: list[str] = []
    conn.set_trace_callback(seen.append)
    try:
        run()
    finally:
        conn.set_trace_callback(None)
    return [s for s in seen if not s.startswith("--")]  # FTS5's own reads of its tables


def _filled(memory: Memory) -> SQLiteStore:
    labels = ("verified", "inferred", "unverified")
    memory.remember_many("a", [f"deploy note {i} about the payment service" for i in range(80)])
    for i in range(30):
        memory.remember("b", f"payment deploy {i} on tuesday", confidence=labels[i % 3])
    memory.remember_many("a", [f"the payment deploy turn {i}" for i in range(12)], session="s1")
    store = memory.store
    assert isinstance(store, SQLiteStore)
    return store


def test_remembered_rows_answer_as_the_joined_cut(memory: Memory) -> None:
    store = _filled(memory)
    for remembered, joined in _both(store):
        assert remembered == joined
    assert any(pairs for (pairs, _, _, _), _ in _both(store))  # the searches found something


def test_a_warm_cut_reads_no_fact_row(memory: Memory) -> None:
    store = _filled(memory)
    store.keyword_scores_ranked(["a"], ["payment"], 10, None)
    seen = _statements(store, lambda: store.keyword_scores_ranked(["a"], ["payment"], 10, None))
    assert len(seen) == 1 and "MATCH" in seen[0] and "JOIN" not in seen[0]
    # a write changes the index: the next cut reads its rows again, by rowid
    memory.remember("a", "one more payment note")
    seen = _statements(store, lambda: store.keyword_scores_ranked(["a"], ["payment"], 10, None))
    assert len([s for s in seen if "f.rowid IN (" in s]) == 1


def test_every_change_of_the_index_is_seen(memory: Memory) -> None:
    store = _filled(memory)
    _both(store)
    gone = memory.recall("a", "payment deploy", top_k=3)
    memory.forget("a", gone[0].text)  # retired: out of the index
    for remembered, joined in _both(store):
        assert remembered == joined
    assert all(gone[0].id not in dict(pairs) for (pairs, _, _, _), _ in _both(store))
    # the newest row deleted, its rowid reused by a fact with other words, agent and label
    conn: sqlite3.Connection = store._conn()
    (newest,) = conn.execute("SELECT max(rowid) FROM facts").fetchone()
    conn.execute("DELETE FROM facts WHERE rowid = ?", (newest,))
    fresh = memory.remember("b", "payment kestrel reused the rowid", confidence="verified")
    assert conn.execute("SELECT rowid FROM facts WHERE id = ?", (fact_key(fresh.id),)).fetchone() == (newest,)
    for remembered, joined in _both(store):
        assert remembered == joined
    pairs, _, texts, _ = store.keyword_scores_ranked(["b"], ["payment"], 40, ["verified"])
    assert texts[fresh.id] == "payment kestrel reused the rowid" and fresh.id in dict(pairs)


def test_rows_read_under_another_structure_are_not_kept(memory: Memory) -> None:
    store = _filled(memory)
    conn: sqlite3.Connection = store._conn()
    rowids = [row[0] for row in conn.execute("SELECT rowid FROM facts LIMIT 5")]
    known: dict[int, Any] = {}
    assert not _read_known(conn, rowids, b"not the structure record", known) and known == {}
    assert _read_known(conn, rowids, _structure(conn), known) and sorted(known) == sorted(rowids)


def test_recalls_in_threads_beside_writes_leave_the_memory_exact(memory: Memory) -> None:
    """Threads share a store's memory: recalls while another thread writes and forgets never fail, and once
    the writes stop the remembered rows answer as the join."""
    import threading

    store = _filled(memory)
    errors: list[BaseException] = []
    stop = threading.Event()

    def recalls() -> None:
        try:
            while not stop.is_set():
                for agents, terms, limit, labels in SEARCHES:
                    store.keyword_scores_ranked(agents, terms, limit, labels)
        except BaseException as exc:  # reported by the assertion below
            errors.append(exc)

    readers = [threading.Thread(target=recalls) for _ in range(3)]
    for thread in readers:
        thread.start()
    try:
        for i in range(40):
            fact = memory.remember("a" if i % 2 else "b", f"payment deploy written meanwhile {i}")
            if i % 3 == 0:
                memory.forget(fact.agent_id, fact.text)
    finally:
        stop.set()
        for thread in readers:
            thread.join()
    assert errors == []
    for remembered, joined in _both(store):
        assert remembered == joined
