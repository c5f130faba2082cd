"""The tools offered to the model: bash, read_file, write_file, edit_file and submit.

`Toolbox.run(call)` always returns exactly one `ToolResult` per call, errors included; it never raises
for anything the model did wrong (bad JSON, unknown tool, missing file, non-unique edit). It raises
`ToolInfrastructureError` only when the harness itself cannot run tools (for example the working
directory vanished or bash cannot be started); the loop then ends the run with status ToolError.

bash runs each command in a fresh `bash -c` in the working directory, in its own process group, with
stdin from /dev/null. On timeout (or interruption) the whole process group is killed. Output (stdout
and stderr merged) is capped: the head and tail are kept and an explicit marker says how much was
elided. Provider credential variables are removed from the command's environment.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import select
import signal
import stat
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tinyagent.types import ToolCall, ToolSpec

DEFAULT_TOOL_TIMEOUT = 60.0
DEFAULT_OUTPUT_CAP = 20_000  # bytes of tool output shown to the model
MAX_READ_BYTES = 2 * 1024 * 1024  # files larger than this are refused by read_file/edit_file
SCRUBBED_ENV = (
    "OPENAI_API_KEY",
    "OPENROUTER_API_KEY",
    "ANTHROPIC_API_KEY",
    "CODEX_API_KEY",
    "OLLAMA_API_KEY",
)
EXTRA_ENV = {
    "PAGER": "cat",
    "MANPAGER": "cat",
    "GIT_PAGER": "cat",
    "PIP_PROGRESS_BAR": "off",
    "TQDM_DISABLE": "1",
}

TOOL_SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="bash",
        description=(
            "Run a bash command in the working directory and return its exit code and combined "
            "stdout/stderr. Each call runs in a fresh shell: `cd` and exported variables do not "
            "persist between calls. Long output is truncated in the middle. Commands are killed "
            "after the tool timeout."
        ),
        parameters={
            "type": "object",
            "properties": {"command": {"type": "string", "description": "The bash command to run."}},
            "required": ["command"],
            "additionalProperties": False,
        },
    ),
    ToolSpec(
        name="read_file",
        description=(
            "Read a UTF-8 text file (path relative to the working directory). Optionally give a "
            "1-based start line and a maximum number of lines."
        ),
        parameters={
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "offset": {"type": "integer", "minimum": 1, "description": "First line (1-based)."},
                "limit": {"type": "integer", "minimum": 1, "description": "Maximum number of lines."},
            },
            "required": ["path"],
            "additionalProperties": False,
        },
    ),
    ToolSpec(
        name="write_file",
        description=(
            "Create or overwrite a text file with the given content (path relative to the working "
            "directory). Missing parent directories are created."
        ),
        parameters={
            "type": "object",
            "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
            "required": ["path", "content"],
            "additionalProperties": False,
        },
    ),
    ToolSpec(
        name="edit_file",
        description=(
            "Replace exactly one occurrence of old_text with new_text in a file. Fails without "
            "changing the file if old_text is absent or occurs more than once; include more "
            "surrounding context to make it unique."
        ),
        parameters={
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "old_text": {"type": "string", "description": "Exact text to replace (non-empty)."},
                "new_text": {"type": "string"},
            },
            "required": ["path", "old_text", "new_text"],
            "additionalProperties": False,
        },
    ),
    ToolSpec(
        name="submit",
        description=(
            "Finish the task and hand back the final answer. Call it once the task is done; the run "
            "ends and tool calls after it in the same turn are not executed."
        ),
        parameters={
            "type": "object",
            "properties": {"answer": {"type": "string", "description": "The final answer for the user."}},
            "required": ["answer"],
            "additionalProperties": False,
        },
    ),
)


def toolset_sha256(specs: Sequence[ToolSpec]) -> str:
    """SHA-256 of the canonical JSON (sorted keys, no whitespace) of the tool specs, in order."""
    canonical = json.dumps(
        [spec.model_dump(mode="json") for spec in specs],
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_text(text: str) -> str:
    """`text` with lone surrogates (decoded from JSON escapes like \\ud800) replaced by U+FFFD.

    Such code points cannot be encoded as UTF-8, so they could neither be saved in the trajectory
    nor passed to the OS as a path or command.
    """
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)


def clean_json_value(value: Any) -> Any:
    """Apply `clean_text` to every string (keys included) of a decoded JSON value."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, list):
        return [clean_json_value(item) for item in value]
    if isinstance(value, dict):
        return {clean_json_value(key): clean_json_value(item) for key, item in value.items()}
    return value


class ToolInfrastructureError(RuntimeError):
    """The harness could not execute a tool at all (not the model's fault). Ends the run (ToolError)."""


class _BadArguments(ValueError):
    pass


@dataclass(frozen=True)
class ToolResult:
    """The single observation returned for one tool call."""

    content: str
    is_error: bool = False
    submission: str | None = None  # set only by a successful submit


def cap_output(data: bytes, cap: int) -> str:
    """Decode output as UTF-8 (bad bytes replaced), keeping head and tail within `cap` bytes plus a marker."""
    if len(data) <= cap:
        return data.decode("utf-8", errors="replace")
    head = cap // 2
    tail = cap - head
    elided = len(data) - head - tail
    marker = f"\n[... {elided} bytes elided: output exceeded the {cap}-byte cap ...]\n"
    return (
        data[:head].decode("utf-8", errors="replace")
        + marker
        + data[len(data) - tail :].decode("utf-8", errors="replace")
    )


class _CappedOutput:
    """Collects a command's output, keeping the first and last `cap` bytes and counting the total."""

    def __init__(self, cap: int) -> None:
        self._cap = cap
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self._cap - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > self._cap:
                del self.tail[: len(self.tail) - self._cap]

    def text(self) -> str:
        kept = len(self.head) + len(self.tail)
        if self.total <= kept:
            return cap_output(bytes(self.head + self.tail), self._cap)
        # Some middle bytes were never stored: rebuild head + tail with the true elided count.
        head_part = bytes(self.head[: self._cap // 2])
        tail_part = bytes(self.tail[len(self.tail) - (self._cap - self._cap // 2) :])
        elided = self.total - len(head_part) - len(tail_part)
        marker = f"\n[... {elided} bytes elided: output exceeded the {self._cap}-byte cap ...]\n"
        return head_part.decode("utf-8", "replace") + marker + tail_part.decode("utf-8", "replace")


class Toolbox:
    """Executes tool calls in `cwd`. One instance per run; `interrupt()` kills the running command."""

    def __init__(
        self,
        cwd: str | os.PathLike[str],
        *,
        timeout: float = DEFAULT_TOOL_TIMEOUT,
        output_cap: int = DEFAULT_OUTPUT_CAP,
        specs: Sequence[ToolSpec] = TOOL_SPECS,
    ) -> None:
        self.cwd = Path(cwd)
        self.timeout = timeout
        self.output_cap = output_cap
        self.specs = tuple(specs)
        self._proc: subprocess.Popen[bytes] | None = None
        self._interrupted = False

    # -- public -------------------------------------------------------------------------------
    def run(self, call: ToolCall) -> ToolResult:
        """Execute one call and return its single result. Raises ToolInfrastructureError only."""
        handlers = {
            "bash": self._bash,
            "read_file": self._read_file,
            "write_file": self._write_file,
            "edit_file": self._edit_file,
            "submit": self._submit,
        }
        known = {spec.name for spec in self.specs}
        if call.name not in handlers or call.name not in known:
            return ToolResult(
                f"error: unknown tool {clean_text(call.name)!r}; available: {', '.join(sorted(known))}", True
            )
        try:
            arguments = json.loads(call.arguments or "{}")
        except json.JSONDecodeError as exc:
            return ToolResult(f"error: arguments are not valid JSON ({exc.msg} at position {exc.pos})", True)
        except RecursionError:
            return ToolResult("error: arguments are nested too deeply", True)
        if not isinstance(arguments, dict):
            return ToolResult("error: arguments must be a JSON object", True)
        arguments = clean_json_value(arguments)
        if not self.cwd.is_dir():
            raise ToolInfrastructureError(f"working directory is no longer available: {self.cwd}")
        try:
            return handlers[call.name](arguments)
        except _BadArguments as exc:
            return ToolResult(f"error: {exc}", True)
        except ValueError as exc:  # e.g. a NUL byte in a command: the model's input, not the harness
            return ToolResult(f"error: invalid argument ({clean_text(str(exc))})", True)

    def interrupt(self) -> None:
        """Kill the running command's process group (safe to call from a signal handler)."""
        self._interrupted = True
        proc = self._proc
        if proc is not None:
            _kill_group(proc)

    # -- argument helpers ---------------------------------------------------------------------
    @staticmethod
    def _str(arguments: dict[str, Any], key: str, *, allow_empty: bool = True) -> str:
        value = arguments.get(key)
        if not isinstance(value, str):
            raise _BadArguments(f"argument {key!r} is required and must be a string")
        if not allow_empty and not value:
            raise _BadArguments(f"argument {key!r} must not be empty")
        return value

    @staticmethod
    def _int(arguments: dict[str, Any], key: str) -> int | None:
        value = arguments.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise _BadArguments(f"argument {key!r} must be a positive integer")
        return value

    def _path(self, arguments: dict[str, Any]) -> Path:
        raw = self._str(arguments, "path", allow_empty=False)
        if "\x00" in raw:
            raise _BadArguments("argument 'path' contains a NUL byte")
        return self.cwd / raw  # absolute paths stay absolute

    def _read_text(self, path: Path) -> str:
        try:
            info = path.stat()
        except FileNotFoundError as exc:
            raise _BadArguments(f"file not found: {path}") from exc
        except OSError as exc:
            raise _BadArguments(f"cannot access {path}: {exc.strerror}") from exc
        if stat.S_ISDIR(info.st_mode):
            raise _BadArguments(f"{path} is a directory")
        if not stat.S_ISREG(info.st_mode):
            raise _BadArguments(f"{path} is not a regular file (device, FIFO or socket); use bash")
        size = info.st_size
        if size > MAX_READ_BYTES:
            raise _BadArguments(f"{path} is {size} bytes; the limit is {MAX_READ_BYTES} (use bash: head/sed)")
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise _BadArguments(f"cannot read {path}: {exc.strerror}") from exc
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _BadArguments(f"{path} is not UTF-8 text (byte offset {exc.start})") from exc

    # -- tools ----------------------------------------------------------------------------------
    def _bash(self, arguments: dict[str, Any]) -> ToolResult:
        command = self._str(arguments, "command", allow_empty=False)
        env = _command_environment()
        if self._interrupted:
            return ToolResult("error: not executed: the run was interrupted", True)
        try:
            proc = subprocess.Popen(
                ["bash", "-c", command],
                cwd=self.cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as exc:
            raise ToolInfrastructureError(f"cannot start bash: {exc.strerror or exc}") from exc
        self._proc = proc
        if self._interrupted:  # a signal arrived while the process was starting
            _kill_group(proc)
        output_buffer = _CappedOutput(self.output_cap)
        try:
            timed_out, lingering = _collect(proc, output_buffer, self.timeout)
        finally:
            self._proc = None
            if proc.stdout is not None:
                proc.stdout.close()
        output = output_buffer.text()
        if self._interrupted:
            return ToolResult(f"error: command interrupted; process group killed\n{output}", True)
        if timed_out:
            return ToolResult(
                f"error: command timed out after {self.timeout:g} s; process group killed\n{output}", True
            )
        note = "\n[background processes holding the output were killed]" if lingering else ""
        return ToolResult(f"exit code: {proc.returncode}\n{output}{note}")

    def _read_file(self, arguments: dict[str, Any]) -> ToolResult:
        path = self._path(arguments)
        offset = self._int(arguments, "offset")
        limit = self._int(arguments, "limit")
        text = self._read_text(path)
        if offset is not None or limit is not None:
            lines = text.splitlines(keepends=True)
            start = (offset or 1) - 1
            end = start + limit if limit is not None else len(lines)
            text = "".join(lines[start:end])
        return ToolResult(cap_output(text.encode("utf-8"), self.output_cap))

    def _write_file(self, arguments: dict[str, Any]) -> ToolResult:
        path = self._path(arguments)
        content = self._str(arguments, "content")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content, encoding="utf-8")
        except OSError as exc:
            raise _BadArguments(f"cannot write {path}: {exc.strerror}") from exc
        return ToolResult(f"wrote {len(content.encode('utf-8'))} bytes to {arguments['path']}")

    def _edit_file(self, arguments: dict[str, Any]) -> ToolResult:
        path = self._path(arguments)
        old = self._str(arguments, "old_text", allow_empty=False)
        new = self._str(arguments, "new_text")
        text = self._read_text(path)
        count = text.count(old)
        if count == 0:
            raise _BadArguments(f"old_text not found in {arguments['path']}; the file is unchanged")
        if count > 1:
            raise _BadArguments(
                f"old_text occurs {count} times in {arguments['path']}; add context to make it unique "
                "(the file is unchanged)"
            )
        try:
            path.write_text(text.replace(old, new, 1), encoding="utf-8")
        except OSError as exc:
            raise _BadArguments(f"cannot write {path}: {exc.strerror}") from exc
        return ToolResult(f"replaced 1 occurrence in {arguments['path']}")

    def _submit(self, arguments: dict[str, Any]) -> ToolResult:
        answer = self._str(arguments, "answer")
        return ToolResult("submitted", submission=answer)


LINGER_GRACE_S = 2.0  # how long output may stay open after the command exited (background children)


def _collect(proc: subprocess.Popen[bytes], output: _CappedOutput, timeout: float) -> tuple[bool, bool]:
    """Read `proc`'s output and wait for it to exit, in this thread; returns (timed_out, lingering).

    One poll loop watches the output pipe and (on Linux) a pidfd, so there is no reader thread and
    no polling delay. The command must exit within `timeout` seconds (<= 0: no limit), else its
    process group is killed. Output still held open LINGER_GRACE_S after the exit (background
    children) gets the group killed too (`lingering`), and at most one more grace period to end.
    """
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    try:
        pidfd: int | None = os.pidfd_open(proc.pid)  # type: ignore[attr-defined]
    except (AttributeError, OSError):
        pidfd = None
    if pidfd is not None:
        poller.register(pidfd, select.POLLIN)
    deadline = time.monotonic() + timeout if timeout > 0 else None
    grace: float | None = None
    timed_out = lingering = eof = exited = False
    try:
        while not (eof and exited):
            now = time.monotonic()
            if not exited:
                if deadline is not None and now >= deadline:
                    timed_out = True
                    _kill_group(proc)
                    proc.wait()
                    exited = True
                    continue
                wait_until = deadline
            else:
                if grace is None:
                    grace = now + LINGER_GRACE_S
                if now >= grace:
                    if lingering:
                        break
                    lingering = True  # background children still hold the pipe: stop them
                    _kill_group(proc)
                    grace = now + LINGER_GRACE_S
                wait_until = grace
            wait_ms = -1 if wait_until is None else max(1, math.ceil((wait_until - now) * 1000))
            if pidfd is None and not exited:
                wait_ms = 50 if wait_ms < 0 else min(wait_ms, 50)  # no pidfd: check the exit now and then
            for ready, _event in poller.poll(wait_ms):
                if ready == fd:
                    chunk = os.read(fd, 65536)
                    if chunk:
                        output.feed(chunk)
                    else:
                        eof = True
                        poller.unregister(fd)
                        if not exited and proc.poll() is not None:  # usually gone already: skip a poll
                            exited = True
                            if pidfd is not None:
                                poller.unregister(pidfd)
                elif ready == pidfd and not exited:
                    proc.wait()
                    exited = True
                    poller.unregister(pidfd)
            if pidfd is None and not exited and proc.poll() is not None:
                exited = True
    finally:
        if pidfd is not None:
            os.close(pidfd)
    if not exited:
        proc.wait()
    return timed_out, lingering


_SCRUBBED_ENV_B = frozenset(os.fsencode(name) for name in SCRUBBED_ENV)
_EXTRA_ENV_B = {os.fsencode(k): os.fsencode(v) for k, v in EXTRA_ENV.items()}


def _command_environment() -> dict[Any, Any]:
    """This process's environment minus provider credentials, plus EXTRA_ENV, read now.

    Taken as bytes where the platform keeps them (no decode here, no re-encode in Popen).
    """
    if os.supports_bytes_environ:
        env: dict[Any, Any] = {k: v for k, v in os.environb.items() if k not in _SCRUBBED_ENV_B}
        env.update(_EXTRA_ENV_B)
        return env
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED_ENV}
    env.update(EXTRA_ENV)
    return env


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
