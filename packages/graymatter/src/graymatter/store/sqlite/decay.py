"""SQLite's decay listing: never-visited facts found behind a per-agent creation mark, not by an index.

The facts due again (``decay_due_at`` set) are found as on every backend (``store/decay.py``). A fact never
visited has no index entry of its own (schema 7 dropped ``facts_decay_fresh``: one index insert and about
32 bytes less per new fact). Instead each agent has a creation mark in ``meta``: every fact of the agent in
decay scope created before it has been visited (``decay_due_at`` set), is pinned, or is gone. A cycle walks
``facts_listing`` from the mark up to ``fresh_before`` (at most :data:`FRESH_SCAN` entries), hands back the
idle facts and schedules the others at one hour after their last access, which is when the old index
would have found them. What can put a never-visited fact behind the mark moves it instead: an insert of an
older fact lowers the mark (``facts.lower_decay_marks``) and an unpin schedules the fact.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from graymatter.models import Fact
from graymatter.store.decay import SharedDecay, due_query
from graymatter.store.rows import NewFacts
from graymatter.store.sqlite.keys import AGENT_IS, FACT_COLUMNS, fact_id
from graymatter.store.sqlite.rows import ACCESSED_SQL, DIALECT, chunks, placeholders, to_micros

FRESH_SCAN = 10_000
"""The most listing entries one call walks past the mark (the walk resumes there next cycle)."""
HOUR_US = 3_600_000_000
MARK_KEY = "decay_mark:{}"
"""The ``meta`` key of an agent's creation mark (integer microseconds; absent: walk from the start)."""

_WINDOW = (
    f"SELECT w.c, f.decay_due_at IS NULL AND NOT f.pinned, {ACCESSED_SQL.format(row='f.')}, f.rowid FROM "
    f"(SELECT rowid AS r, created_at AS c FROM facts INDEXED BY facts_listing WHERE {AGENT_IS} "
    "AND kind = 0 AND created_at >= ? AND created_at <= ? ORDER BY created_at LIMIT ?) AS w "
    "JOIN facts AS f ON f.rowid = w.r ORDER BY w.c, f.id"
)
"""The next listing entries past the mark, each with whether it is still unvisited and in scope."""
_DUE = due_query("facts", "?", DIALECT)


def _oldest(facts: Sequence[Fact]) -> dict[str, datetime]:
    """Each agent's oldest creation moment among ``facts``."""
    if type(facts) is NewFacts:  # a bulk write: one agent, the first fact the oldest
        return {facts.agent_id: facts.created}
    if len({fact.agent_id for fact in facts}) == 1:
        return {facts[0].agent_id: min(fact.created_at for fact in facts)}
    oldest: dict[str, datetime] = {}
    for fact in facts:
        moment = oldest.get(fact.agent_id)
        if moment is None or fact.created_at < moment:
            oldest[fact.agent_id] = fact.created_at
    return oldest


def lower_marks(c: sqlite3.Connection, facts: Sequence[Fact]) -> None:
    """Move each agent's mark back to its oldest fact in ``facts`` (an import or an explicit older moment
    can insert a never-visited fact behind it). One statement per agent; a mark already older is kept."""
    if not facts:
        return
    for agent, moment in _oldest(facts).items():
        at = to_micros(moment)
        c.execute(
            "UPDATE meta SET value = ? WHERE key = ? AND CAST(value AS INTEGER) > ?",
            (str(at), MARK_KEY.format(agent), at),
        )


def _fresh(
    c: sqlite3.Connection, agent_id: str, fresh_before: int, limit: int, write: bool
) -> list[Any] | None:
    """Rows of up to ``limit`` never-visited idle facts past the agent's mark, oldest first. With ``write``
    it moves the mark and schedules the unvisited facts accessed within the hour; without, it returns
    ``None`` when either is needed (the caller then walks again in a write transaction)."""
    key = MARK_KEY.format(agent_id)
    stored = c.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    mark = int(stored[0]) if stored is not None else -(2**62)
    window = c.execute(_WINDOW, (agent_id, mark, fresh_before, FRESH_SCAN)).fetchall()
    idle = [w for w in window if w[1] and w[2] <= fresh_before][:limit]
    recent = [w[3] for w in window if w[1] and w[2] > fresh_before]
    if idle:
        new_mark = idle[0][0]  # they stay unvisited until the cycle records them: walked again next time
    elif len(window) == FRESH_SCAN:
        new_mark = window[-1][0]
    else:
        new_mark = fresh_before if window else mark  # nothing past the mark yet: it stays
    if not write and (recent or new_mark != mark):
        return None
    for chunk in chunks(recent):
        c.execute(
            f"UPDATE facts SET decay_due_at = {ACCESSED_SQL.format(row='')} + {HOUR_US} "
            f"WHERE rowid IN ({placeholders(len(chunk))})",
            list(chunk),
        )
    if new_mark != mark:
        c.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, str(new_mark)))
    rows: list[Any] = []
    for chunk in chunks([w[3] for w in idle]):
        sql = f"SELECT {FACT_COLUMNS} FROM facts WHERE rowid IN ({placeholders(len(chunk))})"
        rows.extend(c.execute(sql, list(chunk)).fetchall())
    rows.sort(key=lambda r: (r[5], fact_id(r[0])))  # created_at, id
    return rows


class SQLiteDecay(SharedDecay):
    """``decay_due`` without an index of never-visited facts; ``record_decay`` as on every backend."""

    def decay_due(self, agent_id: str, now: datetime, fresh_before: datetime, limit: int) -> list[Fact]:
        """At most ``limit`` unpinned facts (live or tombstoned) of ``agent_id`` whose decay is due:
        ``decay_due_at`` at or before ``now``, or never visited and last accessed at or before
        ``fresh_before``. Due first, then the never-visited ones in creation order. A read, and a write
        transaction only when the agent's mark moves or facts get scheduled (walked again under the lock)."""
        if limit <= 0:
            return []

        def work(c: sqlite3.Connection, write: bool) -> list[Any] | None:
            rows: list[Any] = c.execute(_DUE, (agent_id, to_micros(now), limit)).fetchall()
            if len(rows) < limit:
                more = _fresh(c, agent_id, to_micros(fresh_before), limit - len(rows), write)
                if more is None:
                    return None
                rows += more
            return rows

        found = self._read(lambda c: work(c, False))
        if found is None:
            found = self._write(lambda c: work(c, True)) or []
        return [self._dialect.decode_fact(r) for r in found]
