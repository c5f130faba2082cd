"""Imports: the per-record checks keep validation's contract, an empty store keeps the first of repeated ids,
and the report is what validating it would build."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from graymatter import Memory
from graymatter import validation as check
from graymatter.config import MemoryConfig
from graymatter.errors import InvalidInput
from graymatter.models import ExportBundle, Fact, ImportReport

_T = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
_LIMIT_BYTES, _LIMIT_CHARS = 12, 6

_values = st.one_of(
    st.text(max_size=16),
    st.text(st.characters(min_codepoint=0xD7F0, max_codepoint=0xE010), max_size=4),  # lone surrogates
    st.sampled_from(["", "   ", "ok", "x" * 12, "x" * 13, "é" * 6, "é" * 7, "a\x00b", " pad "]),
    st.none(),
    st.integers(),
)


def _fact(agent: Any, text: Any, fact_id: str = "01ARZ3NDEKTSV4RRFFQ69G5FAV") -> Fact:
    return Fact.model_construct(id=fact_id, agent_id=agent, text=text, created_at=_T, accessed_at=_T)


def _outcome(call: Any) -> str | None:
    try:
        call()
    except InvalidInput as exc:
        return str(exc)
    return None


def _spelled_out(records: list[tuple[Any, Any]]) -> None:
    for agent, text in records:
        check.agent_id(agent, _LIMIT_CHARS)
        check.text(text, _LIMIT_BYTES)


def test_the_import_checks_raise_what_each_record_checked_in_order_raises(tmp_path: Path) -> None:
    config = MemoryConfig(max_text_bytes=_LIMIT_BYTES, max_agent_id_chars=_LIMIT_CHARS)
    with Memory(tmp_path / "s", config=config, embedder=None, summariser=None) as memory:

        @settings(max_examples=300, deadline=None)
        @given(st.lists(st.tuples(_values, _values), max_size=6))
        def same(records: list[tuple[Any, Any]]) -> None:
            bundle = ExportBundle.model_construct(
                exported_at=_T, facts=[_fact(a, t) for a, t in records], checkpoints=[], links=[]
            )
            assert _outcome(lambda: memory._check_facts(bundle)) == _outcome(lambda: _spelled_out(records))

        same()


def test_an_empty_store_keeps_the_first_of_repeated_ids_and_a_second_import_skips_all(tmp_path: Path) -> None:
    first, other = "01ARZ3NDEKTSV4RRFFQ69G5FAV", "01ARZ3NDEKTSV4RRFFQ69G5FAW"
    facts = [
        Fact(id=first, agent_id="a", text="the first", created_at=_T, accessed_at=_T),
        Fact(id=other, agent_id="a", text="another", created_at=_T, accessed_at=_T),
        Fact(id=first, agent_id="a", text="the same id again", created_at=_T, accessed_at=_T),
    ]
    bundle = ExportBundle(exported_at=_T, facts=facts, checkpoints=[], links=[]).model_dump_json()
    with Memory(tmp_path / "s", config=MemoryConfig(), embedder=None, summariser=None) as memory:
        report = memory.import_bundle(bundle)
        assert (report.facts_added, report.facts_skipped) == (2, 1)
        assert [f.text for f in memory.store.get_facts([first, other])] == ["the first", "another"]
        again = memory.import_bundle(bundle)
        assert (again.facts_added, again.facts_skipped) == (0, 3)
    assert report == ImportReport.model_validate(report.model_dump())  # what validating it builds
    assert report.model_fields_set == set(ImportReport.model_fields)


def test_a_store_holding_only_a_tombstone_still_skips_its_id(tmp_path: Path) -> None:
    with Memory(tmp_path / "s", config=MemoryConfig(), embedder=None, summariser=None) as memory:
        gone = memory.remember("a", "soon forgotten")
        memory.forget("a", "soon forgotten")
        bundle = ExportBundle(exported_at=_T, facts=[gone], checkpoints=[], links=[])
        report = memory.import_bundle(bundle.model_dump_json())
        assert (report.facts_added, report.facts_skipped) == (0, 1)
        assert [f.live for f in memory.store.get_facts([gone.id])] == [False]  # still the tombstone
