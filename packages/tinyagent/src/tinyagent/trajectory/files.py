"""Atomic, private persistence of trajectory files.

`save_trajectory` writes a unique temporary file in the destination directory (created with
O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600), fsyncs it, renames it over the destination and fsyncs the
directory, so a reader sees either the previous complete file or the new complete file, never a torn one.
It refuses to write through a symlink at the destination. `load_trajectory` reads at most
`MAX_TRAJECTORY_BYTES` (64 MiB) and validates the document against `tinyagent.trajectory.models.Trajectory`.

Fault injection for tests: when the environment variable `TINYAGENT_TEST_FAIL_SAVE` is set to N,
the N-th save of this process (1-based) and every later one fail with `SaveError`.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tinyagent.errors import TinyAgentError

if TYPE_CHECKING:
    from tinyagent.trajectory.models import Trajectory

MAX_TRAJECTORY_BYTES = 64 * 1024 * 1024
FAULT_ENV = "TINYAGENT_TEST_FAIL_SAVE"

_save_count = 0


class SaveError(TinyAgentError, OSError):
    """The trajectory could not be written; the previous file (if any) is unchanged."""


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


def write_private_atomic(path: Path, data: bytes, *, no_clobber: bool = False) -> None:
    """Atomically replace `path` with `data` (mode 0600); never follows a symlink at `path`.

    Missing parent directories are created with mode 0700. Raises SaveError on any failure,
    leaving the previous file (if any) intact and no temporary file behind. With `no_clobber`
    the file is published with link(2), which fails if `path` exists (even if it appeared after
    any earlier check), so an existing file is never replaced.
    """
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
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

    tmp = directory / f".{path.name}.{secrets.token_hex(8)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(tmp, flags, 0o600)
    except OSError as exc:
        raise SaveError(f"cannot create a temporary file in {directory}: {exc.strerror or exc}") from exc
    try:
        try:
            os.fchmod(fd, 0o600)
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        finally:
            os.close(fd)
        if no_clobber:
            try:
                os.link(tmp, path)
            except FileExistsError:
                raise SaveError(f"refusing to overwrite an existing file: {path}") from None
            finally:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
        else:
            os.replace(tmp, path)
    except SaveError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise SaveError(f"cannot write {path}: {exc.strerror or exc}") from exc
    _fsync_directory(directory)


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


def dump_trajectory(trajectory: Trajectory) -> bytes:
    """Serialise a trajectory to its canonical on-disk bytes (indented JSON, UTF-8, trailing newline)."""
    return trajectory.model_dump_json(indent=1).encode("utf-8") + b"\n"


class TrajectoryEncoder:
    """`dump_trajectory` for a trajectory saved again and again: byte-identical output, but the JSON of
    every message already encoded (the same object at the same position) is reused.

    A run's history only grows and a message is never mutated once appended, so each checkpoint
    encodes the new messages and the small rest of the document only. Not thread-safe: one
    encoder per run, used by one save at a time.
    """

    def __init__(self) -> None:
        self._messages: list[tuple[object, str]] = []
        self._head: tuple[tuple[object, ...], str] | None = None  # fields before `messages`
        self._tools: tuple[list[object], str] | None = None

    def encode(self, trajectory: Trajectory) -> bytes:
        fields = list(type(trajectory).model_fields)
        at = fields.index("messages") if "messages" in fields else -1
        if not trajectory.messages or at < 1 or fields[at + 1 : at + 2] != ["tools"] or len(fields) < at + 3:
            return dump_trajectory(trajectory)  # an unexpected layout: the plain encoding
        head_fields, tail_fields = fields[:at], fields[at + 2 :]
        head_values = tuple(getattr(trajectory, name) for name in head_fields)
        if self._head is None or not _same_values(self._head[0], head_values):
            self._head = (head_values, _inner(trajectory, head_fields))
        tools: list[object] = list(trajectory.tools)
        if self._tools is None or not _same_values(self._tools[0], tools, identity=True):
            self._tools = (tools, _inner(trajectory, ["tools"]))
        parts = [
            self._head[1],
            self._messages_json(trajectory.messages),
            self._tools[1],
            _inner(trajectory, tail_fields),  # the small, changing fields: encoded every time
        ]
        return ("{\n" + ",\n".join(parts) + "\n}\n").encode("utf-8")

    def _messages_json(self, messages: list[Any]) -> str:
        cache = self._messages
        keep = 0
        limit = min(len(cache), len(messages))
        while keep < limit and cache[keep][0] is messages[keep]:
            keep += 1
        del cache[keep:]
        for message in messages[keep:]:
            text = message.model_dump_json(indent=1)
            cache.append((message, "  " + text.replace("\n", "\n  ")))  # nested two levels deep
        return ' "messages": [\n' + ",\n".join(text for _, text in cache) + "\n ]"


def _inner(trajectory: Trajectory, names: list[str]) -> str:
    """The lines of `names` as they appear inside the indented document (no braces).

    Raw newlines occur in the JSON only as indentation, never inside strings, so cutting the
    object's first and last line is exact.
    """
    text = trajectory.model_dump_json(indent=1, include=set(names))
    return text[2:-2]


def _same_values(old: Sequence[object], new: Sequence[object], *, identity: bool = False) -> bool:
    if len(old) != len(new):
        return False
    if identity:
        return all(a is b for a, b in zip(old, new, strict=True))
    return all(a is b or (type(a) is type(b) and a == b) for a, b in zip(old, new, strict=True))


class TrajectoryFile:
    """The agent's `save` for one output file: `file(trajectory)` saves atomically (SaveError).

    The two halves are also offered separately so the agent can encode in its own thread (CPU work,
    no contention) and leave only the durable write to its save worker: `write(encode(t))` is
    exactly `file(t)`. Repeated saves of the growing trajectory reuse a `TrajectoryEncoder`.
    """

    def __init__(self, path: str | os.PathLike[str], *, create_new: bool = False) -> None:
        """`create_new`: the first write must create the file (it never replaces an existing one)."""
        self.path = Path(path)
        self._encoder = TrajectoryEncoder()
        self._must_create = create_new

    def encode(self, trajectory: Trajectory) -> bytes:
        return self._encoder.encode(trajectory)

    def write(self, data: bytes) -> None:
        if _injected_failure():
            raise SaveError(f"injected save failure ({FAULT_ENV})")
        write_private_atomic(self.path, data, no_clobber=self._must_create)
        self._must_create = False

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
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first.get("loc", ())) or "(document)"
        raise LoadError(
            "schema", f"{path} is not a valid trajectory: {where}: {first.get('type', 'invalid')}"
        ) from exc
