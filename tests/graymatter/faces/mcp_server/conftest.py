"""Fixtures for the MCP server suite: a real store, the server in-process, and real server subprocesses.

``connect`` yields an async-context factory for an SDK ``Client`` over one of two transports, so the
same contract test body runs in-process and over streamable HTTP against a real ``graymatter mcp serve
--http 127.0.0.1:0`` (uvicorn) process. Tests that share the HTTP server use their own agent ids.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from graymatter.engine.memory import Memory
from support.processes import ServerProcess, server_env, start_mcp_http

HTTP_TOKEN = "contract-test-token-0123456789"


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture
def memory(store_dir: Path) -> Iterator[Memory]:
    mem = Memory(store_dir)
    try:
        yield mem
    finally:
        mem.close()


@pytest.fixture(scope="module")
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    server = start_mcp_http(
        tmp_path_factory.mktemp("http-store"), env=server_env(GRAYMATTER_HTTP_TOKEN=HTTP_TOKEN)
    )
    try:
        yield server
    finally:
        server.stop()


ClientFactory = Callable[[], AbstractAsyncContextManager[Any]]


@pytest.fixture(params=["in-process", "http"])
def connect(request: pytest.FixtureRequest) -> ClientFactory:
    """A factory of connected SDK clients over the parametrised transport."""
    from mcp import Client

    if request.param == "in-process":
        memory: Memory = request.getfixturevalue("memory")
        from graymatter.faces.mcp_server.server import build_server

        server = build_server(memory)

        @asynccontextmanager
        async def in_process() -> Any:
            async with Client(server, mode="legacy") as client:
                yield client

        return in_process

    http: ServerProcess = request.getfixturevalue("http_server")

    @asynccontextmanager
    async def over_http() -> Any:
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        headers = {"Authorization": f"Bearer {HTTP_TOKEN}"}
        async with httpx2.AsyncClient(headers=headers, timeout=30) as http_client:
            transport = streamable_http_client(http.url, http_client=http_client)
            async with Client(transport, mode="legacy") as client:
                yield client

    return over_http


@pytest.fixture
def agent() -> str:
    """A fresh agent id, so tests sharing one HTTP server never see each other's data."""
    return f"agent-{uuid.uuid4().hex[:10]}"
