"""Cold ``graymatter recall`` at 10k facts as a fresh process (the hook budget of the Go original).

Every run is a new OS process: interpreter start, imports, opening the store, one top-8 recall and
printing. As on a user's install, bytecode is compiled once beforehand (``compileall``) and
``PYTHONDONTWRITEBYTECODE`` is removed from the children's environment. Baseline in the same run,
interleaved with the measured runs: ``python -c pass`` (the floor any Python CLI pays). Target:
median under 150 ms. One extra ``-X importtime`` run reports the most expensive imports so a
regression is easy to locate.
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.corpus import generate_facts, generate_queries, iter_batches
from benchmarks.harness import REPO_ROOT, latency_summary, print_table, subprocess_env

AGENT = "bench-agent"  # the agent recall_latency writes
SIZE = 10_000
RUNS_FULL = 30
RUNS_QUICK = 6
TARGET_MEDIAN_MS = 150.0


def graymatter_command() -> list[str]:
    """The installed console script next to this interpreter, else ``python -m graymatter``."""
    script = Path(sys.executable).with_name("graymatter")
    return [str(script)] if script.exists() else [sys.executable, "-m", "graymatter"]


def ensure_store(size: int) -> Path:
    """Reuse recall_latency's snapshot of ``size`` facts from this run, or build one (keyword-only)."""
    from benchmarks.recall_latency import snapshot_dir

    directory = snapshot_dir(size)
    if directory.exists():
        return directory
    from graymatter import Memory
    from graymatter.config import MemoryConfig

    staging = directory.with_name(directory.name + ".building")
    shutil.rmtree(staging, ignore_errors=True)
    memory = Memory(staging, config=MemoryConfig(async_consolidate=False), embedder=None)
    try:
        for batch in iter_batches(generate_facts(size, seed=42), 1000):
            memory.remember_many(AGENT, batch)
    finally:
        memory.close()
    staging.rename(directory)
    return directory


def _timed(command: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{command[0]} exited {proc.returncode}: {proc.stderr.strip()[:300]}")
    return elapsed


def import_profile(arguments: list[str], env: dict[str, str], top: int = 8) -> list[dict[str, Any]]:
    """The ``top`` imports by cumulative time in one ``python -X importtime -m graymatter ...`` run."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "graymatter", *arguments],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    rows: list[dict[str, Any]] = []
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:"):
            continue
        fields = line[len("import time:") :].split("|")
        if len(fields) != 3 or not fields[1].strip().isdigit():
            continue
        name = fields[2].rstrip()
        depth = (len(name) - len(name.lstrip())) // 2
        rows.append({"module": name.strip(), "depth": depth, "cumulative_ms": int(fields[1]) / 1000.0})
    return sorted(rows, key=lambda r: -r["cumulative_ms"])[:top]


def run(quick: bool) -> dict[str, Any]:
    """Interleave baseline and graymatter runs; report medians and the ratio."""
    directory = ensure_store(SIZE)
    env = subprocess_env()
    for variable in ("GRAYMATTER_EMBEDDINGS", "OPENAI_API_KEY", "PYTHONDONTWRITEBYTECODE"):
        env.pop(variable, None)  # a user's install keyword-only, with bytecode written once
    runs = RUNS_QUICK if quick else RUNS_FULL
    queries = generate_queries(runs + 1, seed=11)
    command = graymatter_command()
    baseline: list[float] = []
    recall: list[float] = []
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(REPO_ROOT / "packages")], env=env, timeout=120
    )
    _timed([sys.executable, "-c", "pass"], env)  # warm the page cache for both
    _timed([*command, "--dir", str(directory), "--quiet", "recall", AGENT, queries[-1]], env)
    for query in queries[:runs]:
        baseline.append(_timed([sys.executable, "-c", "pass"], env))
        recall.append(_timed([*command, "--dir", str(directory), "--quiet", "recall", AGENT, query], env))
    base, cold = latency_summary(baseline), latency_summary(recall)
    overhead = statistics.median(recall) - statistics.median(baseline)
    imports = import_profile(["--dir", str(directory), "--quiet", "recall", AGENT, queries[0]], env)
    table = print_table(
        f"Cold `graymatter recall` at {SIZE:,} facts, fresh process each ({runs} runs, ms)",
        ["command", "median", "p90", "p99", "max"],
        [
            ["python -c pass (baseline)", base["p50_ms"], base["p90_ms"], base["p99_ms"], base["max_ms"]],
            ["graymatter recall (top-8)", cold["p50_ms"], cold["p90_ms"], cold["p99_ms"], cold["max_ms"]],
        ],
    )
    met = cold["p50_ms"] < TARGET_MEDIAN_MS
    print(
        f"\nmedian {cold['p50_ms']:.1f} ms vs target < {TARGET_MEDIAN_MS:.0f} ms: "
        f"{'met' if met else 'NOT met'}; "
        f"{overhead * 1000:.1f} ms above the interpreter baseline "
        f"({statistics.median(recall) / statistics.median(baseline):.1f}x)"
    )
    print(
        "\nslowest imports (cumulative ms): "
        + ", ".join(f"{r['module']} {r['cumulative_ms']:.1f}" for r in imports)
    )
    return {
        "facts": SIZE,
        "slowest_imports": imports,
        "runs": runs,
        "command": " ".join(Path(c).name if i == 0 else c for i, c in enumerate(command)),
        "baseline_python_pass": base,
        "graymatter_recall": cold,
        "median_overhead_ms": round(overhead * 1000, 2),
        "target_median_ms": TARGET_MEDIAN_MS,
        "met": met,
        "tables": [table],
    }
