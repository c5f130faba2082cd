"""MCP over stdio: memory_search round trip at 10k facts, and process start to the first tools/list answer.

Measured against baselines from the same run:

* round trip: the same queries through ``Memory.recall`` in-process (the engine's own cost), so the ratio
  is what the MCP layer (JSON-RPC, validation, structured result, pipe) adds;
* start-up: a bare interpreter (``python -c pass``) and the import of the MCP SDK alone
  (``import mcp.server.mcpserver``), so the table shows how much of the start-up is the SDK import and
  how much is ours. graymatter's CLI imports the SDK only when ``mcp serve`` runs.

The server is a real ``python -m graymatter --no-daemon --dir <store> mcp serve`` subprocess driven with
raw line-delimited JSON-RPC (no client library in the measured path).
"""

from __future__ import annotations

import json
import queue
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks.corpus import generate_facts, generate_queries, iter_batches
from benchmarks.harness import cache_dir, latency_summary, print_table, subprocess_env

AGENT = "bench-mcp"


def _build_store(n_facts: int) -> Path:
    from graymatter.engine.memory import Memory

    store = cache_dir() / f"mcp_roundtrip_{n_facts}"
    marker = store / ".complete"
    if marker.exists():
        return store
    with Memory(store) as memory:
        for batch in iter_batches(generate_facts(n_facts, seed=42), 1000):
            memory.remember_many(AGENT, batch)
        memory.wait_for_background()
    marker.write_text("ok\n")
    return store


class _StdioServer:
    """A graymatter MCP stdio server subprocess with a line reader thread."""

    def __init__(self, store: Path) -> None:
        self.started = time.perf_counter()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "graymatter", "--no-daemon", "--dir", str(store), "mcp", "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=subprocess_env(GRAYMATTER_OLLAMA_URL="http://127.0.0.1:9"),
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.next_id = 0

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in iter(self.process.stdout.readline, b""):
            self.lines.put(line)

    def send(self, method: str, params: dict[str, Any] | None = None, *, notify: bool = False) -> int:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        if not notify:
            self.next_id += 1
            message["id"] = self.next_id
        assert self.process.stdin is not None
        self.process.stdin.write((json.dumps(message) + "\n").encode())
        self.process.stdin.flush()
        return self.next_id

    def answer(self, request_id: int) -> dict[str, Any]:
        while True:
            message = json.loads(self.lines.get(timeout=120))
            if message.get("id") == request_id:
                return message

    def handshake_and_list(self) -> float:
        """Seconds from process start to the tools/list answer (initialize, initialized, tools/list)."""
        init = self.send(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "1"},
            },
        )
        self.answer(init)
        self.send("notifications/initialized", notify=True)
        listed = self.answer(self.send("tools/list"))
        elapsed = time.perf_counter() - self.started
        if len(listed["result"]["tools"]) != 7:
            raise RuntimeError("tools/list did not return the seven tools")
        return elapsed

    def search(self, query: str) -> dict[str, Any]:
        request = self.send(
            "tools/call", {"name": "memory_search", "arguments": {"agent_id": AGENT, "query": query}}
        )
        return self.answer(request)

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _time_process(code: str, repeats: int) -> list[float]:
    """Seconds from process start until ``code`` has run (interpreter shutdown excluded, like the server)."""
    timings = []
    for _ in range(repeats):
        start = time.perf_counter()
        child = subprocess.Popen(
            [sys.executable, "-c", f"{code}\nprint('ready', flush=True)"],
            stdout=subprocess.PIPE,
            env=subprocess_env(),
        )
        assert child.stdout is not None
        if child.stdout.readline().strip() != b"ready":
            raise RuntimeError(f"benchmark child failed: {code}")
        timings.append(time.perf_counter() - start)
        child.wait()
    return timings


def _median_ms(values: list[float]) -> float:
    return round(statistics.median(values) * 1000, 1)


def run(quick: bool) -> dict[str, Any]:
    """Run the MCP stdio benchmarks and print their tables."""
    n_facts = 2_000 if quick else 10_000
    n_queries = 40 if quick else 300
    start_repeats = 3 if quick else 9
    store = _build_store(n_facts)
    queries = generate_queries(n_queries, seed=7)

    # Round trip over stdio vs. the engine in-process, same store and queries.
    from graymatter.engine.memory import Memory

    # Interleaved (engine, MCP) per query, so machine load drifts affect both alike.
    server = _StdioServer(store)
    engine: list[float] = []
    over_mcp: list[float] = []
    hits = 0
    try:
        server.handshake_and_list()
        with Memory(store) as memory:
            for query in queries[:10]:
                memory.recall(AGENT, query)
                server.search(query)
            for query in queries:
                t0 = time.perf_counter()
                memory.recall(AGENT, query)
                engine.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                answer = server.search(query)
                over_mcp.append(time.perf_counter() - t0)
                hits += answer["result"]["structuredContent"]["count"] > 0
    finally:
        server.close()
    engine_stats, mcp_stats = latency_summary(engine), latency_summary(over_mcp)
    roundtrip = print_table(
        f"memory_search round trip over stdio at {n_facts:,} facts ({n_queries} queries, sequential)",
        ["path", "p50 ms", "p90 ms", "p99 ms", "mean ms"],
        [
            [
                "Memory.recall in-process (baseline)",
                *(engine_stats[k] for k in ("p50_ms", "p90_ms", "p99_ms", "mean_ms")),
            ],
            ["MCP tools/call over stdio", *(mcp_stats[k] for k in ("p50_ms", "p90_ms", "p99_ms", "mean_ms"))],
            [
                "ratio MCP / engine",
                *(
                    round(mcp_stats[k] / max(engine_stats[k], 1e-9), 2)
                    for k in ("p50_ms", "p90_ms", "p99_ms", "mean_ms")
                ),
            ],
        ],
    )

    # Start-up: process start to the first tools/list answer, with its baselines.
    bare = _time_process("pass", start_repeats)
    sdk = _time_process("import mcp.server.mcpserver", start_repeats)
    ours = _time_process(
        "import graymatter.faces.cli.main, graymatter.faces.mcp_server.server, graymatter.engine.memory",
        start_repeats,
    )
    first_list = []
    for _ in range(start_repeats):
        server = _StdioServer(store)
        try:
            first_list.append(server.handshake_and_list())
        finally:
            server.close()
    startup_rows = [
        ["python -c pass (baseline)", _median_ms(bare), 1.0],
        [
            "import mcp.server.mcpserver (SDK alone)",
            _median_ms(sdk),
            round(statistics.median(sdk) / statistics.median(bare), 1),
        ],
        [
            "import graymatter cli + mcp_server + memory (no SDK)",
            _median_ms(ours),
            round(statistics.median(ours) / statistics.median(bare), 1),
        ],
        [
            "graymatter mcp serve: start -> tools/list answer",
            _median_ms(first_list),
            round(statistics.median(first_list) / statistics.median(bare), 1),
        ],
    ]
    startup = print_table(
        f"Start-up to the first tools/list answer (median of {start_repeats})",
        ["measurement", "median ms", "x bare python"],
        startup_rows,
    )
    return {
        "facts": n_facts,
        "queries": n_queries,
        "queries_with_hits": hits,
        "roundtrip_engine": engine_stats,
        "roundtrip_mcp_stdio": mcp_stats,
        "startup_ms": {
            "python_bare": _median_ms(bare),
            "import_mcp_sdk": _median_ms(sdk),
            "import_graymatter_without_sdk": _median_ms(ours),
            "start_to_tools_list": _median_ms(first_list),
            "start_to_tools_list_all": [round(s * 1000, 1) for s in first_list],
        },
        "tables": [roundtrip, startup],
    }
