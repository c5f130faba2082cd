"""The pending journal: a reply saved before its tools run, as one appended line next to the trajectory.

Before a tool batch runs, the reply (with the totals and time that include it) is appended to
`<trajectory name>.pending` as one JSON line and made durable with `fdatasync`: a few hundred bytes
instead of rewriting the whole trajectory. The next full save of the trajectory contains the reply, so
every record older than the last full save is *folded*; `--resume` folds an unfolded last record back
in (`tinyagent.resume.journal`). The file is private (0600), opened without following a link, created
before the first trajectory save that names it (`resume.journal`), emptied once it passes
`ROTATE_BYTES` after a full save, and removed after the final save. A record is written with one
`write` and its newline last, and the tools start only after `fdatasync` returned: a last line without
its newline is a write that was never acknowledged, so its calls were never dispatched (see ADR 0017).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from tinyagent.trajectory.atomic import SaveError
from tinyagent.trajectory.models import JournalRef, Totals
from tinyagent.types import Message

if TYPE_CHECKING:
    from tinyagent.trajectory.models import Trajectory

__all__ = ["JOURNAL_SUFFIX", "ROTATE_BYTES", "JournalRecord", "PendingJournal", "journal_ref_for"]

JOURNAL_SUFFIX = ".pending"
ROTATE_BYTES = 1 << 20
"""After a full save, a journal longer than this is emptied (every record in it is folded)."""


class JournalRecord(BaseModel):
    """One journal line: the reply at `messages[index]` of run `run`, saved before its tools ran."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    run: str
    index: int  # position of `message` in the trajectory's messages
    elapsed_seconds: float
    totals: Totals
    warnings: list[str]
    message: Message


def journal_ref_for(path: str | os.PathLike[str]) -> JournalRef:
    """A new journal reference for the trajectory at `path`: its sibling name and a fresh run id."""
    return JournalRef(name=Path(path).name + JOURNAL_SUFFIX, run=secrets.token_hex(8))


def encode_record(ref: JournalRef, trajectory: Trajectory) -> bytes:
    """The journal line for the trajectory's last message (the reply), newline included."""
    message = trajectory.messages[-1]
    return (
        '{"run": '
        + json.dumps(ref.run)
        + ', "index": '
        + str(len(trajectory.messages) - 1)
        + ', "elapsed_seconds": '
        + json.dumps(trajectory.timing.elapsed_seconds)
        + ', "totals": '
        + trajectory.totals.model_dump_json()
        + ', "warnings": '
        + json.dumps(trajectory.warnings, ensure_ascii=False)
        + ', "message": '
        + message.model_dump_json()
        + "}\n"
    ).encode("utf-8")


class PendingJournal:
    """The journal file of one trajectory, opened once (private, append-only) and used by one thread at
    a time: appends come from the loop, the emptying after a full save from whoever saved."""

    def __init__(self, trajectory_path: Path, ref: JournalRef) -> None:
        self.ref = ref
        self.path = trajectory_path.parent / ref.name
        self._fd: int | None = None
        self._size = 0
        self.broken = False  # a failed append: never append again (a torn line must stay the last one)

    def open(self) -> None:
        """Create (or empty a stale) journal: 0600, never through a symlink, not a special file."""
        if self._fd is not None:
            return
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
        try:
            try:
                fd = os.open(self.path, flags | os.O_NONBLOCK, 0o600)
            except FileNotFoundError:  # like the trajectory: missing parent directories are created, 0700
                self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                fd = os.open(self.path, flags | os.O_NONBLOCK, 0o600)
        except OSError as exc:
            raise SaveError(f"cannot open the pending journal {self.path}: {exc.strerror or exc}") from exc
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise SaveError(f"the pending journal path is not a regular file: {self.path}")
            os.fchmod(fd, 0o600)
            os.ftruncate(fd, 0)  # a journal left by an earlier run at this path
        except SaveError:
            os.close(fd)
            raise
        except OSError as exc:
            os.close(fd)
            raise SaveError(f"cannot prepare the pending journal {self.path}: {exc.strerror or exc}") from exc
        self._fd = fd

    def append(self, record: bytes) -> None:
        """Append one record and `fdatasync` it; SaveError (and the journal is broken) on any failure."""
        if self._fd is None or self.broken:
            raise SaveError("the pending journal is not available")
        try:
            written = os.write(self._fd, record)
            if written != len(record):
                raise OSError(f"short write ({written} of {len(record)} bytes)")
            os.fdatasync(self._fd)
        except OSError as exc:
            self.broken = True
            raise SaveError(f"cannot append to the pending journal: {exc.strerror or exc}") from exc
        self._size += written

    def folded(self) -> None:
        """A full save holding every record landed: empty the journal once it is over ROTATE_BYTES."""
        if self._fd is None or self.broken or self._size <= ROTATE_BYTES:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(self._fd, 0)
            self._size = 0

    def close(self, *, remove: bool) -> None:
        """Close the journal; `remove` (after the final save) also deletes it."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)
        if remove:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)
