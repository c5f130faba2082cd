"""The bulk write's facts: built without validating each one, yet exactly what validation would build."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from graymatter import Memory
from graymatter.config import MemoryConfig
from graymatter.models import Fact


def test_remember_many_builds_valid_facts_at_one_moment_in_text_order(tmp_path: Path) -> None:
    texts = [f"note {i} about the rollout" for i in range(50)]
    with Memory(tmp_path / "s", config=MemoryConfig(), embedder=None, summariser=None) as memory:
        facts = memory.remember_many("ops", texts, confidence="verified", session="s-1")
        assert memory.remember_many("ops", []) == []
        stored = memory.store.get_facts([f.id for f in facts])
        single = memory.remember("ops", "one more note")
    assert [f.text for f in facts] == texts
    assert [f.id for f in facts] == sorted(f.id for f in facts) and len({f.id for f in facts}) == 50
    moments = [f.created_at for f in facts]  # a microsecond apart: recency orders them as written
    assert moments == [facts[0].created_at + timedelta(microseconds=i) for i in range(50)]
    assert [f.accessed_at for f in facts] == moments
    for fact in facts:
        assert Fact.model_validate(fact.model_dump()) == fact  # what validating it would have built
        assert fact.model_fields_set == single.model_fields_set  # as remember() sets them
        assert (fact.agent_id, fact.confidence, fact.kind, fact.provenance.session) == (
            "ops",
            "verified",
            "fact",
            "s-1",
        )
    facts[1].equivalents.append("x")  # no list shared between the facts of a batch
    assert facts[2].equivalents == [] and facts[0].equivalents == []
    assert [f.id for f in stored] == [f.id for f in facts] and [f.text for f in stored] == texts
