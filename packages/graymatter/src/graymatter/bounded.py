"""Bounded input: files, pipes and stdin read with a byte limit enforced while reading, never after.

``/dev/zero``, ``yes |`` or a multi-gigabyte file given where a JSON document is expected stop after
``limit + 1`` bytes with a one-line ``InvalidInput`` (exit 2 on the command line) and nothing stored.
"""

from __future__ import annotations

import sys
from typing import BinaryIO

from graymatter.errors import InvalidInput

IMPORT_MAX_BYTES = 512 * 1024 * 1024
"""The largest export bundle ``graymatter import`` reads (a JSON export of about a million facts)."""

TOKEN_FILE_MAX_BYTES = 4096
"""The largest HTTP token file read (a token is 43 characters)."""

_CHUNK = 1 << 20


def read_stream(stream: BinaryIO, limit: int, what: str) -> str:
    """UTF-8 text of ``stream``, refused as soon as it holds more than ``limit`` bytes."""
    parts: list[bytes] = []
    size = 0
    while True:
        chunk = stream.read(min(_CHUNK, limit + 1 - size))
        if not chunk:
            break
        parts.append(chunk)
        size += len(chunk)
        if size > limit:
            raise InvalidInput(f"{what} is over {limit} bytes; the limit is {limit} bytes (reading stopped)")
    try:
        return b"".join(parts).decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInput(f"{what} is not UTF-8 text") from None


def read_source(source: str, limit: int, what: str) -> str:
    """``source`` read within ``limit`` bytes: ``-`` is stdin, anything else a file path."""
    if source == "-":
        return read_stream(sys.stdin.buffer, limit, what)
    try:
        with open(source, "rb") as handle:
            return read_stream(handle, limit, what)
    except OSError as exc:
        raise InvalidInput(f"cannot read {what} {source}: {exc.strerror or exc}") from None
