"""``graymatter init`` through the real CLI: the fresh-HOME flow, merges into real files, refusals."""

from __future__ import annotations

import json
import os
import sys
import tomllib
from pathlib import Path

from graymatter.faces.wiring import blocks

from .conftest import Wiring

PYTHON_LAUNCH = [sys.executable, "-m", "graymatter"]


def test_fresh_home_dry_run_init_doctor_reinit_uninstall(wiring: Wiring) -> None:
    before = wiring.snapshot()
    dry = wiring.run("init", "--all", "--dry-run")
    assert dry.code == 0, dry.stderr
    assert f"would create {wiring.project}/.mcp.json (claude-code: MCP server)" in dry.stdout
    assert f"would create {wiring.home}/.codex/config.toml (codex: MCP server)" in dry.stdout
    assert f"+++ b{wiring.project}/CLAUDE.md" in dry.stdout
    assert wiring.snapshot() == before, "a dry run writes nothing"

    done = wiring.run("init", "--all")
    assert done.code == 0, done.stderr
    store = str(wiring.project / ".graymatter")
    mcp = json.loads((wiring.project / ".mcp.json").read_text())["mcpServers"]["graymatter"]
    assert mcp == {
        "type": "stdio",
        "command": sys.executable,
        "args": [*PYTHON_LAUNCH[1:], "--dir", store, "mcp", "serve"],
    }
    codex = tomllib.loads((wiring.home / ".codex" / "config.toml").read_text())["mcp_servers"]["graymatter"]
    assert codex["required"] is True and codex["startup_timeout_sec"] == 30.0
    assert codex["args"][-4:] == ["--dir", store, "mcp", "serve"]
    opencode = json.loads((wiring.project / "opencode.json").read_text())["mcp"]["graymatter"]
    assert opencode == {
        "type": "local",
        "command": [*PYTHON_LAUNCH, "--dir", store, "mcp", "serve"],
        "enabled": True,
        "timeout": 60000,
    }
    vscode = json.loads((wiring.project / ".vscode" / "mcp.json").read_text())
    assert list(vscode) == ["servers"]
    for name in ("CLAUDE.md", "AGENTS.md", "GEMINI.md", "QWEN.md", ".cursor/rules/graymatter.mdc"):
        assert blocks.state((wiring.project / name).read_text()) == "current", name
    assert (wiring.project / ".cursor/rules/graymatter.mdc").read_text().startswith("---\n")
    assert not (wiring.project / ".graymatter").exists(), "init does not create the store"

    doctor = wiring.run("--json", "doctor")
    assert doctor.code == 0, doctor.stderr
    report = doctor.json()
    problems = [c for c in report["checks"] if c["status"] in ("warn", "fail")]
    assert problems == [] and report["ok"] is True
    assert {c["name"] for c in report["checks"]} >= {
        "executable", "project", "store", "claude-code: MCP server", "codex: MCP server",
        "vscode: instruction block",
    }  # fmt: skip

    wired = wiring.snapshot()
    again = wiring.run("init", "--all")
    assert again.code == 0 and again.stdout == "nothing to change\n"
    assert wiring.snapshot() == wired

    gone = wiring.run("init", "--all", "--uninstall")
    assert gone.code == 0, gone.stderr
    assert f"removed {wiring.project}/.mcp.json" in gone.stdout
    assert wiring.snapshot() == before, "uninstall restores the tree exactly"
    assert (
        wiring.run("init", "--all", "--uninstall").stdout
        == "nothing to change (graymatter is not wired here)\n"
    )


FOREIGN = {
    ".mcp.json": '{\n  "mcpServers": {\n    "github": {\n      "command": "npx",\n'
    '      "args": ["-y", "gh"]\n    }\n  }\n}\n',
    ".gemini/settings.json": '{\r\n  // mine\r\n  "theme": "Dracula",\r\n  "mcpServers": {\r\n'
    '    "fs": { "command": "fs-server" }, /* keep */\r\n  },\r\n}\r\n',
    "opencode.json": '{\n  "$schema": "https://opencode.ai/config.json",\n  "mcp": {}\n}\n',
    "CLAUDE.md": "# My project\n\nUse tabs.\n",
    "AGENTS.md": "\ufeff# Agents\r\n\r\nBe brief.",
}
HOME_FILES = {
    ".codex/config.toml": '# mine\nmodel = "o3"\n\n[mcp_servers.github]\ncommand = "npx"\n',
    ".codeium/windsurf/mcp_config.json": '{"mcpServers": {"x": {"serverUrl": "http://127.0.0.1:1/mcp"}}}',
}


def _populate(wiring: Wiring) -> None:
    for base, files in ((wiring.project, FOREIGN), (wiring.home, HOME_FILES)):
        for name, text in files.items():
            (base / name).parent.mkdir(parents=True, exist_ok=True)
            (base / name).write_bytes(text.encode())


def test_existing_files_are_merged_backed_up_and_restored_byte_for_byte(wiring: Wiring) -> None:
    _populate(wiring)
    before = wiring.snapshot()
    done = wiring.run("init", "--all")
    assert done.code == 0, done.stderr
    gemini = (wiring.project / ".gemini/settings.json").read_bytes().decode()
    assert "// mine" in gemini and "/* keep */" in gemini and '"theme": "Dracula"' in gemini
    assert "\n" not in gemini.replace("\r\n", "")
    assert (wiring.project / ".gemini/settings.json.graymatter.bak").read_bytes() == FOREIGN[
        ".gemini/settings.json"
    ].encode()
    servers = json.loads((wiring.project / ".mcp.json").read_text())["mcpServers"]
    assert list(servers) == ["github", "graymatter"]
    codex = (wiring.home / ".codex/config.toml").read_text()
    assert codex.startswith(HOME_FILES[".codex/config.toml"] + "\n[mcp_servers.graymatter]\n")
    assert (
        (wiring.project / "CLAUDE.md").read_text().startswith("# My project\n\nUse tabs.\n\n<!-- graymatter")
    )
    assert wiring.run("init", "--all").stdout == "nothing to change\n"
    assert wiring.run("init", "--all", "--uninstall").code == 0
    assert wiring.snapshot() == before


def test_uninstall_after_other_edits_removes_only_graymatter(wiring: Wiring) -> None:
    _populate(wiring)
    assert wiring.run("init", "--client", "gemini", "--client", "codex").code == 0
    settings = wiring.project / ".gemini/settings.json"
    settings.write_bytes(settings.read_bytes().replace(b'"Dracula"', b'"Light"'))
    config = wiring.home / ".codex/config.toml"
    config.write_text(config.read_text() + "\n[features]\nweb_search = true\n")
    assert wiring.run("init", "--client", "gemini", "--client", "codex", "--uninstall").code == 0
    assert settings.read_bytes() == FOREIGN[".gemini/settings.json"].replace('"Dracula"', '"Light"').encode()
    assert tomllib.loads(config.read_text()) == {
        "model": "o3", "mcp_servers": {"github": {"command": "npx"}}, "features": {"web_search": True}
    }  # fmt: skip
    assert "# mine" in config.read_text()


def test_an_unparsable_file_stops_everything(wiring: Wiring) -> None:
    _populate(wiring)
    (wiring.home / ".codex/config.toml").write_text("model = \n")
    before = wiring.snapshot()
    done = wiring.run("init", "--all")
    assert done.code == 2
    assert done.stderr.count("\n") == 1
    assert f"{wiring.home}/.codex/config.toml: not valid TOML" in done.stderr
    assert "nothing was changed" in done.stderr and "model" not in done.stdout
    assert wiring.snapshot() == before
    strict = wiring.run("init", "--client", "claude-code")
    (wiring.project / ".mcp.json").write_text('{"mcpServers": {} // no comments here\n}')
    assert strict.code == 0
    refused = wiring.run("init", "--client", "claude-code")
    assert refused.code == 2 and "comments are not allowed in this JSON file" in refused.stderr


def test_without_client_only_installed_clients_are_wired(wiring: Wiring) -> None:
    (wiring.home / ".gemini").mkdir()
    (wiring.home / ".qwen").mkdir()
    done = wiring.run("init")
    assert done.code == 0, done.stderr
    assert (wiring.project / ".gemini/settings.json").is_file() and (
        wiring.project / ".qwen/settings.json"
    ).is_file()
    assert not (wiring.project / ".mcp.json").exists() and not (wiring.home / ".codex").exists()
    bare = wiring.run("init", cwd=wiring.home)
    assert "gemini" in bare.stdout or bare.code == 0


def test_nothing_detected_says_how_to_choose(wiring: Wiring) -> None:
    done = wiring.run("init")
    assert done.code == 0
    assert done.stdout.startswith("no client detected; name one with --client (claude-code, codex,")
    unknown = wiring.run("init", "--client", "emacs")
    assert unknown.code == 2 and "unknown client 'emacs'; choose from claude-code" in unknown.stderr


def test_global_scope_writes_user_files_with_an_explicit_store(wiring: Wiring) -> None:
    store = wiring.root / "team-store"
    done = wiring.run(
        "--dir", str(store), "init", "--client", "claude-code", "--client", "opencode", "--global"
    )
    assert done.code == 0, done.stderr
    claude = json.loads((wiring.home / ".claude.json").read_text())["mcpServers"]["graymatter"]
    assert claude["args"][-4:] == ["--dir", str(store), "mcp", "serve"]
    assert blocks.state((wiring.home / ".claude/CLAUDE.md").read_text()) == "current"
    assert (wiring.home / ".config/opencode/opencode.json").is_file()
    assert not (wiring.project / ".mcp.json").exists()
    routed = wiring.run("init", "--client", "cursor", "--global")
    cursor = json.loads((wiring.home / ".cursor/mcp.json").read_text())["mcpServers"]["graymatter"]
    assert routed.code == 0 and "--dir" not in cursor["args"], (
        "global entries without --dir route at run time"
    )


def test_client_homes_follow_their_variables(wiring: Wiring) -> None:
    codex_home, claude_dir = wiring.root / "codex-home", wiring.root / "claude-dir"
    wiring.env.update(CODEX_HOME=str(codex_home), CLAUDE_CONFIG_DIR=str(claude_dir))
    wiring.env["XDG_CONFIG_HOME"] = str(wiring.root / "xdg")
    done = wiring.run(
        "init", "--client", "codex", "--client", "claude-code", "--client", "opencode", "--global"
    )
    assert done.code == 0, done.stderr
    assert (codex_home / "config.toml").is_file() and (codex_home / "AGENTS.md").is_file()
    assert (claude_dir / ".claude.json").is_file() and (claude_dir / "CLAUDE.md").is_file()
    assert (wiring.root / "xdg/opencode/opencode.json").is_file()
    assert not (wiring.home / ".codex").exists() and not (wiring.home / ".claude.json").exists()


def test_hand_edited_blocks_are_reported_not_overwritten(wiring: Wiring) -> None:
    assert wiring.run("init", "--client", "claude-code").code == 0
    claude_md = wiring.project / "CLAUDE.md"
    edited = claude_md.read_text().replace("Never store secrets", "Store everything")
    claude_md.write_text(edited)
    again = wiring.run("init", "--client", "claude-code")
    assert again.code == 0
    assert f"note: {claude_md}: the instruction block was edited by hand; left as it is" in again.stdout
    assert claude_md.read_text() == edited
    checks = {c["name"]: c for c in wiring.run("--json", "doctor").json()["checks"]}
    block = checks["claude-code: instruction block"]
    assert block["status"] == "warn" and "edited by hand" in block["message"]
    assert block["fix"] == f"delete the block from {claude_md}, then: graymatter init --client claude-code"


def test_an_existing_opencode_jsonc_is_edited_in_place(wiring: Wiring) -> None:
    jsonc_file = wiring.project / "opencode.jsonc"
    original = '{\n  // my OpenCode settings\n  "model": "local/m",\n}\n'
    jsonc_file.write_text(original)
    assert wiring.run("init", "--client", "opencode").code == 0
    assert not (wiring.project / "opencode.json").exists()
    text = jsonc_file.read_text()
    assert text.startswith('{\n  // my OpenCode settings\n  "model": "local/m",\n  "mcp": {')
    assert wiring.run("init", "--client", "opencode", "--uninstall").code == 0
    assert jsonc_file.read_text() == original


def test_the_entry_init_wrote_starts_a_working_server(wiring: Wiring) -> None:
    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    assert wiring.run("init", "--client", "claude-code").code == 0
    entry = json.loads((wiring.project / ".mcp.json").read_text())["mcpServers"]["graymatter"]
    params = StdioServerParameters(
        command=entry["command"], args=entry["args"], env=wiring.env, cwd=wiring.home
    )

    async def main() -> list[str]:
        async with Client(params, mode="legacy") as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
            added = await client.call_tool("memory_add", {"agent_id": "my-project", "text": "wired by init"})
            assert not added.is_error
            return names

    names = anyio.run(main)
    assert len(names) == 7 and "checkpoint_resume" in names
    assert (wiring.project / ".graymatter" / "graymatter.db").is_file()
    assert not (wiring.home / ".graymatter").exists()


def test_json_output_lists_every_change(wiring: Wiring) -> None:
    dry = wiring.run("--json", "init", "--client", "codex", "--dry-run").json()
    assert dry["dry_run"] is True and dry["clients"] == ["codex"] and dry["scope"] == "project"
    assert dry["store"] == str(wiring.project / ".graymatter") and dry["root"] == str(wiring.project)
    changes = {change["path"]: change for change in dry["changes"]}
    config = changes[str(wiring.home / ".codex" / "config.toml")]
    assert config["action"] == "create" and config["what"] == ["codex: MCP server"]
    assert "+required = true\n" in config["diff"]
    assert not (wiring.home / ".codex").exists()


def test_replacing_an_entry_that_served_another_store_is_said(wiring: Wiring) -> None:
    other = wiring.root / "other-project"
    (other / ".git").mkdir(parents=True)
    assert wiring.run("init", "--client", "codex", cwd=other).code == 0
    again = wiring.run("init", "--client", "codex")
    config = wiring.home / ".codex" / "config.toml"
    assert again.code == 0
    assert (
        f"note: {config}: replaced codex's graymatter entry (was: {sys.executable} -m graymatter --dir "
        in again.stdout
    )
    assert f"{other}/.graymatter mcp serve)" in again.stdout


def test_modes_symlinks_and_backups(wiring: Wiring) -> None:
    import os
    import stat

    dotfiles = wiring.root / "dotfiles"
    dotfiles.mkdir()
    real = dotfiles / "settings.json"
    real.write_text('{"theme": "Light"}\n')
    real.chmod(0o644)
    (wiring.home / ".gemini").mkdir()
    (wiring.home / ".gemini" / "settings.json").symlink_to(real)
    assert wiring.run("init", "--client", "gemini", "--global").code == 0
    assert (wiring.home / ".gemini" / "settings.json").is_symlink(), "the link is kept, its target edited"
    assert json.loads(real.read_text())["mcpServers"]["graymatter"]["timeout"] == 60000
    assert stat.S_IMODE(real.stat().st_mode) == 0o644, "an existing file keeps its mode"
    backup = wiring.home / ".gemini" / "settings.json.graymatter.bak"
    assert backup.read_text() == '{"theme": "Light"}\n' and stat.S_IMODE(backup.stat().st_mode) == 0o600
    created = wiring.home / ".gemini" / "GEMINI.md"
    assert stat.S_IMODE(created.stat().st_mode) == 0o600, "new files are private"
    assert wiring.run("init", "--client", "gemini", "--global", "--uninstall").code == 0
    assert real.read_text() == '{"theme": "Light"}\n' and not backup.exists() and not created.exists()
    assert os.path.islink(wiring.home / ".gemini" / "settings.json")


def test_doctor_global_scope_reads_the_user_files(wiring: Wiring) -> None:
    assert wiring.run("init", "--client", "claude-code", "--global").code == 0
    done = wiring.run("--json", "doctor", "--global")
    checks = {c["name"]: c for c in done.json()["checks"]}
    assert done.code == 0
    user_file = str(wiring.home / ".claude.json")
    assert checks["claude-code: MCP server"] == {
        "name": "claude-code: MCP server", "status": "ok", "message": user_file, "fix": None
    }  # fmt: skip
    project = {c["name"]: c for c in wiring.run("--json", "doctor").json()["checks"]}
    assert project["claude-code"]["status"] == "warn", "the project scope has no .mcp.json yet"
    assert project["claude-code"]["fix"] == "graymatter init --client claude-code"


def test_user_file_only_clients_still_get_the_project_instruction_file(wiring: Wiring) -> None:
    assert wiring.run("init", "--client", "codex", "--client", "windsurf").code == 0
    assert (wiring.home / ".codex" / "config.toml").is_file()
    assert blocks.state((wiring.project / "AGENTS.md").read_text()) == "current"
    assert blocks.state((wiring.project / ".windsurf/rules/graymatter.md").read_text()) == "current"
    assert not (wiring.home / ".codex" / "AGENTS.md").exists()
    assert not (wiring.home / ".codeium/windsurf/memories").exists()


def test_the_console_script_records_its_own_absolute_path(wiring: Wiring) -> None:
    import shutil
    import subprocess

    script = Path(sys.executable).parent / "graymatter"
    assert script.is_file(), "the dev install provides the console script"
    relative = Path(os.path.relpath(script, wiring.project))
    done = subprocess.run(
        [str(relative), "init", "--client", "cursor"],
        cwd=wiring.project,
        env=wiring.env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    entry = json.loads((wiring.project / ".cursor" / "mcp.json").read_text())["mcpServers"]["graymatter"]
    assert entry["command"] == str(script) and Path(entry["command"]).is_absolute()
    assert entry["args"] == ["--dir", str(wiring.project / ".graymatter"), "mcp", "serve"]
    assert shutil.which("graymatter", path=wiring.env["PATH"]) == str(script)
