"""The REST wire models: every request and response body of the HTTP service, as pydantic models."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from graymatter.constants import Confidence
from graymatter.models import Checkpoint, Fact, RecallExplanation, RecallFeedback, RecallHit, RecallScope


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AgentQuery(_In):
    agent_id: str = Field(
        min_length=1, description="Agent namespace (used unchanged; __shared__ = project-wide)."
    )


class RememberRequest(AgentQuery):
    text: str = Field(min_length=1, description="The fact to store.")
    confidence: Confidence = "inferred"
    session: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        description="The conversation this fact is a turn of; recall lends context only within a session.",
    )


class RecallQuery(AgentQuery):
    q: str = Field(default="", description="Natural-language query; empty = most recent facts.")
    k: int = Field(default=8, ge=1, le=100, description="Number of results (top-k).")
    scope: RecallScope = Field(default="agent", description="agent, shared (__shared__) or all (both fused).")
    explain: bool = Field(default=False, description="Include per-signal ranks and the score derivation.")


class FactsQuery(AgentQuery):
    limit: int = Field(default=50, ge=1, le=1000, description="At most this many facts, newest first.")
    include_superseded: bool = Field(
        default=True, description="Include tombstoned (revised/forgotten) facts."
    )


class ReviseRequest(AgentQuery):
    old_text: str = Field(min_length=1, description="Exact text of the live fact(s) to replace.")
    new_text: str = Field(min_length=1, description="The replacement fact.")
    confidence: Confidence | None = None


class ForgetRequest(AgentQuery):
    text: str = Field(
        min_length=1, description="Exact text of the live fact(s) to tombstone (never deleted)."
    )


class CheckpointRequest(AgentQuery):
    state: dict[str, Any] = Field(default_factory=dict, description="The session state (a JSON object).")
    messages: list[Any] | None = Field(default=None, description="Optional message history.")
    metadata: dict[str, Any] = Field(default_factory=dict)


class CheckpointListQuery(AgentQuery):
    limit: int = Field(default=20, ge=1, le=1000)


class CheckpointPath(_In):
    checkpoint_id: str = Field(min_length=1, max_length=64)


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Health(_Out):
    status: Literal["ok", "unavailable"]
    store: str
    version: str


class ErrorDetail(_Out):
    code: str
    message: str


class ErrorResponse(_Out):
    error: ErrorDetail


class RecallResponse(_Out):
    results: list[RecallHit]
    explanations: list[RecallExplanation] | None = None
    feedback: RecallFeedback | None = Field(
        default=None, description="Present exactly when the match is weak: vocabulary hints and memory_alias."
    )


class FactsResponse(_Out):
    facts: list[Fact]


class ForgetResponse(_Out):
    superseded_ids: list[str]


class CheckpointList(_Out):
    checkpoints: list[Checkpoint]
