"""Real graymatter server subprocesses on 127.0.0.1 (``mcp serve --http`` and ``serve``), one harness."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

from support.env import hermetic_env

TOKEN = "test-default-token-0123456789"
CLOSED_PORT_URL = "http://127.0.0.1:9"
MCP_HTTP_ANNOUNCE = re.compile(r"listening on (http://\S+/mcp)")
SERVE_ANNOUNCE = re.compile(r"serving REST \+ MCP on (http://\S+)")
START_TIMEOUT_S = 60


def server_env(**extra: str) -> dict[str, str]:
    """The hermetic environment with the Ollama probe aimed at a closed port (no provider reachable)."""
    return hermetic_env(extra={"GRAYMATTER_OLLAMA_URL": CLOSED_PORT_URL, **extra})


def graymatter_command(store: Path, *args: str) -> list[str]:
    """``python -m graymatter --no-daemon --dir STORE ARGS`` with this interpreter."""
    return [sys.executable, "-m", "graymatter", "--no-daemon", "--dir", str(store), *args]


def auth(token: str = TOKEN) -> dict[str, str]:
    """The bearer authorization header for ``token``."""
    return {"Authorization": f"Bearer {token}"}


@dataclass
class ServerProcess:
    """One server subprocess, its announced base URL and the file that receives its stderr."""

    process: subprocess.Popen[bytes]
    url: str
    log: Path

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)

    def stop(self) -> int:
        """SIGTERM, then SIGKILL if it has not exited within 30 s; the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()
        return self.process.returncode


def start_process(
    command: Sequence[str], *, env: dict[str, str], log: Path, announce: re.Pattern[str], health: str = ""
) -> ServerProcess:
    """Start ``command`` with stderr in ``log`` and return once it is ready.

    Ready means: the log shows ``announce`` (its group 1 is the URL) and, when ``health`` is given, a GET
    of ``url + health`` answers 200. A process that exits or is not ready in time fails the test.
    """
    deadline = time.monotonic() + START_TIMEOUT_S
    with open(log, "wb") as handle:
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=handle, env=env
        )
    url = _announced_url(process, log, announce, deadline)
    if health:
        _wait_healthy(process, url + health, deadline)
    return ServerProcess(process, url, log)


def _announced_url(
    process: subprocess.Popen[bytes], log: Path, announce: re.Pattern[str], deadline: float
) -> str:
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace")
        match = announce.search(text)
        if match:
            return match.group(1)
        if process.poll() is not None:
            raise AssertionError(f"server exited early ({process.returncode}):\n{text[-2000:]}")
        time.sleep(0.05)
    process.kill()
    raise AssertionError(f"server did not start in {START_TIMEOUT_S} s")


def _wait_healthy(process: subprocess.Popen[bytes], url: str, deadline: float) -> None:
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    process.kill()
    raise AssertionError(f"server never became healthy at {url}")


def start_mcp_http(store: Path, *extra: str, env: dict[str, str] | None = None) -> ServerProcess:
    """``graymatter mcp serve --http 127.0.0.1:0`` on ``store``; its stderr goes to a log beside it."""
    log = store.parent / f"{store.name}-mcp-http-{time.monotonic_ns()}.log"
    command = graymatter_command(store, "mcp", "serve", "--http", "127.0.0.1:0", *extra)
    return start_process(command, env=env or server_env(), log=log, announce=MCP_HTTP_ANNOUNCE)


def start_server(store: str, workdir: Path, *extra: str, token: str | None = TOKEN) -> ServerProcess:
    """``graymatter serve --store STORE`` on a free loopback port, ready once it answers /healthz."""
    workdir.mkdir(parents=True, exist_ok=True)
    log = workdir / f"serve-{time.monotonic_ns()}.log"
    args = [sys.executable, "-m", "graymatter", "--dir", str(workdir / "data"), "serve", "--store", store,
            "--http", "127.0.0.1:0", "--rate-limit", "0", *extra]  # fmt: skip
    if token:
        args += ["--token", token]
    env = hermetic_env(GRAYMATTER_EMBEDDINGS="keyword")
    return start_process(args, env=env, log=log, announce=SERVE_ANNOUNCE, health="/healthz")
