"""``graymatter mcp serve --http`` as a real uvicorn process on 127.0.0.1: the security gate end to end."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from graymatter.faces.http.security import MAX_BODY_BYTES, TOKEN_FILE_NAME
from support.processes import graymatter_command, server_env, start_mcp_http

pytestmark = pytest.mark.timeout(120)

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "http-test", "version": "1"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture(scope="module")
def token_file_server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A server whose token comes from the token file it generates in its data directory."""
    store = tmp_path_factory.mktemp("token-file-store")
    server = start_mcp_http(store)
    try:
        yield server, store
    finally:
        server.stop()


def post(url: str, body: bytes, **headers: str) -> httpx.Response:
    return httpx.post(url, content=body, headers={**MCP_HEADERS, **headers}, timeout=30)


def test_token_file_is_generated_private_and_required(token_file_server: Any) -> None:
    server, store = token_file_server
    path = store / TOKEN_FILE_NAME
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    token = path.read_text().strip()
    body = json.dumps(INITIALIZE).encode()
    assert post(server.url, body).status_code == 401
    assert post(server.url, body, Authorization="Bearer not-the-token-123456").status_code == 401
    assert post(server.url, body, Authorization=f"Basic {token}").status_code == 401
    accepted = post(server.url, body, Authorization=f"Bearer {token}")
    assert accepted.status_code == 200
    assert '"serverInfo"' in accepted.text and "graymatter" in accepted.text


def test_bad_origin_bad_host_and_oversize_body_are_refused(token_file_server: Any) -> None:
    server, store = token_file_server
    auth = f"Bearer {(store / TOKEN_FILE_NAME).read_text().strip()}"
    body = json.dumps(INITIALIZE).encode()
    assert post(server.url, body, Authorization=auth, Origin="http://evil.example").status_code == 403
    assert post(server.url, body, Authorization=auth, Host="evil.example").status_code == 421
    oversize = post(server.url, b" " * (MAX_BODY_BYTES + 1), Authorization=auth)
    assert oversize.status_code == 413
    own_origin = server.url.rsplit("/mcp", 1)[0]
    assert post(server.url, body, Authorization=auth, Origin=own_origin).status_code == 200


def test_sdk_client_with_the_token_from_the_file(token_file_server: Any) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    server, store = token_file_server
    headers = {"Authorization": f"Bearer {(store / TOKEN_FILE_NAME).read_text().strip()}"}

    async def main() -> Any:
        async with httpx2.AsyncClient(headers=headers, timeout=30) as http_client:
            transport = streamable_http_client(server.url, http_client=http_client)
            async with Client(transport, mode="legacy") as client:
                return await client.call_tool(
                    "checkpoint_resume", {"agent_id": "http", "on_missing": "empty"}
                )

    result = anyio.run(main)
    assert result.structured_content == {"found": False, "agent_id": "http"}


def test_no_auth_is_refused_on_a_public_address(tmp_path: Path) -> None:
    done = subprocess.run(
        graymatter_command(tmp_path, "mcp", "serve", "--http", "0.0.0.0:0", "--no-auth"),
        capture_output=True,
        text=True,
        timeout=60,
        env=server_env(),
    )
    assert done.returncode != 0
    assert "--no-auth is only allowed on a loopback address" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / TOKEN_FILE_NAME).exists()


def test_no_auth_on_loopback_serves_without_a_token(tmp_path: Path) -> None:
    server = start_mcp_http(tmp_path, "--no-auth")
    try:
        response = post(server.url, json.dumps(INITIALIZE).encode())
        assert response.status_code == 200
        assert post(server.url, b"{}", Origin="http://evil.example").status_code == 403
    finally:
        server.stop()
    assert not (tmp_path / TOKEN_FILE_NAME).exists()


def test_explicit_token_flag_wins_and_is_never_printed(tmp_path: Path) -> None:
    token = "flag-token-abcdefghijklmnop"
    server = start_mcp_http(
        tmp_path, "--token", token, env=server_env(GRAYMATTER_HTTP_TOKEN="env-token-abcdefghijkl")
    )
    try:
        body = json.dumps(INITIALIZE).encode()
        assert post(server.url, body, Authorization=f"Bearer {token}").status_code == 200
        assert post(server.url, body, Authorization="Bearer env-token-abcdefghijkl").status_code == 401
    finally:
        server.stop()
    assert token not in server.log.read_text()
    assert not (tmp_path / TOKEN_FILE_NAME).exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--token", "abcdefghijklmnopqrstuvwxyz"], "--token and --no-auth only apply to --http"),
        (["--no-auth"], "--token and --no-auth only apply to --http"),
        (["--http", "127.0.0.1:0", "--token", "short"], "--token must be at least 16 characters long"),
        (["--http", "localhost"], "--http expects HOST:PORT"),
        (["--http", "127.0.0.1:99999"], "--http port must be between 0 and 65535"),
    ],
)
def test_bad_serve_arguments_fail_with_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    done = subprocess.run(
        graymatter_command(tmp_path, "mcp", "serve", *args),
        capture_output=True,
        text=True,
        timeout=60,
        env=server_env(),
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode != 0
    assert message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert done.stdout == ""


def test_help_documents_the_flags() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "graymatter", "mcp", "serve", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0
    for flag in ("--http", "--token", "--no-auth", "--no-daemon", "graymatter.http-token"):
        assert flag in done.stdout


def _sse_payloads(response: httpx.Response) -> list[str]:
    if response.headers["content-type"].startswith("application/json"):
        return [response.text]
    return [line[len("data:") :].strip() for line in response.text.splitlines() if line.startswith("data:")]


def test_raw_http_bytes_of_absence_and_error(token_file_server: Any) -> None:
    server, store = token_file_server
    auth = {"Authorization": f"Bearer {(store / TOKEN_FILE_NAME).read_text().strip()}"}
    init = post(server.url, json.dumps(INITIALIZE).encode(), **auth)
    session = {"Mcp-Session-Id": init.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25", **auth}
    notified = post(
        server.url, json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode(), **session
    )
    assert notified.status_code == 202

    def call(request_id: int, arguments: dict[str, Any]) -> str:
        params = {"name": "checkpoint_resume", "arguments": arguments}
        body = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})
        (payload,) = [p for p in _sse_payloads(post(server.url, body.encode(), **session)) if p]
        return payload

    absent = call(2, {"agent_id": "raw-http", "on_missing": "empty"})
    assert '"found":false' in absent.replace(" ", "")
    assert json.loads(absent)["result"]["structuredContent"] == {"found": False, "agent_id": "raw-http"}
    for request_id, arguments in enumerate(
        [{"agent_id": "raw-http"}, {"agent_id": "raw-http", "on_missing": 0}], 3
    ):
        error = call(request_id, arguments)
        assert "structuredContent" not in error
        assert json.loads(error)["result"]["isError"] is True
