"""Backend contract of ``Store.compact``: free space back, every record and candidate answer unchanged."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from graymatter.ids import new_ulid
from graymatter.models import Checkpoint, Fact, Link
from graymatter.store.base import Store

T0 = datetime(2026, 1, 1, tzinfo=UTC)
WORDS = [
    "deploy", "staging", "database", "refresh", "payment", "latency", "cluster", "upgrade", "billing",
    "pipeline", "cache",
]  # fmt: skip
MODEL = "contract-3d"

StoreFactory = Callable[[], Store]


def _fact(agent: str, i: int) -> Fact:
    at = T0 + timedelta(minutes=i)
    words = " ".join(WORDS[(i * k) % len(WORDS)] for k in (1, 3, 7))
    return Fact(id=new_ulid(), agent_id=agent, text=f"note {i}: {words}", created_at=at, accessed_at=at)


def _vector(i: int) -> list[float]:
    return [1.0, (i % 7) / 7.0, (i % 3) / 3.0]


def _answers(store: Store, fact_ids: list[str]) -> dict[str, Any]:
    """What the store answers: records, candidate searches with their scores, listings and counts."""
    return {
        "facts": [f.model_dump() for f in store.get_facts(fact_ids)],
        "listed": [f.id for f in store.list_facts("a", include_superseded=True)],
        "keyword": {w: store.keyword_search(["a", "b"], [w], 20) for w in WORDS},
        "vector": store.vector_search(["a"], [1.0, 0.5, 0.2], MODEL, 10),
        "recent": store.recent(["a"], 10),
        "frequencies": store.document_frequencies(WORDS),
        "stats": store.stats("a").model_dump(),
        "checkpoint": store.latest_checkpoint("a"),
        "links": store.links(["a"]),
    }


def test_compact_keeps_every_answer_and_reports_sizes(store_factory: StoreFactory) -> None:
    store = store_factory()
    facts = [_fact("a" if i % 4 else "b", i) for i in range(400)]
    store.add_facts(facts, [_vector(i) for i in range(400)], MODEL)
    # leave space behind: tombstones, a revision, hard deletes (what pruning does)
    store.supersede([f.id for f in facts[:100:2]], facts[399].id)
    store.delete_facts([f.id for f in facts[1:200:3]])
    store.save_checkpoint(Checkpoint(id=new_ulid(), agent_id="a", created_at=T0, state={"step": 3}))
    store.add_link(Link(id=new_ulid(), agent_id="a", source="billing", target="payments", created_at=T0))
    ids = [f.id for f in facts]
    before = _answers(store, ids)

    sizes = store.compact()

    assert before == _answers(store, ids)
    assert all(type(size) is int and size > 0 for size in sizes)
    store.compact()  # again, on a compact store: nothing to give back, nothing changed
    assert before == _answers(store, ids)
    fresh = _fact("a", 1000)
    store.add_facts([fresh], [_vector(3)], MODEL)  # still writable, and the new fact is found
    assert fresh.id in [hit.fact_id for hit in store.keyword_search(["a"], ["note"], 1000)]
