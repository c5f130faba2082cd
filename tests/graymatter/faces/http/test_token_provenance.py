"""Which token id a write records: none over stdio and ``mcp serve --http``, ``default`` for ``serve``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from graymatter import Memory
from graymatter.engine.access import DEFAULT_TOKEN_ID, Principal, StaticToken, TokenService, bind_principal
from graymatter.engine.scoped import ScopedMemory
from graymatter.faces.http.app import ServiceConfig, build_app
from graymatter.faces.mcp_server.schemas import MemoryAddArguments
from graymatter.faces.mcp_server.tools import GraymatterTools
from graymatter.models import Provenance
from support.processes import TOKEN, auth, start_mcp_http


@pytest.fixture
def memory(tmp_path: Path) -> Any:
    with Memory(tmp_path / "store", embedder=None) as opened:
        yield opened


def mcp_add(memory: Memory, principal: Principal | None, text: str) -> Provenance:
    """``memory_add`` through the MCP tools over the scoped memory, as the HTTP service binds it."""
    tools = GraymatterTools(ScopedMemory(memory))
    with bind_principal(principal):
        tools.memory_add(MemoryAddArguments(agent_id="a", text=text), Provenance(interface="mcp"))
    (fact,) = [f for f in memory.list("a") if f.text == text]
    return fact.provenance


def test_stdio_writes_no_token_id(memory: Memory) -> None:
    GraymatterTools(memory).memory_add(
        MemoryAddArguments(agent_id="a", text="stdio"), Provenance(interface="mcp")
    )
    (fact,) = memory.list("a")
    assert fact.provenance == Provenance(interface="mcp")


def test_mcp_serve_http_static_token_writes_no_token_id(memory: Memory) -> None:
    principal = StaticToken(TOKEN, token_id=None).authenticate(TOKEN)
    assert principal is not None
    assert mcp_add(memory, principal, "over mcp serve --http") == Provenance(interface="mcp")


def test_mcp_serve_http_end_to_end_writes_no_token_id(tmp_path: Path) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    store = tmp_path / "store"
    server = start_mcp_http(store, "--token", TOKEN)

    async def add() -> Any:
        async with httpx2.AsyncClient(headers=auth(), timeout=30) as http_client:
            transport = streamable_http_client(server.url, http_client=http_client)
            async with Client(transport, mode="legacy") as client:
                return await client.call_tool("memory_add", {"agent_id": "a", "text": "over http"})

    try:
        assert not anyio.run(add).is_error
    finally:
        server.stop()
    with Memory(store, embedder=None) as memory:
        (fact,) = memory.list("a")
    assert fact.provenance.interface == "mcp" and fact.provenance.token_id is None


def test_serve_default_token_writes_the_default_token_id(memory: Memory) -> None:
    service = TokenService(memory.store.token_store(), default_token=TOKEN)
    principal = service.authenticate(TOKEN)
    assert mcp_add(memory, principal, "over serve") == Provenance(interface="mcp", token_id=DEFAULT_TOKEN_ID)

    async def remember() -> httpx.Response:
        app: Any = build_app(memory, service, ServiceConfig(mcp=False))
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8080") as client:
            return await client.post("/remember", json={"agent_id": "a", "text": "over rest"}, headers=auth())

    stored = anyio.run(remember)
    assert stored.status_code == 201
    assert stored.json()["provenance"] == {
        "interface": "rest",
        "client": None,
        "token_id": "default",
        "session": None,
    }
