"""``ScopedMemory``: the memory API checked against the request's bound principal before every call."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar, Unpack

from graymatter.constants import DEFAULT_RELATION, SHARED_AGENT_ID
from graymatter.engine.access import Principal, current_principal
from graymatter.engine.embedding_index import REEMBED_BATCH
from graymatter.engine.memory_api import (
    DEFAULT_SCOPE,
    CheckpointOptions,
    FactsPageOptions,
    LatestFactsOptions,
    ListOptions,
    MemoryAPI,
    RecallOptions,
    RememberOptions,
    ReviseOptions,
    WriteOptions,
)
from graymatter.engine.memory_core import BACKGROUND_WAIT_S
from graymatter.errors import AccessDenied
from graymatter.models import (
    BatchRecallResult,
    Checkpoint,
    CheckpointJSON,
    CompactReport,
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
from graymatter.store.base import FactsPage

if TYPE_CHECKING:
    from graymatter.engine.memory import Memory

_SomeWriteOptions = TypeVar("_SomeWriteOptions", bound=WriteOptions)


class ScopedMemory:
    """A :class:`graymatter.Memory` view that enforces the request's bound :class:`Principal`.

    Every agent-scoped call is checked before it reaches the engine (so a refused call changes nothing),
    recall scopes ``shared``/``all`` also need ``__shared__``, and writes record the principal's token id
    in their provenance. Without a bound principal (local interfaces) calls pass unchanged. The raw store
    is not reachable through it. Each method is ``Memory``'s (same parameters, documented there).
    """

    def __init__(self, memory: Memory) -> None:
        self._memory = memory

    @property
    def memory(self) -> Memory:
        """The unscoped memory underneath."""
        return self._memory

    # -- upkeep of the whole store (no namespace to check) ------------------------------------------
    @property
    def embedding_model(self) -> str | None:
        return self._memory.embedding_model

    def reembed_pending(self, limit: int | None = REEMBED_BATCH) -> int:
        principal = current_principal()
        if principal is not None and not (principal.all_agents and principal.access == "read-write"):
            raise AccessDenied(f"token {principal.token_id} may not re-embed the store")
        return self._memory.reembed_pending(limit)

    def compact(self) -> CompactReport:
        principal = current_principal()
        if principal is not None and not (principal.all_agents and principal.access == "read-write"):
            raise AccessDenied(f"token {principal.token_id} may not compact the store")
        return self._memory.compact()

    @property
    def last_consolidation_error(self) -> str | None:
        return self._memory.last_consolidation_error

    def wait_for_background(self, timeout_s: float = BACKGROUND_WAIT_S) -> None:
        self._memory.wait_for_background(timeout_s)

    def close(self, timeout_s: float | None = None) -> None:
        self._memory.close(timeout_s)

    # -- writes ------------------------------------------------------------------------------------
    def remember(self, agent_id: str, text: str, **options: Unpack[RememberOptions]) -> Fact:
        return self._memory.remember(agent_id, text, **_writing(agent_id, options))

    def remember_shared(self, text: str, **options: Unpack[RememberOptions]) -> Fact:
        return self._memory.remember_shared(text, **_writing(SHARED_AGENT_ID, options))

    def remember_many(
        self, agent_id: str, texts: Sequence[str], **options: Unpack[RememberOptions]
    ) -> builtins.list[Fact]:
        return self._memory.remember_many(agent_id, texts, **_writing(agent_id, options))

    def alias(
        self, agent_id: str, term: str, equivalents: Sequence[str], **options: Unpack[WriteOptions]
    ) -> Fact:
        return self._memory.alias(agent_id, term, equivalents, **_writing(agent_id, options))

    def revise(
        self, agent_id: str, old_text: str, new_text: str, **options: Unpack[ReviseOptions]
    ) -> Revision:
        return self._memory.revise(agent_id, old_text, new_text, **_writing(agent_id, options))

    def forget(self, agent_id: str, text: str) -> builtins.list[str]:
        return self._memory.forget(_writable(agent_id), text)

    def pin(self, agent_id: str, text: str) -> builtins.list[str]:
        return self._memory.pin(_writable(agent_id), text)

    def unpin(self, agent_id: str, text: str) -> builtins.list[str]:
        return self._memory.unpin(_writable(agent_id), text)

    def link(
        self,
        agent_id: str,
        source: str,
        target: str,
        relation: str = DEFAULT_RELATION,
        **options: Unpack[WriteOptions],
    ) -> Link:
        return self._memory.link(agent_id, source, target, relation, **_writing(agent_id, options))

    def consolidate(self, agent_id: str, *, now: datetime | None = None) -> ConsolidationReport:
        return self._memory.consolidate(_writable(agent_id), now=now)

    def checkpoint_save(
        self, agent_id: str, state: dict[str, Any] | str | None = None, **options: Unpack[CheckpointOptions]
    ) -> Checkpoint:
        return self._memory.checkpoint_save(agent_id, state, **_writing(agent_id, options))

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
        return self._memory.recall(_searchable(agent_id, options), query, top_k, **options)

    def recall_shared(
        self, query: str, top_k: int | None = None, **options: Unpack[RecallOptions]
    ) -> builtins.list[RecallHit]:
        _readable(SHARED_AGENT_ID)
        return self._memory.recall_shared(query, top_k, **options)

    def recall_explain(
        self, agent_id: str, query: str, top_k: int | None = None, **options: Unpack[RecallOptions]
    ) -> builtins.list[RecallExplanation]:
        return self._memory.recall_explain(_searchable(agent_id, options), query, top_k, **options)

    def recall_batch(
        self,
        agent_id: str,
        queries: Sequence[str],
        top_k: int | None = None,
        **options: Unpack[RecallOptions],
    ) -> builtins.list[BatchRecallResult]:
        return self._memory.recall_batch(_searchable(agent_id, options), queries, top_k, **options)

    def aliases(self, agent_id: str) -> builtins.list[Fact]:
        return self._memory.aliases(_readable(agent_id))

    def links(self, agent_id: str) -> builtins.list[Link]:
        return self._memory.links(_readable(agent_id))

    def get(self, fact_id: str) -> Fact:
        fact = self._memory.get(fact_id)
        _readable(fact.agent_id)
        return fact

    def stats(self, agent_id: str) -> MemoryStats:
        return self._memory.stats(_readable(agent_id))

    def agents(self) -> builtins.list[str]:
        principal = current_principal()
        agents = self._memory.agents()
        return agents if principal is None else [a for a in agents if principal.can_read(a)]

    def checkpoint_latest(self, agent_id: str) -> Checkpoint:
        return self._memory.checkpoint_latest(_readable(agent_id))

    def checkpoint_latest_json(self, agent_id: str) -> CheckpointJSON:
        return self._memory.checkpoint_latest_json(_readable(agent_id))

    def checkpoint_get(self, agent_id: str, checkpoint_id: str) -> Checkpoint:
        return self._memory.checkpoint_get(_readable(agent_id), checkpoint_id)

    def checkpoint_list(self, agent_id: str, limit: int | None = None) -> builtins.list[Checkpoint]:
        return self._memory.checkpoint_list(_readable(agent_id), limit)

    def export(self, agent_id: str | None = None) -> ExportBundle:
        principal = current_principal()
        if principal is not None:
            if agent_id is None and not principal.all_agents:
                raise AccessDenied(f"token {principal.token_id} may only export its own namespaces")
            if agent_id is not None:
                principal.check(agent_id, write=False)
        return self._memory.export(agent_id)

    def latest_facts(
        self, agent_id: str, limit: int, **options: Unpack[LatestFactsOptions]
    ) -> builtins.list[Fact]:
        return self._memory.latest_facts(_readable(agent_id), limit, **options)

    def facts_page(self, agent_id: str, limit: int, **options: Unpack[FactsPageOptions]) -> FactsPage:
        return self._memory.facts_page(_readable(agent_id), limit, **options)

    def list(self, agent_id: str, **options: Unpack[ListOptions]) -> builtins.list[Fact]:
        return self._memory.list(_readable(agent_id), **options)


# -- checks: each returns what it was given once the bound principal may touch it --------------------
def _checked(agent_id: str, *, write: bool, shared_too: bool = False) -> Principal | None:
    """Check the bound principal for ``agent_id`` (and ``__shared__`` if ``shared_too``); return it."""
    principal = current_principal()
    if principal is not None and isinstance(agent_id, str):  # a non-string id is refused by the engine
        principal.check(agent_id, write=write)
        if shared_too:
            principal.check(SHARED_AGENT_ID, write=write)
    return principal


def _readable(agent_id: str) -> str:
    """``agent_id``, once the bound principal may read it."""
    _checked(agent_id, write=False)
    return agent_id


def _searchable(agent_id: str, options: RecallOptions) -> str:
    """``agent_id``, once the bound principal may read the namespaces the recall ``options`` search."""
    _checked(agent_id, write=False, shared_too=options.get("scope", DEFAULT_SCOPE) in ("shared", "all"))
    return agent_id


def _writable(agent_id: str) -> str:
    """``agent_id``, once the bound principal may write it."""
    _checked(agent_id, write=True)
    return agent_id


def _writing(agent_id: str, options: _SomeWriteOptions) -> _SomeWriteOptions:
    """Check that the bound principal may write ``agent_id``; return ``options`` stamped with its token id."""
    principal = _checked(agent_id, write=True)
    if principal is None:
        return options
    provenance = options.get("provenance")
    if provenance is None:
        base = Provenance(interface="rest")
    elif isinstance(provenance, Provenance):
        base = provenance
    else:
        base = Provenance.model_validate(provenance)
    stamped = options.copy()
    stamped["provenance"] = base.model_copy(update={"token_id": principal.token_id})
    return stamped


if TYPE_CHECKING:

    def _both_meet_the_memory_api(memory: Memory, scoped: ScopedMemory) -> tuple[MemoryAPI, MemoryAPI]:
        """Type-checked only: ``Memory`` and ``ScopedMemory`` each implement the whole :class:`MemoryAPI`."""
        return memory, scoped
