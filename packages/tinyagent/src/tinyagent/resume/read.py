"""Reading a checkpoint's bytes: read-only, bounded, refusing files that are not regular trajectories."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from tinyagent.defaults import MAX_TRAJECTORY_BYTES
from tinyagent.resume.refusal import os_reason, refuse

MAX_CHECKPOINT_BYTES = MAX_TRAJECTORY_BYTES
"""Largest checkpoint `--resume` reads (64 MiB); larger files are refused unread."""


def read_checkpoint(path: Path) -> bytes:
    """Read a checkpoint's bytes, refusing missing, unreadable, non-regular, empty and oversized files.

    The file is opened read-only and never written; at most `MAX_CHECKPOINT_BYTES + 1` bytes are read.
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        refuse("missing file", "the checkpoint given to --resume does not exist; check the path")
    except IsADirectoryError:
        refuse("unreadable file", "the path given to --resume is a directory; pass the trajectory file")
    except OSError as exc:
        refuse("unreadable file", f"cannot open the checkpoint ({os_reason(exc)}); check its permissions")
    try:
        _check_regular_file(os.fstat(fd))
        raw = _read_at_most(fd, MAX_CHECKPOINT_BYTES + 1)
    except OSError as exc:
        refuse("unreadable file", f"cannot read the checkpoint ({os_reason(exc)}); check the file")
    finally:
        os.close(fd)
    if len(raw) > MAX_CHECKPOINT_BYTES:
        refuse("oversized file", oversized_advice())
    return raw


def _check_regular_file(info: os.stat_result) -> None:
    if stat.S_ISDIR(info.st_mode):
        refuse("unreadable file", "the path given to --resume is a directory; pass the trajectory file")
    if not stat.S_ISREG(info.st_mode):
        refuse("unreadable file", "the checkpoint is not a regular file; pass a saved trajectory file")
    if info.st_size > MAX_CHECKPOINT_BYTES:
        refuse("oversized file", oversized_advice())


def _read_at_most(fd: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    remaining = limit
    while remaining > 0:
        chunk = os.read(fd, min(remaining, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def oversized_advice() -> str:
    """The advice of the "oversized file" refusal."""
    return (
        f"the checkpoint is larger than {MAX_CHECKPOINT_BYTES // (1024 * 1024)} MiB, the resume bound; "
        "start a fresh task instead"
    )


def file_sha256(raw: bytes) -> str:
    """Hex SHA-256 of the checkpoint bytes, recorded as resume provenance."""
    return hashlib.sha256(raw).hexdigest()
