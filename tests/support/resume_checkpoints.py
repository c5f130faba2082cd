"""Build resumable tinyagent checkpoints in memory for the resume tests.

`make_checkpoint` returns a `Trajectory` that `tinyagent.resume.validate.validate_checkpoint` accepts: system
prompt, task, then the given assistant turns with their tool results, counters consistent, resume
metadata filled with the real tool-set digest. Tests corrupt its JSON form to exercise refusals.
`SECRET` is planted in the task and every tool output so tests can assert no diagnostic leaks it.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tinyagent.tools.specs import TOOL_SPECS, toolset_sha256
from tinyagent.trajectory.models import ExitStatus, Limits, ResumeMetadata, Timing, Totals, Trajectory
from tinyagent.types import Message, ToolCall

SECRET = "SECRET-TRANSCRIPT-7f3a"


@dataclass
class Call:
    """One tool call of an assistant turn and the result the harness recorded for it."""

    id: str
    name: str = "bash"
    arguments: dict[str, Any] = field(default_factory=lambda: {"command": "ls"})
    result: str = f"output {SECRET}"
    is_error: bool = False


def turn_messages(calls: Sequence[Call], text: str | None = None) -> list[Message]:
    """An assistant message with `calls` followed by one tool result per call, in order."""
    assistant = Message(
        role="assistant",
        content=text,
        tool_calls=[ToolCall(id=c.id, name=c.name, arguments=json.dumps(c.arguments)) for c in calls],
    )
    results = [
        Message(role="tool", content=c.result, tool_call_id=c.id, name=c.name, is_error=c.is_error)
        for c in calls
    ]
    return [assistant, *results]


def make_checkpoint(
    turns: Sequence[Sequence[Call]] = ((Call("call_1"),), (Call("call_1"), Call("call_2"))),
    *,
    cwd: str = "/tmp/project",
    task: str = f"fix the failing test {SECRET}",
    system_prompt: str = "You are tinyagent.",
    agents_md: str = "off",
    instructions_sha256: str | None = None,
    model: str = "gpt-test",
    provider: str = "openai",
    status: ExitStatus = ExitStatus.STEP_LIMIT,
    extra_steps: int = 0,
) -> Trajectory:
    """A valid, resumable checkpoint with the given turns (default: repeated id across two turns)."""
    messages = [Message(role="system", content=system_prompt), Message(role="user", content=task)]
    for calls in turns:
        messages.extend(turn_messages(calls))
    steps = len(turns) + extra_steps
    digest = instructions_sha256 or hashlib.sha256(system_prompt.encode()).hexdigest()
    return Trajectory(
        tinyagent_version="0.1.0",
        task=task,
        provider=provider,
        model=model,
        system_prompt=system_prompt,
        messages=messages,
        tools=list(TOOL_SPECS),
        totals=Totals(
            steps=steps, input_tokens=100 * steps, output_tokens=10 * steps, cost_usd=0.001 * steps
        ),
        limits=Limits(step_limit=steps),
        exit_status=status,
        timing=Timing(
            started_at="2026-11-30T00:00:00Z", ended_at="2026-11-30T00:01:00Z", elapsed_seconds=60.0
        ),
        resume=ResumeMetadata(
            cwd=cwd,
            agents_md=agents_md,  # type: ignore[arg-type]
            instructions_sha256=digest,
            toolset_sha256=toolset_sha256(TOOL_SPECS),
        ),
    )


def checkpoint_bytes(trajectory: Trajectory) -> bytes:
    """The on-disk form, exactly as tinyagent saves it."""
    return trajectory.model_dump_json(indent=1).encode("utf-8") + b"\n"


def checkpoint_document(trajectory: Trajectory) -> dict[str, Any]:
    """The parsed JSON form, for structural corruption."""
    return json.loads(checkpoint_bytes(trajectory))


# ------------------------------------------------------------------------------------------------
# Running the real CLI

API_KEY = "sk-test-KEY-never-in-files-91c2"


def cli_env(root: Path, **extra: str) -> dict[str, str]:
    """A minimal, isolated environment: temp HOME/XDG dirs, fake keys, nothing from the host."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(root / "home"),
        "XDG_CONFIG_HOME": str(root / "xdg-config"),
        "XDG_STATE_HOME": str(root / "xdg-state"),
        "OPENAI_API_KEY": API_KEY,
        "ANTHROPIC_API_KEY": API_KEY,
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    env.update(extra)
    return env


def bash_call(marker: str, call_id: str | None = None) -> dict[str, Any]:
    """A stub/scripted tool call that appends `marker` to calls.log and echoes it (with SECRET)."""
    call: dict[str, Any] = {
        "name": "bash",
        "arguments": {"command": f"echo {marker} | tee -a calls.log; echo {SECRET}"},
    }
    if call_id is not None:
        call["id"] = call_id
    return call


def submit_call(answer: str = "all done", call_id: str | None = None) -> dict[str, Any]:
    call: dict[str, Any] = {"name": "submit", "arguments": {"answer": answer}}
    if call_id is not None:
        call["id"] = call_id
    return call


def executed_markers(project: Path) -> list[str]:
    """The markers the bash tool actually executed in `project`, in order."""
    log = project / "calls.log"
    return log.read_text(encoding="utf-8").split() if log.exists() else []


def assert_refused(
    result: subprocess.CompletedProcess[str],
    category: str,
    *,
    source: Path | None = None,
    source_bytes: bytes | None = None,
    output: Path | None = None,
) -> str:
    """A clean refusal: exit 2, exactly one stderr line naming `category`, no leak, nothing written."""
    assert result.returncode == 2, (result.returncode, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"tinyagent: cannot resume: {category}: "), lines[0]
    assert "Traceback" not in result.stderr
    assert SECRET not in result.stderr and API_KEY not in result.stderr
    assert result.stdout == ""
    if source is not None and source_bytes is not None:
        assert source.read_bytes() == source_bytes
    if output is not None:
        assert not os.path.lexists(output)
    return lines[0]
