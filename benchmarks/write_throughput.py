"""Write throughput with 1, 4 and 8 concurrent writer processes on one store; nothing may be lost.

Each writer is a separate OS process (as separate MCP servers, CLI calls and hooks are) that stores
``PER_WRITER`` facts with ``remember`` (one transaction each, default configuration: background
consolidation on) under its own agent id, while one more process keeps recalling natural-language
questions over 1,000 facts of another agent. All start on a shared signal. Afterwards every
expected text is checked in the store. Baseline in the same run:
the single-writer rate, so the table shows how throughput scales with contention.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from typing import Any

from benchmarks.corpus import generate_facts
from benchmarks.harness import cache_dir, latency_summary, print_table, subprocess_env
from benchmarks.write_worker import fact_text

WRITERS = (1, 4, 8)
PER_WRITER_FULL = 250
PER_WRITER_QUICK = 40
READER_AGENT = "reader"


def _spawn(args: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "benchmarks.write_worker", *args],
        env=subprocess_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _collect(proc: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = proc.communicate(timeout=600)
    if proc.returncode != 0:
        return {
            "error_count": 1,
            "errors": [f"exit {proc.returncode}: {err.strip()[-300:]}"],
            "latencies": [],
        }
    return json.loads(out.strip().splitlines()[-1])


def one_round(writers: int, per_writer: int) -> dict[str, Any]:
    """Run ``writers`` writer processes plus one recalling process; verify the store afterwards."""
    directory = cache_dir() / f"writes-{writers}"
    start_file = cache_dir() / f"writes-{writers}.start"
    stop_file = cache_dir() / f"writes-{writers}.stop"
    from graymatter import Memory

    seed = Memory(directory, embedder=None)  # create the store, and the reader's 1,000 facts, before the race
    try:
        seed.remember_many(READER_AGENT, generate_facts(1000, seed=5))
    finally:
        seed.close()
    agents = [f"writer-{i}" for i in range(writers)]
    procs = [
        _spawn(["write", "--dir", str(directory), "--agent", a, "--count", str(per_writer),
                "--start-file", str(start_file)])
        for a in agents
    ]  # fmt: skip
    reader = _spawn(["recall", "--dir", str(directory), "--agent", READER_AGENT,
                     "--start-file", str(start_file), "--stop-file", str(stop_file)])  # fmt: skip
    deadline = time.monotonic() + 120
    while len(list(cache_dir().glob(f"{start_file.name}.ready.*"))) < writers + 1:
        if time.monotonic() > deadline or any(p.poll() not in (None, 0) for p in [*procs, reader]):
            break  # a child failed to start: its error is reported by _collect
        time.sleep(0.01)
    start_file.touch()
    results = [_collect(p) for p in procs]
    stop_file.touch()
    reading = _collect(reader)

    memory = Memory(directory, embedder=None)
    try:
        missing = 0
        for agent in agents:
            stored = {f.text for f in memory.list(agent)}
            missing += sum(1 for i in range(per_writer) if fact_text(agent, i) not in stored)
    finally:
        memory.close()
    began = min(r["began"] for r in results if "began" in r) if results else 0.0
    ended = max(r["ended"] for r in results if "ended" in r) if results else 0.0
    wall = max(ended - began, 1e-9)
    latencies = [x for r in results for x in r.get("latencies", [])]
    return {
        "writers": writers,
        "facts_written": writers * per_writer,
        "missing": missing,
        "write_errors": sum(r["error_count"] for r in results),
        "errors_sample": [e for r in results for e in r.get("errors", [])][:5],
        "wall_s": round(wall, 3),
        "facts_per_s": round(writers * per_writer / wall, 1),
        "write_latency": latency_summary(latencies) if latencies else {},
        "concurrent_recalls": len(reading.get("latencies", [])),
        "recall_errors": reading["error_count"],
        "recall_latency": latency_summary(reading["latencies"]) if reading.get("latencies") else {},
    }


def run(quick: bool) -> dict[str, Any]:
    per_writer = PER_WRITER_QUICK if quick else PER_WRITER_FULL
    rounds = [one_round(w, per_writer) for w in WRITERS]
    single = rounds[0]["facts_per_s"]
    rows = [
        [r["writers"], r["facts_written"], r["facts_per_s"], f"{r['facts_per_s'] / single:.2f}x",
         r["write_latency"].get("p50_ms", 0.0), r["write_latency"].get("p99_ms", 0.0),
         r["concurrent_recalls"], r["recall_latency"].get("p50_ms", 0.0),
         f"{r['missing']} / {r['write_errors'] + r['recall_errors']}"]
        for r in rounds
    ]  # fmt: skip
    table = print_table(
        f"Concurrent writer processes on one SQLite store ({per_writer} facts each) + 1 recalling process",
        ["writers", "facts", "facts/s", "vs 1 writer", "write p50 ms", "write p99 ms", "recalls meanwhile",
         "recall p50 ms", "lost / errors"],
        rows,
    )  # fmt: skip
    ok = all(r["missing"] == 0 and r["write_errors"] == 0 and r["recall_errors"] == 0 for r in rounds)
    print(f"\nnothing lost, zero errors: {'yes' if ok else 'NO'}")
    return {"per_writer": per_writer, "rounds": rounds, "nothing_lost": ok, "tables": [table]}
