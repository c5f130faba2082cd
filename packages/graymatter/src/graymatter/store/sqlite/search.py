"""SQLite keyword candidates: FTS5 BM25 matches and the document frequencies the query planner needs."""

from __future__ import annotations

import operator
import sqlite3
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from graymatter.store.base import Confidences, ScoredId
from graymatter.store.fts import FtsTokenizer
from graymatter.store.rows import searchable_terms
from graymatter.store.sqlite.connection import SQLiteConnections
from graymatter.store.sqlite.rows import (
    CONFIDENCE_SQL,
    DIALECT,
    at_micros,
    chunks,
    placeholders,
    stored_labels,
)
from graymatter.store.sqlite.schema import SESSION_SQL


def _fts_safe(term: str) -> str:
    """Drop what SQLite cannot carry inside a quoted FTS5 string: NUL and lone surrogates."""
    cleaned = term.replace("\x00", " ")
    if any(0xD800 <= ord(ch) <= 0xDFFF for ch in cleaned):
        cleaned = "".join(" " if 0xD800 <= ord(ch) <= 0xDFFF else ch for ch in cleaned)
    return cleaned.replace('"', '""')


def fts_match_expression(terms: Sequence[str]) -> str:
    """An FTS5 MATCH expression OR-ing the terms, each quoted so no input can be FTS5 syntax.

    A term with several words is a phrase (words adjacent, in order)."""
    return " OR ".join('"' + _fts_safe(term) + '"' for term in terms)


MAX_SCORED_POSTINGS_DEFAULT = 5_000
"""The most postings one keyword search scores (about 4.5 ms of BM25 at 1M facts: FTS5 scores every posting
it visits before it sorts). When even the query's rarest word is in more facts (the term selection always
keeps it), the newest facts are searched first: a window of rowids, the newest ``MAX / postings`` share of
the store, where about this many of the postings fall. BM25 keeps the whole index's statistics, so a fact
in the window scores as in a full search. A window holding fewer than the asked number of the namespace's
matches is dropped for the full search."""

DF_CACHE_STEMS = 50_000
"""Document frequencies remembered per store (per index structure) before the memory starts over."""

MOMENTS_KEPT = 65_536
"""Decoded ``created_at`` values remembered (a datetime is immutable; decoding one costs more than a
lookup, and a recall decodes about a hundred)."""
_MOMENTS: dict[int, datetime] = {}

_TOKENIZER = FtsTokenizer()
"""The index's tokenizer run in process (with its cache): query terms are stemmed without a statement."""


class SQLiteKeywordSearch(SQLiteConnections):
    """The full-text half of the SQLite store (mixed into :class:`SQLiteStore`)."""

    _df_cache: tuple[bytes, dict[str, int]] | None = None
    max_scored_postings: int = MAX_SCORED_POSTINGS_DEFAULT
    """The most postings one keyword search scores (:data:`MAX_SCORED_POSTINGS_DEFAULT`)."""

    def document_frequencies(self, terms: Sequence[str]) -> dict[str, int]:
        """Number of live facts containing each (normalised, unstemmed) term, as the index sees it: the
        smallest document frequency among the term's stems (one statement for the stems not known yet)."""
        unique = list(dict.fromkeys(terms))
        if not unique:
            return {}
        stems = dict(zip(unique, _TOKENIZER.stems(unique), strict=True))
        wanted = list(dict.fromkeys(stem for group in stems.values() for stem in group))
        counts = self._read(lambda c: self._stem_counts(c, wanted)) if wanted else {}
        return {term: min((counts.get(s, 0) for s in group), default=0) for term, group in stems.items()}

    def _stem_counts(self, c: sqlite3.Connection, wanted: Sequence[str]) -> dict[str, int]:
        """Document frequencies of stems, remembered while the index structure stays the same.

        FTS5 rewrites its structure record (``facts_fts_data`` id 10: segments and a write counter) with
        every change of the index, so an unchanged record means unchanged counts; the record and the
        counts are read in one snapshot. Counting a frequent stem walks its whole posting list."""
        cached = getattr(self, "_df_cache", None)
        if cached is not None and all(stem in cached[1] for stem in wanted) and _structure(c) == cached[0]:
            return {stem: cached[1][stem] for stem in wanted}  # one statement: the record is unchanged
        c.execute("BEGIN")
        try:
            structure = _structure(c)
            known: dict[str, int] = {}
            if cached is not None and cached[0] == structure:
                known = cached[1]
            missing = [stem for stem in wanted if stem not in known]
            fresh = dict.fromkeys(missing, 0)
            for chunk in chunks(missing):
                sql = f"SELECT term, doc FROM facts_vocab WHERE term IN ({placeholders(len(chunk))})"
                fresh.update((str(term), int(doc)) for term, doc in c.execute(sql, list(chunk)))
        finally:
            c.execute("COMMIT")
        if fresh:
            merged = {**known, **fresh} if len(known) < DF_CACHE_STEMS else fresh
            self._df_cache = (structure, merged)
        return {stem: fresh[stem] if stem in fresh else known[stem] for stem in wanted}

    def _postings(self, terms: Sequence[str]) -> int:
        """About how many postings a search for ``terms`` visits (the sum of their document frequencies):
        from the counts remembered, which the recall's term selection has just checked, else counted."""
        cached = getattr(self, "_df_cache", None)
        if cached is not None:
            groups = _TOKENIZER.stems(list(dict.fromkeys(terms)))
            if all(stem in cached[1] for group in groups for stem in group):
                return sum(min((cached[1][stem] for stem in group), default=0) for group in groups)
        return sum(self.document_frequencies(terms).values())

    def fact_texts(self, fact_ids: Sequence[str]) -> dict[str, str]:
        """The text of each fact among ``fact_ids`` (live or not), id -> text: two columns, nothing decoded
        (recall's re-scoring reads the texts of its best matches, and decodes only the facts it returns)."""
        ids = list(dict.fromkeys(fact_ids))

        def work(c: sqlite3.Connection) -> dict[str, str]:
            out: dict[str, str] = {}
            for chunk in chunks(ids):
                sql = f"SELECT id, text FROM facts WHERE id IN ({placeholders(len(chunk))})"
                out.update(c.execute(sql, list(chunk)).fetchall())
            return out

        return self._read(work) if ids else {}

    def keyword_search(
        self, agent_ids: Sequence[str], terms: Sequence[str], limit: int, confidences: Confidences = None
    ) -> list[ScoredId]:
        """FTS5's ``bm25()`` over ``facts_fts``, the terms OR-ed as quoted phrases."""
        return self.keyword_search_ranked(agent_ids, terms, limit, confidences)[0]

    def keyword_search_ranked(
        self, agent_ids: Sequence[str], terms: Sequence[str], limit: int, confidences: Confidences = None
    ) -> tuple[list[ScoredId], dict[str, tuple[datetime, str]], dict[str, str]]:
        """:meth:`keyword_search`, and the ``rank_info`` and texts of its hits, read in the same statement
        (every row the full-text index holds is a live fact)."""
        scores, ranks, texts, _ = self.keyword_scores_ranked(agent_ids, terms, limit, confidences)
        return [ScoredId(fid, score) for fid, score in scores], ranks, texts

    def keyword_scores_ranked(
        self, agent_ids: Sequence[str], terms: Sequence[str], limit: int, confidences: Confidences = None
    ) -> tuple[list[tuple[str, float]], dict[str, tuple[datetime, str]], dict[str, str], set[str]]:
        """:meth:`keyword_search_ranked` with ``(id, score)`` tuples for the hits (what a recall reads of
        them: no object per hit), and the hits written without a session (they have no neighbours)."""
        kept = searchable_terms(terms, agent_ids, limit, confidences)
        if not kept:
            return [], {}, {}, set()
        match = fts_match_expression(kept)
        filters: list[Any] = [*agent_ids]
        where = f"f.agent_id IN ({placeholders(len(agent_ids))})"
        where += DIALECT.restrict("f.confidence", stored_labels(confidences), filters)
        postings = self._postings(kept)
        share = min(1.0, self.max_scored_postings / postings) if postings else 1.0
        rows = self._read(lambda c: _ranked_matches(c, match, where, filters, limit, share))
        scores: list[tuple[str, float]] = []
        ranks: dict[str, tuple[datetime, str]] = {}
        texts: dict[str, str] = {}
        sessionless: set[str] = set()
        moments = _MOMENTS
        if len(moments) > MOMENTS_KEPT:
            moments.clear()
        for fid, bm25, created, confidence, text, no_session in rows:
            scores.append((fid, -float(bm25)))
            moment = moments.get(created)
            if moment is None:
                moment = moments[created] = at_micros(created)
            ranks[fid] = (moment, confidence)
            texts[fid] = text
            if no_session:
                sessionless.add(fid)
        return scores, ranks, texts, sessionless


Match = tuple[str, float, int, str, str, int]
"""``(fact id, bm25, created_at in microseconds, confidence, text, 1 if it has no session else 0)``."""
_BEST_FIRST = operator.itemgetter(1, 2, 0)
"""Score (FTS5's bm25 is lower for better), then ``created_at``, then id."""


def _structure(c: sqlite3.Connection) -> bytes:
    """FTS5's structure record (``facts_fts_data`` id 10), rewritten with every change of the index."""
    row = c.execute("SELECT block FROM facts_fts_data WHERE id = 10").fetchone()
    return bytes(row[0]) if row is not None else b""


_LABEL = CONFIDENCE_SQL.format(row="f.")
_SESSIONLESS = "CASE WHEN f.provenance IN ('', '{}') THEN 1 ELSE " + SESSION_SQL.replace(
    "provenance", "f.provenance"
)
_SESSIONLESS += " IS NULL END"
"""1 when a fact has no session (a library write without one stores an empty text, ``{}`` before schema 7:
no JSON is read), else 0."""
_CUT_SQL = (
    f"SELECT f.id, m.s, f.created_at, {_LABEL}, f.text, "
    + _SESSIONLESS.replace("{", "{{").replace("}", "}}")
    + " FROM (SELECT rowid, bm25(facts_fts) AS s "
    "FROM facts_fts WHERE facts_fts MATCH ?{window} ORDER BY s, rowid LIMIT ?) AS m "
    "LEFT JOIN facts f ON f.rowid = m.rowid AND {where}"
)
_WINDOW_SQL = " AND rowid > (SELECT (1.0 - ?) * max(rowid) FROM facts)"


def _in_namespace(inner: list[Any]) -> list[Match]:
    """The cut's rows of the namespace (the others came back without an id), best first: score, then
    ``created_at``, then id."""
    return sorted((row for row in inner if row[0] is not None), key=_BEST_FIRST)


def _ranked_matches(
    c: sqlite3.Connection, match: str, where: str, filters: list[Any], limit: int, share: float = 1.0
) -> list[Match]:
    """The best matches: ranked inside FTS5 first (no per-match join), the cut's rows looked up by rowid
    and filtered in the same statement; a cut of ``limit`` rows, then of four times that when too few of
    its rows belong to the namespace, then the full join. ``share`` < 1 searches the newest ``share`` of
    the rowids first (:data:`MAX_SCORED_POSTINGS_DEFAULT`)."""
    cuts = (max(limit, 50), max(4 * limit, 200))
    if share < 1.0:
        sql = _CUT_SQL.format(window=_WINDOW_SQL, where=where)
        windowed = _cut(c, sql, [match, share], (where, filters), limit, cuts)
        if windowed is not None and len(windowed) >= limit:
            return windowed[:limit]
    ranked = _cut(c, _CUT_SQL.format(window="", where=where), [match], (where, filters), limit, cuts)
    if ranked is not None:
        return ranked[:limit]
    return c.execute(
        f"SELECT f.id, bm25(facts_fts) AS s, f.created_at, {_LABEL}, f.text, {_SESSIONLESS} "
        "FROM facts_fts "
        "JOIN facts f ON f.rowid = facts_fts.rowid "
        f"WHERE facts_fts MATCH ? AND {where} ORDER BY s, f.created_at, f.id LIMIT ?",
        [match, *filters, limit],
    ).fetchall()


def _cut(
    c: sqlite3.Connection,
    sql: str,
    head: list[Any],
    where: tuple[str, list[Any]],
    limit: int,
    cuts: Sequence[int],
) -> list[Match] | None:
    """The namespace's rows of the first FTS5 cut that holds ``limit`` of them or every match, best
    first; ``None`` when even the largest cut was full and too thin.

    Every fact scoring better than a cut's last row is in the cut; facts tied with it are admitted in
    insertion (rowid) order, which is deterministic and never reorders the list."""
    condition, filters = where
    for size in cuts:
        inner = c.execute(sql, [*head, size, *filters]).fetchall()
        ranked = _in_namespace(inner)
        if len(inner) < size or len(ranked) >= limit:
            return ranked
        if not ranked and not _has_live_facts(c, condition, filters):
            return []  # an empty namespace (a ``__shared__`` nobody wrote to): no larger cut, no full join
    return None


def _has_live_facts(c: sqlite3.Connection, where: str, filters: list[Any]) -> bool:
    """Whether the namespace (``where`` over ``facts f``) holds a live fact: one probe of its index."""
    query = f"SELECT 1 FROM facts f WHERE {where} AND f.superseded_by IS NULL LIMIT 1"
    return c.execute(query, filters).fetchone() is not None
