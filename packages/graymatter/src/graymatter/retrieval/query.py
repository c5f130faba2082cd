"""Query tokenisation: natural-language text -> a short list of informative keyword terms.

FTS5 cost grows with posting-list length, so frequent words must not reach the index: stop-words are
dropped here, and :func:`select_terms` keeps only the rarest few terms by document frequency. Terms are
always quoted when they reach FTS5 (``fts_match_expression``), so no input can become FTS5 syntax.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence

# Letters and digits only: underscores, punctuation and symbols separate tokens, as in FTS5 unicode61.
_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)

STOP_WORDS: frozenset[str] = frozenset(
    (
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "also",
        "am",
        "an",
        "and",
        "any",
        "are",
        "aren",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "cannot",
        "could",
        "couldn",
        "did",
        "didn",
        "do",
        "does",
        "doesn",
        "doing",
        "don",
        "down",
        "during",
        "each",
        "even",
        "ever",
        "every",
        "few",
        "for",
        "from",
        "further",
        "get",
        "gets",
        "got",
        "had",
        "hadn",
        "has",
        "hasn",
        "have",
        "haven",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "however",
        "i",
        "if",
        "in",
        "into",
        "is",
        "isn",
        "it",
        "its",
        "itself",
        "just",
        "let",
        "ll",
        "me",
        "more",
        "most",
        "much",
        "must",
        "mustn",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "one",
        "only",
        "or",
        "other",
        "ought",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "really",
        "re",
        "same",
        "shall",
        "shan",
        "she",
        "should",
        "shouldn",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "upon",
        "us",
        "very",
        "via",
        "was",
        "wasn",
        "we",
        "were",
        "weren",
        "what",
        "when",
        "where",
        "whether",
        "which",
        "while",
        "who",
        "whom",
        "whose",
        "why",
        "will",
        "with",
        "won",
        "would",
        "wouldn",
        "yes",
        "yet",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "ve",
        "s",
        "t",
        "d",
        "m",
    )
)


def normalise(token: str) -> str:
    """Case-fold and strip diacritics, matching FTS5 ``unicode61 remove_diacritics 2``.

    Compatibility decomposition can bring in punctuation ("㈠" is "(一)", "½" is "1⁄2"); only letters and
    digits are kept, so a term never carries a character that FTS5 query syntax would read."""
    if token.isascii() and token.isalnum():  # the common case: NFKD and the filter change nothing
        return token.lower()
    folded = unicodedata.normalize("NFKD", token.casefold())
    return "".join(ch for ch in folded if ch.isalnum() and not unicodedata.combining(ch))


def tokenize(text: str) -> list[str]:
    """Every word of ``text``, normalised, in order (duplicates kept)."""
    out = []
    for raw in _TOKEN.findall(text):
        token = normalise(raw)
        if token:
            out.append(token)
    return out


def query_terms(text: str, stop_words: frozenset[str] = STOP_WORDS) -> list[str]:
    """Distinct informative terms of a query, in first-seen order.

    Stop-words and one-character tokens are dropped (digits are kept: "room 7"). If that leaves nothing
    but the query had words, the non-stop tokens are kept anyway so a query of only frequent words still
    searches something.
    """
    tokens = tokenize(text)
    kept = [t for t in tokens if t not in stop_words and (len(t) > 1 or t.isdigit())]
    if not kept:
        kept = [t for t in tokens if len(t) > 1 and t not in stop_words]
    return list(dict.fromkeys(kept))


def expand_with_aliases(terms: Sequence[str], groups: Iterable[Sequence[str]]) -> list[str]:
    """Add the vocabulary equivalents of any query term (alias groups are sets of equivalent phrases).

    A group applies when every token of one of its phrases is among the query terms; all tokens of
    every phrase in the group are then added (after the original terms, de-duplicated).
    """
    present = set(terms)
    extra: list[str] = []
    for group in groups:
        phrases = [query_terms(p) for p in group]
        phrases = [p for p in phrases if p]
        if any(all(tok in present for tok in phrase) for phrase in phrases):
            for phrase in phrases:
                extra.extend(phrase)
    return list(dict.fromkeys([*terms, *extra]))


DEFAULT_MAX_POSTINGS = 2000
"""Posting budget of one keyword query: the rarest terms are kept while their document frequencies
sum to at most this (the rarest term is always kept). BM25 in FTS5 costs about a microsecond per
posting, so this bounds keyword latency at any store size; on small stores nothing is dropped."""


def select_terms(
    terms: Sequence[str],
    document_frequency: Mapping[str, int],
    max_terms: int,
    max_postings: int | None = None,
) -> list[str]:
    """Keep the rarest terms (ties: query order) that occur in the index, within two caps.

    * at most ``max_terms`` terms;
    * their document frequencies sum to at most ``max_postings`` (the rarest term is always kept), so
      a query never scans long posting lists of frequent words.

    Terms absent from the index cannot match and are dropped, so they never cost a posting-list scan.
    """
    ranked = sorted(
        (document_frequency.get(t, 0), i, t) for i, t in enumerate(terms) if document_frequency.get(t, 0) > 0
    )
    kept: list[str] = []
    postings = 0
    for df, _, term in ranked:
        if len(kept) >= max_terms:
            break
        if kept and max_postings is not None and postings + df > max_postings:
            break
        kept.append(term)
        postings += df
    return kept
