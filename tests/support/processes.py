"""Real graymatter server subprocesses on 127.0.0.1: ``mcp serve --http`` and ``serve``."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from support.env import hermetic_env

TOKEN = "test-default-token-0123456789"
READY = re.compile(r"listening on (http://\S+/mcp)")
_LISTENING = re.compile(r"serving REST \+ MCP on (http://\S+)")


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


def auth(token: str = TOKEN) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}
