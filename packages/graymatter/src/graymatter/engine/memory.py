"""The ``Memory`` facade: the library API every face (CLI, MCP, REST) is built on."""

from __future__ import annotations

import builtins
import contextlib
import json
import logging
import os
import threading
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from graymatter import validation as check
from graymatter.config import MemoryConfig
from graymatter.engine.embeddings import Embedder, resolve_embedder
from graymatter.engine.lifecycle import Summariser, consolidate
from graymatter.errors import (
    EmbeddingError,
    GraymatterError,
    InvalidInput,
    NoCheckpoint,
    NotFound,
    StorageError,
)
from graymatter.ids import new_ulid
from graymatter.models import (
    CONFIDENCE_LEVELS,
    SHARED_AGENT_ID,
    SUPERSEDED_BY_AGENT,
    BatchRecallResult,
    Checkpoint,
    Confidence,
    ConsolidationReport,
    ExportBundle,
    Fact,
    ImportReport,
    Link,
    MemoryStats,
    Provenance,
    RankingPolicy,
    RecallExplanation,
    RecallHit,
    RecallScope,
    Revision,
    SignalRanks,
    SignalWeights,
    utcnow,
)
from graymatter.retrieval.fusion import Fused
from graymatter.retrieval.pipeline import RecallOutcome, RecallRequest, run_recall
from graymatter.store import Store, open_store

log = logging.getLogger("graymatter")

DEFAULT_DIR = ".graymatter"
_DEFAULT = object()
_REEMBED_BATCH = 64


def default_data_dir() -> Path:
    """``$GRAYMATTER_DIR`` if set, else ``./.graymatter``."""
    return Path(os.environ.get("GRAYMATTER_DIR") or DEFAULT_DIR)


def _not_found(text: str) -> str:
    shown = text if len(text) <= 120 else text[:117] + "..."
    return f"target fact not found: {json.dumps(shown, ensure_ascii=False)}"


class _KeyedEmbedder:
    """An embedder whose ``model_id`` also pins the vector dimension (``model/dim``)."""

    def __init__(self, inner: Embedder, key: str) -> None:
        self.inner = inner
        self.model_id = key

    def embed(self, texts: Sequence[str]) -> builtins.list[builtins.list[float]]:
        return self.inner.embed(texts)


class Memory:
    """Durable facts, recall and checkpoints for agents.

    ``Memory(data_dir)`` opens (creating if needed) the embedded SQLite store in ``data_dir``
    (default ``$GRAYMATTER_DIR`` or ``./.graymatter``); pass ``store=`` to use another backend, e.g.
    ``open_store("postgresql://...")``. ``embedder`` defaults to what ``config.embedding`` selects
    (keyword-only unless configured); pass ``None`` for keyword-only or an ``Embedder`` instance.
    """

    def __init__(
        self,
        data_dir: str | os.PathLike[str] | None = None,
        *,
        store: Store | None = None,
        embedder: Any = _DEFAULT,
        config: MemoryConfig | None = None,
        summariser: Summariser | object | None = _DEFAULT,
        on_consolidate_error: Callable[[str, Exception], None] | None = None,
    ) -> None:
        self.config = config if config is not None else MemoryConfig.from_env()
        if store is None:
            store = open_store(data_dir if data_dir is not None else default_data_dir())
        self.store: Store = store
        self.data_dir: Path | None = getattr(store, "data_dir", None)
        """The store's directory (embedded SQLite), else ``None``."""
        self._closed = False
        self._threads: builtins.list[threading.Thread] = []
        self._threads_lock = threading.Lock()
        self._inflight: set[str] = set()
        self._consolidation_slots = threading.BoundedSemaphore(self.config.max_async_consolidations)
        self._on_consolidate_error = on_consolidate_error
        self.close_timeout_s = 30.0
        """How long ``close()`` (and leaving a ``with`` block) waits for background consolidation."""
        self.last_consolidation_error: str | None = None
        try:
            inner = resolve_embedder(self.config) if embedder is _DEFAULT else embedder
            if summariser is _DEFAULT:
                from graymatter.engine.summarisers import resolve_summariser

                summariser = resolve_summariser(self.config)
            self.summariser: Summariser | None = summariser  # type: ignore[assignment]
            self._embedder: _KeyedEmbedder | None = None
            if inner is not None:
                self._init_embeddings(inner)
        except BaseException:
            self.store.close()
            raise

    # -- lifecycle ---------------------------------------------------------------------------------
    def close(self, timeout_s: float | None = None) -> None:
        """Wait (at most ``timeout_s``, default ``close_timeout_s``) for background consolidation, then
        release the store. Idempotent."""
        if self._closed:
            return
        self._closed = True
        with self._threads_lock:
            threads = builtins.list(self._threads)
        for thread in threads:
            thread.join(self.close_timeout_s if timeout_s is None else timeout_s)
        self.store.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close(self.close_timeout_s)

    @property
    def embedding_model(self) -> str | None:
        """``model/dimension`` of the active embedder, or ``None`` when keyword-only."""
        return self._embedder.model_id if self._embedder else None

    # -- validation helpers ------------------------------------------------------------------------
    def _agent(self, agent_id: Any) -> str:
        return check.agent_id(agent_id, self.config.max_agent_id_chars)

    def _text(self, text: Any, field: str = "text") -> str:
        return check.text(text, self.config.max_text_bytes, field)

    # -- embeddings --------------------------------------------------------------------------------
    def _init_embeddings(self, inner: Embedder) -> None:
        stored = self.store.embedding_model()
        try:
            probe = inner.embed(["graymatter dimension probe"])[0]
            key: str | None = f"{inner.model_id}/{len(probe)}"
        except EmbeddingError as exc:
            log.warning("embedder %s unavailable (%s); new facts will be embedded later", inner.model_id, exc)
            key = stored if stored and stored.startswith(f"{inner.model_id}/") else None
        if key is None:
            self._embedder = None
            return
        self._embedder = _KeyedEmbedder(inner, key)
        if stored != key:
            self.store.reset_embeddings(key)
            self.reembed_pending(limit=None)
        else:
            self.reembed_pending(limit=_REEMBED_BATCH * 4)

    def _embed_one(self, text: str) -> builtins.list[float] | None:
        if self._embedder is None:
            return None
        try:
            return self._embedder.embed([text])[0]
        except Exception as exc:  # never fail a write because of the embedder
            log.warning(
                "embedding failed (%s); the fact is stored and queued for re-embedding", type(exc).__name__
            )
            return None

    def reembed_pending(self, limit: int | None = _REEMBED_BATCH) -> int:
        """Embed facts waiting for a vector (all when ``limit`` is None); return how many were stored.

        Stops quietly at the first provider failure; the rest stay queued.
        """
        if self._embedder is None:
            return 0
        done = 0
        while limit is None or done < limit:
            size = _REEMBED_BATCH if limit is None else min(_REEMBED_BATCH, limit - done)
            batch = self.store.pending_embeddings(size)
            if not batch:
                break
            try:
                vectors = self._embedder.embed([f.text for f in batch])
            except Exception as exc:
                log.warning("re-embedding paused: %s", type(exc).__name__)
                break
            stored = self.store.set_vectors(
                zip([f.id for f in batch], vectors, strict=True), self._embedder.model_id
            )
            done += len(batch)
            if stored == 0:
                break
        return done

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
            equivalents=equivalents or [],  # type: ignore[arg-type]
            provenance=provenance,
        )

    def _store_fact(self, fact: Fact) -> Fact:
        vector = self._embed_one(fact.text) if fact.kind == "fact" else None
        self.store.add_facts([fact], [vector], self._embedder.model_id if self._embedder else None)
        self._after_write(fact.agent_id, embedded=vector is not None)
        return fact

    def remember(
        self,
        agent_id: str,
        text: str,
        *,
        confidence: Confidence = "inferred",
        provenance: Provenance | dict[str, Any] | None = None,
    ) -> Fact:
        """Store one durable fact and return it. Identical texts are stored as separate facts."""
        agent_id = self._agent(agent_id)
        text = self._text(text)
        fact = self._new_fact(
            agent_id, text, confidence=check.confidence(confidence), provenance=check.provenance(provenance)
        )
        return self._store_fact(fact)

    def remember_shared(
        self,
        text: str,
        *,
        confidence: Confidence = "inferred",
        provenance: Provenance | dict[str, Any] | None = None,
    ) -> Fact:
        """Store a fact in the project-wide ``__shared__`` namespace."""
        return self.remember(SHARED_AGENT_ID, text, confidence=confidence, provenance=provenance)

    def remember_many(
        self,
        agent_id: str,
        texts: Sequence[str],
        *,
        confidence: Confidence = "inferred",
        provenance: Provenance | dict[str, Any] | None = None,
    ) -> builtins.list[Fact]:
        """Store several facts in one transaction (all or none)."""
        agent_id = self._agent(agent_id)
        clean = [self._text(t) for t in texts]
        prov = check.provenance(provenance)
        label = check.confidence(confidence)
        facts = [self._new_fact(agent_id, t, confidence=label, provenance=prov) for t in clean]
        vectors: builtins.list[Any] = [None] * len(facts)
        if self._embedder is not None and facts:
            try:
                vectors = builtins.list(self._embedder.embed(clean))
            except Exception as exc:
                log.warning("batch embedding failed (%s); facts queued for re-embedding", type(exc).__name__)
        self.store.add_facts(facts, vectors, self._embedder.model_id if self._embedder else None)
        self._after_write(agent_id, embedded=vectors[0] is not None if vectors else False, count=len(facts))
        return facts

    def _after_write(self, agent_id: str, *, embedded: bool, count: int = 1) -> None:
        if embedded and self._embedder is not None:
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
            self._consolidate_in_background(agent_id)

    def _consolidate_in_background(self, agent_id: str) -> None:
        with self._threads_lock:
            if self._closed or agent_id in self._inflight:
                return  # one cycle per namespace at a time in this process
            if not self._consolidation_slots.acquire(blocking=False):
                return  # at most max_async_consolidations run at once; extra triggers are dropped
            self._inflight.add(agent_id)
        with contextlib.suppress(GraymatterError):
            self.store.reset_write_counter(agent_id)  # writes during the cycle count towards the next one

        def run() -> None:
            try:
                report = consolidate(self.store, agent_id, self.config, self.summariser)
                if report.summariser_error:
                    self.last_consolidation_error = f"summariser: {report.summariser_error}"
            except Exception as exc:
                self.last_consolidation_error = f"{type(exc).__name__}: {exc}"
                if self._on_consolidate_error is not None:
                    self._on_consolidate_error(agent_id, exc)
                else:
                    log.warning("background consolidation of %r failed: %s", agent_id, exc)
            finally:
                self._consolidation_slots.release()
                with self._threads_lock:
                    self._inflight.discard(agent_id)
                    with contextlib.suppress(ValueError):
                        self._threads.remove(threading.current_thread())

        thread = threading.Thread(target=run, name=f"graymatter-consolidate-{agent_id[:32]}", daemon=True)
        with self._threads_lock:
            self._threads.append(thread)
        thread.start()

    def wait_for_background(self, timeout_s: float = 30.0) -> None:
        """Block until running background consolidations finish (tests, CLI shutdown)."""
        with self._threads_lock:
            threads = builtins.list(self._threads)
        for thread in threads:
            thread.join(timeout_s)

    def alias(
        self,
        agent_id: str,
        term: str,
        equivalents: Sequence[str],
        *,
        provenance: Provenance | dict[str, Any] | None = None,
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
        provenance: Provenance | dict[str, Any] | None = None,
    ) -> Revision:
        """Replace every live fact whose text is exactly ``old_text``.

        The replacement is written first, then the old facts are tombstoned with ``superseded_by`` = the
        replacement id. Without an explicit label the replacement gets the lower of ``inferred`` and the
        lowest label among the targets. A revision never inherits a pin.
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
        self._store_fact(replacement)
        try:
            retired = self.store.supersede([f.id for f in targets], replacement.id)
        except GraymatterError as exc:
            raise StorageError(
                f"replacement {replacement.id} was stored, but retiring the old fact failed: {exc}"
            ) from exc
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
        relation: str = "agent_link",
        *,
        provenance: Provenance | dict[str, Any] | None = None,
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

    # -- recall ------------------------------------------------------------------------------------
    def _request(
        self,
        agent_id: str,
        query: str,
        top_k: int | None,
        scope: RecallScope,
        min_relevance: float | None,
        min_confidence: Confidence | None,
        confidence_weight: float | None,
        weights: SignalWeights | None,
    ) -> RecallRequest:
        if scope not in ("agent", "shared", "all"):
            raise InvalidInput('scope must be "agent", "shared" or "all"')
        agent_id = SHARED_AGENT_ID if scope == "shared" and agent_id is None else self._agent(agent_id)
        namespaces = {"agent": (agent_id,), "shared": (SHARED_AGENT_ID,), "all": (agent_id, SHARED_AGENT_ID)}
        if weights is not None and not isinstance(weights, SignalWeights):
            raise InvalidInput("weights must be a SignalWeights")
        cfg = self.config
        return RecallRequest(
            agent_ids=tuple(dict.fromkeys(namespaces[scope])),
            query=check.query(query, cfg.max_text_bytes),
            top_k=cfg.top_k if top_k is None else check.top_k(top_k),
            weights=weights or cfg.weights,
            k=cfg.rrf_k,
            min_relevance=cfg.min_relevance if min_relevance is None else check.min_relevance(min_relevance),
            min_confidence=cfg.min_confidence if min_confidence is None else check.confidence(min_confidence),
            confidence_weight=(
                cfg.confidence_weight
                if confidence_weight is None
                else check.confidence_weight(confidence_weight)
            ),
            candidate_pool=cfg.candidate_pool,
            recency_pool=cfg.recency_pool,
            max_query_terms=cfg.max_query_terms,
            max_query_postings=cfg.max_query_postings,
            recency_resolution_s=cfg.recency_resolution_s,
            context_max_gap_s=cfg.context_max_gap_s,
            min_vector_similarity=cfg.min_vector_similarity,
        )

    def _rank(self, request: RecallRequest) -> builtins.list[Fused]:
        return self._run(request).results

    def _run(self, request: RecallRequest) -> RecallOutcome:
        outcome = run_recall(self.store, request, self._embedder)
        results = outcome.results
        if results:
            try:
                self.store.record_access([r.candidate.fact.id for r in results], utcnow())
            except StorageError as exc:  # e.g. a read-only store: recall still answers
                log.warning("access bookkeeping skipped: %s", exc)
        return outcome

    @staticmethod
    def _hit(item: Fused) -> dict[str, Any]:
        fact = item.candidate.fact
        return {
            "id": fact.id,
            "agent_id": fact.agent_id,
            "text": fact.text,
            "score": item.final_score,
            "created_at": fact.created_at,
            "accessed_at": fact.accessed_at,
            "weight": fact.weight,
            "confidence": fact.confidence,
            "pinned": fact.pinned,
        }

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
    ) -> builtins.list[RecallHit]:
        """The ``top_k`` (default 8) live facts most relevant to ``query``, best first.

        ``scope``: ``"agent"`` (this agent), ``"shared"`` (``__shared__``) or ``"all"`` (both, ranked
        together). Access bookkeeping is one write per call. The order is deterministic: score, then
        oldest, then id.
        """
        request = self._request(
            agent_id, query, top_k, scope, min_relevance, min_confidence, confidence_weight, weights
        )
        return [RecallHit.model_construct(**self._hit(item)) for item in self._rank(request)]

    def recall_shared(self, query: str, top_k: int | None = None, **options: Any) -> builtins.list[RecallHit]:
        """Recall from the project-wide ``__shared__`` namespace."""
        return self.recall(SHARED_AGENT_ID, query, top_k, **options)

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
    ) -> builtins.list[RecallExplanation]:
        """``recall`` with a receipt per fact (same ranking, same side effects).

        ``ranks.fused_score`` = Σ weight/(k + rank) over the non-zero ranks; ``score`` =
        ``ranking.final_score`` = fused × ``ranking.factor``.
        """
        request = self._request(
            agent_id, query, top_k, scope, min_relevance, min_confidence, confidence_weight, weights
        )
        outcome = self._run(request)
        results = outcome.results
        sources: dict[str, tuple[str, str | None]] = getattr(outcome, "keyword_sources", None) or {}
        ids = [r.candidate.fact.id for r in results]
        supersedes = self.store.supersedes(ids) if ids else {}
        links = self.store.links(builtins.list(request.agent_ids)) if ids else []
        now = utcnow()
        out = []
        for item in results:
            fact = item.candidate.fact
            lowered = fact.text.casefold()
            related = [
                ln
                for ln in links
                if ln.agent_id == fact.agent_id and (ln.source in lowered or ln.target in lowered)
            ]
            out.append(
                RecallExplanation(
                    **self._hit(item),
                    ranks=SignalRanks(
                        keyword_rank=item.candidate.keyword_rank,
                        vector_rank=item.candidate.vector_rank,
                        recency_rank=item.candidate.recency_rank,
                        fused_score=item.fused_score,
                        k=request.k,
                    ),
                    weights=request.weights,
                    ranking=RankingPolicy(
                        base_score=item.fused_score,
                        final_score=item.final_score,
                        factor=item.factor,
                        confidence_weight=request.confidence_weight,
                        effective_confidence=fact.confidence,
                    ),
                    age_days=round(max(0.0, (now - fact.created_at).total_seconds()) / 86_400, 6),
                    keyword_source=(
                        sources.get(fact.id, ("match", None))[0] if item.candidate.keyword_rank else None
                    ),
                    keyword_context_from=(
                        sources.get(fact.id, ("match", None))[1] if item.candidate.keyword_rank else None
                    ),
                    supersedes=supersedes.get(fact.id, []),
                    links=related,
                    provenance=fact.provenance,
                )
            )
        return out

    def recall_batch(
        self, agent_id: str, queries: Sequence[str], top_k: int | None = None, **options: Any
    ) -> builtins.list[BatchRecallResult]:
        """Several recalls at once; blank queries are skipped; a failing query reports its error."""
        agent_id = self._agent(agent_id)
        if isinstance(queries, str) or not isinstance(queries, Sequence):
            raise InvalidInput("queries must be a list of strings")
        out = []
        for query in queries:
            if not isinstance(query, str) or not query.strip():
                continue
            try:
                out.append(
                    BatchRecallResult(query=query, hits=self.recall(agent_id, query, top_k, **options))
                )
            except GraymatterError as exc:
                out.append(BatchRecallResult(query=query, error=str(exc)))
        return out

    # -- inspection --------------------------------------------------------------------------------
    def get(self, fact_id: str) -> Fact:
        """One fact by id (live or superseded)."""
        found = self.store.get_facts([fact_id]) if isinstance(fact_id, str) else []
        if not found:
            raise NotFound("no fact has that id")
        return found[0]

    def stats(self, agent_id: str) -> MemoryStats:
        """Counts and ages of one namespace."""
        return self.store.stats(self._agent(agent_id))

    def agents(self) -> builtins.list[str]:
        """Every agent id with facts, checkpoints or links, sorted."""
        return self.store.agents()

    def consolidate(self, agent_id: str, *, now: datetime | None = None) -> ConsolidationReport:
        """Run one consolidation cycle (decay, optional summarisation, prune) now, in the caller's thread."""
        agent_id = self._agent(agent_id)
        report = consolidate(self.store, agent_id, self.config, self.summariser, now)
        self.store.reset_write_counter(agent_id)
        return report

    # -- checkpoints -------------------------------------------------------------------------------
    def checkpoint_save(
        self,
        agent_id: str,
        state: dict[str, Any] | str | None = None,
        *,
        messages: Sequence[Any] | None = None,
        metadata: dict[str, Any] | None = None,
        provenance: Provenance | dict[str, Any] | None = None,
    ) -> Checkpoint:
        """Save a new checkpoint (never overwrites). ``state`` must be a JSON object (or a string of one)."""
        agent_id = self._agent(agent_id)
        limit = self.config.max_checkpoint_bytes
        clean_state = {} if state is None else check.json_object(state, "state", limit)
        if messages is not None and (isinstance(messages, str | bytes) or not isinstance(messages, Sequence)):
            raise InvalidInput("messages must be a list")
        message_list = builtins.list(messages) if messages is not None else None
        if message_list is not None and len(check.json_bytes(message_list, "messages")) > limit:
            raise InvalidInput(f"messages exceed the limit of {limit} bytes")
        clean_meta = {} if metadata is None else check.json_object(metadata, "metadata", limit)
        checkpoint = Checkpoint(
            id=new_ulid(),
            agent_id=agent_id,
            created_at=utcnow(),
            state=clean_state,
            messages=message_list,
            message_count=len(message_list or []),
            metadata=clean_meta,
            provenance=check.provenance(provenance),
        )
        self.store.save_checkpoint(checkpoint)
        return checkpoint

    def checkpoint_latest(self, agent_id: str) -> Checkpoint:
        """The newest checkpoint; ``NoCheckpoint`` if the agent has none."""
        agent_id = self._agent(agent_id)
        checkpoint = self.store.latest_checkpoint(agent_id)
        if checkpoint is None:
            raise NoCheckpoint(f'no checkpoints for agent "{agent_id}"')
        return checkpoint

    def checkpoint_get(self, agent_id: str, checkpoint_id: str) -> Checkpoint:
        """One checkpoint of this agent by id; ``NoCheckpoint`` if unknown."""
        agent_id = self._agent(agent_id)
        if not isinstance(checkpoint_id, str) or not checkpoint_id.strip():
            raise InvalidInput("checkpoint id is required")
        checkpoint = self.store.get_checkpoint(checkpoint_id.strip())
        if checkpoint is None or checkpoint.agent_id != agent_id:
            raise NoCheckpoint(f'no checkpoint "{checkpoint_id.strip()[:64]}" for agent "{agent_id}"')
        return checkpoint

    def checkpoint_list(self, agent_id: str, limit: int | None = None) -> builtins.list[Checkpoint]:
        """Checkpoints of the agent, newest first."""
        return self.store.list_checkpoints(self._agent(agent_id), limit)

    # -- export / import ---------------------------------------------------------------------------
    def export(self, agent_id: str | None = None) -> ExportBundle:
        """Everything (or one namespace): facts including tombstones and aliases, checkpoints, links."""
        agent = None if agent_id is None else self._agent(agent_id)
        facts = self.store.list_facts(agent, include_superseded=True, kinds=("fact", "alias"))
        return ExportBundle(
            exported_at=utcnow(),
            facts=facts,
            checkpoints=builtins.list(reversed(self.store.list_checkpoints(agent))),
            links=self.store.links(None if agent is None else [agent]),
        )

    def import_bundle(self, bundle: ExportBundle | dict[str, Any] | str) -> ImportReport:
        """Load an export; records whose ids already exist are skipped (re-importing is a no-op)."""
        if not isinstance(bundle, ExportBundle):
            try:
                bundle = (
                    ExportBundle.model_validate_json(bundle)
                    if isinstance(bundle, str)
                    else ExportBundle.model_validate(bundle)
                )
            except Exception as exc:
                first = exc.errors()[0] if hasattr(exc, "errors") else None  # pydantic ValidationError
                where = ".".join(str(p) for p in first["loc"]) if first else ""
                raise InvalidInput(
                    f"not a graymatter JSON export ({where or type(exc).__name__}: "
                    f"{first['msg'] if first else 'invalid'})"
                ) from None
        for fact in bundle.facts:
            self._agent(fact.agent_id)
            self._text(fact.text)
        facts_added, facts_skipped = self.store.import_facts(bundle.facts)
        cps_added, cps_skipped = self.store.import_checkpoints(bundle.checkpoints)
        links_added, links_skipped = self.store.import_links(bundle.links)
        if facts_added:
            self.reembed_pending(limit=None)
        return ImportReport(
            facts_added=facts_added,
            facts_skipped=facts_skipped,
            checkpoints_added=cps_added,
            checkpoints_skipped=cps_skipped,
            links_added=links_added,
            links_skipped=links_skipped,
        )

    def latest_facts(self, agent_id: str, limit: int, *, include_superseded: bool = True) -> builtins.list[Fact]:
        """The newest ``limit`` facts of the agent, newest first (a bounded listing, e.g. REST ``/facts``)."""
        agent_id = self._agent(agent_id)
        latest = getattr(self.store, "latest_facts", None)  # until the Store protocol declares it
        if latest is None:  # the embedded store lists everything; newest first, cut here
            facts = self.list(agent_id, include_superseded=include_superseded)
            return builtins.list(reversed(facts))[:limit]
        found: builtins.list[Fact] = latest(agent_id, limit, include_superseded=include_superseded)
        return found

    # `list` is defined last so the builtin stays usable in the annotations above.
    def list(
        self, agent_id: str, *, include_superseded: bool = True, include_aliases: bool = False
    ) -> builtins.list[Fact]:
        """Facts of the agent, oldest first; tombstones included unless ``include_superseded=False``."""
        kinds = ("fact", "alias") if include_aliases else ("fact",)
        return self.store.list_facts(
            self._agent(agent_id), include_superseded=include_superseded, kinds=kinds
        )
