"""Keyword evidence weighed for fusion: context loans, the dates the query names, the vector similarity.

The keyword signal's final scores are its own matches plus context loans (:func:`.keyword.combine`),
re-scored by the calendar dates the query names (:mod:`.dates`) and, with an embedder, by how far each
match stands out as a vector neighbour (:func:`.fusion.semantic_rescore`); the fusion weights come with the
vector signal's trust (:func:`.fusion.vector_fusion`). Keyword-only recall of a query without dates gets
exactly the combined scores and the request's weights.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Protocol

from graymatter.models import SignalWeights
from graymatter.retrieval.dates import date_windows, dated_rescore
from graymatter.retrieval.fusion import vector_fusion
from graymatter.retrieval.keyword import KeywordEvidence, combine
from graymatter.retrieval.rescore import RescoredEvidence
from graymatter.retrieval.subject import subject_rescore


class Weighing(Protocol):
    """What weighing reads of a recall request (``pipeline.RecallRequest`` has all of it)."""

    @property
    def query(self) -> str: ...
    @property
    def context_max_gap_s(self) -> float: ...
    @property
    def date_weight(self) -> float: ...
    @property
    def trust_vectors(self) -> bool: ...
    @property
    def semantic_weight(self) -> float: ...
    @property
    def subject_weight(self) -> float: ...


def best_coverage(evidence: KeywordEvidence) -> float:
    """The share of the query the best keyword match covers (0 when keyword evidence was not re-scored)."""
    return evidence.best_coverage if isinstance(evidence, RescoredEvidence) else 0.0


def weigh(
    request: Weighing,
    evidence: KeywordEvidence,
    info: Mapping[str, tuple[datetime, str]],
    pool: int,
    weights: SignalWeights,
    similarity: Mapping[str, float],
    *,
    texts: Callable[[Sequence[str]], Mapping[str, str]] | None = None,
    query_stems: frozenset[str] = frozenset(),
) -> tuple[dict[str, float], dict[str, tuple[str, str | None]], SignalWeights]:
    """Final keyword scores (at most ``pool``; ``info``: id -> ``(created_at, confidence)`` of the facts
    that may rank), where each came from (``(source, lender)``), and the weights the fusion uses.
    ``texts`` reads fact texts for the subject re-score (:mod:`.subject`; none without it)."""
    created = {fid: row[0] for fid, row in info.items()}
    keyword_score, sources = combine(evidence, created, pool, max_gap_s=request.context_max_gap_s)
    if texts is not None:
        keyword_score = subject_rescore(keyword_score, texts, query_stems, request.subject_weight)
    dated = dated_rescore(keyword_score, info, date_windows(request.query), request.date_weight)
    trust = (best_coverage(evidence), request.trust_vectors, request.semantic_weight)
    rescored, fused = vector_fusion(dated, weights, similarity, *trust)
    return rescored, sources, fused
