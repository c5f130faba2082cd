"""One-command wiring with the real clients installed: ``graymatter init`` finds, wires and unwires all five.

A fresh HOME holds what users have before graymatter (each client's own settings, the five pinned client
executables on PATH). ``graymatter init --dry-run`` lists the changes and writes nothing; ``graymatter init``
detects exactly Claude Code, Codex, OpenCode, Gemini CLI and Qwen Code and wires them; ``graymatter doctor``
is green; a second ``init`` changes nothing; a real Claude Code session in between is offered the seven
tools; ``graymatter init --uninstall`` removes every file it created and restores every file it changed
byte for byte.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from gate import report
from gate.clients import CLIENTS, TOOLS, Layout
from gate.session import GRAYMATTER, graymatter_env, run_client

pytestmark = [pytest.mark.gate, pytest.mark.timeout(900)]


def snapshot(layout: Layout) -> dict[str, bytes]:
    """Every file under HOME and the project (except the store), by path."""
    files = {}
    for top in (layout.home, layout.project):
        for path in top.rglob("*"):
            if path.is_file() and layout.store not in path.parents:
                files[str(path)] = path.read_bytes()
    return files


def init(layout: Layout, bin_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**graymatter_env(layout), "PATH": f"{bin_dir}:{graymatter_env(layout)['PATH']}"}
    return subprocess.run(
        [GRAYMATTER, "--json", *args],
        cwd=layout.project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def installed_clients(layout: Layout) -> Path:
    """Seed each client's own settings and put the five pinned executables on a PATH directory."""
    bin_dir = layout.root / "bin"
    bin_dir.mkdir()
    for client in CLIENTS.values():
        client.seed(layout)
        name = "claude" if client.name == "claude-code" else client.name
        (bin_dir / name).symlink_to(client.command()[-1])
    return bin_dir


def test_init_detects_wires_and_uninstalls_the_five_installed_clients(tmp_path: Path) -> None:
    for client in CLIENTS.values():
        client.ensure()
    layout = Layout(tmp_path)
    layout.make()
    bin_dir = installed_clients(layout)
    before = snapshot(layout)
    problems = []
    dry = init(layout, bin_dir, "init", "--dry-run")
    planned = json.loads(dry.stdout) if dry.returncode == 0 else {}
    if sorted(planned.get("clients", [])) != sorted(CLIENTS) or snapshot(layout) != before:
        problems.append(f"dry run: exit {dry.returncode}, clients {planned.get('clients')}, or files written")
    done = init(layout, bin_dir, "init")
    changed = (
        {change["path"] for change in json.loads(done.stdout).get("changes", [])} if done.stdout else set()
    )
    if done.returncode != 0 or not changed:
        problems.append(f"init exited {done.returncode}: {done.stderr[-300:]}")
    doctor = init(layout, bin_dir, "doctor")
    if doctor.returncode != 0 or not json.loads(doctor.stdout or "{}").get("ok"):
        problems.append(f"doctor not green: {doctor.stdout[-400:]}")
    again = init(layout, bin_dir, "init")
    if again.returncode != 0 or json.loads(again.stdout or "{}").get("changes"):
        problems.append(f"a second init changed something: {again.stdout[-300:]}")
    run = run_client(CLIENTS["claude-code"], layout, [], prompt="hello", tag="detected")
    if run.offered(0) != sorted(TOOLS):
        problems.append(f"Claude Code after init: first request offered {run.offered(0)}")
    undone = init(layout, bin_dir, "init", "--uninstall")
    after = snapshot(layout)
    for path in sorted(changed):
        if before.get(path) != after.get(path):
            problems.append(f"uninstall left {path} {'changed' if path in before else 'behind'}")
    if undone.returncode != 0:
        problems.append(f"uninstall exited {undone.returncode}: {undone.stderr[-300:]}")
    report.add_row(
        "all five", "-", "init detects 5, doctor green, idempotent, uninstall exact", problems, run.seconds
    )
    assert not problems, "\n".join(problems)
