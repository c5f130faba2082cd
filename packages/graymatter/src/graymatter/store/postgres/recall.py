"""One recall in two or three round trips: the keyword round trip also reads what the recall asks next.

The recall pipeline (``retrieval/pipeline.py``) calls the store several times, each call depending on the
last: aliases, document frequencies, the keyword search, then the phrase search, the context neighbours,
the recent facts, their ranking columns and the rows of the winners. On PostgreSQL each call is a round
trip. Here the keyword search (the third) sends, in one pipeline, the BM25 statement that also returns the
session neighbours of its best hits and the rows of every fact it names, and the search for the phrases
the query will ask for (adjacent query words, from the document-frequency call); the aliases call reads the
newest facts with their rows when recalls were seen to ask for them. The later calls are answered from
that read when they ask exactly for what it holds, else they query as before (for the part it lacks):
every answer is the one the database gives.

What was read is kept per thread, for one recall: it is dropped by the next recall, by any write through
this store, and after :data:`RECALL_TTL_S`; each row is handed out once.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, TypeVar

import psycopg

from graymatter.models import Fact
from graymatter.store.base import Confidences, ScoredId
from graymatter.store.postgres.bm25 import (
    CHANGES_SQL,
    PostgresKeywordSearch,
    phrase_parts_query,
    word_cte,
    word_params,
)
from graymatter.store.postgres.connection import fetch
from graymatter.store.postgres.reads import LENDER_SQL, NEIGHBOUR_IDS_SQL, PostgresFactReads, recent_query
from graymatter.store.postgres.recall_state import (
    KEYWORD,
    NEIGHBOURS,
    PHRASES,
    RANKS,
    RECENT,
    START,
    Hints,
    RecallRead,
    phrase_hits,
    speculated_phrases,
)
from graymatter.store.postgres.rows import decode_fact, one, utc
from graymatter.store.rows import FACT_COLUMNS

T = TypeVar("T")

RECALL_TTL_S = 1.0
"""How long what one recall read may answer its later calls (a recall takes milliseconds)."""
_COLUMNS = len(FACT_COLUMNS.split(","))
_F_COLUMNS = ", ".join(f"f.{c.strip()}" for c in FACT_COLUMNS.split(","))
_HITS_TAIL = (
    ", ranked AS (SELECT fact_id, s, row_number() OVER (ORDER BY s DESC, created, fact_id) AS r FROM hits),"
    f" lend AS (SELECT a.id, {NEIGHBOUR_IDS_SQL} AS ids FROM ranked h JOIN gm_facts a ON a.id = h.fact_id"
    f" WHERE h.r <= %s AND {LENDER_SQL}),"
    " want AS (SELECT fact_id AS id FROM ranked UNION SELECT unnest(ids) FROM lend)"
    f" SELECT {_F_COLUMNS}, h.s, h.r, l.id IS NOT NULL, l.ids FROM gm_facts f"
    " LEFT JOIN ranked h ON h.fact_id = f.id LEFT JOIN lend l ON l.id = f.id"
    " WHERE f.id = ANY(ARRAY(SELECT id FROM want))"  # by primary key, never a scan
)
"""After :func:`word_cte`: the neighbours of its best hits, and the rows of all of them."""
_LENDERS_SQL = (
    f"WITH lend AS (SELECT a.id, {NEIGHBOUR_IDS_SQL} AS ids FROM gm_facts a"
    f" WHERE a.id = ANY(%s) AND {LENDER_SQL}),"
    " want AS (SELECT id FROM lend UNION SELECT unnest(ids) FROM lend)"
    f" SELECT {_F_COLUMNS}, NULL::float8, NULL::bigint, l.id IS NOT NULL, l.ids FROM gm_facts f"
    " LEFT JOIN lend l ON l.id = f.id WHERE f.id = ANY(ARRAY(SELECT id FROM want))"
)
"""Neighbours of the given facts, with the rows of the lenders and their neighbours (the shape of
the word search's read)."""
_ALIASES_SQL = (
    f"SELECT {FACT_COLUMNS} FROM gm_facts WHERE agent_id = ANY(%s) AND kind = 'alias'"
    " AND superseded_by IS NULL ORDER BY created_at, id"
)


class PostgresRecallReads(PostgresFactReads, PostgresKeywordSearch):
    """The recall calls of the store, answered from one keyword round trip where they can be."""

    _recall_local: threading.local
    _hints: Hints

    def _init_recall_reads(self) -> None:
        self._recall_local = threading.local()
        self._hints = Hints()

    def _read(self, work: Callable[[psycopg.Connection[Any]], T]) -> T:
        if not getattr(self._recall_local, "inside", False):
            self._recall_local.read = None  # a call outside the recall ends what it read
        return super()._read(work)

    def _recall_read(self, stage: int) -> RecallRead | None:
        """The current recall's read if it may answer a call of ``stage`` (it then moves on to it; a call
        out of order, or a second one, means another recall: the read is dropped)."""
        read = self._valid_read()
        if read is None:
            return None
        if stage != RANKS and stage <= read.stage:
            self._recall_local.read = None
            return None
        read.stage = max(read.stage, stage) if stage != RANKS else read.stage
        return read

    def _valid_read(self) -> RecallRead | None:
        """The thread's read, unless a write or time made it stale."""
        read: RecallRead | None = getattr(self._recall_local, "read", None)
        if read is not None and (
            read.generation != self._generation or time.monotonic() - read.born > RECALL_TTL_S
        ):
            self._recall_local.read = read = None
        return read

    def _forget_recall(self) -> None:
        self._recall_local.read = None

    def _inner(self, call: Callable[[], T]) -> T:
        """Run a plain store call without ending the recall's read."""
        self._recall_local.inside = True
        try:
            return call()
        finally:
            self._recall_local.inside = False

    # -- the calls, in pipeline order ---------------------------------------------------------------
    def aliases(self, agent_ids: Sequence[str]) -> list[Fact]:
        """Live alias facts, oldest first; opens a recall: the same round trip counts the full-text index's
        changes (so remembered document frequencies can answer) and may read the newest facts."""
        self._forget_recall()
        if not agent_ids:
            return []
        read = RecallRead(((), None, 0), self._generation, agents=tuple(agent_ids))
        limit = self._hints.recent
        filters = list(dict.fromkeys([None, self._hints.confidences]))
        if not self._hints.recent_with_aliases:
            filters = []

        def work(c: psycopg.Connection[Any]) -> list[Any]:
            with c.pipeline():
                found = c.execute(_ALIASES_SQL, (list(agent_ids),))
                changes = c.execute(CHANGES_SQL)
                newest = [c.execute(*recent_query(agent_ids, limit, f, FACT_COLUMNS)) for f in filters]
            read.changes = int(one(changes.fetchone())[0])
            if not filters:
                return found.fetchall()
            read.recent, read.recent_limit = [], limit
            for labels, cursor in zip(filters, newest, strict=True):
                rows = cursor.fetchall()
                read.recent.append((labels, [(r[0], r[12]) for r in rows]))
                read.rows.update((r[0], r) for r in rows)
            return found.fetchall()

        aliases = [decode_fact(r) for r in self._read(work)]
        if read.generation == self._generation:
            self._recall_local.read = read
        return aliases

    def document_frequencies(self, terms: Sequence[str]) -> dict[str, int]:
        """As the index sees them (from memory when the index is unchanged since this recall began);
        remembers the query's terms, in order, for the phrase search."""
        read = getattr(self._recall_local, "read", None)
        if read is None or read.stage != START:
            self._forget_recall()
        self._recall_local.query_terms = list(terms)
        opened = self._valid_read() if read is not None and read.stage == START else None
        changes = opened.changes if opened is not None else None  # counted when this recall began
        return self._inner(lambda: self._document_frequencies(terms, changes))

    def keyword_search(
        self, agent_ids: Sequence[str], terms: Sequence[str], limit: int, confidences: Confidences = None
    ) -> list[ScoredId]:
        """FTS5's BM25; a word search also reads what the rest of its recall will ask (see module)."""
        scope = (tuple(agent_ids), None if confidences is None else tuple(confidences), limit)
        read = self._valid_read()
        asks_read_phrases = read is not None and read.scope == scope and set(terms) <= set(read.phrases)
        if read is not None and terms and asks_read_phrases and self._recall_read(PHRASES) is not None:
            return phrase_hits(read, list(terms), limit)
        stems = self._term_stems(list(dict.fromkeys(terms)))
        groups = [stems[t] for t in terms if t.strip() and stems.get(t)]
        query_terms: list[str] = getattr(self._recall_local, "query_terms", [])
        self._recall_local.query_terms = []
        if not groups or any(len(g) > 1 for g in groups) or not agent_ids or limit <= 0 or confidences == []:
            plain = super().keyword_search
            return self._inner(lambda: plain(agent_ids, terms, limit, confidences))
        opened = read if read is not None and read.stage == START else None
        fresh = RecallRead(scope, self._generation, stage=KEYWORD)
        if opened is not None and opened.agents == scope[0]:
            fresh.recent, fresh.recent_limit, fresh.rows, fresh.agents = (
                opened.recent,
                opened.recent_limit,
                opened.rows,
                opened.agents,
            )
        phrases = speculated_phrases(query_terms, terms)
        hits = self._read(lambda c: self._read_ahead(c, fresh, [g[0] for g in groups], phrases))
        if fresh.generation == self._generation:
            self._recall_local.read = fresh
        return hits

    def _read_ahead(
        self, c: psycopg.Connection[Any], read: RecallRead, stems: list[str], phrases: list[str]
    ) -> list[ScoredId]:
        """One round trip: the word search with neighbours and rows, the phrases, the newest facts."""
        agent_ids, confidences, limit = list(read.scope[0]), read.scope[1], read.scope[2]
        hints = self._hints
        clause, params = word_params(stems, agent_ids, limit, confidences, self.max_scored_postings)
        lenders = limit  # every hit: the phrase bonus can lift any of them among the lenders
        phrase_groups = [g for g in (self._term_stems([p])[p] for p in phrases) if len(g) > 1]
        found = None
        # Once psycopg has prepared the word statement (its fifth run on a connection), it runs on its generic
        # plan: planning its CTEs costs about as much as running them on 100k facts, the plan does not depend
        # on the values, and PostgreSQL's default re-plans every run (the generic estimate looks costlier).
        # Session settings in the same pipeline (a transaction would add round trips), reset on any failure.
        try:
            with c.pipeline():
                c.execute("SET plan_cache_mode = force_generic_plan")
                hits = c.execute(
                    (word_cte(len(stems)) + _HITS_TAIL).format(confidence=clause),
                    [*params, hints.window, hints.window, lenders],
                )
                c.execute("RESET plan_cache_mode")
                if phrases and len(phrase_groups) == len(phrases):
                    query, phrase_params = phrase_parts_query(phrase_groups, agent_ids, confidences)
                    found = c.execute(query, phrase_params)
        except BaseException:
            with contextlib.suppress(psycopg.Error):
                c.execute("RESET plan_cache_mode")
            raise
        ranked = self._take_hits(read, hits.fetchall(), hints.window, lenders)
        if found is not None:
            read.phrases = phrases
            for fact_id, created, confidence, indexes, parts in found.fetchall():
                read.phrase_parts.append((fact_id, created, dict(zip(indexes, parts, strict=True))))
                read.rank[fact_id] = (utc(created), confidence)  # type: ignore[assignment]
        return ranked

    @staticmethod
    def _take_rows(read: RecallRead, rows: list[Any]) -> list[tuple[int, ScoredId]]:
        """Keep the rows and neighbour lists in ``read``; return the ranked hits among them."""
        ranked: list[tuple[int, ScoredId]] = []
        for row in rows:
            fact_id, score, position, lends, ids = row[0], row[_COLUMNS], row[_COLUMNS + 1], row[-2], row[-1]
            read.rows[fact_id] = row[:_COLUMNS]
            if score is not None:
                ranked.append((int(position), ScoredId(fact_id, float(score))))
            if lends:
                read.lenders[fact_id] = list(ids or ())
        ranked.sort(key=lambda item: item[0])
        return ranked

    def _take_hits(self, read: RecallRead, rows: list[Any], window: int, lenders: int) -> list[ScoredId]:
        """The ranked word hits; rows and neighbours kept in ``read``."""
        read.window = window
        ranked = self._take_rows(read, rows)
        read.asked = {hit.fact_id for position, hit in ranked if position <= lenders}
        return [hit for _, hit in ranked]

    def neighbours(self, fact_ids: Sequence[str], window: int) -> dict[str, list[str]]:
        """Session neighbours; those read with the keyword search are not read again."""
        ids = list(dict.fromkeys(fact_ids))
        if window > 0 and ids:
            self._hints.window = window
            self._hints.lenders = max(self._hints.lenders, len(ids))
        read = self._recall_read(NEIGHBOURS)
        plain = super().neighbours
        if read is None:
            return plain(ids, window)
        if read.window != window:
            return self._inner(lambda: plain(ids, window))
        missing = [fid for fid in ids if fid not in read.asked]
        if missing:  # one round trip, rows included, so the ranking columns need none
            rows = self._inner(
                lambda: self._read(lambda c: fetch(c, _LENDERS_SQL, (window, window, missing)))
            )
            self._take_rows(read, rows)
            read.asked.update(missing)
        return {fid: read.lenders[fid] for fid in ids if fid in read.lenders}

    def recent(self, agent_ids: Sequence[str], limit: int, confidences: Confidences = None) -> list[str]:
        """The newest live facts; answered from those the aliases call read when they cover ``limit``: the
        first ``limit`` of a prefix of the order, filtered, are the first ``limit`` of the filtered order."""
        if limit > 0:
            self._hints.recent = limit
            if confidences is not None:
                self._hints.confidences = tuple(confidences)
        read = self._recall_read(RECENT)
        if read is not None and read.recent is None and read.agents == tuple(agent_ids):
            self._hints.recent_with_aliases = True  # the next such recall reads them with its aliases
        if read is not None and read.recent is not None and read.agents == tuple(agent_ids) and limit > 0:
            allowed = None if confidences is None else set(confidences)
            for labels, newest in read.recent:
                if labels is not None and (allowed is None or not allowed <= set(labels)):
                    continue
                kept = [fid for fid, label in newest if allowed is None or label in allowed]
                if len(kept) >= limit or len(newest) < read.recent_limit:
                    return kept[:limit]
        if not agent_ids or limit <= 0 or confidences == []:
            return []
        # A recall by recency alone starts here: read the rows too, for its ranking columns and results.
        # (in a recall whose read did not cover them, they join its read)
        fresh = read or RecallRead(((), None, 0), self._generation, stage=RECENT, agents=tuple(agent_ids))
        query, params = recent_query(agent_ids, limit, confidences, FACT_COLUMNS)
        rows = self._inner(lambda: self._read(lambda c: fetch(c, query, params)))
        fresh.rows.update((r[0], r) for r in rows)
        if fresh.generation == self._generation:
            self._recall_local.read = fresh
        return [r[0] for r in rows]

    def rank_info(self, fact_ids: Sequence[str]) -> dict[str, tuple[datetime, str]]:
        """``(created_at, confidence)`` of the live facts among ``fact_ids``; rows read are not read again."""
        read = self._recall_read(RANKS)
        plain = super().rank_info
        if read is None:
            return plain(fact_ids)
        known = dict(read.rank)
        for fid, row in read.rows.items():  # every row read is a live fact: hits, neighbours, newest
            known[fid] = (utc(row[5]), row[12])  # type: ignore[assignment]
        ids = list(dict.fromkeys(fact_ids))
        missing = [fid for fid in ids if fid not in known]
        more = self._inner(lambda: plain(missing)) if missing else {}
        return {fid: info for fid in ids if (info := known.get(fid) or more.get(fid)) is not None}

    def get_facts(self, fact_ids: Sequence[str]) -> list[Fact]:
        """Facts by id, in the order given; rows the recall already read are decoded, not read again."""
        read = self._recall_read(RANKS)
        plain = super().get_facts
        if read is None:
            return plain(fact_ids)
        ids = list(dict.fromkeys(fact_ids))
        found = {fid: decode_fact(read.rows.pop(fid)) for fid in ids if fid in read.rows}
        missing = [fid for fid in ids if fid not in found]
        if missing:
            more = self._inner(lambda: plain(missing))
            found.update((f.id, f) for f in more)
        return [found[fid] for fid in ids if fid in found]

    def keyword_search_ranked(
        self, agent_ids: Sequence[str], terms: Sequence[str], limit: int, confidences: Confidences = None
    ) -> tuple[list[ScoredId], dict[str, tuple[datetime, str]], dict[str, str]]:
        """:meth:`keyword_search`, and the ``rank_info`` and texts of its hits from the rows its round trip
        read (a hit whose row was not read has its ranking columns only, or nothing)."""
        hits = self.keyword_search(agent_ids, terms, limit, confidences)
        read = self._valid_read()
        ranks: dict[str, tuple[datetime, str]] = {}
        texts: dict[str, str] = {}
        if read is None:
            return hits, ranks, texts
        for hit in hits:
            row = read.rows.get(hit.fact_id)
            if row is not None:
                ranks[hit.fact_id] = (utc(row[5]), row[12])  # type: ignore[assignment]
                texts[hit.fact_id] = row[2]
            elif (info := read.rank.get(hit.fact_id)) is not None:
                ranks[hit.fact_id] = info
        return hits, ranks, texts

    def fact_texts(self, fact_ids: Sequence[str]) -> dict[str, str]:
        """The text of each fact among ``fact_ids`` (live or not): from the rows the recall read, the rest in
        one statement whose live rows join the read (so the facts the recall returns are not read again)."""
        ids = list(dict.fromkeys(fact_ids))
        read = self._recall_read(RANKS)
        known = read.rows if read is not None else {}
        missing = [fid for fid in ids if fid not in known]
        rows: dict[str, Sequence[Any]] = {}
        if missing:
            query = f"SELECT {FACT_COLUMNS} FROM gm_facts WHERE id = ANY(%s)"
            rows = {r[0]: r for r in self._inner(lambda: self._read(lambda c: fetch(c, query, (missing,))))}
            if read is not None:  # only live facts: every row of the read answers ``rank_info`` too
                read.rows.update((fid, r) for fid, r in rows.items() if r[9] is None and r[3] == "fact")
        return {fid: str(row[2]) for fid in ids if (row := known.get(fid) or rows.get(fid)) is not None}
