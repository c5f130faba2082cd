"""The bulk write's facts: built without validating each one, yet exactly what validation would build."""

from __future__ import annotations

import gc
import subprocess
import sys
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graymatter import Memory
from graymatter import validation as check
from graymatter.config import MemoryConfig
from graymatter.engine import memory_core
from graymatter.errors import InvalidInput
from graymatter.models import Fact
from support.env import hermetic_env

_T = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


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
        assert list(fact.__dict__) == list(single.__dict__)  # in the same field order
        assert (fact.agent_id, fact.confidence, fact.kind, fact.provenance.session) == (
            "ops",
            "verified",
            "fact",
            "s-1",
        )
    facts[1].equivalents.append("x")  # no list shared between the facts of a batch
    assert facts[2].equivalents == [] and facts[0].equivalents == []
    assert [f.id for f in stored] == [f.id for f in facts] and [f.text for f in stored] == texts


def test_the_fast_copy_is_the_public_copy() -> None:
    first = memory_core.Fact(
        id="01ARZ3NDEKTSV4RRFFQ69G5FAV", agent_id="a", text="t", created_at=_T, accessed_at=_T, equivalents=[]
    )
    later = _T + timedelta(microseconds=3)
    ids, texts = ["01ARZ3NDEKTSV4RRFFQ69G5FAW", "01ARZ3NDEKTSV4RRFFQ69G5FAX"], ["u", "v"]
    moments = [later, later + timedelta(microseconds=1)]
    fast = memory_core._copy_facts_fast(first, ids, texts, moments)
    public = memory_core._copy_facts(first, ids, texts, moments)
    assert fast == public and [f.model_fields_set for f in fast] == [f.model_fields_set for f in public]
    assert [list(f.__dict__) for f in fast] == [list(f.__dict__) for f in public]  # same field order
    assert fast[0].equivalents is not first.equivalents and fast[0].equivalents is not fast[1].equivalents
    assert fast[0].model_fields_set is not fast[1].model_fields_set and first.text == "t"
    assert memory_core._siblings() is memory_core._copy_facts_fast  # this pydantic takes the fast path


def test_gc_paused_nests_across_threads_and_restores_what_it_found() -> None:
    assert gc.isenabled()
    inner_done, outer_may_end = threading.Event(), threading.Event()

    def other_thread() -> None:
        with memory_core.gc_paused():
            inner_done.set()
            outer_may_end.wait(10)

    with memory_core.gc_paused():
        assert not gc.isenabled()
        worker = threading.Thread(target=other_thread)
        worker.start()
        assert inner_done.wait(10)
    assert not gc.isenabled()  # the other thread's pause is still running
    outer_may_end.set()
    worker.join(10)
    assert gc.isenabled()
    gc.disable()  # a caller that disabled the collector itself keeps it disabled
    try:
        with memory_core.gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_remember_many_and_import_leave_the_collector_as_they_found_it(tmp_path: Path) -> None:
    with Memory(tmp_path / "s", config=MemoryConfig(), embedder=None, summariser=None) as memory:
        memory.remember_many("a", ["one", "two"])
        assert gc.isenabled()
        bundle = memory.export().model_dump_json()
    with Memory(tmp_path / "t", config=MemoryConfig(), embedder=None, summariser=None) as memory:
        assert memory.import_bundle(bundle).facts_added == 2
        assert gc.isenabled()
        with pytest.raises(InvalidInput):
            memory.import_bundle("{not json")
        assert gc.isenabled()


_NO_SCHEMA = """
import sys
from graymatter import Memory
from graymatter.config import MemoryConfig
from graymatter.models import ConsolidationReport, Fact, Provenance
with Memory(sys.argv[1], config=MemoryConfig(), embedder=None, summariser=None) as memory:
    facts = memory.remember_many("ops", [f"note {i}" for i in range(50)])  # past the threshold: a cycle
    memory.wait_for_background()
    assert memory.store.get_facts([facts[0].id]) == [facts[0]] and memory.last_consolidation_error is None
print(sorted(m.__name__ for m in (Fact, Provenance, ConsolidationReport) if m.__pydantic_complete__))
"""


def test_a_bulk_write_and_its_background_cycle_build_no_model_schema(tmp_path: Path) -> None:
    """Every field of those models is made or checked by the engine, so nothing is validated: a fresh
    process's first bulk write does not pay for building the schemas (about 3 ms, pydantic's first)."""
    done = subprocess.run(
        [sys.executable, "-c", _NO_SCHEMA, str(tmp_path / "s")],
        env=hermetic_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


_TEXTS = st.one_of(
    st.text(max_size=12),
    st.text(st.characters(min_codepoint=0xD7F0, max_codepoint=0xE010), max_size=4),  # lone surrogates
    st.sampled_from(["", "  ", "x" * 10, "x" * 11, "é" * 5, "é" * 6, " pad "]),
    st.none(),
    st.integers(),
)


def test_a_bulk_write_checks_its_texts_as_one_write_checks_each(tmp_path: Path) -> None:
    """``remember_many``'s text checks return or raise what ``validation.text`` does, in order."""
    with Memory(
        tmp_path / "s", config=MemoryConfig(max_text_bytes=10), embedder=None, summariser=None
    ) as memory:

        def outcome(call: Callable[[], object]) -> object:
            try:
                return call()
            except InvalidInput as exc:
                return str(exc)

        @settings(max_examples=300, deadline=None)
        @given(st.lists(_TEXTS, max_size=5))
        def same(texts: list[Any]) -> None:
            spelled_out = outcome(lambda: [check.text(t, 10) for t in texts])
            assert outcome(lambda: memory._texts(texts)) == spelled_out

        same()
