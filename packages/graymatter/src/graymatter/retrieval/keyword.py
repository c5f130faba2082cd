"""The keyword signal: BM25 candidates, a phrase bonus, and conversation context from neighbouring facts.

Three parts, all computed from backend BM25 scores so every backend ranks identically:

* **BM25** over the selected query terms (``Store.keyword_search``).
* **Phrase bonus**: adjacent informative query words ("slow cooker", "support group") are searched as
  phrases; a fact matching a phrase gets ``PHRASE_WEIGHT`` x the phrase's BM25 score on top.
* **Conversation context**: facts are often written in sequence (turns of a conversation, steps of a
  session), and the fact that answers a question is frequently next to the one that mentions its words
  ("What's your favourite dish?" / "Coconut ice cream, definitely."). Each of the best
  ``CONTEXT_SOURCES`` hits lends ``CONTEXT_WEIGHT`` x its score to the facts the same agent wrote up to
  ``CONTEXT_WINDOW`` positions before or after it, provided the two were written within
  ``CONTEXT_MAX_GAP_S`` of each other (one conversation or session, not a neighbour from another
  day); a fact keeps the largest loan it receives. Explanations name the lending fact.

Measured on LoCoMo turn retrieval (benchmarks/README.md): BM25 alone 0.670 hit@10 / 0.462 MRR; with
phrase bonus and context 0.77 / 0.50. The weights were chosen on that data and checked on the
synthetic suite; they are not per-dataset switches.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import cast

from graymatter.retrieval.query import tokenize
from graymatter.store.base import Store

PHRASE_WEIGHT = 0.25
CONTEXT_WEIGHT = 0.5
CONTEXT_WINDOW = 2
CONTEXT_SOURCES = 20
CONTEXT_MAX_GAP_S = 3600.0


def phrase_terms(query: str, selected_terms: Sequence[str]) -> list[str]:
    """Adjacent word pairs of ``query`` whose both words survived term selection, as phrases.

    Only selected (rare enough) words take part, so a phrase never costs a scan of a frequent word's
    posting list. Pairs are distinct, in query order.
    """
    chosen = set(selected_terms)
    words = tokenize(query)
    pairs = [
        f"{first} {second}"
        for first, second in itertools.pairwise(words)
        if first in chosen and second in chosen and first != second
    ]
    return list(dict.fromkeys(pairs))


@dataclass
class KeywordEvidence:
    """What the keyword signal found before conversation context is applied.

    ``own``: score of facts that matched themselves (BM25 plus phrase bonus and synonym matches);
    ``sources``: how each of them matched (``"match"`` for the kept terms, ``"phrase"`` when only the phrase
    search found it, ``"synonym"`` when only the synonym search did);
    ``loans``: for a neighbour of a top hit, every (loan, lender id) it was offered, best first.
    """

    own: dict[str, float] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    loans: dict[str, list[tuple[float, str]]] = field(default_factory=dict)

    def candidate_ids(self) -> list[str]:
        """Own matches (BM25 order) then borrowers: the ids whose ``created_at`` ``combine`` needs."""
        if not self.loans:
            return list(self.own)
        return list(dict.fromkeys([*self.own, *self.loans]))


def keyword_evidence(
    store: Store,
    agent_ids: Sequence[str],
    query: str,
    terms: Sequence[str],
    limit: int,
    confidences: Sequence[str] | None = None,
    *,
    phrase_weight: float = PHRASE_WEIGHT,
    context_weight: float = CONTEXT_WEIGHT,
    context_window: int = CONTEXT_WINDOW,
    context_sources: int = CONTEXT_SOURCES,
    synonyms: Sequence[str] = (),
    synonym_weight: float = 0.0,
) -> KeywordEvidence:
    """Run the keyword searches (terms, phrases, the query words' ``synonyms`` at ``synonym_weight``:
    see :mod:`.synonyms`) and collect the context loans of the best hits."""
    evidence = KeywordEvidence()
    synonyms = synonyms if synonym_weight > 0 else ()
    if not terms and not synonyms:
        return evidence
    own = evidence.own = dict(_scores(store, agent_ids, terms, limit, confidences)) if terms else {}
    sources = evidence.sources = dict.fromkeys(own, "match")
    if own:
        phrases = phrase_terms(query, terms) if phrase_weight > 0 else []
        for fid, score in _scores(store, agent_ids, phrases, limit, confidences) if phrases else ():
            own[fid] = own.get(fid, 0.0) + phrase_weight * score
            sources.setdefault(fid, "phrase")
    for fid, score in _scores(store, agent_ids, synonyms, limit, confidences) if synonyms else ():
        own[fid] = own.get(fid, 0.0) + synonym_weight * score
        sources.setdefault(fid, "synonym")
    if not own:
        return evidence
    if context_weight <= 0 or context_window <= 0 or context_sources <= 0:
        return evidence
    turns = getattr(store, "any_turn", None)
    if turns is not None and not turns(own):
        return evidence  # no match is a conversation turn: none has neighbours, nothing is lent
    # Stable sort: equal scores keep BM25 order (the backend's total order).
    lenders = sorted(evidence.own.items(), key=lambda item: -item[1])[:context_sources]
    adjacent = store.neighbours([fid for fid, _ in lenders], context_window)
    for lender, score in lenders:
        for borrower in adjacent.get(lender, ()):
            evidence.loans.setdefault(borrower, []).append((context_weight * score, lender))
    for offers in evidence.loans.values():
        offers.sort(key=lambda offer: -offer[0])  # stable: equal loans keep lender order
    return evidence


def _scores(
    store: Store,
    agent_ids: Sequence[str],
    terms: Sequence[str],
    limit: int,
    confidences: Sequence[str] | None,
) -> list[tuple[str, float]]:
    """``store.keyword_search`` as ``(id, score)`` pairs (``keyword_scores`` when the store has it: the
    recall's reads build no object per hit)."""
    light = getattr(store, "keyword_scores", None)
    if light is not None:
        return cast(list[tuple[str, float]], light(agent_ids, terms, limit, confidences))
    return [(hit.fact_id, hit.score) for hit in store.keyword_search(agent_ids, terms, limit, confidences)]


_OWN_ORIGIN: dict[str, tuple[str, str | None]] = {
    "match": ("match", None),
    "phrase": ("phrase", None),
    "synonym": ("synonym", None),
}
"""The origin of a fact's own match, built once per source."""


def combine(
    evidence: KeywordEvidence,
    created: Mapping[str, datetime],
    limit: int,
    *,
    max_gap_s: float = CONTEXT_MAX_GAP_S,
) -> tuple[dict[str, float], dict[str, tuple[str, str | None]]]:
    """Final keyword scores (own score + the largest loan from a lender written within ``max_gap_s``)
    for at most ``limit`` facts, and per fact where its score came from: ``(source, lender id)``.

    Facts missing from ``created`` (retired meanwhile, or filtered out) neither lend nor borrow.
    """
    own = evidence.own
    if not evidence.loans and len(own) <= limit and all(fid in created for fid in own):
        # nothing lent, nothing retired: the own scores as they are (callers never change them)
        sources = evidence.sources
        return own, {fid: _OWN_ORIGIN.get(source := sources[fid]) or (source, None) for fid in own}
    scores = {fid: score for fid, score in own.items() if fid in created}
    origin: dict[str, tuple[str, str | None]] = {fid: (evidence.sources[fid], None) for fid in scores}
    for borrower, offers in evidence.loans.items():
        when = created.get(borrower)
        if when is None:
            continue
        for loan, lender in offers:
            lent_at = created.get(lender)
            if lent_at is not None and abs((when - lent_at).total_seconds()) <= max_gap_s:
                scores[borrower] = scores.get(borrower, 0.0) + loan
                origin.setdefault(borrower, ("context", lender))
                break
    if len(scores) <= limit:
        return scores, origin  # the same keys in the same order
    # Borrowers joined the pool: keep it at ``limit`` candidates (stable: ties keep insertion order).
    scores = dict(sorted(scores.items(), key=lambda item: -item[1])[:limit])
    return scores, {fid: origin[fid] for fid in scores}
