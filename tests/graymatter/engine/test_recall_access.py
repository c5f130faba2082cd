"""Access bookkeeping off the answer's path: queued by recall, written by a worker, flushed before reads."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from graymatter import Memory
from graymatter.config import MemoryConfig
from graymatter.engine.access_log import AccessLog
from graymatter.models import utcnow


def _counts(memory: Memory, ids: list[str]) -> list[int]:
    """Access counts read from the store directly (no flush)."""
    return [f.access_count for f in memory.store.get_facts(ids)]


def test_queued_accesses_reach_the_store_only_when_flushed(make_memory: Callable[..., Memory]) -> None:
    memory = make_memory()
    facts = memory.remember_many("a", ["alpha fact", "beta fact"])
    ids = [f.id for f in facts]
    log = AccessLog(memory.store, delay_s=3600.0)
    log.add(ids, utcnow())
    log.add(ids[:1], utcnow())
    assert _counts(memory, ids) == [0, 0]
    log.flush()
    assert _counts(memory, ids) == [2, 1]
    log.close()


def test_a_full_queue_is_written_by_the_worker(make_memory: Callable[..., Memory]) -> None:
    memory = make_memory()
    ids = [f.id for f in memory.remember_many("a", ["one", "two", "three"])]
    log = AccessLog(memory.store, delay_s=3600.0, max_pending=3)
    log.add(ids, utcnow())
    deadline = time.monotonic() + 30
    while _counts(memory, ids) != [1, 1, 1] and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _counts(memory, ids) == [1, 1, 1]
    log.close()


def test_reads_after_recall_see_every_access(make_memory: Callable[..., Memory]) -> None:
    memory = make_memory()
    fact = memory.remember("a", "Deploys happen on Tuesdays")
    memory.recall("a", "deploy")
    memory.recall("a", "tuesdays")
    stored = memory.get(fact.id)
    assert stored.access_count == 2 and stored.accessed_at >= fact.accessed_at
    assert [f.access_count for f in memory.list("a")] == [2]


def test_close_writes_what_is_queued(tmp_path: Path) -> None:
    config = MemoryConfig(async_consolidate=False)
    with Memory(tmp_path / "gm", config=config, embedder=None, summariser=None) as memory:
        fact = memory.remember("a", "Deploys happen on Tuesdays")
        memory.recall("a", "deploy")
    with Memory(tmp_path / "gm", config=config, embedder=None, summariser=None) as memory:
        assert memory.store.get_facts([fact.id])[0].access_count == 1


def test_a_flush_of_repeated_accesses_is_one_write_with_exact_counts(
    make_memory: Callable[..., Memory],
) -> None:
    """Each commit makes every other connection drop the pages it cached, so a flush commits once on
    SQLite, however often an id was recalled (it used to commit once per round of repeated ids)."""
    memory = make_memory()
    ids = [f.id for f in memory.remember_many("a", ["one", "two", "three"])]
    store = memory.store
    real_write = store._write
    writes: list[int] = []

    def counted(work: Callable[..., object]) -> object:
        writes.append(1)
        return real_write(work)

    store._write = counted  # type: ignore[method-assign]  # counts, then writes for real
    log = AccessLog(store, delay_s=3600.0)
    for times, fact_ids in ((5, ids[:1]), (3, ids[:3]), (1, ids[1:2])):
        for _ in range(times):
            log.add(fact_ids, utcnow())
    log.flush()
    assert writes == [1]
    assert _counts(memory, ids) == [8, 4, 3]
    log.close()
