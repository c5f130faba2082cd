"""SIGKILL loops under load, on both backends: nothing a writer or server acknowledged is lost.

* a library writer process is killed 30 times at random moments of its write loop; every fact id it
  printed (after ``remember`` returned) must be in the store;
* ``graymatter serve`` is killed 15 times per backend while a client writes over REST; every 201 it
  received must be in the store.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from graymatter.config import MemoryConfig
from graymatter.engine.memory import Memory
from graymatter.store import open_store
from resilience.conftest import record
from support.env import hermetic_env
from support.processes import ServerProcess, auth, start_server

pytestmark = [pytest.mark.resilience, pytest.mark.timeout(240)]

WRITER_KILLS = 30
SERVER_KILLS = 15

WRITER = """
import sys
from graymatter.config import MemoryConfig
from graymatter.engine.memory import Memory
from graymatter.store import open_store
memory = Memory(store=open_store(sys.argv[1]), config=MemoryConfig(), embedder=None, summariser=None)
i = 0
while True:
    fact = memory.remember("writer", f"writer {sys.argv[2]} fact {i}")
    sys.stdout.write(fact.id + "\\n")
    sys.stdout.flush()
    i += 1
"""


def _missing(location: str, agent: str, acknowledged: list[str]) -> int:
    memory = Memory(store=open_store(location), config=MemoryConfig(), embedder=None, summariser=None)
    try:
        stored = {f.id for f in memory.list(agent)}
    finally:
        memory.close()
    return len(set(acknowledged) - stored)


def _one_writer_life(location: str, life: int, rng: random.Random) -> list[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, location, str(life)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=hermetic_env(),
    )
    assert proc.stdout is not None
    acked = [proc.stdout.readline().decode().strip()]  # it is writing: now kill it at a random moment
    time.sleep(rng.uniform(0.0, 0.3))
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    rest = proc.stdout.read().decode()
    acked += [line for line in rest.split("\n")[:-1] if line]  # a torn last line was never acknowledged
    return acked


def test_sigkilled_writers_lose_no_acknowledged_write(location: str, request: pytest.FixtureRequest) -> None:
    rng = random.Random(16)
    acknowledged: list[str] = []
    for life in range(WRITER_KILLS):
        acknowledged += _one_writer_life(location, life, rng)
    lost = _missing(location, "writer", acknowledged)
    record(request.node.name, kills=WRITER_KILLS, acknowledged_writes=len(acknowledged), losses=lost)
    assert len(acknowledged) > WRITER_KILLS
    assert lost == 0


class _Client(threading.Thread):
    """Writes facts over REST to whichever server is current; keeps the ids of every 201."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.url = ""
        self.stop = threading.Event()
        self.acked: list[str] = []
        self.server_errors = 0

    def run(self) -> None:
        n = 0
        with httpx.Client(headers=auth(), timeout=10) as http:
            while not self.stop.is_set():
                n += 1
                try:
                    body = {"agent_id": "served", "text": f"served {n}"}
                    response = http.post(self.url + "/remember", json=body)
                except httpx.HTTPError:
                    time.sleep(0.01)
                    continue
                if response.status_code == 201:
                    self.acked.append(response.json()["id"])
                elif response.status_code >= 500:
                    self.server_errors += 1


def test_sigkilled_servers_lose_no_acknowledged_write(
    location: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    rng = random.Random(61)
    client = _Client()
    server: ServerProcess = start_server(location, tmp_path / "serve-0")
    client.url = server.url
    client.start()
    try:
        for life in range(SERVER_KILLS):
            before = len(client.acked)
            deadline = time.monotonic() + 30
            while len(client.acked) == before and time.monotonic() < deadline:
                time.sleep(0.01)  # under load: at least one write acknowledged by this server
            time.sleep(rng.uniform(0.0, 0.4))
            server.kill()
            server = start_server(location, tmp_path / f"serve-{life + 1}")
            client.url = server.url
    finally:
        client.stop.set()
        client.join(30)
        server.kill()
    lost = _missing(location, "served", client.acked)
    record(
        request.node.name,
        kills=SERVER_KILLS,
        acknowledged_writes=len(client.acked),
        losses=lost,
        http_5xx=client.server_errors,
    )
    assert len(client.acked) >= SERVER_KILLS
    assert lost == 0
    assert client.server_errors == 0
