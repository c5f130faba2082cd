"""stderr reporting: progress lines, warnings, errors and the closing summary.

Everything here goes to stderr as plain text, one prefixed line per event, with state spelled out in
words (no colour, no cursor control), so it reads the same in a terminal, a log file or a CI job.
stdout is reserved for the final answer and is written by the CLI, never here. `quiet` hides progress
only: warnings, errors and the closing summary are always printed.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from tinyagent.trajectory.models import Trajectory
    from tinyagent.types import ToolCall

PREFIX = "tinyagent:"
PREVIEW_CHARS = 100


def write_stderr(line: str) -> None:
    """Write one line to stderr as is; a closed or broken stderr is ignored."""
    _write_line(sys.stderr, line)


def _write_line(stream: TextIO, line: str) -> None:
    try:
        stream.write(line + "\n")
        stream.flush()
    except (OSError, ValueError):
        pass  # a closed stderr must never break the run


def preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    """One line, at most `limit` characters, for progress output."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _call_preview(call: ToolCall) -> str:
    import json

    try:
        arguments = json.loads(call.arguments or "{}")
    except json.JSONDecodeError:
        return f"{call.name} (unparsable arguments)"
    if not isinstance(arguments, dict):
        return call.name
    if call.name == "bash":
        detail = str(arguments.get("command", ""))
    elif call.name == "submit":
        detail = "final answer"
    else:
        detail = str(arguments.get("path", ""))
    return f"{call.name}: {preview(detail)}" if detail else call.name


class Reporter:
    """Writes progress and the summary to stderr (or any text stream)."""

    def __init__(self, stream: TextIO | None = None, *, quiet: bool = False) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.quiet = quiet
        self._warned: set[str] = set()

    def _write(self, line: str) -> None:
        _write_line(self.stream, f"{PREFIX} {line}")

    def progress(self, line: str) -> None:
        """A progress line (hidden with --quiet)."""
        if not self.quiet:
            self._write(line)

    def warning(self, line: str, *, once_key: str | None = None) -> None:
        """A warning (always shown; with `once_key`, only the first time)."""
        if once_key is not None:
            if once_key in self._warned:
                return
            self._warned.add(once_key)
        self._write(f"warning: {line}")

    def error(self, line: str) -> None:
        """An error line (always shown)."""
        self._write(f"error: {line}")

    def step_started(self, step: int, step_limit: int) -> None:
        limit = f"/{step_limit}" if step_limit > 0 else ""
        self.progress(f"step {step}{limit}: querying the model")

    def tool_call(self, step: int, call: ToolCall) -> None:
        self.progress(f"step {step}: {_call_preview(call)}")

    def tool_result(self, step: int, name: str, is_error: bool) -> None:
        if is_error:
            self.progress(f"step {step}: {name} returned an error")

    def summary(self, trajectory: Trajectory, output_path: str | None, *, save_failed: bool) -> None:
        """The closing summary: status, steps, tokens, cache, cost, elapsed, trajectory path."""
        totals = trajectory.totals
        status = trajectory.exit_status.value
        detail = f" ({trajectory.exit_detail})" if trajectory.exit_detail else ""
        self._write(f"finished: status {status}{detail}")
        self._write(
            f"steps {totals.steps}, elapsed {trajectory.timing.elapsed_seconds:.2f} s, "
            f"tokens: input {totals.input_tokens:,} (uncached), output {totals.output_tokens:,}, "
            f"cache read {totals.cache_read_tokens:,}, cache write {totals.cache_write_tokens:,}"
        )
        if totals.cost_known:
            self._write(f"cost ${totals.cost_usd:.4f}")
        else:
            self._write(
                f"cost at least ${totals.cost_usd:.4f} (some steps used a model with an unknown price)"
            )
        if output_path is not None:
            state = "NOT fully saved (see errors above)" if save_failed else "saved"
            self._write(f"trajectory {state}: {output_path}")
