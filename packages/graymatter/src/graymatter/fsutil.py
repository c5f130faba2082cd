"""Private, atomic filesystem helpers: 0700 directories, 0600 files, write-to-temp-then-rename."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from graymatter.errors import StoreUnavailable

DIR_MODE = 0o700
FILE_MODE = 0o600


def ensure_private_dir(path: Path, elsewhere: str = "pass another --dir") -> Path:
    """Create ``path`` (mode 0700) if missing and check that it is a usable directory.

    An existing directory keeps the permissions its owner gave it.

    Raises ``StoreUnavailable`` with an actionable one-line message when a file sits where the
    directory should be or when the directory cannot be created or written.
    """
    path = Path(path)
    if path.is_symlink() and not path.exists():
        raise StoreUnavailable(f"data directory {path} is a dangling symlink; remove it or {elsewhere}")
    if path.exists() and not path.is_dir():
        raise StoreUnavailable(f"{path} exists but is not a directory; remove it or {elsewhere}")
    if not path.exists():
        try:
            path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
        except NotADirectoryError:
            raise StoreUnavailable(
                f"cannot create data directory {path}: a parent path is a file, not a directory"
            ) from None
        except OSError as exc:
            raise StoreUnavailable(f"cannot create data directory {path}: {exc.strerror or exc}") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise StoreUnavailable(f"directory {path} is not writable; fix its permissions or {elsewhere}")
    return path


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically with mode 0600.

    The bytes go to a unique temporary file in the same directory, opened with O_EXCL|O_NOFOLLOW, are
    fsynced, then renamed over ``path``; the directory is fsynced so the rename is durable.
    """
    path = Path(path)
    directory = path.parent
    tmp = directory / f".{path.name}.{os.urandom(8).hex()}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(tmp, flags, FILE_MODE)
    except OSError as exc:  # name the file the caller asked for, not our temporary name
        raise OSError(exc.errno, exc.strerror, str(path)) from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
