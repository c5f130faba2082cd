"""The five gate clients: pinned packages, how each starts offline, how each names graymatter's tools.

Facts from ../shared/docs/more-clients.md (Claude Code 2.1.197, Codex 0.171.0, Gemini CLI 0.61.0, Qwen
Code 0.15.10) and real-clients.md (OpenCode 1.18.33, installed and isolated as in opencode.py). Each
client is installed with npm into ``.gate/<name>`` of the repository (the only step that needs the
network) and runs at its own defaults: the gate seeds only what a user has before graymatter (a model
provider and an API key, the folder trusted), and graymatter's wiring comes from ``graymatter init``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gate.client_base import (
    GATE_DIR,
    MODEL_PORT,
    PROMPT,
    REPO_ROOT,
    SERVER,
    TOOLS,
    Client,
    GateSetupError,
    Layout,
    base_env,
    prefixed,
)

__all__ = ["CLIENTS", "GATE_DIR", "MODEL_PORT", "PROMPT", "REPO_ROOT", "SERVER", "TOOLS", "Client"]
__all__ += ["GateSetupError", "Layout", "base_env"]

# --- Claude Code ---------------------------------------------------------------------------------------


def _claude_offered(body: dict[str, Any]) -> list[str]:
    return prefixed(f"mcp__{SERVER}__", [str(t.get("name")) for t in body.get("tools") or []])


def _claude_env(layout: Layout) -> dict[str, str]:
    return {
        **base_env(layout),
        "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{MODEL_PORT}",
        "ANTHROPIC_API_KEY": "sk-ant-gate-fixture",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }


def _claude_argv(layout: Layout, prompt: str) -> list[str]:
    flags = ["--output-format", "stream-json", "--verbose", "--allowedTools", f"mcp__{SERVER}"]
    return ["-p", prompt, *flags, "--max-turns", "20"]


# --- Codex ---------------------------------------------------------------------------------------------

CODEX_USER_CONFIG = f"""# the user's own model provider (the scripted model)
model = "gate-model"
model_provider = "gate"

[model_providers.gate]
name = "gate fixture"
base_url = "http://127.0.0.1:{MODEL_PORT}/v1"
env_key = "GATE_API_KEY"
wire_api = "responses"
"""


def _codex_offered(body: dict[str, Any]) -> list[str]:
    for tool in body.get("tools") or []:
        if tool.get("type") == "namespace" and tool.get("name") == f"mcp__{SERVER}":
            return sorted(str(inner.get("name")) for inner in tool.get("tools") or [])
    return []


def _codex_seed(layout: Layout) -> None:
    home = layout.home / ".codex"
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(CODEX_USER_CONFIG)


def _codex_env(layout: Layout) -> dict[str, str]:
    return {**base_env(layout), "CODEX_HOME": str(layout.home / ".codex"), "GATE_API_KEY": "sk-gate-fixture"}


def _codex_argv(layout: Layout, prompt: str) -> list[str]:
    return ["exec", "--json", "--skip-git-repo-check", "-C", str(layout.project), prompt]


# --- Gemini CLI and Qwen Code ------------------------------------------------------------------------


def _gemini_offered(body: dict[str, Any]) -> list[str]:
    names = [str(d.get("name")) for t in body.get("tools") or [] for d in t.get("functionDeclarations") or []]
    return prefixed(f"mcp_{SERVER}_", names)


def _settings_seed(folder: str, auth: str, trust: bool) -> Callable[[Layout], None]:
    def seed(layout: Layout) -> None:
        directory = layout.home / folder
        directory.mkdir(parents=True, exist_ok=True)
        settings = {"security": {"auth": {"selectedType": auth}}}
        (directory / "settings.json").write_text(json.dumps(settings, indent=2) + "\n")
        if trust:  # what answering "trust this folder" once leaves behind
            (directory / "trustedFolders.json").write_text(json.dumps({str(layout.project): "TRUST_FOLDER"}))

    return seed


def _gemini_env(layout: Layout) -> dict[str, str]:
    return {
        **base_env(layout),
        "GEMINI_CLI_NO_RELAUNCH": "true",
        "GOOGLE_GEMINI_BASE_URL": f"http://127.0.0.1:{MODEL_PORT}",
        "GEMINI_API_KEY": "gate-fixture-key",
    }


def _qwen_offered(body: dict[str, Any]) -> list[str]:
    names = [str((t.get("function") or {}).get("name")) for t in body.get("tools") or []]
    return prefixed(f"mcp__{SERVER}__", names)


def _qwen_env(layout: Layout) -> dict[str, str]:
    return {
        **base_env(layout),
        "OPENAI_BASE_URL": f"http://127.0.0.1:{MODEL_PORT}/v1",
        "OPENAI_API_KEY": "gate-fixture-key",
        "OPENAI_MODEL": "gate-model",
    }


def _headless_argv(*extra: str) -> Callable[[Layout, str], list[str]]:
    return lambda layout, prompt: ["-p", prompt, "--output-format", "stream-json", "--yolo", *extra]


CLAUDE = Client(
    name="claude-code",
    init_name="claude-code",
    package="@anthropic-ai/claude-code",
    version="2.1.197",
    entry="@anthropic-ai/claude-code/bin/claude.exe",
    version_text="2.1.197 (Claude Code)",
    tool_name=lambda tool: f"mcp__{SERVER}__{tool}",
    namespace=None,
    offered=_claude_offered,
    main_route="/v1/messages",
    seed=lambda layout: None,
    env=_claude_env,
    argv=_claude_argv,
    validates_output=False,
)
CODEX = Client(
    name="codex",
    init_name="codex",
    package="@openai/codex",
    version="0.171.0",
    entry="@openai/codex/bin/codex.js",
    version_text="codex-cli 0.171.0",
    tool_name=lambda tool: tool,
    namespace=f"mcp__{SERVER}",
    offered=_codex_offered,
    main_route="/v1/responses",
    seed=_codex_seed,
    env=_codex_env,
    argv=_codex_argv,
    validates_output=False,
)
GEMINI = Client(
    name="gemini",
    init_name="gemini",
    package="@google/gemini-cli",
    version="0.61.0",
    entry="@google/gemini-cli/bundle/gemini.js",
    version_text="0.61.0",
    tool_name=lambda tool: f"mcp_{SERVER}_{tool}",
    namespace=None,
    offered=_gemini_offered,
    main_route="streamGenerateContent",
    seed=_settings_seed(".gemini", "gemini-api-key", trust=True),
    env=_gemini_env,
    argv=_headless_argv("-m", "gemini-2.5-pro"),
    validates_output=True,
)
QWEN = Client(
    name="qwen",
    init_name="qwen",
    package="@qwen-code/qwen-code",
    version="0.15.10",
    entry="@qwen-code/qwen-code/cli.js",
    version_text="0.15.10",
    tool_name=lambda tool: f"mcp__{SERVER}__{tool}",
    namespace=None,
    offered=_qwen_offered,
    main_route="/chat/completions",
    seed=_settings_seed(".qwen", "openai", trust=False),
    env=_qwen_env,
    argv=_headless_argv(),
    validates_output=True,
)


# --- OpenCode (installed and isolated as in opencode.py) -------------------------------------------------


def _opencode_offered(body: dict[str, Any]) -> list[str]:
    names = [str((t.get("function") or {}).get("name")) for t in body.get("tools") or []]
    return prefixed(f"{SERVER}_", names)


def _opencode_seed(layout: Layout) -> None:
    """The user's own OpenCode config (the scripted provider only) and opencode.py's npm pre-emption."""
    from gate import opencode

    config_home = layout.home / ".config"
    opencode._seed_config_dir(config_home)
    config = opencode._config(f"http://127.0.0.1:{MODEL_PORT}/v1", ["unused"], {})
    del config["mcp"]
    (config_home / "opencode" / "opencode.json").write_text(json.dumps(config, indent=2) + "\n")


def _opencode_env(layout: Layout) -> dict[str, str]:
    from gate.opencode import OFFLINE_FLAGS

    flags = {flag: "1" for flag in OFFLINE_FLAGS if flag != "OPENCODE_DISABLE_PROJECT_CONFIG"}
    return {**base_env(layout), **flags}


def _opencode_argv(layout: Layout, prompt: str) -> list[str]:
    return [
        "run",
        "--pure",
        "--format",
        "json",
        "--title",
        "graymatter gate",
        "--dir",
        str(layout.project),
        prompt,
    ]


def _opencode_binary() -> Path:
    from gate.opencode import ensure_opencode

    return ensure_opencode()


OPENCODE = Client(
    name="opencode",
    init_name="opencode",
    package="opencode-ai",
    version="1.18.33",
    entry="",
    version_text="1.18.33",
    tool_name=lambda tool: f"{SERVER}_{tool}",
    namespace=None,
    offered=_opencode_offered,
    main_route="/chat/completions",
    seed=_opencode_seed,
    env=_opencode_env,
    argv=_opencode_argv,
    validates_output=True,
    installer=_opencode_binary,
)
CLIENTS = {client.name: client for client in (CLAUDE, CODEX, GEMINI, QWEN, OPENCODE)}


def _codex_trusted_argv(layout: Layout, prompt: str) -> list[str]:
    return ["exec", "--dangerously-bypass-hook-trust", *_codex_argv(layout, prompt)[1:]]


CODEX_HOOKS_TRUSTED = dataclasses.replace(CODEX, argv=_codex_trusted_argv)
"""Codex with its hooks trusted. Codex runs a non-managed hook only after the user reviewed it in ``/hooks``
(trust kept as a hash in config.toml); headless, ``--dangerously-bypass-hook-trust`` stands for that."""
