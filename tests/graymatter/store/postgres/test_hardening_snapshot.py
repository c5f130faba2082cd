"""PostgreSQL keyword search reads one consistent snapshot (issue 16, defect 4).

``keyword_search`` reads the corpus totals and each term's document count in separate statements. In
autocommit mode every statement sees its own snapshot, so a writer committing in between made a term in
every fact count more documents than the total: ``math domain error`` from BM25's idf, with no fault at
all. Here every fact contains the searched term while a writer keeps adding more.
"""

from __future__ import annotations

import threading

import pytest

from graymatter.ids import new_ulid
from graymatter.models import Fact, utcnow
from graymatter.store.postgres import PostgresStore

pytestmark = pytest.mark.postgres


def _fact(i: int) -> Fact:
    now = utcnow()
    return Fact(id=new_ulid(), agent_id="a", text=f"deploy step {i}", created_at=now, accessed_at=now)


def test_keyword_search_under_concurrent_writes_never_fails(pg_dsn: str) -> None:
    store = PostgresStore(pg_dsn)
    try:
        store.add_facts([_fact(i) for i in range(20)])
        stop = threading.Event()
        written = [0]

        def writer() -> None:
            while not stop.is_set():
                store.add_facts([_fact(written[0])])
                written[0] += 1

        thread = threading.Thread(target=writer)
        thread.start()
        failures: list[BaseException] = []
        try:
            for _ in range(400):
                try:
                    assert store.keyword_search(["a"], ["deploy"], 5)
                except Exception as exc:  # collected, so the writer is always stopped
                    failures.append(exc)
        finally:
            stop.set()
            thread.join()
        assert written[0] > 0  # the searches really ran beside writes
        assert failures == []
    finally:
        store.close()
