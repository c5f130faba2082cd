"""The vector signal re-scoring keyword matches, and its reduced own vote
(packages/graymatter/src/graymatter/retrieval/fusion.py: semantic_rescore, vector_fusion)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graymatter import Memory
from graymatter.config import MemoryConfig
from graymatter.engine.embeddings import HashingEmbedder
from graymatter.models import SignalWeights
from graymatter.retrieval.fusion import (
    SEMANTIC_WEIGHT,
    VECTOR_SEPARATION,
    VECTOR_VOTE,
    rrf_score,
    semantic_rescore,
    vector_fusion,
    vector_trust,
)


def _profile(standouts: dict[str, float], rest: float = 0.5, n: int = 30) -> dict[str, float]:
    """``standouts`` plus ``n`` background neighbours at cosine ``rest``."""
    return {**standouts, **{f"bg{i}": rest for i in range(n)}}


def test_a_keyword_match_that_stands_out_as_a_neighbour_moves_up() -> None:
    keyword = {"strong": 2.0, "weak": 1.6}
    similarity = _profile({"weak": 0.7})
    rescored = semantic_rescore(keyword, similarity, best_coverage=0.0)
    # On the best keyword score's scale, plus weight x (0.7 - 0.5) / 0.25 for the neighbour.
    assert rescored["strong"] == pytest.approx(1.0)
    assert rescored["weak"] == pytest.approx(0.8 + SEMANTIC_WEIGHT * 0.2 / VECTOR_SEPARATION)
    assert max(rescored, key=rescored.__getitem__) == "weak"


def test_the_gain_shrinks_with_the_best_keyword_coverage_and_vanishes_at_full_coverage() -> None:
    keyword = {"strong": 2.0, "weak": 1.6}
    similarity = _profile({"weak": 0.7})
    half = semantic_rescore(keyword, similarity, best_coverage=0.5)
    assert half["weak"] == pytest.approx(0.8 + 0.5 * SEMANTIC_WEIGHT * 0.2 / VECTOR_SEPARATION)
    full = semantic_rescore(keyword, similarity, best_coverage=1.0)
    assert full == pytest.approx({"strong": 1.0, "weak": 0.8})


def test_no_profile_no_gain_and_facts_below_the_background_lose_nothing() -> None:
    keyword = {"a": 3.0, "b": 1.5}
    few = {"b": 0.95, "c": 0.9}  # fewer than 11 neighbours: no profile to stand out from
    assert semantic_rescore(keyword, few, best_coverage=0.0) == pytest.approx({"a": 1.0, "b": 0.5})
    below = _profile({"a": 0.35})  # a neighbour below the background gains 0, never a penalty
    assert semantic_rescore(keyword, below, best_coverage=0.0) == pytest.approx({"a": 1.0, "b": 0.5})
    assert semantic_rescore({}, below, best_coverage=0.0) == {}


scores = st.dictionaries(st.sampled_from("abcdefgh"), st.floats(0.01, 50.0), min_size=1)
cosines = st.dictionaries(st.text("abcdefghijklmnop", min_size=1, max_size=3), st.floats(0.3, 1.0))


@settings(max_examples=200, deadline=None)
@given(keyword=scores, similarity=cosines, coverage=st.floats(0.0, 1.0))
def test_rescoring_only_adds_and_keeps_the_keyword_order_without_weight(
    keyword: dict[str, float], similarity: dict[str, float], coverage: float
) -> None:
    best = max(keyword.values())
    rescored = semantic_rescore(keyword, similarity, coverage)
    assert set(rescored) == set(keyword)  # only keyword matches are re-scored; none is added
    for fid, score in keyword.items():
        assert rescored[fid] >= score / best - 1e-12
    flat = semantic_rescore(keyword, similarity, coverage, weight=0.0)
    assert sorted(flat, key=lambda f: (-flat[f], f)) == sorted(keyword, key=lambda f: (-keyword[f], f))


def test_vector_fusion_reduces_the_vote_only_when_it_re_scored() -> None:
    weights = SignalWeights(keyword=1.0, vector=0.8, recency=0.5)
    keyword = {"a": 2.0, "b": 1.0}
    similarity = _profile({"b": 0.9})
    rescored, fused = vector_fusion(keyword, weights, similarity, 0.5)
    assert rescored == semantic_rescore(keyword, similarity, 0.5)
    assert (fused.keyword, fused.recency) == (1.0, 0.5)
    assert fused.vector == pytest.approx(0.8 * VECTOR_VOTE * vector_trust(similarity, 0.5))
    # Keyword-only recall (no neighbours): the scores and the weights object are returned as they are.
    same, unchanged = vector_fusion(keyword, weights, {}, 0.5)
    assert same is keyword and unchanged is weights
    # Trust off: the equal-weight fusion of earlier releases, no re-scoring.
    same, unchanged = vector_fusion(keyword, weights, similarity, 0.5, trust=False)
    assert same is keyword and unchanged is weights
    # Re-scoring off: the session-3 trusted vote at its full share.
    same, trusted = vector_fusion(keyword, weights, similarity, 0.5, semantic_weight=0.0)
    assert same is keyword
    assert trusted.vector == pytest.approx(0.8 * vector_trust(similarity, 0.5))


def test_receipts_stay_recomputable_with_the_re_scored_keyword_ranks(tmp_path: Path) -> None:
    mem = Memory(tmp_path / "gm", config=MemoryConfig(async_consolidate=False), embedder=HashingEmbedder())
    try:
        for i in range(24):
            mem.remember("a", f"note {i} about the printer toner on floor {i}")
        mem.remember("a", "The billing service is owned by Alice")
        mem.remember("a", "Billing questions go to the finance team")
        hits = mem.recall_explain("a", "who owns the billing service?")
        assert hits[0].text == "The billing service is owned by Alice"
        # The best keyword match covers every word of the query: nothing to paraphrase, no vector vote.
        assert all(hit.weights.vector == 0.0 for hit in hits)
        hits += mem.recall_explain("a", "which floor has printer toner?")  # neighbours, partial coverage
        for hit in hits:
            r = hit.ranks
            recomputed = rrf_score(r.keyword_rank, r.vector_rank, r.recency_rank, hit.weights, r.k)
            assert r.fused_score == pytest.approx(recomputed, rel=1e-12)
    finally:
        mem.close()
