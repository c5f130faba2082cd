"""graymatter's MCP server: seven tools with strict, schema-validated structured results.

``build_server(memory)`` returns an :class:`mcp.server.mcpserver.MCPServer`. The wire contract lives here and
in docs/decisions/0001-checkpoint-resume-on-missing.md:

* every tool publishes a flat input schema and an output schema generated from the pydantic models below
  (root ``"type": "object"``, every result shape ``additionalProperties: false``);
* every success returns structuredContent that validates, plus equivalent text; every error is a text-only
  ``isError`` result with no structuredContent key;
* ``checkpoint_resume`` takes ``on_missing`` (``"error"`` default, or ``"empty"``) as ADR 0001 specifies.

Tool bodies are thin: they validate arguments, call :class:`graymatter.memory.Memory` and format the result.
The MCP SDK is imported only inside :func:`build_server`, so importing this module stays cheap.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, WithJsonSchema, model_validator
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

from graymatter import __version__
from graymatter.errors import GraymatterError, InvalidInput, NoCheckpoint, NotFound
from graymatter.models import Provenance

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer
    from mcp_types import CallToolResult

    from graymatter.memory import Memory
    from graymatter.models import Checkpoint, RecallExplanation, RecallHit

logger = logging.getLogger(__name__)

SERVER_NAME = "graymatter"

INSTRUCTIONS = (
    "graymatter is your durable memory across sessions. Follow this protocol.\n"
    '1. At session start call checkpoint_resume with on_missing "empty" to restore saved state, then '
    'memory_search for the task with your agent_id and again with agent_id "__shared__" for project-wide '
    "memory (memory_search_batch answers several questions in one call).\n"
    "2. Store each durable learning (decision, preference, gotcha) as one sentence with memory_add. "
    "Never store transcripts or secrets.\n"
    "3. When a stored fact is wrong or outdated, call memory_reflect with action update and the exact old "
    "text as target; never leave both versions live.\n"
    "4. In long sessions and before you stop, call checkpoint_save with a JSON object saying where you are.\n"
    "5. On a weak match, reformulate once, then declare lasting synonyms with memory_alias."
)
"""Static server instructions sent at initialize (never derived from stored data; ≤ 240 tokens)."""

ON_MISSING_ERROR = 'on_missing must be "error" or "empty"'
MAX_TOP_K = 100
MAX_BATCH_QUERIES = 16

ConfidenceLabel = Literal["verified", "inferred", "unverified"]
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
    schema = _inline_refs(generated, generated.get("$defs", {}))
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


class _Arguments(BaseModel):
    """Strict argument validation: unknown keys, wrong types and explicit nulls are refused."""

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


class MemorySearchArguments(_Arguments):
    agent_id: str = Field(description=AGENT_ID_DESCRIPTION)
    query: str = Field(description="What you need to know, in natural language.")
    top_k: int = Field(default=8, ge=1, le=MAX_TOP_K, description="Maximum number of facts to return.")
    explain: bool = Field(default=False, description="Also return a ranking receipt for every fact.")
    min_confidence: ConfidenceLabel | None = Field(
        default=None, description="Only return facts at or above this confidence label."
    )
    confidence_weight: float = Field(
        default=0.0, ge=0.0, le=0.5, description="How strongly confidence labels adjust ranking (0 to 0.5)."
    )


class MemorySearchBatchArguments(_Arguments):
    agent_id: str = Field(description=AGENT_ID_DESCRIPTION)
    queries: list[str] = Field(
        min_length=1,
        max_length=MAX_BATCH_QUERIES,
        description="Every open question, one per entry; blank entries are skipped.",
    )
    top_k: int = Field(default=8, ge=1, le=MAX_TOP_K, description="Maximum number of facts per query.")
    min_confidence: ConfidenceLabel | None = Field(
        default=None, description="Only return facts at or above this confidence label."
    )
    confidence_weight: float = Field(
        default=0.0, ge=0.0, le=0.5, description="How strongly confidence labels adjust ranking (0 to 0.5)."
    )


class MemoryAddArguments(_Arguments):
    agent_id: str = Field(description=AGENT_ID_DESCRIPTION)
    text: str = Field(description="One atomic, self-contained sentence worth remembering.")
    confidence: ConfidenceLabel | None = Field(default=None, description=CONFIDENCE_DESCRIPTION)


class MemoryAliasArguments(_Arguments):
    agent_id: str = Field(description=AGENT_ID_DESCRIPTION)
    term: str = Field(description="The term searches should bridge from.")
    equivalents: list[str] = Field(min_length=1, description="Terms that mean the same as term here.")


class CheckpointSaveArguments(_Arguments):
    agent_id: str = Field(description=AGENT_ID_DESCRIPTION)
    state: str | None = Field(
        default=None, description='A JSON object, as a string, describing where you are (default "{}").'
    )


class CheckpointResumeArguments(_Arguments):
    agent_id: str = Field(description=AGENT_ID_DESCRIPTION)
    on_missing: Literal["error", "empty"] = Field(
        default="error",
        description='What to do when there is no checkpoint: "error" (a tool error) or "empty" '
        '(a successful {"found": false, "agent_id": ...} result).',
    )


class MemoryReflectArguments(_Arguments):
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


# ----------------------------------------------------------------------------------------------------
# Tool definitions.
# ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolSpec:
    """Everything published about one tool."""

    name: str
    title: str
    description: str
    arguments: type[_Arguments]
    output_model: Any
    output_schema: dict[str, Any]
    read_only: bool


TOOL_SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="memory_search",
        title="Search agent memory",
        description=(
            "Search one agent's durable memory with hybrid recall (keyword, semantic and recency signals). "
            "Use it before answering anything earlier sessions may have settled: once with your agent_id and "
            'once with agent_id "__shared__" for project-wide memory. Returns a numbered list with a count '
            'header, or "No memories found" when nothing matches; superseded facts never appear. '
            "explain=true adds a ranking receipt per fact. Store new facts with memory_add, correct "
            "wrong ones with memory_reflect, and ask several questions at once with memory_search_batch."
        ),
        arguments=MemorySearchArguments,
        output_model=MemorySearchResult,
        output_schema=output_schema_of(MemorySearchResult),
        read_only=True,
    ),
    ToolSpec(
        name="memory_search_batch",
        title="Search agent memory with several queries at once",
        description=(
            "Search one agent's durable memory with several queries in one call; put every open question "
            "in one call. Ranking per query is identical to memory_search. Use it at session start or "
            "before a task that touches several topics. Returns each query's facts plus a merged, "
            "de-duplicated list (best rank first); a failing query reports its error and the others still "
            "answer. Errors when no query is given."
        ),
        arguments=MemorySearchBatchArguments,
        output_model=MemorySearchBatchResult,
        output_schema=output_schema_of(MemorySearchBatchResult),
        read_only=True,
    ),
    ToolSpec(
        name="memory_add",
        title="Store a durable fact",
        description=(
            "Store one durable fact: a decision, preference, constraint or gotcha, as one atomic sentence. "
            "Use it whenever you learn something a later session should know; do not store transcripts or "
            "secrets. Returns the new fact id and its confidence label. To correct or retire a stored fact "
            "use memory_reflect instead of adding a contradiction. Errors on blank or oversized text."
        ),
        arguments=MemoryAddArguments,
        output_model=MemoryAddResult,
        output_schema=output_schema_of(MemoryAddResult),
        read_only=False,
    ),
    ToolSpec(
        name="memory_alias",
        title="Teach the store a vocabulary alias",
        description=(
            "Declare that a term and its equivalents mean the same thing in one agent's vocabulary, so "
            "later memory_search calls bridge them. Use it after a weak match when you know a lasting "
            "synonym. Aliases are never returned as memories; declaring again adds another alias. Returns "
            "the stored alias and its id."
        ),
        arguments=MemoryAliasArguments,
        output_model=MemoryAliasResult,
        output_schema=output_schema_of(MemoryAliasResult),
        read_only=False,
    ),
    ToolSpec(
        name="checkpoint_save",
        title="Save a session checkpoint",
        description=(
            "Persist a session checkpoint: a JSON object describing where you are (task, progress, next "
            "steps). Use it in long sessions and before you stop; checkpoint_resume loads the latest one "
            "next time. Every save is kept under a new id. Returns the checkpoint id and creation time. "
            "Errors when state is not a JSON object."
        ),
        arguments=CheckpointSaveArguments,
        output_model=CheckpointSaveResult,
        output_schema=output_schema_of(CheckpointSaveResult),
        read_only=False,
    ),
    ToolSpec(
        name="checkpoint_resume",
        title="Load the latest checkpoint",
        description=(
            "Read the latest checkpoint saved with checkpoint_save for an agent. Use it at session start. "
            "Returns the checkpoint id, creation time and saved state. When the agent has none: with "
            'on_missing "error" (default) it is a tool error; with on_missing "empty" it is a success '
            '{"found": false, "agent_id": ...}. Storage failures are always errors.'
        ),
        arguments=CheckpointResumeArguments,
        output_model=CheckpointResumeResult | CheckpointResumeEmpty,
        output_schema=checkpoint_resume_output_schema(),
        read_only=True,
    ),
    ToolSpec(
        name="memory_reflect",
        title="Curate your own memory",
        description=(
            "Curate your own memory: add a fact, update a wrong one (the old text is superseded, never "
            "deleted), forget, pin or unpin facts by exact text, or link two named entities. Use it when a "
            "stored fact is wrong, outdated or vital; plain new facts go to memory_add. Identify yourself "
            "with agent_id (agent is a deprecated alias). Returns what changed. Errors when the target text "
            "matches no live fact."
        ),
        arguments=MemoryReflectArguments,
        output_model=MemoryReflectResult,
        output_schema=output_schema_of(MemoryReflectResult),
        read_only=False,
    ),
)

TOOL_NAMES: tuple[str, ...] = tuple(spec.name for spec in TOOL_SPECS)


# ----------------------------------------------------------------------------------------------------
# Tool bodies.
# ----------------------------------------------------------------------------------------------------


class ToolFailure(Exception):
    """A tool error whose message is sent to the caller word for word (text-only ``isError``)."""


def _rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _fact_result(hit: RecallHit) -> FactResult:
    return FactResult(
        id=hit.id,
        text=hit.text,
        score=hit.score,
        created_at=_rfc3339(hit.created_at),
        confidence=hit.confidence,
        pinned=hit.pinned,
    )


def _receipt(hit: RecallExplanation) -> ReceiptResult:
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


def _fact_lines(facts: list[FactResult]) -> list[str]:
    return [f"{i}. {f.text} (id {f.id}, score {f.score:.4f})" for i, f in enumerate(facts, 1)]


def _quote(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


def _first_line(message: str) -> str:
    return message.strip().splitlines()[0] if message.strip() else "unknown error"


class GraymatterTools:
    """The seven tool bodies over one Memory; each returns ``(payload, text)`` or raises ToolFailure."""

    def __init__(self, memory: Memory) -> None:
        self.memory = memory

    # -- searches -------------------------------------------------------------------------------------------

    def memory_search(self, args: MemorySearchArguments, provenance: Provenance) -> tuple[BaseModel, str]:
        agent_id = _agent_id(args.agent_id)
        query = _non_blank(args.query, "query")
        options = {"min_confidence": args.min_confidence, "confidence_weight": args.confidence_weight}
        explained: list[ReceiptResult] | None = None
        if args.explain:
            receipts = self.memory.recall_explain(agent_id, query, top_k=args.top_k, **options)
            facts = [_fact_result(hit) for hit in receipts]
            explained = [_receipt(hit) for hit in receipts]
        else:
            facts = [
                _fact_result(hit) for hit in self.memory.recall(agent_id, query, top_k=args.top_k, **options)
            ]
        retrieval = RetrievalResult(
            min_confidence=args.min_confidence,
            confidence_weight=args.confidence_weight,
            policy="confidence-v1",
        )
        payload = MemorySearchResult(
            agent_id=agent_id,
            query=query,
            count=len(facts),
            facts=facts,
            explained=explained,
            retrieval=retrieval,
        )
        if not facts:
            return payload, f"No memories found for agent {_quote(agent_id)} matching {_quote(query)}."
        noun = "memory" if len(facts) == 1 else "memories"
        lines = [f"Found {len(facts)} relevant {noun} for agent {_quote(agent_id)}:", "", *_fact_lines(facts)]
        if explained:
            lines += ["", "Receipts:"]
            lines += [
                f"{i}. keyword_rank {r.ranks.keyword_rank}, vector_rank {r.ranks.vector_rank}, "
                f"recency_rank {r.ranks.recency_rank}, fused {r.ranks.fused_score:.6f}, "
                f"final {r.ranking.final_score:.6f}, written by {r.interface}"
                for i, r in enumerate(explained, 1)
            ]
        return payload, "\n".join(lines)

    def memory_search_batch(
        self, args: MemorySearchBatchArguments, provenance: Provenance
    ) -> tuple[BaseModel, str]:
        agent_id = _agent_id(args.agent_id)
        queries = [q for q in args.queries if q.strip()]
        if not queries:
            raise ToolFailure("queries must contain at least one non-blank query")
        results = self.memory.recall_batch(
            agent_id,
            queries,
            top_k=args.top_k,
            min_confidence=args.min_confidence,
            confidence_weight=args.confidence_weight,
        )
        per_query: list[QueryResult] = []
        best: dict[str, tuple[int, int, int, FactResult]] = {}  # id -> (best rank, -hits, first seen, fact)
        seen = 0
        for result in results:
            facts = [_fact_result(hit) for hit in result.hits]
            per_query.append(
                QueryResult(query=result.query, count=len(facts), facts=facts, error=result.error)
            )
            for rank, fact in enumerate(facts):
                if fact.id in best:
                    old_rank, neg_hits, first, old = best[fact.id]
                    best[fact.id] = (min(old_rank, rank), neg_hits - 1, first, old)
                else:
                    best[fact.id] = (rank, -1, seen, fact)
                    seen += 1
        merged = [entry[3] for entry in sorted(best.values(), key=lambda e: e[:3])]
        payload = MemorySearchBatchResult(
            agent_id=agent_id, count=len(merged), merged=merged, per_query=per_query
        )
        lines = [
            f"Found {len(merged)} distinct memories for agent {_quote(agent_id)} across {len(per_query)} "
            "queries."
        ]
        for item in per_query:
            lines += ["", f"Query {_quote(item.query)}: {item.count} found"]
            if item.error:
                lines.append(f"  error: {item.error}")
            lines += ["  " + line for line in _fact_lines(item.facts)]
        return payload, "\n".join(lines)

    # -- writes ---------------------------------------------------------------------------------------------

    def memory_add(self, args: MemoryAddArguments, provenance: Provenance) -> tuple[BaseModel, str]:
        agent_id = _agent_id(args.agent_id)
        fact = self.memory.remember(
            agent_id, args.text, confidence=args.confidence or "inferred", provenance=provenance
        )
        payload = MemoryAddResult(agent_id=agent_id, stored=True, fact_id=fact.id, confidence=fact.confidence)
        return payload, (
            f"Memory stored for agent {_quote(agent_id)} (fact {fact.id}, confidence {fact.confidence})."
        )

    def memory_alias(self, args: MemoryAliasArguments, provenance: Provenance) -> tuple[BaseModel, str]:
        agent_id = _agent_id(args.agent_id)
        term = _non_blank(args.term, "term")
        equivalents = [e for e in args.equivalents if e.strip()]
        if not equivalents:
            raise ToolFailure("equivalents must contain at least one non-blank term")
        fact = self.memory.alias(agent_id, term, equivalents, provenance=provenance)
        payload = MemoryAliasResult(
            agent_id=agent_id, term=term, equivalents=equivalents, stored=True, fact_id=fact.id
        )
        joined = ", ".join(_quote(e) for e in equivalents)
        return (
            payload,
            f"Alias stored for agent {_quote(agent_id)}: {_quote(term)} = {joined} (fact {fact.id}).",
        )

    def checkpoint_save(self, args: CheckpointSaveArguments, provenance: Provenance) -> tuple[BaseModel, str]:
        agent_id = _agent_id(args.agent_id)
        state = _parse_state(args.state)
        checkpoint = self.memory.checkpoint_save(
            agent_id, state, metadata={"source": "mcp"}, provenance=provenance
        )
        created = _rfc3339(checkpoint.created_at)
        payload = CheckpointSaveResult(agent_id=agent_id, checkpoint_id=checkpoint.id, created_at=created)
        return payload, f"Checkpoint {_quote(checkpoint.id)} saved for agent {_quote(agent_id)} at {created}."

    def checkpoint_resume(
        self, args: CheckpointResumeArguments, provenance: Provenance
    ) -> tuple[BaseModel, str]:
        agent_id = _agent_id(args.agent_id)
        try:
            checkpoint = self.memory.checkpoint_latest(agent_id)
        except NoCheckpoint as exc:
            if args.on_missing == "empty":
                empty = CheckpointResumeEmpty(found=False, agent_id=agent_id)
                return empty, f"No checkpoint saved for agent {_quote(agent_id)} yet."
            quoted = _quote(agent_id)
            raise ToolFailure(
                f"no checkpoint found for agent {quoted}: no checkpoints for agent {quoted}"
            ) from exc
        except GraymatterError as exc:
            raise ToolFailure(f"checkpoint resume error: {_first_line(str(exc))}") from exc
        return _resumed(checkpoint)

    def memory_reflect(self, args: MemoryReflectArguments, provenance: Provenance) -> tuple[BaseModel, str]:
        agent = args.agent_id if args.agent_id is not None else args.agent
        assert agent is not None  # _reflect_identity guarantees it
        action = args.action
        if args.confidence is not None and action not in ("add", "update"):
            raise ToolFailure(f'confidence is not supported by memory_reflect action "{action}"')
        if args.relation is not None and action != "link":
            raise ToolFailure(f'relation is not supported by memory_reflect action "{action}"')
        fact_id: str | None = None
        confidence: str | None = None
        affected: list[str] = []
        link: LinkResult | None = None
        if action == "add":
            new_text = _required(args.text, "text", action)
            label = args.confidence or "inferred"
            fact = self.memory.remember(agent, new_text, confidence=label, provenance=provenance)
            fact_id, confidence = fact.id, fact.confidence
            text = f"Added fact for agent {_quote(agent)} (fact {fact.id})."
        elif action == "update":
            old = _required(args.target, "target", action)
            new = _required(args.text, "text", action)
            try:
                revision = self.memory.revise(
                    agent, old, new, confidence=args.confidence, provenance=provenance
                )
            except NotFound as exc:
                raise ToolFailure(f"target fact not found: {_quote(old)}") from exc
            fact_id, confidence = revision.fact.id, revision.fact.confidence
            affected = list(revision.superseded_ids)
            text = (
                f"Updated fact for agent {_quote(agent)}: "
                f"{len(affected)} superseded by fact {revision.fact.id}."
            )
        elif action == "link":
            source = _required(args.text, "text", action)
            target = _required(args.target, "target", action)
            edge = self.memory.link(
                agent, source, target, relation=args.relation or "agent_link", provenance=provenance
            )
            link = LinkResult(source=edge.source, target=edge.target, relation=edge.relation)
            text = (
                f"Linked {_quote(edge.source)} → {_quote(edge.target)} ({edge.relation}) "
                f"for agent {_quote(agent)}."
            )
        else:
            exact = args.target if args.target is not None else args.text
            exact = _required(exact, "target", action)
            operation: Callable[..., list[str]] = getattr(self.memory, action)
            try:
                affected = list(operation(agent, exact))
            except NotFound as exc:
                raise ToolFailure(f"target fact not found: {_quote(exact)}") from exc
            if action == "forget":
                text = f"Fact suppressed for agent {_quote(agent)} ({len(affected)} matching)."
            else:
                text = (
                    f"Fact {action} for agent {_quote(agent)} ({len(affected)} matching). "
                    "Pinned facts are exempt from decay, pruning and summarisation."
                )
        payload = MemoryReflectResult(
            action=action,
            agent=agent,
            ok=True,
            fact_id=fact_id,
            confidence=confidence,
            affected_ids=affected,
            link=link,
        )
        return payload, text


def _resumed(checkpoint: Checkpoint) -> tuple[BaseModel, str]:
    created = _rfc3339(checkpoint.created_at)
    count = checkpoint.message_count or None
    payload = CheckpointResumeResult(
        id=checkpoint.id, created_at=created, state=checkpoint.state, message_count=count
    )
    state = json.dumps(checkpoint.state, indent=2, ensure_ascii=False, sort_keys=False)
    text = (
        f"Checkpoint {_quote(checkpoint.id)} restored for agent {_quote(checkpoint.agent_id)}.\n"
        f"Created: {created}\nState:\n{state}\n"
    )
    if count:
        text += f"Messages: {count} turns\n"
    return payload, text


def _agent_id(value: str) -> str:
    if not value.strip():
        raise ToolFailure("agent_id is required")
    return value


def _non_blank(value: str, name: str) -> str:
    if not value.strip():
        raise ToolFailure(f"{name} must not be blank")
    return value


def _required(value: str | None, name: str, action: str) -> str:
    if value is None or not value.strip():
        raise ToolFailure(f'{name} is required for memory_reflect action "{action}"')
    return value


def _parse_state(raw: str | None) -> dict[str, Any]:
    if raw is None:
        return {}
    try:
        state = json.loads(raw, parse_constant=_reject_constant)
    except ValueError as exc:
        raise ToolFailure(f"state must be valid JSON: {exc}") from exc
    if not isinstance(state, dict):
        raise ToolFailure(f"state must be valid JSON: a JSON object is required, got {type(state).__name__}")
    return state


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not valid JSON")


def _reflect_identity(arguments: dict[str, Any]) -> None:
    """ADR-014 identity rules, checked before anything else touches the store."""
    given = [key for key in ("agent_id", "agent") if key in arguments]
    if not given:
        raise ToolFailure("agent_id is required")
    for key in given:
        value = arguments[key]
        if not isinstance(value, str) or not value.strip():
            raise ToolFailure(f"{key} must be a non-blank string")


def _validation_message(tool: str, exc: ValidationError) -> str:
    parts = []
    for error in exc.errors(include_url=False, include_input=False):
        where = ".".join(str(p) for p in error["loc"])
        message = error["msg"].removeprefix("Value error, ")
        parts.append(f"{where}: {message}" if where else message)
    return f"invalid arguments for {tool}: " + "; ".join(parts)


def validate_arguments(spec: ToolSpec, arguments: dict[str, Any]) -> _Arguments:
    """Apply the contract's argument rules, then the strict argument model; raise ToolFailure on misuse."""
    if spec.name == "checkpoint_resume" and "on_missing" in arguments:
        value = arguments["on_missing"]
        if not (isinstance(value, str) and value in ("error", "empty")):
            raise ToolFailure(ON_MISSING_ERROR)
    if spec.name == "memory_reflect":
        _reflect_identity(arguments)
    agent_id = arguments.get("agent_id")
    if spec.name != "memory_reflect" and (
        agent_id is None or (isinstance(agent_id, str) and not agent_id.strip())
    ):
        raise ToolFailure("agent_id is required")
    try:
        return spec.arguments.model_validate(arguments)
    except ValidationError as exc:
        raise ToolFailure(_validation_message(spec.name, exc)) from exc


def _error_text(spec: ToolSpec, exc: Exception) -> str:
    if isinstance(exc, ToolFailure):
        return str(exc)
    if isinstance(exc, NotFound | InvalidInput):
        return _first_line(str(exc))
    if isinstance(exc, GraymatterError):
        return f"{spec.name.replace('_', ' ')} error: {_first_line(str(exc))}"
    logger.exception("tool %s failed unexpectedly", spec.name)
    return f"{spec.name.replace('_', ' ')} error: internal error ({type(exc).__name__}); see the server log"


# ----------------------------------------------------------------------------------------------------
# Server assembly.
# ----------------------------------------------------------------------------------------------------


def _tool_call_result(payload: BaseModel | None, text: str, *, error: bool = False) -> CallToolResult:
    from mcp_types import CallToolResult, TextContent

    content = [TextContent(type="text", text=text)]
    if error or payload is None:
        return CallToolResult(content=content, is_error=True)
    return CallToolResult(
        content=content, structured_content=payload.model_dump(mode="json", exclude_none=True)
    )


def _client_provenance(ctx: Any) -> Provenance:
    client: str | None = None
    try:
        params = ctx.session.client_params
        if params is not None and params.client_info is not None:
            info = params.client_info
            client = f"{info.name}/{info.version}" if info.version else info.name
    except (AttributeError, ValueError, RuntimeError):
        client = None
    return Provenance(interface="mcp", client=client)


def build_server(memory: Memory, *, instructions: str | None = INSTRUCTIONS) -> MCPServer:
    """A fresh MCP server exposing the seven tools over ``memory``. Transport is chosen by the caller."""
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.tools import Tool
    from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
    from mcp_types import ToolAnnotations

    class RawArguments(ArgModelBase):
        """Hands the tool body the arguments exactly as sent; validation happens in the body."""

        model_config = ConfigDict(extra="allow", arbitrary_types_allowed=True)

        def model_dump_one_level(self) -> dict[str, Any]:
            return {"arguments": dict(self.model_extra or {})}

    tools = GraymatterTools(memory)

    def make_body(spec: ToolSpec) -> Callable[..., CallToolResult]:
        method = getattr(tools, spec.name)

        def body(arguments: dict[str, Any], ctx: Context) -> CallToolResult:
            try:
                parsed = validate_arguments(spec, arguments)
                payload, text = method(parsed, _client_provenance(ctx))
            except Exception as exc:  # every failure becomes a text-only tool error
                return _tool_call_result(None, _error_text(spec, exc), error=True)
            return _tool_call_result(payload, text)

        body.__name__ = spec.name
        return body

    registered = []
    for spec in TOOL_SPECS:
        annotations = ToolAnnotations(
            title=spec.title,
            read_only_hint=spec.read_only,
            destructive_hint=False,
            idempotent_hint=spec.read_only,
            open_world_hint=False,
        )
        metadata = FuncMetadata(
            arg_model=RawArguments, output_schema=spec.output_schema, output_model=spec.output_model
        )
        registered.append(
            Tool(
                fn=make_body(spec),
                name=spec.name,
                title=spec.title,
                description=spec.description,
                parameters=input_schema_of(spec.arguments),
                fn_metadata=metadata,
                is_async=False,
                context_kwarg="ctx",
                annotations=annotations,
            )
        )
    return MCPServer(
        SERVER_NAME, instructions=instructions, version=__version__, tools=registered, log_level="WARNING"
    )


def estimate_tokens(text: str) -> float:
    """The instructions budget estimator: words × 1.33."""
    return len(text.split()) * 1.33


__all__ = [
    "INSTRUCTIONS",
    "ON_MISSING_ERROR",
    "SERVER_NAME",
    "TOOL_NAMES",
    "TOOL_SPECS",
    "build_server",
    "checkpoint_resume_output_schema",
    "estimate_tokens",
    "validate_arguments",
]


# ----------------------------------------------------------------------------------------------------
# Streamable HTTP.
# ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class McpHttpApp:
    """The MCP streamable-HTTP ASGI app for one Memory.

    ``app`` serves MCP at ``path`` and runs its own session manager in its lifespan when served directly.
    When mounted inside another ASGI app, enter ``lifespan()`` from the parent's lifespan instead (mounted
    apps do not receive lifespan events). Put :class:`graymatter.http_security.SecurityMiddleware` in front.
    """

    app: Any
    path: str
    lifespan: Callable[[], Any]


def mcp_http_app(memory: Memory, *, path: str = "/mcp", stateless: bool = False) -> McpHttpApp:
    """Build the MCP streamable-HTTP app; ``stateless=True`` suits several servers behind a load balancer.

    Host/Origin checks, auth and the body cap belong to the shared security middleware, so the SDK's own
    loopback-only DNS-rebinding check is switched off here (it would refuse a load balancer's Host).
    """
    from mcp.server.transport_security import TransportSecuritySettings

    server = build_server(memory)
    app = server.streamable_http_app(
        streamable_http_path=path,
        stateless_http=stateless,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    return McpHttpApp(app=app, path=path, lifespan=lambda: server.session_manager.run())
