"""``graymatter doctor`` through the real CLI: read-only, a fix per problem, exit 1 only on failure."""

from __future__ import annotations

import json
import sys

from .conftest import Wiring


def _checks(wiring: Wiring, *args: str) -> tuple[int, dict[str, dict[str, str]]]:
    done = wiring.run("--json", *args, "doctor")
    return done.code, {c["name"]: c for c in done.json()["checks"]}


def test_doctor_on_a_fresh_home_creates_nothing_and_says_what_to_run(wiring: Wiring) -> None:
    before = wiring.snapshot()
    text = wiring.run("doctor")
    assert text.code == 0, text.stderr
    assert f"[ok  ] project: {wiring.project} (from git-root); agent id my-project" in text.stdout
    assert f"[info] store: {wiring.project}/.graymatter does not exist yet" in text.stdout
    assert "[warn] clients: no client is wired\n       fix: graymatter init\n" in text.stdout
    assert text.stdout.endswith("1 problem(s) found\n")
    assert wiring.snapshot() == before


def test_an_existing_store_is_read_not_changed(wiring: Wiring) -> None:
    store = wiring.project / ".graymatter"
    assert wiring.run("--dir", str(store), "remember", "my-project", "we deploy on Fridays").code == 0
    before = wiring.snapshot()
    code, checks = _checks(wiring)
    assert code == 0
    assert checks["store"]["status"] == "ok" and checks["store"]["message"].startswith(
        f"{store}: 1 facts, schema v"
    )
    assert checks["embedder"]["status"] == "ok"
    assert wiring.snapshot() == before


def test_stale_paths_and_missing_required_are_reported_with_the_fix(wiring: Wiring) -> None:
    assert wiring.run("init", "--client", "claude-code", "--client", "codex").code == 0
    mcp = wiring.project / ".mcp.json"
    data = json.loads(mcp.read_text())
    data["mcpServers"]["graymatter"]["command"] = "/gone/bin/graymatter"
    mcp.write_text(json.dumps(data))
    config = wiring.home / ".codex" / "config.toml"
    config.write_text(config.read_text().replace("required = true\n", ""))
    code, checks = _checks(wiring)
    assert code == 0
    claude = checks["claude-code: MCP server"]
    assert (
        claude["status"] == "warn"
        and claude["message"] == f"{mcp}: stale path: /gone/bin/graymatter does not exist"
    )
    assert claude["fix"] == "graymatter init --client claude-code"
    codex = checks["codex: MCP server"]
    assert codex["status"] == "warn" and "missing required" in codex["message"]
    assert wiring.run("init", "--client", "claude-code", "--client", "codex").code == 0
    code, checks = _checks(wiring)
    assert checks["claude-code: MCP server"]["status"] == checks["codex: MCP server"]["status"] == "ok"
    assert json.loads(mcp.read_text())["mcpServers"]["graymatter"]["command"] == sys.executable


def test_an_installed_client_without_wiring_is_a_warning(wiring: Wiring) -> None:
    (wiring.home / ".gemini").mkdir()
    code, checks = _checks(wiring)
    assert code == 0
    assert checks["gemini"]["status"] == "warn"
    assert checks["gemini"]["message"] == f"installed but not wired ({wiring.project}/.gemini/settings.json)"
    assert checks["gemini"]["fix"] == "graymatter init --client gemini"


def test_unreadable_files_are_hard_failures(wiring: Wiring) -> None:
    assert wiring.run("init", "--client", "opencode").code == 0
    (wiring.project / "opencode.json").write_text('{"mcp": {"graymatter": ')
    store = wiring.project / ".graymatter"
    store.mkdir()
    (store / "graymatter.db").write_bytes(b"not a database at all" * 100)
    done = wiring.run("doctor")
    assert done.code == 1
    assert "[FAIL] opencode: MCP server:" in done.stdout and "not valid JSON" in done.stdout
    assert "[FAIL] store: cannot read" in done.stdout


def test_a_bad_project_variable_is_a_failure_not_a_guess(wiring: Wiring) -> None:
    wiring.env["CLAUDE_PROJECT_DIR"] = "relative/path"
    code, checks = _checks(wiring)
    assert code == 1
    assert checks["routing"]["message"] == "CLAUDE_PROJECT_DIR must name an existing absolute directory"


def test_settings_are_checked_without_echoing_secrets(wiring: Wiring) -> None:
    code, checks = _checks(wiring)
    assert code == 0 and checks["settings"]["status"] == "ok"
    assert checks["settings"]["message"] == "embeddings: keyword (GRAYMATTER_EMBEDDINGS)"
    wiring.env.update(GRAYMATTER_TOP_K="many", OPENAI_API_KEY="sk-secret-value")
    code, checks = _checks(wiring)
    assert code == 1 and checks["settings"]["status"] == "fail"
    assert checks["settings"]["message"].startswith("invalid setting GRAYMATTER_TOP_K")
    assert "sk-secret-value" not in json.dumps(checks)
