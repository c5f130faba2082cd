"""SQLite keyword candidates: FTS5 BM25 matches and the document frequencies the query planner needs."""

from __future__ import annotations

import operator
import re
import sqlite3
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from graymatter.store.base import Confidences, ScoredId
from graymatter.store.fts import FtsTokenizer
from graymatter.store.rows import searchable_terms
from graymatter.store.sqlite.connection import SQLiteConnections
from graymatter.store.sqlite.keys import AGENT_NAME, fact_id, fact_keys
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
    if _SURROGATE.search(cleaned) is not None:
        cleaned = "".join(" " if 0xD800 <= ord(ch) <= 0xDFFF else ch for ch in cleaned)
    return cleaned.replace('"', '""')


_SURROGATE = re.compile("[\ud800-\udfff]")
"""A lone surrogate (what SQLite cannot carry in a string)."""


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
    _cut_memo: CutMemo | None = None
    remember_cut_rows: bool = True
    """Whether keyword cuts take their facts' columns from the rows remembered by rowid (:func:`_memo_cut`)
    instead of joining them in the cut's statement; the same answers either way."""
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
            for chunk in chunks(fact_keys(ids)):
                sql = f"SELECT id, text FROM facts WHERE id IN ({placeholders(len(chunk))})"
                out.update((fact_id(key), text) for key, text in c.execute(sql, list(chunk)).fetchall())
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
        where, filters = DIALECT.agents(agent_ids)
        where += DIALECT.restrict("f.confidence", stored_labels(confidences), filters)
        postings = self._postings(kept)
        share = min(1.0, self.max_scored_postings / postings) if postings else 1.0
        labels = stored_labels(confidences)
        namespace = (frozenset(agent_ids), None if labels is None else frozenset(labels))
        memo = self._cut_memo
        if memo is None:
            memo = self._cut_memo = [(b"", {})]
        known = (memo, namespace) if self.remember_cut_rows else None
        rows = self._read(lambda c: _ranked_matches(c, match, (where, filters), limit, share, known))
        scores: list[tuple[str, float]] = []
        ranks: dict[str, tuple[datetime, str]] = {}
        texts: dict[str, str] = {}
        sessionless: set[str] = set()
        moments = _MOMENTS
        if len(moments) > MOMENTS_KEPT:
            moments.clear()
        for fid, bm25, created, confidence, text, no_session, rank in rows:
            scores.append((fid, -float(bm25)))
            if rank is None:
                moment = moments.get(created)
                if moment is None:
                    moment = moments[created] = at_micros(created)
                rank = (moment, confidence)
            ranks[fid] = rank
            texts[fid] = text
            if no_session:
                sessionless.add(fid)
        return scores, ranks, texts, sessionless


Match = tuple[str, float, int, str, str, int, tuple[datetime, str] | None]
"""``(fact id, bm25, created_at in microseconds, confidence, text, 1 if it has no session else 0, its
rank_info pair when already decoded)``."""
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
    + ", NULL FROM (SELECT rowid, bm25(facts_fts) AS s "
    "FROM facts_fts WHERE facts_fts MATCH ?{window} ORDER BY s, rowid LIMIT ?) AS m "
    "LEFT JOIN facts f ON f.rowid = m.rowid AND {where}"
)
_WINDOW_SQL = " AND rowid > (SELECT CAST((1.0 - ?) * max(rowid) AS INTEGER) FROM facts)"
"""The newest share of the rowids, bounded by an integer: FTS5 seeks its doclists to an integer rowid bound
and ignores a real one (``fts5GetRowidLimit``), leaving SQLite to filter every posting it visits (10-27 %
of a windowed cut at 1M). For the non-negative bound, ``rowid > CAST(x AS INTEGER)`` is ``rowid > x``."""


_INNER_SQL = (
    "SELECT NULL, block FROM facts_fts_data WHERE id = 10 UNION ALL SELECT * FROM (SELECT rowid, "
    "bm25(facts_fts) AS s FROM facts_fts WHERE facts_fts MATCH ?{window} ORDER BY s, rowid LIMIT ?)"
)
"""A cut ranked inside FTS5, and FTS5's structure record read in the same statement (one snapshot)."""
_ROWS_SQL = (
    "SELECT NULL, block, NULL, NULL, NULL, NULL, NULL, NULL FROM facts_fts_data WHERE id = 10 UNION ALL "
    f"SELECT f.rowid, f.id, f.created_at, {_LABEL}, f.text, {_SESSIONLESS}, {AGENT_NAME.format(row='f.')}, "
    "f.confidence FROM facts f WHERE f.rowid IN ("
)
"""The columns a cut needs of facts by rowid (``placeholders`` and ``)`` appended), with the structure."""

CUT_ROWS_KEPT = 16_384
"""Facts whose cut columns a store remembers by rowid (then the memory starts over)."""
Known = tuple[str, int, str, str, int, str, str, tuple[datetime, str]]
"""``(id, created_at, label, text, 1 if no session, agent_id, stored confidence, (created_at decoded,
label))`` of a fact, by rowid."""
CutMemo = list[tuple[bytes, dict[int, Known]]]
"""One box holding FTS5's structure record and the facts' cut columns read while it was the current one."""
Namespace = tuple[frozenset[str], frozenset[str] | None]
"""The agents searched and the stored confidence spellings allowed (None: any)."""


def _in_namespace(inner: list[Any]) -> list[Match]:
    """The cut's rows of the namespace (the others came back without an id), their ids decoded, best first:
    score, then ``created_at``, then id."""
    return sorted(((fact_id(row[0]), *row[1:]) for row in inner if row[0] is not None), key=_BEST_FIRST)


def _memo_cut(
    c: sqlite3.Connection, memo: CutMemo, sql: str, head: list[Any], size: int, namespace: Namespace
) -> tuple[int, list[Match]] | None:
    """One cut of ``size`` rows ranked inside FTS5 (no join): the size of the cut, and its rows of the
    namespace best first, their columns from ``memo`` or read by rowid. ``None`` when the structure record
    is missing or changed between the two reads (the joined cut answers then).

    Exact: the index's rows and the columns read (id, text, agent, created_at, confidence, provenance)
    change only with a row inserted, deleted or retired, which rewrites FTS5's structure record; memo rows
    are used only under the record they were read with."""
    rows = c.execute(sql, [*head, size]).fetchall()
    if rows and rows[0][0] is None:  # SQLite returns the first part of a UNION ALL first
        structure, inner = rows[0][1], rows[1:]
    else:
        structure = next((row[1] for row in rows if row[0] is None), None)
        inner = [row for row in rows if row[0] is not None]
    if structure is None:
        return None
    known_structure, known = memo[0]
    if known_structure != structure or len(known) >= CUT_ROWS_KEPT:
        known = {}
        memo[0] = (structure, known)  # never cleared in place: another thread may be reading it
    try:  # the usual case on a store whose index did not change: every row is remembered
        facts: list[tuple[Known | None, float]] = [(known[rowid], score) for rowid, score in inner]
    except KeyError:
        missing = [rowid for rowid, _ in inner if rowid not in known]
        if not _read_known(c, missing, structure, known):
            return None
        facts = [(known.get(rowid), score) for rowid, score in inner]
    agents, labels = namespace
    ranked: list[Match] = [
        (fact[0], score, fact[1], fact[2], fact[3], fact[4], fact[7])
        for fact, score in facts
        if fact is not None and fact[5] in agents and (labels is None or fact[6] in labels)
    ]
    ranked.sort(key=_BEST_FIRST)
    return len(inner), ranked


def _read_known(c: sqlite3.Connection, rowids: list[int], structure: bytes, known: dict[int, Known]) -> bool:
    """Read the cut columns of ``rowids`` into ``known``; False (and nothing of that read kept) when the
    structure record is no longer ``structure``."""
    for chunk in chunks(rowids):
        rows = c.execute(_ROWS_SQL + placeholders(len(chunk)) + ")", list(chunk)).fetchall()
        if next((row[1] for row in rows if row[0] is None), None) != structure:
            return False
        known.update(
            (row[0], (fact_id(row[1]), *row[2:], (at_micros(row[2]), row[3])))
            for row in rows
            if row[0] is not None
        )
    return True


def _ranked_matches(
    c: sqlite3.Connection,
    match: str,
    where: tuple[str, list[Any]],
    limit: int,
    share: float = 1.0,
    memo: tuple[CutMemo, Namespace] | None = None,
) -> list[Match]:
    """The best matches: ranked inside FTS5 first (no per-match join), the cut's rows looked up by rowid
    and filtered (from ``memo`` when it is given and current, else in the same statement); a cut of
    ``limit`` rows, then of four times that when too few of its rows belong to the namespace, then the
    full join. ``share`` < 1 searches the newest ``share`` of the rowids first
    (:data:`MAX_SCORED_POSTINGS_DEFAULT`)."""
    cuts = (max(limit, 50), max(4 * limit, 200))
    condition, filters = where

    def cut_of(window: str, head: list[Any]) -> Callable[[int], tuple[int, list[Match]]]:
        joined, inner = _cut_statements(window, condition)

        def one(size: int) -> tuple[int, list[Match]]:
            found = None if memo is None else _memo_cut(c, memo[0], inner, head, size, memo[1])
            if found is not None:
                return found
            rows = c.execute(joined, [*head, size, *filters]).fetchall()
            return len(rows), _in_namespace(rows)

        return one

    if share < 1.0:
        windowed = _cut(c, cut_of(_WINDOW_SQL, [match, share]), where, limit, cuts)
        if windowed is not None and len(windowed) >= limit:
            return windowed[:limit]
    ranked = _cut(c, cut_of("", [match]), where, limit, cuts)
    if ranked is not None:
        return ranked[:limit]
    rows = c.execute(
        f"SELECT f.id, bm25(facts_fts) AS s, f.created_at, {_LABEL}, f.text, {_SESSIONLESS}, NULL "
        "FROM facts_fts "
        "JOIN facts f ON f.rowid = facts_fts.rowid "
        f"WHERE facts_fts MATCH ? AND {condition} ORDER BY s, f.created_at, f.id LIMIT ?",
        [match, *filters, limit],
    ).fetchall()
    return _in_namespace(rows)


_STATEMENTS: dict[tuple[str, str], tuple[str, str]] = {}


def _cut_statements(window: str, condition: str) -> tuple[str, str]:
    """The joined and the memory's cut statements for a window and a namespace condition (formatted once:
    a recall asks for the same few)."""
    key = (window, condition)
    found = _STATEMENTS.get(key)
    if found is None:
        if len(_STATEMENTS) > 256:  # conditions differ only by the number of agents and labels
            _STATEMENTS.clear()
        found = _STATEMENTS[key] = (
            _CUT_SQL.format(window=window, where=condition),
            _INNER_SQL.format(window=window),
        )
    return found


def _cut(
    c: sqlite3.Connection,
    one: Callable[[int], tuple[int, list[Match]]],
    where: tuple[str, list[Any]],
    limit: int,
    cuts: Sequence[int],
) -> list[Match] | None:
    """The namespace's rows of the first FTS5 cut (``one(size)``: the cut's size and those rows) that
    holds ``limit`` of them or every match, best first; ``None`` when even the largest cut was full and
    too thin.

    Every fact scoring better than a cut's last row is in the cut; facts tied with it are admitted in
    insertion (rowid) order, which is deterministic and never reorders the list."""
    condition, filters = where
    for size in cuts:
        count, ranked = one(size)
        if count < size or len(ranked) >= limit:
            return ranked
        if not ranked and not _has_live_facts(c, condition, filters):
            return []  # an empty namespace (a ``__shared__`` nobody wrote to): no larger cut, no full join
    return None


def _has_live_facts(c: sqlite3.Connection, where: str, filters: list[Any]) -> bool:
    """Whether the namespace (``where`` over ``facts f``) holds a live fact: one probe of its index."""
    query = f"SELECT 1 FROM facts f WHERE {where} AND f.superseded_by IS NULL LIMIT 1"
    return c.execute(query, filters).fetchone() is not None
