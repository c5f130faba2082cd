"""Row <-> model codecs and the SQL spelling (placeholders, tables, timestamps) both backends share."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from graymatter.errors import CorruptRecord
from graymatter.models import Checkpoint, CheckpointJSON, Fact, Link, Provenance
from graymatter.store.base import Vector

FACT_COLUMNS = (
    "id, agent_id, text, kind, equivalents, created_at, accessed_at, access_count, weight, "
    "superseded_by, pinned, pinned_at, confidence, provenance"
)
CHECKPOINT_COLUMNS = "id, agent_id, created_at, message_count, state, messages, metadata, provenance"
CHECKPOINT_INSERT_COLUMNS = "id, agent_id, created_at, state, messages, message_count, metadata, provenance"
LINK_COLUMNS = "id, agent_id, source, target, relation, created_at, provenance"
COMPACT = (",", ":")
"""JSON separators of stored checkpoint texts (compact: the MCP face sends a stored state on as it is)."""
EMBED_NONE, EMBED_PENDING, EMBED_DONE = 0, 1, 2
CONFLICT = "the fact was revised or forgotten by another writer meanwhile; nothing was changed"
"""The message of ``Conflict`` when a compare-and-swap replacement finds a target already retired."""


class NewFacts(list[Fact]):
    """The facts of one bulk write as the engine made them (``MemoryCore._new_facts``), with the columns it
    made them of: plain new facts (no equivalents, never accessed, full weight, live, unpinned) of one
    agent, label and provenance, whose ids and texts are ``ids`` and ``texts`` in order, the ids consecutive
    ULIDs from the 128-bit value ``first_id`` on (``ids.new_ulid_run``), the first created at ``created``
    and each next one a microsecond later (``accessed_at`` equal to ``created_at``). A store may build its
    rows from these columns instead of reading every model back: the models hold exactly these values. Any
    other use of the list is a list of those facts."""

    __slots__ = ("agent_id", "confidence", "created", "first_id", "ids", "provenance", "texts")

    agent_id: str
    confidence: str
    created: datetime
    first_id: int
    ids: Sequence[str]
    provenance: Provenance
    texts: Sequence[str]


@dataclass(frozen=True, slots=True)
class Dialect:
    """How one backend spells a placeholder, a table name and a timestamp."""

    mark: str
    """The parameter placeholder: ``?`` (sqlite3) or ``%s`` (psycopg)."""
    prefix: str
    """Prefix of the table names (``gm_`` on PostgreSQL, where the schema is shared)."""
    to_db_time: Callable[[datetime], Any]
    from_db_time: Callable[[Any], datetime | None]
    decode_fact: Callable[[Sequence[Any]], Fact]
    """A fact from a :data:`FACT_COLUMNS` row."""
    insertion_order: str
    """The column that orders facts as they were inserted."""
    json_check: str | None = None
    """SQL that is true when the ``state`` column holds well-formed JSON (``None``: checked in Python)."""
    confidence: str = "confidence"
    """SQL for a fact's confidence label (SQLite stores its default label as an empty text)."""
    fact_columns: str = FACT_COLUMNS
    """The select list of a :data:`FACT_COLUMNS` row (SQLite names a row's agent from its code)."""
    facts_agents: str = "SELECT agent_id FROM {facts}"
    """A select of the agents that have facts (``{facts}``: the table)."""
    agent_in: Callable[[int], str] | None = None
    """The condition "a fact's agent is one of ``n`` named by parameters" where it is not ``agent_id IN``."""
    fact_kind: str = "'fact'"
    """The stored kind of a fact, in SQL."""
    alias_kind: str = "'alias'"
    """The stored kind of an alias, in SQL."""
    kinds: Callable[[Sequence[str]], list[Any]] = list
    """The stored kinds of the named ones."""
    key: Callable[[str], Any] = str
    """A fact id as stored (SQLite keeps a ULID in 16 bytes)."""
    ident: Callable[[Any], str] = str
    """The fact id a stored one stands for."""

    def table(self, name: str) -> str:
        """The backend's name of a table."""
        return self.prefix + name

    def marks(self, count: int) -> str:
        """``count`` placeholders separated by commas."""
        return ",".join([self.mark] * count)

    def any_of(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        """A condition ``column`` is one of ``values``, and its parameters."""
        if self.mark == "?":
            return f"{column} IN ({self.marks(len(values))})", list(values)
        return f"{column} = ANY(%s)", [list(values)]

    def agent_is(self) -> str:
        """The condition "a fact's agent is the one named by the parameter"."""
        return f"agent_id = {self.mark}" if self.agent_in is None else self.agent_in(1)

    def agents(self, names: Sequence[str]) -> tuple[str, list[Any]]:
        """The condition "a fact's agent is one of ``names``", and its parameters."""
        if self.agent_in is None:
            return self.any_of("agent_id", names)
        return self.agent_in(len(names)), list(names)

    def restrict(self, column: str, values: Sequence[Any] | None, params: list[Any]) -> str:
        """`` AND column`` is one of ``values`` (parameters appended to ``params``); nothing for ``None``."""
        if values is None:
            return ""
        condition, extra = self.any_of(column, values)
        params.extend(extra)
        return f" AND {condition}"


def aligned_vectors(facts: Sequence[Fact], vectors: Sequence[Vector | None] | None) -> list[Vector | None]:
    """One optional vector per fact (all ``None`` when no vectors are given)."""
    aligned: list[Vector | None] = list(vectors) if vectors is not None else [None] * len(facts)
    if len(aligned) != len(facts):
        raise ValueError("vectors must align with facts")
    return aligned


def searchable_terms(
    terms: Sequence[str], agent_ids: Sequence[str], limit: int, confidences: Sequence[str] | None
) -> list[str]:
    """The non-blank search terms, or none when the search cannot return anything."""
    if not agent_ids or limit <= 0 or confidences == []:
        return []
    return [t for t in terms if t.strip()]


def embed_state(fact: Fact, model: str | None, usable_vector: bool) -> int:
    """The embedding state a new fact is stored with (done, pending re-embedding, or none)."""
    embeddable = fact.kind == "fact" and fact.superseded_by is None and model is not None
    if embeddable and usable_vector:
        return EMBED_DONE
    return EMBED_PENDING if embeddable else EMBED_NONE


def fact_values(
    fact: Fact, to_db_time: Callable[[datetime], Any], cache: dict[int, str] | None = None
) -> tuple[Any, ...]:
    """The fact's values in :data:`FACT_COLUMNS` order (``cache``: provenance JSON by object, for a batch
    whose facts share one provenance; it must not outlive the batch)."""
    provenance = None if cache is None else cache.get(id(fact.provenance))
    if provenance is None:
        provenance = fact.provenance.model_dump_json(exclude_none=True)
        if cache is not None:
            cache[id(fact.provenance)] = provenance
    return (
        fact.id,
        fact.agent_id,
        fact.text,
        fact.kind,
        json.dumps(fact.equivalents, ensure_ascii=False) if fact.equivalents else None,
        to_db_time(fact.created_at),
        to_db_time(fact.accessed_at),
        fact.access_count,
        fact.weight,
        fact.superseded_by,
        fact.pinned,
        to_db_time(fact.pinned_at) if fact.pinned_at else None,
        fact.confidence,
        provenance,
    )


def checkpoint_values(cp: Checkpoint, to_db_time: Callable[[datetime], Any]) -> tuple[Any, ...]:
    """The checkpoint's values in ``CHECKPOINT_INSERT_COLUMNS`` order."""
    return (
        cp.id,
        cp.agent_id,
        to_db_time(cp.created_at),
        json.dumps(cp.state, ensure_ascii=False, separators=COMPACT),
        json.dumps(cp.messages, ensure_ascii=False, separators=COMPACT) if cp.messages is not None else None,
        cp.message_count,
        json.dumps(cp.metadata, ensure_ascii=False),
        cp.provenance.model_dump_json(exclude_none=True),
    )


def link_values(link: Link, to_db_time: Callable[[datetime], Any]) -> tuple[Any, ...]:
    """The link's values in :data:`LINK_COLUMNS` order."""
    head = (link.id, link.agent_id, link.source, link.target, link.relation)
    return (*head, to_db_time(link.created_at), link.provenance.model_dump_json(exclude_none=True))


def decode_checkpoint(row: Sequence[Any], from_db_time: Callable[[Any], datetime | None]) -> Checkpoint:
    """A checkpoint from a :data:`CHECKPOINT_COLUMNS` row; a malformed row raises CorruptRecord."""
    try:
        state = json.loads(row[4])
        messages = json.loads(row[5]) if row[5] is not None else None
        return Checkpoint(
            id=row[0],
            agent_id=row[1],
            created_at=from_db_time(row[2]),
            message_count=row[3],
            state=state,
            messages=messages,
            metadata=json.loads(row[6] or "{}"),
            provenance=Provenance.model_validate_json(row[7] or "{}"),
        )
    except (ValueError, TypeError) as exc:
        raise CorruptRecord(
            f"checkpoint {row[0]} of agent {row[1]!r} cannot be decoded ({type(exc).__name__})"
        ) from None


def decode_checkpoint_json(
    row: Sequence[Any], from_db_time: Callable[[Any], datetime | None]
) -> CheckpointJSON:
    """A checkpoint with its state as text, from ``id, agent_id, created_at, message_count, state, valid``
    (``valid``: the dialect's JSON check, ``None`` when it has none); a malformed row raises CorruptRecord."""
    try:
        state, valid = row[4], row[5]
        if not isinstance(state, str) or not state.startswith("{"):
            raise ValueError("the state is no JSON object")
        if valid is None and not isinstance(json.loads(state), dict):
            raise ValueError("the state is no JSON object")
        if valid is not None and not valid:
            raise ValueError("the state is no well-formed JSON")
        created = from_db_time(row[2])
        return CheckpointJSON(
            id=row[0], agent_id=row[1], created_at=created, message_count=row[3], state_json=state
        )
    except (ValueError, TypeError) as exc:
        raise CorruptRecord(
            f"checkpoint {row[0]} of agent {row[1]!r} cannot be decoded ({type(exc).__name__})"
        ) from None


def decode_link(row: Sequence[Any], from_db_time: Callable[[Any], datetime | None]) -> Link:
    """A link from a :data:`LINK_COLUMNS` row; a malformed row raises CorruptRecord."""
    try:
        return Link(
            id=row[0],
            agent_id=row[1],
            source=row[2],
            target=row[3],
            relation=row[4],
            created_at=from_db_time(row[5]),
            provenance=Provenance.model_validate_json(row[6] or "{}"),
        )
    except (ValueError, TypeError) as exc:
        raise CorruptRecord(f"link {row[0]} cannot be decoded: {type(exc).__name__}") from None
