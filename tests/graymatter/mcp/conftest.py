"""Fixtures for the MCP server suite: a real store, the server in-process, and real server subprocesses.

``connect`` yields an async-context factory for an SDK ``Client`` over one of two transports, so the
same contract test body runs in-process and over streamable HTTP against a real ``graymatter mcp serve
--http 127.0.0.1:0`` (uvicorn) process. Tests that share the HTTP server use their own agent ids.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from graymatter.engine.memory import Memory

HTTP_TOKEN = "contract-test-token-0123456789"
READY = re.compile(r"listening on (http://\S+/mcp)")


def server_env(**extra: str) -> dict[str, str]:
    """Environment for graymatter subprocesses: no provider keys, Ollama probe aimed at a closed port."""
    env = {
        k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("GRAYMATTER_")
    }
    env["GRAYMATTER_OLLAMA_URL"] = "http://127.0.0.1:9"
    env.update(extra)
    return env


def graymatter_command(store: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "graymatter", "--no-daemon", "--dir", str(store), *args]


class HttpServer:
    """A ``graymatter mcp serve --http`` subprocess on 127.0.0.1 with an ephemeral port."""

    def __init__(self, store: Path, *extra: str, env: dict[str, str] | None = None) -> None:
        self.process = subprocess.Popen(
            graymatter_command(store, "mcp", "serve", "--http", "127.0.0.1:0", *extra),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=env or server_env(),
        )
        self.url = self._wait_ready()

    def _wait_ready(self) -> str:
        assert self.process.stderr is not None
        deadline = time.monotonic() + 60
        seen = []
        while time.monotonic() < deadline:
            line = self.process.stderr.readline()
            if not line and self.process.poll() is not None:
                break
            seen.append(line)
            match = READY.search(line)
            if match:
                return match.group(1)
        self.stop()
        raise RuntimeError("graymatter mcp serve --http did not start: " + "".join(seen)[-2000:])

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


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
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    server = HttpServer(
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

    http: HttpServer = request.getfixturevalue("http_server")

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


class Helpers:
    """Subprocess helpers for test modules (conftest modules cannot be imported by name here)."""

    command = staticmethod(graymatter_command)
    env = staticmethod(server_env)
    HttpServer = HttpServer


@pytest.fixture(scope="session")
def gm() -> type[Helpers]:
    return Helpers


@pytest.fixture
def agent() -> str:
    """A fresh agent id, so tests sharing one HTTP server never see each other's data."""
    return f"agent-{uuid.uuid4().hex[:10]}"
