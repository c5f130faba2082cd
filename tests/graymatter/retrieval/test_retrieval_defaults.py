"""The retrieval defaults tuned on the benchmarks: recency resolution, phrase bonus, conversation
context, posting budget and lazy best-first selection (packages/graymatter/src/graymatter/retrieval/)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graymatter import Memory
from graymatter.config import MemoryConfig
from graymatter.models import Fact, Provenance, SignalWeights
from graymatter.retrieval.fusion import Candidate, fuse, order, select
from graymatter.retrieval.keyword import phrase_terms
from graymatter.retrieval.pipeline import RecallRequest, run_recall
from graymatter.retrieval.query import select_terms
from graymatter.retrieval.recency import recency_ranks

T0 = datetime(2026, 1, 1, tzinfo=UTC)


# -- recency -----------------------------------------------------------------------------------
def test_recency_exact_ranks_newest_first() -> None:
    created = {"a": T0, "b": T0 + timedelta(seconds=1), "c": T0 + timedelta(seconds=2)}
    assert recency_ranks(created, resolution_s=3600, exact=True) == {"c": 1, "b": 2, "a": 3}


def test_recency_resolution_ties_facts_written_close_together() -> None:
    created = {
        "new1": T0 + timedelta(hours=10),
        "new2": T0 + timedelta(hours=10, minutes=-30),
        "old1": T0 + timedelta(hours=5),
        "old2": T0 + timedelta(hours=4, minutes=30),
        "oldest": T0,
    }
    ranks = recency_ranks(created, resolution_s=3600, exact=False)
    assert ranks == {"new1": 1, "new2": 1, "old1": 3, "old2": 3, "oldest": 5}


@given(
    st.dictionaries(
        st.text(alphabet="abcdef", min_size=1, max_size=4),
        st.integers(min_value=0, max_value=10**6),
        min_size=1,
        max_size=30,
    ),
    st.floats(min_value=0, max_value=10**5, allow_nan=False),
)
def test_recency_ranks_never_favour_an_older_fact(offsets: dict[str, int], resolution: float) -> None:
    created = {fid: T0 + timedelta(seconds=s) for fid, s in offsets.items()}
    ranks = recency_ranks(created, resolution_s=resolution, exact=False)
    assert min(ranks.values()) == 1
    for a in created:
        for b in created:
            if created[a] > created[b]:
                assert ranks[a] <= ranks[b]
    if resolution == 0:
        assert ranks == recency_ranks(created, resolution_s=resolution, exact=True)


# -- query terms -------------------------------------------------------------------------------
def test_phrase_terms_pair_adjacent_selected_words_only() -> None:
    query = "When did Caroline go to the LGBTQ support group?"
    assert phrase_terms(query, ["caroline", "lgbtq", "support", "group"]) == [
        "lgbtq support",
        "support group",
    ]
    assert phrase_terms(query, ["lgbtq", "group"]) == []


@given(
    st.lists(st.text(alphabet="abcxyz", min_size=1, max_size=5), max_size=12, unique=True),
    st.data(),
    st.integers(min_value=1, max_value=10),
    st.one_of(st.none(), st.integers(min_value=1, max_value=5000)),
)
def test_select_terms_respects_the_cap_and_the_posting_budget(terms, data, max_terms, budget) -> None:
    df = {t: data.draw(st.integers(min_value=0, max_value=3000)) for t in terms}
    chosen = select_terms(terms, df, max_terms, budget)
    present = [t for t in terms if df[t] > 0]
    assert set(chosen) <= set(present)
    assert len(chosen) <= max_terms
    if present:
        assert chosen, "the rarest term is always kept"
        assert df[chosen[0]] == min(df[t] for t in present)
    assert [df[t] for t in chosen] == sorted(df[t] for t in chosen)
    if budget is not None and len(chosen) > 1:
        assert sum(df[t] for t in chosen) <= budget


# -- lazy selection equals eager fusion --------------------------------------------------------
fact_rows = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=5),  # keyword rank (0 = absent)
        st.integers(min_value=0, max_value=5),  # vector rank
        st.integers(min_value=0, max_value=5),  # recency rank
        st.integers(min_value=0, max_value=3),  # created offset (ties on purpose)
        st.sampled_from(["verified", "inferred", "unverified"]),
        st.sampled_from(["same text", "other text", "third", "fourth", "fifth"]),
    ),
    max_size=25,
)


@settings(max_examples=200)
@given(
    fact_rows,
    st.integers(min_value=1, max_value=6),
    st.sampled_from([0.0, 0.3, 0.9]),
    st.sampled_from([0.0, 0.5]),
)
def test_select_matches_fuse(rows, top_k: int, min_relevance: float, confidence_weight: float) -> None:
    weights = SignalWeights()
    facts = [
        Fact(
            id=f"F{i:03d}",
            agent_id="a",
            text=text,
            created_at=T0 + timedelta(seconds=offset),
            accessed_at=T0,
            confidence=conf,
        )
        for i, (_, _, _, offset, conf, text) in enumerate(rows)
    ]
    candidates = [Candidate(f, kr, vr, rr) for f, (kr, vr, rr, *_) in zip(facts, rows, strict=True)]
    eager = fuse(
        candidates,
        weights=weights,
        k=60,
        top_k=top_k,
        confidence_weight=confidence_weight,
        min_relevance=min_relevance,
    )
    by_id = {f.id: f for f in facts}
    ordered = order(
        {c.fact.id: (c.keyword_rank, c.vector_rank, c.recency_rank) for c in candidates},
        {f.id: (f.created_at, f.confidence) for f in facts},
        weights=weights,
        k=60,
        confidence_weight=confidence_weight,
    )
    loads: list[int] = []

    def load(ids):
        loads.append(len(ids))
        return {i: by_id[i] for i in ids}

    lazy = select(ordered, load, top_k=top_k, min_relevance=min_relevance, batch=2)
    assert [(f.candidate.fact.id, f.final_score) for f in lazy] == [
        (f.candidate.fact.id, f.final_score) for f in eager
    ]


# -- end to end on a real store ----------------------------------------------------------------
@pytest.fixture
def conversation(tmp_path: Path):
    memory = Memory(tmp_path / "gm", config=MemoryConfig(async_consolidate=False), embedder=None)
    turns = [
        "Ana: I started pottery classes last month, it is so relaxing.",
        "Ben: That sounds great. What is your favourite dish to cook at home?",
        "Ana: Coconut milk ice cream, definitely, smooth and tropical.",
        "Ben: I adopted a rescue dog named Pixel on Saturday.",
        "Ana: Pixel is adorable! Dogs are the best company.",
        "Ben: We went camping by the lake and watched the meteor shower.",
        "Ana: A meteor shower at the lake sounds magical.",
        "Ben: My slow cooker chili won the office contest.",
    ]
    filler = [f"Note {i}: the printer on floor {i} needs toner." for i in range(6)]
    memory.remember_many("conv", filler)
    memory.remember_many("conv", turns, session="ana-and-ben")
    yield memory, turns
    memory.close()


def _ids_to_text(memory: Memory, request: RecallRequest) -> list[str]:
    return [item.candidate.fact.text for item in run_recall(memory.store, request).results]


def test_conversation_context_finds_the_answer_next_to_the_question(conversation) -> None:
    memory, turns = conversation
    request = RecallRequest(agent_ids=("conv",), query="what is the favourite dish?", top_k=4)
    with_context = _ids_to_text(memory, request)
    without = _ids_to_text(memory, replace(request, context_weight=0.0))
    # The answer shares no word with the question; only its position next to the question finds it.
    # The two facts on either side receive equal loans and keep their written order.
    assert with_context[0] == turns[1]
    assert turns[2] in with_context
    assert without[0] == turns[1]
    assert turns[2] not in without
    assert [h.text for h in memory.recall("conv", "what is the favourite dish?", top_k=4)] == with_context


def test_phrase_match_outranks_scattered_words(conversation) -> None:
    memory, turns = conversation
    hits = memory.recall("conv", "slow cooker", top_k=1)
    assert [h.text for h in hits] == [turns[7]]


def test_recency_does_not_reorder_facts_written_together(conversation) -> None:
    memory, _ = conversation
    request = RecallRequest(agent_ids=("conv",), query="meteor shower lake", top_k=2, context_weight=0.0)
    default = _ids_to_text(memory, request)
    keyword_only = _ids_to_text(memory, replace(request, weights=SignalWeights(recency=0.0)))
    assert default == keyword_only
    strict = _ids_to_text(memory, replace(request, recency_resolution_s=0.0))
    assert set(strict) == set(default)


def test_empty_query_is_still_a_sliding_window(conversation) -> None:
    memory, turns = conversation
    hits = memory.recall("conv", "", top_k=3, weights=SignalWeights(keyword=0, vector=0, recency=1))
    assert [h.text for h in hits] == list(reversed(turns[-3:]))


def test_explanation_sources_name_the_lending_fact(conversation) -> None:
    memory, turns = conversation
    request = RecallRequest(agent_ids=("conv",), query="what is the favourite dish?", top_k=4)
    outcome = run_recall(memory.store, request)
    by_text = {item.candidate.fact.text: item.candidate.fact.id for item in outcome.results}
    question_id = by_text[turns[1]]
    assert outcome.keyword_sources[question_id] == ("match", None)
    assert outcome.keyword_sources[by_text[turns[2]]] == ("context", question_id)
    for item in outcome.results:
        assert (item.candidate.fact.id in outcome.keyword_sources) is (item.candidate.keyword_rank > 0)


def _imported(tmp_path: Path, gap: timedelta) -> Memory:
    from graymatter.models import ExportBundle

    memory = Memory(tmp_path / "gm", config=MemoryConfig(async_consolidate=False), embedder=None)
    now = datetime.now(UTC)
    texts = [
        ("Ana: I started pottery classes last month.", now - timedelta(days=3)),
        ("Ben: What is your favourite dish to cook?", now - timedelta(days=2)),
        ("Ana: Coconut milk ice cream, definitely.", now - timedelta(days=2) + gap),
    ]
    facts = [
        Fact(
            id=f"01J00000000000000000000{i:03d}",
            agent_id="a",
            text=t,
            created_at=at,
            accessed_at=at,
            provenance=Provenance(session="ana-and-ben"),
        )
        for i, (t, at) in enumerate(texts)
    ]
    memory.import_bundle(ExportBundle(exported_at=now, facts=facts, checkpoints=[], links=[]))
    return memory


@pytest.mark.parametrize(("gap", "lends"), [(timedelta(minutes=10), True), (timedelta(hours=5), False)])
def test_context_loans_stay_within_one_session(tmp_path: Path, gap: timedelta, lends: bool) -> None:
    memory = _imported(tmp_path, gap)
    try:
        outcome = run_recall(memory.store, RecallRequest(agent_ids=("a",), query="favourite dish", top_k=3))
        sources = {memory.get(fid).text: src for fid, src in outcome.keyword_sources.items()}
        answer = "Ana: Coconut milk ice cream, definitely."
        assert (answer in sources) is lends
        if lends:
            assert sources[answer][0] == "context"
    finally:
        memory.close()
