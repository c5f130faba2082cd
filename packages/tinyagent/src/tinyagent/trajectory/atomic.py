"""Atomic, private file writes: a 0600 temporary file, fsynced, then renamed (or linked) into place."""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path

from tinyagent.errors import TinyAgentError


class SaveError(TinyAgentError, OSError):
    """The trajectory could not be written; the previous file (if any) is unchanged."""


def write_private_atomic(
    path: Path, data: bytes, *, no_clobber: bool = False, sync_directory: bool = True
) -> None:
    """Atomically replace `path` with `data` (mode 0600); never follows a symlink at `path`.

    Missing parent directories are created with mode 0700. Raises SaveError on any failure,
    leaving the previous file (if any) intact and no temporary file behind. With `no_clobber`
    the file is published with link(2), which fails if `path` exists (even if it appeared after
    any earlier check), so an existing file is never replaced. Without `sync_directory` the rename is
    not fsynced: the file's data is, so after a power loss the name holds the old or the new complete
    file (a process kill always sees the new one); the next synced write makes it durable.
    """
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    _check_destination(path, directory, no_clobber=no_clobber)
    tmp = directory / f".{path.name}.{secrets.token_hex(8)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(tmp, flags, 0o600)
    except OSError as exc:
        raise SaveError(f"cannot create a temporary file in {directory}: {exc.strerror or exc}") from exc
    try:
        _write_and_close(fd, data)
        _publish(tmp, path, no_clobber=no_clobber)
    except SaveError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise SaveError(f"cannot write {path}: {exc.strerror or exc}") from exc
    if sync_directory or no_clobber:
        _fsync_directory(directory)


def _check_destination(path: Path, directory: Path, *, no_clobber: bool) -> None:
    """Refuse a symlink, an existing file under `no_clobber` or a non-regular file; create missing parents."""
    try:
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            st = None
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)  # only when it may be missing
        if st is not None and stat.S_ISLNK(st.st_mode):
            raise SaveError(f"refusing to write through a symlink: {path}")
        if st is not None and no_clobber:
            raise SaveError(f"refusing to overwrite an existing file: {path}")
        if st is not None and not stat.S_ISREG(st.st_mode):
            raise SaveError(f"destination exists and is not a regular file: {path}")
    except SaveError:
        raise
    except OSError as exc:
        raise SaveError(f"cannot prepare {path}: {exc.strerror or exc}") from exc


def _write_and_close(fd: int, data: bytes) -> None:
    """Write all of `data` to `fd` (mode 0600), fsync it and close it."""
    try:
        os.fchmod(fd, 0o600)
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    finally:
        os.close(fd)


def _publish(tmp: Path, path: Path, *, no_clobber: bool) -> None:
    """Move the written temporary file to `path`: link(2) under `no_clobber`, else rename over it."""
    if not no_clobber:
        os.replace(tmp, path)
        return
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise SaveError(f"refusing to overwrite an existing file: {path}") from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def _fsync_directory(directory: Path) -> None:
    try:
        dfd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(dfd)
    finally:
        os.close(dfd)
