"""``init`` / ``hooks install|uninstall|doctor``, ``status`` and ``context-sync`` through the real CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from graymatter.config import MemoryConfig
from graymatter.engine.memory import Memory

Env = Callable[..., dict[str, str]]

FOREIGN_CLAUDE = """{
    "hooks": {
        "UserPromptSubmit": [
            {"hooks": [{"type": "command", "command": "$CLAUDE_PROJECT_DIR/.claude/check.sh"}]}
        ]
    },
    "statusLine": {"type": "command", "command": "~/bin/status"}
}
"""


@pytest.fixture
def gm(tmp_path: Path, project: Path, hook_env: Env) -> Callable[..., subprocess.CompletedProcess[str]]:
    env = hook_env(HOME=str(tmp_path / "home"))

    def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "graymatter", *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
            cwd=project,
        )

    return run


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def run_registered(settings: Path, event: str, payload: dict[str, Any]) -> subprocess.CompletedProcess[bytes]:
    """Run the handler registered for ``event`` exactly as Claude Code runs exec-form hooks."""
    group = json.loads(settings.read_text())["hooks"][event][-1]
    handler = group["hooks"][0]
    return subprocess.run(
        [handler["command"], *handler["args"]],
        input=json.dumps(payload).encode(),
        capture_output=True,
        timeout=60,
    )


def test_init_wires_claude_code_hooks_that_store_and_inject(project: Path, gm: Callable[..., Any]) -> None:
    done = gm("init", "--client", "claude-code")
    assert done.returncode == 0, done.stderr
    settings = project / ".claude" / "settings.json"
    assert "claude-code: hook UserPromptSubmit" in done.stdout
    handler = json.loads(settings.read_text())["hooks"]["SessionStart"][0]["hooks"][0]
    assert Path(handler["command"]).is_absolute()
    assert handler["args"][-5:] == [
        "--dir",
        str(project / ".graymatter"),
        "hook",
        "claude-code",
        "session-start",
    ]
    note = run_registered(
        settings, "UserPromptSubmit", {"cwd": str(project), "prompt": "remember: CI runs make test"}
    )
    assert note.returncode == 0 and b"CI runs make test" in note.stdout
    start = run_registered(settings, "SessionStart", {"cwd": str(project), "source": "startup"})
    assert "- CI runs make test" in json.loads(start.stdout)["hookSpecificOutput"]["additionalContext"]
    again = gm("init", "--client", "claude-code")
    assert again.stdout.strip() == "nothing to change"


def test_hooks_install_and_uninstall_keep_foreign_hooks_byte_for_byte(
    project: Path, gm: Callable[..., Any]
) -> None:
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(FOREIGN_CLAUDE)
    installed = gm("hooks", "install", "--client", "claude-code", "--client", "gemini")
    assert installed.returncode == 0, installed.stderr
    data = json.loads(settings.read_text())
    assert data["statusLine"] == {"type": "command", "command": "~/bin/status"}
    foreign, ours = data["hooks"]["UserPromptSubmit"]
    assert foreign["hooks"][0]["command"] == "$CLAUDE_PROJECT_DIR/.claude/check.sh"
    assert ours["hooks"][0]["args"][-3:] == ["hook", "claude-code", "user-prompt"]
    assert sorted(data) == ["hooks", "statusLine"]  # hooks install adds no MCP entry
    assert gm("hooks", "install", "--client", "claude-code").stdout == "nothing to change\n"
    doctor = gm("hooks", "doctor", "--client", "claude-code", "--client", "gemini", "--json")
    assert doctor.returncode == 0
    assert [(c["client"], c["status"]) for c in json.loads(doctor.stdout)] == [
        ("claude-code", "ok"),
        ("gemini", "ok"),
        ("store", "warn"),
    ]
    removed = gm("hooks", "uninstall", "--client", "claude-code", "--client", "gemini")
    assert removed.returncode == 0, removed.stderr
    assert settings.read_text() == FOREIGN_CLAUDE
    assert not (project / ".gemini" / "settings.json").exists()


def test_hooks_install_for_codex_writes_its_user_file_wired_to_the_project_store(
    tmp_path: Path, project: Path, gm: Callable[..., Any]
) -> None:
    done = gm("hooks", "install", "--client", "codex")
    assert done.returncode == 0, done.stderr
    hooks = json.loads((tmp_path / "home" / ".codex" / "hooks.json").read_text())
    assert list(hooks) == ["hooks"]
    assert sorted(hooks["hooks"]) == ["PreCompact", "SessionEnd", "SessionStart", "UserPromptSubmit"]
    command = hooks["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    assert command.endswith(f"--dir {project / '.graymatter'} hook codex user-prompt")
    assert not (project / ".codex").exists()


def test_hooks_install_refuses_an_unparsable_settings_file_and_writes_nothing(
    project: Path, gm: Callable[..., Any]
) -> None:
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text('{"hooks": {"SessionStart": [}')
    before = tree(project)
    done = gm("hooks", "install", "--client", "qwen", "--client", "claude-code")
    assert done.returncode == 2
    assert done.stderr.startswith("graymatter: error: ") and "nothing was changed" in done.stderr
    assert len(done.stderr.splitlines()) == 1
    assert tree(project) == before


def test_hooks_doctor_reports_a_stale_path_and_creates_nothing(project: Path, gm: Callable[..., Any]) -> None:
    stale = {
        "type": "command",
        "command": "/gone/bin/graymatter",
        "args": ["hook", "claude-code", "user-prompt"],
    }
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"hooks": {"UserPromptSubmit": [{"hooks": [stale]}]}}))
    before = tree(project)
    doctor = gm("hooks", "doctor", "--client", "claude-code")
    assert doctor.returncode == 1
    lines = doctor.stdout.splitlines()
    assert (
        lines[0].startswith("warn claude-code: hooks in ")
        and "differ from this install (0/4 current)" in lines[0]
    )
    assert lines[1] == (
        "fail claude-code: the registered executable /gone/bin/graymatter does not exist"
        " -> graymatter hooks install --client claude-code"
    )
    assert tree(project) == before


def seed(store: Path) -> None:
    with Memory(store, config=MemoryConfig(), embedder=None, summariser=None) as memory:
        memory.remember("my-app", "releases are cut from the main branch")
        memory.remember("my-app", "the API listens on port 8080")
        memory.remember_shared("dates are ISO 8601 in UTC")
        memory.checkpoint_save("my-app", {"task": "release"})
        memory.recall("my-app", "port", 2)


def test_status_counts_per_agent_and_reports_hook_injections(
    project: Path, gm: Callable[..., Any], run_hook: Callable[..., Any]
) -> None:
    store = project / ".graymatter"
    seed(store)
    assert run_hook("claude-code", "session-start", {"session_id": "s", "source": "startup"}).stdout
    assert run_hook("claude-code", "user-prompt", {"session_id": "s", "prompt": "which port?"}).stdout
    done = gm("--json", "status")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    rows = {r["agent_id"]: r for r in report["agents"]}
    assert (rows["my-app"]["facts"], rows["my-app"]["checkpoints"]) == (2, 1)
    assert rows["my-app"]["recalls"] >= 2 and rows["__shared__"]["facts"] == 1
    assert report["hooks"]["last_24h"]["runs"] == 2 and report["hooks"]["last_24h"]["injected"] == 2
    recent = report["hooks"]["recent"]
    assert [(r["event"], r["outcome"]) for r in recent] == [
        ("session-start", "injected"),
        ("user-prompt", "injected"),
    ]
    assert report["hooks"]["last_24h"]["tokens"] == sum(r["tokens"] for r in recent) > 0
    text = gm("status").stdout
    assert text.splitlines()[0] == f"store: {store}"
    assert "claude-code user-prompt: injected (~" in text


def test_status_on_a_missing_store_fails_and_creates_nothing(project: Path, gm: Callable[..., Any]) -> None:
    done = gm("status")
    assert done.returncode != 0 and "no graymatter store at" in done.stderr
    assert sorted(p.name for p in project.iterdir()) == [".git"]


def test_context_sync_writes_updates_and_keeps_the_rest_of_the_file(
    project: Path, gm: Callable[..., Any]
) -> None:
    seed(project / ".graymatter")
    agents = project / "AGENTS.md"
    agents.write_bytes(b"# Agents\r\n\r\nRun make test before pushing.\r\n")
    first = gm("context-sync")
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith(f"updated {agents} (3 facts, ~")
    text = agents.read_bytes().decode()
    assert text.startswith(
        "# Agents\r\n\r\nRun make test before pushing.\r\n\r\n<!-- graymatter:context:begin v1 sha256="
    )
    assert "- releases are cut from the main branch\r\n" in text and "- dates are ISO 8601 in UTC\r\n" in text
    assert text.endswith("<!-- graymatter:context:end -->\r\n")
    assert gm("context-sync").stdout.startswith("unchanged ")
    with Memory(project / ".graymatter", config=MemoryConfig(), embedder=None) as memory:
        memory.remember("my-app", "staging deploys run nightly")
    assert gm("context-sync").stdout.startswith("updated ")
    text = agents.read_bytes().decode()
    assert text.count("graymatter:context:begin") == 1 and "- staging deploys run nightly\r\n" in text
    assert (project / "AGENTS.md.graymatter.bak").is_file()


def test_context_sync_respects_the_budget_and_refuses_a_hand_edited_block(
    project: Path, gm: Callable[..., Any]
) -> None:
    seed(project / ".graymatter")
    with Memory(project / ".graymatter", config=MemoryConfig(), embedder=None) as memory:
        memory.remember_many(
            "my-app", [f"fact number {i} about the build system and its caches" for i in range(60)]
        )
    done = gm("--json", "context-sync", "--budget", "100")
    [result] = json.loads(done.stdout)
    assert result["path"] == str(project / "AGENTS.md") and result["action"] == "created"
    assert result["tokens"] <= 100 and 0 < result["facts"] < 60
    claude = project / "CLAUDE.md"
    claude.write_text("x\n")
    agents = project / "AGENTS.md"
    agents.write_text(agents.read_text().replace("fact number", "FACT NUMBER", 1))
    before = tree(project)
    refused = gm("context-sync")
    assert refused.returncode == 2
    assert "was edited by hand; remove it to let context-sync write" in refused.stderr
    assert tree(project) == before
    assert gm("context-sync", "--budget", "10").returncode == 2
