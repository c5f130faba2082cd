"""``MemoryAPI``: the memory operations the served faces call, met by ``Memory`` and by ``ScopedMemory``.

Keyword options are described once, as the ``TypedDict``s below: the protocol and ``ScopedMemory`` take
them as ``**options: Unpack[...]`` and pass them through; ``Memory`` spells them out as explicit keyword
parameters with their defaults and documents them (mypy checks that the two agree).
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol, TypedDict, Unpack

from graymatter.constants import Confidence
from graymatter.models import (
    BatchRecallResult,
    Checkpoint,
    CheckpointJSON,
    Fact,
    Interface,
    Link,
    Provenance,
    RecallExplanation,
    RecallHit,
    RecallScope,
    Revision,
    SignalWeights,
)
from graymatter.store.base import FactsPage

ProvenanceArg = Provenance | dict[str, Any] | None
"""What a write accepts as its provenance."""

DEFAULT_SCOPE: RecallScope = "agent"
"""The namespaces a recall searches unless told otherwise: the agent's own."""


class WriteOptions(TypedDict, total=False):
    """The keyword option every write takes: its provenance."""

    provenance: ProvenanceArg


class RememberOptions(WriteOptions, total=False):
    """The keyword options of ``remember``, ``remember_many`` and ``remember_shared``."""

    confidence: Confidence
    session: str | None


class ReviseOptions(WriteOptions, total=False):
    """The keyword options of ``revise`` (no confidence: the lower of the targets' and ``inferred``)."""

    confidence: Confidence | None


class CheckpointOptions(WriteOptions, total=False):
    """The keyword options of ``checkpoint_save``."""

    messages: Sequence[Any] | None
    metadata: dict[str, Any] | None


class RecallOptions(TypedDict, total=False):
    """The keyword options every recall takes (``Memory.recall`` documents them)."""

    scope: RecallScope
    min_relevance: float | None
    min_confidence: Confidence | None
    confidence_weight: float | None
    weights: SignalWeights | None


class LatestFactsOptions(TypedDict, total=False):
    """The keyword options of ``latest_facts``."""

    include_superseded: bool


class FactsPageOptions(TypedDict, total=False):
    """The keyword options of ``facts_page`` (``Memory.facts_page`` documents them)."""

    before: tuple[datetime, str] | None
    live: bool | None
    pinned: bool | None
    confidence: Confidence | None
    interface: Interface | None
    scan: int | None


class ListOptions(LatestFactsOptions, total=False):
    """The keyword options of ``list``."""

    include_aliases: bool


class MemoryAPI(Protocol):
    """What the MCP tools and the REST routes use; no store access, so a scoped view can stand in."""

    def remember(self, agent_id: str, text: str, **options: Unpack[RememberOptions]) -> Fact: ...

    def alias(
        self, agent_id: str, term: str, equivalents: Sequence[str], **options: Unpack[WriteOptions]
    ) -> Fact: ...

    def revise(
        self, agent_id: str, old_text: str, new_text: str, **options: Unpack[ReviseOptions]
    ) -> Revision: ...

    def forget(self, agent_id: str, text: str) -> builtins.list[str]: ...

    def pin(self, agent_id: str, text: str) -> builtins.list[str]: ...

    def unpin(self, agent_id: str, text: str) -> builtins.list[str]: ...

    def link(
        self, agent_id: str, source: str, target: str, relation: str = ..., **options: Unpack[WriteOptions]
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
        self, agent_id: str, state: dict[str, Any] | str | None = None, **options: Unpack[CheckpointOptions]
    ) -> Checkpoint: ...

    def checkpoint_latest(self, agent_id: str) -> Checkpoint: ...

    def checkpoint_latest_json(self, agent_id: str) -> CheckpointJSON: ...

    def checkpoint_get(self, agent_id: str, checkpoint_id: str) -> Checkpoint: ...

    def checkpoint_list(self, agent_id: str, limit: int | None = None) -> builtins.list[Checkpoint]: ...

    def latest_facts(
        self, agent_id: str, limit: int, **options: Unpack[LatestFactsOptions]
    ) -> builtins.list[Fact]: ...

    def facts_page(self, agent_id: str, limit: int, **options: Unpack[FactsPageOptions]) -> FactsPage: ...
