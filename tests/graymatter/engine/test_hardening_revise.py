"""Revise is a compare-and-swap in one transaction, on both backends (issue 16, defect 1).

Two writers revising one fact: exactly one wins, the other gets ``Conflict`` and nothing changes; a revise
that fails halfway (a fault injected by a database trigger) leaves the store as it was, and a retry works.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from graymatter.config import MemoryConfig
from graymatter.engine.memory import Memory
from graymatter.errors import Conflict, GraymatterError, NotFound
from graymatter.store import open_store
from graymatter.store.base import Store

BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.fixture(params=BACKENDS)
def location(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """Where a fresh store lives: a directory (SQLite) or a new PostgreSQL database."""
    if request.param == "sqlite":
        yield str(tmp_path / "store")
        return
    from support.pgserver import start_cluster

    cluster = start_cluster()
    dsn = cluster.create_database()
    yield dsn
    cluster.drop_database(dsn)


@pytest.fixture
def opener(location: str) -> Iterator[Callable[[], Memory]]:
    """Opens independent memories (own connections) on one store; all closed afterwards."""
    opened: list[Memory] = []

    def open_memory() -> Memory:
        memory = Memory(store=open_store(location), config=MemoryConfig(), embedder=None, summariser=None)
        opened.append(memory)
        return memory

    yield open_memory
    for memory in opened:
        memory.close()


def _live(memory: Memory, agent: str) -> list[str]:
    return sorted(f.text for f in memory.list(agent, include_superseded=False))


def test_stale_replacement_is_a_conflict_and_changes_nothing(opener: Callable[[], Memory]) -> None:
    first, second = opener(), opener()
    old = first.remember("a", "deploys on friday")
    targets = [old.id]  # both writers read the same live target
    one = first._new_fact("a", "deploys on monday", confidence="inferred", provenance=old.provenance)
    two = second._new_fact("a", "deploys on tuesday", confidence="inferred", provenance=old.provenance)
    assert first.store.replace_facts(targets, one) == [old.id]
    before = second.store.list_facts("a")
    with pytest.raises(Conflict, match="another writer"):
        second.store.replace_facts(targets, two)
    assert second.store.list_facts("a") == before  # nothing stored, nothing retired
    assert second.store.get_facts([two.id]) == []
    assert _live(second, "a") == ["deploys on monday"]


def test_concurrent_revises_never_fork(opener: Callable[[], Memory]) -> None:
    writers = [opener(), opener()]
    forks = wins = conflicts = 0
    for trial in range(10):
        agent = f"agent{trial}"
        writers[0].remember(agent, "the build uses make")
        barrier = threading.Barrier(2)
        outcomes: list[str] = []

        def revise(
            memory: Memory,
            text: str,
            agent: str = agent,
            barrier: threading.Barrier = barrier,
            outcomes: list[str] = outcomes,
        ) -> None:
            barrier.wait()
            try:
                memory.revise(agent, "the build uses make", text)
                outcomes.append("won")
            except Conflict:
                outcomes.append("conflict")
            except NotFound:
                outcomes.append("not found")  # read after the winner committed: also no effect

        threads = [
            threading.Thread(target=revise, args=(m, f"the build uses {tool}"))
            for m, tool in zip(writers, ("ninja", "bazel"), strict=True)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        live = _live(writers[1], agent)
        forks += len(live) - 1
        assert sorted(outcomes) in (["conflict", "won"], ["not found", "won"]), outcomes
        wins += outcomes.count("won")
        conflicts += outcomes.count("conflict")
    assert forks == 0
    assert wins == 10


def _inject_tombstone_fault(location: str) -> Callable[[], None]:
    """A database trigger that makes every tombstoning UPDATE fail; returns its remover."""
    if location.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(location, autocommit=True) as conn:
            conn.execute(
                "CREATE FUNCTION gm_test_fault() RETURNS trigger LANGUAGE plpgsql AS "
                "$$ BEGIN RAISE EXCEPTION 'injected fault'; END $$"
            )
            conn.execute(
                "CREATE TRIGGER gm_test_fault BEFORE UPDATE OF superseded_by ON gm_facts "
                "FOR EACH ROW EXECUTE FUNCTION gm_test_fault()"
            )

        def remove_pg() -> None:
            with psycopg.connect(location, autocommit=True) as conn:
                conn.execute("DROP TRIGGER gm_test_fault ON gm_facts")

        return remove_pg
    import sqlite3

    database = next(Path(location).glob("*.db"))
    with sqlite3.connect(database) as conn:
        conn.execute(
            "CREATE TRIGGER gm_test_fault BEFORE UPDATE OF superseded_by ON facts "
            "BEGIN SELECT RAISE(ABORT, 'injected fault'); END"
        )

    def remove_sqlite() -> None:
        with sqlite3.connect(database) as conn:
            conn.execute("DROP TRIGGER gm_test_fault")

    return remove_sqlite


def test_a_revise_failing_halfway_changes_nothing_and_a_retry_works(
    opener: Callable[[], Memory], location: str
) -> None:
    memory = opener()
    memory.remember("a", "the cache lives in redis")
    before = memory.store.list_facts("a")
    remove = _inject_tombstone_fault(location)
    with pytest.raises(GraymatterError):
        memory.revise("a", "the cache lives in redis", "the cache lives in memcached")
    assert memory.store.list_facts("a") == before  # the replacement was rolled back with the tombstone
    remove()
    revision = memory.revise("a", "the cache lives in redis", "the cache lives in memcached")
    assert _live(memory, "a") == ["the cache lives in memcached"]
    assert revision.superseded_ids == [before[0].id]


def test_store_protocol_declares_the_compare_and_swap() -> None:
    assert "replace_facts" in Store.__dict__
