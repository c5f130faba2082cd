"""Fixtures for the hook tests: a project directory (a git root) and a runner of real hook subprocesses."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from support.env import hermetic_env

PROJECT_DIR_ENVS = ("CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR", "QWEN_PROJECT_DIR")


@dataclass
class HookRun:
    code: int
    stdout: str
    stderr: str

    def context(self) -> str:
        """The injected ``additionalContext`` (the output must be one JSON object)."""
        return str(json.loads(self.stdout)["hookSpecificOutput"]["additionalContext"])


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """``<tmp>/my-app``: a git root whose routed store is ``my-app/.graymatter`` and agent ``my-app``."""
    root = tmp_path / "my-app"
    (root / ".git").mkdir(parents=True)
    return root


def _hook_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """In-process hooks unless ``extra`` says otherwise: the warm path has its own tests (test_warm_hooks),
    with a private socket directory each, so no test reaches or launches the user's warm server."""
    env = hermetic_env(tmp_path / "state", GRAYMATTER_MCP_WARM="0")
    for name in PROJECT_DIR_ENVS:
        env.pop(name, None)
    env.update(extra)
    return env


@pytest.fixture
def hook_env(tmp_path: Path) -> Callable[..., dict[str, str]]:
    """The hermetic environment without any client's project-root variable, plus ``extra``."""
    return lambda **extra: _hook_env(tmp_path, **extra)


@pytest.fixture
def run_hook(tmp_path: Path, project: Path) -> Callable[..., HookRun]:
    """Run ``python -m graymatter [PRE...] hook CLIENT EVENT [ARGS...]`` with ``payload`` on stdin."""

    def run(
        client: str,
        event: str,
        payload: dict[str, Any] | bytes | None = None,
        *args: str,
        pre: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
    ) -> HookRun:
        if isinstance(payload, dict):
            data = json.dumps({"cwd": str(project), **payload}).encode()
        else:
            data = payload or b""
        proc = subprocess.run(
            [sys.executable, "-m", "graymatter", *pre, "hook", client, event, *args],
            input=data,
            capture_output=True,
            timeout=60,
            env=env or _hook_env(tmp_path),
            cwd=cwd or project,
        )
        return HookRun(proc.returncode, proc.stdout.decode(), proc.stderr.decode())

    return run


def _log_records(store: Path) -> list[dict[str, Any]]:
    path = store / "hooks.log"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture
def log_records() -> Callable[[Path], list[dict[str, Any]]]:
    """Every line of a store's hook log, parsed."""
    return _log_records
