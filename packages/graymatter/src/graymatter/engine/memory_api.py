"""``MemoryAPI``: the memory operations the faces call, met by ``Memory`` and by ``ScopedMemory``."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from graymatter.config import MemoryConfig
from graymatter.constants import Confidence
from graymatter.engine.lifecycle import Summariser
from graymatter.models import (
    BatchRecallResult,
    Checkpoint,
    ConsolidationReport,
    ExportBundle,
    Fact,
    ImportReport,
    Link,
    MemoryStats,
    Provenance,
    RecallExplanation,
    RecallHit,
    RecallScope,
    Revision,
    SignalWeights,
)

ProvenanceArg = Provenance | dict[str, Any] | None
"""What a write accepts as its provenance."""


class MemoryAPI(Protocol):
    """Durable facts, recall and checkpoints, as a face sees them (no store access)."""

    @property
    def config(self) -> MemoryConfig: ...

    @property
    def data_dir(self) -> Path | None: ...

    @property
    def embedding_model(self) -> str | None: ...

    @property
    def summariser(self) -> Summariser | None: ...

    @property
    def last_consolidation_error(self) -> str | None: ...

    def close(self, timeout_s: float | None = None) -> None: ...

    def wait_for_background(self, timeout_s: float = 30.0) -> None: ...

    def reembed_pending(self, limit: int | None = 64) -> int: ...

    def remember(
        self,
        agent_id: str,
        text: str,
        *,
        confidence: Confidence = "inferred",
        provenance: ProvenanceArg = None,
    ) -> Fact: ...

    def remember_shared(
        self, text: str, *, confidence: Confidence = "inferred", provenance: ProvenanceArg = None
    ) -> Fact: ...

    def remember_many(
        self,
        agent_id: str,
        texts: Sequence[str],
        *,
        confidence: Confidence = "inferred",
        provenance: ProvenanceArg = None,
    ) -> builtins.list[Fact]: ...

    def alias(
        self, agent_id: str, term: str, equivalents: Sequence[str], *, provenance: ProvenanceArg = None
    ) -> Fact: ...

    def aliases(self, agent_id: str) -> builtins.list[Fact]: ...

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

    def links(self, agent_id: str) -> builtins.list[Link]: ...

    def recall(
        self,
        agent_id: str,
        query: str,
        top_k: int | None = None,
        *,
        scope: RecallScope = "agent",
        min_relevance: float | None = None,
        min_confidence: Confidence | None = None,
        confidence_weight: float | None = None,
        weights: SignalWeights | None = None,
    ) -> builtins.list[RecallHit]: ...

    def recall_shared(
        self, query: str, top_k: int | None = None, **options: Any
    ) -> builtins.list[RecallHit]: ...

    def recall_explain(
        self,
        agent_id: str,
        query: str,
        top_k: int | None = None,
        *,
        scope: RecallScope = "agent",
        min_relevance: float | None = None,
        min_confidence: Confidence | None = None,
        confidence_weight: float | None = None,
        weights: SignalWeights | None = None,
    ) -> builtins.list[RecallExplanation]: ...

    def recall_batch(
        self, agent_id: str, queries: Sequence[str], top_k: int | None = None, **options: Any
    ) -> builtins.list[BatchRecallResult]: ...

    def get(self, fact_id: str) -> Fact: ...

    def stats(self, agent_id: str) -> MemoryStats: ...

    def agents(self) -> builtins.list[str]: ...

    def consolidate(self, agent_id: str, *, now: datetime | None = None) -> ConsolidationReport: ...

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

    def export(self, agent_id: str | None = None) -> ExportBundle: ...

    def import_bundle(self, bundle: ExportBundle | dict[str, Any] | str) -> ImportReport: ...

    def latest_facts(
        self, agent_id: str, limit: int, *, include_superseded: bool = True
    ) -> builtins.list[Fact]: ...

    def list(
        self, agent_id: str, *, include_superseded: bool = True, include_aliases: bool = False
    ) -> builtins.list[Fact]: ...
