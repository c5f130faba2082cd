"""Near-synonyms of the query's words from a shipped table, searched as weaker keyword evidence.

A fact that says "grandmother" answers a question about "grandma", yet shares no word with it; without an
embedder, keyword recall cannot find it. ``data/synonyms.tsv`` (built by ``benchmarks/synonym_table.py``
from the all-MiniLM-L6-v2 model of the ``embed`` extra, Apache-2.0, 51 kB in the wheel) lists, for the 2,116
index stems of about 21,000 common English words that have any, their nearest other words (at most six,
cosine similarity of the two words embedded alone at least 0.8). Recall takes, for each informative query
word, its table neighbours at similarity at least ``SYNONYM_MIN_SIMILARITY`` (at most ``SYNONYM_MAX`` per
word) that the store's index holds, keeps the rarest within the query's posting budget, and searches them as
one more BM25 query; a fact it finds gains ``SYNONYM_WEIGHT`` x that score
(:func:`.keyword.keyword_evidence`), so a synonym match counts for less than the same match on the query's
own word. A fact found only this way has keyword evidence of its own (it contains a word the table holds
near-equivalent to a query word) and its receipt names it (``keyword_source`` ``"synonym"``,
``keyword_synonym`` "grandmother for grandma"). Synonyms do not count as query coverage, so such a fact's
readable relevance stays low and a result list led by one gets the weak-match feedback, whose
``memory_alias`` suggestion is how a person confirms the equivalence.

The table is read on the first lookup (one file read, no parsing) and binary-searched per word.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

from graymatter.retrieval.fusion import Fused
from graymatter.retrieval.query import select_terms
from graymatter.retrieval.relevance import stems
from graymatter.store.base import Store
from graymatter.store.fts import FtsTokenizer

TABLE = Path(__file__).with_name("data") / "synonyms.tsv"
SYNONYM_WEIGHT = 0.5
"""A synonym match's share of the BM25 score the same match on the query's own word would get."""
SYNONYM_MIN_SIMILARITY = 0.9
"""The least cosine similarity (of the two words embedded alone) at which a table neighbour is used."""
SYNONYM_MAX = 3
"""The most neighbours taken per query word (nearest first)."""
SYNONYM_TERMS = 8
"""The most synonyms one query searches (the rarest in the store)."""

_TOKENIZER = FtsTokenizer()


class SynonymTable:
    """The shipped table (``stem<TAB>word:similarity ...`` lines, sorted by stem), binary-searched."""

    def __init__(self, path: Path = TABLE) -> None:
        self._path = path
        self._data: bytes | None = None
        self._starts: list[int] = []
        self._lock = threading.Lock()

    def _load(self) -> tuple[bytes, list[int]]:
        with self._lock:
            if self._data is None:
                data = self._path.read_bytes() if self._path.is_file() else b""
                starts, at = [], 0
                while at < len(data):
                    end = data.find(b"\n", at)
                    end = len(data) if end < 0 else end
                    if data[at : at + 1] != b"#":
                        starts.append(at)
                    at = end + 1
                self._data, self._starts = data, starts
            return self._data, self._starts

    def neighbours(self, stem: str) -> list[tuple[str, float]]:
        """The table's neighbours of an index stem, nearest first (empty when the stem is not listed)."""
        data, starts = self._load()
        key = stem.encode("utf-8") + b"\t"
        low, high = 0, len(starts)
        while low < high:
            middle = (low + high) // 2
            at = starts[middle]
            if data[at : at + len(key)] == key:
                end = data.find(b"\n", at)
                line = data[at + len(key) : len(data) if end < 0 else end].decode("utf-8")
                return [(word, float(value)) for word, value in (pair.split(":") for pair in line.split())]
            line_key = data[at : data.find(b"\t", at)]
            if line_key < key[:-1]:
                low = middle + 1
            else:
                high = middle
        return []


_TABLE = SynonymTable()


def synonyms_of(
    words: Sequence[str],
    *,
    min_similarity: float = SYNONYM_MIN_SIMILARITY,
    per_word: int = SYNONYM_MAX,
    table: SynonymTable = _TABLE,
) -> dict[str, str]:
    """Per table neighbour of the informative query ``words``: the query word it stands in for (a
    neighbour whose stem is one of the query's own is left out: the query already searches it)."""
    if not words:
        return {}
    own = _TOKENIZER.stems(list(words))
    candidates = [
        (word, neighbour)
        for word, group in zip(words, own, strict=True)
        if len(group) == 1
        for neighbour, similarity in table.neighbours(group[0])[:per_word]
        if similarity >= min_similarity
    ]
    if not candidates:
        return {}
    searched = {stem for group in own for stem in group}
    out: dict[str, str] = {}
    for (word, neighbour), group in zip(
        candidates, _TOKENIZER.stems([n for _, n in candidates]), strict=True
    ):
        if neighbour not in out and searched.isdisjoint(group):
            out[neighbour] = word
    return out


def synonym_terms(
    synonyms: Mapping[str, str],
    document_frequency: Mapping[str, int],
    max_postings: int | None,
    max_terms: int = SYNONYM_TERMS,
) -> list[str]:
    """The synonyms a recall searches: those the index holds, rarest first, within the posting budget."""
    return select_terms(list(synonyms), document_frequency, max_terms, max_postings)


def matched_synonym(text_stems: frozenset[str], synonyms: Mapping[str, str]) -> str:
    """How a fact found by the synonym search matched: "word for query word" (the first searched synonym
    whose stems the fact holds), or "" when none does."""
    for word, query_word in synonyms.items():
        if set(_TOKENIZER.stems([word])[0]) <= text_stems:
            return f"{word} for {query_word}"
    return ""


class SynonymSettings(Protocol):
    """What the synonym search reads of a recall request (``pipeline.RecallRequest`` has all of it)."""

    @property
    def synonym_weight(self) -> float: ...
    @property
    def synonym_min_similarity(self) -> float: ...
    @property
    def max_query_postings(self) -> int | None: ...


def searched(store: Store, words: Sequence[str], settings: SynonymSettings) -> dict[str, str]:
    """The synonyms a recall searches for the informative query ``words`` (synonym -> the query word it
    stands for): table neighbours at ``synonym_min_similarity`` or more that the store's index holds,
    rarest first, within ``max_query_postings``; none at ``synonym_weight`` 0."""
    if settings.synonym_weight <= 0:
        return {}
    found = synonyms_of(words, min_similarity=settings.synonym_min_similarity)
    if not found:
        return {}
    kept = synonym_terms(found, store.document_frequencies(list(found)), settings.max_query_postings)
    return {word: found[word] for word in kept}


def notes(
    results: Sequence[Fused], sources: Mapping[str, tuple[str, str | None]], synonyms: Mapping[str, str]
) -> dict[str, str]:
    """Per result found only through a synonym (``sources``: the keyword origin of each fact): which one,
    "word for query word"."""
    facts = [
        item.candidate.fact for item in results if sources.get(item.candidate.fact.id, ("",))[0] == "synonym"
    ]
    if not facts:
        return {}
    analysed = stems([fact.text for fact in facts])
    return {fact.id: matched_synonym(held, synonyms) for fact, held in zip(facts, analysed, strict=True)}
