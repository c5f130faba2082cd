"""What every gate client shares: the run's directory layout, its base environment, and a pinned npm install.

A :class:`Client` says how one client is installed (npm, at a pinned version, into ``.gate/<name>``),
started headless, and how it names graymatter's tools; the five clients are in :mod:`gate.clients`.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
GATE_DIR = REPO_ROOT / ".gate"
MODEL_PORT = 8787
"""The scripted model's port inside each fresh network namespace (always free there)."""
SERVER = "graymatter"
TOOLS = (
    "checkpoint_resume",
    "checkpoint_save",
    "memory_add",
    "memory_alias",
    "memory_reflect",
    "memory_search",
    "memory_search_batch",
)
PROMPT = "Run the scripted graymatter checks."


class GateSetupError(RuntimeError):
    """A client could not be installed or started."""


@dataclass(frozen=True)
class Layout:
    """The directories of one isolated run: a fresh HOME and a project folder (the client's cwd)."""

    root: Path

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def project(self) -> Path:
        return self.root / "gateproj"

    @property
    def store(self) -> Path:
        return self.project / ".graymatter"

    def make(self) -> None:
        for path in (self.home, self.project, self.root / "tmp"):
            path.mkdir(parents=True, exist_ok=True)


@dataclass(frozen=True)
class Client:
    """One pinned client: its package, how to start it headless, and how it names graymatter's tools."""

    name: str
    init_name: str  # the ``graymatter init --client`` name
    package: str
    version: str
    entry: str  # path under node_modules; a ``.js`` entry runs under node
    version_text: str  # what ``--version`` prints
    tool_name: Callable[[str], str]
    namespace: str | None
    offered: Callable[[dict[str, Any]], list[str]]  # graymatter tool names a model request declares
    main_route: str  # path fragment of the client's model requests
    seed: Callable[[Layout], None]
    env: Callable[[Layout], dict[str, str]]
    argv: Callable[[Layout, str], list[str]]  # the headless command line for one prompt
    validates_output: bool
    installer: Callable[[], Path] | None = None  # a client with its own installer (OpenCode)

    @property
    def cache(self) -> Path:
        return GATE_DIR / self.name

    def command(self) -> list[str]:
        """The argv prefix that starts the installed client."""
        if self.installer is not None:
            return [str(self.installer())]
        path = self.cache / "node_modules" / self.entry
        node = shutil.which("node") or "node"
        return [node, str(path)] if path.suffix in (".js", ".mjs") else [str(path)]

    def installed_version(self) -> str | None:
        try:
            done = subprocess.run(
                [*self.command(), "--version"], capture_output=True, text=True, timeout=60, env=_plain_env()
            )
        except OSError:
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    def ensure(self) -> list[str]:
        """The client's argv prefix, installed with npm at the pinned version when missing or different."""
        if self.installer is not None:
            return self.command()
        if self.installed_version() == self.version_text:
            return self.command()
        npm = shutil.which("npm")
        if npm is None:
            raise GateSetupError(f"npm is required for the {self.name} gate (Node.js 20 + npm)")
        self.cache.mkdir(parents=True, exist_ok=True)
        manifest = {"private": True, "dependencies": {self.package: self.version}}
        (self.cache / "package.json").write_text(json.dumps(manifest, indent=2) + "\n")
        done = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--loglevel=error", "--save-exact"],
            cwd=self.cache,
            capture_output=True,
            text=True,
            timeout=900,
        )
        if done.returncode != 0:
            raise GateSetupError(f"npm install {self.package}@{self.version} failed: {done.stderr[-500:]}")
        found = self.installed_version()
        if found != self.version_text:
            raise GateSetupError(f"installed {self.name} reports {found!r}, expected {self.version_text!r}")
        return self.command()

    def main_requests(self, requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The model requests that offer tools (the agent loop's turns), in order."""
        return [r for r in requests if self.main_route in r["path"] and _has_tools(r.get("body"))]


def _plain_env() -> dict[str, str]:
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/nonexistent"}


def _has_tools(body: Any) -> bool:
    return isinstance(body, dict) and bool(body.get("tools"))


def base_env(layout: Layout) -> dict[str, str]:
    """The environment every client starts from: nothing of the host but PATH and LANG."""
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "HOME": str(layout.home),
        "TMPDIR": str(layout.root / "tmp"),
        "XDG_CONFIG_HOME": str(layout.home / ".config"),
        "XDG_DATA_HOME": str(layout.home / ".local" / "share"),
        "XDG_CACHE_HOME": str(layout.home / ".cache"),
        "XDG_STATE_HOME": str(layout.home / ".local" / "state"),
    }


def prefixed(prefix: str, names: list[str]) -> list[str]:
    """The names that start with ``prefix``, without it, sorted."""
    return sorted(name.removeprefix(prefix) for name in names if name.startswith(prefix))
