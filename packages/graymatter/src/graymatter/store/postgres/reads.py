"""PostgreSQL fact reads: by id or text, listings, tombstone chains, neighbours, recency and statistics."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

import psycopg

from graymatter.models import Fact, MemoryStats
from graymatter.store.base import Confidences
from graymatter.store.listings import SharedListings
from graymatter.store.paging import PageSpelling
from graymatter.store.postgres.connection import PostgresConnections, fetch
from graymatter.store.postgres.rows import DIALECT, one, utc
from graymatter.store.postgres.schema import SESSION_SQL
from graymatter.store.records import SharedRecords

_SIDE_SQL = (
    "(SELECT id, created_at FROM gm_facts b WHERE b.agent_id = a.agent_id"
    f" AND {SESSION_SQL.format(t='b.')} = {SESSION_SQL.format(t='a.')}"
    " AND b.superseded_by IS NULL AND b.kind = 'fact'"
    " AND (b.created_at, b.id) {cmp} (a.created_at, a.id)"
    " ORDER BY b.created_at{desc}, b.id{desc} LIMIT %s)"
)
NEIGHBOUR_IDS_SQL = (
    "(SELECT array_agg(x.id ORDER BY x.created_at, x.id) FROM ("
    + _SIDE_SQL.format(cmp="<", desc=" DESC")
    + " UNION ALL "
    + _SIDE_SQL.format(cmp=">", desc="")
    + ") AS x)"
)
"""The ids of the live facts written right before and after fact ``a`` in its session, oldest first
(parameters: the window twice); NULL when there are none."""
LENDER_SQL = f"a.superseded_by IS NULL AND a.kind = 'fact' AND {SESSION_SQL.format(t='a.')} IS NOT NULL"
"""Fact ``a`` can lend context: live, a fact, written in a session."""
_NEIGHBOURS_SQL = f"SELECT a.id, {NEIGHBOUR_IDS_SQL} FROM gm_facts a WHERE a.id = ANY(%s) AND {LENDER_SQL}"
_PAGES = PageSpelling(
    DIALECT,
    live_source="gm_facts",
    all_source="gm_facts",
    interface="coalesce(provenance::jsonb ->> 'interface', 'library')",
    row_values=True,
)
_STATS_SQL = (
    "SELECT"
    " count(*) FILTER (WHERE kind = 'fact' AND superseded_by IS NULL),"
    " count(*) FILTER (WHERE kind = 'fact' AND superseded_by IS NOT NULL),"
    " count(*) FILTER (WHERE kind = 'alias' AND superseded_by IS NULL),"
    " count(*) FILTER (WHERE pinned AND superseded_by IS NULL),"
    " min(created_at) FILTER (WHERE kind = 'fact' AND superseded_by IS NULL),"
    " max(created_at) FILTER (WHERE kind = 'fact' AND superseded_by IS NULL),"
    " avg(weight) FILTER (WHERE kind = 'fact' AND superseded_by IS NULL),"
    " count(*) FILTER (WHERE embed_state = 1 AND superseded_by IS NULL)"
    " FROM gm_facts WHERE agent_id = %s"
)


def recent_query(
    agent_ids: Sequence[str], limit: int, confidences: Confidences, columns: str = "id, created_at"
) -> tuple[str, list[Any]]:
    """The newest live facts of the namespaces (``created_at`` desc, then id), one index walk each."""
    parts = []
    params: list[Any] = []
    for agent in dict.fromkeys(agent_ids):
        params.append(agent)
        clause = DIALECT.restrict("confidence", confidences, params)
        parts.append(
            f"(SELECT {columns} FROM gm_facts WHERE agent_id = %s AND superseded_by IS NULL "
            f"AND kind = 'fact'{clause} ORDER BY created_at DESC, id LIMIT %s)"
        )
        params.append(limit)
    query = f"SELECT * FROM ({' UNION ALL '.join(parts)}) AS r ORDER BY created_at DESC, id LIMIT %s"
    params.append(limit)
    return query, params


class PostgresFactReads(SharedRecords, SharedListings, PostgresConnections):
    """The fact-reading half of the PostgreSQL store (mixed into :class:`PostgresStore`)."""

    _page_spelling = _PAGES

    def _rows_by_ids(self, ids: list[str], select: str) -> list[Any]:
        """Rows of ``select`` (``{ids}`` = a condition "is one of ids") over ``ids``, in one query."""
        query = select.format(ids="= ANY(%s)")
        return self._read(lambda c: fetch(c, query, (ids,))) if ids else []

    def find_by_text(self, agent_id: str, text: str, kind: str = "fact") -> list[Fact]:
        """Every fact (live or not) of ``agent_id`` whose text equals ``text`` exactly, oldest first."""
        where = (
            "WHERE agent_id = %s AND md5(text) = md5(%s) AND text = %s AND kind = %s ORDER BY created_at, id"
        )
        return self._listing(where, (agent_id, text, text, kind))

    def iter_facts(self, batch: int = 5000) -> Iterator[Fact]:
        """Every fact of every kind, oldest first, streamed in batches."""
        last: tuple[datetime, str] | None = None
        while True:
            if last is None:
                rows = self._listing("ORDER BY created_at, id LIMIT %s", [batch])
            else:
                rows = self._listing(
                    "WHERE (created_at, id) > (%s, %s) ORDER BY created_at, id LIMIT %s", [*last, batch]
                )
            if not rows:
                return
            yield from rows
            last = (rows[-1].created_at, rows[-1].id)

    def neighbours(self, fact_ids: Sequence[str], window: int) -> dict[str, list[str]]:
        """For each live fact written in a session: ids of the live facts its agent wrote right before/after
        it in the same session, oldest first (a fact without a session is left out). One statement."""
        ids = list(dict.fromkeys(fact_ids))
        if not ids or window <= 0:
            return {}
        rows = self._read(lambda c: fetch(c, _NEIGHBOURS_SQL, (window, window, ids)))
        found = {r[0]: list(r[1] or ()) for r in rows}
        return {fid: found[fid] for fid in ids if fid in found}

    def recent(self, agent_ids: Sequence[str], limit: int, confidences: Confidences = None) -> list[str]:
        """Ids of the newest live facts (``created_at`` desc, then ``id``), at most ``limit``."""
        if not agent_ids or limit <= 0 or confidences == []:
            return []
        query, params = recent_query(agent_ids, limit, confidences)
        rows = self._read(lambda c: fetch(c, query, params))
        return [r[0] for r in rows]

    def _stats_row(self, c: psycopg.Connection[Any], agent_id: str) -> MemoryStats:
        row = one(c.execute(_STATS_SQL, (agent_id,)).fetchone())
        checkpoints, links = self._record_counts(c, agent_id)
        return MemoryStats(
            agent_id=agent_id, fact_count=row[0], superseded_count=row[1], alias_count=row[2],
            pinned_count=row[3], checkpoint_count=checkpoints, link_count=links,
            pending_embeddings=row[7], oldest_at=utc(row[4]), newest_at=utc(row[5]),
            avg_weight=round(float(row[6]), 6) if row[6] is not None else 0.0,
        )  # fmt: skip

    def stats(self, agent_id: str) -> MemoryStats:
        """Counts and ages of one namespace."""
        return self._read(lambda c: self._stats_row(c, agent_id))
