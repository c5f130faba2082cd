"""Cross-encoder re-ranking of the fused head (packages/graymatter/src/graymatter/retrieval/rerank.py) and
its place in recall (pipeline.run_recall), with a deterministic reranker over real SQLite stores."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graymatter import Memory
from graymatter.config import MemoryConfig
from graymatter.engine.embedding_index import KeyedEmbedder
from graymatter.engine.embeddings import HashingEmbedder
from graymatter.retrieval.fusion import rrf_score
from graymatter.retrieval.pipeline import RecallRequest, run_recall
from graymatter.retrieval.rerank import (
    RERANK_DEPTH,
    RERANK_K,
    RERANK_NEIGHBOURS,
    RERANK_WEIGHT,
    Reranker,
    rerank_order,
    reranker_of,
    text_scores,
    with_neighbours,
)


@dataclass(frozen=True)
class Row:
    fact_id: str


def _rows(ids: str) -> list[Row]:
    return [Row(fid) for fid in ids]


def _ids(rows: Sequence[Row]) -> str:
    return "".join(row.fact_id for row in rows)


class MarkedReranker:
    """Scores a text by how many of ``marks`` it contains (a stand-in for a cross-encoder's judgement)."""

    model_id = "test-marks"

    def __init__(self, *marks: str) -> None:
        self.marks = marks
        self.calls: list[list[str]] = []

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        self.calls.append(list(texts))
        return [float(sum(mark in text for mark in self.marks)) for text in texts]


class FailingReranker:
    model_id = "test-failing"

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        raise RuntimeError("model gone")


class RerankingEmbedder(HashingEmbedder):
    """The hashing vectors with a reranker beside them, as the embed extra's local models come."""

    def __init__(self, reranker: Reranker) -> None:
        super().__init__()
        self.reranker = reranker


def test_the_head_is_re_ordered_by_both_ranks_and_the_tail_kept() -> None:
    ordered = _rows("abcde")
    scores = {"a": 0.0, "b": 1.0, "c": 5.0, "d": 2.0}  # e has no score: only its fused vote
    out = rerank_order(ordered, scores, depth=4, weight=0.5, k=10)
    # votes: a .5/11+.5/14, b .5/12+.5/13, c .5/13+.5/11, d .5/14+.5/12 -> c and b/d/a by the sums
    vote = {
        "a": 0.5 / 11 + 0.5 / 14,
        "b": 0.5 / 12 + 0.5 / 13,
        "c": 0.5 / 13 + 0.5 / 11,
        "d": 0.5 / 14 + 0.5 / 12,
    }
    expected = sorted("abcd", key=lambda f: (-vote[f], "abcd".index(f)))
    assert _ids(out) == "".join(expected) + "e"
    assert _ids(out)[-1] == "e"  # beyond the depth: untouched
    assert _ids(rerank_order(ordered, scores, depth=4, weight=0.0)) == "abcde"
    assert _ids(rerank_order(ordered, scores, depth=0)) == "abcde"
    assert _ids(rerank_order(_rows("a"), {"a": 1.0})) == "a"


def test_an_unscored_item_keeps_only_its_fused_vote() -> None:
    ordered = _rows("abc")
    out = rerank_order(ordered, {"b": 1.0, "c": 2.0}, depth=3, weight=0.5, k=10)
    # a: .5/11 = .0455; b: .5/12 + .5/12 = .0833; c: .5/13 + .5/11 = .0839
    assert _ids(out) == "cba"


def test_the_shipped_constants() -> None:
    assert (RERANK_DEPTH, RERANK_WEIGHT, RERANK_K, RERANK_NEIGHBOURS) == (20, 0.5, 10, 5)
    request = RecallRequest(agent_ids=("a",), query="")
    assert (request.rerank_depth, request.rerank_neighbours) == (RERANK_DEPTH, RERANK_NEIGHBOURS)


heads = st.lists(st.sampled_from("abcdefghijklmnopqrstuvwxyz"), min_size=0, max_size=26, unique=True)


@settings(max_examples=200, deadline=None)
@given(
    ids=heads,
    raw=st.lists(st.floats(-10, 10, allow_nan=False), min_size=26, max_size=26),
    depth=st.integers(0, 30),
    weight=st.floats(0.0, 1.0),
)
def test_re_ranking_is_a_permutation_of_the_head_only(
    ids: list[str], raw: list[float], depth: int, weight: float
) -> None:
    ordered = [Row(fid) for fid in ids]
    scores = dict(zip(ids, raw, strict=False))
    out = rerank_order(ordered, scores, depth=depth, weight=weight)
    assert sorted(_ids(out)) == sorted(ids)
    assert out[depth:] == ordered[depth:]
    # Scores that agree with the fused order change nothing.
    agreeing = {fid: float(-i) for i, fid in enumerate(ids)}
    assert rerank_order(ordered, agreeing, depth=depth, weight=weight) == ordered
    # All the weight on the cross-encoder: the head sorted by score, ties in fused order.
    full = rerank_order(ordered, scores, depth=depth, weight=1.0)
    head = ordered[:depth]
    assert full[:depth] == sorted(head, key=lambda row: (-scores[row.fact_id], head.index(row)))


def test_text_scores_scores_each_distinct_text_once() -> None:
    reranker = MarkedReranker("x")
    texts = {"1": "x marks", "2": "x marks", "3": "plain"}
    scores = text_scores(reranker, "q", ["1", "2", "3", "gone"], texts)
    assert scores == {"1": 1.0, "2": 1.0, "3": 0.0}
    assert reranker.calls == [["x marks", "plain"]]
    assert text_scores(reranker, "q", ["gone"], texts) == {}
    assert reranker_of(RerankingEmbedder(reranker)) is reranker
    assert reranker_of(HashingEmbedder()) is None


def _store(tmp_path: Path, reranker: Reranker) -> tuple[Memory, KeyedEmbedder]:
    """A store of printer notes, and the embedder recall queries it with (keyed as its vectors are)."""
    inner = RerankingEmbedder(reranker)
    memory = Memory(tmp_path / "gm", config=MemoryConfig(async_consolidate=False), embedder=inner)
    for i in range(12):
        memory.remember("a", f"note {i} about the printer toner on floor {i}")
    memory.remember("a", FAVOURITE)
    memory.remember("a", "Deploys happen on Tuesdays")
    assert memory.embedding_model is not None
    return memory, KeyedEmbedder(inner, memory.embedding_model)


FAVOURITE = "The machine by the lifts jams with cheap toner, the facilities team says"
QUERY = "which printer has toner trouble?"
REQUEST = RecallRequest(agent_ids=("a",), query=QUERY, top_k=20)


def _texts(memory: Memory, embedder: KeyedEmbedder, request: RecallRequest) -> list[str]:
    return [item.candidate.fact.text for item in run_recall(memory.store, request, embedder).results]


def test_recall_moves_up_what_the_reranker_prefers_and_adds_nothing(tmp_path: Path) -> None:
    reranker = MarkedReranker("jams", "facilities")
    memory, embedder = _store(tmp_path, reranker)
    try:
        plain = run_recall(memory.store, replace(REQUEST, rerank_depth=0), embedder)
        reranked = run_recall(memory.store, REQUEST, embedder)
        before = [item.candidate.fact.text for item in plain.results]
        after = [item.candidate.fact.text for item in reranked.results]
        assert plain.reranked == {} and len(reranked.reranked) == len(before)
        assert sorted(after) == sorted(before)  # the same facts: re-ranking adds and drops none
        assert after.index(FAVOURITE) < before.index(FAVOURITE)
        assert "Deploys happen on Tuesdays" not in after  # no evidence of its own, whatever it would score
        assert reranker.calls and all(len(call) == len(set(call)) for call in reranker.calls)
        assert [hit.text for hit in memory.recall("a", QUERY, top_k=20)] == after  # Memory.recall re-ranks
        explained = memory.recall_explain("a", QUERY, top_k=20)
        for hit in explained:  # the receipts' fused scores stay the fusion's
            r = hit.ranks
            assert r.fused_score == pytest.approx(
                rrf_score(r.keyword_rank, r.vector_rank, r.recency_rank, hit.weights, r.k), rel=1e-12
            )
        # Each receipt names the place its fact had before the re-read: the fused order, exactly.
        assert [hit.text for hit in explained] == after
        fused = sorted(explained, key=lambda hit: hit.fused_position or 0)
        assert [hit.fused_position for hit in fused] == list(range(1, len(before) + 1))
        assert [hit.text for hit in fused] == before
    finally:
        memory.close()


def test_a_min_relevance_cut_skips_instead_of_stopping_after_re_ranking(tmp_path: Path) -> None:
    memory, embedder = _store(tmp_path, MarkedReranker("jams"))
    try:
        every = run_recall(memory.store, REQUEST, embedder).results
        floor = 0.9 * every[0].final_score
        scores = [item.final_score for item in every]
        # The re-ranked order is not by score: a result under the cut comes before one above it.
        assert any(a < floor <= b for i, a in enumerate(scores) for b in scores[i + 1 :])
        cut = run_recall(memory.store, replace(REQUEST, min_relevance=0.9), embedder).results
        expected = [item.candidate.fact.id for item in every if item.final_score >= floor]
        assert [item.candidate.fact.id for item in cut] == expected
    finally:
        memory.close()


def test_a_failing_reranker_leaves_the_fused_order_and_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    memory, embedder = _store(tmp_path, FailingReranker())
    try:
        with caplog.at_level(logging.WARNING, logger="graymatter"):
            failed = run_recall(memory.store, REQUEST, embedder)
        assert _texts(memory, embedder, replace(REQUEST, rerank_depth=0)) == [
            item.candidate.fact.text for item in failed.results
        ]
        assert failed.reranked == {}
        assert "cross-encoder re-ranking failed (RuntimeError)" in caplog.text
    finally:
        memory.close()


@settings(max_examples=200, deadline=None)
@given(ids=heads, neighbours=heads, depth=st.integers(0, 30))
def test_neighbours_below_the_head_join_it_nearest_first(
    ids: list[str], neighbours: list[str], depth: int
) -> None:
    ordered = _rows(ids)
    out, new_depth = with_neighbours(ordered, depth, neighbours)
    assert sorted(_ids(out)) == sorted(ids)  # a permutation: nothing added, nothing dropped
    assert out[:depth] == ordered[:depth]
    moved = [fid for fid in neighbours if fid in ids[depth:]]
    assert _ids(out[depth:new_depth]) == "".join(moved)
    assert _ids(out[new_depth:]) == "".join(fid for fid in ids[depth:] if fid not in moved)
    assert with_neighbours(ordered, depth, []) == (ordered, depth)


def test_the_nearest_vector_neighbours_below_the_head_are_read_too(tmp_path: Path) -> None:
    memory, embedder = _store(tmp_path, MarkedReranker("jams"))
    try:
        request = replace(REQUEST, rerank_depth=2, rerank_neighbours=3)
        plain = run_recall(memory.store, replace(request, rerank_depth=0), embedder).results
        fused = [item.candidate.fact.id for item in plain]
        by_vector = sorted(
            (c for c in (i.candidate for i in plain) if c.vector_rank), key=lambda c: c.vector_rank
        )
        nearest = [c.fact.id for c in by_vector[:3]]
        assert set(nearest) - set(fused[:2])  # some neighbour sits below the head
        out = run_recall(memory.store, request, embedder)
        assert out.reranked == {fid: fused.index(fid) + 1 for fid in {*fused[:2], *nearest}}
        assert sorted(item.candidate.fact.id for item in out.results) == sorted(fused)
        alone = run_recall(memory.store, replace(request, rerank_neighbours=0), embedder)
        assert alone.reranked == {fid: place for place, fid in enumerate(fused[:2], 1)}
    finally:
        memory.close()
