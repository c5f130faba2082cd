"""Writers of vectors on one database: while another writer's transaction is open, a batch of the same
dimension goes in without waiting for it; a batch of another dimension still waits until it ends."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from graymatter.errors import StoreUnavailable
from graymatter.ids import new_ulid
from graymatter.models import Fact
from graymatter.store.postgres.store import PostgresStore

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(120)]

_clock = itertools.count()
# What a writer of vectors holds from its dimension check to its commit (_ensure_vector_index).
DIMENSION_SHARED = "SELECT value FROM gm_meta WHERE key = 'embedding_dim' FOR SHARE"


def make_fact(text: str) -> Fact:
    moment = datetime(2026, 3, 1, tzinfo=UTC) + timedelta(milliseconds=next(_clock))
    return Fact(id=new_ulid(), agent_id="a", text=text, created_at=moment, accessed_at=moment)


@pytest.fixture
def store(pg_dsn: str) -> Iterator[PostgresStore]:
    # A lock wait longer than 2 s fails the statement: a write that would wait for the other writer's
    # commit fails instead of hanging the test.
    impatient = PostgresStore(pg_dsn + "&options=-c%20lock_timeout%3D2000")
    impatient.reset_embeddings("m/3")
    impatient.add_facts([make_fact("first vector")], [[1.0, 0.0, 0.0]], "m/3")
    yield impatient
    impatient.close()


@pytest.fixture
def other_writer(pg_dsn: str) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
    """Another server's transaction of a batch with vectors, open between its dimension check and commit."""
    with psycopg.connect(pg_dsn) as conn:
        assert conn.execute(DIMENSION_SHARED).fetchone() == ("3",)
        yield conn
        conn.rollback()


def test_a_batch_of_the_same_dimension_does_not_wait_for_another_writer(
    store: PostgresStore, other_writer: psycopg.Connection[tuple[object, ...]]
) -> None:
    facts = [make_fact(f"second vector {n}") for n in range(3)]
    store.add_facts(facts, [[0.0, 1.0, float(n)] for n in range(3)], "m/3")  # the other is still open
    hits = store.vector_search(["a"], [0.0, 1.0, 0.0], "m/3", 10)
    assert {h.fact_id for h in hits} >= {f.id for f in facts}
    assert store.set_vectors([(facts[0].id, [0.0, 0.0, 1.0])], "m/3") == 1  # re-embedding: the same


def test_a_new_dimension_waits_for_the_writers_of_the_old_one(
    store: PostgresStore, pg_dsn: str, other_writer: psycopg.Connection[tuple[object, ...]]
) -> None:
    store.delete_facts([f.id for f in store.list_facts("a")])  # no vectors left: a new dimension may come
    fresh = make_fact("four dimensions")
    with pytest.raises(StoreUnavailable, match="lock timeout"):
        store.add_facts([fresh], [[1.0, 0.0, 0.0, 0.0]], "m/3")
    assert store.list_facts("a") == []  # the batch rolled back whole
    other_writer.rollback()
    store.add_facts([fresh], [[1.0, 0.0, 0.0, 0.0]], "m/3")
    with psycopg.connect(pg_dsn) as conn:
        assert conn.execute("SELECT value FROM gm_meta WHERE key = 'embedding_dim'").fetchone() == ("4",)
        index = conn.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'gm_vectors_hnsw'").fetchone()
    assert index is not None and "halfvec(4)" in index[0]
    assert [h.fact_id for h in store.vector_search(["a"], [1.0, 0.0, 0.0, 0.0], "m/3", 5)] == [fresh.id]
