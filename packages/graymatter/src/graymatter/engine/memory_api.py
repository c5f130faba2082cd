"""``MemoryAPI``: the memory operations the served faces call, met by ``Memory`` and by ``ScopedMemory``."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any, Protocol, TypedDict, Unpack

from graymatter.constants import Confidence
from graymatter.models import (
    BatchRecallResult,
    Checkpoint,
    Fact,
    Link,
    Provenance,
    RecallExplanation,
    RecallHit,
    RecallScope,
    Revision,
    SignalWeights,
)

ProvenanceArg = Provenance | dict[str, Any] | None
"""What a write accepts as its provenance."""


class RecallOptions(TypedDict, total=False):
    """The keyword options every recall takes (``Memory.recall`` documents them)."""

    scope: RecallScope
    min_relevance: float | None
    min_confidence: Confidence | None
    confidence_weight: float | None
    weights: SignalWeights | None


class MemoryAPI(Protocol):
    """What the MCP tools and the REST routes use; no store access, so a scoped view can stand in."""

    def remember(
        self,
        agent_id: str,
        text: str,
        *,
        confidence: Confidence = "inferred",
        provenance: ProvenanceArg = None,
    ) -> Fact: ...

    def alias(
        self, agent_id: str, term: str, equivalents: Sequence[str], *, provenance: ProvenanceArg = None
    ) -> Fact: ...

    def revise(
        self,
        agent_id: str,
        old_text: str,
        new_text: str,
        *,
        confidence: Confidence | None = None,
        provenance: ProvenanceArg = None,
    ) -> Revision: ...

    def forget(self, agent_id: str, text: str) -> builtins.list[str]: ...

    def pin(self, agent_id: str, text: str) -> builtins.list[str]: ...

    def unpin(self, agent_id: str, text: str) -> builtins.list[str]: ...

    def link(
        self,
        agent_id: str,
        source: str,
        target: str,
        relation: str = "agent_link",
        *,
        provenance: ProvenanceArg = None,
    ) -> Link: ...

    def recall(
        self, agent_id: str, query: str, top_k: int | None = None, **options: Unpack[RecallOptions]
    ) -> builtins.list[RecallHit]: ...

    def recall_explain(
        self, agent_id: str, query: str, top_k: int | None = None, **options: Unpack[RecallOptions]
    ) -> builtins.list[RecallExplanation]: ...

    def recall_batch(
        self,
        agent_id: str,
        queries: Sequence[str],
        top_k: int | None = None,
        **options: Unpack[RecallOptions],
    ) -> builtins.list[BatchRecallResult]: ...

    def checkpoint_save(
        self,
        agent_id: str,
        state: dict[str, Any] | str | None = None,
        *,
        messages: Sequence[Any] | None = None,
        metadata: dict[str, Any] | None = None,
        provenance: ProvenanceArg = None,
    ) -> Checkpoint: ...

    def checkpoint_latest(self, agent_id: str) -> Checkpoint: ...

    def checkpoint_get(self, agent_id: str, checkpoint_id: str) -> Checkpoint: ...

    def checkpoint_list(self, agent_id: str, limit: int | None = None) -> builtins.list[Checkpoint]: ...

    def latest_facts(
        self, agent_id: str, limit: int, *, include_superseded: bool = True
    ) -> builtins.list[Fact]: ...
