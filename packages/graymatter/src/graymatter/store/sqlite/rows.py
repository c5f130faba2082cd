"""SQLite row decoding (a trusted fast path) and the SQL fragments the SQLite store methods share."""

from __future__ import annotations

import functools
import json
import sqlite3
import zlib
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime, timedelta
from itertools import chain
from operator import itemgetter
from typing import Any, TypeVar, get_args

from graymatter.constants import CONFIDENCE_LEVELS
from graymatter.errors import CorruptRecord
from graymatter.models import SESSION_MAX_CHARS, Fact, Interface, Provenance
from graymatter.store.rows import Dialect
from graymatter.store.sqlite.keys import FACT_COLUMNS, KIND_CODES, KINDS, agents_in, fact_id, fact_key
from graymatter.trusted import constructor

T = TypeVar("T")

_INTERFACES = frozenset(get_args(Interface))
_PROVENANCE_CACHE: dict[str, Provenance] = {}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
AS_CREATED = 0
"""``accessed_at`` of a fact never accessed since it was written (schema 7): the moment is its
``created_at``, and the integer 0 takes no bytes in the record (8 per fact less)."""
ACCESSED_SQL = "(CASE {row}accessed_at WHEN 0 THEN {row}created_at ELSE {row}accessed_at END)"
"""A fact's last access in SQL (``{row}``: a prefix), :data:`AS_CREATED` spelled out."""
DEFAULT_LABEL = "inferred"
"""The confidence label new rows store as an empty text (schema 7: no bytes in the record, 8 less)."""
CONFIDENCE_SQL = f"(CASE {{row}}confidence WHEN '' THEN '{DEFAULT_LABEL}' ELSE {{row}}confidence END)"
"""A fact's confidence label in SQL (``{row}``: a prefix), the stored empty text spelled out."""


def stored_label(label: str) -> str:
    """How a new row stores a confidence label."""
    return "" if label == DEFAULT_LABEL else label


def stored_labels(labels: Sequence[str] | None) -> list[str] | None:
    """The stored spellings of ``labels`` (for ``IN`` filters: rows written before schema 7 spell the
    default label out)."""
    if labels is None:
        return None
    return [*labels, ""] if DEFAULT_LABEL in labels else list(labels)


def to_micros(moment: datetime) -> int:
    """Datetime -> integer microseconds since the epoch (UTC)."""
    delta = (moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)) - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def at_micros(micros: int) -> datetime:
    """Integer microseconds since the epoch -> UTC datetime."""
    return _EPOCH + timedelta(0, 0, int(micros))  # positional: a third faster than microseconds=


def from_micros(micros: int | None) -> datetime | None:
    """Like :func:`at_micros`, for a nullable column (``None`` stays ``None``)."""
    return None if micros is None else at_micros(micros)


def text_hash(text: str) -> int:
    """A fact text's signed 24-bit key for exact-text lookups (``facts_text``; equal texts, equal keys).

    Lookups still compare the text itself, so a collision only costs reading one more row: about 0.06 per
    lookup at 1M facts. Since schema 7 the key is three bytes (the low 24 bits of the CRC-32 of the UTF-8
    text, as a signed number: SQLite stores it in three bytes) and no longer a random index insert per write
    but settled in bulk; before, 64 bits of BLAKE2b."""
    return (zlib.crc32(text.encode("utf-8", "surrogatepass")) & 0xFFFFFF) - 0x800000


TEXT_HASH_SQL = "((gm_crc32(CAST({text} AS BLOB)) & 16777215) - 8388608)"
""":func:`text_hash` of a stored text in SQL (``{text}``: the column), with ``zlib.crc32`` itself as
``gm_crc32`` on the UTF-8 bytes SQLite holds: no Python frame per row, 0.3 instead of 0.5 us a key (a stored
text holds no lone surrogate, which cannot be bound, so its bytes are what ``text_hash`` encodes)."""


def placeholders(count: int) -> str:
    """``count`` question marks separated by commas."""
    return ",".join("?" * count)


def chunks(items: Sequence[T], size: int = 500) -> Iterable[Sequence[T]]:
    """``items`` in slices of at most ``size`` (SQLite limits the parameters of one statement)."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


ROWS_PER_INSERT = 100
"""Rows one insert statement carries (a multi-row ``VALUES``): 1,000 plain rows cost 2.6 instead of 3.7 us
each through ``executemany`` (docs/decisions/0011, ingest, session 7); longer lists gain nothing more."""


@functools.cache
def _multi_row(insert: str, rows: int, width: int, shared: tuple[int, ...] = ()) -> str:
    """``insert`` (one row's ``INSERT ... VALUES (?, ...)`` of ``width`` columns) for ``rows`` rows in one
    ``VALUES`` list; the ``shared`` columns (by index) bound once, as ``?1``, ``?2``, ... in every row, the
    other columns numbered after them, row by row."""
    own = [i for i in range(width) if i not in shared]
    values = []
    for k in range(rows):
        first = len(shared) + k * len(own) + 1
        slots = [
            f"?{shared.index(i) + 1}" if i in shared else f"?{first + own.index(i)}" for i in range(width)
        ]
        values.append(f"({','.join(slots)})")
    return f"{insert.partition(' VALUES ')[0]} VALUES {','.join(values)}"


def _columns(indices: Sequence[int]) -> Callable[[tuple[Any, ...]], tuple[Any, ...]]:
    """A row's values at ``indices``, always as a tuple."""
    get = itemgetter(*indices)
    return get if len(indices) > 1 else lambda row: (get(row),)


def execute_rows(
    c: sqlite3.Connection,
    insert: str,
    rows: Sequence[tuple[Any, ...]],
    shared: Sequence[tuple[int, ...]] = (),
) -> None:
    """Insert ``rows`` in order, :data:`ROWS_PER_INSERT` to a statement (within the connection's limit of
    bound parameters), the last few with one ``executemany``: the same rows and rowids as one
    ``executemany`` of them all, which costs the sqlite3 module about 1 us more per row (one statement
    bound and stepped per row). ``shared`` names sets of columns, the widest first: the first set whose
    values are the same in every row of a statement (a bulk write's agent, say) is bound once for it
    (0.5 us less per row at 7 columns)."""
    width = len(rows[0])
    per = min(ROWS_PER_INSERT, c.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) // width)
    whole = len(rows) - len(rows) % per if per > 1 else 0
    splits = [(columns, _columns(columns), _columns([i for i in range(width) if i not in columns]))
              for columns in shared if columns]  # fmt: skip
    for start in range(0, whole, per):
        chunk = rows[start : start + per]
        sql, params = _multi_row(insert, per, width), list(chain.from_iterable(chunk))
        for columns, same, own in splits:
            values = set(map(same, chunk))
            if len(values) == 1:
                sql, params = (
                    _multi_row(insert, per, width, columns),
                    [*values.pop(), *chain(*map(own, chunk))],
                )
                break
        c.execute(sql, params)
    if whole < len(rows):
        c.executemany(insert, rows[whole:])


def execute_split(
    c: sqlite3.Connection,
    insert: str,
    shared: tuple[int, ...],
    values: tuple[Any, ...],
    own_rows: Sequence[tuple[Any, ...]],
) -> None:
    """Insert rows whose ``shared`` columns (by index) hold ``values`` and whose other columns, in order,
    are ``own_rows``: the rows and rowids :func:`execute_rows` inserts of the same rows put together, without
    putting them together first (a bulk write knows its shared values)."""
    width = len(shared) + len(own_rows[0])
    per = min(ROWS_PER_INSERT, c.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) // width)
    whole = len(own_rows) - len(own_rows) % per if per > 1 else 0
    for start in range(0, whole, per):
        chunk = own_rows[start : start + per]
        c.execute(_multi_row(insert, per, width, shared), [*values, *chain.from_iterable(chunk)])
    if whole < len(own_rows):
        c.executemany(insert, [_merged(width, shared, values, own) for own in own_rows[whole:]])


def _merged(
    width: int, shared: tuple[int, ...], values: tuple[Any, ...], own: tuple[Any, ...]
) -> tuple[Any, ...]:
    """One whole row of :func:`execute_split`'s parts."""
    rest = iter(own)
    return tuple(values[shared.index(i)] if i in shared else next(rest) for i in range(width))


def _provenance(raw: str) -> Provenance:
    """A Provenance from its stored JSON text; validated once per distinct text, then cached."""
    cached = _PROVENANCE_CACHE.get(raw)
    if cached is None:
        data = json.loads(raw)
        if (
            not isinstance(data, dict)
            or not set(data) <= {"interface", "client", "token_id", "session"}
            or data.get("interface", "library") not in _INTERFACES
            or not all(isinstance(data.get(k), str | None) for k in ("client", "token_id", "session"))
            or not (data.get("session") is None or 0 < len(data["session"]) <= SESSION_MAX_CHARS)
        ):
            raise ValueError("malformed provenance")
        cached = Provenance.model_construct(**data)
        if len(_PROVENANCE_CACHE) < 4096:
            _PROVENANCE_CACHE[raw] = cached
    return cached


_construct_fact = constructor(
    Fact,
    {
        "id": "01ARZ3NDEKTSV4RRFFQ69G5FAV",
        "agent_id": "a",
        "text": "t",
        "kind": "fact",
        "equivalents": [],
        "created_at": _EPOCH,
        "accessed_at": _EPOCH,
        "access_count": 0,
        "weight": 1.0,
        "superseded_by": None,
        "pinned": False,
        "pinned_at": None,
        "confidence": "inferred",
        "provenance": Provenance.model_construct(),
    },
    accept=lambda fact: fact.live,
)
"""A fact from a complete, trusted row (the hot read path), without ``model_construct``'s per-field work."""


def decode_fact(row: Sequence[Any], agent_name: Callable[[int], str]) -> Fact:
    """Decode a trusted row (``keys.FACT_COLUMNS``) without re-validation (hot path), its agent named by
    ``agent_name`` (``keys.AgentNames``); malformed rows raise CorruptRecord."""
    try:
        label = row[12] or DEFAULT_LABEL
        if row[3] not in (0, 1) or label not in CONFIDENCE_LEVELS:
            raise ValueError("unknown kind or confidence label")
        equivalents = json.loads(row[4]) if row[4] else []
        if not isinstance(equivalents, list):
            raise ValueError("malformed equivalents column")
        return _construct_fact(
            {
                "id": fact_id(row[0]),
                "agent_id": agent_name(row[1]),
                "text": row[2],
                "created_at": (created := from_micros(row[5])),
                "accessed_at": created if row[6] == AS_CREATED else from_micros(row[6]),
                "access_count": int(row[7]),
                "weight": min(1.0, max(0.0, float(row[8]))),
                "superseded_by": row[9],
                "pinned": bool(row[10]),
                "pinned_at": from_micros(row[11]),
                "confidence": label,
                "kind": KINDS[row[3]],
                "equivalents": equivalents,
                "provenance": _provenance(row[13] or "{}"),
            }
        )
    except (ValueError, TypeError) as exc:
        raise CorruptRecord(f"fact {fact_id(row[0])} cannot be decoded: {type(exc).__name__}") from None


def _unbound(row: Sequence[Any]) -> Fact:
    raise RuntimeError("rows are decoded by a store's own dialect, which knows its agents' names")


DIALECT = Dialect(  # the spellings; each store decodes rows with a copy that knows its agents' names
    "?",
    "",
    to_micros,
    from_micros,
    _unbound,
    insertion_order="rowid",
    json_check="json_valid(state)",
    confidence=CONFIDENCE_SQL.format(row=""),
    fact_columns=FACT_COLUMNS,
    facts_agents="SELECT (SELECT value FROM meta WHERE key = 'agent_name:' || agent) "
    "FROM (SELECT DISTINCT agent FROM {facts})",
    agent_in=agents_in,
    fact_kind="0",
    alias_kind="1",
    kinds=lambda names: [KIND_CODES.get(name, name) for name in names],
    key=fact_key,
    ident=fact_id,
)
