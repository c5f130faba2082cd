"""The MCP wire contract as pydantic models: the single source of every published schema.

Argument models generate the tools' input schemas (flat objects: no ``anyOf``/``oneOf``/``allOf``, no
references) and validate every call on the server. Result models generate the output schemas (root
``"type": "object"``, every shape ``additionalProperties: false``, references inlined) and type the
structuredContent the tools send. Renaming a field is a breaking wire change.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, model_validator
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

from graymatter.constants import Confidence

MAX_TOP_K = 100
MAX_BATCH_QUERIES = 16

ConfidenceLabel = Confidence
ReflectAction = Literal["add", "update", "forget", "link", "pin", "unpin"]


# ----------------------------------------------------------------------------------------------------
# Schema generation: pydantic models are the single source; these generators shape what reaches the wire.
# ----------------------------------------------------------------------------------------------------


class _WireSchema(GenerateJsonSchema):
    """JSON Schema for the wire: no titles, optional fields published as their plain type (never nullable).

    Optional result fields are omitted from the payload when empty (``exclude_none``), so the schema lists
    them as not required instead of as ``anyOf [T, null]``; the input schemas stay flat the same way.
    """

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def model_schema(self, schema: core_schema.ModelSchema) -> JsonSchemaValue:
        generated = super().model_schema(schema)
        generated.pop("title", None)
        generated.pop("description", None)  # docstrings document Python, not the wire
        return generated

    def nullable_schema(self, schema: core_schema.NullableSchema) -> JsonSchemaValue:
        return self.generate_inner(schema["schema"])

    def default_schema(self, schema: core_schema.WithDefaultSchema) -> JsonSchemaValue:
        generated = super().default_schema(schema)
        if generated.get("default", 0) is None:
            generated.pop("default")
        return generated


class _OutputSchema(_WireSchema):
    """Output schemas carry no defaults: a result states every value it has."""

    def default_schema(self, schema: core_schema.WithDefaultSchema) -> JsonSchemaValue:
        return self.generate_inner(schema["schema"])


def _inline_refs(node: Any, defs: dict[str, Any]) -> Any:
    """Replace every local ``$ref`` by the definition it names, so no client has to resolve references."""
    if isinstance(node, list):
        return [_inline_refs(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = _inline_refs(defs[ref.removeprefix("#/$defs/")], defs)
        siblings = {k: _inline_refs(v, defs) for k, v in node.items() if k != "$ref"}
        return {**target, **siblings}
    return {k: _inline_refs(v, defs) for k, v in node.items() if k != "$defs"}


def output_schema_of(model: type[BaseModel]) -> dict[str, Any]:
    """The published output schema of a result model. Raises at import time if generation fails."""
    generated = model.model_json_schema(schema_generator=_OutputSchema, mode="serialization")
    schema: dict[str, Any] = _inline_refs(generated, generated.get("$defs", {}))
    if schema.get("type") != "object":
        raise TypeError(f"output schema of {model.__name__} must have a root object type")
    return schema


def input_schema_of(model: type[BaseModel]) -> dict[str, Any]:
    """The published input schema of an argument model (flat: no combinators anywhere)."""
    return model.model_json_schema(schema_generator=_WireSchema, mode="validation")


# ----------------------------------------------------------------------------------------------------
# Result models (structuredContent). Renaming a field is a breaking wire change.
# ----------------------------------------------------------------------------------------------------


class _Result(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FactResult(_Result):
    """One recalled fact."""

    id: str = Field(description="Fact id (ULID).")
    text: str = Field(description="The fact, word for word as stored.")
    score: float = Field(description="Final ranking score (higher is better).")
    created_at: str = Field(description="When the fact was written (RFC 3339, UTC).")
    confidence: ConfidenceLabel = Field(description="The writer's confidence label.")
    pinned: bool = Field(description="Pinned facts are exempt from decay and pruning.")
    relevance: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="How much of the query this fact covers, 0..1 (share of the query's informative words "
        "it contains, or semantic similarity); null for a query without informative words.",
    )


class FeedbackResult(_Result):
    """The weak-match block: present exactly when the best fact covers less than half of the query."""

    weak_match: Literal[True]
    best_relevance: float = Field(ge=0, le=1)
    matched_terms: list[str] = Field(description="Query words some returned fact contains.")
    unmatched_terms: list[str] = Field(description="Query words no returned fact contains.")
    suggested_terms: list[str] = Field(description="Words of the returned facts the query does not use.")
    action: Literal["memory_alias"] = Field(description="The tool that bridges vocabulary for next time.")
    message: str


class RanksResult(_Result):
    """Per-signal ranks (1-based, 0 = signal absent) and the fused reciprocal-rank score."""

    keyword_rank: int
    vector_rank: int
    recency_rank: int
    fused_score: float
    k: int


class RankingResult(_Result):
    """How the final score derives from the fused score: final = base × (1 + confidence_weight × c)."""

    base_score: float
    final_score: float
    factor: float
    confidence_weight: float
    effective_confidence: ConfidenceLabel
    policy: str


class LinkResult(_Result):
    """A typed edge between two named entities."""

    source: str
    target: str
    relation: str


class ReceiptResult(_Result):
    """Why a fact ranked where it did; recomputable from ``ranks`` and ``ranking``."""

    fact_id: str
    text: str
    weight: float
    age_days: float
    ranks: RanksResult
    ranking: RankingResult
    supersedes: list[str]
    links: list[LinkResult]
    interface: str = Field(description="Which interface wrote the fact (cli, mcp, rest, library, ...).")
    client: str | None = Field(default=None, description="The client program that wrote it, when known.")


class RetrievalResult(_Result):
    """The retrieval policy applied to this search."""

    min_confidence: ConfidenceLabel | None = None
    confidence_weight: float
    policy: Literal["confidence-v1"]


class MemorySearchResult(_Result):
    """structuredContent of memory_search."""

    agent_id: str
    query: str
    count: int = Field(description="Number of facts returned.")
    facts: list[FactResult]
    explained: list[ReceiptResult] | None = Field(default=None, description="Receipts, with explain=true.")
    retrieval: RetrievalResult
    feedback: FeedbackResult | None = Field(
        default=None, description="Present exactly when the match is weak: vocabulary hints and memory_alias."
    )


class QueryResult(_Result):
    """One query of a batch."""

    query: str
    count: int
    facts: list[FactResult]
    error: str | None = Field(default=None, description="Why this query failed; the others still ran.")


class MemorySearchBatchResult(_Result):
    """structuredContent of memory_search_batch."""

    agent_id: str
    count: int = Field(description="Number of distinct facts in merged.")
    merged: list[FactResult]
    per_query: list[QueryResult]


class MemoryAddResult(_Result):
    """structuredContent of memory_add."""

    agent_id: str
    stored: Literal[True]
    fact_id: str
    confidence: ConfidenceLabel


class MemoryAliasResult(_Result):
    """structuredContent of memory_alias."""

    agent_id: str
    term: str
    equivalents: list[str]
    stored: Literal[True]
    fact_id: str


class CheckpointSaveResult(_Result):
    """structuredContent of checkpoint_save."""

    agent_id: str
    checkpoint_id: str
    created_at: str


class CheckpointResumeResult(_Result):
    """structuredContent of checkpoint_resume when a checkpoint exists. Never declares found/agent_id."""

    id: str = Field(description="Checkpoint id (ULID).")
    created_at: str = Field(description="When it was saved (RFC 3339, UTC).")
    state: dict[str, Any] = Field(description="The saved state object, exactly as saved.")
    message_count: int | None = Field(default=None, description="Number of captured messages, when any.")


class CheckpointResumeEmpty(_Result):
    """structuredContent of checkpoint_resume with on_missing "empty" when the agent has no checkpoint.

    ``found`` has no default, so ``false`` is always serialised.
    """

    found: Annotated[Literal[False], WithJsonSchema({"type": "boolean", "enum": [False]})]
    agent_id: str


class MemoryReflectResult(_Result):
    """structuredContent of memory_reflect."""

    action: ReflectAction
    agent: str = Field(description="The namespace acted on (agent_id, or the deprecated agent alias).")
    ok: Literal[True]
    fact_id: str | None = Field(default=None, description="The fact written by add or update.")
    confidence: ConfidenceLabel | None = Field(default=None, description="Its confidence label.")
    affected_ids: list[str] = Field(description="Facts superseded, forgotten, pinned or unpinned.")
    link: LinkResult | None = Field(default=None, description="The edge recorded by link.")


def checkpoint_resume_output_schema() -> dict[str, Any]:
    """Root object whose only constraint is a two-branch oneOf: generated success branch, then absence."""
    return {
        "type": "object",
        "oneOf": [output_schema_of(CheckpointResumeResult), output_schema_of(CheckpointResumeEmpty)],
    }


# ----------------------------------------------------------------------------------------------------
# Argument models: they generate the published input schemas and validate every call on the server.
# ----------------------------------------------------------------------------------------------------


class ArgumentsModel(BaseModel):
    """Base of every tool's arguments. Strict: unknown keys, wrong types and explicit nulls are refused."""

    model_config = ConfigDict(extra="forbid", strict=True)

    @model_validator(mode="before")
    @classmethod
    def _no_nulls(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for key, value in data.items():
                if value is None and key in cls.model_fields:
                    raise ValueError(f"{key} must not be null")
        return data


AGENT_ID_DESCRIPTION = (
    "Your memory namespace: any non-blank string, used unchanged. Pass __shared__ for project-wide memory."
)
CONFIDENCE_DESCRIPTION = "Your confidence in the fact: verified, inferred (default) or unverified."
MinConfidence = Annotated[
    ConfidenceLabel | None, Field(description="Only return facts at or above this confidence label.")
]
ConfidenceWeight = Annotated[
    float, Field(ge=0.0, le=0.5, description="How strongly confidence labels adjust ranking (0 to 0.5).")
]


class MemorySearchArguments(ArgumentsModel):
    agent_id: str = Field(description=AGENT_ID_DESCRIPTION)
    query: str = Field(description="What you need to know, in natural language.")
    top_k: int = Field(default=8, ge=1, le=MAX_TOP_K, description="Maximum number of facts to return.")
    explain: bool = Field(default=False, description="Also return a ranking receipt for every fact.")
    min_confidence: MinConfidence = None
    confidence_weight: ConfidenceWeight = 0.0


class MemorySearchBatchArguments(ArgumentsModel):
    agent_id: str = Field(description=AGENT_ID_DESCRIPTION)
    queries: list[str] = Field(
        min_length=1,
        max_length=MAX_BATCH_QUERIES,
        description="Every open question, one per entry; blank entries are skipped.",
    )
    top_k: int = Field(default=8, ge=1, le=MAX_TOP_K, description="Maximum number of facts per query.")
    min_confidence: MinConfidence = None
    confidence_weight: ConfidenceWeight = 0.0


class MemoryAddArguments(ArgumentsModel):
    agent_id: str = Field(description=AGENT_ID_DESCRIPTION)
    text: str = Field(description="One atomic, self-contained sentence worth remembering.")
    confidence: ConfidenceLabel | None = Field(default=None, description=CONFIDENCE_DESCRIPTION)
    session: str | None = Field(
        default=None,
        max_length=200,
        description="The conversation this is a turn of (any id you keep for it); recall lends context "
        "only between turns of one session. Omit for standalone facts.",
    )


class MemoryAliasArguments(ArgumentsModel):
    agent_id: str = Field(description=AGENT_ID_DESCRIPTION)
    term: str = Field(description="The term searches should bridge from.")
    equivalents: list[str] = Field(min_length=1, description="Terms that mean the same as term here.")


class CheckpointSaveArguments(ArgumentsModel):
    agent_id: str = Field(description=AGENT_ID_DESCRIPTION)
    state: str | None = Field(
        default=None, description='A JSON object, as a string, describing where you are (default "{}").'
    )


class CheckpointResumeArguments(ArgumentsModel):
    agent_id: str = Field(description=AGENT_ID_DESCRIPTION)
    on_missing: Literal["error", "empty"] = Field(
        default="error",
        description='What to do when there is no checkpoint: "error" (a tool error) or "empty" '
        '(a successful {"found": false, "agent_id": ...} result).',
    )


class MemoryReflectArguments(ArgumentsModel):
    action: ReflectAction = Field(
        description="add a fact; update (target = exact old text, text = correction); forget, pin or unpin "
        "the fact whose exact text is target (or text); link entity text to entity target."
    )
    agent_id: str | None = Field(default=None, description=AGENT_ID_DESCRIPTION + " Canonical identity.")
    agent: str | None = Field(
        default=None, description="Deprecated alias of agent_id, kept for old callers; agent_id wins."
    )
    text: str | None = Field(default=None, description="New fact text (add, update) or source entity (link).")
    target: str | None = Field(
        default=None,
        description="Exact text of an existing fact (update, forget, pin, unpin) or target entity.",
    )
    relation: str | None = Field(default=None, description='Edge type for link (default "agent_link").')
    confidence: ConfidenceLabel | None = Field(
        default=None, description=CONFIDENCE_DESCRIPTION + " Only for add and update."
    )
