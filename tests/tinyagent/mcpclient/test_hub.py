"""The MCP hub against a real stdio server process: tool specs, results, schema checks, timeouts, restarts."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tinyagent.config.mcp import McpServerConfig
from tinyagent.mcpclient.hub import McpHub, McpSetupError
from tinyagent.tools.toolbox import ToolResult

SERVER = Path(__file__).with_name("stdio_server.py")


def _hub(tmp_path: Path, *extra: str, timeout: float = 20) -> McpHub:
    config = McpServerConfig(
        command=sys.executable, args=[str(SERVER), "--log", str(tmp_path / "calls.log"), *extra]
    )
    return McpHub([("stub", config)], cwd=str(tmp_path), timeout=timeout, output_cap=10_000)


def _calls(tmp_path: Path) -> list[tuple[str, int]]:
    lines = (tmp_path / "calls.log").read_text(encoding="utf-8").splitlines()
    return [(name, int(pid)) for name, pid in (line.split() for line in lines)]


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[McpHub]:
    hub = _hub(tmp_path)
    hub.start()
    try:
        yield hub
    finally:
        hub.close()


def test_tools_are_offered_with_their_input_schemas(tmp_path: Path) -> None:
    hub = _hub(tmp_path, "--extra", "odd.name")
    try:
        specs = hub.start()
    finally:
        hub.close()
    names = [spec.name for spec in specs]
    assert names == [
        "mcp__stub__echo", "mcp__stub__add", "mcp__stub__bad_add", "mcp__stub__die", "mcp__stub__block",
        "mcp__stub__odd_name",
    ]  # fmt: skip
    add = specs[1]
    assert add.description == "[MCP server stub] Add two integers."
    assert add.parameters == {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    }


def test_results_and_a_structured_result_that_violates_its_output_schema(hub: McpHub) -> None:
    assert hub.call("mcp__stub__echo", {"text": "hi"}) == ToolResult("echo: hi")
    assert hub.call("mcp__stub__add", {"a": 2, "b": 3}) == ToolResult("5")
    bad = hub.call("mcp__stub__bad_add", {"a": 2, "b": 3})
    assert bad.is_error
    assert bad.content.startswith(
        "error: MCP tool mcp__stub__bad_add returned a result that does not match its output schema ("
    )
    assert "'5' is not of type 'integer'" in bad.content


def test_a_server_that_dies_is_an_error_result_and_restarted_once(hub: McpHub, tmp_path: Path) -> None:
    died = hub.call("mcp__stub__die", {})
    assert died.is_error
    assert died.content == (
        "error: MCP server stub stopped during mcp__stub__die (MCPError: Connection closed); it was "
        "restarted; the call was not retried and its outcome is unknown"
    )
    assert hub.call("mcp__stub__echo", {"text": "again"}) == ToolResult("echo: again")
    second = hub.call("mcp__stub__die", {})
    assert "it could not be restarted (it stopped twice in this run)" in second.content
    assert hub.call("mcp__stub__echo", {"text": "x"}) == ToolResult(
        "error: MCP server stub is unavailable (it stopped twice in this run)", True
    )
    calls = _calls(tmp_path)
    assert [name for name, _ in calls] == ["die", "echo", "die"]  # nothing re-sent, nothing after
    assert calls[0][1] != calls[1][1] == calls[2][1]  # a new process after the first death


def test_a_call_past_its_timeout_is_an_error_result(tmp_path: Path) -> None:
    hub = _hub(tmp_path, timeout=0.5)
    hub.start()
    try:
        result = hub.call("mcp__stub__block", {})
    finally:
        hub.close()
    assert result == ToolResult("error: mcp__stub__block timed out after 0.5 s; its outcome is unknown", True)


def test_close_stops_the_server_process(tmp_path: Path) -> None:
    hub = _hub(tmp_path)
    hub.start()
    hub.call("mcp__stub__echo", {"text": "x"})
    [(_, pid)] = _calls(tmp_path)
    hub.close()
    hub.close()  # idempotent
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_a_server_that_cannot_start_is_a_setup_error(tmp_path: Path) -> None:
    config = McpServerConfig(command=str(tmp_path / "missing-server"))
    hub = McpHub([("gone", config)], cwd=str(tmp_path), timeout=5, output_cap=1000)
    with pytest.raises(McpSetupError, match=r"^MCP server gone: cannot start it \("):
        hub.start()
