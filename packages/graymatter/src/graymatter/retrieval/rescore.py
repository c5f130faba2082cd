"""Keyword evidence re-scored by what BM25 cannot see: query coverage and the question's intent.

BM25 weighs a word by its rarity, so a word in about half the facts (the name of the person a conversation
is about, the product a support bot serves) counts for almost nothing, and a fact that matches one rare
word of the question outranks one that matches every word of it. Two multipliers correct that, on the
best ``RESCORE_DEPTH`` own matches (their texts come with the keyword matches, or in one statement):

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
import sqlite3
import threading
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import cast

from graymatter.retrieval.keyword import KeywordEvidence
from graymatter.retrieval.memo import remember_bounded
from graymatter.retrieval.relevance import coverage, stems, word_groups
from graymatter.store.base import Store
from graymatter.store.fts import CACHE_MAX_CHARS, FTS_TOKENIZER, FtsTokenizer

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
    query_groups = query_word_groups(query, groups)
    best = sorted(evidence.own, key=evidence.own.__getitem__, reverse=True)[:depth]  # stable, as -score
    texts = fact_texts(store, best)
    ids = [fid for fid in best if fid in texts]
    query_stems = frozenset().union(*query_groups)
    wanted = query_stems | (_time_stems() if temporal else frozenset())
    factor: dict[str, float] = {}
    best_covered = 0.0
    analysed = stems_among([texts[fid] for fid in ids], wanted, temporal)
    # Coverage depends only on which query stems a text holds, and most matches share a few such sets.
    covers: dict[frozenset[str], tuple[float, float]] = {}
    for fid, fact_stems in zip(ids, analysed, strict=True):
        held = query_stems & fact_stems
        known = covers.get(held)
        if known is None:
            covered = coverage(query_groups, held)
            known = covers[held] = (covered, 1.0 + coverage_weight * covered)
        covered, value = known
        if covered > best_covered:
            best_covered = covered
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


_GROUPS: list[tuple[tuple[str, tuple[tuple[str, ...], ...]], list[frozenset[str]]]] = []


def query_word_groups(query: str, groups: Sequence[Sequence[str]]) -> list[frozenset[str]]:
    """:func:`.relevance.word_groups`, remembered for the last query (re-scoring and relevance ask for the
    same groups within one recall); the result must not be changed."""
    key = (query, tuple(tuple(group) for group in groups))
    last = _GROUPS[-1] if _GROUPS else None
    if last is not None and last[0] == key:
        return last[1]
    found = word_groups(query, groups)
    _GROUPS[:] = [(key, found)]
    return found


def fact_texts(store: Store, fact_ids: Sequence[str]) -> dict[str, str]:
    """The texts of the facts among ``fact_ids`` (id -> text): through the store's ``fact_texts`` when it
    has one (a read of two columns; the recall decodes only the facts it returns), else ``get_facts``."""
    light = cast(Callable[[Sequence[str]], dict[str, str]] | None, getattr(store, "fact_texts", None))
    if light is not None:
        return light(fact_ids)
    return {fact.id: fact.text for fact in store.get_facts(fact_ids)}


MAX_WANTED_STEMS = 400
"""Above this many query stems a text's stems are all read (one statement's parameters stay bounded)."""

_LOCAL = threading.local()
_TOKENIZER = FtsTokenizer()


def _index() -> sqlite3.Connection:
    """This thread's in-memory FTS5 table with the index's tokenizer, and its instance vocabulary."""
    conn: sqlite3.Connection | None = getattr(_LOCAL, "conn", None)
    if conn is None:
        conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        conn.execute(f"CREATE VIRTUAL TABLE tok USING fts5(t, tokenize='{FTS_TOKENIZER}')")
        conn.execute("CREATE VIRTUAL TABLE tok_vocab USING fts5vocab(tok, 'instance')")
        _LOCAL.conn = conn
    return conn


KNOWN_ENTRIES = 8192
"""Texts whose every stem :func:`stems_among` remembers (beside the tokenizer's own cache)."""
_KNOWN: dict[str, frozenset[str]] = {}
_USE = [0, 0]
"""Texts answered from memory and texts read, lately (halved every ``KNOWN_ENTRIES`` texts)."""


def stems_among(texts: Sequence[str], wanted: Collection[str], years: bool) -> list[frozenset[str]]:
    """Per text, a set of its index stems holding every one in ``wanted`` (and, with ``years``, every one
    starting with 1 or 2: the candidates of :data:`_YEAR`), which is all :func:`coverage` and
    :func:`says_when` look at: the same answers as with all of its stems.

    A text the tokenizer's cache or this module's knows gives all its stems; the others are tokenized by the
    index's own tokenizer in one in-memory FTS5 insert. While remembering pays (the memory is not full yet,
    or it answers at least a third of the texts: a working set that fits), texts of up to
    ``CACHE_MAX_CHARS`` are read whole and remembered (up to :data:`KNOWN_ENTRIES`); otherwise (a large
    store, texts rarely seen twice) only the wanted stems come back to Python, a third of the cost."""
    if len(wanted) > MAX_WANTED_STEMS:
        return stems(texts)
    try:  # the usual case in a working set that fits: every text remembered
        remembered = [_KNOWN[text] for text in texts]
    except KeyError:
        pass
    else:
        _count(len(remembered), 0)
        return remembered
    out: list[frozenset[str] | None] = [_KNOWN.get(text) for text in texts]
    unknown = [i for i, hit in enumerate(out) if hit is None]
    if unknown:
        for i, hit in zip(unknown, _TOKENIZER.cached([texts[i] for i in unknown]), strict=True):
            if hit is not None:  # the tokenizer's analysis: every stem, kept as a set while memory is free
                out[i] = every = frozenset(hit[0])
                if len(_KNOWN) < KNOWN_ENTRIES:
                    _KNOWN[texts[i]] = every
    missing = [t for t, hit in zip(texts, out, strict=True) if hit is None]
    whole = len(_KNOWN) < KNOWN_ENTRIES or 2 * _USE[0] >= _USE[1]
    _count(len(texts) - len(missing), len(missing))
    short = list(dict.fromkeys(t for t in missing if whole and len(t) <= CACHE_MAX_CHARS))
    rest = list(dict.fromkeys(t for t in missing if not whole or len(t) > CACHE_MAX_CHARS))
    found = dict(zip(short, _read_stems(short, None, True), strict=True)) if short else {}
    for text, every in found.items():
        _remember(text, every)
    if rest:
        found.update(zip(rest, _read_stems(rest, wanted, years), strict=True))
    return [hit if hit is not None else found[text] for hit, text in zip(out, texts, strict=True)]


def _count(remembered: int, read: int) -> None:
    _USE[0] += remembered
    _USE[1] += read
    if _USE[0] + _USE[1] > KNOWN_ENTRIES:
        _USE[0] //= 2
        _USE[1] //= 2


def _remember(text: str, every: frozenset[str]) -> None:
    remember_bounded(_KNOWN, text, every, KNOWN_ENTRIES)


def _read_stems(texts: Sequence[str], wanted: Collection[str] | None, years: bool) -> list[frozenset[str]]:
    """The stems of texts not analysed yet, from one in-memory insert: those in ``wanted`` (with ``years``,
    and those starting with 1 or 2), or every one (``wanted`` None)."""
    found: list[set[str]] = [set() for _ in texts]
    reads: list[tuple[str, list[str]]] = []
    if wanted is None:
        reads.append(("SELECT term, doc FROM tok_vocab", []))
    elif wanted:
        marks = ",".join("?" * len(wanted))
        reads.append((f"SELECT term, doc FROM tok_vocab WHERE term IN ({marks})", list(wanted)))
    # Two statements, never one with OR: fts5vocab (SQLite 3.40) drops rows of an OR of its term constraints.
    if years and wanted is not None:
        reads.append(("SELECT term, doc FROM tok_vocab WHERE term >= '1' AND term < '3'", []))
    conn = _index()
    conn.execute("BEGIN")
    try:
        conn.executemany("INSERT INTO tok(rowid, t) VALUES (?, ?)", [(i + 1, t) for i, t in enumerate(texts)])
        for sql, args in reads:
            for term, doc in conn.execute(sql, args):
                found[doc - 1].add(term)
    finally:
        conn.execute("ROLLBACK")
    return [frozenset(s) for s in found]
