"""PostgreSQL itself is SIGKILLed mid-load under two ``graymatter serve`` processes, kept down, restarted.

While it is away, clients get a JSON 503 quickly (no request hangs, ``/healthz`` answers 503, a scoped
token gets a 503 too, never a 500); after the restart both servers recover without being restarted, and
every write they acknowledged is still there.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from resilience.conftest import record
from resilience.pgcontrol import KillableCluster, start_killable_cluster
from support.env import hermetic_env
from support.processes import ServerProcess, auth, start_server

pytestmark = [pytest.mark.resilience, pytest.mark.postgres, pytest.mark.timeout(240)]

DOWN_S = 4.0
CLIENT_TIMEOUT_S = 10.0  # a request still unanswered after this long counts as a hang


@pytest.fixture
def cluster() -> Iterator[KillableCluster]:
    started = start_killable_cluster()
    yield started
    started.close()


class _Load(threading.Thread):
    """Writes (and probes /healthz) against one server, recording every outcome with its time."""

    def __init__(self, url: str, token: str, name: str) -> None:
        super().__init__(daemon=True)
        self.url, self.token, self.name = url, token, name
        self.stop = threading.Event()
        self.outcomes: list[tuple[float, str, int | str, float, str]] = []  # at, kind, status, latency, type
        self.acked: list[str] = []

    def _timed(self, http: httpx.Client, kind: str, method: str, path: str, **kw: object) -> None:
        start = time.monotonic()
        try:
            response = http.request(method, self.url + path, **kw)  # type: ignore[arg-type]
        except httpx.TimeoutException:
            self.outcomes.append((start, kind, "timeout", time.monotonic() - start, ""))
            return
        except httpx.HTTPError as exc:
            self.outcomes.append((start, kind, type(exc).__name__, time.monotonic() - start, ""))
            return
        media = response.headers.get("content-type", "")
        self.outcomes.append((start, kind, response.status_code, time.monotonic() - start, media))
        if kind == "write" and response.status_code == 201:
            self.acked.append(response.json()["id"])

    def run(self) -> None:
        n = 0
        headers = {"Authorization": f"Bearer {self.token}"}
        with httpx.Client(headers=headers, timeout=CLIENT_TIMEOUT_S) as http:
            while not self.stop.is_set():
                n += 1
                body = {"agent_id": "outage", "text": f"{self.name} write {n}"}
                self._timed(http, "write", "POST", "/remember", json=body)
                if n % 3 == 0:
                    self._timed(http, "health", "GET", "/healthz")
                time.sleep(0.02)


def _scoped_token(dsn: str, workdir: Path) -> str:
    """A scoped read-write token for the outage agent (looked up in the database on every request)."""
    proc = subprocess.run(
        [sys.executable, "-m", "graymatter", "--dir", str(workdir / "cli"), "token", "create",
         "--store", dsn, "--agents", "outage", "--json"],
        capture_output=True, text=True, env=hermetic_env(), timeout=60, check=True,
    )  # fmt: skip
    import json

    return str(json.loads(proc.stdout)["token"])


def _stored(dsn: str, ids: list[str]) -> int:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute("SELECT count(*) FROM gm_facts WHERE id = ANY(%s)", (ids,)).fetchone()
    return int(rows[0]) if rows else 0


def test_postgres_killed_and_restarted_mid_load(
    cluster: KillableCluster, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    dsn = cluster.create_database("outage")
    servers: list[ServerProcess] = [start_server(dsn, tmp_path / f"serve-{i}") for i in range(2)]
    scoped = _scoped_token(dsn, tmp_path)
    loads = [_Load(s.url, token, f"s{i}-{kind}") for i, s in enumerate(servers)
             for kind, token in (("default", auth()["Authorization"][7:]), ("scoped", scoped))]  # fmt: skip
    for load in loads:
        load.start()
    try:
        time.sleep(2.0)
        assert all(load.acked for load in loads), "no write acknowledged before the outage"
        killed = cluster.kill()
        killed_at = time.monotonic()  # every PostgreSQL process is dead from here on
        time.sleep(DOWN_S)
        restarted_at = time.monotonic()
        cluster.restart()
        recovered: dict[str, float] = {}
        deadline = time.monotonic() + 60
        while len(recovered) < len(loads) and time.monotonic() < deadline:
            for load in loads:
                ok = [o for o in load.outcomes if o[0] >= restarted_at and o[2] == 201]
                if ok and load.name not in recovered:
                    recovered[load.name] = ok[0][0] + ok[0][3] - restarted_at
            time.sleep(0.05)
        time.sleep(1.0)
    finally:
        for load in loads:
            load.stop.set()
        for load in loads:
            load.join(30)
        alive = [s.process.poll() is None for s in servers]
        for server in servers:
            server.kill()
    outcomes = [o for load in loads for o in load.outcomes]
    during = [o for o in outcomes if killed_at <= o[0] and o[0] + o[3] < restarted_at]  # began and ended
    acked = [i for load in loads for i in load.acked]
    lost = len(acked) - _stored(dsn, acked)
    statuses = Counter(str(o[2]) for o in during)
    health = [o for o in during if o[1] == "health"]
    plain_5xx = [o for o in outcomes if isinstance(o[2], int) and o[2] >= 500 and "json" not in o[4]]
    record(
        request.node.name,
        postgres_processes_killed=killed,
        down_s=DOWN_S,
        acknowledged_writes=len(acked),
        losses=lost,
        statuses_while_down=dict(statuses),
        http_5xx_other_than_503=sum(1 for o in outcomes if o[2] not in (503,) and str(o[2]).startswith("5")),
        slowest_answer_while_down_s=round(max((o[3] for o in during), default=0.0), 3),
        slowest_healthz_while_down_s=round(max((o[3] for o in health), default=0.0), 3),
        time_to_recover_s={k: round(v, 3) for k, v in sorted(recovered.items())},
    )
    assert all(alive)  # the servers were never restarted
    assert len(recovered) == len(loads)  # every client writes again, default and scoped tokens alike
    assert lost == 0
    assert statuses["timeout"] == 0  # nobody hung
    assert set(statuses) <= {"503"}, statuses  # only fast, JSON 503s while the database was away
    assert health and all(o[2] == 503 for o in health)
    assert plain_5xx == []
