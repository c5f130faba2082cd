"""pydantic v2 models: the single source of every graymatter schema (library, CLI JSON, MCP, REST)."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field, field_validator

from graymatter.constants import DEFAULT_RELATION, Confidence

FactKind = Literal["fact", "alias"]
Interface = Literal["cli", "mcp", "rest", "library", "import", "consolidation"]
RecallScope = Literal["agent", "shared", "all"]
SESSION_MAX_CHARS = 200
"""The longest session id a fact may carry."""


def require_finite(value: float, message: str = "must be finite") -> float:
    """``value`` if it is finite, else ``ValueError(message)`` (the body of a pydantic field validator)."""
    if not math.isfinite(value):
        raise ValueError(message)
    return value


def utcnow() -> datetime:
    """Current time, timezone-aware UTC, microsecond precision."""
    return datetime.now(UTC)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class Provenance(_Model):
    """Who wrote a record: the interface, the client program, (for authenticated faces) the token id, and
    the session (conversation) a fact was written in."""

    interface: Interface = "library"
    client: str | None = None
    token_id: str | None = None
    session: str | None = Field(default=None, min_length=1, max_length=SESSION_MAX_CHARS)
    """Turns of one conversation share a session id; only they lend each other recall context."""


class Fact(_Model):
    """One durable memory. Facts are never overwritten; corrections supersede them."""

    id: str
    agent_id: str
    text: str
    created_at: datetime
    accessed_at: datetime
    access_count: int = Field(default=0, ge=0)
    weight: float = Field(default=1.0, ge=0.0, le=1.0)
    superseded_by: str | None = None
    pinned: bool = False
    pinned_at: datetime | None = None
    confidence: Confidence = "inferred"
    kind: FactKind = "fact"
    equivalents: list[str] = Field(default_factory=list)
    provenance: Provenance = Field(default_factory=Provenance)

    @property
    def live(self) -> bool:
        """True when the fact is not superseded (tombstoned)."""
        return self.superseded_by is None


class Checkpoint(_Model):
    """A session checkpoint: a JSON-object state plus optional messages and metadata. Never overwritten."""

    id: str
    agent_id: str
    created_at: datetime
    state: dict[str, Any] = Field(default_factory=dict)
    messages: list[Any] | None = None
    message_count: int = Field(default=0, ge=0)
    metadata: dict[str, Any] = Field(default_factory=dict)
    provenance: Provenance = Field(default_factory=Provenance)


class CheckpointJSON(_Model):
    """The newest checkpoint as stored, its state still JSON text: for a face that sends the state on as JSON.

    ``state_json`` is the store's text of a JSON object, checked by the store (well-formed JSON whose first
    character opens an object); decoding it gives :attr:`Checkpoint.state`.
    """

    id: str
    agent_id: str
    created_at: datetime
    message_count: int = Field(default=0, ge=0)
    state_json: str


class Link(_Model):
    """A typed edge between two entities (lower-cased, trimmed labels) in one agent's namespace."""

    id: str
    agent_id: str
    source: str
    target: str
    relation: str = DEFAULT_RELATION
    created_at: datetime
    provenance: Provenance = Field(default_factory=Provenance)


class SignalWeights(_Model):
    """Reciprocal-rank-fusion weights of the three recall signals."""

    keyword: float = Field(default=1.0, ge=0.0)
    vector: float = Field(default=1.0, ge=0.0)
    recency: float = Field(default=0.5, ge=0.0)

    @field_validator("keyword", "vector", "recency")
    @classmethod
    def _finite(cls, value: float) -> float:
        return require_finite(value, "signal weights must be finite")


def default_weights() -> SignalWeights:
    """The reference weights (keyword 1.0, vector 1.0, recency 0.5), built without running validation."""
    return SignalWeights.model_construct()


class SignalRanks(_Model):
    """Per-signal 1-based ranks (0 = the signal did not rank the fact) and the fused RRF score."""

    keyword_rank: int = Field(ge=0)
    vector_rank: int = Field(ge=0)
    recency_rank: int = Field(ge=0)
    fused_score: float
    k: int


class RankingPolicy(_Model):
    """How the final score was derived from the fused score: ``final = base × (1 + weight × c)``."""

    base_score: float
    final_score: float
    factor: float
    confidence_weight: float
    effective_confidence: Confidence
    policy: Literal["confidence-v1"] = "confidence-v1"


class RecallHit(_Model):
    """One recalled fact."""

    id: str
    agent_id: str
    text: str
    score: float
    created_at: datetime
    accessed_at: datetime
    weight: float
    confidence: Confidence
    pinned: bool
    relevance: float | None = Field(default=None, ge=0.0, le=1.0)
    """How much of the query this fact covers, 0..1: the share of the query's informative words it contains
    (or its cosine similarity, or half its lending turn's share for a context turn), whichever is largest.
    ``None`` when the query has no informative words. ``score`` orders; ``relevance`` says how good. A recall
    the ``embed`` extra's cross-encoder re-read keeps each fact's fused ``score`` but returns the re-read head
    in the cross-encoder's order, so there ``score`` need not fall from one result to the next (the receipt's
    ``fused_position`` gives the place it had)."""


class RecallFeedback(_Model):
    """The weak-match block: present exactly when the best result covers less than half of the query."""

    weak_match: Literal[True] = True
    best_relevance: float = Field(ge=0.0, le=1.0)
    matched_terms: list[str]
    """Informative query words that some returned fact contains."""
    unmatched_terms: list[str]
    """Informative query words that no returned fact contains: candidates for ``memory_alias``."""
    suggested_terms: list[str]
    """Words of the returned facts that the query does not use: this store's vocabulary near the query."""
    action: Literal["memory_alias"] = "memory_alias"
    message: str


class RecallExplanation(RecallHit):
    """A recall hit with its receipt: per-signal ranks, weights and the score derivation."""

    ranks: SignalRanks
    weights: SignalWeights
    ranking: RankingPolicy
    age_days: float
    keyword_source: Literal["match", "phrase", "synonym", "context"] | None = None
    """Where the keyword rank came from: the fact matched the query terms, matched only the phrase bonus,
    matched only a near-synonym of a query word (the shipped synonym table), or borrowed score from an
    adjacent matching fact (conversation context). ``None`` = no keyword rank."""
    keyword_context_from: str | None = None
    """The id of the fact that lent the keyword score, when ``keyword_source`` is ``"context"``."""
    keyword_synonym: str | None = None
    """Which synonym matched ("grandmother for grandma"), when ``keyword_source`` is ``"synonym"``."""
    fused_position: int | None = Field(default=None, ge=1)
    """The fact's place (1-based) in the fused order before the cross-encoder re-read the head; ``None``
    when it was not re-read (no cross-encoder, or outside the head)."""
    supersedes: list[str] = Field(default_factory=list)
    links: list[Link] = Field(default_factory=list)
    provenance: Provenance = Field(default_factory=Provenance)


class BatchRecallResult(_Model):
    """The outcome of one query of a batch recall: hits, or an error message."""

    query: str
    hits: list[RecallHit] = Field(default_factory=list)
    error: str | None = None


class Revision(_Model):
    """Result of ``revise``: the replacement fact and the ids it superseded."""

    fact: Fact
    superseded_ids: list[str]


class MemoryStats(_Model):
    """Counts and ages of one namespace."""

    agent_id: str
    fact_count: int
    superseded_count: int
    alias_count: int
    pinned_count: int
    checkpoint_count: int
    link_count: int
    pending_embeddings: int
    oldest_at: datetime | None
    newest_at: datetime | None
    avg_weight: float


class ConsolidationReport(_Model):
    """What one consolidation cycle did to one namespace."""

    agent_id: str
    decayed: int
    pruned: list[str]
    summary_fact_id: str | None = None
    consumed_ids: list[str] = Field(default_factory=list)
    summariser: str | None = None
    summariser_error: str | None = None


class CompactReport(_Model):
    """What ``compact`` did to a store: its size on disk before and after (bytes; for PostgreSQL the
    graymatter tables with their indexes and TOAST)."""

    store: str
    bytes_before: int = Field(ge=0)
    bytes_after: int = Field(ge=0)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def bytes_returned(self) -> int:
        """Bytes the compaction gave back (0 when the store did not shrink)."""
        return max(0, self.bytes_before - self.bytes_after)


class ExportBundle(_Model):
    """The JSON export format; ``graymatter import`` reads it back (a lossless round trip)."""

    format: Literal["graymatter-export"] = "graymatter-export"
    version: Literal[1] = 1
    exported_at: datetime
    facts: list[Fact]
    checkpoints: list[Checkpoint]
    links: list[Link]


class ImportReport(_Model):
    """Counts of records added and skipped (already present) by an import."""

    facts_added: int
    facts_skipped: int
    checkpoints_added: int
    checkpoints_skipped: int
    links_added: int
    links_skipped: int
