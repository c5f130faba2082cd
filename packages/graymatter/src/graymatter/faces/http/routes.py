"""The REST route table: one :class:`Route` per operation, the source of dispatch and of OpenAPI."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from graymatter.engine.access import current_principal
from graymatter.engine.feedback import weak_match_feedback
from graymatter.engine.memory_api import MemoryAPI
from graymatter.faces.http.wire import (
    AgentQuery,
    CheckpointList,
    CheckpointListQuery,
    CheckpointPath,
    CheckpointRequest,
    FactsQuery,
    FactsResponse,
    ForgetRequest,
    ForgetResponse,
    RecallQuery,
    RecallResponse,
    RememberRequest,
    ReviseRequest,
)
from graymatter.models import Checkpoint, Fact, RecallHit, Revision

Handler = Callable[[MemoryAPI, Any], BaseModel]
"""Runs one operation: the memory and the validated argument (body, query, or (query, path))."""


@dataclass(frozen=True)
class Route:
    """One REST operation: the single source of dispatch and of its OpenAPI entry."""

    method: str
    path: str
    operation_id: str
    summary: str
    handler: Handler
    response_model: type[BaseModel]
    query_model: type[BaseModel] | None = None
    body_model: type[BaseModel] | None = None
    path_model: type[BaseModel] | None = None
    status: int = 200
    errors: tuple[int, ...] = (401, 403, 422, 429, 503)

    def match(self, method: str, path: str) -> dict[str, str] | None:
        """The path parameters when ``method path`` is this route, else None."""
        if method != self.method:
            return None
        want = self.path.strip("/").split("/")
        got = path.strip("/").split("/")
        if len(want) != len(got):
            return None
        found: dict[str, str] = {}
        for w, g in zip(want, got, strict=True):
            if w.startswith("{"):
                if not g:
                    return None
                found[w[1:-1]] = g
            elif w != g:
                return None
        return found


def _rest_provenance() -> dict[str, Any]:
    principal = current_principal()
    return {"interface": "rest", "token_id": principal.token_id if principal else None}


def _remember(memory: MemoryAPI, body: RememberRequest) -> Fact:
    return memory.remember(
        body.agent_id,
        body.text,
        confidence=body.confidence,
        provenance=_rest_provenance(),
        session=body.session,
    )


def _recall(memory: MemoryAPI, query: RecallQuery) -> RecallResponse:
    if query.explain:
        explained = memory.recall_explain(query.agent_id, query.q, query.k, scope=query.scope)
        hits = [
            RecallHit.model_validate(e.model_dump(include=set(RecallHit.model_fields))) for e in explained
        ]
        return RecallResponse(
            results=hits, explanations=explained, feedback=weak_match_feedback(query.q, hits)
        )
    hits = memory.recall(query.agent_id, query.q, query.k, scope=query.scope)
    return RecallResponse(results=hits, feedback=weak_match_feedback(query.q, hits))


def _facts(memory: MemoryAPI, query: FactsQuery) -> FactsResponse:
    facts = memory.latest_facts(query.agent_id, query.limit, include_superseded=query.include_superseded)
    return FactsResponse(facts=facts)


def _revise(memory: MemoryAPI, body: ReviseRequest) -> Revision:
    return memory.revise(
        body.agent_id, body.old_text, body.new_text, confidence=body.confidence, provenance=_rest_provenance()
    )


def _forget(memory: MemoryAPI, body: ForgetRequest) -> ForgetResponse:
    return ForgetResponse(superseded_ids=memory.forget(body.agent_id, body.text))


def _checkpoint_save(memory: MemoryAPI, body: CheckpointRequest) -> Checkpoint:
    return memory.checkpoint_save(
        body.agent_id,
        body.state,
        messages=body.messages,
        metadata=body.metadata,
        provenance=_rest_provenance(),
    )


def _checkpoint_latest(memory: MemoryAPI, query: AgentQuery) -> Checkpoint:
    return memory.checkpoint_latest(query.agent_id)


def _checkpoint_list(memory: MemoryAPI, query: CheckpointListQuery) -> CheckpointList:
    return CheckpointList(checkpoints=memory.checkpoint_list(query.agent_id, query.limit))


def _checkpoint_get(memory: MemoryAPI, args: tuple[AgentQuery, CheckpointPath]) -> Checkpoint:
    query, path = args
    return memory.checkpoint_get(query.agent_id, path.checkpoint_id)


_WITH_404 = (401, 403, 404, 422, 429, 503)

ROUTES: tuple[Route, ...] = (
    Route("POST", "/remember", "remember", "Store a durable fact", _remember, Fact,
          body_model=RememberRequest, status=201),
    Route("GET", "/recall", "recall", "Recall the facts most relevant to a query", _recall, RecallResponse,
          query_model=RecallQuery),
    Route("GET", "/facts", "list_facts", "List an agent's facts, newest first", _facts, FactsResponse,
          query_model=FactsQuery),
    Route("POST", "/revise", "revise", "Replace a fact (the old one is tombstoned)", _revise, Revision,
          body_model=ReviseRequest, errors=(*_WITH_404, 409)),
    Route("POST", "/forget", "forget", "Tombstone a fact by exact text", _forget, ForgetResponse,
          body_model=ForgetRequest, errors=_WITH_404),
    Route("POST", "/checkpoints", "checkpoint_save", "Save a checkpoint", _checkpoint_save, Checkpoint,
          body_model=CheckpointRequest, status=201),
    Route("GET", "/checkpoints", "checkpoint_list", "List checkpoints, newest first", _checkpoint_list,
          CheckpointList, query_model=CheckpointListQuery),
    Route("GET", "/checkpoints/latest", "checkpoint_latest", "The newest checkpoint", _checkpoint_latest,
          Checkpoint, query_model=AgentQuery, errors=_WITH_404),
    Route("GET", "/checkpoints/{checkpoint_id}", "checkpoint_get", "One checkpoint by id", _checkpoint_get,
          Checkpoint, query_model=AgentQuery, path_model=CheckpointPath, errors=_WITH_404),
)  # fmt: skip
