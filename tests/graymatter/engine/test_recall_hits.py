"""Recall hits are built without ``model_construct``'s per-field work (engine/memory_recall.py): they must be
indistinguishable from the models it builds, and serialise the same way."""

from __future__ import annotations

from graymatter import Memory
from graymatter.engine import memory_recall
from graymatter.models import RecallHit


def test_a_hit_is_the_model_model_construct_would_build(memory: Memory) -> None:
    memory.remember_many("a", ["the payment deploy runs on Tuesdays", "deploys of payments need a review"])
    hits = memory.recall("a", "payment deploy")
    assert hits and memory_recall._hit.__name__ == "build_RecallHit_fast"  # the fast path is in use here
    for hit in hits:
        fields = {name: getattr(hit, name) for name in RecallHit.model_fields}
        built = RecallHit.model_construct(**fields)
        assert hit == built and hit.model_fields_set == built.model_fields_set
        assert hit.model_dump() == built.model_dump() and hit.model_dump_json() == built.model_dump_json()
        assert RecallHit.model_validate(hit.model_dump()) == hit


def test_store_rows_are_built_on_the_fast_path_as_model_construct_would(memory: Memory) -> None:
    from graymatter.models import Fact
    from graymatter.store.sqlite import rows

    assert rows._construct_fact.__name__ == "build_Fact_fast"  # every field is in the checked sample
    (stored,) = memory.remember_many("a", ["the payment deploy runs on Tuesdays"])
    (read,) = memory.store.get_facts([stored.id])
    built = Fact.model_construct(**{name: getattr(read, name) for name in Fact.model_fields})
    assert read == built and read.model_fields_set == built.model_fields_set
    assert read.model_dump_json() == built.model_dump_json()
