"""Saving and loading trajectory files: the per-run `TrajectoryFile`, `save_trajectory`, `load_trajectory`.

Saving encodes with `tinyagent.trajectory.encoding` and writes with `write_private_atomic`
(`tinyagent.trajectory.atomic`): a reader sees either the previous complete file or the new complete
file, never a torn one, and nothing is written through a symlink. `load_trajectory` reads at most
`MAX_TRAJECTORY_BYTES` (64 MiB) and validates the document against `tinyagent.trajectory.models.Trajectory`.

Fault injection for tests: when the environment variable `TINYAGENT_TEST_FAIL_SAVE` is set to N,
the N-th save of this process (1-based) and every later one fail with `SaveError`; when
`TINYAGENT_TEST_KILL_AFTER_JOURNAL` is set to N, the process SIGKILLs itself right after its N-th pending
journal record is durable (the instant before that reply's tools would run).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from tinyagent.defaults import MAX_TRAJECTORY_BYTES
from tinyagent.errors import TinyAgentError
from tinyagent.trajectory.atomic import SaveError, write_private_atomic
from tinyagent.trajectory.encoding import TrajectoryEncoder, dump_trajectory
from tinyagent.validation import first_error

if TYPE_CHECKING:
    from tinyagent.trajectory.journal import PendingJournal
    from tinyagent.trajectory.models import JournalRef, Trajectory

FAULT_ENV = "TINYAGENT_TEST_FAIL_SAVE"
KILL_ENV = "TINYAGENT_TEST_KILL_AFTER_JOURNAL"
SYNC_FAULT_ENV = "TINYAGENT_TEST_FAIL_SYNC"

_save_count = 0
_journal_count = 0
_sync_count = 0


class LoadError(TinyAgentError, ValueError):
    """A trajectory file could not be read or is not a valid trajectory.

    `category` names what failed (missing, unreadable, not-a-file, empty, oversized, encoding,
    malformed, schema) so callers can report it without echoing the file's content.
    """

    def __init__(self, category: str, message: str) -> None:
        super().__init__(message)
        self.category = category


def _injected_failure() -> bool:
    global _save_count
    _save_count += 1
    raw = os.environ.get(FAULT_ENV)
    if not raw:
        return False
    try:
        threshold = int(raw)
    except ValueError:
        return False
    return threshold > 0 and _save_count >= threshold


def _injected_sync_failure() -> bool:
    """`TINYAGENT_TEST_FAIL_SYNC=N`: the Nth overlapped sync of a pending record fails (tests only)."""
    global _sync_count
    _sync_count += 1
    raw = os.environ.get(SYNC_FAULT_ENV, "")
    return raw.isdigit() and int(raw) == _sync_count


def _injected_kill() -> None:
    global _journal_count
    _journal_count += 1
    raw = os.environ.get(KILL_ENV)
    if raw and raw.isdigit() and int(raw) == _journal_count:
        import signal

        os.kill(os.getpid(), signal.SIGKILL)


class TrajectoryFile:
    """The agent's `save` for one output file: `file(trajectory)` saves atomically (SaveError).

    The two halves are also offered separately so the agent can encode in its own thread (CPU work,
    no contention) and leave only the durable write to its save worker: `write(encode(t))` is
    exactly `file(t)`. Repeated saves of the growing trajectory reuse a `TrajectoryEncoder`.
    With `journal`, the file also keeps the run's pending journal (`journal_ref` names it; the caller
    puts it in `resume.journal`): `append_pending` saves a reply before its tools run, and `finish`
    (the final save) removes the journal.
    """

    def __init__(
        self, path: str | os.PathLike[str], *, create_new: bool = False, journal: bool = False
    ) -> None:
        """`create_new`: the first write must create the file (it never replaces an existing one)."""
        self.path = Path(path)
        self._encoder = TrajectoryEncoder()
        self._must_create = create_new
        self._journal: PendingJournal | None = None
        if journal:
            from tinyagent.trajectory.journal import PendingJournal, journal_ref_for

            self._journal = PendingJournal(self.path, journal_ref_for(self.path))

    @property
    def journal_ref(self) -> JournalRef | None:
        """The pending journal this file keeps (None: no journal)."""
        return self._journal.ref if self._journal is not None else None

    @property
    def journal(self) -> PendingJournal | None:
        """The pending journal itself (opened, appended to and erased by the run's saver)."""
        return self._journal

    def encode(self, trajectory: Trajectory) -> bytes:
        return self._encoder.encode(trajectory)

    def write(self, data: bytes, *, sync_directory: bool = True) -> None:
        """Write encoded bytes atomically (`sync_directory`: see `write_private_atomic`).

        The journal exists before the first trajectory that names it is written.
        """
        if _injected_failure():
            raise SaveError(f"injected save failure ({FAULT_ENV})")
        if self._journal is not None and not self._journal.broken:
            self._journal.open()  # normally opened already by the saver, before the first save
        write_private_atomic(self.path, data, no_clobber=self._must_create, sync_directory=sync_directory)
        self._must_create = False

    def journal_append(
        self, record: bytes, *, sync: bool, overlap: bool = False
    ) -> Callable[[], None] | None:
        """Append one journal record; `sync` (the reply before a tool batch) makes it durable first.

        `overlap` (with `sync`): the record is made durable in the background and the returned wait
        returns once it is (SaveError if it failed), see `PendingJournal.append`. A synced record counts
        as a save for `TINYAGENT_TEST_FAIL_SAVE`; `TINYAGENT_TEST_KILL_AFTER_JOURNAL` kills once it is
        durable.
        """
        if self._journal is None:
            raise SaveError("no pending journal")
        if sync and _injected_failure():
            raise SaveError(f"injected save failure ({FAULT_ENV})")
        wait = self._journal.append(record, sync=sync, overlap=overlap)
        if not sync:
            return None
        if wait is None:
            _injected_kill()
            return None

        def durable() -> None:
            wait()
            if _injected_sync_failure():
                raise SaveError(f"injected sync failure ({SYNC_FAULT_ENV})")
            _injected_kill()

        return durable

    def finish(self, trajectory: Trajectory) -> None:
        """The final save; once it landed the journal is removed (else it is kept for --resume)."""
        try:
            self.write(self.encode(trajectory))
        except BaseException:
            if self._journal is not None:
                self._journal.close(remove=False)
            raise
        if self._journal is not None:
            self._journal.close(remove=True)

    def __call__(self, trajectory: Trajectory) -> None:
        self.write(self.encode(trajectory))


def save_trajectory(
    trajectory: Trajectory, path: str | os.PathLike[str], encoder: TrajectoryEncoder | None = None
) -> None:
    """Atomically save `trajectory` to `path` as a private (0600) file. Raises SaveError.

    `encoder` (optional) makes repeated saves of one growing trajectory cheaper; the bytes are the same.
    """
    if _injected_failure():
        raise SaveError(f"injected save failure ({FAULT_ENV})")
    data = encoder.encode(trajectory) if encoder is not None else dump_trajectory(trajectory)
    write_private_atomic(Path(path), data)


def read_bounded(path: str | os.PathLike[str], max_bytes: int = MAX_TRAJECTORY_BYTES) -> bytes:
    """Read a regular file of at most `max_bytes` bytes. Raises LoadError with a category."""
    p = Path(path)
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError as exc:
        raise LoadError("missing", f"file not found: {p}") from exc
    except OSError as exc:
        raise LoadError("unreadable", f"cannot open {p}: {exc.strerror or exc}") from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise LoadError("not-a-file", f"not a regular file: {p}")
        if st.st_size > max_bytes:
            raise LoadError("oversized", f"{p} is {st.st_size} bytes; the limit is {max_bytes} bytes")
        chunks: list[bytes] = []
        total = 0
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            total += len(chunk)
            if total > max_bytes:
                raise LoadError("oversized", f"{p} exceeds the limit of {max_bytes} bytes")
            chunks.append(chunk)
    except OSError as exc:
        raise LoadError("unreadable", f"cannot read {p}: {exc.strerror or exc}") from exc
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if not data.strip():
        raise LoadError("empty", f"file is empty: {p}")
    return data


def load_trajectory(path: str | os.PathLike[str], max_bytes: int = MAX_TRAJECTORY_BYTES) -> Trajectory:
    """Read and validate a trajectory file (at most `max_bytes`). Raises LoadError; never echoes content."""
    import json

    from pydantic import ValidationError

    from tinyagent.trajectory.models import Trajectory

    data = read_bounded(path, max_bytes)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LoadError("encoding", f"{path} is not valid UTF-8 (byte offset {exc.start})") from exc
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LoadError(
            "malformed", f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno})"
        ) from exc
    except RecursionError as exc:
        raise LoadError("malformed", f"{path} is nested too deeply to parse") from exc
    try:
        return Trajectory.model_validate(document)
    except ValidationError as exc:
        first = first_error(exc)
        raise LoadError(
            "schema", f"{path} is not a valid trajectory: {first.where('(document)')}: {first.type}"
        ) from exc
