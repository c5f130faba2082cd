"""The recall part of the ``Memory`` facade: recall, shared recall, receipts and batches."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Unpack

from graymatter import validation as check
from graymatter.constants import SHARED_AGENT_ID, Confidence
from graymatter.engine.explain import explain, hit_fields
from graymatter.engine.memory_api import DEFAULT_SCOPE, RecallOptions
from graymatter.engine.memory_core import MemoryCore
from graymatter.errors import GraymatterError, InvalidInput
from graymatter.models import (
    BatchRecallResult,
    RecallExplanation,
    RecallHit,
    RecallScope,
    SignalWeights,
    utcnow,
)
from graymatter.retrieval.pipeline import RecallOutcome, RecallRequest, run_recall
from graymatter.trusted import constructor

log = logging.getLogger("graymatter")

_hit = constructor(
    RecallHit,
    {
        "id": "01ARZ3NDEKTSV4RRFFQ69G5FAV",
        "agent_id": "a",
        "text": "t",
        "score": 0.5,
        "created_at": utcnow(),
        "accessed_at": utcnow(),
        "weight": 1.0,
        "confidence": "inferred",
        "pinned": False,
        "relevance": None,
    },
)
"""A recall hit from complete fields (one per result), without ``model_construct``'s per-field work."""


class RecallMethods(MemoryCore):
    """Ranked recall over one or both namespaces; every call records one access write."""

    def _request(self, agent_id: str, query: str, top_k: int | None, options: RecallOptions) -> RecallRequest:
        scope = options.get("scope", DEFAULT_SCOPE)
        min_relevance, min_confidence = options.get("min_relevance"), options.get("min_confidence")
        confidence_weight, weights = options.get("confidence_weight"), options.get("weights")
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

    def _run(self, request: RecallRequest) -> RecallOutcome:
        outcome = run_recall(self.store, request, self._embeddings.embedder)
        # Access bookkeeping is queued and written off the answer's path (engine/access_log.py).
        self._access.add([r.candidate.fact.id for r in outcome.results], utcnow())
        return outcome

    def recall(
        self,
        agent_id: str,
        query: str,
        top_k: int | None = None,
        *,
        scope: RecallScope = DEFAULT_SCOPE,
        min_relevance: float | None = None,
        min_confidence: Confidence | None = None,
        confidence_weight: float | None = None,
        weights: SignalWeights | None = None,
    ) -> list[RecallHit]:
        """The ``top_k`` (default 8) live facts most relevant to ``query``, best first.

        ``scope``: ``"agent"`` (this agent), ``"shared"`` (``__shared__``) or ``"all"`` (both, ranked
        together). Access bookkeeping is one write per call. The order is deterministic: score, then
        oldest, then id.
        """
        options = RecallOptions(
            scope=scope,
            min_relevance=min_relevance,
            min_confidence=min_confidence,
            confidence_weight=confidence_weight,
            weights=weights,
        )
        request = self._request(agent_id, query, top_k, options)
        outcome = self._run(request)
        relevance = outcome.relevance
        return [_hit(hit_fields(item, relevance.get(item.candidate.fact.id))) for item in outcome.results]

    def recall_shared(
        self, query: str, top_k: int | None = None, **options: Unpack[RecallOptions]
    ) -> list[RecallHit]:
        """Recall from the project-wide ``__shared__`` namespace (the options of ``recall``)."""
        return self.recall(SHARED_AGENT_ID, query, top_k, **options)

    def recall_explain(
        self, agent_id: str, query: str, top_k: int | None = None, **options: Unpack[RecallOptions]
    ) -> list[RecallExplanation]:
        """``recall`` with a receipt per fact (same options, same ranking, same side effects).

        ``ranks.fused_score`` = Σ weight/(k + rank) over the non-zero ranks; ``score`` =
        ``ranking.final_score`` = fused × ``ranking.factor``.
        """
        request = self._request(agent_id, query, top_k, options)
        return explain(self.store, request, self._run(request))

    def recall_batch(
        self,
        agent_id: str,
        queries: Sequence[str],
        top_k: int | None = None,
        **options: Unpack[RecallOptions],
    ) -> list[BatchRecallResult]:
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
