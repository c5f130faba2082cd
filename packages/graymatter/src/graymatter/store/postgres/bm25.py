"""PostgreSQL keyword candidates: FTS5's BM25, bit for bit, over postings (words) and tsvectors (phrases)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg

from graymatter.store.base import Confidences, ScoredId
from graymatter.store.fts import FtsTokenizer
from graymatter.store.postgres.connection import PostgresConnections
from graymatter.store.postgres.rows import DIALECT, one
from graymatter.store.postgres.tokenizer import clip_lexeme, tsquery_literal, tsquery_phrase
from graymatter.store.rows import searchable_terms

BM25_K1 = 1.2
BM25_B = 0.75

# All float8 (a bare 0.75 would be numeric): the same IEEE operations, in FTS5's order.
_WORD_SQL = (
    "WITH q AS (SELECT * FROM unnest(%s::text[], %s::float8[]) WITH ORDINALITY AS q(stem, idf, i))"
    " SELECT p.fact_id, sum(q.idf * ((p.tf::float8 * "
    f"{BM25_K1 + 1.0!r}::float8) / (p.tf::float8 + {BM25_K1!r}::float8 * "
    f"(1::float8 - {BM25_B!r}::float8 + {BM25_B!r}::float8 * p.doc_len::float8 / %s::float8)))"
    " ORDER BY q.i) AS s,"
    " min(p.created_at) AS created"
    " FROM q JOIN gm_postings p ON p.term = q.stem"
    " WHERE p.agent_id = ANY(%s){confidence}"
    " GROUP BY p.fact_id ORDER BY s DESC, created, p.fact_id LIMIT %s"
)
_PHRASE_SQL = (
    "SELECT f.id, f.created_at, f.doc_len, u.lexeme, u.positions FROM gm_facts f"
    " CROSS JOIN LATERAL unnest(f.tsv) AS u"
    " WHERE f.tsv @@ %s::tsquery AND f.agent_id = ANY(%s){confidence} AND u.lexeme = ANY(%s)"
)

Group = tuple[list[str], str, int]  # stems of one query term, its tsquery, its document frequency


def idf(docs: int, hits: int) -> float:
    """FTS5's BM25 idf: ln((N - n + 0.5) / (n + 0.5)), floored at 1e-6."""
    value = math.log((docs - hits + 0.5) / (hits + 0.5))
    return value if value > 0 else 1e-6


def _corpus(c: psycopg.Connection[Any]) -> tuple[int, int]:
    docs, tokens = one(
        c.execute("SELECT sum(docs)::bigint, sum(tokens)::bigint FROM gm_fts_stats").fetchone()
    )
    return int(docs or 0), int(tokens or 0)


def _stem_frequencies(c: psycopg.Connection[Any], stems: Sequence[str]) -> dict[str, int]:
    if not stems:
        return {}
    rows = c.execute(
        "SELECT term, sum(df)::bigint FROM gm_terms WHERE term = ANY(%s) GROUP BY term", (list(stems),)
    ).fetchall()
    return {r[0]: int(r[1]) for r in rows}


def _phrase_groups(c: psycopg.Connection[Any], groups: list[list[str]]) -> list[Group]:
    """Each term's stems, tsquery and document frequency; terms no live fact contains are dropped."""
    queries = [tsquery_phrase(g) if len(g) > 1 else tsquery_literal(g) for g in groups]
    singles = _stem_frequencies(c, sorted({g[0] for g in groups if len(g) == 1}))
    frequencies = []
    for group, query in zip(groups, queries, strict=True):
        if len(group) == 1:
            frequencies.append(singles.get(group[0], 0))
        else:
            hits = one(
                c.execute("SELECT count(*) FROM gm_facts WHERE tsv @@ %s::tsquery", (query,)).fetchone()
            )
            frequencies.append(int(hits[0]))
    return [(g, q, n) for g, q, n in zip(groups, queries, frequencies, strict=True) if n > 0]


def _phrase_score(
    places: dict[str, set[int]], doc_len: int, live: list[Group], docs: int, avgdl: float
) -> float | None:
    """The fact's BM25 over the terms (phrases counted where their stems stand adjacent), or ``None``."""
    score = 0.0
    matched = False
    for group, _, hits in live:
        first = places.get(group[0], set())
        tf = sum(1 for p in first if all(p + k in places.get(s, ()) for k, s in enumerate(group) if k))
        if tf:
            matched = True
            norm = 1 - BM25_B + BM25_B * doc_len / avgdl
            score += idf(docs, hits) * ((tf * (BM25_K1 + 1.0)) / (tf + BM25_K1 * norm))
    return score if matched else None


@dataclass(frozen=True, slots=True)
class _Search:
    """One keyword search: where it looks, how many it returns, and the corpus statistics."""

    agent_ids: Sequence[str]
    limit: int
    confidences: Confidences
    docs: int
    tokens: int


def _phrase_search(c: psycopg.Connection[Any], groups: list[list[str]], search: _Search) -> list[ScoredId]:
    """BM25 where some query terms are phrases (adjacent stems, in order), scored like FTS5."""
    docs, tokens = search.docs, search.tokens
    live = _phrase_groups(c, groups)
    if not live:
        return []
    params: list[Any] = [" | ".join(f"({q})" for _, q, _ in live), list(search.agent_ids)]
    clause = DIALECT.restrict("f.confidence", search.confidences, params)
    params.append(sorted({s for g, _, _ in live for s in g}))
    found: dict[str, tuple[datetime, int, dict[str, set[int]]]] = {}
    for fact_id, created, doc_len, lexeme, positions in c.execute(
        _PHRASE_SQL.format(confidence=clause), params
    ).fetchall():
        entry = found.setdefault(fact_id, (created, doc_len, {}))
        entry[2][lexeme] = set(positions or ())
    avgdl = tokens / docs
    scored = []
    for fact_id, (created, doc_len, places) in found.items():
        score = _phrase_score(places, doc_len, live, docs, avgdl)
        if score is not None:
            scored.append((-score, created, fact_id))
    scored.sort()
    return [ScoredId(fid, -neg) for neg, _, fid in scored[: search.limit]]


def _word_search(c: psycopg.Connection[Any], stems: list[str], search: _Search) -> list[ScoredId]:
    """BM25 of single-word terms, summed in SQL over the covering postings index."""
    docs, tokens = search.docs, search.tokens
    frequencies = _stem_frequencies(c, sorted(set(stems)))
    present = [s for s in stems if frequencies.get(s, 0) > 0]
    if not present:
        return []
    weights = [idf(docs, frequencies[s]) for s in present]
    params: list[Any] = [present, weights, tokens / docs if tokens else 1.0, list(search.agent_ids)]
    clause = DIALECT.restrict("p.confidence", search.confidences, params)
    params.append(search.limit)
    rows = c.execute(_WORD_SQL.format(confidence=clause), params).fetchall()
    return [ScoredId(r[0], float(r[1])) for r in rows]


def _search(
    c: psycopg.Connection[Any],
    groups: list[list[str]],
    agent_ids: Sequence[str],
    limit: int,
    confidences: Confidences,
) -> list[ScoredId]:
    """Phrase scoring when any term is a phrase, else the postings path; nothing on an empty corpus."""
    docs, tokens = _corpus(c)
    if docs <= 0:
        return []
    search = _Search(agent_ids, limit, confidences, docs, tokens)
    if any(len(g) > 1 for g in groups):
        return _phrase_search(c, groups, search)
    return _word_search(c, [g[0] for g in groups], search)


class PostgresKeywordSearch(PostgresConnections):
    """The full-text half of the PostgreSQL store (mixed into :class:`PostgresStore`)."""

    _tokenizer: FtsTokenizer

    def _term_stems(self, terms: Sequence[str]) -> dict[str, list[str]]:
        analysed = self._tokenizer.analyse(list(terms))
        return {
            term: [clip_lexeme(s) for s in counts] for term, (counts, _) in zip(terms, analysed, strict=True)
        }

    def document_frequencies(self, terms: Sequence[str]) -> dict[str, int]:
        """Number of live facts containing each (normalised, unstemmed) term, as the index sees it."""
        unique = list(dict.fromkeys(terms))
        if not unique:
            return {}
        stems = self._term_stems(unique)
        all_stems = sorted({s for group in stems.values() for s in group})
        frequencies = self._read(lambda c: _stem_frequencies(c, all_stems))
        return {term: min((frequencies.get(s, 0) for s in group), default=0) for term, group in stems.items()}

    def keyword_search(
        self, agent_ids: Sequence[str], terms: Sequence[str], limit: int, confidences: Confidences = None
    ) -> list[ScoredId]:
        """FTS5's BM25 computed here: postings for single words, tsvector positions for phrases."""
        # FTS5 scores every query phrase separately, even two terms with one stem: keep duplicates.
        kept = searchable_terms(terms, agent_ids, limit, confidences)
        groups = [g for g in (self._term_stems([t])[t] for t in kept) if g]
        if not groups:
            return []
        return self._snapshot_read(lambda c: _search(c, groups, agent_ids, limit, confidences))
