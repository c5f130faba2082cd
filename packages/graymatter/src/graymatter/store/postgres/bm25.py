"""PostgreSQL keyword candidates: FTS5's BM25, bit for bit, in one statement over postings and positions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from graymatter.store.base import Confidences, ScoredId
from graymatter.store.fts import FtsTokenizer
from graymatter.store.postgres.connection import PostgresConnections, fetch
from graymatter.store.postgres.rows import DIALECT
from graymatter.store.postgres.tokenizer import clip_lexeme
from graymatter.store.rows import searchable_terms

BM25_K1 = 1.2
BM25_B = 0.75

# All float8 (a bare 0.75 would be numeric): the same IEEE operations, in FTS5's order. The corpus totals,
# the document frequencies and the idf (ln is the C library's log, as Python's math.log) are computed in the
# same statement as the scores, so one statement reads one snapshot and costs one round trip.
_IDF_SQL = (
    "CASE WHEN ln(((n.docs - d.df)::float8 + 0.5::float8) / (d.df::float8 + 0.5::float8)) > 0"
    " THEN ln(((n.docs - d.df)::float8 + 0.5::float8) / (d.df::float8 + 0.5::float8)) ELSE 1e-6::float8 END"
)
_CORPUS_CTE = (
    "n AS (SELECT coalesce(sum(docs), 0)::bigint AS docs, coalesce(sum(tokens), 0)::bigint AS tokens"
    " FROM gm_fts_stats)"
)
_WORD_PART = (
    f"q.idf * ((p.tf::float8 * {BM25_K1 + 1.0!r}::float8) / (p.tf::float8 + {BM25_K1!r}::float8 * "
    f"(1::float8 - {BM25_B!r}::float8 + {BM25_B!r}::float8 * p.doc_len::float8 / q.avgdl)))"
)


MAX_SCORED_POSTINGS_DEFAULT = 5_000
"""The most postings one word search scores, as in the SQLite store (``store/sqlite/search.py``): when the
query's stems are in more facts than this (their document frequencies summed), the newest facts are searched
first, a window of ``seq`` (insertion order, as SQLite's rowids) holding the newest ``MAX / postings`` share
of the store, entered by fact id (the postings' key after term and namespace, so the scan reads only the
window). BM25 keeps the whole index's statistics, so a fact in the window scores as in a full search; a
window holding fewer than the asked number of the namespace's matches gives way to the full search in the
same statement."""

_WINDOW_CTE = (
    " w AS (SELECT CASE WHEN t.postings > %s THEN (SELECT f.id FROM gm_facts f WHERE f.seq >"
    " floor((1::float8 - %s::float8 / t.postings::float8) * (SELECT max(seq) FROM gm_facts)::float8)::bigint"
    " ORDER BY f.seq LIMIT 1) END AS cutoff"
    " FROM (SELECT sum(d.df) AS postings FROM q JOIN d ON d.term = q.stem) AS t),"
)
"""The window's first fact id (``NULL``: no window), from the statistics the statement reads."""


def _word_body(count: int, floor: str) -> str:
    """The best ``LIMIT`` facts of the postings of the ``q`` stems (``floor``: the window's condition)."""
    if count == 1:  # one posting per fact: its part is the score (0 + x and a one-value sum are x)
        return (
            f"SELECT p.fact_id, {_WORD_PART} AS s, p.created_at AS created, p.confidence"
            f" FROM q JOIN gm_postings p ON p.term = q.stem WHERE p.agent_id = ANY(%s){{confidence}}{floor}"
            " ORDER BY s DESC, created, p.fact_id LIMIT %s"
        )
    fold = "0::float8"
    for i in range(1, count + 1):
        fold = f"({fold} + coalesce(sum({_WORD_PART}) FILTER (WHERE q.i = {i}), 0::float8))"
    return (
        f"SELECT p.fact_id, {fold} AS s, min(p.created_at) AS created, min(p.confidence) AS confidence"
        f" FROM q JOIN gm_postings p ON p.term = q.stem WHERE p.agent_id = ANY(%s){{confidence}}{floor}"
        " GROUP BY p.fact_id ORDER BY s DESC, created, p.fact_id LIMIT %s"
    )


def word_cte(count: int) -> str:
    """``WITH n, d, q, w, near, hits``: the best facts for ``count`` query stems (parameters:
    :func:`word_params`), searched in the posting window first (:data:`MAX_SCORED_POSTINGS_DEFAULT`).

    A fact's score adds its parts in query-term order, as FTS5 and an ordered ``sum`` do, but each part is
    its own filtered aggregate (one posting per fact and term), folded from 0 (adding +0.0 to a positive
    float is exact): the planner may hash-aggregate, where an ordered sum sorts every posting. The full
    search runs only when the window is set and too thin (a one-time filter: otherwise never executed)."""
    return (
        f"WITH {_CORPUS_CTE},"
        " d AS (SELECT term, sum(df)::bigint AS df FROM gm_terms WHERE term = ANY(%s) GROUP BY term),"
        f" q AS MATERIALIZED (SELECT u.stem, u.i, {_IDF_SQL} AS idf,"
        " CASE WHEN n.tokens = 0 THEN 1::float8 ELSE n.tokens::float8 / n.docs::float8 END AS avgdl"
        " FROM unnest(%s::text[]) WITH ORDINALITY AS u(stem, i) JOIN d ON d.term = u.stem CROSS JOIN n"
        f" WHERE n.docs > 0 AND d.df > 0),{_WINDOW_CTE}"
        f" near AS ({_word_body(count, ' AND p.fact_id >= coalesce((SELECT cutoff FROM w), %s)')}),"
        " hits AS (SELECT * FROM near"
        " WHERE (SELECT cutoff FROM w) IS NULL OR (SELECT count(*) FROM near) >= %s"
        f" UNION ALL SELECT * FROM ({_word_body(count, '')}) AS wide"
        " WHERE (SELECT cutoff FROM w) IS NOT NULL AND (SELECT count(*) FROM near) < %s)"
    )


_WORD_SELECT = " SELECT fact_id, s, created, confidence FROM hits ORDER BY s DESC, created, fact_id"


def _group_rows(i: int, size: int) -> str:
    """Per fact (of every namespace) holding the ``size`` stems of group ``i``: how often they stand
    adjacent, in order."""
    joins = "".join(
        f" JOIN gm_postings p{k} ON p{k}.term = %s"
        f" AND p{k}.agent_id = p1.agent_id AND p{k}.fact_id = p1.fact_id"
        for k in range(2, size + 1)
    )
    adjacent = " AND ".join(f"x + {k - 1} = ANY(p{k}.positions)" for k in range(2, size + 1))
    return (
        f"SELECT {i} AS i, p1.agent_id, p1.fact_id, p1.doc_len, p1.created_at, p1.confidence,"
        f" (SELECT count(*) FROM unnest(p1.positions) AS x WHERE {adjacent})::int AS tf"
        f" FROM gm_postings p1{joins} WHERE p1.term = %s"
    )


def _phrase_ctes(groups: Sequence[Sequence[str]], agent_ids: Sequence[str]) -> tuple[str, list[Any]]:
    """``WITH n, g, d, q``: per (group, fact) term frequencies (phrases from the positions in the postings,
    in every namespace; single stems in ``agent_ids``), each group's document frequency (a phrase's over
    every namespace, as FTS5 counts it; a single stem's from ``gm_terms``) and its idf."""
    parts: list[str] = []
    params: list[Any] = []
    singles: list[tuple[int, str]] = []
    for i, group in enumerate(groups, start=1):
        if len(group) == 1:
            singles.append((i, group[0]))
            continue
        params.extend([*group[1:], group[0]])
        parts.append(_group_rows(i, len(group)))
    single_ids, single_stems = [i for i, _ in singles], [t for _, t in singles]
    if singles:
        parts.append(
            "SELECT s.i, p.agent_id, p.fact_id, p.doc_len, p.created_at, p.confidence,"
            " cardinality(p.positions) AS tf FROM unnest(%s::int[], %s::text[]) AS s(i, stem)"
            " JOIN gm_postings p ON p.term = s.stem WHERE p.agent_id = ANY(%s)"
        )
        params.extend([single_ids, single_stems, list(agent_ids)])
    params.extend([single_ids, single_stems, single_ids])
    ctes = (
        f"WITH {_CORPUS_CTE}, g AS ({' UNION ALL '.join(parts)}),"
        " d AS (SELECT i, count(*)::bigint AS df FROM g WHERE tf > 0 AND i <> ALL(%s::int[]) GROUP BY i"
        "  UNION ALL SELECT s.i, sum(t.df)::bigint FROM unnest(%s::text[]) WITH ORDINALITY AS u(stem, o)"
        "  JOIN unnest(%s::int[]) WITH ORDINALITY AS s(i, o) USING (o)"
        "  JOIN gm_terms t ON t.term = u.stem GROUP BY s.i),"
        f" q AS MATERIALIZED (SELECT d.i, {_IDF_SQL} AS idf,"
        " CASE WHEN n.tokens = 0 THEN 1::float8 ELSE n.tokens::float8 / n.docs::float8 END AS avgdl"
        " FROM d CROSS JOIN n WHERE n.docs > 0 AND d.df > 0)"
    )  # q materialized: inlined, the planner recounted d (all of g) for every row of g
    return ctes, params


_PHRASE_PART = (
    f"q.idf * ((g.tf::float8 * {BM25_K1 + 1.0!r}::float8) / (g.tf::float8 + {BM25_K1!r}::float8 * "
    f"(1::float8 - {BM25_B!r}::float8 + {BM25_B!r}::float8 * g.doc_len::float8 / q.avgdl)))"
)
_PHRASE_FROM = (
    " FROM g JOIN q ON q.i = g.i WHERE g.tf > 0 AND g.agent_id = ANY(%s){confidence} GROUP BY g.fact_id"
)


def phrase_query(
    groups: Sequence[Sequence[str]], agent_ids: Sequence[str], limit: int, confidences: Confidences
) -> tuple[str, list[Any]]:
    """One statement scoring terms some of which are phrases: BM25 summed in query-term order, as for words
    (rows: fact id, score, created_at, confidence)."""
    ctes, params = _phrase_ctes(groups, agent_ids)
    params.append(list(agent_ids))
    clause = DIALECT.restrict("g.confidence", confidences, params)
    params.append(limit)
    query = (
        f"{ctes} SELECT g.fact_id, sum({_PHRASE_PART} ORDER BY g.i) AS s, min(g.created_at) AS created,"
        f" min(g.confidence){_PHRASE_FROM.format(confidence=clause)}"
        " ORDER BY s DESC, created, g.fact_id LIMIT %s"
    )
    return query, params


def phrase_parts_query(
    groups: Sequence[Sequence[str]], agent_ids: Sequence[str], confidences: Confidences
) -> tuple[str, list[Any]]:
    """Like :func:`phrase_query`, unsummed and unlimited: per matching fact its created_at, confidence, and
    each matching group's (1-based index, BM25 part), so the score of any subset of the groups, summed in
    its order, is the one :func:`phrase_query` gives for that subset."""
    ctes, params = _phrase_ctes(groups, agent_ids)
    params.append(list(agent_ids))
    clause = DIALECT.restrict("g.confidence", confidences, params)
    query = (
        f"{ctes} SELECT g.fact_id, min(g.created_at), min(g.confidence), array_agg(g.i ORDER BY g.i),"
        f" array_agg({_PHRASE_PART} ORDER BY g.i){_PHRASE_FROM.format(confidence=clause)}"
    )
    return query, params


DF_MEMORY_STEMS = 50_000
"""Document frequencies remembered per store (for one count of index changes) before the memory restarts."""
CHANGES_SQL = "SELECT coalesce(sum(changes), 0)::bigint FROM gm_fts_stats"
"""How many times the full-text statistics changed (schema 5: a trigger counts every update of their rows,
which every write of postings makes in its own transaction): equal counts, equal document frequencies."""
_FREQUENCIES_SQL = (
    "SELECT s.v, t.term, t.df FROM (SELECT coalesce(sum(changes), 0)::bigint AS v FROM gm_fts_stats) AS s"
    " LEFT JOIN"
    " (SELECT term, sum(df)::bigint AS df FROM gm_terms WHERE term = ANY(%s) GROUP BY term) AS t ON true"
)


def _stem_frequencies(c: psycopg.Connection[Any], stems: Sequence[str]) -> tuple[int, dict[str, int]]:
    """The index's change count and the stems' document frequencies, read in one snapshot."""
    rows = fetch(c, _FREQUENCIES_SQL, (list(stems),))
    found = dict.fromkeys(stems, 0)
    found.update((r[1], int(r[2])) for r in rows if r[1] is not None)
    return int(rows[0][0]), found


def word_params(
    stems: Sequence[str],
    agent_ids: Sequence[str],
    limit: int,
    confidences: Confidences,
    max_postings: int = MAX_SCORED_POSTINGS_DEFAULT,
) -> tuple[str, list[Any]]:
    """The confidence clause and parameters of :func:`word_cte` (the clause is formatted into both the
    window's search and the full one)."""
    params: list[Any] = [sorted(set(stems)), list(stems), max_postings, max_postings]
    clause = ""
    for floor in (True, False):
        params.append(list(agent_ids))
        clause = DIALECT.restrict("p.confidence", confidences, params)
        params.extend([""] if floor else [])
        params.append(limit)
        if floor:
            params.append(limit)
    params.append(limit)
    return clause, params


def _word_search(
    c: psycopg.Connection[Any],
    stems: list[str],
    agent_ids: Sequence[str],
    limit: int,
    confidences: Confidences,
    max_postings: int,
) -> list[ScoredId]:
    """BM25 of single-word terms, summed in SQL over the covering postings index (one statement)."""
    clause, params = word_params(stems, agent_ids, limit, confidences, max_postings)
    rows = fetch(c, (word_cte(len(stems)) + _WORD_SELECT).format(confidence=clause), params)
    return [ScoredId(r[0], float(r[1])) for r in rows]


class PostgresKeywordSearch(PostgresConnections):
    """The full-text half of the PostgreSQL store (mixed into :class:`PostgresStore`)."""

    _tokenizer: FtsTokenizer
    max_scored_postings: int = MAX_SCORED_POSTINGS_DEFAULT
    """The most postings one word search scores (:data:`MAX_SCORED_POSTINGS_DEFAULT`)."""
    _df_memory: tuple[int, dict[str, int]] | None = None
    """The index's change count and the document frequencies read at that count."""

    def _term_stems(self, terms: Sequence[str]) -> dict[str, list[str]]:
        analysed = self._tokenizer.analyse(list(terms))
        return {
            term: [clip_lexeme(s) for s in counts] for term, (counts, _) in zip(terms, analysed, strict=True)
        }

    def document_frequencies(self, terms: Sequence[str]) -> dict[str, int]:
        """Number of live facts containing each (normalised, unstemmed) term, as the index sees it."""
        return self._document_frequencies(terms, None)

    def _document_frequencies(self, terms: Sequence[str], changes: int | None) -> dict[str, int]:
        """:meth:`document_frequencies`; those remembered are answered without a statement when the index
        has not changed since it counted ``changes`` (read by the caller in this call's recall)."""
        unique = list(dict.fromkeys(terms))
        if not unique:
            return {}
        stems = self._term_stems(unique)
        all_stems = sorted({s for group in stems.values() for s in group})
        frequencies = self._stem_counts(all_stems, changes) if all_stems else {}
        return {term: min((frequencies.get(s, 0) for s in group), default=0) for term, group in stems.items()}

    def _stem_counts(self, stems: list[str], changes: int | None) -> dict[str, int]:
        memory = self._df_memory
        if changes is not None and memory is not None and memory[0] == changes:
            known = memory[1]
            if all(stem in known for stem in stems):
                return {stem: known[stem] for stem in stems}
        now, fresh = self._read(lambda c: _stem_frequencies(c, stems))
        if memory is not None and memory[0] == now and len(memory[1]) < DF_MEMORY_STEMS:
            fresh = {**memory[1], **fresh}
        self._df_memory = (now, fresh)
        return fresh

    def keyword_search(
        self, agent_ids: Sequence[str], terms: Sequence[str], limit: int, confidences: Confidences = None
    ) -> list[ScoredId]:
        """FTS5's BM25 computed here, in one statement: postings for words, their positions for phrases."""
        # FTS5 scores every query phrase separately, even two terms with one stem: keep duplicates.
        kept = searchable_terms(terms, agent_ids, limit, confidences)
        groups = [g for g in (self._term_stems([t])[t] for t in kept) if g]
        if not groups:
            return []
        if any(len(g) > 1 for g in groups):
            query, params = phrase_query(groups, agent_ids, limit, confidences)
            rows = self._read(lambda c: fetch(c, query, params))
            return [ScoredId(r[0], float(r[1])) for r in rows]
        stems = [g[0] for g in groups]
        return self._read(
            lambda c: _word_search(c, stems, agent_ids, limit, confidences, self.max_scored_postings)
        )
