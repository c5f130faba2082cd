"""The seven MCP tool bodies: call :class:`Memory` with validated arguments and shape the result.

Each body returns a result model from :mod:`graymatter.faces.mcp_server.schemas`, sent as structuredContent
and, as its compact JSON, as the text content (the server does both). A contract failure raises
:class:`graymatter.errors.ToolFailure`, whose message is sent word for word as a text-only ``isError``
result; other errors are worded by :mod:`graymatter.faces.mcp_server.failures`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from graymatter.constants import DEFAULT_RELATION
from graymatter.engine.feedback import weak_match_feedback
from graymatter.errors import GraymatterError, NoCheckpoint, NotFound, ToolFailure
from graymatter.faces.mcp_server.arguments import non_blank, parse_state, require_agent_id, required
from graymatter.faces.mcp_server.failures import first_line
from graymatter.faces.mcp_server.results import (
    fact_result,
    quote,
    receipt,
    resumed,
    rfc3339,
)
from graymatter.faces.mcp_server.schemas import (
    CheckpointResumeEmpty,
    CheckpointSaveResult,
    FactResult,
    FeedbackResult,
    LinkResult,
    MemoryAddResult,
    MemoryAliasResult,
    MemoryReflectResult,
    MemorySearchBatchResult,
    MemorySearchResult,
    QueryResult,
    ReceiptResult,
    RetrievalResult,
)

if TYPE_CHECKING:
    from graymatter.engine.memory_api import MemoryAPI
    from graymatter.faces.mcp_server.schemas import (
        CheckpointResumeArguments,
        CheckpointSaveArguments,
        MemoryAddArguments,
        MemoryAliasArguments,
        MemoryReflectArguments,
        MemorySearchArguments,
        MemorySearchBatchArguments,
    )
    from graymatter.models import Provenance, RecallHit

Outcome = dict[str, Any]


class GraymatterTools:
    """The seven tool bodies over one Memory; each returns its result model or raises ToolFailure."""

    def __init__(self, memory: MemoryAPI) -> None:
        self.memory = memory

    # -- searches -------------------------------------------------------------------------------------------

    def memory_search(self, args: MemorySearchArguments, provenance: Provenance) -> BaseModel:
        agent_id = require_agent_id(args.agent_id)
        query = non_blank(args.query, "query")
        top_k, floor, weight = args.top_k, args.min_confidence, args.confidence_weight
        explained: list[ReceiptResult] | None = None
        if args.explain:
            receipts = self.memory.recall_explain(
                agent_id, query, top_k=top_k, min_confidence=floor, confidence_weight=weight
            )
            facts = [fact_result(hit) for hit in receipts]
            explained = [receipt(hit) for hit in receipts]
            hits: Sequence[RecallHit] = receipts
        else:
            hits = self.memory.recall(
                agent_id, query, top_k=top_k, min_confidence=floor, confidence_weight=weight
            )
            facts = [fact_result(hit) for hit in hits]
        retrieval = RetrievalResult(
            min_confidence=args.min_confidence,
            confidence_weight=args.confidence_weight,
            policy="confidence-v1",
        )
        weak = weak_match_feedback(query, hits)
        payload = MemorySearchResult(
            agent_id=agent_id,
            query=query,
            count=len(facts),
            facts=facts,
            explained=explained,
            retrieval=retrieval,
            feedback=None if weak is None else FeedbackResult(**weak.model_dump()),
        )
        return payload

    def memory_search_batch(self, args: MemorySearchBatchArguments, provenance: Provenance) -> BaseModel:
        agent_id = require_agent_id(args.agent_id)
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
        per_query = [
            QueryResult(
                query=r.query, count=len(r.hits), facts=[fact_result(h) for h in r.hits], error=r.error
            )
            for r in results
        ]
        merged = _merge(per_query)
        payload = MemorySearchBatchResult(
            agent_id=agent_id, count=len(merged), merged=merged, per_query=per_query
        )
        return payload

    # -- writes ---------------------------------------------------------------------------------------------

    def memory_add(self, args: MemoryAddArguments, provenance: Provenance) -> BaseModel:
        agent_id = require_agent_id(args.agent_id)
        fact = self.memory.remember(
            agent_id,
            args.text,
            confidence=args.confidence or "inferred",
            provenance=provenance,
            session=args.session,
        )
        return MemoryAddResult(agent_id=agent_id, stored=True, fact_id=fact.id, confidence=fact.confidence)

    def memory_alias(self, args: MemoryAliasArguments, provenance: Provenance) -> BaseModel:
        agent_id = require_agent_id(args.agent_id)
        term = non_blank(args.term, "term")
        equivalents = [e for e in args.equivalents if e.strip()]
        if not equivalents:
            raise ToolFailure("equivalents must contain at least one non-blank term")
        fact = self.memory.alias(agent_id, term, equivalents, provenance=provenance)
        return MemoryAliasResult(
            agent_id=agent_id, term=term, equivalents=equivalents, stored=True, fact_id=fact.id
        )

    def checkpoint_save(self, args: CheckpointSaveArguments, provenance: Provenance) -> BaseModel:
        agent_id = require_agent_id(args.agent_id)
        state = parse_state(args.state)
        checkpoint = self.memory.checkpoint_save(
            agent_id, state, metadata={"source": "mcp"}, provenance=provenance
        )
        created = rfc3339(checkpoint.created_at)
        return CheckpointSaveResult(agent_id=agent_id, checkpoint_id=checkpoint.id, created_at=created)

    def checkpoint_resume(self, args: CheckpointResumeArguments, provenance: Provenance) -> BaseModel:
        agent_id = require_agent_id(args.agent_id)
        try:
            checkpoint = self.memory.checkpoint_latest_json(agent_id)
        except NoCheckpoint as exc:
            if args.on_missing == "empty":
                return CheckpointResumeEmpty(found=False, agent_id=agent_id)
            quoted = quote(agent_id)
            raise ToolFailure(
                f"no checkpoint found for agent {quoted}: no checkpoints for agent {quoted}"
            ) from exc
        except GraymatterError as exc:
            raise ToolFailure(f"checkpoint resume error: {first_line(str(exc))}") from exc
        return resumed(checkpoint)

    # -- memory_reflect -------------------------------------------------------------------------------------

    def memory_reflect(self, args: MemoryReflectArguments, provenance: Provenance) -> BaseModel:
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
        return MemoryReflectResult(action=action, agent=agent, ok=True, **act(agent, args, provenance))

    def _reflect_add(self, agent: str, args: MemoryReflectArguments, provenance: Provenance) -> Outcome:
        text = required(args.text, "text", "add")
        fact = self.memory.remember(
            agent, text, confidence=args.confidence or "inferred", provenance=provenance
        )
        return {"fact_id": fact.id, "confidence": fact.confidence, "affected_ids": []}

    def _reflect_update(self, agent: str, args: MemoryReflectArguments, provenance: Provenance) -> Outcome:
        old = required(args.target, "target", "update")
        new = required(args.text, "text", "update")
        try:
            revision = self.memory.revise(agent, old, new, confidence=args.confidence, provenance=provenance)
        except NotFound as exc:
            raise ToolFailure(f"target fact not found: {quote(old)}") from exc
        replaced = list(revision.superseded_ids)
        return {"fact_id": revision.fact.id, "confidence": revision.fact.confidence, "affected_ids": replaced}

    def _reflect_link(self, agent: str, args: MemoryReflectArguments, provenance: Provenance) -> Outcome:
        source = required(args.text, "text", "link")
        target = required(args.target, "target", "link")
        relation = args.relation or DEFAULT_RELATION
        edge = self.memory.link(agent, source, target, relation=relation, provenance=provenance)
        link = LinkResult(source=edge.source, target=edge.target, relation=edge.relation)
        return {"affected_ids": [], "link": link}

    def _reflect_exact_text(
        self, agent: str, args: MemoryReflectArguments, provenance: Provenance
    ) -> Outcome:
        """forget, pin and unpin: act on every live fact whose text is exactly ``target`` (else ``text``)."""
        action = args.action
        exact = required(args.target if args.target is not None else args.text, "target", action)
        operation: Callable[[str, str], list[str]] = getattr(self.memory, action)
        try:
            affected = list(operation(agent, exact))
        except NotFound as exc:
            raise ToolFailure(f"target fact not found: {quote(exact)}") from exc
        return {"affected_ids": affected}


def _merge(per_query: list[QueryResult]) -> list[FactResult]:
    """The batch's distinct facts: best rank first, then the most queries matched, then first seen."""
    best: dict[str, tuple[int, int, int, FactResult]] = {}  # id -> (best rank, -hits, first seen, fact)
    seen = 0
    for item in per_query:
        for rank, fact in enumerate(item.facts):
            if fact.id in best:
                old_rank, neg_hits, first, old = best[fact.id]
                best[fact.id] = (min(old_rank, rank), neg_hits - 1, first, old)
            else:
                best[fact.id] = (rank, -1, seen, fact)
                seen += 1
    return [entry[3] for entry in sorted(best.values(), key=lambda e: e[:3])]
