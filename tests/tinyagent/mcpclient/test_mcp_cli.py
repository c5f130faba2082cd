"""MCP servers through the real CLI against the provider stubs: offered tools, results, resume checks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from support.env import hermetic_env
from support.provider_stubs import ProviderStub
from support.request_bodies import tool_results
from support.tinyagent_cli import load_json, run_cli

SERVER = Path(__file__).with_name("stdio_server.py")
KEYS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY", "codex": "OPENAI_API_KEY"}


def offered_tools(wire_provider: str, body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Tool name -> input schema, as one request body offers them, per wire format."""
    if wire_provider == "openai":
        return {t["function"]["name"]: t["function"]["parameters"] for t in body["tools"]}
    if wire_provider == "anthropic":
        return {t["name"]: t["input_schema"] for t in body["tools"]}
    return {t["name"]: t["parameters"] for t in body["tools"]}


def mcp_flag(tmp_path: Path, *extra: str) -> str:
    return f"stub={sys.executable} {SERVER} --log {tmp_path / 'calls.log'} {' '.join(extra)}".strip()


def run(tmp_path: Path, stub: ProviderStub, provider: str, *args: object) -> Any:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    argv = ["--provider", provider, "-m", "m1", "--base-url", stub.base_url(provider), "--cwd", work, *args]
    return run_cli(argv, cwd=tmp_path, env=hermetic_env(tmp_path, {KEYS[provider]: "key-0123456789"}))


@pytest.mark.parametrize("stream", ["--stream", "--no-stream"])
@pytest.mark.parametrize("provider", ["openai", "anthropic", "codex"])
def test_mcp_tools_are_offered_called_and_an_invalid_structured_result_is_an_error(
    tmp_path: Path, provider: str, stream: str
) -> None:
    replies = [
        {"tool_calls": [{"name": "mcp__stub__add", "arguments": {"a": 20, "b": 22}}]},
        {"tool_calls": [{"name": "mcp__stub__bad_add", "arguments": {"a": 1, "b": 1}}]},
        {"tool_calls": [{"name": "submit", "arguments": {"answer": "42"}}]},
    ]
    with ProviderStub(replies) as stub:
        result = run(
            tmp_path, stub, provider, "-t", "add", "--mcp", mcp_flag(tmp_path), "-o", "r.json", stream
        )
        requests = list(stub.requests)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "42\n"
    wire = "openai" if provider == "openai" else provider
    tools = offered_tools(wire, requests[0].body)
    assert list(tools)[:5] == ["bash", "read_file", "write_file", "edit_file", "submit"]
    assert list(tools)[5:] == [
        "mcp__stub__echo", "mcp__stub__add", "mcp__stub__bad_add", "mcp__stub__die", "mcp__stub__block",
    ]  # fmt: skip
    assert tools["mcp__stub__add"]["properties"] == {"a": {"type": "integer"}, "b": {"type": "integer"}}
    results = tool_results(provider, requests[2].body)
    assert results[0] == "42"
    assert results[1].startswith(
        "error: MCP tool mcp__stub__bad_add returned a result that does not match its output schema ("
    )
    trajectory = load_json(tmp_path / "r.json")
    assert [t["name"] for t in trajectory["tools"]][5:7] == ["mcp__stub__echo", "mcp__stub__add"]
    assert [m["is_error"] for m in trajectory["messages"] if m["role"] == "tool"] == [False, True, False]
    assert (tmp_path / "calls.log").read_text().split()[::2] == ["add", "bad_add"]


def _stopped_run(tmp_path: Path, stub: ProviderStub) -> Path:
    stub.add({"tool_calls": [{"name": "mcp__stub__echo", "arguments": {"text": "x"}}]})
    result = run(
        tmp_path,
        stub,
        "openai",
        "-t",
        "t",
        "--mcp",
        mcp_flag(tmp_path),
        "-o",
        "run.json",
        "--step-limit",
        "1",
    )
    assert result.returncode == 1, result.stderr
    return tmp_path / "run.json"


def _resume(tmp_path: Path, stub: ProviderStub, *extra: object) -> Any:
    work = tmp_path / "work"
    argv = ["--resume", "run.json", "--cwd", work, "--base-url", stub.base_url("openai"), "-o", "c.json"]
    return run_cli(
        [*argv, "--step-limit", "5", *extra],
        cwd=tmp_path,
        env=hermetic_env(tmp_path, {"OPENAI_API_KEY": "k" * 12}),
    )


def test_a_changed_mcp_tool_set_refuses_resume(tmp_path: Path) -> None:
    with ProviderStub() as stub:
        _stopped_run(tmp_path, stub)
        stub.requests.clear()
        added = _resume(tmp_path, stub, "--mcp", mcp_flag(tmp_path, "--extra", "fresh"))
        missing = _resume(tmp_path, stub)
        assert stub.requests == []
    assert added.returncode == 2
    assert added.stderr.splitlines() == [
        "tinyagent: cannot resume: mcp tools changed: the MCP servers offer other tools than the run started "
        "with (+mcp__stub__fresh); configure the same servers (mcp_servers, --mcp, --memory) or start a "
        "fresh task"
    ]
    assert missing.returncode == 2
    assert missing.stderr.splitlines()[0].startswith(
        "tinyagent: cannot resume: mcp tools changed: the MCP servers offer other tools than the run started "
        "with (-mcp__stub__add -mcp__stub__bad_add -mcp__stub__block -mcp__stub__die -mcp__stub__echo)"
    )
    assert not (tmp_path / "c.json").exists()


def test_the_same_mcp_tool_set_resumes(tmp_path: Path) -> None:
    with ProviderStub() as stub:
        _stopped_run(tmp_path, stub)
        stub.add({"tool_calls": [{"name": "mcp__stub__echo", "arguments": {"text": "resumed"}}]})
        stub.add({"tool_calls": [{"name": "submit", "arguments": {"answer": "ok"}}]})
        result = _resume(tmp_path, stub, "--mcp", mcp_flag(tmp_path))
        body = stub.requests[-1].body
    assert result.returncode == 0, result.stderr
    assert [m["content"] for m in body["messages"] if m["role"] == "tool"] == ["echo: x", "echo: resumed"]


def test_a_project_config_may_not_declare_mcp_servers(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / ".tinyagent.yaml").write_text("mcp_servers:\n  evil:\n    command: /bin/true\n", encoding="utf-8")
    with ProviderStub() as stub:
        result = run(tmp_path, stub, "openai", "-t", "t", "-o", "r.json")
        assert stub.requests == []
    assert result.returncode == 2
    assert "declares mcp_servers; a repository must not start programs of its choosing" in result.stderr


def test_config_servers_and_a_bad_flag(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(
        f"mcp_servers:\n  cfg:\n    command: {sys.executable}\n    args: [{str(SERVER)!r}]\n    timeout: 5\n",
        encoding="utf-8",
    )
    with ProviderStub([{"tool_calls": [{"name": "submit", "arguments": {"answer": "ok"}}]}]) as stub:
        result = run(tmp_path, stub, "openai", "-t", "t", "-o", "r.json", "--config", config)
        tools = offered_tools("openai", stub.requests[0].body)
        bad = run(tmp_path, stub, "openai", "-t", "t", "-o", "r2.json", "--mcp", "no spaces=x")
    assert result.returncode == 0, result.stderr
    assert "mcp__cfg__add" in tools
    assert bad.returncode == 2
    assert bad.stderr.strip().endswith("must be 1-32 letters, digits, '_' or '-'")


def test_a_run_without_mcp_servers_never_imports_the_sdk(tmp_path: Path) -> None:
    script = tmp_path / "s.json"
    script.write_text('{"replies": [{"tool_calls": [{"name": "submit", "arguments": {"answer": "ok"}}]}]}')
    work = tmp_path / "work"
    work.mkdir()
    argv = [
        "-t",
        "t",
        "--provider",
        "scripted",
        "--base-url",
        script,
        "--cwd",
        work,
        "-o",
        tmp_path / "r.json",
    ]
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "tinyagent", *map(str, argv)],
        capture_output=True,
        text=True,
        env=hermetic_env(tmp_path),
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    imported = {line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines() if "|" in line}
    assert "tinyagent.runner" in imported  # the probe sees the run's imports
    assert not {
        name for name in imported if name == "mcp" or name.startswith(("mcp.", "tinyagent.mcpclient"))
    }


def test_a_streamable_http_server_with_a_bearer_token_from_the_environment(tmp_path: Path) -> None:
    from support.processes import TOKEN, start_mcp_http

    server = start_mcp_http(tmp_path / "store", "--token", TOKEN)
    try:
        config = tmp_path / "c.yaml"
        config.write_text(
            f"mcp_servers:\n  mem:\n    url: {server.url}\n    bearer_token_env: MEM_TOKEN\n",
            encoding="utf-8",
        )
        add = {"agent_id": "a", "text": "HTTP memory works."}
        replies = [
            {"tool_calls": [{"name": "mcp__mem__memory_add", "arguments": add}]},
            {
                "tool_calls": [
                    {"name": "mcp__mem__memory_search", "arguments": {"agent_id": "a", "query": "HTTP"}}
                ]
            },
            {"tool_calls": [{"name": "submit", "arguments": {"answer": "ok"}}]},
        ]
        work = tmp_path / "work"
        work.mkdir()
        env = hermetic_env(tmp_path, {"OPENAI_API_KEY": "key-0123456789", "MEM_TOKEN": TOKEN})
        with ProviderStub(replies) as stub:
            argv = ["-t", "t", "--provider", "openai", "-m", "m1", "--base-url", stub.base_url("openai")]
            result = run_cli(
                [*argv, "--cwd", work, "-o", "r.json", "--config", config], cwd=tmp_path, env=env
            )
            last = stub.requests[-1].body
            missing = run_cli(
                [*argv, "--cwd", work, "-o", "r2.json", "--config", config],
                cwd=tmp_path,
                env=hermetic_env(tmp_path, {"OPENAI_API_KEY": "key-0123456789"}),
            )
    finally:
        server.stop()
    assert result.returncode == 0, result.stderr
    results = [m["content"] for m in last["messages"] if m["role"] == "tool"]
    assert "HTTP memory works." in results[1]
    assert TOKEN not in json.dumps(load_json(tmp_path / "r.json"))
    assert missing.returncode == 2
    assert "the bearer token variable MEM_TOKEN is not set" in missing.stderr
