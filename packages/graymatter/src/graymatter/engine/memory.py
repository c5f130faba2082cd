"""The ``Memory`` facade: the library API every face (CLI, MCP, REST) is built on.

Writes, corrections and inspection live here; recall, checkpoints and export/import come from their own
parts (:mod:`.memory_recall`, :mod:`.memory_checkpoints`, :mod:`.memory_transfer`), all on the shared
:class:`.memory_core.MemoryCore`.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import logging
from collections.abc import Sequence
from datetime import datetime
from typing import Unpack

from graymatter import validation as check
from graymatter.constants import (
    CONFIDENCE_LEVELS,
    DEFAULT_RELATION,
    SHARED_AGENT_ID,
    SUPERSEDED_BY_AGENT,
    Confidence,
)
from graymatter.engine.lifecycle import consolidate
from graymatter.engine.memory_api import ProvenanceArg, RememberOptions
from graymatter.engine.memory_checkpoints import CheckpointMethods
from graymatter.engine.memory_core import gc_paused
from graymatter.engine.memory_recall import RecallMethods
from graymatter.engine.memory_transfer import TransferMethods
from graymatter.errors import GraymatterError, InvalidInput, NotFound
from graymatter.ids import new_ulid
from graymatter.models import (
    CompactReport,
    ConsolidationReport,
    Fact,
    Interface,
    Link,
    MemoryStats,
    Provenance,
    Revision,
    utcnow,
)
from graymatter.store.base import FactsPage

log = logging.getLogger("graymatter")


def _not_found(text: str) -> str:
    shown = text if len(text) <= 120 else text[:117] + "..."
    return f"target fact not found: {json.dumps(shown, ensure_ascii=False)}"


class Memory(RecallMethods, CheckpointMethods, TransferMethods):
    """Durable facts, recall and checkpoints for agents.

    ``Memory(data_dir)`` opens (creating if needed) the embedded SQLite store in ``data_dir``
    (default ``$GRAYMATTER_DIR`` or ``./.graymatter``); pass ``store=`` to use another backend, e.g.
    ``open_store("postgresql://...")``. ``embedder`` defaults to what ``config.embedding`` selects
    (keyword-only unless configured); pass ``None`` for keyword-only or an ``Embedder`` instance.
    """

    # -- writes ------------------------------------------------------------------------------------
    def _new_fact(
        self,
        agent_id: str,
        text: str,
        *,
        confidence: Confidence,
        provenance: Provenance,
        kind: str = "fact",
        equivalents: builtins.list[str] | None = None,
    ) -> Fact:
        now = utcnow()
        return Fact(
            id=new_ulid(),
            agent_id=agent_id,
            text=text,
            created_at=now,
            accessed_at=now,
            confidence=confidence,
            kind=kind,
            equivalents=equivalents or [],
            provenance=provenance,
        )

    def _store_fact(self, fact: Fact) -> Fact:
        vector = self._embeddings.embed_one(fact.text) if fact.kind == "fact" else None
        self.store.add_facts([fact], [vector], self._embeddings.model_id)
        self._after_write(fact.agent_id, embedded=vector is not None)
        return fact

    def remember(
        self,
        agent_id: str,
        text: str,
        *,
        confidence: Confidence = "inferred",
        provenance: ProvenanceArg = None,
        session: str | None = None,
    ) -> Fact:
        """Store one durable fact and return it. Identical texts are stored as separate facts.

        ``session`` marks the fact as a turn of that conversation: recall lends context only between
        turns of one session (a fact without a session is returned only on its own evidence).
        """
        agent_id = self._agent(agent_id)
        text = self._text(text)
        prov = _with_session(check.provenance(provenance), check.session(session))
        fact = self._new_fact(agent_id, text, confidence=check.confidence(confidence), provenance=prov)
        return self._store_fact(fact)

    def remember_shared(self, text: str, **options: Unpack[RememberOptions]) -> Fact:
        """Store a fact in the project-wide ``__shared__`` namespace (the options of ``remember``)."""
        return self.remember(SHARED_AGENT_ID, text, **options)

    def remember_many(
        self,
        agent_id: str,
        texts: Sequence[str],
        *,
        confidence: Confidence = "inferred",
        provenance: ProvenanceArg = None,
        session: str | None = None,
    ) -> builtins.list[Fact]:
        """Store several facts in one transaction (all or none); ``session`` as for ``remember``."""
        agent_id = self._agent(agent_id)
        clean = self._texts(texts)
        prov = _with_session(check.provenance(provenance), check.session(session))
        label = check.confidence(confidence)
        vectors = self._embeddings.embed_batch(clean)  # outside the pause: a provider allocates its own way
        with gc_paused():  # many acyclic objects at once (memory_core.gc_paused)
            facts = self._new_facts(agent_id, clean, label, prov)
            self.store.add_facts(facts, vectors, self._embeddings.model_id)
        self._after_write(agent_id, embedded=vectors[0] is not None if vectors else False, count=len(facts))
        return list(facts)  # the caller's list: the columns the store may read stay with the write

    def _after_write(self, agent_id: str, *, embedded: bool, count: int = 1) -> None:
        if embedded and self._embeddings.embedder is not None:
            with contextlib.suppress(GraymatterError):
                self.reembed_pending(limit=16)
        if not self.config.async_consolidate:
            return
        try:
            writes = self.store.bump_write_counter(agent_id, count)
        except GraymatterError as exc:
            log.warning("write counter update failed: %s", exc)
            return
        if writes >= self.config.consolidate_threshold:
            self._background.start(agent_id)

    def alias(
        self, agent_id: str, term: str, equivalents: Sequence[str], *, provenance: ProvenanceArg = None
    ) -> Fact:
        """Declare that ``term`` and ``equivalents`` mean the same; later queries using one find the others.

        Aliases expand queries of this namespace and are never returned as memories.
        """
        agent_id = self._agent(agent_id)
        term = self._text(term, "term")
        if isinstance(equivalents, str) or not isinstance(equivalents, Sequence) or not equivalents:
            raise InvalidInput("equivalents must be a non-empty list of strings")
        cleaned = [self._text(e, "equivalent") for e in equivalents]
        cleaned = [e for e in dict.fromkeys(cleaned) if e != term]
        if not cleaned:
            raise InvalidInput("equivalents must name at least one term different from the term itself")
        fact = self._new_fact(
            agent_id,
            term,
            confidence="inferred",
            provenance=check.provenance(provenance),
            kind="alias",
            equivalents=cleaned,
        )
        return self._store_fact(fact)

    def aliases(self, agent_id: str) -> builtins.list[Fact]:
        """Live aliases of the namespace, oldest first."""
        return self.store.aliases([self._agent(agent_id)])

    def _targets(self, agent_id: str, text: str, kinds: Sequence[str] = ("fact",)) -> builtins.list[Fact]:
        found: builtins.list[Fact] = []
        for kind in kinds:
            found.extend(self.store.find_by_text(agent_id, text, kind))
        return found

    def revise(
        self,
        agent_id: str,
        old_text: str,
        new_text: str,
        *,
        confidence: Confidence | None = None,
        provenance: ProvenanceArg = None,
    ) -> Revision:
        """Replace every live fact whose text is exactly ``old_text``.

        One compare-and-swap transaction stores the replacement and tombstones the old facts with
        ``superseded_by`` = the replacement id, if they are all still live; if another writer retired one
        first, ``Conflict`` is raised and nothing changes. Without an explicit label the replacement gets
        the lower of ``inferred`` and the lowest label among the targets. A revision never inherits a pin.
        """
        agent_id = self._agent(agent_id)
        old_text = self._text(old_text, "target")
        new_text = self._text(new_text)
        if old_text == new_text:
            raise InvalidInput("the replacement text is identical to the fact it revises")
        prov = check.provenance(provenance)
        targets = [f for f in self._targets(agent_id, old_text, ("fact", "alias")) if f.live]
        if not targets:
            raise NotFound(_not_found(old_text))
        if confidence is None:
            lowest = min((f.confidence for f in targets), key=lambda c: CONFIDENCE_LEVELS[c])
            label: Confidence = lowest if CONFIDENCE_LEVELS[lowest] < 0 else "inferred"
        else:
            label = check.confidence(confidence)
        kind = "alias" if all(f.kind == "alias" for f in targets) else "fact"
        equivalents = targets[0].equivalents if kind == "alias" else None
        replacement = self._new_fact(
            agent_id, new_text, confidence=label, provenance=prov, kind=kind, equivalents=equivalents
        )
        vector = self._embeddings.embed_one(new_text) if kind == "fact" else None
        retired = self.store.replace_facts(
            [f.id for f in targets], replacement, vector, self._embeddings.model_id
        )
        self._after_write(agent_id, embedded=vector is not None)
        return Revision(fact=replacement, superseded_ids=retired)

    def forget(self, agent_id: str, text: str) -> builtins.list[str]:
        """Tombstone (never delete) every live fact or alias whose text is exactly ``text``; return ids."""
        agent_id = self._agent(agent_id)
        text = self._text(text, "target")
        targets = [f for f in self._targets(agent_id, text, ("fact", "alias")) if f.live]
        if not targets:
            raise NotFound(_not_found(text))
        return self.store.supersede([f.id for f in targets], SUPERSEDED_BY_AGENT)

    def _set_pin(self, agent_id: str, text: str, pinned: bool) -> builtins.list[str]:
        agent_id = self._agent(agent_id)
        text = self._text(text, "target")
        matches = self._targets(agent_id, text)
        live = [f for f in matches if f.live]
        if not live:
            if matches:
                raise InvalidInput(f"cannot {'pin' if pinned else 'unpin'} a superseded fact")
            raise NotFound(_not_found(text))
        self.store.set_pinned([f.id for f in live], pinned, utcnow())
        return [f.id for f in live]

    def pin(self, agent_id: str, text: str) -> builtins.list[str]:
        """Exempt every live exact-text match from decay, pruning and summarisation; return their ids."""
        return self._set_pin(agent_id, text, True)

    def unpin(self, agent_id: str, text: str) -> builtins.list[str]:
        """Return every live exact-text match to normal decay; return their ids."""
        return self._set_pin(agent_id, text, False)

    def link(
        self,
        agent_id: str,
        source: str,
        target: str,
        relation: str = DEFAULT_RELATION,
        *,
        provenance: ProvenanceArg = None,
    ) -> Link:
        """Record a typed edge between two entities (labels are trimmed and lower-cased). Idempotent."""
        agent_id = self._agent(agent_id)
        link = Link(
            id=new_ulid(),
            agent_id=agent_id,
            source=check.label(source, "source"),
            target=check.label(target, "target"),
            relation=check.label(relation, "relation"),
            created_at=utcnow(),
            provenance=check.provenance(provenance),
        )
        return self.store.add_link(link)

    def links(self, agent_id: str) -> builtins.list[Link]:
        """Links of one namespace, oldest first."""
        return self.store.links([self._agent(agent_id)])

    # -- inspection --------------------------------------------------------------------------------
    def get(self, fact_id: str) -> Fact:
        """One fact by id (live or superseded)."""
        self._access.flush()
        found = self.store.get_facts([fact_id]) if isinstance(fact_id, str) else []
        if not found:
            raise NotFound("no fact has that id")
        return found[0]

    def stats(self, agent_id: str) -> MemoryStats:
        """Counts and ages of one namespace."""
        self._access.flush()
        return self.store.stats(self._agent(agent_id))

    def agents(self) -> builtins.list[str]:
        """Every agent id with facts, checkpoints or links, sorted."""
        return self.store.agents()

    def consolidate(self, agent_id: str, *, now: datetime | None = None) -> ConsolidationReport:
        """Run one consolidation cycle (decay, optional summarisation, prune) now, in the caller's thread."""
        agent_id = self._agent(agent_id)
        self._access.flush()
        report = consolidate(self.store, agent_id, self.config, self.summariser, now)
        self.store.reset_write_counter(agent_id)
        return report

    def compact(self) -> CompactReport:
        """Give the store's free space back and merge its full-text index (``Store.compact``), after the
        pending access bookkeeping is written; every fact, checkpoint and answer stays as it was."""
        self._access.flush()
        before, after = self.store.compact()
        return CompactReport(store=self.store.url, bytes_before=before, bytes_after=after)

    def latest_facts(
        self, agent_id: str, limit: int, *, include_superseded: bool = True
    ) -> builtins.list[Fact]:
        """The newest ``limit`` facts of the agent, newest first (a bounded listing, e.g. REST ``/facts``)."""
        self._access.flush()
        agent_id = self._agent(agent_id)
        return self.store.latest_facts(agent_id, limit, include_superseded=include_superseded)

    def facts_page(
        self,
        agent_id: str,
        limit: int,
        *,
        before: tuple[datetime, str] | None = None,
        live: bool | None = True,
        pinned: bool | None = None,
        confidence: Confidence | None = None,
        interface: Interface | None = None,
        scan: int | None = None,
    ) -> FactsPage:
        """Up to ``limit`` (1..1000) facts older than the ``before`` cursor, newest first by
        ``(created_at, id)``: live only, superseded only (``live=False``) or both (``None``), optionally
        only pinned / unpinned, of one confidence or written over one interface. Filters beyond live/all
        examine at most ``scan`` facts past the cursor when it is given (see :meth:`Store.facts_page`)."""
        if not 1 <= limit <= 1000 or (scan is not None and scan < 1):
            raise InvalidInput("limit must be 1..1000 and scan at least 1")
        self._access.flush()
        return self.store.facts_page(
            self._agent(agent_id), before=before, limit=limit, live=live, pinned=pinned,
            confidence=confidence, interface=interface, scan=scan,
        )  # fmt: skip

    # `list` is defined last so the builtin stays usable in the annotations above.
    def list(
        self, agent_id: str, *, include_superseded: bool = True, include_aliases: bool = False
    ) -> builtins.list[Fact]:
        """Facts of the agent, oldest first; tombstones included unless ``include_superseded=False``."""
        self._access.flush()
        kinds = ("fact", "alias") if include_aliases else ("fact",)
        return self.store.list_facts(
            self._agent(agent_id), include_superseded=include_superseded, kinds=kinds
        )


def _with_session(provenance: Provenance, session: str | None) -> Provenance:
    """``provenance`` carrying ``session`` (the argument wins over a session already in it)."""
    if session is None or provenance.session == session:
        return provenance
    return provenance.model_copy(update={"session": session})
