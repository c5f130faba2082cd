"""Reciprocal-rank fusion and the confidence factor: the one place where signals are combined.

``fused = Σ_s weight_s / (k + rank_s)`` over the signals that ranked the fact (rank 0 = absent), then
``final = fused × (1 + confidence_weight × c)`` with c = +1 verified, 0 inferred, -1 unverified.
Results are in a total order: final score desc, then ``created_at`` asc (oldest first), then id asc.

Recency never outvotes evidence. When a relevance signal (keyword or vector) ranked the candidates, the
recency signal casts no vote of its own: it orders equally strong keyword matches (scores within
``NEAR_TIE`` of the best of their tier), newest first at the recency resolution, and that order is the
keyword rank (:func:`evidence_order`). A fact that matches more of the query is never ranked below a
weaker match because it is older. Without a relevance signal (an empty query, recency-only weights) the
recency rank votes as before, so a session-start window is still the newest facts.

The vector signal is weighed by how much it can be trusted for this store and query
(:func:`trusted_weights`): its weight shrinks as the best keyword match covers more of the query (words
the facts share need no paraphrase) and as the nearest neighbour stands out less from the rest of the
store's facts (a flat similarity profile is a weak signal). Keyword-only recall is unchanged.

The vector signal also re-scores the keyword matches (:func:`semantic_rescore`): a keyword match that is
also a near neighbour moves up by how far its cosine stands out from the 10th-30th nearest, on the scale
of the best keyword score, weighed down as the best keyword match covers more of the query. Its own RRF
vote then only brings in the facts the keywords missed, at ``VECTOR_VOTE`` x its trusted weight.

Scoring needs only ranks, ``created_at`` and the confidence label, so :func:`order` works on light
:class:`Scored` rows and :func:`select` loads full facts lazily, best first, only until ``top_k``
distinct texts are found: a recall decodes about ``top_k`` facts instead of its whole pool.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from graymatter.constants import CONFIDENCE_LEVELS
from graymatter.models import Fact, SignalWeights
from graymatter.retrieval.keyword_order import KeywordOrder, keyword_only

NEAR_TIE = 0.02
"""Keyword scores within this share of their tier's best are equally strong evidence: recency orders them.
(0.1 until session 4: it also reordered matches that were merely close, older answers behind newer near
misses; versions of one value score within 0.1 % of each other, so 2 % still orders every one of them.)"""


@dataclass(frozen=True, slots=True)
class Candidate:
    """A fact with its per-signal ranks (1-based; 0 = the signal did not rank it)."""

    fact: Fact
    keyword_rank: int = 0
    vector_rank: int = 0
    recency_rank: int = 0


@dataclass(frozen=True, slots=True)
class Fused:
    """A ranked candidate: fused (base) score, confidence factor and final score."""

    candidate: Candidate
    fused_score: float
    factor: float
    final_score: float


def rrf_score(
    keyword_rank: int, vector_rank: int, recency_rank: int, weights: SignalWeights, k: int
) -> float:
    """Weighted reciprocal-rank fusion of the three signal ranks."""
    score = 0.0
    for rank, weight in (
        (keyword_rank, weights.keyword),
        (vector_rank, weights.vector),
        (recency_rank, weights.recency),
    ):
        if rank > 0:
            score += weight / (k + rank)
    return score


def confidence_factor(confidence: str, confidence_weight: float) -> float:
    """``1 + w × c`` for the fact's confidence label."""
    return 1.0 + confidence_weight * CONFIDENCE_LEVELS.get(confidence, -1)


def fuse(
    candidates: Sequence[Candidate],
    *,
    weights: SignalWeights,
    k: int,
    top_k: int,
    confidence_weight: float = 0.0,
    min_relevance: float = 0.0,
) -> list[Fused]:
    """Score, order, de-duplicate by identical text, apply the min-relevance cut, and keep ``top_k``.

    Candidates whose fused score is zero (ranked only by zero-weight signals) are dropped.
    """
    scored: list[Fused] = []
    for cand in candidates:
        base = rrf_score(cand.keyword_rank, cand.vector_rank, cand.recency_rank, weights, k)
        if base <= 0.0:
            continue
        factor = confidence_factor(cand.fact.confidence, confidence_weight)
        scored.append(Fused(cand, base, factor, base * factor))
    scored.sort(key=lambda f: (-f.final_score, f.candidate.fact.created_at, f.candidate.fact.id))
    seen: set[str] = set()
    unique: list[Fused] = []
    for item in scored:
        text = item.candidate.fact.text
        if text in seen:
            continue
        seen.add(text)
        unique.append(item)
    if unique and min_relevance > 0:
        floor = min_relevance * unique[0].final_score
        unique = [f for f in unique if f.final_score >= floor]
    return unique[:top_k]


@dataclass(slots=True)
class Scored:
    """A candidate's ranks and scores before its fact is loaded (not frozen: one is built per candidate of
    every recall, and a frozen dataclass costs five times as much to build)."""

    fact_id: str
    created_at: datetime
    keyword_rank: int
    vector_rank: int
    recency_rank: int
    fused_score: float
    factor: float
    final_score: float


def order(
    ranks: Mapping[str, tuple[int, int, int]],
    info: Mapping[str, tuple[datetime, str]],
    *,
    weights: SignalWeights,
    k: int,
    confidence_weight: float = 0.0,
) -> Sequence[Scored]:
    """Score every candidate (``ranks``: id -> keyword, vector, recency rank; ``info``: id -> created_at,
    confidence) and return them in the total order. Zero fused scores are dropped."""
    by_rank = keyword_only(ranks, weights.keyword, k, confidence_weight)
    if by_rank is not None:
        return KeywordOrder(by_rank, info, weights.keyword, k, Scored)
    # rrf_score and confidence_factor inlined (the same operations in the same order, so the same floats):
    # this loop runs once per candidate of every recall.
    wk, wv, wr = weights.keyword, weights.vector, weights.recency
    factors = {label: confidence_factor(label, confidence_weight) for label in CONFIDENCE_LEVELS}
    keyed: list[tuple[float, datetime, str, Scored]] = []
    for fact_id, (keyword_rank, vector_rank, recency_rank) in ranks.items():
        base = 0.0
        if keyword_rank > 0:
            base += wk / (k + keyword_rank)
        if vector_rank > 0:
            base += wv / (k + vector_rank)
        if recency_rank > 0:
            base += wr / (k + recency_rank)
        if base <= 0.0:
            continue
        created_at, confidence = info[fact_id]
        factor = factors.get(confidence)
        if factor is None:
            factor = confidence_factor(confidence, confidence_weight)
        final = base * factor
        item = Scored(fact_id, created_at, keyword_rank, vector_rank, recency_rank, base, factor, final)
        keyed.append((-final, created_at, fact_id, item))
    keyed.sort(key=_KEY)  # (score, created_at, id) is unique: never compares the items
    return [entry[3] for entry in keyed]


_KEY = operator.itemgetter(0, 1, 2)


def select(
    ordered: Sequence[Scored],
    load: Callable[[Sequence[str]], Mapping[str, Fact]],
    *,
    top_k: int,
    min_relevance: float = 0.0,
    batch: int | None = None,
    monotone: bool = True,
) -> list[Fused]:
    """Walk ``ordered`` best first, loading facts in batches, skipping facts ``load`` no longer returns
    and repeated texts, until ``top_k`` results; apply the min-relevance cut against the best one (the
    first result). ``monotone=False`` (an order re-ranked after fusion, :mod:`.rerank`): a result under
    the cut is skipped instead of ending the walk, since a later one may score higher."""
    size = batch or top_k + 8
    unique: list[Fused] = []
    seen: set[str] = set()
    best: float | None = None
    for start in range(0, len(ordered), size):
        chunk = ordered[start : start + size]
        facts = load([item.fact_id for item in chunk])
        for item in chunk:
            fact = facts.get(item.fact_id)
            if fact is None or fact.text in seen:
                continue
            if best is None:
                best = item.final_score
            elif min_relevance > 0 and item.final_score < min_relevance * best:
                if monotone:
                    return unique
                continue
            seen.add(fact.text)
            candidate = Candidate(fact, item.keyword_rank, item.vector_rank, item.recency_rank)
            unique.append(Fused(candidate, item.fused_score, item.factor, item.final_score))
            if len(unique) >= top_k:
                return unique
    return unique


def evidence_order(
    scores: Mapping[str, float],
    created: Mapping[str, datetime],
    *,
    newest_first: bool,
    near_tie: float = NEAR_TIE,
    resolution_s: float = 3600.0,
) -> list[str]:
    """Ids of ``scores`` best first (ties: oldest first, then id); with ``newest_first``, equally strong
    scores are ordered by age instead.

    Tiers are formed best first: a score below ``(1 - near_tie)`` x its tier's best starts a new tier.
    Inside a tier, facts written within ``resolution_s`` of each other keep their score order, and an
    older group follows a newer one. Tiers never mix, so a stronger match always stays ahead.
    """
    keyed = sorted([(-score, created[fid], fid) for fid, score in scores.items()])  # ids are unique
    ordered = [fid for _, _, fid in keyed]
    if not newest_first or near_tie <= 0 or _one_group(keyed, resolution_s):
        return ordered
    out: list[str] = []
    count = len(ordered)
    start = 0
    while start < count:
        floor = (1.0 - near_tie) * scores[ordered[start]]
        end = start + 1
        while end < count and not scores[ordered[end]] < floor:
            end += 1
        if end - start == 1:  # most tiers hold one match: nothing to order
            out.append(ordered[start])
        else:
            out.extend(_newest_groups_first(ordered[start:end], created, resolution_s))
        start = end
    return out


def _one_group(keyed: list[tuple[float, datetime, str]], resolution_s: float) -> bool:
    """Whether every fact was written within ``resolution_s`` of every other (with a millisecond to spare
    for the rounding of timestamps): then each tier is one group and keeps its score order."""
    if len(keyed) < 2 or resolution_s < 0.01:
        return len(keyed) < 2
    try:
        moments = [entry[1] for entry in keyed]
        return max(moments) - min(moments) < timedelta(seconds=resolution_s - 0.001)
    except TypeError:  # naive and aware moments mixed: the per-tier path compares timestamps
        return False


def _newest_groups_first(tier: list[str], created: Mapping[str, datetime], resolution_s: float) -> list[str]:
    """One tier of :func:`evidence_order`: facts written within ``resolution_s`` of each other keep their
    score order, and an older group follows a newer one."""
    group: dict[str, int] = {}
    newest: float | None = None
    stamps = {fid: created[fid].timestamp() for fid in tier}
    if max(stamps.values()) - min(stamps.values()) <= resolution_s:
        return tier  # one group: the score order stands
    for fid in sorted(tier, key=stamps.__getitem__, reverse=True):  # reverse keeps ties in order
        moment = stamps[fid]
        if newest is None or newest - moment > resolution_s:
            newest = moment
        group[fid] = -int(newest * 1000)
    return sorted(tier, key=group.__getitem__)  # stable: score order inside a group


VECTOR_SEPARATION = 0.25
"""Cosine by which the nearest neighbour must stand out from the 10th-30th nearest for full trust."""


def vector_trust(similarity: Mapping[str, float], best_coverage: float) -> float:
    """How far the vector signal can be trusted for this query, in [0, 1].

    ``(1 - best_coverage) x min(1, separation / VECTOR_SEPARATION)``, where ``best_coverage`` is the share
    of the query's words the best keyword match contains and ``separation`` is the nearest neighbour's
    cosine minus the mean cosine of the 10th to 30th nearest (0 with fewer than 11 neighbours).
    """
    values = sorted(similarity.values(), reverse=True)
    if len(values) <= 10:
        return 0.0 if best_coverage >= 1.0 else 1.0 - best_coverage
    tail = values[9:30]
    separation = values[0] - sum(tail) / len(tail)
    strength = max(0.0, min(1.0, separation / VECTOR_SEPARATION))
    return max(0.0, 1.0 - best_coverage) * strength


def trusted_weights(
    weights: SignalWeights,
    similarity: Mapping[str, float],
    best_coverage: float,
    trust: bool = True,
    vote: float = 1.0,
) -> SignalWeights:
    """``weights`` with the vector weight scaled by :func:`vector_trust` and by ``vote`` (unchanged without
    neighbours, or when ``trust`` is off: the equal-weight fusion of earlier releases, kept for the
    ablation). ``vote`` is :data:`VECTOR_VOTE` when the vector signal re-scored the keyword matches."""
    if not (trust and similarity) or weights.vector <= 0:
        return weights
    vector = weights.vector * vote * vector_trust(similarity, best_coverage)
    return SignalWeights.model_construct(keyword=weights.keyword, vector=vector, recency=weights.recency)


SEMANTIC_WEIGHT = 2.0
"""How much a keyword match gains, in units of the best keyword score, per ``VECTOR_SEPARATION`` by which
its cosine stands out from the 10th-30th nearest (times ``1 - best keyword coverage``)."""
VECTOR_VOTE = 0.25
"""The vector signal's own RRF vote once it re-scored the keyword matches: it only adds the facts the
keywords missed, so it no longer counts the similarity of the ones they found a second time."""


def semantic_rescore(
    keyword_score: Mapping[str, float],
    similarity: Mapping[str, float],
    best_coverage: float,
    weight: float = SEMANTIC_WEIGHT,
) -> dict[str, float]:
    """Keyword scores on the scale of the best one (1.0), plus ``weight x (1 - best_coverage) x`` how far
    each fact's cosine stands out from the mean of the 10th-30th nearest, in ``VECTOR_SEPARATION`` units
    (0 below it, for facts that are not neighbours, and with fewer than 11 neighbours: no profile).

    Only keyword matches are re-scored. With ``weight`` 0 the scores are returned as they are: rescaling
    alone could round two scores a unit in the last place apart into a tie and so change their order."""
    if not keyword_score or weight <= 0:
        return dict(keyword_score)
    best = max(keyword_score.values())
    scale = 1.0 / best if best > 0 else 1.0
    values = sorted(similarity.values(), reverse=True)
    gain = weight * max(0.0, 1.0 - best_coverage) / VECTOR_SEPARATION
    if gain <= 0 or len(values) <= 10:
        return {fid: score * scale for fid, score in keyword_score.items()}
    tail = values[9:30]
    base = sum(tail) / len(tail)
    return {
        fid: score * scale + gain * max(0.0, similarity.get(fid, base) - base)
        for fid, score in keyword_score.items()
    }


def vector_fusion(
    keyword_score: dict[str, float],
    weights: SignalWeights,
    similarity: Mapping[str, float],
    best_coverage: float,
    trust: bool = True,
    semantic_weight: float = SEMANTIC_WEIGHT,
) -> tuple[dict[str, float], SignalWeights]:
    """The keyword scores and fusion weights once the vector signal is weighed: with trust and neighbours,
    keyword matches re-scored by :func:`semantic_rescore` and the vector vote at ``VECTOR_VOTE`` x its
    trusted weight; without neighbours (keyword-only recall) both unchanged; without trust, equal weights."""
    if not (trust and similarity and semantic_weight > 0 and weights.vector > 0):
        return keyword_score, trusted_weights(weights, similarity, best_coverage, trust)
    rescored = semantic_rescore(keyword_score, similarity, best_coverage, semantic_weight)
    return rescored, trusted_weights(weights, similarity, best_coverage, trust, VECTOR_VOTE)
