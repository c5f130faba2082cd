"""Incremental consolidation: a cycle's work does not grow with the agent's size.

Work is counted, not timed: the facts the cycle reads (what ``Store.decay_due`` hands back) and the SQLite
virtual-machine steps of the whole cycle (a progress handler on the store's own connection counts them),
at two store sizes ten times apart with the same number of facts due.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from graymatter import Memory
from graymatter.config import MemoryConfig
from graymatter.engine.lifecycle import DECAY_BATCH, consolidate
from graymatter.ids import new_ulid
from graymatter.models import ExportBundle, Fact, utcnow

DUE = 40
STEP = 50  # count one unit per this many SQLite VM instructions


def _store(path: Path, fresh: int) -> tuple[Memory, list[Fact]]:
    """``fresh`` facts just used plus ``DUE`` facts idle for two days, in one agent."""
    now = utcnow()
    memory = Memory(path, config=MemoryConfig(async_consolidate=False), embedder=None, summariser=None)
    idle = [_fact(f"idle fact {i}", now - timedelta(days=2)) for i in range(DUE)]
    recent = [_fact(f"fresh fact {i}", now - timedelta(minutes=5)) for i in range(fresh)]
    memory.import_bundle(ExportBundle(exported_at=now, facts=[*idle, *recent], checkpoints=[], links=[]))
    return memory, idle


def _fact(text: str, at: Any) -> Fact:
    return Fact(id=new_ulid(), agent_id="a", text=text, created_at=at, accessed_at=at)


class _Counting:
    """The real store, counting the facts its decay listing returns (every other call passes through)."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.visited = 0

    def decay_due(self, *args: Any) -> list[Fact]:
        facts: list[Fact] = self._store.decay_due(*args)
        self.visited += len(facts)
        return facts

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def _cycle(memory: Memory) -> tuple[int, int, int]:
    """(facts visited, VM steps, facts decayed) of one cycle run on this thread's connection."""
    steps = [0]

    def tick() -> int:
        steps[0] += 1
        return 0

    memory.store._read(lambda c: c.set_progress_handler(tick, STEP))  # type: ignore[attr-defined]
    counting = _Counting(memory.store)
    try:
        report = consolidate(counting, "a", memory.config)  # type: ignore[arg-type]
    finally:
        memory.store._read(lambda c: c.set_progress_handler(None, STEP))  # type: ignore[attr-defined]
    return counting.visited, steps[0], report.decayed


def test_cycle_work_is_independent_of_store_size(tmp_path: Path) -> None:
    small, _ = _store(tmp_path / "small", 300)
    large, large_idle = _store(tmp_path / "large", 3000)
    try:
        small_visited, small_steps, small_decayed = _cycle(small)
        large_visited, large_steps, large_decayed = _cycle(large)
        assert (small_visited, small_decayed) == (DUE, DUE)
        assert (large_visited, large_decayed) == (DUE, DUE)
        # ten times the facts, the same work (B-tree depth may add a little): at most 1.5x the VM steps
        assert large_steps <= 1.5 * small_steps, (small_steps, large_steps)
        # a second cycle right after finds nothing due at either size
        assert _cycle(small)[0] == 0 and _cycle(large)[0] == 0
        assert large.get(large_idle[0].id).weight == pytest.approx(2 ** (-48 / 720), rel=1e-9)
    finally:
        small.close()
        large.close()


def test_a_fresh_store_visits_nothing(tmp_path: Path) -> None:
    memory = Memory(tmp_path / "gm", config=MemoryConfig(async_consolidate=False), embedder=None)
    try:
        memory.remember_many("a", [f"note {i}" for i in range(500)])
        assert _cycle(memory)[0] == 0
    finally:
        memory.close()


def test_a_cycle_visits_at_most_one_batch_and_the_rest_stay_due(tmp_path: Path) -> None:
    now = utcnow()
    memory = Memory(tmp_path / "gm", config=MemoryConfig(async_consolidate=False), embedder=None)
    try:
        old = [_fact(f"old {i}", now - timedelta(days=3)) for i in range(DECAY_BATCH + 7)]
        memory.import_bundle(ExportBundle(exported_at=now, facts=old, checkpoints=[], links=[]))
        assert _cycle(memory)[0] == DECAY_BATCH
        assert _cycle(memory)[0] == 7
        assert _cycle(memory)[0] == 0
    finally:
        memory.close()


def test_a_visited_fact_comes_due_again_after_a_tenth_of_its_weight(tmp_path: Path) -> None:
    memory, idle = _store(tmp_path / "gm", 0)
    try:
        first = memory.consolidate("a", now=utcnow())
        assert first.decayed == DUE
        # 0.9 of the weight at a 720 h half-life is 110 h later; 100 h later nothing is due yet
        assert memory.consolidate("a", now=utcnow() + timedelta(hours=100)).decayed == 0
        later = memory.consolidate("a", now=utcnow() + timedelta(hours=115))
        assert later.decayed == DUE
        assert memory.get(idle[0].id).weight == pytest.approx(2 ** (-(48 + 115) / 720), rel=1e-3)
        pruned = memory.consolidate("a", now=utcnow() + timedelta(days=210))
        assert sorted(pruned.pruned) == sorted(f.id for f in idle)
    finally:
        memory.close()
