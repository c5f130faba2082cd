"""A relevance figure in [0, 1] a person can read: how much of the query a returned fact covers.

Fused scores are reciprocal-rank sums (0.016 for a first place at k = 60): they order results but say
nothing about whether the best result is any good. Relevance does:

* **keyword**: the share of the query's informative words (stop-words dropped; the words of a calendar
  date the query names are left out, as dates are matched through when a fact was written) that the
  fact contains, after stemming with the index's own tokenizer; a word also counts when the fact
  contains one of its alias equivalents (``memory_alias``);
* **semantic**: the cosine similarity of a vector neighbour (clipped to [0, 1]);
* **context**: a turn that borrowed its keyword score from an adjacent turn of its session gets
  ``context_weight`` x the lender's keyword relevance;

and the fact's relevance is the largest of the three. A query without informative words (the session-start
window) has no relevance figure (``None``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from graymatter.retrieval.dates import without_dates
from graymatter.retrieval.query import query_terms
from graymatter.store.fts import FtsTokenizer

_TOKENIZER = FtsTokenizer()


def stems(texts: Sequence[str]) -> list[frozenset[str]]:
    """The set of index stems of each text (one tokenizer call for all of them)."""
    return [frozenset(positions) for positions, _ in _TOKENIZER.analyse(list(texts))]


def word_groups(query: str, alias_groups: Sequence[Sequence[str]] = ()) -> list[frozenset[str]]:
    """Per informative query word (dates named in the query left out): its stem plus the stems of every
    alias equivalent it brings in."""
    words = query_terms(without_dates(query))
    if not words:
        return []
    phrases = [[p for p in group if query_terms(p)] for group in alias_groups]
    texts = [*words, *(p for group in phrases for p in group)]
    analysed = stems(texts)
    word_stems = analysed[: len(words)]
    rest = iter(analysed[len(words) :])
    group_stems = [[next(rest) for _ in group] for group in phrases]
    out: list[frozenset[str]] = []
    for word, own in zip(words, word_stems, strict=True):
        extra: set[str] = set()
        for group, analysed_group in zip(phrases, group_stems, strict=True):
            tokens = [set(query_terms(p)) for p in group]
            if any(word in toks for toks in tokens):
                extra.update(stem for phrase in analysed_group for stem in phrase)
        out.append(own | frozenset(extra))
    return out


def coverage(groups: Sequence[frozenset[str]], fact_stems: frozenset[str]) -> float:
    """The share of query word groups with at least one stem in ``fact_stems`` (0 when there are none)."""
    if not groups:
        return 0.0
    return sum([not group.isdisjoint(fact_stems) for group in groups]) / len(groups)


def relevance(
    groups: Sequence[frozenset[str]],
    texts: Mapping[str, str],
    *,
    similarity: Mapping[str, float],
    sources: Mapping[str, tuple[str, str | None]],
    lender_texts: Mapping[str, str],
    context_weight: float,
    analyse: Callable[[Sequence[str]], list[frozenset[str]]] = stems,
) -> dict[str, float | None]:
    """The relevance of each fact in ``texts`` (id -> text); ``lender_texts`` holds the lenders' texts.

    ``analyse``: the stems of texts; one that returns only the stems in ``groups`` gives the same figures."""
    if not groups:
        return dict.fromkeys(texts)
    ids = list(texts)
    lenders = [lid for lid in dict.fromkeys(lender_texts) if lid not in texts]
    analysed = analyse([texts[fid] for fid in ids] + [lender_texts[lid] for lid in lenders])
    covered = {fid: coverage(groups, s) for fid, s in zip([*ids, *lenders], analysed, strict=True)}
    out: dict[str, float | None] = {}
    for fid in ids:
        best = covered[fid]
        best = max(best, min(1.0, max(0.0, similarity.get(fid, 0.0))))
        source, lender = sources.get(fid, ("", None))
        if source == "context" and lender is not None and lender in covered:
            best = max(best, context_weight * covered[lender])
        out[fid] = round(best, 3)
    return out
