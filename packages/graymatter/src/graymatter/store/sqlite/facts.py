"""SQLite fact writes: inserts (with full-text and vector entries), tombstones, pins, access, pruning."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

from graymatter.errors import Conflict, InvalidInput
from graymatter.models import Fact
from graymatter.store.base import Vector, Vectors
from graymatter.store.rows import CONFLICT, EMBED_DONE, aligned_vectors, embed_state
from graymatter.store.sqlite.connection import SQLiteConnections
from graymatter.store.sqlite.decay import HOUR_US, lower_marks
from graymatter.store.sqlite.inserts import (
    INSERT_FACT,
    full_rows,
    insert_keyword_only,
    insert_rows,
)
from graymatter.store.sqlite.keys import AGENT_NAME, KIND_CODES, agent_codes, bulk_keys, fact_key, fact_keys
from graymatter.store.sqlite.rows import ACCESSED_SQL, chunks, placeholders, to_micros
from graymatter.store.sqlite.vectors import bump, current_model, put_vector

_LAST = ACCESSED_SQL.format(row="")
"""A fact's last access (spelled short: the access updates below are long)."""
_AGENT = AGENT_NAME.format(row="")


def _found(c: sqlite3.Connection, ids: Sequence[str], select: str) -> Iterator[tuple[str, Any]]:
    """``(id, row)`` for each id whose ``select`` (one ``?``, the id as stored) finds a row."""
    for fact_id in ids:
        row = c.execute(select, (fact_key(fact_id),)).fetchone()
        if row is not None:
            yield fact_id, row


def _remove_vectors(c: sqlite3.Connection, rows: Sequence[tuple[int, str]]) -> None:
    """Drop the vectors of the given (rowid, agent_id) facts; the vector caches are told."""
    agents: set[str] = set()
    for rowid, agent in rows:
        if c.execute("DELETE FROM vectors WHERE fact_rowid = ?", (rowid,)).rowcount:
            agents.add(agent)
    for agent in agents:
        bump(c, f"vec_removed:{agent}")


def _insert_facts(
    c: sqlite3.Connection,
    facts: Sequence[Fact],
    aligned: Sequence[Vector | None],
    embedding_model: str | None,
) -> None:
    """Rows (one ``executemany``; full-text entries by trigger) and the usable vectors."""
    model = current_model(c)
    lower_marks(c, facts)
    if model is None:  # keyword-only store: no fact waits for a vector, none is stored
        insert_keyword_only(c, facts)
        return
    states = [
        embed_state(fact, model, vector is not None and embedding_model == model)
        for fact, vector in zip(facts, aligned, strict=True)
    ]
    _insert_full(c, facts, states)
    touched_agents: set[str] = set()
    for fact, vector, state in zip(facts, aligned, states, strict=True):
        if state == EMBED_DONE and vector is not None:
            rowid = c.execute("SELECT rowid FROM facts WHERE id = ?", (fact_key(fact.id),)).fetchone()[0]
            put_vector(c, rowid, fact, vector)
            touched_agents.add(fact.agent_id)
    for agent in touched_agents:
        bump(c, f"vec_added:{agent}")


def _insert_full(c: sqlite3.Connection, facts: Sequence[Fact], states: Sequence[int]) -> None:
    """Every fact by the full insert, with the given embedding states."""
    keys = bulk_keys([f.id for f in facts])
    codes = agent_codes(c, (f.agent_id for f in facts))
    insert_rows(c, full_rows(facts, keys, codes, states), INSERT_FACT, ())


def _unknown(c: sqlite3.Connection, facts: Sequence[Fact]) -> list[Fact]:
    """The facts whose ids are neither stored nor repeated earlier in ``facts`` (first one wins)."""
    ids = list(dict.fromkeys(f.id for f in facts))
    known: set[Any] = set()
    if c.execute("SELECT 1 FROM facts LIMIT 1").fetchone() is None:  # a restore into a new directory:
        if len(ids) == len(facts):  # an empty store knows no id, and none repeats: every fact is new
            return list(facts)
        ids = []  # nothing to look up
    for chunk in chunks(fact_keys(ids)):
        sql = f"SELECT id FROM facts WHERE id IN ({placeholders(len(chunk))})"
        known.update(row[0] for row in c.execute(sql, list(chunk)))
    fresh: list[Fact] = []
    for fact in facts:
        key = fact_key(fact.id)
        if key not in known:
            known.add(key)
            fresh.append(fact)
    return fresh


def _tombstone(c: sqlite3.Connection, ids: Sequence[str], superseded_by: str) -> list[str]:
    """Tombstone the live facts among ``ids`` (in this transaction); return the ids changed."""
    changed: list[str] = []
    index_rows: list[tuple[int, str]] = []
    live = f"SELECT rowid, {_AGENT}, kind FROM facts WHERE id = ? AND superseded_by IS NULL"
    for fact_id, row in _found(c, ids, live):
        c.execute(
            "UPDATE facts SET superseded_by = ?, embed_state = 0 WHERE rowid = ?", (superseded_by, row[0])
        )
        if row[2] == KIND_CODES["fact"]:
            index_rows.append((row[0], row[1]))
        changed.append(fact_id)
    _remove_vectors(c, index_rows)
    return changed


class SQLiteFactWrites(SQLiteConnections):
    """The fact-writing half of the SQLite store (mixed into :class:`SQLiteStore`)."""

    def add_facts(
        self, facts: Sequence[Fact], vectors: Vectors = None, embedding_model: str | None = None
    ) -> None:
        """One write: rows, full-text entries and the usable vectors; the vector caches are told."""
        aligned = aligned_vectors(facts, vectors)
        self._write(lambda c: _insert_facts(c, facts, aligned, embedding_model))

    def import_facts(self, facts: Sequence[Fact]) -> tuple[int, int]:
        """Insert facts whose ids are unknown, skip the others; return ``(added, skipped)``."""

        def work(c: sqlite3.Connection) -> tuple[int, int]:
            model = current_model(c)
            fresh = _unknown(c, facts)
            lower_marks(c, fresh)
            if model is None:
                insert_keyword_only(c, fresh)
            else:
                _insert_full(c, fresh, [embed_state(f, model, False) for f in fresh])
            return len(fresh), len(facts) - len(fresh)

        return self._write(work)

    def supersede(self, fact_ids: Sequence[str], superseded_by: str) -> list[str]:
        """Tombstone the live facts among ``fact_ids``; return the ids actually tombstoned."""
        ids = list(dict.fromkeys(fact_ids))
        return self._write(lambda c: _tombstone(c, ids, superseded_by)) if ids else []

    def replace_facts(
        self,
        fact_ids: Sequence[str],
        replacement: Fact,
        vector: Vector | None = None,
        embedding_model: str | None = None,
    ) -> list[str]:
        """Compare-and-swap in one BEGIN IMMEDIATE transaction: all targets live, or ``Conflict``."""
        ids = list(dict.fromkeys(fact_ids))
        if not ids:
            raise InvalidInput("nothing to replace")

        def work(c: sqlite3.Connection) -> list[str]:
            live = "SELECT rowid FROM facts WHERE id = ? AND superseded_by IS NULL"
            if len(list(_found(c, ids, live))) != len(ids):
                raise Conflict(CONFLICT)
            _insert_facts(c, [replacement], [vector], embedding_model)
            return _tombstone(c, ids, replacement.id)

        return self._write(work)

    def set_pinned(self, fact_ids: Sequence[str], pinned: bool, at: datetime) -> list[str]:
        """Pin or unpin live facts; return the ids changed."""
        ids = list(dict.fromkeys(fact_ids))

        def work(c: sqlite3.Connection) -> list[str]:
            changed = []
            for fact_id in ids:
                cursor = c.execute(  # an unpinned fact never visited is due an hour after its last access
                    "UPDATE facts SET pinned = ?, pinned_at = ?, decay_due_at = CASE WHEN ? "
                    f"THEN decay_due_at ELSE coalesce(decay_due_at, {_LAST} + {HOUR_US}) END "
                    "WHERE id = ? AND superseded_by IS NULL AND pinned != ?",
                    (
                        int(pinned),
                        to_micros(at) if pinned else None,
                        int(pinned),
                        fact_key(fact_id),
                        int(pinned),
                    ),
                )
                if cursor.rowcount:
                    changed.append(fact_id)
            return changed

        return self._write(work) if ids else []

    def record_access(self, fact_ids: Sequence[str], at: datetime) -> None:
        """One write: ``access_count += 1`` and ``accessed_at = at`` for the live facts given."""
        ids = list(dict.fromkeys(fact_ids))
        if not ids:
            return
        stamp = to_micros(at)

        def work(c: sqlite3.Connection) -> None:
            for chunk in chunks(fact_keys(ids)):
                c.execute(
                    f"UPDATE facts SET access_count = access_count + 1, accessed_at = max({_LAST}, ?) "
                    f"WHERE superseded_by IS NULL AND id IN ({placeholders(len(chunk))})",
                    [stamp, *chunk],
                )

        self._write(work)

    def record_accesses(self, counts: Mapping[str, int], at: datetime) -> None:
        """One write for many recalls: ``access_count += n`` per id (grouped by n), ``accessed_at = at``."""
        by_count: dict[int, list[str]] = {}
        for fact_id, n in counts.items():
            if n > 0:
                by_count.setdefault(n, []).append(fact_id)
        if not by_count:
            return
        stamp = to_micros(at)

        def work(c: sqlite3.Connection) -> None:
            for n, ids in sorted(by_count.items()):
                for chunk in chunks(fact_keys(ids)):
                    c.execute(
                        f"UPDATE facts SET access_count = access_count + ?, accessed_at = max({_LAST}, ?) "
                        f"WHERE superseded_by IS NULL AND id IN ({placeholders(len(chunk))})",
                        [n, stamp, *chunk],
                    )

        self._write(work)

    def update_weights(self, weights: dict[str, float]) -> int:
        """Set decayed weights (only ever lowered by callers); return the number of rows changed."""
        if not weights:
            return 0

        def work(c: sqlite3.Connection) -> int:
            changed = 0
            for fact_id, weight in weights.items():
                changed += c.execute(
                    "UPDATE facts SET weight = ? WHERE id = ? AND weight > ?",
                    (weight, fact_key(fact_id), weight),
                ).rowcount
            return changed

        return self._write(work)

    def delete_facts(self, fact_ids: Sequence[str]) -> list[str]:
        """Hard-delete unpinned facts (pruning is the only caller); return the ids deleted."""
        ids = list(dict.fromkeys(fact_ids))

        def work(c: sqlite3.Connection) -> list[str]:
            deleted: list[str] = []
            index_rows: list[tuple[int, str]] = []
            for fact_id, row in _found(
                c, ids, f"SELECT rowid, {_AGENT} FROM facts WHERE id = ? AND pinned = 0"
            ):
                index_rows.append((row[0], row[1]))
                c.execute("DELETE FROM facts WHERE rowid = ?", (row[0],))
                deleted.append(fact_id)
            _remove_vectors(c, index_rows)
            return deleted

        return self._write(work) if ids else []
