"""The recall pipeline: candidates from each signal, ranks, fusion. Backend-neutral.

1. Alias facts of the searched namespaces expand the query terms (aliases are never candidates).
2. Keyword: stop-words dropped, rarest ``max_query_terms`` kept, BM25 over the store's full-text index,
   plus a phrase bonus and conversation context from neighbouring facts (see :mod:`.keyword`).
3. Vector: cosine over stored vectors, when an embedder is configured and the query embeds.
4. Recency: the candidate pool (keyword ∪ vector ∪ the newest ``recency_pool`` facts) ranked by age,
   newest first, at a one-hour resolution when a relevance signal exists (see :mod:`.recency`). Age runs
   from ``created_at`` (see docs/decisions/0002-recall-ranking.md).
5. Fusion (RRF, k=60) with the confidence factor, total order.
6. With a cross-encoder beside the embedder (the ``embed`` extra), the best 20 fused candidates re-ordered
   by it and their fused place together (see :mod:`.rerank`); then dedup, min-relevance, top-k.

Superseded facts never reach step 2-4: backends only index live facts.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol, cast

from graymatter.constants import CONFIDENCE_LEVELS, Confidence
from graymatter.models import SignalWeights, default_weights
from graymatter.retrieval import rerank
from graymatter.retrieval import synonyms as synonym
from graymatter.retrieval.dates import DATE_WEIGHT
from graymatter.retrieval.fusion import SEMANTIC_WEIGHT, Fused, evidence_order, order, select
from graymatter.retrieval.keyword import (
    CONTEXT_MAX_GAP_S,
    CONTEXT_SOURCES,
    CONTEXT_WEIGHT,
    CONTEXT_WINDOW,
    PHRASE_WEIGHT,
    KeywordEvidence,
    keyword_evidence,
)
from graymatter.retrieval.query import DEFAULT_MAX_POSTINGS, expand_with_aliases, query_terms, select_terms
from graymatter.retrieval.recall_reads import RecallReads, fact_loader
from graymatter.retrieval.recency import DEFAULT_RESOLUTION_S, recency_ranks
from graymatter.retrieval.relevance import relevance
from graymatter.retrieval.rescore import (
    COVERAGE_WEIGHT,
    TEMPORAL_WEIGHT,
    fact_texts,
    query_word_groups,
    rescore,
    stems_among,
)
from graymatter.retrieval.subject import SUBJECT_WEIGHT
from graymatter.retrieval.weighing import weigh
from graymatter.store.base import Store


class QueryEmbedder(Protocol):
    """What recall needs from an embedder."""

    model_id: str

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


DEFAULT_MIN_VECTOR_SIMILARITY = 0.3
"""A vector neighbour below this cosine similarity is not evidence of relevance."""


@dataclass(frozen=True)
class RecallRequest:
    """Everything that determines a ranking."""

    agent_ids: tuple[str, ...]
    query: str
    top_k: int = 8
    weights: SignalWeights = field(default_factory=default_weights)
    k: int = 60
    min_relevance: float = 0.0
    min_confidence: Confidence | None = None
    confidence_weight: float = 0.0
    candidate_pool: int = 100
    recency_pool: int = 50
    max_query_terms: int = 8
    max_query_postings: int | None = DEFAULT_MAX_POSTINGS
    recency_resolution_s: float = DEFAULT_RESOLUTION_S
    phrase_weight: float = PHRASE_WEIGHT
    context_weight: float = CONTEXT_WEIGHT
    context_window: int = CONTEXT_WINDOW
    context_sources: int = CONTEXT_SOURCES
    context_max_gap_s: float = CONTEXT_MAX_GAP_S
    min_vector_similarity: float = DEFAULT_MIN_VECTOR_SIMILARITY
    coverage_weight: float = COVERAGE_WEIGHT
    temporal_weight: float = TEMPORAL_WEIGHT
    trust_vectors: bool = True
    semantic_weight: float = SEMANTIC_WEIGHT
    date_weight: float = DATE_WEIGHT
    subject_weight: float = SUBJECT_WEIGHT
    rerank_depth: int = rerank.RERANK_DEPTH
    rerank_weight: float = rerank.RERANK_WEIGHT
    rerank_neighbours: int = rerank.RERANK_NEIGHBOURS
    synonym_weight: float = synonym.SYNONYM_WEIGHT
    synonym_min_similarity: float = synonym.SYNONYM_MIN_SIMILARITY


@dataclass(frozen=True)
class RecallOutcome:
    """The ranked results plus what the keyword signal actually searched for."""

    results: list[Fused]
    terms: list[str]
    vector_used: bool
    keyword_sources: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    """Per keyword-ranked fact: ``("match" | "phrase" | "context", lending fact id or None)``."""
    relevance: dict[str, float | None] = field(default_factory=dict)
    """Per result: the readable relevance figure of :mod:`.relevance` (None for a query without words)."""
    weights: SignalWeights | None = None
    """The weights the fusion used: the request's, with the vector weight scaled by its trust."""
    reranked: dict[str, int] = field(default_factory=dict)
    """Per fact the cross-encoder re-read (:mod:`.rerank`): its place in the fused order (1-based) before
    the re-ordering; empty when no cross-encoder ran."""
    synonyms: dict[str, str] = field(default_factory=dict)
    """Per result found only through a synonym of a query word (:mod:`.synonyms`): "word for query word"."""


def allowed_confidences(min_confidence: Confidence | None) -> list[str] | None:
    """Labels at or above ``min_confidence`` (None = no filter)."""
    if min_confidence is None:
        return None
    floor = CONFIDENCE_LEVELS[min_confidence]
    return [label for label, level in CONFIDENCE_LEVELS.items() if level >= floor]


def alias_groups(store: Store, agent_ids: Sequence[str]) -> list[list[str]]:
    """The alias groups (term, then its equivalents) of the searched namespaces."""
    return [[alias.text, *alias.equivalents] for alias in store.aliases(list(dict.fromkeys(agent_ids)))]


def keyword_terms(
    store: Store,
    agent_ids: Sequence[str],
    query: str,
    max_terms: int,
    max_postings: int | None = DEFAULT_MAX_POSTINGS,
    groups: Sequence[Sequence[str]] | None = None,
) -> list[str]:
    """Query terms after alias expansion and rarity capping, as sent to ``Store.keyword_search``."""
    terms = list(_informative(query))
    if not terms:
        return []
    if groups is None:
        groups = alias_groups(store, agent_ids)
    if groups:
        terms = expand_with_aliases(terms, groups)
    frequencies = store.document_frequencies(terms)
    return select_terms(terms, frequencies, max_terms, max_postings)


_TERMS: list[tuple[str, tuple[str, ...]]] = []


def _informative(query: str) -> tuple[str, ...]:
    """``query_terms(query)``, remembered for the last query (a recall asks three times)."""
    last = _TERMS[-1] if _TERMS else None
    if last is not None and last[0] == query:
        return last[1]
    terms = tuple(query_terms(query))
    _TERMS[:] = [(query, terms)]
    return terms


def run_recall(store: Store, request: RecallRequest, embedder: QueryEmbedder | None = None) -> RecallOutcome:
    """Rank the facts of ``request.agent_ids`` for ``request.query``. Read-only."""
    vector_store, store = store, cast(Store, RecallReads(store))
    confidences = allowed_confidences(request.min_confidence)
    agent_ids = list(dict.fromkeys(request.agent_ids))
    pool = max(request.candidate_pool, request.top_k)
    weights = request.weights

    vector_job = _start_vector(vector_store, request, embedder, agent_ids, pool, confidences)
    groups = alias_groups(store, agent_ids) if _informative(request.query) else []
    terms, evidence, synonyms = _keyword_signal(store, request, agent_ids, pool, confidences, groups)
    similarity, vector_used = vector_job.result() if vector_job is not None else ({}, False)
    vector_ids = list(similarity)
    # Only a recall without required evidence (see below) ranks the newest facts: with evidence required
    # they could neither join the members nor be ranked, so they are not read.
    relevance_required = bool(_informative(request.query)) and (weights.keyword > 0 or vector_job is not None)
    recency_pool = max(request.recency_pool, request.top_k)
    recent_ids = [] if relevance_required else store.recent(agent_ids, recency_pool, confidences)

    pool_ids = evidence.candidate_ids()
    if vector_ids or recent_ids:
        pool_ids = list(dict.fromkeys([*pool_ids, *vector_ids, *recent_ids]))
    allowed = None if confidences is None else set(confidences)
    info = store.rank_info(pool_ids)  # a new dict, filtered only when labels are asked for
    if allowed is not None:
        info = {fid: row for fid, row in info.items() if row[1] in allowed}
    keyword_score, keyword_sources, weights = _weigh(store, request, groups, evidence, info, similarity)
    # A query with informative words only returns facts with evidence of relevance (a keyword, phrase or
    # context hit, or a close vector neighbour); recency then orders among those. An empty or stop-word-only
    # query, or recency-only weights, keep the pure recency window (session start, sliding window).
    members = (
        {*keyword_score, *vector_ids} if relevance_required else {*keyword_score, *vector_ids, *recent_ids}
    )
    ranks, keyword_rank = _signal_ranks(request, info, members, keyword_score, vector_ids, set(recent_ids))
    ordered = order(ranks, info, weights=weights, k=request.k, confidence_weight=request.confidence_weight)
    reranker = rerank.reranker_of(embedder) if relevance_required else None
    ordered, reranked = rerank.rerank_head(store, request, reranker, ordered, vector_ids)
    load = fact_loader(store, allowed)
    # Loaded ``top_k`` at a time: a recall whose best ``top_k`` are distinct live facts decodes just those.
    results = select(
        ordered,
        load,
        top_k=request.top_k,
        min_relevance=request.min_relevance,
        batch=request.top_k,
        monotone=not reranked,
    )
    sources = {fid: keyword_sources[fid] for fid in keyword_rank if fid in keyword_sources}
    return RecallOutcome(
        results,
        terms,
        vector_used,
        sources,
        _relevance(store, request, groups, results, similarity, sources),
        weights,
        reranked,
        synonym.notes(results, sources, synonyms) if synonyms else {},
    )


def _start_vector(
    store: Store,
    request: RecallRequest,
    embedder: QueryEmbedder | None,
    agent_ids: list[str],
    pool: int,
    confidences: list[str] | None,
) -> Future[tuple[dict[str, float], bool]] | None:
    """The vector signal (query embedding + cosine search) started in a worker thread, so that it runs
    while the keyword searches run in the caller's: numpy, SQLite and HTTP embedders release the GIL."""
    if embedder is None or not request.query.strip() or request.weights.vector <= 0:
        return None
    args = (store, embedder, request.query, agent_ids, pool, confidences, request.min_vector_similarity)
    return _workers().submit(_vector_candidates, *args)


def _weigh(
    store: Store,
    request: RecallRequest,
    groups: Sequence[Sequence[str]],
    evidence: KeywordEvidence,
    info: dict[str, tuple[datetime, str]],
    similarity: dict[str, float],
) -> tuple[dict[str, float], dict[str, tuple[str, str | None]], SignalWeights]:
    """:func:`.weighing.weigh` with what its subject re-score reads: fact texts and the query's stems."""
    pool = max(request.candidate_pool, request.top_k)
    stems = frozenset().union(*query_word_groups(request.query, groups)) if evidence.own else frozenset()
    texts = functools.partial(fact_texts, store)
    return weigh(request, evidence, info, pool, request.weights, similarity, texts=texts, query_stems=stems)


def _relevance(
    store: Store,
    request: RecallRequest,
    groups: Sequence[Sequence[str]],
    results: Sequence[Fused],
    similarity: dict[str, float],
    sources: dict[str, tuple[str, str | None]],
) -> dict[str, float | None]:
    """The readable relevance of each result (lenders outside the results are read in one statement)."""
    texts = {item.candidate.fact.id: item.candidate.fact.text for item in results}
    lenders = [lender for fid in texts if (lender := sources.get(fid, ("", None))[1]) is not None]
    missing = [lid for lid in dict.fromkeys(lenders) if lid not in texts]
    lender_texts = fact_texts(store, missing) if missing else {}
    query_groups = query_word_groups(request.query, groups)
    wanted = frozenset().union(*query_groups)
    return relevance(
        query_groups,
        texts,
        similarity={fid: similarity[fid] for fid in texts if fid in similarity},
        sources=sources,
        lender_texts={**{lid: texts[lid] for lid in lenders if lid in texts}, **lender_texts},
        context_weight=request.context_weight,
        analyse=lambda some: stems_among(some, wanted, years=False),  # coverage reads only these
    )


def _keyword_signal(
    store: Store,
    request: RecallRequest,
    agent_ids: list[str],
    pool: int,
    confidences: list[str] | None,
    groups: Sequence[Sequence[str]],
) -> tuple[list[str], KeywordEvidence, dict[str, str]]:
    """The selected query terms, what the keyword searches found (none with keyword off), the synonyms."""
    if not (request.query.strip() and request.weights.keyword > 0):
        return [], KeywordEvidence(), {}
    terms = keyword_terms(
        store, agent_ids, request.query, request.max_query_terms, request.max_query_postings, groups
    )
    synonyms = synonym.searched(store, _informative(request.query), request)
    evidence = keyword_evidence(
        store,
        agent_ids,
        request.query,
        terms,
        pool,
        confidences,
        phrase_weight=request.phrase_weight,
        context_weight=request.context_weight,
        context_window=request.context_window,
        context_sources=request.context_sources,
        synonyms=list(synonyms),
        synonym_weight=request.synonym_weight,
    )
    weights = (request.coverage_weight, request.temporal_weight)
    return terms, rescore(store, request.query, groups, evidence, *weights), synonyms


def _signal_ranks(
    request: RecallRequest,
    info: dict[str, tuple[datetime, str]],
    members: set[str],
    keyword_score: dict[str, float],
    vector_ids: list[str],
    recent: set[str],
) -> tuple[dict[str, tuple[int, int, int]], dict[str, int]]:
    """Per member ``(keyword, vector, recency)`` ranks (0 = absent), and the keyword ranks alone."""
    # With a relevance signal, recency casts no vote: it orders equally strong keyword matches, newest
    # first (fusion.evidence_order), so it never outvotes evidence. Without one (empty query, recency-only
    # weights) it ranks the recent timeline exactly: the sliding window.
    if not vector_ids and len(members) == len(keyword_score) and all(fid in info for fid in keyword_score):
        # keyword-only: the members are the scored facts, each in ``info`` (the same maps, built once)
        created, evidence = {fid: info[fid][0] for fid in keyword_score}, keyword_score
    else:
        created = {fid: row[0] for fid, row in info.items() if fid in members}
        evidence = {fid: keyword_score[fid] for fid in keyword_score if fid in created}
    newest_first = request.weights.recency > 0  # recency orders equally strong matches (see fusion)
    keyword_order = evidence_order(
        evidence, created, newest_first=newest_first, resolution_s=request.recency_resolution_s
    )
    keyword_rank = dict(zip(keyword_order, range(1, len(keyword_order) + 1), strict=True))
    vector_rank = {fid: i for i, fid in enumerate((f for f in vector_ids if f in created), 1)}
    if keyword_rank or vector_rank:
        if not vector_rank and len(keyword_rank) == len(created):  # keyword-only: every member ranked
            return dict(zip(keyword_order, _ranks_alone(len(keyword_order)), strict=True)), keyword_rank
        recency_rank: dict[str, int] = {}
    else:
        timeline = {fid: row[0] for fid, row in info.items() if fid in members or fid in recent}
        recency_rank = recency_ranks(timeline, resolution_s=request.recency_resolution_s, exact=True)
    ranks = {
        fid: (keyword_rank.get(fid, 0), vector_rank.get(fid, 0), recency_rank.get(fid, 0)) for fid in created
    }
    return ranks, keyword_rank


_RANKS_ALONE: list[tuple[int, int, int]] = []


def _ranks_alone(count: int) -> list[tuple[int, int, int]]:
    """``[(1, 0, 0), (2, 0, 0), ...]``: the rank rows of a keyword-only recall, built once."""
    if len(_RANKS_ALONE) < count:
        _RANKS_ALONE.extend((rank, 0, 0) for rank in range(len(_RANKS_ALONE) + 1, count + 1))
    return _RANKS_ALONE[:count]


def _vector_candidates(
    store: Store,
    embedder: QueryEmbedder,
    query: str,
    agent_ids: list[str],
    limit: int,
    confidences: list[str] | None,
    min_similarity: float = 0.0,
) -> tuple[dict[str, float], bool]:
    """The cosine-nearest facts at or above ``min_similarity`` (id -> similarity, best first), and
    whether the query embedded."""
    try:
        query_vector = embedder.embed([query])[0]
    except Exception:  # an unreachable embedder degrades recall to keyword + recency, never fails it
        return {}, False
    hits = store.vector_search(agent_ids, query_vector, embedder.model_id, limit, confidences)
    return {hit.fact_id: hit.score for hit in hits if hit.score >= min_similarity}, True


_WORKERS: ThreadPoolExecutor | None = None
_WORKERS_LOCK = threading.Lock()


def _workers() -> ThreadPoolExecutor:
    """A small shared pool for the vector signal, created on first use (keyword-only never starts it)."""
    global _WORKERS
    with _WORKERS_LOCK:
        if _WORKERS is None:
            _WORKERS = ThreadPoolExecutor(max_workers=4, thread_name_prefix="graymatter-vector")
        return _WORKERS
