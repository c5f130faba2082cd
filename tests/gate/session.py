"""Wire graymatter into a gate client, run one scripted session in a sandbox, and read back what happened.

Wiring is ``graymatter init`` run as the user would (fresh HOME, cwd the project), or, for the negative
controls and the client-race benchmark only, a hand-written entry (the server behind the stdio recorder, or
Codex without ``required = true``). A session runs under ``unshare -n`` through :mod:`sandbox`, so the
client, the graymatter server it spawns and the scripted model share a loopback-only network.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gate.clients import GATE_DIR, MODEL_PORT, PROMPT, SERVER, Client, Layout, base_env
from gate.wire_models import Step

GATE = Path(__file__).resolve().parent
SANDBOX = GATE / "sandbox.py"
RECORDER = GATE / "stdio_recorder.py"
EVIDENCE = GATE_DIR / "evidence" / "clients"
GRAYMATTER = str(Path(sys.executable).with_name("graymatter"))
"""The graymatter executable of this venv: the one ``init`` records in every client config."""


@dataclass
class ClientRun:
    """What one session produced: exit status, output, every model request, and its wall time."""

    client: Client
    layout: Layout
    returncode: int
    stdout: str
    stderr: str
    requests: list[dict[str, Any]]
    seconds: float

    def main_requests(self) -> list[dict[str, Any]]:
        return self.client.main_requests(self.requests)

    def offered(self, index: int = 0) -> list[str]:
        """graymatter tool names the ``index``-th agent-loop model request declared."""
        main = self.main_requests()
        return self.client.offered(main[index]["body"]) if len(main) > index else []


def graymatter_env(layout: Layout) -> dict[str, str]:
    """The environment for graymatter commands the gate runs itself (init, checks)."""
    return {**base_env(layout), "PYTHONUNBUFFERED": "1"}


def graymatter(layout: Layout, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run the graymatter CLI in the project folder, as the user would."""
    done = subprocess.run(
        [GRAYMATTER, *args],
        cwd=layout.project,
        env=graymatter_env(layout),
        capture_output=True,
        text=True,
        timeout=120,
    )
    if check and done.returncode != 0:
        raise AssertionError(f"graymatter {' '.join(args)} exited {done.returncode}: {done.stderr[-500:]}")
    return done


def wire_with_init(client: Client, layout: Layout, *extra: str) -> subprocess.CompletedProcess[str]:
    """``graymatter init --client NAME`` in the project folder with the run's HOME."""
    return graymatter(layout, "init", "--client", client.init_name, *extra)


def server_command(layout: Layout, recorder_log: Path | None = None, flip_found: bool = False) -> list[str]:
    """A hand-written server command: graymatter on the project's store, optionally behind the recorder."""
    command = [GRAYMATTER, "--dir", str(layout.store), "mcp", "serve"]
    if recorder_log is None:
        return command
    prefix = [sys.executable, str(RECORDER), "--log", str(recorder_log)]
    return [*prefix, *(["--flip-found"] if flip_found else []), "--", *command]


def wire_by_hand(client: Client, layout: Layout, command: list[str], *, required: bool = False) -> None:
    """Write graymatter's entry into the client's config the way the shared notes describe."""
    entry = {"command": command[0], "args": command[1:]}
    if client.name == "claude-code":
        (layout.project / ".mcp.json").write_text(json.dumps({"mcpServers": {SERVER: entry}}, indent=2))
    elif client.name == "codex":
        config = layout.home / ".codex" / "config.toml"
        lines = [f"\n[mcp_servers.{SERVER}]", f"command = {json.dumps(command[0])}"]
        lines.append(f"args = {json.dumps(command[1:])}")
        if required:
            lines += ["required = true", "startup_timeout_sec = 60"]
        config.write_text(config.read_text() + "\n".join(lines) + "\n")
    elif client.name == "opencode":
        path = layout.home / ".config" / "opencode" / "opencode.json"
        config = json.loads(path.read_text())
        config["mcp"] = {SERVER: {"type": "local", "command": command, "enabled": True, "timeout": 60000}}
        path.write_text(json.dumps(config, indent=2))
    else:
        folder = layout.home / (".gemini" if client.name == "gemini" else ".qwen")
        settings = json.loads((folder / "settings.json").read_text())
        settings.setdefault("mcpServers", {})[SERVER] = {**entry, "timeout": 60000}
        (folder / "settings.json").write_text(json.dumps(settings, indent=2))


HOOK_EVENTS = {
    "claude-code": {"SessionStart": "session-start", "UserPromptSubmit": "user-prompt"},
    "codex": {"SessionStart": "session-start", "UserPromptSubmit": "user-prompt"},
    "gemini": {"SessionStart": "session-start", "BeforeAgent": "user-prompt"},
    "qwen": {"SessionStart": "session-start", "UserPromptSubmit": "user-prompt"},
}


def register_hooks_by_hand(client: Client, layout: Layout) -> None:
    """Register ``graymatter hook`` for session start and each prompt in the client's user settings."""
    if client.name == "claude-code":
        path = layout.home / ".claude" / "settings.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        settings: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
    elif client.name == "codex":
        path, settings = layout.home / ".codex" / "hooks.json", {}
    else:
        path = layout.home / (".gemini" if client.name == "gemini" else ".qwen") / "settings.json"
        settings = json.loads(path.read_text())
    hooks = settings.setdefault("hooks", {})
    for native, event in HOOK_EVENTS[client.name].items():
        if client.name == "claude-code":  # exec form
            handler: dict[str, Any] = {
                "type": "command",
                "command": GRAYMATTER,
                "args": ["hook", client.name, event],
            }
        else:
            handler = {
                "type": "command",
                "command": f"{GRAYMATTER} hook {client.name} {event}",
                "timeout": 10000,
            }
        hooks[native] = [{"hooks": [handler]}]
    path.write_text(json.dumps(settings, indent=2))


def run_client(
    client: Client,
    layout: Layout,
    steps: list[Step],
    *,
    prompt: str = PROMPT,
    timeout: float = 240.0,
    tag: str = "run",
) -> ClientRun:
    """Run one headless session of ``client`` in the project folder, inside a loopback-only namespace."""
    prefix = client.ensure()
    files = {name: layout.root / f"{tag}-{name}" for name in ("script.json", "requests.json", "out", "err")}
    files["script.json"].write_text(json.dumps([step.to_json() for step in steps]))
    sandbox = [sys.executable, str(SANDBOX), "--port", str(MODEL_PORT), "--timeout", str(timeout)]
    sandbox += ["--script", str(files["script.json"]), "--requests", str(files["requests.json"])]
    sandbox += ["--stdout", str(files["out"]), "--stderr", str(files["err"])]
    command = ["unshare", "-n", "--", *sandbox, "--", *prefix, *client.argv(layout, prompt)]
    started = time.monotonic()
    done = subprocess.run(
        command,
        cwd=layout.project,
        env=client.env(layout),
        capture_output=True,
        text=True,
        timeout=timeout + 60,
    )
    seconds = time.monotonic() - started
    _keep_evidence(client, tag, files)
    requests = json.loads(files["requests.json"].read_text()) if files["requests.json"].exists() else []
    stderr = (files["err"].read_text(errors="replace") if files["err"].exists() else "") + done.stderr
    return ClientRun(
        client=client,
        layout=layout,
        returncode=done.returncode,
        stdout=files["out"].read_text(errors="replace") if files["out"].exists() else "",
        stderr=stderr,
        requests=requests,
        seconds=seconds,
    )


def _keep_evidence(client: Client, tag: str, files: dict[str, Path]) -> None:
    """Copy the run's model requests and client output to ``.gate/evidence/clients`` for inspection."""
    EVIDENCE.mkdir(parents=True, exist_ok=True)
    for name, path in files.items():
        if path.exists():
            shutil.copyfile(path, EVIDENCE / f"{client.name}-{tag}-{name}")


def tool_results(client: Client, body: dict[str, Any]) -> list[str]:
    """The tool results a model request carries back to the model, in conversation order, as text."""

    def text(value: Any) -> str:
        if isinstance(value, str):
            return value
        if isinstance(value, list):
            return "".join(
                text(item.get("text", item)) if isinstance(item, dict) else text(item) for item in value
            )
        return json.dumps(value, sort_keys=True)

    if client.name == "claude-code":
        blocks = [
            b for m in body.get("messages") or [] if isinstance(m.get("content"), list) for b in m["content"]
        ]
        return [text(b.get("content")) for b in blocks if b.get("type") == "tool_result"]
    if client.name == "codex":
        items = body.get("input") or []
        return [text(i.get("output")) for i in items if i.get("type") == "function_call_output"]
    if client.name == "gemini":
        parts = [p for c in body.get("contents") or [] for p in c.get("parts") or []]
        responses = [p["functionResponse"].get("response") or {} for p in parts if "functionResponse" in p]
        return [text(r["output"] if isinstance(r.get("output"), str) else r) for r in responses]
    return [text(m.get("content")) for m in body.get("messages") or [] if m.get("role") == "tool"]
