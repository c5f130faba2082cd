"""Dashboard page timings at 100k facts: server time of the list and search pages, first paint in Chromium.

Server time is measured in process (the ASGI app of ``graymatter serve`` over httpx's ASGI transport, so no
socket); first render is Chromium's first-contentful-paint against a real ``graymatter serve`` subprocess.
The keyset page is also timed at the store on PostgreSQL (pgserver), against the read it replaced.
Targets (issue 15): p50 server time <= 50 ms and first render <= 300 ms.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from benchmarks.harness import cache_dir, latency_summary, print_table, subprocess_env
from graymatter.faces.dashboard.pages_facts import SCAN_CAP

TOKEN = "bench-dashboard-token-0123456789"
DEEP = (5_000, 50_000)
"""How deep the deep-page rows start: the page after the newest 5,000 and 50,000 facts (keyset cursors)."""
WORDS = [
    "deploy",
    "cache",
    "billing",
    "alice",
    "review",
    "tests",
    "release",
    "valkey",
    "queue",
    "schema",
    "migration",
    "index",
    "build",
    "worker",
    "latency",
    "owner",
    "budget",
    "incident",
    "rollback",
    "canary",
]


def _store(n: int) -> Path:
    from graymatter.config import MemoryConfig
    from graymatter.engine.memory import Memory

    path = cache_dir() / f"dashboard-{n}"
    if (path / ".built").exists():
        return path
    memory = Memory(path, config=MemoryConfig(), embedder=None, summariser=None)
    try:
        for start in range(0, n, 1000):
            texts = [
                f"fact {i}: " + " ".join(WORDS[(i * k) % len(WORDS)] for k in (1, 3, 7, 11))
                for i in range(start, min(start + 1000, n))
            ]
            memory.remember_many("bench", texts)
        memory.pin("bench", texts[-1])
        memory.checkpoint_save("bench", {"step": 1})
    finally:
        memory.close()
    (path / ".built").write_text("ok")
    return path


PAGES = {
    "facts (first page)": "/ui/facts?agent=bench",
    "facts (page 3)": None,
    f"facts pinned=yes (scans {SCAN_CAP:,} facts)": "/ui/facts?agent=bench&pinned=yes",
    f"facts state=superseded (scans {SCAN_CAP:,})": "/ui/facts?agent=bench&state=superseded",
    "search": "/ui/search?agent=bench&q=billing+valkey+rollback",
    "agents overview": "/ui/",
}
BASELINES = {
    "REST /facts (limit 50)": "/facts?agent_id=bench&limit=50",
    "REST /recall (explain, k 10)": "/recall?agent_id=bench&q=billing+valkey+rollback&k=10&explain=true",
}
"""The same reads over the REST API, timed in the same run: what the page adds to the engine call."""
VERSUS = {
    "facts (first page)": "REST /facts (limit 50)",
    "facts (page 3)": "REST /facts (limit 50)",
    **{f"facts (page {d // 50 + 1}, {d:,} newer)": "REST /facts (limit 50)" for d in DEEP},
    "search": "REST /recall (explain, k 10)",
}


async def _server_times(path: Path, repeats: int) -> dict[str, dict[str, float]]:
    import httpx

    from graymatter.engine.access import TokenService
    from graymatter.engine.memory import Memory
    from graymatter.faces.http.app import ServiceConfig, build_app

    memory = Memory(path, embedder=None, summariser=None)
    app = build_app(memory, TokenService(memory.store.token_store(), default_token=TOKEN), ServiceConfig())
    out: dict[str, dict[str, float]] = {}
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1:8080"
        ) as c:
            await c.post("/ui/login", data={"token": TOKEN})
            first = (await c.get(PAGES["facts (first page)"] or "")).text
            nxt = re.search(r'rel="next" href="([^"]+)"', first)
            second = (await c.get(nxt.group(1).replace("&amp;", "&"))).text if nxt else ""
            nxt2 = re.search(r'rel="next" href="([^"]+)"', second)
            pages = {**PAGES, "facts (page 3)": nxt2.group(1).replace("&amp;", "&") if nxt2 else None}
            pages.update(_deep_pages(memory))
            bearer = {"authorization": f"Bearer {TOKEN}"}
            for name, url in {**pages, **BASELINES}.items():
                if url is None:
                    continue
                times = []
                for _ in range(repeats):
                    t0 = time.perf_counter()
                    reply = await c.get(url, headers=bearer if name in BASELINES else None)
                    times.append(time.perf_counter() - t0)
                    assert reply.status_code == 200, (name, reply.status_code)
                out[name] = latency_summary(times)
        out[OLD_READ] = _old_read(memory, repeats)
    finally:
        memory.close()
    return out


OLD_READ = f"engine latest_facts({DEEP[-1] + 51:,}): the old page-{DEEP[-1] // 50 + 1} read"
"""Before keyset paging a page at depth d re-read the newest d + 51 facts: that read, timed in this run."""


def _deep_pages(memory: Any) -> dict[str, str]:
    """Keyset cursors after the newest 5,000 / 50,000 facts, live and all, and pinned=yes at 50,000."""
    out = {}
    if memory.stats("bench").fact_count <= DEEP[-1]:
        return out  # --quick: a smaller store has no such depth
    for depth in DEEP:
        deep = memory.latest_facts("bench", depth)[-1]
        cursor = f"{deep.created_at.isoformat()}~{deep.id}"
        for extra, label in (({}, ""), ({"state": "all"}, " state=all")):
            query = urlencode({"agent": "bench", **extra, "before": cursor})
            out[f"facts{label} (page {depth // 50 + 1}, {depth:,} newer)"] = f"/ui/facts?{query}"
    query = urlencode({"agent": "bench", "pinned": "yes", "before": cursor})
    out[f"facts pinned=yes ({DEEP[-1]:,} newer, scans {SCAN_CAP:,})"] = f"/ui/facts?{query}"
    return out


def _old_read(memory: Any, repeats: int) -> dict[str, float]:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        memory.latest_facts("bench", DEEP[-1] + 51)
        times.append(time.perf_counter() - t0)
    return latency_summary(times)


def _first_paint(path: Path, repeats: int) -> dict[str, dict[str, float]]:
    sys.path[:0] = [str(Path(__file__).resolve().parents[1])]
    work = cache_dir() / "dashboard-serve"
    work.mkdir(exist_ok=True)
    cmd = [
        sys.executable,
        "-m",
        "graymatter",
        "--dir",
        str(work),
        "serve",
        "--store",
        str(path),
        "--http",
        "127.0.0.1:0",
        "--rate-limit",
        "0",
        "--token",
        TOKEN,
    ]
    env = subprocess_env(GRAYMATTER_EMBEDDINGS="keyword")
    with open(work / "serve.log", "wb") as log:
        server = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log, env=env)
    try:
        return _paints(_announced(work / "serve.log"), repeats)
    finally:
        server.terminate()
        server.wait(30)


def _paints(url: str, repeats: int) -> dict[str, dict[str, float]]:
    from tests.graymatter.faces.dashboard.browser import start_chromium

    driver = start_chromium()
    try:
        driver.get(url + "/ui/login")
        driver.find_element("id", "token").send_keys(TOKEN)
        driver.find_element("css selector", "form.login button").click()
        time.sleep(0.5)
        out = {}
        for name in ("facts (first page)", "search"):
            paints = []
            for _ in range(repeats):
                driver.get(url + (PAGES[name] or ""))
                paints.append(_paint(driver) / 1000.0)
            out[name] = latency_summary(paints)
        return out
    finally:
        driver.quit()


FCP_SCRIPT = (
    "var p = performance.getEntriesByName('first-contentful-paint')[0]; return p ? p.startTime : null;"
)


def _paint(driver: Any) -> float:
    """The page's first-contentful-paint (ms since navigation start), once Chromium has recorded it."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        value = driver.execute_script(FCP_SCRIPT)
        if value is not None:
            return float(value)
        time.sleep(0.02)
    raise RuntimeError("Chromium recorded no first-contentful-paint")


def _announced(log: Path) -> str:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        match = re.search(r"serving REST \+ MCP on (http://\S+)", log.read_text(errors="replace"))
        if match:
            return match.group(1)
        time.sleep(0.1)
    raise RuntimeError("graymatter serve did not start")


def _postgres_pages(n: int, repeats: int) -> dict[str, dict[str, float]]:
    """``Store.facts_page`` on PostgreSQL (pgserver) at ``n`` facts: first page, deep pages, the old read."""
    tests = str(Path(__file__).resolve().parents[1] / "tests")
    if tests not in sys.path:
        sys.path.insert(0, tests)
    from graymatter.ids import new_ulid
    from graymatter.models import Fact
    from graymatter.store.postgres import PostgresStore
    from support.pgserver import start_cluster

    store = PostgresStore(start_cluster(benchmark=True).create_database("dashpages"))
    try:
        t0 = datetime(2026, 1, 1, tzinfo=UTC)
        for start in range(0, n, 5000):
            moments = [t0 + timedelta(seconds=i) for i in range(start, min(start + 5000, n))]
            store.add_facts([Fact(id=new_ulid(), agent_id="bench", text=f"fact {at}", created_at=at,
                                  accessed_at=at) for at in moments])  # fmt: skip
        store._read(lambda c: c.execute("ANALYZE gm_facts"))
        deep = store.latest_facts("bench", n // 2)[-1]
        cursor = (deep.created_at, deep.id)
        calls: dict[str, Any] = {
            "facts_page (first page)": lambda: store.facts_page("bench", before=None, limit=50),
            f"facts_page ({n // 2:,} newer)": lambda: store.facts_page("bench", before=cursor, limit=50),
            f"facts_page all ({n // 2:,} newer)": lambda: store.facts_page(
                "bench", before=cursor, limit=50, live=None
            ),
            f"facts_page pinned (scans {SCAN_CAP:,})": lambda: store.facts_page(
                "bench", before=None, limit=50, pinned=True, scan=SCAN_CAP
            ),
            f"latest_facts({n // 2 + 51:,}): the old read": lambda: store.latest_facts("bench", n // 2 + 51),
        }
        out = {}
        for name, call in calls.items():
            times = []
            for _ in range(repeats if "old" not in name else max(3, repeats // 4)):
                began = time.perf_counter()
                call()
                times.append(time.perf_counter() - began)
            out[name] = latency_summary(times)
        return out
    finally:
        store.close()


def run(quick: bool) -> dict[str, Any]:
    """Build (or reuse) the store, then time the pages on the server and in the browser."""
    n = 10_000 if quick else 100_000
    started = time.perf_counter()
    path = _store(n)
    build_s = time.perf_counter() - started
    repeats = 5 if quick else 21
    server = asyncio.run(_server_times(path, repeats))
    paint = _first_paint(path, 3 if quick else 9)
    postgres = _postgres_pages(n, repeats)
    rows = [
        [
            name,
            f"{m['p50_ms']:.1f}",
            f"{m['p90_ms']:.1f}",
            f"{m['p50_ms'] / server[VERSUS[name]]['p50_ms']:.2f}x" if name in VERSUS else "",
        ]
        for name, m in server.items()
    ]
    title = f"Dashboard server time at {n:,} facts (ms, in process; load {os.getloadavg()[0]:.1f})"
    table = print_table(title, ["Page", "p50", "p90", "p50 vs same-run REST"], rows)
    prow = [[name, f"{m['p50_ms']:.1f}", f"{m['p90_ms']:.1f}"] for name, m in paint.items()]
    ptable = print_table("First contentful paint in headless Chromium (ms)", ["Page", "p50", "p90"], prow)
    pgrow = [[name, f"{m['p50_ms']:.1f}", f"{m['p90_ms']:.1f}"] for name, m in postgres.items()]
    pgtitle = f"PostgreSQL Store.facts_page at {n:,} facts (ms, in process; load {os.getloadavg()[0]:.1f})"
    pgtable = print_table(pgtitle, ["Call", "p50", "p90"], pgrow)
    return {
        "facts": n,
        "store_build_s": round(build_s, 1),
        "server": server,
        "first_paint": paint,
        "postgres": postgres,
        "tables": [table, ptable, pgtable],
        "loadavg": os.getloadavg(),
    }
