"""The YAML config files: their schema, where they are found, and loading one safely.

Config files are YAML mappings validated by `ConfigFile` (unknown keys are errors, so typos surface):

- user file: `$XDG_CONFIG_HOME/tinyagent/config.yaml` (default `~/.config/tinyagent/config.yaml`);
- project file: `.tinyagent.yaml` in the run's working directory (`--cwd`, else the current directory);
- `--config FILE` replaces both discovered files.

A project file may not set `api_key` or `base_url`: a cloned repository must not be able to redirect
your credentials; nor `mcp_servers`: it must not start programs of its choosing.
"""

from __future__ import annotations

import math
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from tinyagent.config.mcp import McpServerConfig, server_name_error
from tinyagent.defaults import MAX_CONFIG_BYTES
from tinyagent.errors import UsageError
from tinyagent.validation import first_error

PROJECT_CONFIG_NAME = ".tinyagent.yaml"


class ConfigError(UsageError, ValueError):
    """Invalid settings or configuration file (reported as a usage error, exit code 2)."""


class ProviderConfig(BaseModel):
    """Per-provider default model, endpoint and credentials (endpoint/key: user config or --config only)."""

    model_config = ConfigDict(extra="forbid")

    model: str | None = None
    base_url: str | None = None
    api_key: str | None = Field(default=None, repr=False)


class ConfigFile(BaseModel):
    """The schema of a tinyagent YAML config file. Every key is optional."""

    model_config = ConfigDict(extra="forbid")

    provider: str | None = None
    model: str | None = None
    stream: bool | None = None
    step_limit: int | None = Field(default=None, ge=0)
    cost_limit: float | None = Field(default=None, ge=0)
    time_limit: float | None = Field(default=None, ge=0)
    tool_timeout: float | None = Field(default=None, gt=0)
    output_cap: int | None = Field(default=None, ge=1000)
    request_timeout: float | None = Field(default=None, gt=0)
    agents_md: Literal["auto", "off"] | None = None
    thinking_budget: int | None = Field(default=None, ge=1024)
    context_window: int | None = Field(default=None, ge=1000)
    instructions: str | None = None
    providers: dict[str, ProviderConfig] = Field(default_factory=dict)
    mcp_servers: dict[str, McpServerConfig] = Field(default_factory=dict)
    memory: Literal["graymatter"] | None = None
    memory_dir: str | None = None

    @field_validator("mcp_servers")
    @classmethod
    def _server_names(cls, value: dict[str, McpServerConfig]) -> dict[str, McpServerConfig]:
        for name in value:
            problem = server_name_error(name)
            if problem is not None:
                raise ValueError(problem)
        return value

    @field_validator("cost_limit", "time_limit", "tool_timeout", "request_timeout")
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):
            raise ValueError("must be a finite number")
        return value


def user_config_path(environ: Mapping[str, str]) -> Path:
    """`$XDG_CONFIG_HOME/tinyagent/config.yaml`, defaulting XDG_CONFIG_HOME to ~/.config."""
    base = environ.get("XDG_CONFIG_HOME") or os.path.join(
        environ.get("HOME") or os.path.expanduser("~"), ".config"
    )
    return Path(base) / "tinyagent" / "config.yaml"


def load_config_file(path: Path, *, project: bool) -> ConfigFile:
    """Parse and validate one YAML config file. A project file may not hold api_key/base_url."""
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from exc
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(f"config file {path} is larger than {MAX_CONFIG_BYTES} bytes")
    import yaml

    try:
        document = yaml.safe_load(data.decode("utf-8")) if data.strip() else {}
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise ConfigError(f"config file {path} is not valid YAML{where}") from exc
    if document is None:
        document = {}
    if not isinstance(document, dict):
        raise ConfigError(f"config file {path} must be a YAML mapping of settings")
    try:
        config = ConfigFile.model_validate(document)
    except ValidationError as exc:
        first = first_error(exc)
        raise ConfigError(f"config file {path}: {first.where('(file)')}: {first.msg}") from exc
    if project:
        for name, entry in config.providers.items():
            if entry.api_key is not None or entry.base_url is not None:
                raise ConfigError(
                    f"project config {path} sets providers.{name}.api_key/base_url; credentials and "
                    "endpoints belong in the environment or the user config"
                )
        if config.mcp_servers:
            raise ConfigError(
                f"project config {path} declares mcp_servers; a repository must not start programs of its "
                "choosing: declare MCP servers in the user config, --config FILE or with --mcp"
            )
    return config


def warn_if_key_exposed(path: Path, config: ConfigFile) -> None:
    """Warn on stderr when a config file holding an API key is readable by other users."""
    if not any(entry.api_key for entry in config.providers.values()):
        return
    try:
        mode = path.stat().st_mode
    except OSError:
        return
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        import sys

        print(
            f"tinyagent: warning: {path} holds an API key but other users can read it; run chmod 600 {path}",
            file=sys.stderr,
        )
