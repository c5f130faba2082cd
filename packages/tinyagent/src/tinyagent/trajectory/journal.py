"""The pending journal: each turn as one line next to the trajectory, a reply durably before its tools.

The trajectory file is rewritten after every turn by a background thread; the journal
`<trajectory name>.pending` holds, in order, every message appended since the run started (or since it
was last erased), one record per save point with the totals, time and warnings of that moment. The
record of a reply whose tools are about to run is marked `pending` and made durable with `fdatasync`
before any tool starts; the other records are plain writes, made durable by the next synced one. So a
hard kill at any instant leaves the last trajectory that landed plus the records after it, and
`--resume` replays them (`tinyagent.resume.journal`); nothing waits for the full rewrite. The file is
private (0600), opened without following a link, created before the first trajectory save that names it
(`resume.journal`), preallocated with zeros so that a record is a pure data overwrite (no file-system
metadata to commit), erased once a durable full save holds every record and they pass `ROTATE_BYTES`,
and removed after the final save. The records end at the first NUL byte. A record is written with one
`pwrite`, its newline last, and the tools start only after `fdatasync` returned: a last line without its
newline is a write that was never acknowledged, so its calls were never dispatched (see ADR 0017).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import stat
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from tinyagent.trajectory.atomic import SaveError
from tinyagent.trajectory.models import Compaction, JournalRef, Totals
from tinyagent.types import Message

if TYPE_CHECKING:
    from tinyagent.trajectory.models import Trajectory
    from tinyagent.trajectory.syncer import Syncer, SyncTicket

__all__ = ["JOURNAL_SUFFIX", "ROTATE_BYTES", "JournalRecord", "PendingJournal", "journal_ref_for"]

JOURNAL_SUFFIX = ".pending"
ROTATE_BYTES = 1 << 20
"""After a full save, records longer than this are erased (every record in it is folded)."""
PREALLOCATE_BYTES = 256 * 1024
"""The journal is preallocated with zeros in steps of this size (records overwrite zeros, see `append`)."""


class JournalRecord(BaseModel):
    """One journal line: `messages` appended at `messages[index:]` of run `run`, and the state after them.

    `pending`: the last message is a reply whose tools were about to run. `compaction`: set when the
    compacted view changed since the previous record.
    """

    model_config = ConfigDict(extra="forbid", defer_build=True)

    run: str
    index: int
    messages: list[Message]
    pending: bool
    elapsed_seconds: float
    totals: Totals
    warnings: list[str]
    compaction: Compaction | None = None


def journal_ref_for(path: str | os.PathLike[str]) -> JournalRef:
    """A new journal reference for the trajectory at `path`: its sibling name and a fresh run id."""
    return JournalRef(name=Path(path).name + JOURNAL_SUFFIX, run=secrets.token_hex(8))


def encode_record(
    ref: JournalRef, trajectory: Trajectory, start: int, *, pending: bool, compaction: Compaction | None
) -> bytes:
    """The journal line for `trajectory.messages[start:]` and the trajectory's state, newline included."""
    parts = [
        '{"run": ',
        json.dumps(ref.run),
        ', "index": ',
        str(start),
        ', "messages": [',
        ", ".join(message.model_dump_json() for message in trajectory.messages[start:]),
        '], "pending": ',
        "true" if pending else "false",
        ', "elapsed_seconds": ',
        json.dumps(trajectory.timing.elapsed_seconds),
        ', "totals": ',
        trajectory.totals.model_dump_json(),
        ', "warnings": ',
        json.dumps(trajectory.warnings, ensure_ascii=False),
    ]
    if compaction is not None:
        parts += [', "compaction": ', compaction.model_dump_json()]
    parts.append("}\n")
    return "".join(parts).encode("utf-8")


class PendingJournal:
    """The journal file of one trajectory, opened once (private, append-only) and used by one thread at
    a time: appends come from the loop, the emptying after a full save from whoever saved."""

    def __init__(self, trajectory_path: Path, ref: JournalRef) -> None:
        self.ref = ref
        self.path = trajectory_path.parent / ref.name
        self._fd: int | None = None
        self._used = 0  # bytes of records; the rest of the file is preallocated zeros
        self._capacity = 0
        self.broken = False  # a failed append: never append again (a torn line must stay the last one)
        self._syncer: Syncer | None = None
        self._inflight: SyncTicket | None = None

    def open(self) -> None:
        """Create (or empty a stale) journal: 0600, never through a symlink, not a special file."""
        if self._fd is not None:
            return
        if self.broken:
            raise SaveError("the pending journal is not available")
        self.broken = True  # until it is open and preallocated
        flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
        try:
            try:
                fd = os.open(self.path, flags, 0o600)
            except FileNotFoundError:  # like the trajectory: missing parent directories are created, 0700
                self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                fd = os.open(self.path, flags, 0o600)
        except OSError as exc:
            raise SaveError(f"cannot open the pending journal {self.path}: {exc.strerror or exc}") from exc
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise SaveError(f"the pending journal path is not a regular file: {self.path}")
            os.fchmod(fd, 0o600)
            os.ftruncate(fd, 0)  # a journal left by an earlier run at this path
            self._fd = fd
            self._grow(PREALLOCATE_BYTES)
            self.broken = False
        except SaveError:
            self._fd = None
            os.close(fd)
            raise
        except OSError as exc:
            self._fd = None
            os.close(fd)
            raise SaveError(f"cannot prepare the pending journal {self.path}: {exc.strerror or exc}") from exc

    @property
    def used(self) -> int:
        """Bytes of records in the file."""
        return self._used

    def append(self, record: bytes, *, sync: bool = True, overlap: bool = False) -> Callable[[], None] | None:
        """Write one record after the last one (`sync`: and `fdatasync` it); SaveError (and the journal
        is broken) on any failure. The record lands in preallocated zeros: a pure data write, whose
        sync waits for no file-system metadata commit (the cost other processes' writes inflate).

        `overlap` (with `sync`): the `fdatasync` runs on the journal's sync thread; the returned wait
        returns once it did (SaveError, and the journal is broken, when it failed). Until then the
        record is written but not durable: nothing it asks for may have an effect yet.
        """
        self.settle()
        if self._fd is None or self.broken:
            raise SaveError("the pending journal is not available")
        try:
            if self._used + len(record) > self._capacity:
                self._grow(max(PREALLOCATE_BYTES, 2 * len(record)))
            written = os.pwrite(self._fd, record, self._used)
            if written != len(record):
                raise OSError(f"short write ({written} of {len(record)} bytes)")
            if sync and not overlap:
                os.fdatasync(self._fd)
        except OSError as exc:
            self.broken = True
            raise SaveError(f"cannot append to the pending journal: {exc.strerror or exc}") from exc
        self._used += written
        if not (sync and overlap):
            return None
        if self._syncer is None:
            from tinyagent.trajectory.syncer import Syncer  # a thread, started on the first overlapped sync

            self._syncer = Syncer()
        self._inflight = self._syncer.submit(self._fd)
        return self.settle

    def settle(self) -> None:
        """Wait for an overlapped `fdatasync` still running; SaveError (journal broken) if it failed."""
        ticket, self._inflight = self._inflight, None
        if ticket is None:
            return
        error = ticket.wait()
        if error is not None:
            self.broken = True
            raise SaveError(f"cannot append to the pending journal: {error.strerror or error}")

    def erase(self) -> None:
        """Erase every record (the caller knows a durable full save holds them all).

        The records are overwritten with zeros (durably) before the next record starts at offset 0,
        so a reader never sees a new record followed by old ones.
        """
        with contextlib.suppress(SaveError):
            self.settle()
        if self._fd is None or self.broken:
            return
        try:
            _write_zeros(self._fd, 0, self._used)
            os.fdatasync(self._fd)
        except OSError:
            self.broken = True
            return
        self._used = 0

    def _grow(self, extra: int) -> None:
        """Preallocate `extra` more bytes of written zeros (the next synced record makes them durable:
        until then a power loss can only shorten the file, never tear a synced record)."""
        assert self._fd is not None
        _write_zeros(self._fd, self._capacity, extra)
        self._capacity += extra

    def close(self, *, remove: bool) -> None:
        """Close the journal; `remove` (after the final save) also deletes it."""
        with contextlib.suppress(SaveError):
            self.settle()  # never close a descriptor the sync thread still uses
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)
        if remove and fd is not None:  # only a journal this run opened
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)


def _write_zeros(fd: int, offset: int, length: int) -> None:
    zeros = bytes(min(length, 1 << 20))
    end = offset + length
    while offset < end:
        offset += os.pwrite(fd, zeros[: end - offset], offset)
