"""The backend-neutral ``Store`` protocol that the engine depends on.

Backends store records and answer candidate queries; they never fuse or rank across signals. Every
ranked list a backend returns is in a total order (best first, then oldest ``created_at``, then ``id``),
and fusion happens once, in :mod:`graymatter.retrieval.fusion`, so every backend ranks identically.

Conventions shared by all backends:

* Only *live* (not superseded) facts of kind ``fact`` are candidates for keyword, vector and recency
  search; superseded facts and aliases are never ranked.
* ``confidences`` arguments restrict candidates to the given labels (``None`` = no restriction).
* Writes are atomic: a method either applies all of its changes or none.
* A superseded fact is never made live again (update-never-resurrect).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Protocol, runtime_checkable

from graymatter.models import Checkpoint, CheckpointJSON, Fact, Link, MemoryStats
from graymatter.store.tokens import TokenStore

Vector = Sequence[float]
Vectors = Sequence[Vector | None] | None
"""One optional vector per fact, or none at all."""
Confidences = Sequence[str] | None
"""The confidence labels candidates are restricted to (``None`` = no restriction)."""
Kinds = Sequence[str]
"""Fact kinds (``fact``, ``alias``)."""


@dataclass(frozen=True, slots=True)
class ScoredId:
    """A candidate fact id with the backend's signal score (higher is better)."""

    fact_id: str
    score: float


@dataclass(frozen=True, slots=True)
class FactsPage:
    """One page of an agent's facts, newest first, and where the next page starts."""

    facts: list[Fact]
    before: tuple[datetime, str] | None
    """The ``(created_at, id)`` cursor of the next page; ``None`` when no older fact is left to examine."""
    partial: bool
    """The ``scan`` bound stopped this page before it filled: older facts remain unexamined."""


@runtime_checkable
class Store(Protocol):
    """Persistence and candidate retrieval for facts, checkpoints and links."""

    url: str
    """A human-readable location of the store (never contains credentials)."""

    @property
    def kind(self) -> str:
        """The backend: ``sqlite`` or ``postgresql``."""

    @property
    def data_dir(self) -> Path | None:
        """The store's directory when it is embedded (SQLite), else ``None``."""

    # -- lifecycle ---------------------------------------------------------------------------------
    def close(self) -> None:
        """Release connections. Idempotent."""

    def ping(self) -> None:
        """Round-trip the database (readiness probe); raises a GraymatterError when it does not answer."""

    def token_store(self) -> TokenStore:
        """The scoped-token storage that lives next to this store's data."""

    def compact(self) -> tuple[int, int]:
        """Give free space back (pages left by deletions, supersessions and migrations) and merge the
        full-text index, keeping every record and answer as it was; return the store's size in bytes
        before and after. Other processes may keep reading and writing meanwhile (writers wait)."""

    # -- facts -------------------------------------------------------------------------------------
    def add_facts(
        self, facts: Sequence[Fact], vectors: Vectors = None, embedding_model: str | None = None
    ) -> None:
        """Insert new facts (ids must be new) with optional vectors made by ``embedding_model``.

        Facts of kind ``fact`` inserted without a vector while an embedding model is configured are marked
        pending for re-embedding.
        """

    def import_facts(self, facts: Sequence[Fact]) -> tuple[int, int]:
        """Insert facts whose ids are unknown, skip the others; return ``(added, skipped)``."""

    def get_facts(self, fact_ids: Sequence[str]) -> list[Fact]:
        """Facts with the given ids, in the order given; unknown ids are omitted."""

    def find_by_text(self, agent_id: str, text: str, kind: str = "fact") -> list[Fact]:
        """Every fact (live or not) of ``agent_id`` whose text equals ``text`` exactly, oldest first."""

    def list_facts(
        self, agent_id: str | None = None, *, include_superseded: bool = True, kinds: Kinds = ("fact",)
    ) -> list[Fact]:
        """Facts of one agent (or all agents when ``None``), oldest first."""

    def latest_facts(self, agent_id: str, limit: int, *, include_superseded: bool = True) -> list[Fact]:
        """The newest ``limit`` facts of kind ``fact`` of one agent, newest first (``created_at``, then id
        descending): the listing :meth:`list_facts` gives, reversed and cut, without reading everything."""

    def facts_page(
        self,
        agent_id: str,
        *,
        before: tuple[datetime, str] | None,
        limit: int,
        live: bool | None = True,
        pinned: bool | None = None,
        confidence: str | None = None,
        interface: str | None = None,
        scan: int | None = None,
    ) -> FactsPage:
        """Up to ``limit`` facts of kind ``fact`` older than the ``before`` cursor, newest first by
        ``(created_at, id)``; ``live``: live only / superseded only (``False``) / both (``None``).

        Live-only and all-facts walks follow an index, so any depth costs O(limit). The other filters skip
        rows of that walk; with ``scan`` the page examines at most ``scan`` facts past the cursor and, if it
        did not fill, is ``partial`` with ``before`` at the last fact examined. Following ``before`` from
        ``None`` yields every matching fact exactly once.
        """

    def supersedes(self, fact_ids: Sequence[str]) -> dict[str, list[str]]:
        """For each given id, the ids of the facts it superseded (oldest first); ids with none are omitted."""

    def neighbours(self, fact_ids: Sequence[str], window: int) -> dict[str, list[str]]:
        """For each given live fact, the ids of the live ``fact``-kind facts of the same agent written
        immediately before and after it (order ``created_at``, id), at most ``window`` per side, oldest
        first, excluding the fact itself. Unknown or superseded ids are omitted."""

    def aliases(self, agent_ids: Sequence[str]) -> list[Fact]:
        """Live alias facts of the given namespaces, oldest first."""

    def supersede(self, fact_ids: Sequence[str], superseded_by: str) -> list[str]:
        """Tombstone the live facts among ``fact_ids``; return the ids actually tombstoned."""

    def replace_facts(
        self,
        fact_ids: Sequence[str],
        replacement: Fact,
        vector: Vector | None = None,
        embedding_model: str | None = None,
    ) -> list[str]:
        """Compare-and-swap, one transaction: if every fact in ``fact_ids`` is still live, insert
        ``replacement`` and tombstone them with its id (return their ids); else raise ``Conflict`` and
        change nothing. Of two writers replacing the same fact, exactly one succeeds."""

    def set_pinned(self, fact_ids: Sequence[str], pinned: bool, at: datetime) -> list[str]:
        """Pin or unpin live facts; return the ids changed."""

    def record_access(self, fact_ids: Sequence[str], at: datetime) -> None:
        """One write: ``access_count += 1`` and ``accessed_at = at`` for the live facts given."""

    def record_accesses(self, counts: Mapping[str, int], at: datetime) -> None:
        """``access_count += n`` and ``accessed_at = at`` for each live fact id and count ``n`` (≥ 1) given:
        the access bookkeeping of many recalls at once."""

    def update_weights(self, weights: dict[str, float]) -> int:
        """Set decayed weights (only ever lowered by callers); return the number of rows changed."""

    def decay_due(self, agent_id: str, now: datetime, fresh_before: datetime, limit: int) -> list[Fact]:
        """At most ``limit`` unpinned facts (live or tombstoned) of ``agent_id`` whose decay is due:
        ``decay_due_at`` at or before ``now``, or never visited and last accessed at or before
        ``fresh_before``. Due first."""

    def record_decay(self, updates: Mapping[str, tuple[float, datetime]]) -> None:
        """Per fact id: lower its weight to at most the given one and set its next ``decay_due_at``."""

    def delete_facts(self, fact_ids: Sequence[str]) -> list[str]:
        """Hard-delete unpinned facts (pruning is the only caller); return the ids deleted."""

    def agents(self) -> list[str]:
        """Every agent id that has facts, checkpoints or links, sorted."""

    def stats(self, agent_id: str) -> MemoryStats:
        """Counts and ages of one namespace."""

    # -- candidate retrieval -----------------------------------------------------------------------
    def document_frequencies(self, terms: Sequence[str]) -> dict[str, int]:
        """Number of live facts containing each (normalised, unstemmed) term, as the index sees it."""

    def keyword_search(
        self, agent_ids: Sequence[str], terms: Sequence[str], limit: int, confidences: Confidences = None
    ) -> list[ScoredId]:
        """Full-text (BM25, stemmed) matches of any of ``terms``, best first, at most ``limit``.

        The list is ordered by score, then oldest ``created_at``, then id. Every match scoring better than
        the last returned one is included; when more facts tie with that last score than fit, backends may
        pick among them by insertion order (deterministic for a given store)."""

    def vector_search(
        self, agent_ids: Sequence[str], query: Vector, model: str, limit: int, confidences: Confidences = None
    ) -> list[ScoredId]:
        """Cosine-nearest facts embedded by ``model``, best first, at most ``limit``."""

    def rank_info(self, fact_ids: Sequence[str]) -> dict[str, tuple[datetime, str]]:
        """``(created_at, confidence)`` of the live ``fact``-kind facts among ``fact_ids`` (others omitted);
        what ranking needs without decoding whole facts."""

    def recent(self, agent_ids: Sequence[str], limit: int, confidences: Confidences = None) -> list[str]:
        """Ids of the newest live facts (``created_at`` desc, then ``id``), at most ``limit``."""

    # -- embeddings --------------------------------------------------------------------------------
    def embedding_model(self) -> str | None:
        """The model id the stored vectors were made with, or ``None``."""

    def reset_embeddings(self, model: str | None) -> int:
        """Switch to ``model``: drop every vector, mark live facts pending (none when ``model`` is None)."""

    def pending_embeddings(self, limit: int) -> list[Fact]:
        """Live facts waiting for a vector, oldest first."""

    def pending_embedding_count(self) -> int:
        """Number of live facts waiting for a vector."""

    def set_vectors(self, items: Iterable[tuple[str, Vector]], model: str) -> int:
        """Store vectors for facts (clears their pending mark); ignored if ``model`` is not current."""

    # -- checkpoints -------------------------------------------------------------------------------
    def save_checkpoint(self, checkpoint: Checkpoint) -> None:
        """Insert a checkpoint; ids are never reused."""

    def import_checkpoints(self, checkpoints: Sequence[Checkpoint]) -> tuple[int, int]:
        """Insert unknown checkpoints, skip known ids; return ``(added, skipped)``."""

    def latest_checkpoint(self, agent_id: str) -> Checkpoint | None:
        """The newest checkpoint of the agent (``created_at`` then id), or ``None``."""

    def latest_checkpoint_json(self, agent_id: str) -> CheckpointJSON | None:
        """The newest checkpoint of the agent with its state as the stored JSON text, or ``None``."""

    def get_checkpoint(self, checkpoint_id: str) -> Checkpoint | None:
        """The checkpoint with this id, or ``None``."""

    def list_checkpoints(self, agent_id: str | None = None, limit: int | None = None) -> list[Checkpoint]:
        """Checkpoints, newest first."""

    # -- links -------------------------------------------------------------------------------------
    def add_link(self, link: Link) -> Link:
        """Insert a link, or return the existing one with the same (agent, source, target, relation)."""

    def import_links(self, links: Sequence[Link]) -> tuple[int, int]:
        """Insert unknown links, skip known ones; return ``(added, skipped)``."""

    def links(self, agent_ids: Sequence[str] | None = None) -> list[Link]:
        """Links of the given namespaces (all when ``None``), oldest first."""

    # -- counters ----------------------------------------------------------------------------------
    def bump_write_counter(self, agent_id: str, by: int = 1) -> int:
        """Atomically add ``by`` to the agent's writes-since-consolidation counter; return the new value."""

    def reset_write_counter(self, agent_id: str) -> None:
        """Zero the agent's writes-since-consolidation counter."""
