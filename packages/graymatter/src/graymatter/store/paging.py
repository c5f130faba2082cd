"""Keyset paging of an agent's facts, newest first by ``(created_at, id)``: the SQL both backends share.

A page is one bounded index walk from the cursor whatever its depth. Listing live facts or all facts
follows an index in order (``facts_listing`` on SQLite, its ``gm_`` twins on PostgreSQL). The other
filters (superseded only, pinned, confidence, interface) have no index of their own: they are conditions
on the rows of that walk, so a rare value makes the walk long. ``scan`` bounds it: the page then examines
at most ``scan`` facts past the cursor and says where it stopped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from graymatter.models import Fact
from graymatter.store.base import FactsPage
from graymatter.store.rows import Dialect

Reader = Callable[[Callable[[Any], Any]], Any]
"""The backend's ``_read``: runs ``work(connection)`` in one read snapshot."""


@dataclass(frozen=True, slots=True)
class PageFilters:
    """What a page keeps: live only (``True``), superseded only (``False``) or both; pinned; labels."""

    live: bool | None = True
    pinned: bool | None = None
    confidence: str | None = None
    interface: str | None = None

    @property
    def unindexed(self) -> bool:
        """Whether a filter applies that no index orders (the walk then skips rows, so ``scan`` bounds it)."""
        labels = (self.pinned, self.confidence, self.interface)
        return self.live is False or any(v is not None for v in labels)


@dataclass(frozen=True, slots=True)
class PageSpelling:
    """How one backend spells the parts of a page query."""

    dialect: Dialect
    live_source: str
    """``FROM`` target for live facts (with the index hint where the backend takes one)."""
    all_source: str
    """``FROM`` target for live and superseded facts."""
    interface: str
    """An SQL expression for the provenance's interface (``library`` when the record names none)."""
    row_values: bool
    """Compare ``(created_at, id)`` as a row value (PostgreSQL); else spelled out so that SQLite ranges the
    index on ``created_at`` (an index without ``id`` cannot take the row value)."""
    confidence: str = "confidence"
    """An SQL expression for the fact's confidence label."""

    def beyond(self, op: str, moment: Any, fact_id: Any) -> tuple[str, list[Any]]:
        """``(created_at, id) op (moment, fact_id)`` for ``op`` in ``<`` or ``>=``, with its params
        (``fact_id`` as stored: ``Dialect.key``)."""
        m = self.dialect.mark
        if self.row_values:
            return f"(created_at, id) {op} ({m}, {m})", [moment, fact_id]
        wide, strict = ("<=", "<") if op == "<" else (">=", ">")
        cond = f"created_at {wide} {m} AND (created_at {strict} {m} OR id {op} {m})"
        return cond, [moment, moment, fact_id]


def _walk(
    s: PageSpelling, agent_id: str, before: tuple[datetime, str] | None, f: PageFilters
) -> tuple[str, str, list[Any]]:
    """``(source, conditions, params)`` of the index walk from the cursor (what the index orders)."""
    d = s.dialect
    walk = [d.agent_is(), f"kind = {d.fact_kind}"]
    params: list[Any] = [agent_id]
    if f.live is True:
        walk.append("superseded_by IS NULL")
    if before is not None:
        cond, extra = s.beyond("<", d.to_db_time(before[0]), d.key(before[1]))
        walk.append(cond)
        params.extend(extra)
    return (s.live_source if f.live is True else s.all_source), " AND ".join(walk), params


def _filters(s: PageSpelling, f: PageFilters) -> tuple[list[str], list[Any]]:
    m = s.dialect.mark
    conds: list[str] = []
    params: list[Any] = []
    if f.live is False:
        conds.append("superseded_by IS NOT NULL")
    if f.pinned is not None:
        conds.append("pinned" if f.pinned else "NOT pinned")
    if f.confidence is not None:
        conds.append(f"{s.confidence} = {m}")
        params.append(f.confidence)
    if f.interface is not None:
        conds.append(f"{s.interface} = {m}")
        params.append(f.interface)
    return conds, params


def page_query(
    s: PageSpelling, agent_id: str, before: tuple[datetime, str] | None, f: PageFilters, bound: Sequence[Any]
) -> tuple[str, list[Any]]:
    """The filtered page query (``LIMIT`` placeholder last) and its params, down to ``bound`` if given."""
    source, where, params = _walk(s, agent_id, before, f)
    conds, extra = _filters(s, f)
    if bound:
        cond, bound_params = s.beyond(">=", bound[0], bound[1])
        conds.insert(0, cond)
        params.extend(bound_params)
    where = " AND ".join([where, *conds])
    query = (
        f"SELECT {s.dialect.fact_columns} FROM {source} WHERE {where} "
        f"ORDER BY created_at DESC, id DESC LIMIT {s.dialect.mark}"
    )
    return query, params + extra


def window_query(
    s: PageSpelling, agent_id: str, before: tuple[datetime, str] | None, f: PageFilters
) -> tuple[str, list[Any]]:
    """The ``(created_at, id)`` of the last fact a bounded scan examines and of the one after it.

    Two placeholders last: ``LIMIT 2 OFFSET scan - 1``.
    """
    source, where, params = _walk(s, agent_id, before, f)
    m = s.dialect.mark
    query = (
        f"SELECT created_at, id FROM {source} WHERE {where} "
        f"ORDER BY created_at DESC, id DESC LIMIT {m} OFFSET {m}"
    )
    return query, params


def read_page(
    s: PageSpelling,
    read: Reader,
    agent_id: str,
    before: tuple[datetime, str] | None,
    limit: int,
    f: PageFilters,
    scan: int | None,
) -> FactsPage:
    """One page in one read snapshot (see :meth:`graymatter.store.base.Store.facts_page`)."""
    if limit <= 0:
        return FactsPage([], None, False)
    bounded = scan is not None and f.unindexed

    def work(c: Any) -> tuple[list[Any], list[Any]]:
        edge: list[Any] = []
        if bounded and scan is not None:
            wq, wp = window_query(s, agent_id, before, f)
            edge = c.execute(wq, [*wp, 2, max(scan, 1) - 1]).fetchall()
        q, p = page_query(s, agent_id, before, f, list(edge[0]) if edge else [])
        return c.execute(q, [*p, limit + 1]).fetchall(), edge

    rows, edge = read(work)
    facts: list[Fact] = [s.dialect.decode_fact(r) for r in rows]
    if len(facts) > limit:
        last = facts[limit - 1]
        return FactsPage(facts[:limit], (last.created_at, last.id), False)
    if len(edge) == 2:
        moment = s.dialect.from_db_time(edge[0][0])
        if moment is not None:
            return FactsPage(facts, (moment, s.dialect.ident(edge[0][1])), True)
    return FactsPage(facts, None, False)
