"""``ScopedMemory``: the memory API checked against the request's bound principal before every call."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

from graymatter.config import MemoryConfig
from graymatter.constants import SHARED_AGENT_ID, Confidence
from graymatter.engine.access import Principal, current_principal
from graymatter.engine.embedding_index import REEMBED_BATCH
from graymatter.engine.lifecycle import Summariser
from graymatter.engine.memory_api import MemoryAPI, ProvenanceArg, RecallOptions
from graymatter.errors import AccessDenied
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
    Revision,
)

if TYPE_CHECKING:
    from graymatter.engine.memory import Memory


class ScopedMemory:
    """A :class:`graymatter.Memory` view that enforces the request's bound :class:`Principal`.

    Every agent-scoped call is checked before it reaches the engine (so a refused call changes nothing),
    recall scopes ``shared``/``all`` also need ``__shared__``, and writes record the principal's token id
    in their provenance. Without a bound principal (local interfaces) calls pass unchanged. The raw store
    is not reachable through it.
    """

    def __init__(self, memory: Memory) -> None:
        self._memory = memory

    @property
    def memory(self) -> Memory:
        """The unscoped memory underneath."""
        return self._memory

    # -- checks ------------------------------------------------------------------------------------
    @staticmethod
    def _check(agent_id: object, *, write: bool, scope: object = "agent") -> Principal | None:
        """Check the bound principal for ``agent_id`` (and ``__shared__`` for scope shared/all)."""
        principal = current_principal()
        if principal is not None and isinstance(agent_id, str):
            principal.check(agent_id, write=write)
            if scope in ("shared", "all"):
                principal.check(SHARED_AGENT_ID, write=write)
        return principal

    @staticmethod
    def _check_shared(*, write: bool) -> Principal | None:
        principal = current_principal()
        if principal is not None:
            principal.check(SHARED_AGENT_ID, write=write)
        return principal

    # -- pass-through ------------------------------------------------------------------------------
    @property
    def config(self) -> MemoryConfig:
        return self._memory.config

    @property
    def data_dir(self) -> Path | None:
        return self._memory.data_dir

    @property
    def embedding_model(self) -> str | None:
        return self._memory.embedding_model

    @property
    def summariser(self) -> Summariser | None:
        return self._memory.summariser

    @property
    def last_consolidation_error(self) -> str | None:
        return self._memory.last_consolidation_error

    def close(self, timeout_s: float | None = None) -> None:
        self._memory.close(timeout_s)

    def wait_for_background(self, timeout_s: float = 30.0) -> None:
        self._memory.wait_for_background(timeout_s)

    def reembed_pending(self, limit: int | None = REEMBED_BATCH) -> int:
        principal = current_principal()
        if principal is not None and not (principal.all_agents and principal.access == "read-write"):
            raise AccessDenied(f"token {principal.token_id} may not re-embed the store")
        return self._memory.reembed_pending(limit)

    # -- writes ------------------------------------------------------------------------------------
    def remember(
        self,
        agent_id: str,
        text: str,
        *,
        confidence: Confidence = "inferred",
        provenance: ProvenanceArg = None,
    ) -> Fact:
        principal = self._check(agent_id, write=True)
        return self._memory.remember(
            agent_id, text, confidence=confidence, provenance=_stamp(provenance, principal)
        )

    def remember_shared(
        self, text: str, *, confidence: Confidence = "inferred", provenance: ProvenanceArg = None
    ) -> Fact:
        principal = self._check_shared(write=True)
        return self._memory.remember_shared(
            text, confidence=confidence, provenance=_stamp(provenance, principal)
        )

    def remember_many(
        self,
        agent_id: str,
        texts: Sequence[str],
        *,
        confidence: Confidence = "inferred",
        provenance: ProvenanceArg = None,
    ) -> builtins.list[Fact]:
        principal = self._check(agent_id, write=True)
        return self._memory.remember_many(
            agent_id, texts, confidence=confidence, provenance=_stamp(provenance, principal)
        )

    def alias(
        self, agent_id: str, term: str, equivalents: Sequence[str], *, provenance: ProvenanceArg = None
    ) -> Fact:
        principal = self._check(agent_id, write=True)
        return self._memory.alias(agent_id, term, equivalents, provenance=_stamp(provenance, principal))

    def revise(
        self,
        agent_id: str,
        old_text: str,
        new_text: str,
        *,
        confidence: Confidence | None = None,
        provenance: ProvenanceArg = None,
    ) -> Revision:
        principal = self._check(agent_id, write=True)
        return self._memory.revise(
            agent_id, old_text, new_text, confidence=confidence, provenance=_stamp(provenance, principal)
        )

    def forget(self, agent_id: str, text: str) -> builtins.list[str]:
        self._check(agent_id, write=True)
        return self._memory.forget(agent_id, text)

    def pin(self, agent_id: str, text: str) -> builtins.list[str]:
        self._check(agent_id, write=True)
        return self._memory.pin(agent_id, text)

    def unpin(self, agent_id: str, text: str) -> builtins.list[str]:
        self._check(agent_id, write=True)
        return self._memory.unpin(agent_id, text)

    def link(
        self,
        agent_id: str,
        source: str,
        target: str,
        relation: str = "agent_link",
        *,
        provenance: ProvenanceArg = None,
    ) -> Link:
        principal = self._check(agent_id, write=True)
        return self._memory.link(agent_id, source, target, relation, provenance=_stamp(provenance, principal))

    def consolidate(self, agent_id: str, *, now: datetime | None = None) -> ConsolidationReport:
        self._check(agent_id, write=True)
        return self._memory.consolidate(agent_id, now=now)

    def checkpoint_save(
        self,
        agent_id: str,
        state: dict[str, Any] | str | None = None,
        *,
        messages: Sequence[Any] | None = None,
        metadata: dict[str, Any] | None = None,
        provenance: ProvenanceArg = None,
    ) -> Checkpoint:
        principal = self._check(agent_id, write=True)
        return self._memory.checkpoint_save(
            agent_id, state, messages=messages, metadata=metadata, provenance=_stamp(provenance, principal)
        )

    def import_bundle(self, bundle: ExportBundle | dict[str, Any] | str) -> ImportReport:
        principal = current_principal()
        if principal is not None and not principal.all_agents:
            raise AccessDenied(f"token {principal.token_id} may not import (needs access to every namespace)")
        if principal is not None:
            principal.check(SHARED_AGENT_ID, write=True)
        return self._memory.import_bundle(bundle)

    # -- reads -------------------------------------------------------------------------------------
    def recall(
        self, agent_id: str, query: str, top_k: int | None = None, **options: Unpack[RecallOptions]
    ) -> builtins.list[RecallHit]:
        self._check(agent_id, write=False, scope=options.get("scope", "agent"))
        return self._memory.recall(agent_id, query, top_k, **options)

    def recall_shared(
        self, query: str, top_k: int | None = None, **options: Unpack[RecallOptions]
    ) -> builtins.list[RecallHit]:
        self._check_shared(write=False)
        return self._memory.recall_shared(query, top_k, **options)

    def recall_explain(
        self, agent_id: str, query: str, top_k: int | None = None, **options: Unpack[RecallOptions]
    ) -> builtins.list[RecallExplanation]:
        self._check(agent_id, write=False, scope=options.get("scope", "agent"))
        return self._memory.recall_explain(agent_id, query, top_k, **options)

    def recall_batch(
        self,
        agent_id: str,
        queries: Sequence[str],
        top_k: int | None = None,
        **options: Unpack[RecallOptions],
    ) -> builtins.list[BatchRecallResult]:
        self._check(agent_id, write=False, scope=options.get("scope", "agent"))
        return self._memory.recall_batch(agent_id, queries, top_k, **options)

    def aliases(self, agent_id: str) -> builtins.list[Fact]:
        self._check(agent_id, write=False)
        return self._memory.aliases(agent_id)

    def links(self, agent_id: str) -> builtins.list[Link]:
        self._check(agent_id, write=False)
        return self._memory.links(agent_id)

    def get(self, fact_id: str) -> Fact:
        fact = self._memory.get(fact_id)
        self._check(fact.agent_id, write=False)
        return fact

    def stats(self, agent_id: str) -> MemoryStats:
        self._check(agent_id, write=False)
        return self._memory.stats(agent_id)

    def agents(self) -> builtins.list[str]:
        principal = current_principal()
        agents = self._memory.agents()
        return agents if principal is None else [a for a in agents if principal.can_read(a)]

    def checkpoint_latest(self, agent_id: str) -> Checkpoint:
        self._check(agent_id, write=False)
        return self._memory.checkpoint_latest(agent_id)

    def checkpoint_get(self, agent_id: str, checkpoint_id: str) -> Checkpoint:
        self._check(agent_id, write=False)
        return self._memory.checkpoint_get(agent_id, checkpoint_id)

    def checkpoint_list(self, agent_id: str, limit: int | None = None) -> builtins.list[Checkpoint]:
        self._check(agent_id, write=False)
        return self._memory.checkpoint_list(agent_id, limit)

    def export(self, agent_id: str | None = None) -> ExportBundle:
        principal = current_principal()
        if principal is not None:
            if agent_id is None and not principal.all_agents:
                raise AccessDenied(f"token {principal.token_id} may only export its own namespaces")
            if agent_id is not None:
                principal.check(agent_id, write=False)
        return self._memory.export(agent_id)

    def latest_facts(
        self, agent_id: str, limit: int, *, include_superseded: bool = True
    ) -> builtins.list[Fact]:
        self._check(agent_id, write=False)
        return self._memory.latest_facts(agent_id, limit, include_superseded=include_superseded)

    def list(
        self, agent_id: str, *, include_superseded: bool = True, include_aliases: bool = False
    ) -> builtins.list[Fact]:
        self._check(agent_id, write=False)
        return self._memory.list(
            agent_id, include_superseded=include_superseded, include_aliases=include_aliases
        )


def _stamp(provenance: ProvenanceArg, principal: Principal | None) -> ProvenanceArg:
    """The caller's provenance with the principal's token id recorded (unchanged without a principal)."""
    if principal is None:
        return provenance
    if provenance is None:
        base = Provenance(interface="rest")
    elif isinstance(provenance, Provenance):
        base = provenance
    else:
        base = Provenance.model_validate(provenance)
    return base.model_copy(update={"token_id": principal.token_id})


if TYPE_CHECKING:

    def _both_meet_the_memory_api(memory: Memory, scoped: ScopedMemory) -> tuple[MemoryAPI, MemoryAPI]:
        """Type-checked only: ``Memory`` and ``ScopedMemory`` each implement the whole :class:`MemoryAPI`."""
        return memory, scoped
