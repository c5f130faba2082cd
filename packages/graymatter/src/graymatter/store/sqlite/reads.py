"""SQLite fact reads: by id or text, listings, tombstone chains, neighbours, recency and statistics."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from graymatter.models import Fact, MemoryStats
from graymatter.store.base import Confidences
from graymatter.store.listings import SharedListings
from graymatter.store.paging import PageSpelling
from graymatter.store.records import SharedRecords
from graymatter.store.sqlite.connection import SQLiteConnections
from graymatter.store.sqlite.keys import AGENT_IS, KIND_CODES, LIVE_SQL, fact_id, fact_keys
from graymatter.store.sqlite.rows import (
    CONFIDENCE_SQL,
    DIALECT,
    chunks,
    from_micros,
    placeholders,
    stored_labels,
    text_hash,
)
from graymatter.store.sqlite.schema import SESSION_SQL

_LIVE = LIVE_SQL.format(row="")
_SIDE_SQL = (
    "SELECT * FROM (SELECT ? AS src, id, created_at FROM facts INDEXED BY facts_session "
    f"WHERE agent = ? AND {SESSION_SQL} = ? AND provenance <> '' AND {_LIVE} AND {SESSION_SQL} IS NOT NULL "
    "AND (created_at, id) {op} (?, ?) ORDER BY {order} LIMIT ?)"
)
"""One side of a turn's session neighbours (params: its id, its agent's code, session, created_at, stored
id, window), every term of ``facts_session``'s condition spelled out so that the index applies."""
_BEFORE_SQL = _SIDE_SQL.format(op="<", order="created_at DESC, id DESC")
_AFTER_SQL = _SIDE_SQL.format(op=">", order="created_at, id")
_BY_TEXT = (
    "NOT INDEXED WHERE rowid IN (SELECT fact_rowid FROM facts_text WHERE text_hash = ? "
    "UNION ALL SELECT rowid FROM facts WHERE text = ? AND rowid > "
    "coalesce((SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'text_settled'), 0)) "
    f"AND {AGENT_IS} AND text = ? AND kind = ? ORDER BY created_at, id"
)
"""Exact-text matches (schema 5): the settled keys, and the rows past the settled mark (``facts.py``), each
fact read by rowid (``NOT INDEXED``: never a walk of the agent's facts)."""
PAGES = PageSpelling(
    DIALECT,
    live_source="facts INDEXED BY facts_listing",
    all_source="facts INDEXED BY facts_listing",
    interface="(CASE provenance WHEN '' THEN 'library' ELSE "
    "coalesce(json_extract(provenance, '$.interface'), 'library') END)",
    confidence=CONFIDENCE_SQL.format(row=""),
    row_values=False,
)
_STATS_SQL = (
    "SELECT "
    " sum(kind = 0 AND superseded_by IS NULL),"
    " sum(kind = 0 AND superseded_by IS NOT NULL),"
    " sum(kind = 1 AND superseded_by IS NULL),"
    " sum(pinned AND superseded_by IS NULL),"
    " min(CASE WHEN kind = 0 AND superseded_by IS NULL THEN created_at END),"
    " max(CASE WHEN kind = 0 AND superseded_by IS NULL THEN created_at END),"
    " avg(CASE WHEN kind = 0 AND superseded_by IS NULL THEN weight END),"
    " sum(embed_state = 1 AND superseded_by IS NULL)"
    f" FROM facts WHERE {AGENT_IS}"
)


Anchor = tuple[int, str, int, Any]
"""A turn's agent code, session, ``created_at`` and stored id."""


def _neighbour_rows(
    c: sqlite3.Connection, anchors: dict[str, Anchor], known: Sequence[str], window: int
) -> list[tuple[str, Any, int]]:
    """``(anchor, neighbour as stored, created_at)`` rows: two sub-selects per anchor, one statement per
    chunk."""
    out: list[tuple[str, Any, int]] = []
    for chunk in chunks(known, 200):
        parts: list[str] = []
        params: list[Any] = []
        for anchor in chunk:
            agent, session, created, key = anchors[anchor]
            for sql in (_BEFORE_SQL, _AFTER_SQL):
                parts.append(sql)
                params.extend((anchor, agent, session, created, key, window))
        out.extend(c.execute(" UNION ALL ".join(parts), params).fetchall())
    return out


class SQLiteFactReads(SharedRecords, SharedListings, SQLiteConnections):
    """The fact-reading half of the SQLite store (mixed into :class:`SQLiteStore`)."""

    _page_spelling = PAGES

    def _rows_by_ids(self, ids: list[str], select: str) -> list[Any]:
        """Rows of ``select`` (``{ids}`` = a condition "is one of ids") over ``ids``, chunked, in one read."""

        def work(c: sqlite3.Connection) -> list[Any]:
            rows: list[Any] = []
            for chunk in chunks(ids):
                query = select.format(ids=f"IN ({placeholders(len(chunk))})")
                rows.extend(c.execute(query, list(chunk)).fetchall())
            return rows

        return self._read(work) if ids else []

    def find_by_text(self, agent_id: str, text: str, kind: str = "fact") -> list[Fact]:
        """Every fact (live or not) of ``agent_id`` whose text equals ``text`` exactly, oldest first."""
        key = text_hash(text)
        return self._listing(_BY_TEXT, (key, text, agent_id, text, KIND_CODES.get(kind, kind)))

    def neighbours(self, fact_ids: Sequence[str], window: int) -> dict[str, list[str]]:
        """For each given live fact written in a session, the live facts of its agent and session written
        right before and after it (a fact without a session has no neighbours and is left out)."""
        ids = list(dict.fromkeys(fact_ids))
        if not ids or window <= 0:
            return {}
        anchors: dict[str, Anchor] = {}
        select = (
            f"SELECT id, agent, {SESSION_SQL}, created_at FROM facts "
            f"WHERE {_LIVE} AND {SESSION_SQL} IS NOT NULL AND id IN ({{ids}})"
        )

        def work(c: sqlite3.Connection) -> dict[str, list[str]]:
            anchors.clear()
            for chunk in chunks(fact_keys(ids)):
                for key, agent, session, created in c.execute(
                    select.format(ids=placeholders(len(chunk))), list(chunk)
                ).fetchall():
                    anchors[fact_id(key)] = (agent, session, created, key)
            found: dict[str, list[tuple[int, str]]] = {fid: [] for fid in ids if fid in anchors}
            for src, other, created in _neighbour_rows(c, anchors, list(found), window):
                found[src].append((created, fact_id(other)))
            return {fid: [other for _, other in sorted(rows)] for fid, rows in found.items()}

        return self._read(work)

    def recent(self, agent_ids: Sequence[str], limit: int, confidences: Confidences = None) -> list[str]:
        """Ids of the newest live facts (``created_at`` desc, then ``id``), at most ``limit``."""
        if not agent_ids or limit <= 0 or confidences == []:
            return []
        params: list[Any] = []
        parts = []
        for agent in agent_ids:
            part_params: list[Any] = [agent]
            clause = DIALECT.restrict("confidence", stored_labels(confidences), part_params)
            parts.append(
                "SELECT * FROM (SELECT id, created_at FROM facts INDEXED BY facts_listing "
                f"WHERE {AGENT_IS} AND {_LIVE}{clause} "
                "ORDER BY created_at DESC, id LIMIT ?)"
            )
            params.extend([*part_params, limit])
        sql = " UNION ALL ".join(parts) + " ORDER BY created_at DESC, id LIMIT ?"
        params.append(limit)
        rows = self._read(lambda c: c.execute(sql, params).fetchall())
        return [fact_id(r[0]) for r in rows]

    def _stats_row(self, c: sqlite3.Connection, agent_id: str) -> MemoryStats:
        row = c.execute(_STATS_SQL, (agent_id,)).fetchone()
        checkpoints, links = self._record_counts(c, agent_id)
        return MemoryStats(
            agent_id=agent_id,
            fact_count=row[0] or 0,
            superseded_count=row[1] or 0,
            alias_count=row[2] or 0,
            pinned_count=row[3] or 0,
            checkpoint_count=checkpoints,
            link_count=links,
            pending_embeddings=row[7] or 0,
            oldest_at=from_micros(row[4]),
            newest_at=from_micros(row[5]),
            avg_weight=round(float(row[6]), 6) if row[6] is not None else 0.0,
        )

    def stats(self, agent_id: str) -> MemoryStats:
        """Counts and ages of one namespace."""
        return self._read(lambda c: self._stats_row(c, agent_id))
