"""SQLite keyword candidates: FTS5 BM25 matches and the document frequencies the query planner needs."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from graymatter.store.base import Confidences, ScoredId
from graymatter.store.fts import FTS_TOKENIZER
from graymatter.store.rows import searchable_terms
from graymatter.store.sqlite.connection import SQLiteConnections
from graymatter.store.sqlite.rows import DIALECT, chunks, placeholders


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


def _stems(c: sqlite3.Connection, terms: Sequence[str]) -> dict[int, list[str]]:
    """The stems of each term (by 1-based position), from the connection's query tokenizer table."""
    c.execute("DELETE FROM temp.gm_qtok")
    c.executemany(
        "INSERT INTO temp.gm_qtok(rowid, t) VALUES (?, ?)", [(i + 1, t) for i, t in enumerate(terms)]
    )
    stems: dict[int, list[str]] = {}
    for term, doc in c.execute("SELECT term, doc FROM temp.gm_qtok_vocab").fetchall():
        stems.setdefault(int(doc), []).append(term)
    c.execute("DELETE FROM temp.gm_qtok")
    return stems


class SQLiteKeywordSearch(SQLiteConnections):
    """The full-text half of the SQLite store (mixed into :class:`SQLiteStore`)."""

    def _query_tokenizer(self, c: sqlite3.Connection) -> None:
        if getattr(self._local, "qtok", False):
            return
        c.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.gm_qtok USING fts5(t, tokenize='{FTS_TOKENIZER}')"
        )
        c.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.gm_qtok_vocab USING fts5vocab(temp, gm_qtok, 'instance')"
        )
        self._local.qtok = True

    def document_frequencies(self, terms: Sequence[str]) -> dict[str, int]:
        """Number of live facts containing each (normalised, unstemmed) term, as the index sees it."""
        unique = list(dict.fromkeys(terms))
        if not unique:
            return {}

        def work(c: sqlite3.Connection) -> dict[str, int]:
            self._query_tokenizer(c)
            stems = _stems(c, unique)
            result: dict[str, int] = {}
            for i, term in enumerate(unique):
                counts = []
                for stem in stems.get(i + 1, []):
                    row = c.execute("SELECT doc FROM facts_vocab WHERE term = ?", (stem,)).fetchone()
                    counts.append(int(row[0]) if row else 0)
                result[term] = min(counts) if counts else 0
            return result

        return self._read(work)

    def keyword_search(
        self, agent_ids: Sequence[str], terms: Sequence[str], limit: int, confidences: Confidences = None
    ) -> list[ScoredId]:
        """FTS5's ``bm25()`` over ``facts_fts``, the terms OR-ed as quoted phrases."""
        kept = searchable_terms(terms, agent_ids, limit, confidences)
        if not kept:
            return []
        match = fts_match_expression(kept)
        filters: list[Any] = [*agent_ids]
        where = f"f.agent_id IN ({placeholders(len(agent_ids))})"
        where += DIALECT.restrict("f.confidence", confidences, filters)
        rows = self._read(lambda c: _ranked_matches(c, match, where, filters, limit))
        return [ScoredId(fid, -float(score)) for fid, score in rows]


def _ranked_matches(
    c: sqlite3.Connection, match: str, where: str, filters: list[Any], limit: int
) -> list[tuple[str, float]]:
    """``(fact id, bm25)`` best first: ranked inside FTS5 first (no per-match join), then filtered."""
    inner_limit = max(2 * limit, 50)
    inner = c.execute(
        "SELECT rowid, bm25(facts_fts) AS s FROM facts_fts WHERE facts_fts MATCH ? ORDER BY s, rowid LIMIT ?",
        (match, inner_limit),
    ).fetchall()
    if not inner:
        return []
    score = dict(inner)
    ranked: list[tuple[float, int, str]] = []
    for chunk in chunks(list(score)):
        for rowid, fact_id, created in c.execute(
            "SELECT f.rowid, f.id, f.created_at FROM facts f NOT INDEXED "
            f"WHERE f.rowid IN ({placeholders(len(chunk))}) AND {where}",
            [*chunk, *filters],
        ).fetchall():
            ranked.append((score[rowid], created, fact_id))
    ranked.sort()
    # Answer from the FTS5 cut unless it was full and too few of its rows belong to the namespace.
    # Every fact scoring better than the cut is in it; facts tied with the cut's last score are
    # admitted in insertion (rowid) order, which is deterministic and never reorders the list.
    if len(inner) < inner_limit or len(ranked) >= limit:
        return [(fact_id, s) for s, _, fact_id in ranked[:limit]]
    return c.execute(
        "SELECT f.id, bm25(facts_fts) AS s FROM facts_fts JOIN facts f ON f.rowid = facts_fts.rowid "
        f"WHERE facts_fts MATCH ? AND {where} ORDER BY s, f.created_at, f.id LIMIT ?",
        [match, *filters, limit],
    ).fetchall()
