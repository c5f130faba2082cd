"""``--json`` works on every command: each leaf command of the parser has a scenario whose stdout is JSON.

A new command without a scenario fails ``test_every_command_has_a_json_scenario``, so the rule cannot rot.
Long-running servers and the hook runtime are listed with the reason their stdout is not ours to format.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from graymatter.faces.cli.parser import build_parser
from support.env import hermetic_env

NOT_JSON = {
    "mcp serve": "stdout is the MCP protocol stream",
    "hook": "stdout belongs to the client's hook protocol (tested in tests/graymatter/faces/hooks)",
    "serve": "a server: its banner is checked by test_serve_banner_is_json",
    "ui": "a server: prints its login URL, opens a browser (tested in tests/graymatter/faces/dashboard)",
}

SCENARIOS: list[tuple[str, list[str]]] = [  # (command, argv after the global flags), run in this order
    ("remember", ["remember", "a", "Deploys happen on Tuesdays"]),
    ("remember", ["remember", "a", "Acme is on the Enterprise plan"]),
    ("recall", ["recall", "a", "deploy"]),
    ("revise", ["revise", "a", "Deploys happen on Tuesdays", "Deploys happen on Wednesdays"]),
    ("pin", ["pin", "a", "Deploys happen on Wednesdays"]),
    ("unpin", ["unpin", "a", "Deploys happen on Wednesdays"]),
    ("alias", ["alias", "a", "k8s", "kubernetes"]),
    ("link", ["link", "a", "Acme", "Enterprise plan"]),
    ("list", ["list", "a"]),
    ("forget", ["forget", "a", "Acme is on the Enterprise plan"]),
    ("checkpoint save", ["checkpoint", "save", "a", "--state", '{"step": 1}']),
    ("checkpoint list", ["checkpoint", "list", "a"]),
    ("checkpoint resume", ["checkpoint", "resume", "a"]),
    ("consolidate", ["consolidate", "a"]),
    ("compact", ["compact"]),
    ("stats", ["stats"]),
    ("agents", ["agents"]),
    ("export", ["export", "--format", "json", "--out", "export.json"]),
    ("import", ["import", "export.json"]),
    ("demo", ["demo"]),
    ("token create", ["token", "create", "--agents", "a"]),
    ("token list", ["token", "list"]),
    ("migrate", ["migrate", "--from", "gm", "--to", "gm-copy"]),
    ("init", ["init", "--client", "codex"]),
    ("doctor", ["doctor"]),
    ("hooks install", ["hooks", "install", "--client", "codex"]),
    ("hooks doctor", ["hooks", "doctor"]),
    ("hooks uninstall", ["hooks", "uninstall", "--client", "codex"]),
    ("status", ["status"]),
    ("context-sync", ["context-sync"]),
]


def leaf_commands() -> list[str]:
    """Every command a user can run, as words (``checkpoint save``)."""
    found: list[str] = []

    def walk(parser: argparse.ArgumentParser, prefix: list[str]) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    if any(isinstance(a, argparse._SubParsersAction) for a in sub._actions):
                        walk(sub, [*prefix, name])
                    else:
                        found.append(" ".join([*prefix, name]))

    walk(build_parser(), [])
    return found


def test_every_command_has_a_json_scenario() -> None:
    covered = {command for command, _ in SCENARIOS} | set(NOT_JSON) | {"token revoke"}
    assert sorted(set(leaf_commands()) - covered) == []


def _run(work: Path, argv: list[str], *, json_first: bool) -> subprocess.CompletedProcess[str]:
    flags = ["--dir", "gm", "--json"]
    command = [sys.executable, "-m", "graymatter", *(flags + argv if json_first else argv + flags)]
    env = hermetic_env(HOME=str(work / "home"), CODEX_HOME=str(work / "home" / ".codex"))
    return subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("json_first", [True, False], ids=["flags-first", "flags-last"])
def test_every_command_prints_json(tmp_path: Path, json_first: bool) -> None:
    (tmp_path / "home").mkdir()
    (tmp_path / ".git").mkdir()  # a project root for init, hooks and context-sync
    for command, argv in SCENARIOS:
        result = _run(tmp_path, argv, json_first=json_first)
        assert result.returncode == 0, (command, result.stderr)
        try:
            json.loads(result.stdout)
        except json.JSONDecodeError:
            pytest.fail(f"{command}: --json printed {result.stdout[:300]!r}")
        if command == "token create":
            token_id = json.loads(result.stdout)["id"]
    revoked = _run(tmp_path, ["token", "revoke", token_id], json_first=json_first)
    assert revoked.returncode == 0 and json.loads(revoked.stdout) == {"revoked": token_id}


def test_errors_are_one_json_line_for_every_failing_read(tmp_path: Path) -> None:
    (tmp_path / "home").mkdir()
    result = _run(tmp_path, ["recall", "nobody", "x"], json_first=False)
    assert result.returncode == 3 and json.loads(result.stdout)["error"]["code"] == "store_not_found"
    assert result.stderr == ""


def test_serve_banner_is_json(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "graymatter", "serve", "--http", "127.0.0.1:0", "--dir", "gm", "--json"]
    proc = subprocess.Popen(command, cwd=tmp_path, env=hermetic_env(), stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        banner = json.loads(proc.stderr.readline())
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    assert banner["event"] == "listening" and banner["url"].startswith("http://127.0.0.1:")
    assert banner["mcp"] == banner["url"] + "/mcp" and banner["workers"] == 1
