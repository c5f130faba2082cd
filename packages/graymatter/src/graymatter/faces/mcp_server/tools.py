"""The seven MCP tool bodies: validate the raw arguments, call :class:`Memory`, shape the result.

Each body returns ``(payload, text)``: a result model from :mod:`graymatter.faces.mcp_server.schemas` (sent as
structuredContent) and the equivalent text the model reads. Every failure raises :class:`ToolFailure`
whose message is sent word for word as a text-only ``isError`` result.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from graymatter.errors import GraymatterError, InvalidInput, NoCheckpoint, NotFound, ToolFailure
from graymatter.faces.mcp_server.schemas import (
    ArgumentsModel,
    CheckpointResumeArguments,
    CheckpointResumeEmpty,
    CheckpointResumeResult,
    CheckpointSaveArguments,
    CheckpointSaveResult,
    FactResult,
    LinkResult,
    MemoryAddArguments,
    MemoryAddResult,
    MemoryAliasArguments,
    MemoryAliasResult,
    MemoryReflectArguments,
    MemoryReflectResult,
    MemorySearchArguments,
    MemorySearchBatchArguments,
    MemorySearchBatchResult,
    MemorySearchResult,
    QueryResult,
    RankingResult,
    RanksResult,
    ReceiptResult,
    RetrievalResult,
)
from graymatter.models import Provenance

if TYPE_CHECKING:
    from graymatter.engine.memory import Memory
    from graymatter.models import Checkpoint, RecallExplanation, RecallHit

logger = logging.getLogger(__name__)

ON_MISSING_ERROR = 'on_missing must be "error" or "empty"'


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
    """One numbered line per fact, carrying every field of its structured form."""
    return [
        f"{i}. {f.text} (id {f.id}, score {f.score:.4f}, {f.confidence}{', pinned' if f.pinned else ''}, "
        f"written {f.created_at})"
        for i, f in enumerate(facts, 1)
    ]


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
        if agent is None:  # validate_arguments already refused this; kept for the type checker
            raise ToolFailure("agent_id is required")
        action = args.action
        if args.confidence is not None and action not in ("add", "update"):
            raise ToolFailure(f'confidence is not supported by memory_reflect action "{action}"')
        if args.relation is not None and action != "link":
            raise ToolFailure(f'relation is not supported by memory_reflect action "{action}"')
        act = {"add": self._reflect_add, "update": self._reflect_update, "link": self._reflect_link}.get(
            action, self._reflect_exact_text
        )
        outcome, text = act(agent, args, provenance)
        payload = MemoryReflectResult(action=action, agent=agent, ok=True, **outcome)
        return payload, text

    def _reflect_add(
        self, agent: str, args: MemoryReflectArguments, provenance: Provenance
    ) -> tuple[dict[str, Any], str]:
        text = _required(args.text, "text", "add")
        fact = self.memory.remember(
            agent, text, confidence=args.confidence or "inferred", provenance=provenance
        )
        outcome = {"fact_id": fact.id, "confidence": fact.confidence, "affected_ids": []}
        return outcome, f"Added fact for agent {_quote(agent)} (fact {fact.id})."

    def _reflect_update(
        self, agent: str, args: MemoryReflectArguments, provenance: Provenance
    ) -> tuple[dict[str, Any], str]:
        old = _required(args.target, "target", "update")
        new = _required(args.text, "text", "update")
        try:
            revision = self.memory.revise(agent, old, new, confidence=args.confidence, provenance=provenance)
        except NotFound as exc:
            raise ToolFailure(f"target fact not found: {_quote(old)}") from exc
        replaced = list(revision.superseded_ids)
        outcome = {
            "fact_id": revision.fact.id,
            "confidence": revision.fact.confidence,
            "affected_ids": replaced,
        }
        text = (
            f"Updated fact for agent {_quote(agent)}: {len(replaced)} superseded by fact {revision.fact.id}."
        )
        return outcome, text

    def _reflect_link(
        self, agent: str, args: MemoryReflectArguments, provenance: Provenance
    ) -> tuple[dict[str, Any], str]:
        source = _required(args.text, "text", "link")
        target = _required(args.target, "target", "link")
        relation = args.relation or "agent_link"
        edge = self.memory.link(agent, source, target, relation=relation, provenance=provenance)
        link = LinkResult(source=edge.source, target=edge.target, relation=edge.relation)
        arrow = f"{_quote(edge.source)} → {_quote(edge.target)}"
        text = f"Linked {arrow} ({edge.relation}) for agent {_quote(agent)}."
        return {"affected_ids": [], "link": link}, text

    def _reflect_exact_text(
        self, agent: str, args: MemoryReflectArguments, provenance: Provenance
    ) -> tuple[dict[str, Any], str]:
        """forget, pin and unpin: act on every live fact whose text is exactly ``target`` (else ``text``)."""
        action = args.action
        exact = _required(args.target if args.target is not None else args.text, "target", action)
        operation: Callable[[str, str], list[str]] = getattr(self.memory, action)
        try:
            affected = list(operation(agent, exact))
        except NotFound as exc:
            raise ToolFailure(f"target fact not found: {_quote(exact)}") from exc
        if action == "forget":
            return {
                "affected_ids": affected
            }, f"Fact suppressed for agent {_quote(agent)} ({len(affected)} matching)."
        text = (
            f"Fact {action} for agent {_quote(agent)} ({len(affected)} matching). "
            "Pinned facts are exempt from decay, pruning and summarisation."
        )
        return {"affected_ids": affected}, text


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


def validate_arguments(tool: str, model: type[ArgumentsModel], arguments: dict[str, Any]) -> ArgumentsModel:
    """Apply the contract's argument rules, then the strict argument model; raise ToolFailure on misuse.

    The checks whose texts are part of the contract (``on_missing``, reflect identity, ``agent_id``) run
    first, so a caller never sees a generic validation message for them.
    """
    if tool == "checkpoint_resume" and "on_missing" in arguments:
        value = arguments["on_missing"]
        if not (isinstance(value, str) and value in ("error", "empty")):
            raise ToolFailure(ON_MISSING_ERROR)
    if tool == "memory_reflect":
        _reflect_identity(arguments)
    else:
        agent_id = arguments.get("agent_id")
        if agent_id is None or (isinstance(agent_id, str) and not agent_id.strip()):
            raise ToolFailure("agent_id is required")
    try:
        return model.model_validate(arguments)
    except ValidationError as exc:
        raise ToolFailure(_validation_message(tool, exc)) from exc


def error_text(tool: str, exc: Exception) -> str:
    """One-line text of a failed call: contract texts verbatim, engine errors prefixed, crashes generic."""
    if isinstance(exc, ToolFailure):
        return str(exc)
    if isinstance(exc, NotFound | InvalidInput):
        return _first_line(str(exc))
    if isinstance(exc, GraymatterError):
        return f"{tool.replace('_', ' ')} error: {_first_line(str(exc))}"
    logger.exception("tool %s failed unexpectedly", tool)
    return f"{tool.replace('_', ' ')} error: internal error ({type(exc).__name__}); see the server log"
