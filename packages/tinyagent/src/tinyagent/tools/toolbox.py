"""Toolbox: runs the model's tool calls (bash, read_file, write_file, edit_file, submit), one result each.

`Toolbox.run(call)` always returns exactly one `ToolResult` per call, errors included; it never raises
for anything the model did wrong (bad JSON, unknown tool, missing file, non-unique edit). It raises
`ToolInfrastructureError` only when the harness itself cannot run tools (for example the working
directory vanished or bash cannot be started); the loop then ends the run with status ToolError.

bash runs each command in a fresh `bash -c` in the working directory, in its own process group, with
stdin from /dev/null. On timeout (or interruption) the whole process group is killed. Output (stdout
and stderr merged) is capped: the head and tail are kept and an explicit marker says how much was
elided. Provider credential variables are removed from the command's environment. The specs live in
`specs.py`, the command's process handling in `process.py`, the cap in `capping.py`.
"""

from __future__ import annotations

import json
import os
import secrets
import stat
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from tinyagent.defaults import DEFAULT_OUTPUT_CAP, DEFAULT_TOOL_TIMEOUT
from tinyagent.errors import TinyAgentError
from tinyagent.tools.capping import CappedOutput, cap_output
from tinyagent.tools.process import collect, kill_group, marked_environment, start_watchdog, sweep
from tinyagent.tools.specs import TOOL_SPECS
from tinyagent.tools.sweeper import become_subreaper, sweep_tree
from tinyagent.tools.text import clean_json_value, clean_text
from tinyagent.types import ToolCall, ToolSpec

if TYPE_CHECKING:
    from tinyagent.tools.gate import CommandGate

MAX_READ_BYTES = 2 * 1024 * 1024  # files larger than this are refused by read_file/edit_file
NOT_DURABLE = "error: not executed: the reply could not be saved before its tools ran"


class ToolInfrastructureError(TinyAgentError, RuntimeError):
    """The harness could not execute a tool at all (not the model's fault). Ends the run (ToolError)."""


class _BadArguments(ValueError):
    pass


@dataclass(frozen=True)
class ToolResult:
    """The single observation returned for one tool call."""

    content: str
    is_error: bool = False
    submission: str | None = None  # set only by a successful submit


class ExternalTools(Protocol):
    """Tools served elsewhere (the run's MCP servers): which names they handle, and one call."""

    def handles(self, name: str) -> bool: ...

    def call(self, name: str, arguments: dict[str, Any]) -> ToolResult: ...

    def interrupt(self) -> None: ...


class Toolbox:
    """Executes tool calls in `cwd`. One instance per run; `interrupt()` kills the running command."""

    def __init__(
        self,
        cwd: str | os.PathLike[str],
        *,
        timeout: float = DEFAULT_TOOL_TIMEOUT,
        output_cap: int = DEFAULT_OUTPUT_CAP,
        specs: Sequence[ToolSpec] = TOOL_SPECS,
        external: ExternalTools | None = None,
    ) -> None:
        self.cwd = Path(cwd)
        self.timeout = timeout
        self.output_cap = output_cap
        self.specs = tuple(specs)
        self.external = external
        self._proc: subprocess.Popen[bytes] | None = None
        self._interrupted = False
        self._mark = f"{os.getpid()}-{secrets.token_hex(6)}"  # TINYAGENT_COMMAND=<mark>:<n> per command
        self._commands = 0
        self._watchdog: subprocess.Popen[bytes] | None = None
        self._subreaper = False
        self._bash_path: str | None = None
        self._gates: bool | None = None  # whether this bash honours the effects gate (probed once)
        self.effects_gate: Callable[[], bool] | None = None
        """Set by the loop for one tool batch: returns once the batch's reply is durable, False when the
        batch must not run. Each call waits for it before its first effect (bash: see `tools/gate.py`)."""

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
        external = self.external is not None and self.external.handles(call.name) and call.name in known
        if not external and (call.name not in handlers or call.name not in known):
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
        if call.name not in ("bash", "submit", "read_file") and not self._pass_gate():
            return ToolResult(NOT_DURABLE, True)
        if external:
            assert self.external is not None
            return self.external.call(call.name, arguments)
        try:
            return handlers[call.name](arguments)
        except _BadArguments as exc:
            return ToolResult(f"error: {exc}", True)
        except ValueError as exc:  # e.g. a NUL byte in a command: the model's input, not the harness
            return ToolResult(f"error: invalid argument ({clean_text(str(exc))})", True)

    def interrupt(self) -> None:
        """Kill the running command's process group (safe to call from a signal handler)."""
        self._interrupted = True
        if self.external is not None:
            self.external.interrupt()
        proc = self._proc
        if proc is not None:
            kill_group(proc)

    def _interrupt_requested(self) -> bool:
        """Read afresh each time: `interrupt()` may run (from a signal handler) at any moment."""
        return self._interrupted

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
        self._commands += 1
        mark = f"{self._mark}:{self._commands}"
        env = marked_environment(mark)
        if self._watchdog is None:  # sweeps every command's processes if tinyagent is killed
            self._watchdog = start_watchdog(self._mark)
            self._subreaper = become_subreaper()  # escaped processes stay in our tree: cheap sweeps
        if self._interrupted:
            return ToolResult("error: not executed: the run was interrupted", True)
        gate = self._command_gate(env)
        if gate is None and not self._pass_gate():
            return ToolResult(NOT_DURABLE, True)
        try:
            proc = subprocess.Popen(
                [self._bash_executable(), "-c", command],
                cwd=self.cwd,
                env=gate.environment(env) if gate is not None else env,
                pass_fds=gate.inherited if gate is not None else (),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as exc:
            if gate is not None:
                gate.abandon()
            raise ToolInfrastructureError(f"cannot start bash: {exc.strerror or exc}") from exc
        self._proc = proc
        refused = gate is not None and not self._release(gate)
        if self._interrupt_requested():  # a signal arrived while the process was starting
            kill_group(proc)
        output_buffer = CappedOutput(self.output_cap)
        try:
            timed_out, lingering = collect(proc, output_buffer, self.timeout)
        finally:
            self._proc = None
            # at every ending: what left the process group (setsid, daemons) ends too
            if self._subreaper:
                sweep_tree(mark, skip=self._helpers())
            else:
                sweep(mark)
            if proc.stdout is not None:
                proc.stdout.close()
        output = output_buffer.text()
        if refused:
            return ToolResult(NOT_DURABLE, True)
        if self._interrupt_requested():
            return ToolResult(f"error: command interrupted; process group killed\n{output}", True)
        if timed_out:
            return ToolResult(
                f"error: command timed out after {self.timeout:g} s; process group killed\n{output}", True
            )
        note = "\n[background processes holding the output were killed]" if lingering else ""
        return ToolResult(f"exit code: {proc.returncode}\n{output}{note}")

    def _pass_gate(self) -> bool:
        """Wait until this batch's reply is durable; False: the batch must not run."""
        gate = self.effects_gate
        return True if gate is None else gate()

    def _command_gate(self, env: dict[Any, Any]) -> CommandGate | None:
        """A gate for the next command while its reply is still being made durable (else None)."""
        if self.effects_gate is None or b"BASH_ENV" in env or "BASH_ENV" in env:
            return None
        from tinyagent.tools.gate import CommandGate, gate_honoured  # only once a sync is pending

        if self._gates is None:
            self._gates = gate_honoured(self._bash_executable(), env)
        return CommandGate() if self._gates else None

    def _release(self, gate: CommandGate) -> bool:
        """Open `gate` once the reply is durable (True), or end it so the command never runs (False)."""
        gate.started()
        if self._pass_gate():
            gate.open()
            return True
        gate.refuse()
        return False

    def _helpers(self) -> frozenset[int]:
        """This run's own child processes that run no command: the watchdog (a sweep skips it)."""
        watchdog = self._watchdog
        return (
            frozenset() if watchdog is None or watchdog.returncode is not None else frozenset({watchdog.pid})
        )

    def _bash_executable(self) -> str:
        """`bash` as the commands' PATH finds it, looked up once per run (Popen would search PATH, with
        one failed exec per earlier directory, for every command); plain "bash" when it is not found."""
        if self._bash_path is None:
            self._bash_path = "bash"
            for directory in os.environ.get("PATH", os.defpath).split(os.pathsep):
                if not os.path.isabs(directory):  # relative to each command's cwd: leave it to Popen
                    break
                candidate = os.path.join(directory, "bash")
                if os.access(candidate, os.X_OK) and os.path.isfile(candidate):
                    self._bash_path = candidate
                    break
        return self._bash_path

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
