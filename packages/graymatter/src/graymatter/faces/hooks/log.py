"""The hook log: one JSON line per hook run in ``<store>/hooks.log`` (0600), bounded by rotation.

A line says when, which client and event, the outcome, how much was injected (characters and estimated
tokens), how long the hook took (``ms``) and the CPU its process had used (``cpu_ms``; ``"served": "warm"``
when a child of the warm server ran it); a failure adds the error's class and code, never the payload, a
prompt or a fact. The log is written only where the store directory already exists.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

LOG_FILENAME: Final = "hooks.log"
MAX_LOG_BYTES: Final = 512 * 1024
"""When the log reaches this size it becomes ``hooks.log.1`` (replacing the older one)."""

MAX_LINE_BYTES: Final = 4096


def log_path(store_dir: Path) -> Path:
    """Where a store's hook log lives."""
    return store_dir / LOG_FILENAME


def write_line(store_dir: Path, record: dict[str, Any]) -> bool:
    """Append one record; return False (and write nothing) when the store directory does not exist."""
    if not store_dir.is_dir():
        return False
    path = log_path(store_dir)
    stamp = datetime.now(UTC).isoformat(timespec="milliseconds")
    line = json.dumps({"at": stamp, **record}, default=str)
    if len(line) >= MAX_LINE_BYTES:  # never cut a line in half: keep what identifies the run
        kept = {k: record.get(k) for k in ("client", "event", "outcome", "error", "code")}
        line = json.dumps({"at": stamp, **kept, "truncated": True}, default=str)
    data = (line + "\n").encode("utf-8", "replace")
    with contextlib.suppress(OSError):
        if path.stat().st_size >= MAX_LOG_BYTES:
            os.replace(path, path.with_name(LOG_FILENAME + ".1"))
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    return True


def read_lines(store_dir: Path, limit: int) -> Iterator[dict[str, Any]]:
    """The newest ``limit`` well-formed records of the current log, oldest first (bounded read)."""
    path = log_path(store_dir)
    try:
        with open(path, "rb") as handle:
            handle.seek(max(path.stat().st_size - MAX_LOG_BYTES, 0))
            raw = handle.read(MAX_LOG_BYTES)
    except OSError:
        return
    records = []
    for line in raw.splitlines()[-limit:]:
        with contextlib.suppress(ValueError):
            record = json.loads(line)
            if isinstance(record, dict):
                records.append(record)
    yield from records
