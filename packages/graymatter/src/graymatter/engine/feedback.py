"""Weak-match feedback: when recall's best fact covers little of the query, say so and what to do about it.

GrayMatter v0.19 behaviour: when the query barely overlaps what the store holds, the search result carries
one extra block that names the store's nearby vocabulary and one action, the alias tool (``memory_alias``,
``graymatter alias``), so the next search bridges the words. The facts and their order are identical with
or without it; it is computed from the returned hits only, so it reveals nothing the hits do not.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from graymatter.models import RecallFeedback, RecallHit
from graymatter.retrieval.dates import without_dates
from graymatter.retrieval.query import query_terms
from graymatter.retrieval.relevance import stems

WEAK_RELEVANCE = 0.5
"""A match is weak when no returned fact covers at least this share of the query (or nothing came back)."""
SUGGESTION_SOURCES = 3
"""How many of the best hits the suggested vocabulary is drawn from."""
MAX_SUGGESTIONS = 5


def is_weak(query: str, hits: Sequence[RecallHit]) -> bool:
    """True when the query has informative words and the best hit's relevance is below the threshold."""
    if not _words(query):
        return False
    return _best(hits) < WEAK_RELEVANCE


def _words(query: str) -> list[str]:
    """The query's informative words as the relevance counts them: a calendar date it names is matched
    through when a fact was written (:mod:`graymatter.retrieval.dates`), never listed as a missing word."""
    return query_terms(without_dates(query))


def _best(hits: Sequence[RecallHit]) -> float:
    return max((hit.relevance or 0.0 for hit in hits), default=0.0)


def weak_match_feedback(query: str, hits: Sequence[RecallHit]) -> RecallFeedback | None:
    """The feedback block for ``hits`` of ``query``, or ``None`` when the match is not weak."""
    if not is_weak(query, hits):
        return None
    words = _words(query)
    analysed = stems([*words, *(hit.text for hit in hits)])
    word_stems, hit_stems = analysed[: len(words)], analysed[len(words) :]
    found = frozenset().union(*hit_stems) if hit_stems else frozenset()
    matched = [w for w, s in zip(words, word_stems, strict=True) if s & found]
    unmatched = [w for w in words if w not in matched]
    suggested = _suggestions(words, hits[:SUGGESTION_SOURCES])
    return RecallFeedback(
        best_relevance=round(_best(hits), 3),
        matched_terms=matched,
        unmatched_terms=unmatched,
        suggested_terms=suggested,
        message=_message(unmatched, suggested, bool(hits)),
    )


def _suggestions(words: Sequence[str], hits: Sequence[RecallHit]) -> list[str]:
    """Informative words of the best hits that the query does not use, most frequent first."""
    asked = set(words)
    counts: Counter[str] = Counter()
    for hit in hits:
        counts.update(w for w in query_terms(hit.text) if w not in asked and not w.isdigit())
    return [word for word, _ in counts.most_common(MAX_SUGGESTIONS)]


def _message(unmatched: Sequence[str], suggested: Sequence[str], any_hits: bool) -> str:
    """One or two sentences a person (or a model) can act on."""
    missing = ", ".join(f'"{w}"' for w in unmatched) or "most of the query"
    head = (
        f"Weak match: no stored fact contains {missing}."
        if any_hits
        else f"No stored fact matches {missing}."
    )
    nearby = f" Nearby words in this memory: {', '.join(suggested)}." if suggested else ""
    return (
        f"{head}{nearby} If this memory uses other words for the same thing, record them once with "
        "memory_alias (CLI: graymatter alias AGENT TERM EQUIVALENT...) and search again."
    )
