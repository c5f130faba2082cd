"""SQLite fact inserts: the rows of a batch, a hundred to a statement, and their full-text entries.

Three ways to a row, one stored result (tested column by column): the full insert (any fact), the short
insert of plain new facts (the other columns at their defaults), and the short insert built straight from
the columns a bulk write made its facts of (``store.rows.NewFacts``: no model read back).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import datetime
from operator import attrgetter
from typing import Any

from graymatter.models import Fact, Provenance
from graymatter.store.rows import NewFacts
from graymatter.store.sqlite.keys import KIND_CODES, LIVE_SQL, agent_code, agent_codes, bulk_keys
from graymatter.store.sqlite.rows import (
    AS_CREATED,
    TEXT_HASH_SQL,
    execute_rows,
    execute_split,
    placeholders,
    stored_label,
    to_micros,
)

INSERT_FACT = (
    "INSERT INTO facts (id, agent, text, kind, equivalents, created_at, accessed_at, access_count, weight, "
    f"superseded_by, pinned, pinned_at, confidence, provenance, embed_state) VALUES ({placeholders(15)})"
)
"""A fact's row in schema 9 (``store.rows.FACT_COLUMNS`` order: the id as stored, the agent's code, the
kind's code, then the embedding state)."""
INSERT_PLAIN = (
    "INSERT INTO facts (id, agent, text, created_at, accessed_at, access_count, confidence, provenance) "
    f"VALUES ({placeholders(8)})"
)
"""A plain fact's row (a live fact at full weight, unpinned, without equivalents or vector: what a bulk
write makes, and most of what an import brings, accessed or not): the other columns take their defaults
(half the parameters of the full insert, a microsecond less per fact)."""
NEW_SHARED = (1, 4, 5, 6, 7)
"""The columns of :data:`INSERT_PLAIN` every row of a bulk write shares (agent, last access, access count,
label, provenance)."""
PLAIN_SHARED = (NEW_SHARED, (1, 6, 7))
"""The columns of :data:`INSERT_PLAIN` a batch's rows may share, the widest first: those of never-accessed
facts (a bulk write's, an export of them), else agent, label and provenance (facts a recall touched)."""
_INDEX_NEW = (
    "INSERT INTO facts_fts(rowid, text) SELECT rowid, text FROM facts WHERE rowid > ? AND "
    + LIVE_SQL.format(row="")
)
"""Full-text entries for the live facts inserted after a rowid (the write lock is held, so every row past
the largest rowid seen at the transaction's start is one of ours). Schema 4's triggers retire entries."""
SETTLE_ROWS = 20_000
"""How many facts may wait past the settled mark before their exact-text keys are filled in (one sorted
insert instead of a random index insert per fact; a text lookup scans at most this many rows by rowid)."""
_MARKS = "SELECT coalesce(max(rowid), 0), (SELECT value FROM meta WHERE key = 'text_settled') FROM facts"
SETTLE = (
    f"INSERT OR IGNORE INTO facts_text SELECT {TEXT_HASH_SQL.format(text='text')}, rowid FROM facts "
    "WHERE rowid > ? ORDER BY 1, 2"
)
"""The exact-text keys of the facts past the settled mark, in key order (schema 6; since schema 7 hashed here,
not stored in the row)."""

_ID, _AGENT = attrgetter("id"), attrgetter("agent_id")
_DEFAULT_PROVENANCE = tuple(Provenance.model_construct().__dict__.values())
"""Every field of the default provenance, in field order (what :func:`provenances` keys a value by)."""


def provenance_text(p: Provenance, by_value: dict[tuple[Any, ...], str]) -> str:
    """How a row stores ``p``: its JSON without default values, an empty text for the default (schema 7;
    ``{}`` before, which every reader spells as ``interface`` library), each distinct value serialised once
    (``by_value``, keyed by every field in field order, starts with the default: no serialiser built)."""
    key = tuple(p.__dict__.values())
    text = by_value.get(key)
    if text is None:
        text = p.model_dump_json(exclude_none=True, exclude_defaults=True)
        text = by_value[key] = "" if text == "{}" else text
    return text


def provenances(facts: Sequence[Fact]) -> dict[int, str]:
    """Each distinct provenance of a batch (by value: an imported bundle parses one object per fact) as
    :func:`provenance_text` stores it, by object id."""
    out: dict[int, str] = {}
    by_value: dict[tuple[Any, ...], str] = {_DEFAULT_PROVENANCE: ""}
    for fact in facts:
        p = fact.provenance
        if id(p) not in out:
            out[id(p)] = provenance_text(p, by_value)
    return out


def full_rows(
    facts: Sequence[Fact], keys: Sequence[Any], codes: dict[str, int], states: Sequence[int]
) -> list[tuple[Any, ...]]:
    """The :data:`INSERT_FACT` parameters of each fact (``keys``: the ids as stored, ``codes``: the agents');
    a moment shared by consecutive columns is converted once, and a last access equal to the creation is
    stored as :data:`AS_CREATED`."""
    stored = provenances(facts)
    last: list[Any] = [None, 0]  # the moment converted last

    def micros(moment: datetime) -> int:
        if moment is not last[0]:
            last[0], last[1] = moment, to_micros(moment)
        return int(last[1])

    rows: list[tuple[Any, ...]] = []
    append, label, kinds = rows.append, stored_label, KIND_CODES
    for f, key, state in zip(facts, keys, states, strict=True):
        created, accessed, pinned_at = f.created_at, f.accessed_at, f.pinned_at
        equivalents = json.dumps(f.equivalents, ensure_ascii=False) if f.equivalents else None
        append((
            key, codes[f.agent_id], f.text, kinds[f.kind], equivalents, micros(created),
            AS_CREATED if accessed == created else micros(accessed), f.access_count, f.weight,
            f.superseded_by, f.pinned, None if pinned_at is None else micros(pinned_at),
            label(f.confidence), stored[id(f.provenance)], state,
        ))  # fmt: skip
    return rows


def plain_rows(
    facts: Sequence[Fact], keys: Sequence[Any], codes: dict[str, int]
) -> list[tuple[Any, ...]] | None:
    """The :data:`INSERT_PLAIN` parameters of a batch of plain facts (every other column at its default:
    no equivalents, full weight, live, unpinned, no vector), else ``None``. One pass: a provenance object
    shared with the previous fact is not looked up again."""
    rows: list[tuple[Any, ...]] = []
    append, micros, label = rows.append, to_micros, stored_label
    by_value: dict[tuple[Any, ...], str] = {_DEFAULT_PROVENANCE: ""}
    last: Provenance | None = None
    stored = ""
    for f, key in zip(facts, keys, strict=True):
        if f.kind != "fact" or f.equivalents or f.weight != 1.0:
            return None
        if f.superseded_by is not None or f.pinned or f.pinned_at is not None:
            return None
        if f.provenance is not last:
            last = f.provenance
            stored = provenance_text(last, by_value)
        created = f.created_at
        accessed = AS_CREATED if f.accessed_at == created else micros(f.accessed_at)
        count, label_ = f.access_count, label(f.confidence)
        append((key, codes[f.agent_id], f.text, micros(created), accessed, count, label_, stored))
    return rows


def _full_text(c: sqlite3.Connection, last: int, count: int, settled: Any) -> None:
    """The full-text entries of the rows past ``last``; the exact-text keys settled when
    :data:`SETTLE_ROWS` facts or more are past the mark."""
    c.execute(_INDEX_NEW, (last,))
    if last + count - int(settled or 0) >= SETTLE_ROWS:
        c.execute(SETTLE, (int(settled or 0),))
        c.execute("INSERT OR REPLACE INTO meta(key, value) SELECT 'text_settled', max(rowid) FROM facts")


def insert_rows(
    c: sqlite3.Connection, rows: Sequence[tuple[Any, ...]], insert: str, shared: Sequence[tuple[int, ...]]
) -> None:
    """Insert fact rows (``rows.execute_rows`` of ``insert``, ``shared`` columns bound once where they agree)
    and their full-text entries with one statement; settle the exact-text keys when due."""
    if not rows:
        return
    last, settled = c.execute(_MARKS).fetchone()
    execute_rows(c, insert, rows, shared)
    _full_text(c, last, len(rows), settled)


def insert_keyword_only(c: sqlite3.Connection, facts: Sequence[Fact]) -> None:
    """Rows of a store without vectors (every fact's embedding state is none): a bulk write's facts from
    their columns, other plain new facts by the short insert, any other batch by the full one."""
    if type(facts) is NewFacts:
        insert_new(c, facts)
        return
    keys = bulk_keys(list(map(_ID, facts)))
    codes = agent_codes(c, map(_AGENT, facts))
    plain = plain_rows(facts, keys, codes)
    if plain is not None:
        insert_rows(c, plain, INSERT_PLAIN, PLAIN_SHARED)
    else:
        insert_rows(c, full_rows(facts, keys, codes, [0] * len(facts)), INSERT_FACT, ())


def insert_new(c: sqlite3.Connection, facts: NewFacts) -> None:
    """A bulk write's plain new facts (``store.rows.NewFacts``), their rows made of the columns the facts
    were made of: what :func:`plain_rows` makes of the models, without reading them back."""
    if not facts:
        return
    first = to_micros(facts.created)
    shared = (
        agent_code(c, facts.agent_id),
        AS_CREATED,
        0,
        stored_label(facts.confidence),
        provenance_text(facts.provenance, {_DEFAULT_PROVENANCE: ""}),
    )
    count, start = len(facts), facts.first_id
    keys = [bytearray(key.to_bytes(16, "big")) for key in range(start, start + count)]  # keys.bulk_keys
    own = list(zip(keys, facts.texts, range(first, first + count), strict=True))
    last, settled = c.execute(_MARKS).fetchone()
    execute_split(c, INSERT_PLAIN, NEW_SHARED, shared, own)
    _full_text(c, last, len(own), settled)
