"""A fresh HOME and a git project, and ``graymatter`` run as a real subprocess inside them."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from support.env import hermetic_env

_CLIENT_VARIABLES = (
    "CLAUDE_CONFIG_DIR",
    "CODEX_HOME",
    "CLAUDE_PROJECT_DIR",
    "GEMINI_PROJECT_DIR",
    "QWEN_PROJECT_DIR",
    "APPDATA",
)


@dataclass
class Done:
    """A finished command: exit code and output."""

    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        """stdout as JSON."""
        return json.loads(self.stdout)


@dataclass
class Wiring:
    """A fresh HOME, a git project, and a runner for graymatter inside them."""

    root: Path
    home: Path
    project: Path
    env: dict[str, str]

    def run(self, *args: str, cwd: Path | None = None) -> Done:
        """``python -m graymatter ARGS`` in the project (or ``cwd``)."""
        done = subprocess.run(
            [sys.executable, "-m", "graymatter", *args],
            cwd=cwd or self.project,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        return Done(done.returncode, done.stdout, done.stderr)

    def snapshot(self) -> dict[str, bytes | None]:
        """Every file (with its bytes) and directory (None) under the test root, .git excluded."""
        found: dict[str, bytes | None] = {}
        for path in sorted(self.root.rglob("*")):
            if ".git" in path.relative_to(self.root).parts:
                continue
            key = path.relative_to(self.root).as_posix()
            found[key] = path.read_bytes() if path.is_file() else None
        return found


@pytest.fixture
def wiring(tmp_path: Path) -> Wiring:
    home, project = tmp_path / "home", tmp_path / "work" / "my-project"
    home.mkdir()
    (project / ".git").mkdir(parents=True)
    env = hermetic_env()
    for name in _CLIENT_VARIABLES:
        env.pop(name, None)
    env.update(HOME=str(home), PATH=f"{Path(sys.executable).parent}:/usr/bin:/bin")
    env.pop("XDG_CONFIG_HOME", None)
    return Wiring(tmp_path, home, project, env)
