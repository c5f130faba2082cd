"""Helpers for tinyagent tests: scripted-model scripts and real `tinyagent` CLI subprocesses."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def call(name: str, call_id: str | None = None, **arguments: Any) -> dict[str, Any]:
    """A scripted tool call."""
    entry: dict[str, Any] = {"name": name, "arguments": arguments}
    if call_id is not None:
        entry["id"] = call_id
    return entry


def reply(*calls: dict[str, Any], content: str | None = None, **extra: Any) -> dict[str, Any]:
    """A scripted assistant reply with the given tool calls."""
    return {"content": content, "tool_calls": list(calls), **extra}


def write_script(path: Path, replies: Sequence[dict[str, Any]], **extra: Any) -> Path:
    """Write a ScriptedProvider script file and return its path."""
    path.write_text(json.dumps({"replies": list(replies), **extra}), encoding="utf-8")
    return path


def tinyagent_cmd(*args: object) -> list[str]:
    """The command line that runs the installed CLI module with this interpreter."""
    return [sys.executable, "-m", "tinyagent", *(str(arg) for arg in args)]


def scripted_argv(script: Path, work: Path, out: Path, *extra: object, task: str = "t") -> list[object]:
    """Arguments of one scripted-provider run of ``script`` in ``work``, saving the trajectory to ``out``."""
    return ["-t", task, "--provider", "scripted", "--base-url", script, "--cwd", work, "-o", out, *extra]


def run_cli(
    args: Sequence[object],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float = 60,
    stdin: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run `tinyagent ARGS` to completion and capture stdout/stderr."""
    return subprocess.run(
        tinyagent_cmd(*args),
        cwd=cwd,
        env=dict(env),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def start_cli(args: Sequence[object], *, cwd: Path, env: Mapping[str, str]) -> subprocess.Popen[str]:
    """Start `tinyagent ARGS` with stdout and stderr piped (text), for tests that signal or watch it."""
    return subprocess.Popen(
        tinyagent_cmd(*args),
        cwd=cwd,
        env=dict(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def load_json(path: Path) -> dict[str, Any]:
    """Parse a JSON file."""
    return json.loads(path.read_text(encoding="utf-8"))
