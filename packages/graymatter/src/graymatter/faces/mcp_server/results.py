"""Result shaping: engine records as the published result models (their compact JSON is the text content)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from graymatter.faces.mcp_server.schemas import (
    CheckpointResumeResult,
    FactResult,
    LinkResult,
    RankingResult,
    RanksResult,
    ReceiptResult,
)
from graymatter.faces.mcp_server.wire import RawJSON

if TYPE_CHECKING:
    from graymatter.models import CheckpointJSON, RecallExplanation, RecallHit


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


def resumed(checkpoint: CheckpointJSON) -> CheckpointResumeResult:
    """A restored checkpoint as published, its state the store's JSON text (never decoded here).

    Built without validation: every field but ``state`` is the store's checked record, and ``state`` is
    :class:`RawJSON` the store checked to be a JSON object (the one field the model types as an open object).
    """
    created = rfc3339(checkpoint.created_at)
    count = checkpoint.message_count or None
    fields: dict[str, Any] = {"state": RawJSON(checkpoint.state_json)}
    return CheckpointResumeResult.model_construct(
        id=checkpoint.id, created_at=created, message_count=count, **fields
    )
