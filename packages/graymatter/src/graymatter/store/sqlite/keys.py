"""Schema 9's compact spellings of a fact row: ids as 16 bytes, agents as integer codes, kinds as integers.

Every caller still sees what it saw before: a fact id is its ULID string, an agent its name, a kind
``fact`` or ``alias``. Only the stored form changes (docs/decisions/0011, schema 9):

* **ids**: a canonical ULID (26 Crockford base-32 characters, upper case, at most 128 bits) is stored as
  its 16 big-endian bytes, which sort exactly as the text does; any other id (an imported one) is stored
  as the text itself. 10 bytes less in the row and 10 in the id index.
* **agents**: ``facts.agent`` holds a small integer, the agent's code; ``meta`` maps both ways
  (``agent_code:<name>`` and ``agent_name:<code>``, plus ``agent_codes``, the last code given). Codes are
  given on an agent's first write and never change or go away, so a code, once read, is good for the
  store's lifetime. Statements name an agent by a subquery (:data:`AGENT_IS`): the parameter stays the
  name, and an agent without a code matches nothing.
* **kinds**: 0 for ``fact``, 1 for ``alias`` (SQLite stores both in no bytes at all: 4 and 5 before).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from graymatter.ids import ALPHABET, PAIRS, encode

KIND_CODES = {"fact": 0, "alias": 1}
KINDS = ("fact", "alias")
"""A stored kind code -> the kind."""
FACT = "0"
"""``kind = 'fact'`` of earlier schemas, in SQL."""
LIVE_SQL = "{row}kind = 0 AND {row}superseded_by IS NULL"
"""The rows the full-text index holds (live facts; ``{row}``: a prefix)."""

AGENT_IS = "agent = (SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'agent_code:' || ?)"
"""The condition "the fact's agent is the one named by the parameter" (no code: no row)."""
AGENT_NAME = "(SELECT value FROM meta WHERE key = 'agent_name:' || {row}agent)"
"""A fact row's agent name, in SQL (``{row}``: a prefix)."""
FACT_COLUMNS = (
    "id, agent, text, kind, equivalents, created_at, accessed_at, access_count, weight, superseded_by, "
    "pinned, pinned_at, confidence, provenance"
)
"""``store.rows.FACT_COLUMNS`` in schema 9 (``rows.decode_fact`` decodes the id, agent code and kind)."""


def agents_in(count: int) -> str:
    """The condition "the fact's agent is one of ``count`` named by the parameters"."""
    if count == 1:
        return AGENT_IS
    keys = ", ".join(["'agent_code:' || ?"] * count)
    return f"agent IN (SELECT CAST(value AS INTEGER) FROM meta WHERE key IN ({keys}))"


IDS_KEPT = 65_536
"""Ids remembered both ways (a recall reads and asks for the same few again and again)."""
_IDS: dict[bytes, str] = {}
_KEYS: dict[str, bytes] = {}
_TIMES: dict[bytes, str] = {}
"""The first ten characters of an id by its first six bytes (the millisecond: shared by a batch's ids)."""


def _remember(key: bytes, text: str) -> None:
    if len(_IDS) > IDS_KEPT:
        _IDS.clear()
        _KEYS.clear()
    _IDS[key] = text
    _KEYS[text] = key


_DIGITS = bytes(
    "0123456789ABCDEFGHIJKLMNOPQRSTUV"[ALPHABET.index(chr(b))].encode()[0] if chr(b) in ALPHABET else ord("!")
    for b in range(256)
)
"""Crockford base-32 characters -> the digits ``int(..., 32)`` reads, everything else -> ``!`` (which it
refuses: no sign, space or underscore of ``int``'s syntax survives)."""
_FIRST_MAX = ord("7")
"""The largest first character of a ULID that fits 128 bits."""


def fact_key(fact_id: str) -> bytes | str:
    """How a fact id is stored: a canonical ULID as its 16 bytes, any other id as it is (an id read or asked
    for lately is remembered: a recall asks for the ids it has just read)."""
    found = _KEYS.get(fact_id)
    if found is not None:
        return found
    if len(fact_id) == 26 and fact_id.isascii():
        digits = fact_id.encode().translate(_DIGITS)
        if digits[0] <= _FIRST_MAX:
            try:
                key = int(digits, 32).to_bytes(16, "big")
            except ValueError:
                return fact_id
            _remember(key, fact_id)
            return key
    return fact_id


BATCH_KEYS = 32
"""From this many ids on, :func:`fact_keys` translates them in one pass (and does not remember them)."""


def fact_keys(fact_ids: Sequence[str]) -> list[bytes | str]:
    """:func:`fact_key` of each id; a batch of ULIDs is decoded as one number (:func:`bulk_keys`)."""
    if len(fact_ids) < BATCH_KEYS:
        return [fact_key(i) for i in fact_ids]
    return [bytes(key) if isinstance(key, bytearray) else key for key in bulk_keys(fact_ids)]


def bulk_keys(fact_ids: Sequence[str]) -> list[bytearray | bytes | str]:
    """What :func:`fact_key` stores of each id, as values to bind in a bulk insert: a ULID's 16 bytes in a
    ``bytearray``, which the sqlite3 module binds as it is (it looks for an adapter of every ``bytes``
    object: 0.4 us a parameter). A batch of ULIDs (an import's) is decoded as one number: each id behind six
    zero digits, so that each takes 20 bytes of the number, its value the last 16 of them (a third less than
    one number per id); any other batch id by id."""
    if set(map(len, fact_ids)) == {26}:
        joined = _PAD + _PAD.join(fact_ids)
        digits = joined.encode("ascii", "replace").translate(_DIGITS)
        if b"!" not in digits:  # no character a ULID lacks (non-ASCII ones became "?", which maps to "!")
            number = bytearray(int(digits, 32).to_bytes(20 * len(fact_ids), "big"))
            if number[3::20].count(0) == len(fact_ids):  # no first character above 7 (over 128 bits)
                return [number[i + 4 : i + 20] for i in range(0, len(number), 20)]
    return [bytearray(key) if isinstance(key, bytes) else key for key in map(fact_key, fact_ids)]


_PAD = "000000"


def fact_id(stored: bytes | str) -> str:
    """The id a stored key stands for (the inverse of :func:`fact_key`)."""
    if type(stored) is not bytes:
        return str(stored)
    found = _IDS.get(stored)
    if found is not None:
        return found
    head = _TIMES.get(stored[:6])
    if head is None:
        n = int.from_bytes(stored[:6], "big")
        head = encode(n, 10)
        if len(_TIMES) > IDS_KEPT:
            _TIMES.clear()
        _TIMES[stored[:6]] = head
    n, p = int.from_bytes(stored[6:], "big"), PAIRS
    text = (
        head + p[n >> 70] + p[(n >> 60) & 1023] + p[(n >> 50) & 1023] + p[(n >> 40) & 1023]
        + p[(n >> 30) & 1023] + p[(n >> 20) & 1023] + p[(n >> 10) & 1023] + p[n & 1023]
    )  # fmt: skip
    _remember(stored, text)
    return text


class AgentNames:
    """One store's agent names by code, read from ``meta`` when a code is not known yet: a code never
    changes or goes away, so what was read stays true for the store's lifetime (0.85 us less per decoded
    row than naming the agent in the statement)."""

    def __init__(self, read: Callable[[Callable[[sqlite3.Connection], list[tuple[int, str]]]], Any]) -> None:
        self._read = read
        self._names: dict[int, str] = {}

    def __call__(self, code: int) -> str:
        """The name of the agent with this code; ``ValueError`` when the store gives the code to none."""
        name = self._names.get(code)
        if name is None:
            self._names = dict(self._read(_names))  # replaced whole: another thread may be reading it
            name = self._names.get(code)
            if name is None:
                raise ValueError(f"no agent has the code {code!r}")
        return name


def _names(c: sqlite3.Connection) -> list[tuple[int, str]]:
    rows = c.execute("SELECT key, value FROM meta WHERE key >= 'agent_name:' AND key < 'agent_name;'")
    return [(int(key[11:]), str(name)) for key, name in rows]


def agent_code(c: sqlite3.Connection, name: str) -> int:
    """The agent's code, given now if it has none (inside the caller's write transaction)."""
    row = c.execute("SELECT value FROM meta WHERE key = ?", (f"agent_code:{name}",)).fetchone()
    if row is not None:
        return int(row[0])
    code = int(
        c.execute(
            "INSERT INTO meta(key, value) VALUES ('agent_codes', '1') ON CONFLICT(key) DO UPDATE SET "
            "value = CAST(value AS INTEGER) + 1 RETURNING value"
        ).fetchone()[0]
    )
    c.execute(
        "INSERT INTO meta(key, value) VALUES (?, ?), (?, ?)",
        (f"agent_code:{name}", str(code), f"agent_name:{code}", name),
    )
    return code


def agent_codes(c: sqlite3.Connection, names: Iterable[str]) -> dict[str, int]:
    """:func:`agent_code` of each distinct name."""
    return {name: agent_code(c, name) for name in dict.fromkeys(names)}
