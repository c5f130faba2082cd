"""Cross-encoder re-ranking: the best fused candidates re-read with the query, one vote beside fusion's.

A bi-encoder embeds the query and each fact apart; a cross-encoder reads the two together and scores how
well the fact answers the question. It is too slow to score a whole store (milliseconds per pair), so it
only re-orders the head of the fused order: the best ``depth`` candidates (20), joined by those of the
``RERANK_NEIGHBOURS`` (5) nearest vector neighbours that fusion placed below them (a neighbour the keywords
missed gets only a small vote, yet it is often the answer), in that order. Its scores are logits of
no fixed scale, so they are not added to the fused scores: the head is re-ordered by reciprocal-rank fusion
of two ranks, the candidate's place in the fused order and its place by cross-encoder score,

``(1 - weight) / (k + fused position) + weight / (k + cross-encoder rank)`` (k = 10, weight 0.5),

ties kept in fused order. The rest of the order is unchanged, and no fact enters the results for its
cross-encoder score alone: it re-orders facts that already have evidence. Chosen on LoCoMo's development
split (ADR 0011, "Quality, session 6").
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Protocol, TypeVar, runtime_checkable

from graymatter.retrieval.rescore import fact_texts
from graymatter.store.base import Store

log = logging.getLogger("graymatter")

RERANK_DEPTH = 20
"""How many of the best fused candidates the cross-encoder re-reads (``RecallRequest.rerank_depth``)."""
RERANK_WEIGHT = 0.5
"""The cross-encoder rank's share of the head's re-ordering vote (``RecallRequest.rerank_weight``)."""
RERANK_K = 10
"""The reciprocal-rank constant of that vote: ranks within the head of 20 stay distinguishable."""
RERANK_NEIGHBOURS = 5
"""How many of the nearest vector neighbours the head takes in from below it (``RecallRequest.
rerank_neighbours``): fusion ranks a neighbour the keywords missed low, the cross-encoder can read it."""


@runtime_checkable
class Reranker(Protocol):
    """Scores ``(query, text)`` pairs; a higher score means the text answers the query better."""

    model_id: str

    def score(self, query: str, texts: Sequence[str]) -> list[float]: ...


def reranker_of(embedder: object) -> Reranker | None:
    """The cross-encoder that comes with ``embedder`` (the ``embed`` extra's local models), else ``None``."""
    reranker = getattr(embedder, "reranker", None)
    if reranker is None:  # keyword-only recall: no runtime protocol check (about 20 us)
        return None
    return reranker if isinstance(reranker, Reranker) else None


class _HasId(Protocol):
    @property
    def fact_id(self) -> str: ...


Item = TypeVar("Item", bound=_HasId)


def rerank_order(
    ordered: Sequence[Item],
    scores: Mapping[str, float],
    *,
    depth: int = RERANK_DEPTH,
    weight: float = RERANK_WEIGHT,
    k: int = RERANK_K,
) -> list[Item]:
    """``ordered`` with its first ``depth`` items re-ordered by the fused position and the cross-encoder
    rank (``scores``: fact id -> score; an item without a score keeps only its fused vote)."""
    head, tail = list(ordered[:depth]), ordered[depth:]
    if len(head) < 2 or weight <= 0:
        return [*head, *tail]
    scored = sorted(
        (position for position, item in enumerate(head) if item.fact_id in scores),
        key=lambda position: (-scores[head[position].fact_id], position),
    )
    encoder_rank = {position: rank for rank, position in enumerate(scored, 1)}
    keep = 1.0 - weight

    def vote(position: int) -> float:
        rank = encoder_rank.get(position)
        return keep / (k + position + 1) + (weight / (k + rank) if rank is not None else 0.0)

    positions = sorted(range(len(head)), key=lambda position: (-vote(position), position))
    return [*(head[position] for position in positions), *tail]


def text_scores(
    reranker: Reranker, query: str, ids: Sequence[str], texts: Mapping[str, str]
) -> dict[str, float]:
    """The cross-encoder score of each id's text (each distinct text scored once; ids without a text
    are left out)."""
    distinct = list(dict.fromkeys(texts[fid] for fid in ids if fid in texts))
    if not distinct:
        return {}
    by_text = dict(zip(distinct, reranker.score(query, distinct), strict=True))
    return {fid: by_text[texts[fid]] for fid in ids if fid in texts}


def with_neighbours(
    ordered: Sequence[Item], depth: int, neighbours: Sequence[str]
) -> tuple[Sequence[Item], int]:
    """``ordered`` with the ``neighbours`` (fact ids, nearest first) found below its first ``depth`` items
    moved up to follow them, nearest first, and the head's new depth. Every moved item is already a
    candidate with evidence of its own (a vector neighbour); the order below the head is kept."""
    if not neighbours or len(ordered) <= depth:
        return ordered, depth
    wanted = {fid: rank for rank, fid in enumerate(neighbours)}
    below = [item for item in ordered[depth:] if item.fact_id in wanted]
    if not below:
        return ordered, depth
    below.sort(key=lambda item: wanted[item.fact_id])
    moved = {id(item) for item in below}
    rest = [item for item in ordered[depth:] if id(item) not in moved]
    return [*ordered[:depth], *below, *rest], depth + len(below)


class RerankSettings(Protocol):
    """What re-ranking reads of a recall request (``pipeline.RecallRequest`` has all of it)."""

    @property
    def query(self) -> str: ...
    @property
    def rerank_depth(self) -> int: ...
    @property
    def rerank_weight(self) -> float: ...
    @property
    def rerank_neighbours(self) -> int: ...


def rerank_head(
    store: Store,
    request: RerankSettings,
    reranker: Reranker | None,
    ordered: Sequence[Item],
    neighbours: Sequence[str] = (),
) -> tuple[Sequence[Item], dict[str, int]]:
    """``ordered`` with its head re-ordered by ``reranker`` (texts read in one statement), and each re-read
    fact's fused position (1-based); unchanged without a reranker, with depth or weight 0, or a head of one.
    A text repeated in the head is scored once, for its first (best) fact: recall returns only that one."""
    query, depth, weight = request.query, request.rerank_depth, request.rerank_weight
    if reranker is None or depth <= 0 or weight <= 0 or len(ordered) < 2:
        return ordered, {}
    fused = ordered
    ordered, depth = with_neighbours(fused, depth, neighbours[: max(0, request.rerank_neighbours)])
    ids = [item.fact_id for item in ordered[:depth]]
    texts = fact_texts(store, ids)
    first: dict[str, str] = {}
    for fid in ids:
        if fid in texts:
            first.setdefault(texts[fid], fid)
    try:
        scores = text_scores(reranker, query, list(first.values()), texts)
    except Exception as exc:  # a failing model never fails a recall: the fused order stands, and says so
        log.warning("cross-encoder re-ranking failed (%s); the fused order is returned", type(exc).__name__)
        return fused, {}
    head = rerank_order(ordered, scores, depth=depth, weight=weight)
    read = set(ids)
    return head, {item.fact_id: place for place, item in enumerate(fused, 1) if item.fact_id in read}
