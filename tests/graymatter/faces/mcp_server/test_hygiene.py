"""Protocol hygiene over a real ``graymatter mcp serve`` stdio subprocess, and one-line logs.

* An unreadable line gets a JSON-RPC error at once (``-32700`` not JSON, ``-32600`` not a message, id null)
  and the session goes on; capabilities advertise tools only; prompts, resources and unknown methods are
  ``-32601``; an unknown tool is ``-32602``.
* ``graymatter serve`` / ``mcp serve --http`` logging and ``mcp serve`` stdio logging: an SDK exception
  log (with traceback) reaches stderr as exactly one line (JSON for the HTTP service), also after the SDK
  configured its own logging.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from support.mcp_session import initialize_request
from support.processes import graymatter_command, server_env

pytestmark = pytest.mark.timeout(120)

INIT = initialize_request("hygiene")


def _exchange(store: Path, lines: list[str]) -> list[dict[str, Any]]:
    """Send ``lines`` after the handshake, one request at a time; every answer, in order."""
    process = subprocess.Popen(
        graymatter_command(store, "mcp", "serve"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=server_env(GRAYMATTER_MCP_WARM="0"),
    )
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    answers = []
    try:
        for line in [json.dumps(INIT), '{"jsonrpc":"2.0","method":"notifications/initialized"}', *lines]:
            process.stdin.write(line.encode() + b"\n")
            process.stdin.flush()
            if "notifications/" not in line:
                answers.append(json.loads(process.stdout.readline()))
    finally:
        process.stdin.close()
        assert process.wait(timeout=60) == 0
        assert process.stderr.read() == b""
    return answers


def _request(request_id: int, method: str, params: dict[str, Any] | None = None) -> str:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message)


def test_unreadable_lines_are_answered_and_the_session_goes_on(tmp_path: Path) -> None:
    answers = _exchange(tmp_path / "s", ["not json{", '{"no": "jsonrpc"}', "[1, 2", _request(2, "ping")])
    assert answers[1:] == [
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}},
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Invalid Request"}},
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}},
        {"jsonrpc": "2.0", "id": 2, "result": {}},
    ]


def test_capabilities_and_error_codes(tmp_path: Path) -> None:
    requests = [
        _request(2, "prompts/list"),
        _request(3, "prompts/get", {"name": "nope"}),
        _request(4, "resources/list"),
        _request(5, "resources/read", {"uri": "file:///etc/passwd"}),
        _request(6, "resources/templates/list"),
        _request(7, "no/such/method"),
        _request(8, "tools/call", {"name": "nope", "arguments": {}}),
        _request(9, "tools/list"),
    ]
    init, *answers = _exchange(tmp_path / "s", requests)
    assert init["result"]["capabilities"] == {"tools": {"listChanged": False}}
    codes = {answer["id"]: answer.get("error", {}).get("code") for answer in answers}
    assert codes == {2: -32601, 3: -32601, 4: -32601, 5: -32601, 6: -32601, 7: -32601, 8: -32602, 9: None}
    assert answers[6]["error"]["message"] == "Unknown tool: nope"
    assert len(answers[7]["result"]["tools"]) == 7


_LOG_PROBE = """
import logging
{configure}
from graymatter.faces.mcp_server.server import build_server
build_server(None)  # the SDK configures its logging here (a rich console unless a handler exists)
try:
    raise ValueError("first line\\nsecond line")
except ValueError:
    logging.getLogger("mcp.shared.jsonrpc_dispatcher").exception("handler for %r raised", "x/y")
"""


def _probe_stderr(configure: str) -> list[str]:
    code = _LOG_PROBE.format(configure=configure)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=server_env())
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    return done.stderr.splitlines()


def test_http_service_logs_an_sdk_traceback_as_one_json_line() -> None:
    configure = "from graymatter.faces.http.observability import configure_logging; configure_logging()"
    (line,) = _probe_stderr(configure)
    record = json.loads(line)
    assert record["level"] == "error" and record["logger"] == "mcp.shared.jsonrpc_dispatcher"
    assert record["message"] == "handler for 'x/y' raised" and record["exception"] == "ValueError"


def test_stdio_server_logs_an_sdk_traceback_as_one_line() -> None:
    configure = (
        "from graymatter.faces.mcp_server.stdio import configure_stderr_logging; configure_stderr_logging()"
    )
    assert _probe_stderr(configure) == [
        "error mcp.shared.jsonrpc_dispatcher: handler for 'x/y' raised [ValueError]"
    ]


TRACING_PROBE = """
import sys
import anyio
from mcp import Client
from opentelemetry import trace
from graymatter.engine.memory import Memory
from graymatter.faces.mcp_server.server import build_server

spans = []

class Tracer(trace.NoOpTracer):
    def start_as_current_span(self, name, *args, **kwargs):
        spans.append(name)
        return super().start_as_current_span(name, *args, **kwargs)

class Provider(trace.NoOpTracerProvider):
    def get_tracer(self, *args, **kwargs):
        return Tracer()

if sys.argv[2] == "traced":
    trace.set_tracer_provider(Provider())

from mcp.server._otel import OpenTelemetryMiddleware

async def main():
    with Memory(sys.argv[1], embedder=None, summariser=None) as memory:
        server = build_server(memory)
        chain = server._lowlevel_server.middleware  # the SDK's documented opt-out list
        print(sum(isinstance(m, OpenTelemetryMiddleware) for m in chain))
        async with Client(server, mode="legacy") as client:
            await client.send_ping()
            await client.call_tool("memory_search", {"agent_id": "a", "query": "deploys"})

anyio.run(main)
print("|".join(span for span in spans if not span.startswith("MCP send")))  # the client's own spans
"""


SERVER_SPANS = "initialize|notifications/initialized|ping|tools/call memory_search|tools/list"


@pytest.mark.parametrize(("mode", "spans"), [("traced", f"1\n{SERVER_SPANS}"), ("untraced", "0")])
def test_requests_are_traced_exactly_when_a_tracer_provider_is_installed(
    tmp_path: Path, mode: str, spans: str
) -> None:
    """The SDK's per-request span (a no-op without a provider, ~20 µs a request) is kept for a provider
    installed before the server is built, and dropped otherwise."""
    done = subprocess.run(
        [sys.executable, "-c", TRACING_PROBE, str(tmp_path / "s"), mode],
        capture_output=True,
        text=True,
        env=server_env(),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-500:]
    assert done.stdout.strip() == spans
