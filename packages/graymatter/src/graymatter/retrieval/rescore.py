"""Keyword evidence re-scored by what BM25 cannot see: query coverage and the question's intent.

BM25 weighs a word by its rarity, so a word in about half the facts (the name of the person a conversation
is about, the product a support bot serves) counts for almost nothing, and a fact that matches one rare
word of the question outranks one that matches every word of it. Two multipliers correct that, on the
best ``RESCORE_DEPTH`` own matches (their texts are read once, in one statement):

* **coverage**: ``1 + COVERAGE_WEIGHT x`` the share of the query's informative words the fact contains
  (stems, alias equivalents count: the same figure as :mod:`.relevance`);
* **temporal intent**: a question that asks when ("when did…", "how long ago…", "what year…") multiplies
  the score of a fact that says when (a date, a weekday or month, "last week", "two years ago") by
  ``1 + TEMPORAL_WEIGHT``.

A conversation turn's context loan is re-scaled with its lender's factor. Factors are at least 1, so a
match outside the re-scored depth keeps its BM25 score and never overtakes a re-scored one unfairly:
it only gains nothing. Both weights were measured on the LoCoMo development split (ADR 0011, "Quality,
session 3") and are round values in the middle of a flat optimum, not per-dataset switches.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from graymatter.retrieval.keyword import KeywordEvidence
from graymatter.retrieval.relevance import coverage, stems, word_groups
from graymatter.store.base import Store

COVERAGE_WEIGHT = 1.0
TEMPORAL_WEIGHT = 0.5
RESCORE_DEPTH = 50

_WHEN = re.compile(
    r"^\W*(?:when|since when|until when)\b|\bhow long\b|\bwhat (?:year|month|day|date|time|week)\b"
    r"|\bwhich (?:year|month|day|date|week)\b",
    re.IGNORECASE,
)
# Words that say when something happened, matched through the index's stems. "may", "march", "fall",
# "spring", "day" and "evening" (stem "even") are left out: they are more often something else.
_TIME_WORDS = (
    "yesterday today tomorrow tonight ago recently previously last next since week weekend month year "
    "decade morning night monday tuesday wednesday thursday friday saturday sunday january february "
    "april june july august september october november december"
)
_YEAR = re.compile(r"^(?:1[89]|20)\d\d$")


@functools.cache
def _time_stems() -> frozenset[str]:
    return frozenset(stem for word in stems(_TIME_WORDS.split()) for stem in word)


@dataclass
class RescoredEvidence(KeywordEvidence):
    """Keyword evidence after :func:`rescore`, with the best query coverage among the re-scored matches."""

    best_coverage: float = 0.0


def asks_when(query: str) -> bool:
    """Whether the question asks for a time ("when…", "how long…", "what year…")."""
    return bool(_WHEN.search(query))


def says_when(fact_stems: frozenset[str]) -> bool:
    """Whether a fact (its index stems) contains a time expression: a date word, a weekday, a year."""
    return bool(fact_stems & _time_stems()) or any(_YEAR.match(s) for s in fact_stems if s[:1].isdigit())


def rescore(
    store: Store,
    query: str,
    groups: Sequence[Sequence[str]],
    evidence: KeywordEvidence,
    coverage_weight: float = COVERAGE_WEIGHT,
    temporal_weight: float = TEMPORAL_WEIGHT,
    *,
    depth: int = RESCORE_DEPTH,
) -> KeywordEvidence:
    """``evidence`` with its best ``depth`` own scores (and the loans they made) multiplied as above."""
    temporal = temporal_weight > 0 and asks_when(query)
    if not evidence.own or depth <= 0 or (coverage_weight <= 0 and not temporal):
        return evidence
    query_groups = word_groups(query, groups)
    best = sorted(evidence.own, key=lambda fid: -evidence.own[fid])[:depth]
    texts = {fact.id: fact.text for fact in store.get_facts(best)}
    ids = [fid for fid in best if fid in texts]
    factor: dict[str, float] = {}
    best_covered = 0.0
    for fid, fact_stems in zip(ids, stems([texts[fid] for fid in ids]), strict=True):
        covered = coverage(query_groups, fact_stems)
        best_covered = max(best_covered, covered)
        value = 1.0 + coverage_weight * covered
        if temporal and says_when(fact_stems):
            value *= 1.0 + temporal_weight
        factor[fid] = value
    loans = {
        borrower: sorted(
            ((loan * factor.get(lender, 1.0), lender) for loan, lender in offers), key=lambda offer: -offer[0]
        )
        for borrower, offers in evidence.loans.items()
    }
    own = {fid: score * factor.get(fid, 1.0) for fid, score in evidence.own.items()}
    return RescoredEvidence(own=own, sources=dict(evidence.sources), loans=loans, best_coverage=best_covered)
