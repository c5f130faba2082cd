"""The client table: for each supported client, its config file and key, server entry, instruction file
and how to tell it is installed. One table, one place to fix a path.

Paths honour ``HOME``, ``XDG_CONFIG_HOME``, ``CODEX_HOME``, ``CLAUDE_CONFIG_DIR`` and (VS Code on Windows)
``APPDATA``, read from the environment the caller passes, so tests and the client gate can point every
client at a fresh home.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

Scope = Literal["project", "global"]
Format = Literal["json", "jsonc", "toml"]

SERVER_NAME: Final = "graymatter"
"""The name of graymatter's entry in every client config."""

STARTUP_TIMEOUT_S: Final = 30.0
"""How long a client that can be told to wait gives the server to start (Codex, in seconds)."""

REQUEST_TIMEOUT_MS: Final = 60000
"""The MCP request timeout written for clients whose default is short (OpenCode 5 s, Gemini, Qwen)."""


@dataclass(frozen=True)
class Homes:
    """The directories client configs live under, resolved from one environment."""

    home: Path
    xdg_config: Path
    codex: Path
    claude: Path
    claude_json: Path
    vscode_user: Path
    path: str

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Homes:
        """Resolve every client's base directory from ``env`` (not ``os.environ`` unless passed)."""
        home = Path(env.get("HOME") or env.get("USERPROFILE") or os.path.expanduser("~"))
        xdg = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else home / ".config"
        claude_dir = env.get("CLAUDE_CONFIG_DIR")
        claude = Path(claude_dir) if claude_dir else home / ".claude"
        if sys.platform == "darwin":
            vscode = home / "Library" / "Application Support" / "Code" / "User"
        elif sys.platform == "win32":
            vscode = Path(env.get("APPDATA") or home / "AppData" / "Roaming") / "Code" / "User"
        else:
            vscode = xdg / "Code" / "User"
        return cls(
            home=home,
            xdg_config=xdg,
            codex=Path(env["CODEX_HOME"]) if env.get("CODEX_HOME") else home / ".codex",
            claude=claude,
            claude_json=claude / ".claude.json" if claude_dir else home / ".claude.json",
            vscode_user=vscode,
            path=env.get("PATH", ""),
        )


@dataclass(frozen=True)
class Launch:
    """How a client starts graymatter's MCP server: an absolute command and its arguments."""

    command: str
    args: tuple[str, ...]

    @property
    def argv(self) -> list[str]:
        """The command line as one list."""
        return [self.command, *self.args]


def running_executable() -> list[str]:
    """The absolute command of the graymatter that is running: its console script, else
    ``python -m graymatter`` with this interpreter."""
    script = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if script is not None and script.name.startswith("graymatter") and script.suffix != ".py":
        found = Path(os.path.abspath(script if script.is_absolute() else shutil.which(str(script)) or script))
        if found.is_file():
            return [str(found)]
    return [str(Path(sys.executable).absolute()), "-m", "graymatter"]


def launch_for(store_dir: Path | None, executable: list[str] | None = None) -> Launch:
    """The server command for a store: ``<graymatter> [--dir STORE] mcp serve`` (no ``--dir``: routing)."""
    argv = list(executable or running_executable())
    store = ["--dir", str(store_dir)] if store_dir is not None else []
    return Launch(argv[0], (*argv[1:], *store, "mcp", "serve"))


def _stdio(launch: Launch) -> dict[str, object]:
    return {"type": "stdio", "command": launch.command, "args": list(launch.args)}


def _plain(launch: Launch) -> dict[str, object]:
    return {"command": launch.command, "args": list(launch.args)}


def _gemini(launch: Launch) -> dict[str, object]:
    return {"command": launch.command, "args": list(launch.args), "timeout": REQUEST_TIMEOUT_MS}


def _codex(launch: Launch) -> dict[str, object]:
    return {
        "command": launch.command,
        "args": list(launch.args),
        "required": True,
        "startup_timeout_sec": STARTUP_TIMEOUT_S,
    }


def _opencode(launch: Launch) -> dict[str, object]:
    return {"type": "local", "command": launch.argv, "enabled": True, "timeout": REQUEST_TIMEOUT_MS}


@dataclass(frozen=True)
class ClientSpec:
    """One client: where its MCP config lives (per scope), the key graymatter's entry goes under, the
    entry itself, the instruction file it reads, and the marks of an installed client."""

    name: str
    title: str
    fmt: Format
    key: tuple[str, ...]
    entry: Callable[[Launch], dict[str, object]]
    project_config: str | None
    global_config: Callable[[Homes], Path] | None
    project_instructions: str | None
    global_instructions: Callable[[Homes], Path] | None
    marks: Callable[[Homes], tuple[Path, ...]]
    executables: tuple[str, ...]
    strict: bool = False
    instruction_prefix: str = ""
    required_keys: tuple[str, ...] = ()

    def config_path(self, scope: Scope, homes: Homes, root: Path) -> Path:
        """The config file for ``scope``; a client without a project file always uses its user file."""
        if scope == "project" and self.project_config is not None:
            path = root / self.project_config
        else:
            assert self.global_config is not None
            path = self.global_config(homes)
        commented = path.with_name(path.name + "c")  # opencode.jsonc is read when there is no opencode.json
        if self.fmt == "jsonc" and path.suffix == ".json" and not path.exists() and commented.is_file():
            return commented
        return path

    def effective_scope(self, scope: Scope) -> Scope:
        """``scope``, or ``global`` for a client that has no project config file."""
        return "project" if scope == "project" and self.project_config is not None else "global"

    def instructions_path(self, scope: Scope, homes: Homes, root: Path) -> Path | None:
        """The instruction file the client reads in ``scope``, if it has one."""
        if scope == "project" and self.project_instructions is not None:
            return root / self.project_instructions
        if scope == "global" and self.global_instructions is not None:
            return self.global_instructions(homes)
        return None

    def installed(self, homes: Homes) -> bool:
        """Whether the client looks installed: one of its config dirs exists or its executable is on PATH."""
        if any(mark.exists() for mark in self.marks(homes)):
            return True
        return any(shutil.which(name, path=homes.path) for name in self.executables)


_MDC_PREFIX = "---\ndescription: graymatter memory protocol\nalwaysApply: true\n---\n\n"

CLIENTS: Final[tuple[ClientSpec, ...]] = (
    ClientSpec(
        "claude-code", "Claude Code", "json", ("mcpServers",), _stdio, ".mcp.json",
        lambda h: h.claude_json, "CLAUDE.md", lambda h: h.claude / "CLAUDE.md",
        lambda h: (h.claude, h.claude_json), ("claude",), strict=True,
    ),
    ClientSpec(
        "codex", "Codex", "toml", ("mcp_servers",), _codex, None, lambda h: h.codex / "config.toml",
        "AGENTS.md", lambda h: h.codex / "AGENTS.md", lambda h: (h.codex,), ("codex",),
        required_keys=("required", "startup_timeout_sec"),
    ),
    ClientSpec(
        "opencode", "OpenCode", "jsonc", ("mcp",), _opencode, "opencode.json",
        lambda h: h.xdg_config / "opencode" / "opencode.json", "AGENTS.md",
        lambda h: h.xdg_config / "opencode" / "AGENTS.md", lambda h: (h.xdg_config / "opencode",),
        ("opencode",), required_keys=("timeout",),
    ),
    ClientSpec(
        "cursor", "Cursor", "jsonc", ("mcpServers",), _plain, ".cursor/mcp.json",
        lambda h: h.home / ".cursor" / "mcp.json", ".cursor/rules/graymatter.mdc", None,
        lambda h: (h.home / ".cursor",), ("cursor",), instruction_prefix=_MDC_PREFIX,
    ),
    ClientSpec(
        "gemini", "Gemini CLI", "jsonc", ("mcpServers",), _gemini, ".gemini/settings.json",
        lambda h: h.home / ".gemini" / "settings.json", "GEMINI.md",
        lambda h: h.home / ".gemini" / "GEMINI.md",
        lambda h: (h.home / ".gemini",), ("gemini",),
    ),
    ClientSpec(
        "qwen", "Qwen Code", "jsonc", ("mcpServers",), _gemini, ".qwen/settings.json",
        lambda h: h.home / ".qwen" / "settings.json", "QWEN.md", lambda h: h.home / ".qwen" / "QWEN.md",
        lambda h: (h.home / ".qwen",), ("qwen",),
    ),
    ClientSpec(
        "windsurf", "Windsurf", "jsonc", ("mcpServers",), _plain, None,
        lambda h: h.home / ".codeium" / "windsurf" / "mcp_config.json", ".windsurf/rules/graymatter.md",
        lambda h: h.home / ".codeium" / "windsurf" / "memories" / "global_rules.md",
        lambda h: (h.home / ".codeium" / "windsurf",), ("windsurf",),
    ),
    ClientSpec(
        "vscode", "VS Code (Copilot)", "jsonc", ("servers",), _stdio, ".vscode/mcp.json",
        lambda h: h.vscode_user / "mcp.json", ".github/copilot-instructions.md", None,
        lambda h: (h.vscode_user,), ("code",),
    ),
)  # fmt: skip
"""Every supported client, in the order ``init`` and ``doctor`` report them."""

CLIENT_NAMES: Final = tuple(spec.name for spec in CLIENTS)


def client(name: str) -> ClientSpec:
    """The spec of client ``name`` (a name from :data:`CLIENT_NAMES`)."""
    return next(spec for spec in CLIENTS if spec.name == name)
