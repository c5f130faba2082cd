"""Checkpoints, links and the agent list: the same SQL on both backends, spelled by their ``Dialect``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from graymatter.models import Checkpoint, CheckpointJSON, Link
from graymatter.store.rows import (
    CHECKPOINT_COLUMNS,
    CHECKPOINT_INSERT_COLUMNS,
    LINK_COLUMNS,
    Dialect,
    checkpoint_values,
    decode_checkpoint,
    decode_checkpoint_json,
    decode_link,
    link_values,
)

T = TypeVar("T")


class SharedRecords:
    """Store methods whose SQL is the same on every backend (mixed into each backend's store class)."""

    _dialect: Dialect

    if TYPE_CHECKING:

        def _read(self, work: Callable[[Any], T]) -> T: ...

        def _write(self, work: Callable[[Any], T]) -> T: ...

    # -- checkpoints -------------------------------------------------------------------------------
    def _checkpoint_insert(self) -> str:
        d = self._dialect
        return (
            f"INSERT INTO {d.table('checkpoints')} ({CHECKPOINT_INSERT_COLUMNS}) VALUES ({d.marks(8)})"
            " ON CONFLICT (id) DO NOTHING"
        )

    def _checkpoints(self, where: str, params: list[Any], limit: int | None) -> list[Checkpoint]:
        d = self._dialect
        query = f"SELECT {CHECKPOINT_COLUMNS} FROM {d.table('checkpoints')}{where}"
        query += " ORDER BY created_at DESC, id DESC"
        if limit is not None:
            query += f" LIMIT {d.mark}"
            params = [*params, limit]
        rows = self._read(lambda c: c.execute(query, params).fetchall())
        return [decode_checkpoint(r, d.from_db_time) for r in rows]

    def save_checkpoint(self, checkpoint: Checkpoint) -> None:
        """Insert a checkpoint; ids are never reused."""
        d = self._dialect
        params = checkpoint_values(checkpoint, d.to_db_time)
        query = f"INSERT INTO {d.table('checkpoints')} ({CHECKPOINT_INSERT_COLUMNS}) VALUES ({d.marks(8)})"
        self._write(lambda c: c.execute(query, params))

    def _insert_new(self, query: str, rows: list[tuple[Any, ...]]) -> tuple[int, int]:
        """Run an ``ON CONFLICT DO NOTHING`` insert per row, in one write; return ``(added, skipped)``."""

        def work(c: Any) -> tuple[int, int]:
            added = sum(int(c.execute(query, row).rowcount) for row in rows)
            return added, len(rows) - added

        return self._write(work) if rows else (0, 0)

    def import_checkpoints(self, checkpoints: Sequence[Checkpoint]) -> tuple[int, int]:
        """Insert unknown checkpoints, skip known ids; return ``(added, skipped)``."""
        to_db = self._dialect.to_db_time
        return self._insert_new(
            self._checkpoint_insert(), [checkpoint_values(cp, to_db) for cp in checkpoints]
        )

    def latest_checkpoint(self, agent_id: str) -> Checkpoint | None:
        """The newest checkpoint of the agent (``created_at`` then id), or ``None``."""
        found = self._checkpoints(f" WHERE agent_id = {self._dialect.mark}", [agent_id], 1)
        return found[0] if found else None

    def latest_checkpoint_json(self, agent_id: str) -> CheckpointJSON | None:
        """The newest checkpoint of the agent with its state as the stored JSON text, or ``None``."""
        d = self._dialect
        query = (
            f"SELECT id, agent_id, created_at, message_count, state, {d.json_check or 'NULL'}"
            f" FROM {d.table('checkpoints')} WHERE agent_id = {d.mark}"
            f" ORDER BY created_at DESC, id DESC LIMIT 1"
        )
        row = self._read(lambda c: c.execute(query, [agent_id]).fetchone())
        return None if row is None else decode_checkpoint_json(row, d.from_db_time)

    def get_checkpoint(self, checkpoint_id: str) -> Checkpoint | None:
        """The checkpoint with this id, or ``None``."""
        found = self._checkpoints(f" WHERE id = {self._dialect.mark}", [checkpoint_id], None)
        return found[0] if found else None

    def list_checkpoints(self, agent_id: str | None = None, limit: int | None = None) -> list[Checkpoint]:
        """Checkpoints, newest first."""
        if agent_id is None:
            return self._checkpoints("", [], limit)
        return self._checkpoints(f" WHERE agent_id = {self._dialect.mark}", [agent_id], limit)

    # -- links -------------------------------------------------------------------------------------
    def _link_insert(self) -> str:
        d = self._dialect
        return f"INSERT INTO {d.table('links')} ({LINK_COLUMNS}) VALUES ({d.marks(7)}) ON CONFLICT DO NOTHING"

    def add_link(self, link: Link) -> Link:
        """Insert a link, or return the existing one with the same (agent, source, target, relation)."""
        d = self._dialect
        insert = self._link_insert()
        select = (
            f"SELECT {LINK_COLUMNS} FROM {d.table('links')} WHERE agent_id = {d.mark} AND source = {d.mark}"
            f" AND target = {d.mark} AND relation = {d.mark}"
        )

        def work(c: Any) -> Link:
            c.execute(insert, link_values(link, d.to_db_time))
            row = c.execute(select, (link.agent_id, link.source, link.target, link.relation)).fetchone()
            return decode_link(row, d.from_db_time)

        return self._write(work)

    def import_links(self, links: Sequence[Link]) -> tuple[int, int]:
        """Insert unknown links, skip known ones; return ``(added, skipped)``."""
        to_db = self._dialect.to_db_time
        return self._insert_new(self._link_insert(), [link_values(link, to_db) for link in links])

    def links(self, agent_ids: Sequence[str] | None = None) -> list[Link]:
        """Links of the given namespaces (all when ``None``), oldest first."""
        d = self._dialect
        params: list[Any] = []
        query = f"SELECT {LINK_COLUMNS} FROM {d.table('links')}"
        if agent_ids is not None:
            if not agent_ids:
                return []
            condition, params = d.any_of("agent_id", agent_ids)
            query += f" WHERE {condition}"
        query += " ORDER BY created_at, id"
        rows = self._read(lambda c: c.execute(query, params).fetchall())
        return [decode_link(r, d.from_db_time) for r in rows]

    # -- namespaces --------------------------------------------------------------------------------
    def agents(self) -> list[str]:
        """Every agent id that has facts, checkpoints or links, sorted."""
        d = self._dialect
        query = (
            f"{d.facts_agents.format(facts=d.table('facts'))} UNION SELECT agent_id FROM "
            f"{d.table('checkpoints')} UNION SELECT agent_id FROM {d.table('links')} ORDER BY 1"
        )
        rows = self._read(lambda c: c.execute(query).fetchall())
        return [r[0] for r in rows]

    def _record_counts(self, c: Any, agent_id: str) -> tuple[int, int]:
        """``(checkpoints, links)`` of one namespace, on an open connection."""
        d = self._dialect
        checkpoints = c.execute(
            f"SELECT count(*) FROM {d.table('checkpoints')} WHERE agent_id = {d.mark}", (agent_id,)
        ).fetchone()[0]
        links = c.execute(
            f"SELECT count(*) FROM {d.table('links')} WHERE agent_id = {d.mark}", (agent_id,)
        ).fetchone()[0]
        return int(checkpoints), int(links)
