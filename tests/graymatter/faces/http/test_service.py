"""The HTTP service around the store: limits, metrics, health, OpenAPI, logs, workers, token CLI."""

from __future__ import annotations

import json
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

import graymatter
from graymatter import Memory
from graymatter.engine.access import TokenService
from graymatter.faces.http.app import ServiceConfig, build_app
from graymatter.faces.http.openapi import openapi_document
from support.env import hermetic_env
from support.processes import SERVE_ANNOUNCE, TOKEN, ServerProcess, auth, start_process, start_server

pytestmark = pytest.mark.timeout(120)


def call(app: Any, method: str, path: str, **kwargs: Any) -> httpx.Response:
    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8080") as client:
            return await client.request(method, path, **kwargs)

    return anyio.run(go)


@pytest.fixture
def memory(tmp_path: Path) -> Any:
    with Memory(tmp_path / "store", embedder=None) as opened:
        yield opened


def app_for(memory: Any, **config: Any) -> Any:
    tokens = TokenService(memory.store.token_store(), default_token=TOKEN)
    return build_app(memory, tokens, ServiceConfig(mcp=False, **config))


def test_rate_limit_answers_429_with_retry_after(memory: Any) -> None:
    app = app_for(memory, rate_limit=1.0, rate_burst=2)
    statuses = [
        call(app, "GET", "/facts", params={"agent_id": "a"}, headers=auth()).status_code for _ in range(3)
    ]
    assert statuses == [200, 200, 429]
    refused = call(app, "GET", "/facts", params={"agent_id": "a"}, headers=auth())
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1
    assert refused.json()["error"]["code"] == "rate_limited"
    assert call(app, "GET", "/healthz").status_code == 200  # health probes are never rate limited


def test_oversized_body_is_refused_and_nothing_is_stored(memory: Any) -> None:
    app = app_for(memory, max_body_bytes=1024)
    refused = call(app, "POST", "/remember", json={"agent_id": "a", "text": "x" * 2000}, headers=auth())
    assert refused.status_code == 413
    assert memory.list("a") == []


def test_invalid_input_is_422_and_unknown_routes_404(memory: Any) -> None:
    app = app_for(memory)
    assert call(app, "POST", "/remember", content=b"[1]", headers=auth()).status_code == 422
    assert (
        call(app, "POST", "/remember", json={"agent_id": " ", "text": "x"}, headers=auth()).status_code == 422
    )
    assert call(app, "GET", "/recall", params={"agent_id": "a", "k": "0"}, headers=auth()).status_code == 422
    assert call(app, "GET", "/nope", headers=auth()).status_code == 404
    missing = call(app, "GET", "/checkpoints/latest", params={"agent_id": "a"}, headers=auth())
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "no_checkpoint"
    assert memory.list("a") == []


def test_metrics_are_prometheus_text(memory: Any) -> None:
    app = app_for(memory)
    call(app, "POST", "/remember", json={"agent_id": "a", "text": "metric me"}, headers=auth())
    call(app, "GET", "/recall", params={"agent_id": "a", "q": "metric"}, headers=auth())
    assert call(app, "GET", "/metrics").status_code == 401
    body = call(app, "GET", "/metrics", headers=auth()).text
    assert 'graymatter_http_requests_total{route="/remember",method="POST",status="201"} 1' in body
    assert 'graymatter_http_requests_total{route="/recall",method="GET",status="200"} 1' in body
    assert 'graymatter_http_request_duration_seconds_count{route="/recall"} 1' in body
    assert "# TYPE graymatter_http_requests_in_flight gauge" in body


def test_openapi_document_covers_every_route_and_resolves() -> None:
    import jsonschema

    document = openapi_document()
    assert document["openapi"] == "3.1.0"
    operations = {(path, method) for path, item in document["paths"].items() for method in item}
    assert {("/remember", "post"), ("/recall", "get"), ("/facts", "get"), ("/revise", "post"),
            ("/forget", "post"), ("/checkpoints", "post"), ("/checkpoints", "get"),
            ("/checkpoints/latest", "get"), ("/checkpoints/{checkpoint_id}", "get"), ("/healthz", "get"),
            ("/metrics", "get")} <= operations  # fmt: skip
    text = json.dumps(document)
    for ref in {part.split('"')[0] for part in text.split('"$ref": "')[1:]}:
        assert ref.split("/")[-1] in document["components"]["schemas"], ref
    schema = {**document["components"]["schemas"]["Fact"], "components": document["components"]}
    jsonschema.Draft202012Validator.check_schema(schema)


@pytest.mark.postgres
def test_healthz_is_503_when_the_database_is_gone(pg_cluster: Any, tmp_path: Path) -> None:
    from graymatter.store.postgres.store import PostgresStore

    dsn = pg_cluster.create_database()
    memory = Memory(store=PostgresStore(dsn, timeout=3), embedder=None)
    try:
        app = app_for(memory)
        assert call(app, "GET", "/healthz").json() == {
            "status": "ok",
            "store": "postgresql",
            "version": graymatter.__version__,
        }
        pg_cluster.drop_database(dsn)
        down = call(app, "GET", "/healthz")
        assert down.status_code == 503 and down.json()["status"] == "unavailable"
        failed = call(app, "POST", "/remember", json={"agent_id": "a", "text": "x"}, headers=auth())
        assert failed.status_code == 503
        assert "password" not in failed.text
    finally:
        memory.close()


@pytest.mark.postgres
def test_newer_schema_is_refused_untouched(pg_dsn: str) -> None:
    import psycopg

    from graymatter.errors import SchemaTooNew
    from graymatter.store.postgres.store import PostgresStore

    PostgresStore(pg_dsn).close()
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("UPDATE gm_meta SET value = '99' WHERE key = 'schema_version'")
        before = conn.execute("SELECT count(*) FROM pg_class WHERE relname LIKE 'gm_%'").fetchone()
    with pytest.raises(SchemaTooNew, match="newer graymatter"):
        PostgresStore(pg_dsn)
    with psycopg.connect(pg_dsn) as conn:
        assert conn.execute("SELECT value FROM gm_meta WHERE key = 'schema_version'").fetchone() == ("99",)
        assert conn.execute("SELECT count(*) FROM pg_class WHERE relname LIKE 'gm_%'").fetchone() == before


def test_logs_are_json_lines_without_secrets_or_content(tmp_path: Path, servers: list[ServerProcess]) -> None:
    server = start_server(str(tmp_path / "store"), tmp_path / "s")
    servers.append(server)
    secret_text = "the vault combination is 1234"
    assert httpx.post(server.url + "/remember", json={"agent_id": "a", "text": secret_text},
                      headers=auth()).status_code == 201  # fmt: skip
    assert httpx.get(server.url + "/facts", params={"agent_id": "a"}, headers=auth("wrong-token-xxxxxxxxxx")
                     ).status_code == 401  # fmt: skip
    server.stop()
    lines = [line for line in server.log.read_text().splitlines() if line.startswith("{")]
    records = [json.loads(line) for line in lines]
    requests = [r for r in records if r.get("event") == "http_request"]
    assert {(r["route"], r["status"]) for r in requests} >= {("/remember", 201), ("/facts", 401)}
    assert any(r["token_id"] == "default" for r in requests)
    log_text = server.log.read_text()
    assert TOKEN not in log_text and "wrong-token" not in log_text and secret_text not in log_text


def test_serve_with_two_workers(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    store = tmp_path / "store"
    server = start_process(
        [sys.executable, "-m", "graymatter", "--dir", str(store), "serve", "--http", f"127.0.0.1:{port}",
         "--workers", "2", "--token", TOKEN],
        env=hermetic_env(), log=tmp_path / "serve.log", announce=SERVE_ANNOUNCE, health="/healthz",
    )  # fmt: skip
    try:
        url = server.url
        ids = [
            httpx.post(
                url + "/remember", json={"agent_id": "w", "text": f"fact {i}"}, headers=auth(), timeout=30
            ).json()["id"]
            for i in range(20)
        ]
        listed = httpx.get(url + "/facts", params={"agent_id": "w", "limit": 100}, headers=auth(), timeout=30)
        assert sorted(f["id"] for f in listed.json()["facts"]) == sorted(ids)
        workers = [pid for pid in _children(server.process.pid) if _listening(pid)]
        assert len(workers) == 2, workers  # --workers 2 really runs two serving processes
    finally:
        server.stop()


def _children(parent: int) -> list[int]:
    """Live child processes of ``parent`` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == parent and fields[0] not in ("Z", "X"):
                found.append(int(entry.name))
    return found


def _listening(pid: int) -> bool:
    """Whether the process holds a socket (a worker serves on the inherited listening socket)."""
    try:
        return any(link.readlink().name.startswith("socket:") for link in Path(f"/proc/{pid}/fd").iterdir())
    except OSError:
        return False


def test_token_cli_on_the_embedded_store(tmp_path: Path) -> None:
    store = tmp_path / "store"

    def gm(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "graymatter", "--dir", str(store), *args],
                              capture_output=True, text=True, timeout=60, env=hermetic_env())  # fmt: skip

    bad = gm("token", "create", "--agents", " , ")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    mixed = gm("token", "create", "--agents", "*,a")
    assert mixed.returncode == 2
    made = gm("token", "create", "--agents", "a,b", "--read-only", "--json")
    assert made.returncode == 0, made.stderr
    record = json.loads(made.stdout)
    assert record["access"] == "read" and record["agents"] == ["a", "b"]
    assert stat.S_IMODE((store / "tokens.db").stat().st_mode) == 0o600
    assert record["token"] not in (store / "tokens.db").read_bytes().decode("latin-1")
    assert gm("token", "revoke", "not-a-token-id").returncode == 2
    assert gm("token", "revoke", record["id"]).returncode == 0
    listed = json.loads(gm("token", "list", "--json").stdout)["tokens"]
    assert listed[0]["revoked_at"] is not None


def test_mcp_on_the_same_port_honours_the_tool_contract(tmp_path: Path, servers: list[ServerProcess]) -> None:
    server = start_server(str(tmp_path / "store"), tmp_path / "s")
    servers.append(server)

    async def session() -> tuple[list[str], Any, Any]:
        import httpx2
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        async with (
            httpx2.AsyncClient(headers=auth(), timeout=30) as http_client,
            Client(
                streamable_http_client(server.url + "/mcp", http_client=http_client), mode="legacy"
            ) as client,
        ):
            tools = await client.list_tools()
            empty = await client.call_tool("checkpoint_resume", {"agent_id": "mcp", "on_missing": "empty"})
            missing = await client.call_tool("checkpoint_resume", {"agent_id": "mcp"})
            return sorted(t.name for t in tools.tools), empty, missing

    names, empty, missing = anyio.run(session)
    assert names == sorted(["memory_search", "memory_search_batch", "memory_add", "memory_alias",
                            "checkpoint_save", "checkpoint_resume", "memory_reflect"])  # fmt: skip
    assert empty.structured_content == {"found": False, "agent_id": "mcp"} and not empty.is_error
    assert missing.is_error and missing.structured_content is None
    assert httpx.get(server.url + "/mcp", timeout=10).status_code == 401  # MCP needs the token too


def test_unreachable_database_fails_fast_on_one_line_without_the_password(tmp_path: Path) -> None:
    url = f"postgresql://someone:hunter2secret@/nodb?host={tmp_path}"
    done = subprocess.run(
        [sys.executable, "-m", "graymatter", "--store", url, "serve", "--http", "127.0.0.1:0",
         "--token", TOKEN],
        capture_output=True, text=True, timeout=60, env=hermetic_env(),
    )  # fmt: skip
    assert done.returncode == 1
    assert len(done.stderr.strip().splitlines()) == 1
    assert "cannot connect to PostgreSQL" in done.stderr and "hunter2secret" not in done.stderr


def test_sigterm_finishes_the_request_in_flight(tmp_path: Path, servers: list[ServerProcess]) -> None:
    """A request whose body is still arriving when SIGTERM lands is completed and acknowledged."""
    import signal as signals
    from urllib.parse import urlsplit

    store = tmp_path / "store"
    server = start_server(str(store), tmp_path / "s")
    servers.append(server)
    address = urlsplit(server.url)
    body = json.dumps({"agent_id": "inflight", "text": "written while shutting down"}).encode()
    head = (
        f"POST /remember HTTP/1.1\r\nHost: {address.netloc}\r\nAuthorization: Bearer {TOKEN}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode()
    with socket.create_connection((address.hostname, address.port), timeout=30) as conn:
        conn.sendall(head + body[:10])
        time.sleep(0.5)  # the server has parsed the headers: the request is in flight
        server.process.send_signal(signals.SIGTERM)
        time.sleep(0.5)
        conn.sendall(body[10:])
        response = b""
        while chunk := conn.recv(65536):
            response += chunk
    assert response.startswith(b"HTTP/1.1 201"), response[:200]
    assert server.process.wait(30) in (0, -signals.SIGTERM)
    with Memory(store, embedder=None) as memory:
        assert [f.text for f in memory.list("inflight")] == ["written while shutting down"]
