"""MCP over stdio against the engine in-process: memory_search at 10k facts, 1 MB checkpoint resume and save.

Each MCP call is timed interleaved with the same operation on ``Memory`` in-process (same store, same
query or state), so machine-load drifts affect both alike and the ratio is what the MCP layer (JSON-RPC,
validation, structured result and its text, the pipe) adds. The server is a real
``python -m graymatter --no-daemon --dir <store> mcp serve`` subprocess, served in its own process
(``GRAYMATTER_MCP_WARM=0``), driven with raw line-delimited JSON-RPC (no client library in the measured
path). Start-up is measured by ``benchmarks/mcp_startup.py``.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks.corpus import generate_facts, generate_queries, iter_batches
from benchmarks.harness import cache_dir, latency_summary, print_table, subprocess_env

AGENT = "bench-mcp"
READ_CHUNK = 1 << 16
"""The client reads the server's stdout as clients do: raw reads of up to 64 KiB (a Node stream's chunk on
a pipe), split into lines in its own buffer. Python's ``BufferedReader.readline`` took about 7 ms for a
2 MB line (0.5 ms this way), a cost of this benchmark's client, not of MCP."""


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


class StdioServer:
    """A graymatter MCP stdio server subprocess; answers are read by a reader thread (``threaded``, with
    timeouts, for start-up runs) or, for round trips, directly in the calling thread: the thread hand-off
    would be a cost of this client, not of MCP."""

    def __init__(
        self,
        store: Path,
        *,
        command: list[str] | None = None,
        warm: bool = False,
        env: dict[str, str] | None = None,
        threaded: bool = True,
    ) -> None:
        argv = command or [
            sys.executable,
            "-m",
            "graymatter",
            "--no-daemon",
            "--dir",
            str(store),
            "mcp",
            "serve",
        ]
        env = subprocess_env(
            GRAYMATTER_OLLAMA_URL="http://127.0.0.1:9",
            GRAYMATTER_MCP_WARM="1" if warm else "0",
            **(env or {}),
        )
        self.started = time.perf_counter()
        self.process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            bufsize=0,
        )
        self._unread = bytearray()
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.threaded = threaded
        if threaded:
            threading.Thread(target=self._read, daemon=True).start()
        self.next_id = 0

    def _read_line(self) -> bytes:
        """The next line of the server's stdout (``b""`` at its end), read in raw chunks."""
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        start = 0
        while (end := self._unread.find(b"\n", start)) < 0:
            start = len(self._unread)
            chunk = os.read(fd, READ_CHUNK)
            if not chunk:
                return b""
            self._unread += chunk
        line = bytes(self._unread[: end + 1])
        del self._unread[: end + 1]
        return line

    def _read(self) -> None:
        for line in iter(self._read_line, b""):
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

    def _next_line(self) -> bytes:
        if self.threaded:
            return self.lines.get(timeout=120)
        line = self._read_line()
        if not line:
            raise RuntimeError("the MCP server closed its stdout")
        return line

    def answer(self, request_id: int) -> dict[str, Any]:
        while True:
            message = json.loads(self._next_line())
            if message.get("id") == request_id:
                return message

    def handshake_and_list(self) -> tuple[float, float, int]:
        """Seconds from process start to the initialize and the tools/list answers, and the tool count."""
        init = self.send(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "1"},
            },
        )
        self.answer(init)
        initialized = time.perf_counter() - self.started
        self.send("notifications/initialized", notify=True)
        listed = self.answer(self.send("tools/list"))
        elapsed = time.perf_counter() - self.started
        return initialized, elapsed, len(listed["result"]["tools"])

    def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """One tools/call; its answer (raises on a JSON-RPC or tool error)."""
        answer = self.answer(self.send("tools/call", {"name": name, "arguments": arguments}))
        if "error" in answer or answer["result"].get("isError"):
            raise RuntimeError(f"{name} failed over MCP: {json.dumps(answer)[:300]}")
        return answer

    def search(self, query: str) -> dict[str, Any]:
        return self.call("memory_search", {"agent_id": AGENT, "query": query})

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def one_megabyte_state(shape: str = "structured") -> dict[str, Any]:
    """A checkpoint state of about 1 MB of JSON, in one of two shapes.

    ``structured``: an agent's working state, 6,000 small records (turns with tool calls, touched files),
    so decoding it is most of the work. ``text``: 1,000 turns of ~1 kB of prose, so it is mostly copying.
    """
    if shape == "text":
        turns = [
            {
                "role": "user" if i % 2 else "assistant",
                "turn": i,
                "content": f"Schritt {i}: " + "lorem ipsum " * 83,
            }
            for i in range(1000)
        ]
        return {"task": "benchmark", "progress": {"done": 500, "todo": 500}, "messages": turns}
    turns = [
        {
            "role": "assistant" if i % 2 else "user",
            "turn": i,
            "content": f"Step {i}: checked the fixture, next the parser (ü).",
            "tool_calls": [{"name": "read_file", "arguments": {"path": f"src/mod_{i % 97}.py", "line": i}}],
            "tokens": {"input": 1000 + i, "output": 50 + i % 13},
        }
        for i in range(2500)
    ]
    files = [
        {"path": f"src/pkg_{i % 31}/mod_{i}.py", "sha": f"{i:040x}", "edited": i % 3 == 0}
        for i in range(3500)
    ]
    return {"task": "benchmark", "progress": {"done": 1250, "todo": 1250}, "messages": turns, "files": files}


def _ratio_rows(label: str, engine: list[float], over_mcp: list[float]) -> list[list[Any]]:
    keys = ("p50_ms", "p90_ms", "mean_ms")
    engine_stats, mcp_stats = latency_summary(engine), latency_summary(over_mcp)
    return [
        [f"{label}: in-process (baseline)", *(engine_stats[k] for k in keys)],
        [f"{label}: MCP over stdio", *(mcp_stats[k] for k in keys)],
        [
            f"{label}: ratio MCP / in-process",
            *(round(mcp_stats[k] / max(engine_stats[k], 1e-9), 2) for k in keys),
        ],
    ]


def _search_round_trips(store: Path, queries: list[str]) -> tuple[list[float], list[float], int]:
    """Interleaved (engine, MCP) memory_search timings per query, after a warm-up of ten."""
    from graymatter.engine.memory import Memory

    server = StdioServer(store, threaded=False)
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
    return engine, over_mcp, hits


def _checkpoint_round_trips(repeats: int, shape: str) -> dict[str, list[float]]:
    """Interleaved 1 MB checkpoint resume and save: in-process ``Memory`` against MCP over stdio."""
    from graymatter.engine.memory import Memory

    state = one_megabyte_state(shape)
    timings: dict[str, list[float]] = {
        "resume_engine": [],
        "resume_mcp": [],
        "save_engine": [],
        "save_mcp": [],
    }
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "store"
        with Memory(store) as memory:
            memory.checkpoint_save(AGENT, state)
        server = StdioServer(store, threaded=False)
        try:
            server.handshake_and_list()
            with Memory(store) as memory:
                for i in range(repeats + 2):
                    t0 = time.perf_counter()
                    memory.checkpoint_latest(AGENT)
                    t1 = time.perf_counter()
                    answer = server.call("checkpoint_resume", {"agent_id": AGENT})
                    t2 = time.perf_counter()
                    memory.checkpoint_save(AGENT, state)
                    t3 = time.perf_counter()
                    server.call("checkpoint_save", {"agent_id": AGENT, "state": json.dumps(state)})
                    t4 = time.perf_counter()
                    if answer["result"]["structuredContent"]["state"] != state:
                        raise RuntimeError("checkpoint_resume returned another state")
                    if i >= 2:  # two warm-up rounds
                        timings["resume_engine"].append(t1 - t0)
                        timings["resume_mcp"].append(t2 - t1)
                        timings["save_engine"].append(t3 - t2)
                        timings["save_mcp"].append(t4 - t3)
        finally:
            server.close()
    return timings


def run(quick: bool) -> dict[str, Any]:
    """Run the MCP stdio round-trip benchmarks and print their table."""
    n_facts = 2_000 if quick else 10_000
    n_queries = 40 if quick else 300
    repeats = 5 if quick else 30
    store = _build_store(n_facts)
    engine, over_mcp, hits = _search_round_trips(store, generate_queries(n_queries, seed=7))
    rows = _ratio_rows(f"memory_search, {n_facts:,} facts", engine, over_mcp)
    checkpoints: dict[str, dict[str, list[float]]] = {}
    sizes: dict[str, int] = {}
    for shape in ("structured", "text"):
        checkpoints[shape] = timings = _checkpoint_round_trips(repeats, shape)
        sizes[shape] = size = len(json.dumps(one_megabyte_state(shape)).encode())
        for op in ("resume", "save"):
            label = f"checkpoint_{op}, {size / 1e6:.2f} MB {shape}"
            rows += _ratio_rows(label, timings[f"{op}_engine"], timings[f"{op}_mcp"])
    table = print_table(
        f"MCP over stdio vs in-process ({n_queries} searches, {repeats} checkpoint rounds, interleaved; "
        f"load average {os.getloadavg()[0]:.2f})",
        ["operation", "p50 ms", "p90 ms", "mean ms"],
        rows,
    )
    return {
        "facts": n_facts,
        "queries": n_queries,
        "queries_with_hits": hits,
        "checkpoint_bytes": sizes,
        "load_average": list(os.getloadavg()),
        "roundtrip_engine": latency_summary(engine),
        "roundtrip_mcp_stdio": latency_summary(over_mcp),
        "checkpoint": {
            shape: {name: latency_summary(values) for name, values in timings.items()}
            for shape, timings in checkpoints.items()
        },
        "tables": [table],
    }
