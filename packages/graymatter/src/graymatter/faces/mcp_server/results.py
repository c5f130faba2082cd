"""Result shaping: engine records as the published result models, and the equivalent text the model reads."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from pydantic import BaseModel

from graymatter.faces.mcp_server.schemas import (
    CheckpointResumeResult,
    FactResult,
    LinkResult,
    RankingResult,
    RanksResult,
    ReceiptResult,
)

if TYPE_CHECKING:
    from graymatter.models import Checkpoint, RecallExplanation, RecallHit


def rfc3339(moment: datetime) -> str:
    """``moment`` in UTC, ``Z``-suffixed."""
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def quote(value: str) -> str:
    """``value`` as a JSON string (how texts name agents, queries and facts)."""
    return json.dumps(value, ensure_ascii=False)


def fact_result(hit: RecallHit) -> FactResult:
    """One recalled fact as published."""
    return FactResult(
        id=hit.id,
        text=hit.text,
        score=hit.score,
        created_at=rfc3339(hit.created_at),
        confidence=hit.confidence,
        pinned=hit.pinned,
        relevance=hit.relevance,
    )


def receipt(hit: RecallExplanation) -> ReceiptResult:
    """The ranking receipt of one explained hit."""
    return ReceiptResult(
        fact_id=hit.id,
        text=hit.text,
        weight=hit.weight,
        age_days=hit.age_days,
        ranks=RanksResult(**hit.ranks.model_dump()),
        ranking=RankingResult(**hit.ranking.model_dump()),
        supersedes=list(hit.supersedes),
        links=[LinkResult(source=x.source, target=x.target, relation=x.relation) for x in hit.links],
        interface=hit.provenance.interface,
        client=hit.provenance.client,
    )


def fact_lines(facts: list[FactResult]) -> list[str]:
    """One numbered line per fact, carrying every field of its structured form."""
    return [
        f"{i}. {f.text} (id {f.id}, score {f.score:.4f}"
        f"{'' if f.relevance is None else f', relevance {f.relevance:.2f}'}, "
        f"{f.confidence}{', pinned' if f.pinned else ''}, written {f.created_at})"
        for i, f in enumerate(facts, 1)
    ]


def receipt_lines(receipts: list[ReceiptResult]) -> list[str]:
    """One numbered line per receipt: the signal ranks, the fused and final scores, the writer."""
    return [
        f"{i}. keyword_rank {r.ranks.keyword_rank}, vector_rank {r.ranks.vector_rank}, "
        f"recency_rank {r.ranks.recency_rank}, fused {r.ranks.fused_score:.6f}, "
        f"final {r.ranking.final_score:.6f}, written by {r.interface}"
        for i, r in enumerate(receipts, 1)
    ]


def resumed(checkpoint: Checkpoint) -> tuple[BaseModel, str]:
    """A restored checkpoint: its result model and its text (state pretty-printed)."""
    created = rfc3339(checkpoint.created_at)
    count = checkpoint.message_count or None
    payload = CheckpointResumeResult(
        id=checkpoint.id, created_at=created, state=checkpoint.state, message_count=count
    )
    state = json.dumps(checkpoint.state, indent=2, ensure_ascii=False, sort_keys=False)
    text = (
        f"Checkpoint {quote(checkpoint.id)} restored for agent {quote(checkpoint.agent_id)}.\n"
        f"Created: {created}\nState:\n{state}\n"
    )
    if count:
        text += f"Messages: {count} turns\n"
    return payload, text
