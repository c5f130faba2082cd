"""The incremental-decay part of the Store protocol, identical on every backend (store/decay.py)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from graymatter.ids import new_ulid
from graymatter.models import Fact
from graymatter.store.base import Store

T0 = datetime(2026, 1, 1, tzinfo=UTC)
StoreFactory = Callable[[], Store]


def _fact(agent: str, text: str, hours_ago: float, **kw: object) -> Fact:
    at = T0 - timedelta(hours=hours_ago)
    return Fact(id=new_ulid(), agent_id=agent, text=text, created_at=at, accessed_at=at, **kw)  # type: ignore[arg-type]


def test_due_facts_are_idle_unpinned_facts_of_the_agent_oldest_first(store_factory: StoreFactory) -> None:
    store = store_factory()
    old, older, fresh = _fact("a", "old", 5), _fact("a", "older", 50), _fact("a", "fresh", 0.5)
    pinned = _fact("a", "pinned", 80, pinned=True, pinned_at=T0)
    alias = _fact("a", "alias", 80, kind="alias", equivalents=["x"])
    store.add_facts([old, older, fresh, pinned, alias, _fact("b", "other agent", 90)])
    store.supersede([old.id], "agent")  # tombstones fade and are pruned like the rest
    due = store.decay_due("a", T0, T0 - timedelta(hours=1), 10)
    assert [f.id for f in due] == [older.id, old.id]
    assert [f.id for f in store.decay_due("a", T0, T0 - timedelta(hours=1), 1)] == [older.id]


def test_recorded_decay_lowers_weights_and_reschedules(store_factory: StoreFactory) -> None:
    store = store_factory()
    first, second = _fact("a", "first", 10), _fact("a", "second", 20)
    store.add_facts([first, second])
    later = T0 + timedelta(hours=100)
    store.record_decay({first.id: (0.5, later), second.id: (1.0, T0 - timedelta(minutes=1))})
    got = {f.id: f.weight for f in store.get_facts([first.id, second.id])}
    assert got == {first.id: 0.5, second.id: 1.0}
    store.record_decay({first.id: (0.9, later)})  # never raises a weight
    assert store.get_facts([first.id])[0].weight == 0.5
    fresh_before = T0 - timedelta(hours=1)
    assert [f.id for f in store.decay_due("a", T0, fresh_before, 10)] == [second.id]
    assert [f.id for f in store.decay_due("a", later, fresh_before, 10)] == [second.id, first.id]
