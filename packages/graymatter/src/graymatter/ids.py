"""ULID identifiers: 48-bit millisecond timestamp + 80 random bits, Crockford base32, 26 characters.

Identifiers made by one process are strictly increasing (the random part is incremented within the same
millisecond), so ordering by id within a process matches creation order.
"""

from __future__ import annotations

import os
import re
import threading
import time

ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
"""Crockford base-32 digits, by value."""
ULID_PATTERN = re.compile(r"^[0-9A-HJKMNP-TV-Z]{26}$")

_lock = threading.Lock()
_last_ms = -1
_last_rand = 0


def encode(value: int, length: int) -> str:
    """``value`` as ``length`` Crockford base-32 digits (the low ``5 * length`` bits)."""
    chars = []
    for _ in range(length):
        chars.append(ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def new_ulid(now_ms: int | None = None) -> str:
    """Return a new ULID string, monotonic within this process."""
    global _last_ms, _last_rand
    ms = int(time.time() * 1000) if now_ms is None else now_ms
    with _lock:
        if ms <= _last_ms:
            ms = _last_ms
            rand = (_last_rand + 1) & ((1 << 80) - 1)
        else:
            rand = int.from_bytes(os.urandom(10), "big")
        _last_ms, _last_rand = ms, rand
    return encode(ms, 10) + encode(rand, 16)


PAIRS = tuple(a + b for a in ALPHABET for b in ALPHABET)
"""The two-character encoding of every 10-bit value (index = value)."""


def new_ulids(count: int) -> list[str]:
    """``count`` new ULIDs in increasing order, as ``count`` calls of :func:`new_ulid` in a row would give
    within one millisecond (one clock reading, consecutive random parts), encoded in bulk."""
    return new_ulid_run(count)[1]


def new_ulid_run(count: int) -> tuple[int, list[str]]:
    """:func:`new_ulids`, and the 128-bit value of the first: the others are the values that follow it, one
    by one (one millisecond, the random part counting up)."""
    global _last_ms, _last_rand
    if count <= 0:
        return 0, []
    ms = int(time.time() * 1000)
    with _lock:
        if ms <= _last_ms:
            ms, first = _last_ms, _last_rand + 1
        else:
            first = int.from_bytes(os.urandom(10), "big")
        if first + count > 1 << 80:  # the random part would wrap: move on to the next millisecond
            ms, first = ms + 1, 0
        _last_ms, _last_rand = ms, first + count - 1
    head_ms, pairs = encode(ms, 10), PAIRS
    out: list[str] = []
    rand, end = first, first + count
    while rand < end:  # a block of ids that differ in their last two characters only (1,024 at most)
        stop = min(end, (rand | 1023) + 1)
        head = head_ms + encode(rand >> 20, 12) + pairs[(rand >> 10) & 1023]
        out.extend(map(head.__add__, pairs[rand & 1023 : ((stop - 1) & 1023) + 1]))
        rand = stop
    return ms << 80 | first, out


def is_ulid(value: str) -> bool:
    """True when ``value`` is a syntactically valid ULID."""
    return bool(ULID_PATTERN.match(value))
