"""MCP server settings: the `mcp_servers:` config entries, `--mcp NAME=COMMAND` flags and `--memory`.

A server is either a stdio command (`command`, `args`, `env`) started in the run's working directory, or
a streamable HTTP endpoint (`url`, optionally a bearer token read from the environment variable named by
`bearer_token_env`). Names are 1-32 letters, digits, `_` or `-`, so every tool can be offered to the
model as `mcp__<server>__<tool>`. `memory: graymatter` (or `--memory`) adds the server `graymatter`
running `graymatter mcp serve` for the project, unless a server of that name is configured already.
"""

from __future__ import annotations

import math
import os
import re
import shlex
import shutil
import sys
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from tinyagent.errors import UsageError

__all__ = ["MEMORY_SERVER", "McpServerConfig", "memory_server", "parse_mcp_flags", "server_name_error"]

MEMORY_SERVER = "graymatter"
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,32}$")


class McpServerConfig(BaseModel):
    """One MCP server: a stdio command or a streamable HTTP URL, and its per-call timeout."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    url: str | None = None
    bearer_token_env: str | None = None
    timeout: float | None = Field(default=None, gt=0)

    @field_validator("timeout")
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):
            raise ValueError("must be a finite number")
        return value

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("give exactly one of command (stdio) or url (streamable HTTP)")
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise ValueError("url must start with http:// or https://")
        if self.command is not None and self.bearer_token_env is not None:
            raise ValueError("bearer_token_env applies to url servers only")
        return self


def server_name_error(name: str) -> str | None:
    """Why `name` cannot name an MCP server, or None."""
    if _NAME.match(name):
        return None
    return f"MCP server name {name!r} must be 1-32 letters, digits, '_' or '-'"


class McpFlagError(UsageError, ValueError):
    """A malformed `--mcp NAME=COMMAND` flag."""


def parse_mcp_flags(flags: Sequence[str]) -> list[tuple[str, McpServerConfig]]:
    """`--mcp NAME=COMMAND` values (COMMAND split like a shell would) as (name, config) pairs."""
    servers: list[tuple[str, McpServerConfig]] = []
    for flag in flags:
        name, sep, command = flag.partition("=")
        problem = server_name_error(name) if sep else "use --mcp NAME=COMMAND"
        if problem is not None:
            raise McpFlagError(f"--mcp {flag!r}: {problem}")
        try:
            words = shlex.split(command)
        except ValueError as exc:
            raise McpFlagError(f"--mcp {name}: the command cannot be split ({exc})") from None
        if not words:
            raise McpFlagError(f"--mcp {name}: the command is empty")
        servers.append((name, McpServerConfig(command=words[0], args=words[1:])))
    return servers


def memory_server(store_dir: str | None, environ: Mapping[str, str]) -> McpServerConfig:
    """`graymatter mcp serve` (with `--dir` only when the user set one), found next to this Python first."""
    local = os.path.join(os.path.dirname(sys.executable), "graymatter")
    command = local if os.access(local, os.X_OK) else shutil.which("graymatter", path=environ.get("PATH"))
    if command is None:
        raise McpFlagError(
            "--memory needs the graymatter command (pip install graymatter); it is not next to this Python "
            "nor on PATH"
        )
    args = ["mcp", "serve"] + (["--dir", store_dir] if store_dir else [])
    passed = {k: v for k, v in environ.items() if k.startswith(("GRAYMATTER_", "XDG_"))}
    return McpServerConfig(command=command, args=args, env=passed)
