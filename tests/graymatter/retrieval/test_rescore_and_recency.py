"""Keyword re-scoring (coverage, temporal intent), recency that never outvotes evidence, and vector trust
(packages/graymatter/src/graymatter/retrieval/rescore.py; fusion.evidence_order and fusion.vector_trust)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graymatter import Memory
from graymatter.config import MemoryConfig
from graymatter.engine.embeddings import HashingEmbedder
from graymatter.ids import new_ulid
from graymatter.models import ExportBundle, Fact, Provenance, SignalWeights, utcnow
from graymatter.retrieval.fusion import (
    NEAR_TIE,
    VECTOR_SEPARATION,
    evidence_order,
    rrf_score,
    trusted_weights,
    vector_trust,
)
from graymatter.retrieval.keyword import KeywordEvidence
from graymatter.retrieval.relevance import stems
from graymatter.retrieval.rescore import asks_when, rescore, says_when

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def memory(tmp_path: Path):
    mem = Memory(tmp_path / "gm", config=MemoryConfig(async_consolidate=False), embedder=None)
    yield mem
    mem.close()


def _dated(memory: Memory, agent: str, facts: list[tuple[int, str]]) -> list[str]:
    """Import ``(days ago, text)`` facts with their real ages; returns their ids in order."""
    now = utcnow()
    rows = []
    for days, text in facts:
        at = now - timedelta(days=days)
        fid = new_ulid(int(at.timestamp() * 1000))
        rows.append(
            Fact(
                id=fid,
                agent_id=agent,
                text=text,
                created_at=at,
                accessed_at=at,
                provenance=Provenance(interface="import", client="test"),
            )
        )
    memory.import_bundle(ExportBundle(exported_at=now, facts=rows, checkpoints=[], links=[]))
    return [row.id for row in rows]


# -- query intent and time expressions ---------------------------------------------------------
@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("When did Melanie run a charity race?", True),
        ("how long has she had her dog", True),
        ("What year did they move?", True),
        ("  when is the next deploy", True),
        ("What did Melanie paint?", False),
        ("Where does the whenua trust meet?", False),
        ("which database does production use?", False),
    ],
)
def test_asks_when(query: str, expected: bool) -> None:
    assert asks_when(query) is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Melanie ran a charity race last Saturday", True),
        ("We moved to Lisbon in 2019", True),
        ("She started two weeks ago", True),
        ("Deploys happen every Wednesday after 15:00 UTC", True),
        ("She may come to the pottery class", False),
        ("Even the printer needs toner", False),
        ("Room 12 has 600 seats", False),
    ],
)
def test_says_when(text: str, expected: bool) -> None:
    assert says_when(stems([text])[0]) is expected


# -- rescore on a real store -------------------------------------------------------------------
def test_coverage_lifts_the_fact_that_matches_more_of_the_question(memory: Memory) -> None:
    one = memory.remember("a", "Caroline painted a sunset").id  # paint only
    both = memory.remember("a", "Melanie painted a lake sunrise").id  # melanie and paint
    lender = memory.remember("a", "unrelated lender").id
    evidence = KeywordEvidence(
        own={one: 1.0, both: 0.8, lender: 0.5},
        sources={one: "match", both: "match", lender: "match"},
        loans={"borrower": [(0.4, both), (0.3, one)]},
    )
    out = rescore(memory.store, "what did melanie paint?", [], evidence, 1.0, 0.0)
    assert out.own == pytest.approx({one: 1.5, both: 1.6, lender: 0.5})  # 1 + share of words covered
    assert out.loans["borrower"] == [(pytest.approx(0.8), both), (pytest.approx(0.45), one)]
    assert evidence.own[one] == 1.0  # the input is not changed
    assert rescore(memory.store, "what did melanie paint?", [], evidence, 0.0, 0.0) is evidence


def test_a_when_question_prefers_the_fact_that_says_when(memory: Memory) -> None:
    dated = memory.remember("a", "Melanie ran a charity race last Saturday").id
    undated = memory.remember("a", "Melanie ran a charity race for mental health").id
    evidence = KeywordEvidence(
        own={dated: 1.0, undated: 1.0}, sources=dict.fromkeys((dated, undated), "match")
    )
    when = rescore(memory.store, "When did Melanie run a charity race?", [], evidence, 0.0, 0.5)
    assert when.own == {dated: 1.5, undated: 1.0}
    what = rescore(memory.store, "Did Melanie run a charity race?", [], evidence, 0.0, 0.5)
    assert what is evidence  # no temporal intent, no coverage weight: nothing to do


def test_aliases_count_for_coverage(memory: Memory) -> None:
    fid = memory.remember("a", "The production database is PostgreSQL").id
    evidence = KeywordEvidence(own={fid: 1.0}, sources={fid: "match"})
    plain = rescore(memory.store, "db region", [], evidence, 1.0, 0.0)
    aliased = rescore(memory.store, "db region", [["db", "database"]], evidence, 1.0, 0.0)
    assert (plain.own[fid], aliased.own[fid]) == (1.0, 1.5)


# -- recency never outvotes evidence -----------------------------------------------------------
def test_an_older_stronger_match_stays_ahead_of_a_newer_weaker_one(memory: Memory) -> None:
    # The demo's first question: the production fact covers two of the three words, the staging fact one.
    production, staging = _dated(
        memory,
        "bot",
        [
            (41, "The production database is PostgreSQL 16 running in eu-west-1"),
            (12, "The staging cluster is called kestrel and mirrors production weekly"),
        ],
    )
    _dated(memory, "bot", [(d, f"Filler note number {d}") for d in range(1, 10)])
    hits = memory.recall_explain("bot", "which database does production use?")
    assert [h.id for h in hits] == [production, staging]
    assert all(h.ranks.recency_rank == 0 for h in hits)  # recency casts no vote beside evidence


def test_recency_orders_equally_strong_matches_newest_first(memory: Memory) -> None:
    ids = _dated(memory, "bot", [(30, "The deploy window is Tuesday"), (2, "The deploy window is Friday")])
    assert [h.id for h in memory.recall("bot", "deploy window")] == [ids[1], ids[0]]
    off = memory.recall("bot", "deploy window", weights=SignalWeights(recency=0.0))
    assert [h.id for h in off] == [ids[0], ids[1]]  # recency off: BM25 ties keep the total order (oldest)


def test_without_a_query_recency_still_votes(memory: Memory) -> None:
    ids = _dated(memory, "bot", [(3, "first note"), (2, "second note"), (1, "third note")])
    hits = memory.recall_explain("bot", "", top_k=3)
    assert [h.id for h in hits] == ids[::-1]
    assert [h.ranks.recency_rank for h in hits] == [1, 2, 3]


scores = st.dictionaries(
    st.sampled_from("abcdefghij"),
    st.tuples(st.floats(min_value=0.01, max_value=10.0), st.integers(min_value=0, max_value=20_000)),
    min_size=1,
)


@settings(max_examples=300)
@given(scores, st.sampled_from([0.0, 600.0, 3600.0]))
def test_evidence_order_never_puts_a_much_weaker_match_first(rows, resolution: float) -> None:
    score = {fid: s for fid, (s, _) in rows.items()}
    created = {fid: T0 + timedelta(seconds=offset) for fid, (_, offset) in rows.items()}
    strict = evidence_order(score, created, newest_first=False)
    assert strict == sorted(score, key=lambda f: (-score[f], created[f], f))
    ordered = evidence_order(score, created, newest_first=True, resolution_s=resolution)
    assert sorted(ordered) == sorted(score)
    for i, ahead in enumerate(ordered):
        for behind in ordered[i + 1 :]:
            if score[behind] > score[ahead]:
                # Only an equally strong (within NEAR_TIE), strictly newer match may go first.
                assert score[ahead] >= (1 - NEAR_TIE) * score[behind]
                assert created[ahead] > created[behind]


# -- vector trust ------------------------------------------------------------------------------
def _profile(top: float, rest: float, n: int = 30) -> dict[str, float]:
    return {"best": top, **{f"f{i}": rest for i in range(n)}}


def test_vector_trust_follows_separation_and_keyword_coverage() -> None:
    assert vector_trust(_profile(0.9, 0.5), 0.0) == pytest.approx(1.0)  # stands out by 0.4 >= 0.25
    assert vector_trust(_profile(0.6, 0.5), 0.0) == pytest.approx(0.1 / VECTOR_SEPARATION)
    assert vector_trust(_profile(0.5, 0.5), 0.0) == 0.0  # a flat profile says nothing
    assert vector_trust(_profile(0.9, 0.5), 2 / 3) == pytest.approx(1 / 3)
    assert vector_trust(_profile(0.9, 0.5), 1.0) == 0.0  # every word matched: no paraphrase needed
    assert vector_trust({"a": 0.8, "b": 0.4}, 0.5) == pytest.approx(0.5)  # too few neighbours to profile


def test_trusted_weights_scale_only_the_vector_weight() -> None:
    weights = SignalWeights(keyword=1.0, vector=0.8, recency=0.5)
    scaled = trusted_weights(weights, _profile(0.6, 0.5), 0.5)
    assert (scaled.keyword, scaled.recency) == (1.0, 0.5)
    assert scaled.vector == pytest.approx(0.8 * 0.5 * 0.1 / VECTOR_SEPARATION)
    assert trusted_weights(weights, {}, 0.0) is weights
    assert trusted_weights(weights, _profile(0.6, 0.5), 0.5, trust=False) is weights


def test_explanations_report_the_trusted_weights(tmp_path: Path) -> None:
    mem = Memory(tmp_path / "gm", config=MemoryConfig(async_consolidate=False), embedder=HashingEmbedder())
    try:
        for i in range(20):
            mem.remember("a", f"note {i} about the printer toner on floor {i}")
        mem.remember("a", "The billing service is owned by Alice")
        hits = mem.recall_explain("a", "who owns the billing service?")
        assert hits and hits[0].text == "The billing service is owned by Alice"
        for hit in hits:
            r = hit.ranks
            assert hit.weights.vector <= 1.0
            recomputed = rrf_score(r.keyword_rank, r.vector_rank, r.recency_rank, hit.weights, r.k)
            assert r.fused_score == pytest.approx(recomputed, rel=1e-12)
    finally:
        mem.close()
