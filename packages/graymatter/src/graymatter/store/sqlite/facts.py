"""SQLite fact writes: inserts (with full-text and vector entries), tombstones, pins, access, pruning."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

from graymatter.errors import Conflict, InvalidInput
from graymatter.models import Fact, Provenance
from graymatter.store.base import Vector, Vectors
from graymatter.store.rows import CONFLICT, EMBED_DONE, EMBED_NONE, aligned_vectors, embed_state, fact_values
from graymatter.store.sqlite.connection import SQLiteConnections
from graymatter.store.sqlite.decay import HOUR_US, lower_marks
from graymatter.store.sqlite.keys import AGENT_NAME, KIND_CODES, LIVE_SQL, agent_codes, fact_key, fact_keys
from graymatter.store.sqlite.rows import (
    ACCESSED_SQL,
    AS_CREATED,
    TEXT_HASH_SQL,
    chunks,
    execute_rows,
    placeholders,
    stored_label,
    to_micros,
)
from graymatter.store.sqlite.vectors import bump, current_model, put_vector

_INSERT_FACT = (
    "INSERT INTO facts (id, agent, text, kind, equivalents, created_at, accessed_at, access_count, weight, "
    f"superseded_by, pinned, pinned_at, confidence, provenance, embed_state) VALUES ({placeholders(15)})"
)
"""A fact's row in schema 9 (``store.rows.FACT_COLUMNS`` order: the id as stored, the agent's code, the
kind's code)."""
_INDEX_NEW = (
    "INSERT INTO facts_fts(rowid, text) SELECT rowid, text FROM facts WHERE rowid > ? AND "
    + LIVE_SQL.format(row="")
)
"""Full-text entries for the live facts inserted after a rowid (the write lock is held, so every row past
the largest rowid seen at the transaction's start is one of ours). Schema 4's triggers retire entries."""
_INSERT_PLAIN = (
    "INSERT INTO facts (id, agent, text, created_at, accessed_at, confidence, provenance) "
    f"VALUES ({placeholders(7)})"
)
"""A plain new fact's row: the other columns take their defaults (half the parameters of the full insert,
a microsecond less per fact)."""
_PLAIN_SHARED = (1, 4, 5, 6)
"""The columns of :data:`_INSERT_PLAIN` a bulk write's rows share (agent, last access, label, provenance)."""
SETTLE_ROWS = 20_000
"""How many facts may wait past the settled mark before their exact-text keys are filled in (one sorted
insert instead of a random index insert per fact; a text lookup scans at most this many rows by rowid)."""
_MARKS = "SELECT coalesce(max(rowid), 0), (SELECT value FROM meta WHERE key = 'text_settled') FROM facts"
_SETTLE = (
    f"INSERT OR IGNORE INTO facts_text SELECT {TEXT_HASH_SQL.format(text='text')}, rowid FROM facts "
    "WHERE rowid > ? ORDER BY 1, 2"
)
"""The exact-text keys of the facts past the settled mark, in key order (schema 6; since schema 7 hashed here,
not stored in the row)."""
_LAST = ACCESSED_SQL.format(row="")
"""A fact's last access (spelled short: the access updates below are long)."""
_AGENT = AGENT_NAME.format(row="")


_DEFAULT_PROVENANCE = tuple(Provenance.model_construct().__dict__.values())
"""Every field of the default provenance, in field order (what :func:`_provenances` keys a value by)."""


def _provenance_text(p: Provenance, by_value: dict[tuple[Any, ...], str]) -> str:
    """How a row stores ``p``: its JSON without default values, an empty text for the default (schema 7;
    ``{}`` before, which every reader spells as ``interface`` library), each distinct value serialised once
    (``by_value``, keyed by every field in field order, starts with the default: no serialiser built)."""
    key = tuple(p.__dict__.values())
    text = by_value.get(key)
    if text is None:
        text = p.model_dump_json(exclude_none=True, exclude_defaults=True)
        text = by_value[key] = "" if text == "{}" else text
    return text


def _provenances(facts: Sequence[Fact]) -> dict[int, str]:
    """Each distinct provenance of a batch (by value: an imported bundle parses one object per fact) as
    :func:`_provenance_text` stores it, by object id."""
    out: dict[int, str] = {}
    by_value: dict[tuple[Any, ...], str] = {_DEFAULT_PROVENANCE: ""}
    for fact in facts:
        p = fact.provenance
        if id(p) not in out:
            out[id(p)] = _provenance_text(p, by_value)
    return out


def _rows(c: sqlite3.Connection, facts: Sequence[Fact], states: Sequence[int]) -> list[tuple[Any, ...]]:
    """The insert parameters of each fact (:data:`_INSERT_FACT`); a moment shared by consecutive columns
    is converted once, and a last access equal to the creation is stored as :data:`AS_CREATED`."""
    provenances = _provenances(facts)
    codes = agent_codes(c, (fact.agent_id for fact in facts))
    keys = fact_keys([fact.id for fact in facts])
    last: list[Any] = [None, 0]  # the moment converted last (a new fact's created_at is its accessed_at)

    def micros(moment: datetime) -> int:
        if moment is not last[0]:
            last[0], last[1] = moment, to_micros(moment)
        return int(last[1])

    rows = []
    for fact, key, state in zip(facts, keys, states, strict=True):
        values = fact_values(fact, micros, provenances)
        accessed = AS_CREATED if fact.accessed_at == fact.created_at else values[6]
        head = (key, codes[fact.agent_id], values[2], KIND_CODES[fact.kind], *values[4:6], accessed)
        rows.append((*head, *values[7:12], stored_label(fact.confidence), values[13], state))
    return rows


def _plain_rows(c: sqlite3.Connection, facts: Sequence[Fact]) -> list[tuple[Any, ...]] | None:
    """The :data:`_INSERT_PLAIN` parameters of a batch of plain new facts (every other column at its
    default: no equivalents, never accessed, full weight, live, unpinned, no vector), else ``None``. One
    pass: a provenance object shared with the previous fact (a bulk write's) is not looked up again."""
    rows: list[tuple[Any, ...]] = []
    codes = agent_codes(c, (f.agent_id for f in facts))
    keys = iter(fact_keys([f.id for f in facts]))
    append, micros, label = rows.append, to_micros, stored_label
    by_value: dict[tuple[Any, ...], str] = {_DEFAULT_PROVENANCE: ""}
    last: Provenance | None = None
    stored = ""
    for f in facts:
        if f.kind != "fact" or f.equivalents or f.access_count or f.weight != 1.0:
            return None
        if f.superseded_by is not None or f.pinned or f.pinned_at is not None:
            return None
        if f.provenance is not last:
            last = f.provenance
            stored = _provenance_text(last, by_value)
        created = f.created_at
        accessed = AS_CREATED if f.accessed_at == created else micros(f.accessed_at)
        append(
            (next(keys), codes[f.agent_id], f.text, micros(created), accessed, label(f.confidence), stored)
        )
    return rows


def _insert_rows(
    c: sqlite3.Connection,
    rows: Sequence[tuple[Any, ...]],
    insert: str = _INSERT_FACT,
    shared: tuple[int, ...] = (),
) -> None:
    """Insert fact rows (``rows.execute_rows`` of ``insert``, ``shared`` columns bound once where they agree)
    and their full-text entries with one statement; settle the exact-text keys when :data:`SETTLE_ROWS`
    facts or more are past the mark."""
    if not rows:
        return
    last, settled = c.execute(_MARKS).fetchone()
    execute_rows(c, insert, rows, shared)
    c.execute(_INDEX_NEW, (last,))
    if last + len(rows) - int(settled or 0) >= SETTLE_ROWS:
        c.execute(_SETTLE, (int(settled or 0),))
        c.execute("INSERT OR REPLACE INTO meta(key, value) SELECT 'text_settled', max(rowid) FROM facts")


def _insert_keyword_only(c: sqlite3.Connection, facts: Sequence[Fact]) -> None:
    """Rows of a store without vectors (every fact's embedding state is none): plain new facts take the
    short insert, any other batch the full one."""
    plain = _plain_rows(c, facts)
    if plain is not None:
        _insert_rows(c, plain, _INSERT_PLAIN, _PLAIN_SHARED)
    else:
        _insert_rows(c, _rows(c, facts, [EMBED_NONE] * len(facts)))


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
        _insert_keyword_only(c, facts)
        return
    states = [
        embed_state(fact, model, vector is not None and embedding_model == model)
        for fact, vector in zip(facts, aligned, strict=True)
    ]
    _insert_rows(c, _rows(c, facts, states))
    touched_agents: set[str] = set()
    for fact, vector, state in zip(facts, aligned, states, strict=True):
        if state == EMBED_DONE and vector is not None:
            rowid = c.execute("SELECT rowid FROM facts WHERE id = ?", (fact_key(fact.id),)).fetchone()[0]
            put_vector(c, rowid, fact, vector)
            touched_agents.add(fact.agent_id)
    for agent in touched_agents:
        bump(c, f"vec_added:{agent}")


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
                _insert_keyword_only(c, fresh)
            else:
                _insert_rows(c, _rows(c, fresh, [embed_state(f, model, False) for f in fresh]))
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
