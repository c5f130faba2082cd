"""Run the real OpenCode CLI, fully offline, as an MCP client of ``graymatter mcp serve``.

Follows ../shared/docs/real-clients.md (OpenCode 1.18.33): the pinned npm package is installed into
``.gate/opencode`` of the repository (the only step that needs the network); each run gets its own HOME,
XDG directories and TMPDIR under a temp dir, an OpenCode config that enables only the local fixture
provider, and a pre-seeded config directory so OpenCode's background ``npm install`` never starts.
The graymatter server is spawned by OpenCode through :mod:`stdio_recorder`, which logs the MCP wire.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gate.fixture_model import FixtureModel, FixtureServer, ScriptedCall

OPENCODE_VERSION = "1.18.33"
REPO_ROOT = Path(__file__).resolve().parents[2]
CACHE_DIR = REPO_ROOT / ".gate" / "opencode"
RECORDER = Path(__file__).resolve().with_name("stdio_recorder.py")
PROVIDER_ID = "gatefixture"
MODEL_ID = "gate-model"
SERVER_NAME = "graymatter"
GRAYMATTER = [sys.executable, "-m", "graymatter"]
REPORT: list[str] = []
"""Case tables of this pytest run, printed in the terminal summary by tests/gate/conftest.py."""
"""How the gate starts graymatter (the project's own interpreter, so no PATH lookup is involved)."""

OFFLINE_FLAGS = (
    "OPENCODE_DISABLE_PROJECT_CONFIG",
    "OPENCODE_DISABLE_AUTOUPDATE",
    "OPENCODE_DISABLE_SHARE",
    "OPENCODE_DISABLE_MODELS_FETCH",
    "OPENCODE_DISABLE_EXTERNAL_SKILLS",
    "OPENCODE_DISABLE_CLAUDE_CODE",
    "OPENCODE_DISABLE_CLAUDE_CODE_SKILLS",
    "OPENCODE_DISABLE_CLAUDE_CODE_PROMPT",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS",
    "OPENCODE_DISABLE_LSP_DOWNLOAD",
    "OPENCODE_DISABLE_EMBEDDED_WEB_UI",
    "OPENCODE_PURE",
)


class GateSetupError(RuntimeError):
    """OpenCode could not be installed or started."""


def _installed_version(binary: Path) -> str | None:
    try:
        done = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _find_binary(cache: Path) -> Path | None:
    modules = cache / "node_modules"
    candidates = [
        modules / "opencode-ai" / "bin" / "opencode.exe",
        modules / "opencode-ai" / "bin" / "opencode",
    ]
    candidates += sorted(modules.glob("opencode-*/bin/opencode"))
    for candidate in candidates:
        # The package ships a tiny placeholder that postinstall replaces with the real binary.
        if candidate.is_file() and candidate.stat().st_size > 1_000_000 and os.access(candidate, os.X_OK):
            return candidate
    return None


def ensure_opencode(cache: Path = CACHE_DIR) -> Path:
    """The pinned OpenCode binary, installed with npm into ``cache`` when missing or of another version."""
    binary = _find_binary(cache)
    if binary is not None and _installed_version(binary) == OPENCODE_VERSION:
        return binary
    npm = shutil.which("npm")
    if npm is None:
        raise GateSetupError("npm is required for the OpenCode release gate (Node.js 20 + npm)")
    cache.mkdir(parents=True, exist_ok=True)
    manifest = {"private": True, "dependencies": {"opencode-ai": OPENCODE_VERSION}}
    (cache / "package.json").write_text(json.dumps(manifest, indent=2) + "\n")
    done = subprocess.run(
        [npm, "install", "--no-audit", "--no-fund", "--loglevel=error", "--save-exact"],
        cwd=cache,
        capture_output=True,
        text=True,
        timeout=900,
    )
    if done.returncode != 0:
        raise GateSetupError(
            f"npm install opencode-ai@{OPENCODE_VERSION} failed: {done.stderr.strip()[-500:]}"
        )
    binary = _find_binary(cache)
    version = _installed_version(binary) if binary else None
    if binary is None or version != OPENCODE_VERSION:
        raise GateSetupError(f"installed OpenCode reports version {version!r}, expected {OPENCODE_VERSION}")
    return binary


@dataclass
class GateRun:
    """Everything one OpenCode session produced."""

    returncode: int
    events: list[dict[str, Any]]
    mcp: list[dict[str, Any]]
    stderr: str
    fixture_requests: list[dict[str, Any]]
    root: Path
    tool_events: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for event in self.events:
            if event.get("type") == "tool_use":
                part = event.get("part") or {}
                self.tool_events[part.get("callID", "")] = part

    def client_requests(self, method: str) -> list[dict[str, Any]]:
        return [e["msg"] for e in self.mcp if e["dir"] == "c2s" and e["msg"].get("method") == method]

    def response_to(self, request_id: Any) -> dict[str, Any] | None:
        for entry in self.mcp:
            msg = entry["msg"]
            if entry["dir"] == "s2c" and msg.get("id") == request_id and ("result" in msg or "error" in msg):
                return msg
        return None

    def handshake(self) -> dict[str, Any]:
        """Client name/version and the negotiated protocol version, from the recorded initialize."""
        requests = self.client_requests("initialize")
        if not requests:
            return {}
        params = requests[0].get("params") or {}
        response = self.response_to(requests[0].get("id")) or {}
        return {
            "client_name": (params.get("clientInfo") or {}).get("name"),
            "client_version": (params.get("clientInfo") or {}).get("version"),
            "requested_protocol": params.get("protocolVersion"),
            "negotiated_protocol": (response.get("result") or {}).get("protocolVersion"),
            "server_name": ((response.get("result") or {}).get("serverInfo") or {}).get("name"),
        }

    def tool_call(
        self, step: ScriptedCall, occurrence: int = 0
    ) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """The ``occurrence``-th recorded tools/call with this name and these arguments, and its answer."""
        tool = step.tool.removeprefix(f"{SERVER_NAME}_")
        matches = [
            request
            for request in self.client_requests("tools/call")
            if (request.get("params") or {}).get("name") == tool
            and (request.get("params") or {}).get("arguments") == step.arguments
        ]
        if occurrence >= len(matches):
            return None, None
        return matches[occurrence], self.response_to(matches[occurrence].get("id"))


def _seed_config_dir(config_home: Path) -> None:
    """Pre-empt OpenCode's background ``npm install @opencode-ai/plugin`` (real-clients.md §4)."""
    directory = config_home / "opencode"
    (directory / "node_modules").mkdir(parents=True, exist_ok=True)
    deps = {"@opencode-ai/plugin": OPENCODE_VERSION}
    (directory / "package.json").write_text(json.dumps({"dependencies": deps}))
    lock = {"lockfileVersion": 3, "packages": {"": {"dependencies": deps}}}
    (directory / "package-lock.json").write_text(json.dumps(lock))


def _config(base_url: str, server_command: list[str], server_env: dict[str, str]) -> dict[str, Any]:
    return {
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": False,
        "share": "disabled",
        "enabled_providers": [PROVIDER_ID],
        "model": f"{PROVIDER_ID}/{MODEL_ID}",
        "small_model": f"{PROVIDER_ID}/{MODEL_ID}",
        "plugin": [],
        "instructions": [],
        "lsp": False,
        "formatter": False,
        "snapshot": False,
        "permission": {"*": "allow"},
        "provider": {
            PROVIDER_ID: {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Gate fixture",
                "options": {"baseURL": base_url, "apiKey": "gate-fixture-key"},
                "models": {
                    MODEL_ID: {
                        "name": "Gate model",
                        "tool_call": True,
                        "limit": {"context": 200000, "output": 8192},
                    }
                },
            }
        },
        "mcp": {
            SERVER_NAME: {
                "type": "local",
                "command": server_command,
                "enabled": True,
                "timeout": 60000,
                "environment": server_env,
            }
        },
    }


def _closed_loopback_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run_session(binary: Path, root: Path, steps: list[ScriptedCall], *, flip_found: bool = False) -> GateRun:
    """One ``opencode run`` session, isolated under ``root``, driving ``steps`` against graymatter."""
    dirs = {
        name: root / name for name in ("home", "config", "data", "cache", "state", "tmp", "work", "store")
    }
    for path in dirs.values():
        path.mkdir(parents=True, exist_ok=True)
    _seed_config_dir(dirs["config"])
    mcp_log = root / ("invalid-mcp.jsonl" if flip_found else "valid-mcp.jsonl")
    server = [*GRAYMATTER, "--no-daemon", "--dir", str(dirs["store"]), "mcp", "serve"]
    recorder = [sys.executable, str(RECORDER), "--log", str(mcp_log)]
    if flip_found:
        recorder.append("--flip-found")
    server_env = {"GRAYMATTER_OLLAMA_URL": f"http://127.0.0.1:{_closed_loopback_port()}"}
    model = FixtureModel(steps=steps, model_id=MODEL_ID)
    with FixtureServer(model) as fixture:
        config_path = root / "opencode.json"
        config = _config(fixture.base_url, [*recorder, "--", *server], server_env)
        config_path.write_text(json.dumps(config, indent=2))
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": os.environ.get("LANG", "C.UTF-8"),
            "HOME": str(dirs["home"]),
            "XDG_CONFIG_HOME": str(dirs["config"]),
            "XDG_DATA_HOME": str(dirs["data"]),
            "XDG_CACHE_HOME": str(dirs["cache"]),
            "XDG_STATE_HOME": str(dirs["state"]),
            "TMPDIR": str(dirs["tmp"]),
            "OPENCODE_CONFIG": str(config_path),
            **{flag: "1" for flag in OFFLINE_FLAGS},
        }
        command = [
            str(binary),
            "run",
            "--pure",
            "--format",
            "json",
            "--print-logs",
            "--log-level",
            "DEBUG",
            "--title",
            "graymatter gate",
            "--dir",
            str(dirs["work"]),
            "Run the scripted graymatter checks.",
        ]
        done = subprocess.run(
            command, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300
        )
    events = [json.loads(line) for line in done.stdout.splitlines() if line.strip().startswith("{")]
    events_path = root / ("invalid-events.jsonl" if flip_found else "valid-events.jsonl")
    events_path.write_text(done.stdout)
    (root / ("invalid-stderr.log" if flip_found else "valid-stderr.log")).write_text(done.stderr)
    mcp = [json.loads(line) for line in mcp_log.read_text().splitlines()] if mcp_log.exists() else []
    return GateRun(
        returncode=done.returncode,
        events=events,
        mcp=mcp,
        stderr=done.stderr,
        fixture_requests=list(model.requests),
        root=root,
    )
