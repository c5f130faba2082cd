"""The database file: a damaged or truncated one is refused before SQLite touches it; a new one is private."""

from __future__ import annotations

import os
import time
from pathlib import Path

from graymatter.errors import CorruptDatabase, StoreUnavailable
from graymatter.fsutil import FILE_MODE

_SQLITE_MAGIC = b"SQLite format 3\x00"
_HINT = "move it aside or restore a backup; it was not modified"


def _size_problem(path: Path, size: int, header: bytes) -> str | None:
    """Why a file with this header and size is not a whole database, or ``None`` when it is."""
    if len(header) < 100 or header[:16] != _SQLITE_MAGIC:
        raise CorruptDatabase(f"{path} is not a graymatter database (not SQLite, or damaged header); {_HINT}")
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65_536 if page_size == 1 else page_size
    if page_size < 512 or page_size & (page_size - 1):
        raise CorruptDatabase(f"{path} has a damaged header (page size {page_size}); {_HINT}")
    change_counter = int.from_bytes(header[24:28], "big")
    valid_for = int.from_bytes(header[92:96], "big")
    declared = int.from_bytes(header[28:32], "big") * page_size
    if size % page_size:
        return f"{size} bytes is not a whole number of pages"
    if change_counter == valid_for and declared > size:
        wal = path.with_name(path.name + "-wal")
        if wal.exists() and wal.stat().st_size > 0:
            return None  # an unfinished checkpoint: the WAL still holds those pages and SQLite completes it
        return f"{size} bytes, header declares {declared}"
    return None


def validate_database_file(path: Path, settle_attempts: int = 5, settle_s: float = 0.05) -> None:
    """Refuse a file that is not a complete SQLite database, without modifying it.

    Checks the magic bytes, the page size, that the file holds whole pages and that it is not shorter
    than the page count its header declares (a truncated copy). An empty file is a new database.

    A checkpoint writes page 1 (with the new page count) before the pages that extend the file, so a
    size mismatch is re-read a few times, and accepted while a non-empty WAL can still complete it.
    """
    problem = ""
    for attempt in range(settle_attempts):
        try:
            size = path.stat().st_size
            if size == 0:
                return
            with open(path, "rb") as handle:
                header = handle.read(100)
        except OSError as exc:
            raise StoreUnavailable(f"cannot read database file {path}: {exc.strerror or exc}") from None
        found = _size_problem(path, size, header)
        if found is None:
            return
        problem = found
        if attempt + 1 < settle_attempts:
            time.sleep(settle_s)
    raise CorruptDatabase(f"{path} is truncated ({problem}); {_HINT}")


def create_database_file(path: Path, data_dir: Path) -> None:
    """Create an empty, private database file (no-op when another process just created it)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), FILE_MODE)
        os.close(fd)
    except FileExistsError:
        return
    except OSError as exc:
        raise StoreUnavailable(
            f"cannot create {path}: {exc.strerror or exc}; check that {data_dir} is writable"
        ) from None


def database_bytes(path: Path) -> int:
    """Bytes on disk of the database file and its write-ahead log (0 for a file that is not there)."""
    total = 0
    for part in (path, path.with_name(path.name + "-wal")):
        try:
            total += part.stat().st_size
        except FileNotFoundError:
            pass
    return total
