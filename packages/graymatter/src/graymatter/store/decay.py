"""Incremental decay bookkeeping, the same SQL on both backends: which facts are due, and their new state.

Each unpinned fact carries ``decay_due_at``, the moment its weight next needs persisting (NULL until
its first visit: such a fact is due one hour after its last access). Two partial indexes, one per case,
make "the facts due now" a range scan, so a consolidation cycle visits only them, never the whole agent.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from graymatter.models import Fact
from graymatter.store.rows import FACT_COLUMNS, Dialect

T = TypeVar("T")

DECAY_SCOPE = "NOT pinned AND kind = 'fact'"
"""The facts decay applies to (tombstones too: they fade and are pruned like the rest), spelled exactly
as the partial indexes spell it."""


def decay_indexes(facts_table: str, time_type: str) -> list[str]:
    """The migration statements: the ``decay_due_at`` column and its two partial indexes."""
    return [
        f"ALTER TABLE {facts_table} ADD COLUMN decay_due_at {time_type}",
        f"CREATE INDEX {facts_table}_decay_fresh ON {facts_table}(agent_id, accessed_at) "
        f"WHERE decay_due_at IS NULL AND {DECAY_SCOPE}",
        f"CREATE INDEX {facts_table}_decay_due ON {facts_table}(agent_id, decay_due_at) "
        f"WHERE decay_due_at IS NOT NULL AND {DECAY_SCOPE}",
    ]


def due_query(table: str, mark: str, d: Dialect | None = None) -> str:
    """The facts of an agent visited before and due again (params: agent, now, limit), due first (``d``:
    the backend's spelling of the columns, agent and kind, when not PostgreSQL's)."""
    columns, agent, scope = FACT_COLUMNS, f"agent_id = {mark}", DECAY_SCOPE
    if d is not None:
        columns, agent = d.fact_columns, d.agent_is()
        scope = DECAY_SCOPE.replace("'fact'", d.fact_kind)
    return (
        f"SELECT {columns} FROM {table} WHERE {agent} AND decay_due_at IS NOT NULL "
        f"AND {scope} AND decay_due_at <= {mark} ORDER BY decay_due_at, id LIMIT {mark}"
    )


class SharedDecay:
    """``decay_due`` and ``record_decay`` of the ``Store`` protocol (a mixin over the backend's Dialect)."""

    _dialect: Dialect

    if TYPE_CHECKING:

        def _read(self, work: Callable[[Any], T]) -> T: ...

        def _write(self, work: Callable[[Any], T]) -> T: ...

    def decay_due(self, agent_id: str, now: datetime, fresh_before: datetime, limit: int) -> list[Fact]:
        """At most ``limit`` unpinned facts (live or tombstoned) of ``agent_id`` whose decay is due:
        ``decay_due_at`` at or before ``now``, or never visited and last accessed at or before
        ``fresh_before``. Due first."""
        if limit <= 0:
            return []
        d = self._dialect
        table, m = d.table("facts"), d.mark
        due = due_query(table, m)
        fresh = (
            f"SELECT {FACT_COLUMNS} FROM {table} WHERE agent_id = {m} AND decay_due_at IS NULL "
            f"AND {DECAY_SCOPE} AND accessed_at <= {m} ORDER BY accessed_at, id LIMIT {m}"
        )

        def work(c: Any) -> list[Any]:
            rows = c.execute(due, (agent_id, d.to_db_time(now), limit)).fetchall()
            if len(rows) < limit:
                rows += c.execute(fresh, (agent_id, d.to_db_time(fresh_before), limit - len(rows))).fetchall()
            return list(rows)

        return [d.decode_fact(row) for row in self._read(work)]

    def record_decay(self, updates: Mapping[str, tuple[float, datetime]]) -> None:
        """Per fact id: lower its weight to at most the given one and set its next ``decay_due_at``."""
        if not updates:
            return
        d = self._dialect
        smaller = "min" if d.mark == "?" else "least"
        sql = (
            f"UPDATE {d.table('facts')} SET weight = {smaller}(weight, {d.mark}), decay_due_at = {d.mark} "
            f"WHERE id = {d.mark}"
        )
        rows = [(weight, d.to_db_time(due), d.key(fid)) for fid, (weight, due) in sorted(updates.items())]
        self._write(lambda c: c.cursor().executemany(sql, rows))  # a cursor: psycopg connections lack it
