"""Settings resolution: command-line flags > environment > project config > user config > defaults.

Environment variables: `TINYAGENT_PROVIDER`, `TINYAGENT_MODEL`, `TINYAGENT_STEP_LIMIT`,
`TINYAGENT_COST_LIMIT`, `TINYAGENT_TIME_LIMIT`, `TINYAGENT_TOOL_TIMEOUT`, `TINYAGENT_AGENTS_MD`,
`TINYAGENT_STREAM`, `TINYAGENT_THINKING_BUDGET`; endpoints and keys use each provider's conventional
variables (resolved in `tinyagent.providers`). Config files: `tinyagent.config.files`. Credentials and
endpoints never come from a trajectory.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

from tinyagent.config.files import (
    PROJECT_CONFIG_NAME,
    ConfigError,
    ConfigFile,
    load_config_file,
    user_config_path,
    warn_if_key_exposed,
)
from tinyagent.config.mcp import MEMORY_SERVER, McpServerConfig, memory_server, parse_mcp_flags
from tinyagent.defaults import (
    DEFAULT_COST_LIMIT,
    DEFAULT_OUTPUT_CAP,
    DEFAULT_REQUEST_TIMEOUT,
    DEFAULT_STEP_LIMIT,
    DEFAULT_TIME_LIMIT,
    DEFAULT_TOOL_TIMEOUT,
)

PROVIDERS: tuple[str, ...] = ("openai", "openrouter", "ollama", "anthropic", "codex", "scripted")
DEFAULT_PROVIDER = "openai"
DEFAULT_MODELS: dict[str, str] = {
    "openai": "gpt-4.1-mini",
    "openrouter": "anthropic/claude-sonnet-4.5",
    "ollama": "qwen2.5-coder:7b",
    "anthropic": "claude-sonnet-4-5",
    "codex": "gpt-5-codex",
    "scripted": "scripted",
}

ENV_PREFIX = "TINYAGENT_"


@dataclass(frozen=True)
class Settings:
    """The resolved settings of one invocation. `sources` records where each value came from."""

    provider: str
    model: str
    cwd: str  # canonical (realpath) working directory
    stream: bool = True
    step_limit: int = DEFAULT_STEP_LIMIT
    cost_limit: float = DEFAULT_COST_LIMIT
    time_limit: float = DEFAULT_TIME_LIMIT
    tool_timeout: float = DEFAULT_TOOL_TIMEOUT
    output_cap: int = DEFAULT_OUTPUT_CAP
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT
    agents_md: Literal["auto", "off"] = "auto"
    thinking_budget: int | None = None  # Anthropic extended thinking budget (tokens); None = off
    mcp_servers: tuple[tuple[str, McpServerConfig], ...] = ()  # (name, server), memory server included
    memory: bool = False  # graymatter memory across runs (the server MEMORY_SERVER)
    context_window: int | None = None  # prompt tokens; None: the model table's (tinyagent.windows)
    instructions: str | None = None
    quiet: bool = False
    output: str | None = None
    base_url: str | None = None  # config-file endpoint for the chosen provider (flag/env win later)
    api_key: str | None = field(default=None, repr=False)  # config-file key (env wins later)
    config_files: tuple[str, ...] = ()
    sources: Mapping[str, str] = field(default_factory=dict)


DEFAULTS: dict[str, Any] = {f.name: f.default for f in fields(Settings) if f.default is not MISSING}
"""A setting's value when no flag, environment variable or config file sets it: the `Settings` defaults."""


def canonical_cwd(path: str | os.PathLike[str] | None) -> str:
    """The realpath of the working directory; ConfigError if it is missing or not a directory."""
    raw = os.fspath(path) if path is not None else os.getcwd()
    resolved = os.path.realpath(os.path.expanduser(raw))
    if not os.path.isdir(resolved):
        raise ConfigError(f"working directory does not exist or is not a directory: {raw}")
    return resolved


def _env_value(environ: Mapping[str, str], key: str, kind: type) -> Any:
    name = ENV_PREFIX + key.upper()
    raw = environ.get(name)
    if raw is None or raw == "":
        return None
    try:
        if kind is bool:
            lowered = raw.strip().lower()
            if lowered in ("1", "true", "yes", "on"):
                return True
            if lowered in ("0", "false", "no", "off"):
                return False
            raise ValueError(raw)
        value = kind(raw)
    except ValueError as exc:
        raise ConfigError(f"environment variable {name} has an invalid value") from exc
    if isinstance(value, float) and (not math.isfinite(value) or value < 0):
        raise ConfigError(f"environment variable {name} must be a finite number >= 0")
    if isinstance(value, int) and not isinstance(value, bool) and value < 0:
        raise ConfigError(f"environment variable {name} must be >= 0")
    return value


def _check_flag_number(name: str, value: float | None, *, positive: bool = False) -> None:
    if value is None:
        return
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        bound = "> 0" if positive else ">= 0"
        raise ConfigError(f"--{name.replace('_', '-')} must be a finite number {bound}")


@dataclass
class _Sources:
    """The places a setting can come from, highest precedence first, and where each one came from."""

    args: Any
    env: Mapping[str, str]
    layers: list[tuple[str, ConfigFile]]  # config files, lowest precedence first
    chosen: dict[str, str] = field(default_factory=dict)

    def pick(self, key: str, kind: type, default: Any) -> Any:
        """The value of `key`: flag > environment > project config > user config > `default`."""
        flag = getattr(self.args, key, None)
        if flag is not None:
            self.chosen[key] = "flag"
            return flag
        from_env = _env_value(self.env, key, kind)
        if from_env is not None:
            self.chosen[key] = "environment"
            return from_env
        for label, layer in reversed(self.layers):  # project config beats user config
            value = getattr(layer, key)
            if value is not None:
                self.chosen[key] = label
                return value
        self.chosen[key] = "default"
        return default


def resolve_settings(args: Any, environ: Mapping[str, str] | None = None) -> Settings:
    """Resolve the settings of a run from parsed CLI `args`, the environment and config files.

    `args` needs the attributes provider, model, cwd, step_limit, cost_limit, time_limit,
    tool_timeout, stream, agents_md, quiet, output and config (None = not given).
    """
    env = os.environ if environ is None else environ
    cwd = canonical_cwd(getattr(args, "cwd", None))
    layers = _config_layers(getattr(args, "config", None), env, cwd)
    _check_flag_numbers(args)
    sources = _Sources(args, env, layers)
    provider = _pick_provider(sources)
    model = _pick_model(sources, provider)
    agents_md = _pick_agents_md(sources)
    base_url, api_key = _provider_endpoint(layers, provider)
    instructions = _last_set(layers, "instructions", DEFAULTS["instructions"])
    output_cap = _last_set(layers, "output_cap", DEFAULTS["output_cap"])
    request_timeout = _last_set(layers, "request_timeout", DEFAULTS["request_timeout"])
    tool_timeout = float(sources.pick("tool_timeout", float, DEFAULTS["tool_timeout"]))
    if tool_timeout <= 0:
        raise ConfigError("the tool timeout must be greater than 0 seconds")
    thinking_budget = sources.pick("thinking_budget", int, DEFAULTS["thinking_budget"])
    if thinking_budget is not None and thinking_budget < 1024:
        raise ConfigError("the thinking budget must be at least 1024 tokens")
    for label, value in (("model", model), ("instructions", instructions), ("base_url", base_url)):
        if value is not None and not _is_utf8(value):
            raise ConfigError(f"the configured {label} is not valid UTF-8 text")
    context_window = sources.pick("context_window", int, None)
    if context_window is not None and context_window < 1000:
        raise ConfigError("the context window must be at least 1000 tokens")
    memory = bool(sources.pick("memory", bool, False))  # config: `memory: graymatter`
    memory_dir = sources.pick("memory_dir", str, None)
    servers = _mcp_servers(layers, getattr(args, "mcp", None) or [], memory, memory_dir, env)
    return Settings(
        provider=provider,
        model=model,
        cwd=cwd,
        stream=bool(sources.pick("stream", bool, DEFAULTS["stream"])),
        step_limit=int(sources.pick("step_limit", int, DEFAULTS["step_limit"])),
        cost_limit=float(sources.pick("cost_limit", float, DEFAULTS["cost_limit"])),
        time_limit=float(sources.pick("time_limit", float, DEFAULTS["time_limit"])),
        tool_timeout=tool_timeout,
        output_cap=int(output_cap),
        request_timeout=float(request_timeout),
        agents_md=agents_md,
        thinking_budget=thinking_budget,
        mcp_servers=servers,
        context_window=context_window,
        memory=memory,
        instructions=instructions,
        quiet=bool(getattr(args, "quiet", False)),
        output=getattr(args, "output", None),
        base_url=base_url,
        api_key=api_key,
        config_files=tuple(label for label, _ in layers),
        sources=sources.chosen,
    )


def _mcp_servers(
    layers: list[tuple[str, ConfigFile]],
    flags: list[str],
    memory: bool,
    memory_dir: str | None,
    env: Mapping[str, str],
) -> tuple[tuple[str, McpServerConfig], ...]:
    """The MCP servers of the run: config files (later files win per name), then --mcp flags, then memory."""
    servers: dict[str, McpServerConfig] = {}
    for _label, layer in layers:
        servers.update(layer.mcp_servers)
    for name, server in parse_mcp_flags(flags):
        servers[name] = server
    if memory and MEMORY_SERVER not in servers:
        servers[MEMORY_SERVER] = memory_server(memory_dir, env)
    return tuple(servers.items())


def _config_layers(explicit: str | None, env: Mapping[str, str], cwd: str) -> list[tuple[str, ConfigFile]]:
    """The config files that apply, lowest precedence first: `--config FILE`, else user then project."""
    layers: list[tuple[str, ConfigFile]] = []
    if explicit:
        path = Path(explicit).expanduser()
        if not path.is_file():
            raise ConfigError(f"config file not found: {explicit}")
        layers.append((f"config file {path}", load_config_file(path, project=False)))
        return layers
    user = user_config_path(env)
    if user.is_file():
        layers.append((f"user config {user}", load_config_file(user, project=False)))
        warn_if_key_exposed(user, layers[-1][1])
    project = Path(cwd) / PROJECT_CONFIG_NAME
    if project.is_file():
        layers.append((f"project config {project}", load_config_file(project, project=True)))
    return layers


def _check_flag_numbers(args: Any) -> None:
    for name in ("step_limit", "cost_limit", "time_limit"):
        _check_flag_number(name, getattr(args, name, None))
    _check_flag_number("tool_timeout", getattr(args, "tool_timeout", None), positive=True)


def _pick_provider(sources: _Sources) -> str:
    provider = str(sources.pick("provider", str, DEFAULT_PROVIDER))
    if provider not in PROVIDERS:
        raise ConfigError(f"unknown provider {provider!r}; use one of: {', '.join(PROVIDERS)}")
    return provider


def _pick_agents_md(sources: _Sources) -> Literal["auto", "off"]:
    agents_md = sources.pick("agents_md", str, DEFAULTS["agents_md"])
    if agents_md == "auto":
        return "auto"
    if agents_md == "off":
        return "off"
    raise ConfigError(f"invalid AGENTS.md mode {agents_md!r}; use auto or off")


def _provider_endpoint(layers: list[tuple[str, ConfigFile]], provider: str) -> tuple[str | None, str | None]:
    """(base_url, api_key) of `provider` from the config files (later files win)."""
    base_url = api_key = None
    for _label, layer in layers:
        entry = layer.providers.get(provider)
        if entry is not None:
            base_url = entry.base_url or base_url
            api_key = entry.api_key or api_key
    return base_url, api_key


def _last_set(layers: list[tuple[str, ConfigFile]], key: str, default: Any) -> Any:
    """A file-only setting: the value of the last config file that sets `key`, else `default`."""
    value = default
    for _label, layer in layers:
        if getattr(layer, key) is not None:
            value = getattr(layer, key)
    return value


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _pick_model(sources: _Sources, provider: str) -> str:
    """Model: flag > environment > config (see below) > the provider's default model.

    A top-level config `model` belongs to the configured provider: it is used only when the chosen
    provider is the one the config files select (or the default provider when they select none).
    Otherwise, and when no top-level model applies, `providers.<name>.model` of the chosen provider
    is used, so `--provider X` never inherits a model name meant for another provider.
    """
    chosen, layers = sources.chosen, sources.layers
    flag = getattr(sources.args, "model", None)
    if flag:
        chosen["model"] = "flag"
        return str(flag)
    from_env = _env_value(sources.env, "model", str)
    if from_env:
        chosen["model"] = "environment"
        return str(from_env)
    configured_provider = next(
        (layer.provider for _label, layer in reversed(layers) if layer.provider is not None), DEFAULT_PROVIDER
    )
    if configured_provider == provider:
        for label, layer in reversed(layers):
            if layer.model is not None:
                chosen["model"] = label
                return layer.model
    for label, layer in reversed(layers):
        entry = layer.providers.get(provider)
        if entry is not None and entry.model is not None:
            chosen["model"] = f"{label} (providers.{provider}.model)"
            return entry.model
    chosen["model"] = "default for provider"
    return DEFAULT_MODELS[provider]
