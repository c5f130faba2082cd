"""Recall results as hits, and as receipts that say why each fact was returned."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from graymatter.models import Link, RankingPolicy, RecallExplanation, SignalRanks, utcnow
from graymatter.retrieval.fusion import Fused
from graymatter.retrieval.pipeline import RecallOutcome, RecallRequest
from graymatter.store.base import Store

KeywordSource = tuple[str, str | None]


def hit_fields(item: Fused, relevance: float | None = None) -> dict[str, Any]:
    """The ``RecallHit`` fields of one ranked fact (``relevance``: its readable relevance figure)."""
    fact = item.candidate.fact
    return {
        "id": fact.id,
        "agent_id": fact.agent_id,
        "text": fact.text,
        "score": item.final_score,
        "created_at": fact.created_at,
        "accessed_at": fact.accessed_at,
        "weight": fact.weight,
        "confidence": fact.confidence,
        "pinned": fact.pinned,
        "relevance": relevance,
    }


def explain(store: Store, request: RecallRequest, outcome: RecallOutcome) -> list[RecallExplanation]:
    """A receipt per result of ``outcome``: ranks, weights, confidence factor, keyword source, links.

    ``ranks.fused_score`` = Σ weight/(k + rank) over the non-zero ranks; ``score`` =
    ``ranking.final_score`` = fused × ``ranking.factor``.
    """
    results = outcome.results
    ids = [r.candidate.fact.id for r in results]
    supersedes = store.supersedes(ids) if ids else {}
    links = store.links(list(request.agent_ids)) if ids else []
    now = utcnow()
    return [
        _receipt(
            item,
            request,
            outcome,
            supersedes.get(item.candidate.fact.id, []),
            links,
            now,
        )
        for item in results
    ]


def _receipt(
    item: Fused,
    request: RecallRequest,
    outcome: RecallOutcome,
    supersedes: list[str],
    links: Sequence[Link],
    now: datetime,
) -> RecallExplanation:
    fact = item.candidate.fact
    lowered = fact.text.casefold()
    related = [
        ln for ln in links if ln.agent_id == fact.agent_id and (ln.source in lowered or ln.target in lowered)
    ]
    sources: dict[str, KeywordSource] = outcome.keyword_sources
    source, lender = sources.get(fact.id, ("match", None)) if item.candidate.keyword_rank else (None, None)
    return RecallExplanation(
        **hit_fields(item, outcome.relevance.get(fact.id)),
        ranks=SignalRanks(
            keyword_rank=item.candidate.keyword_rank,
            vector_rank=item.candidate.vector_rank,
            recency_rank=item.candidate.recency_rank,
            fused_score=item.fused_score,
            k=request.k,
        ),
        weights=outcome.weights or request.weights,
        ranking=RankingPolicy(
            base_score=item.fused_score,
            final_score=item.final_score,
            factor=item.factor,
            confidence_weight=request.confidence_weight,
            effective_confidence=fact.confidence,
        ),
        age_days=round(max(0.0, (now - fact.created_at).total_seconds()) / 86_400, 6),
        keyword_source=source,
        keyword_context_from=lender,
        keyword_synonym=outcome.synonyms.get(fact.id) if source == "synonym" else None,
        fused_position=outcome.reranked.get(fact.id),
        supersedes=supersedes,
        links=related,
        provenance=fact.provenance,
    )
