"""Cold ``graymatter recall`` at 10k facts as a fresh process (the hook budget of the Go original).

Every run is a new OS process: interpreter start, imports, opening the store, one top-8 recall and
printing. As on a user's install, bytecode is compiled once beforehand (``compileall``) and
``PYTHONDONTWRITEBYTECODE`` is removed from the children's environment. Baseline in the same run,
interleaved with the measured runs: ``python -c pass`` (the floor any Python CLI pays). Target:
median under 150 ms, in-process (``GRAYMATTER_MCP_WARM=0``: the recall imports and opens everything
itself). A third row, interleaved too, runs the same command while the warm server of ADR 0010 listens
(in a private socket directory of this run): a forked child with everything imported serves it. One
extra ``-X importtime`` run reports the most expensive imports so a regression is easy to locate.
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.corpus import generate_facts, generate_queries, iter_batches
from benchmarks.harness import REPO_ROOT, latency_summary, print_table, subprocess_env
from benchmarks.warm_server import WarmServer

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
    """Interleave baseline, in-process and warm-served runs; report medians and the ratio."""
    directory = ensure_store(SIZE)
    env = subprocess_env()
    for variable in ("GRAYMATTER_EMBEDDINGS", "OPENAI_API_KEY", "PYTHONDONTWRITEBYTECODE"):
        env.pop(variable, None)  # a user's install keyword-only, with bytecode written once
    runs = RUNS_QUICK if quick else RUNS_FULL
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(REPO_ROOT / "packages")], env=env, timeout=120
    )
    with tempfile.TemporaryDirectory(prefix="gmcold-", dir="/tmp") as runtime:
        cold_env = {**env, "GRAYMATTER_MCP_WARM": "0", "XDG_RUNTIME_DIR": runtime}
        warm = WarmServer(Path(runtime), {**env, "GRAYMATTER_MCP_WARM": "1", "XDG_RUNTIME_DIR": runtime})
        try:
            warm.ensure()
            baseline, recall, served = _measure(directory, runs, cold_env, warm)
        finally:
            warm.stop()
    base, cold, hot = latency_summary(baseline), latency_summary(recall), latency_summary(served)
    overhead = statistics.median(recall) - statistics.median(baseline)
    query = generate_queries(1, seed=11)[0]
    imports = import_profile(["--dir", str(directory), "--quiet", "recall", AGENT, query], cold_env)
    table = print_table(
        f"Cold `graymatter recall` at {SIZE:,} facts, fresh process each ({runs} runs, ms)",
        ["command", "median", "p90", "p99", "max"],
        [
            ["python -c pass (baseline)", base["p50_ms"], base["p90_ms"], base["p99_ms"], base["max_ms"]],
            [
                "graymatter recall (top-8), in-process",
                *(cold[k] for k in ("p50_ms", "p90_ms", "p99_ms", "max_ms")),
            ],
            [
                "graymatter recall, warm server running",
                *(hot[k] for k in ("p50_ms", "p90_ms", "p99_ms", "max_ms")),
            ],
        ],
    )
    met = cold["p50_ms"] < TARGET_MEDIAN_MS
    print(
        f"\nin-process median {cold['p50_ms']:.1f} ms vs target < {TARGET_MEDIAN_MS:.0f} ms: "
        f"{'met' if met else 'NOT met'}; "
        f"{overhead * 1000:.1f} ms above the interpreter baseline "
        f"({statistics.median(recall) / statistics.median(baseline):.1f}x); "
        f"served by the warm server {hot['p50_ms']:.1f} ms"
    )
    print(
        "\nslowest imports (cumulative ms): "
        + ", ".join(f"{r['module']} {r['cumulative_ms']:.1f}" for r in imports)
    )
    return {
        "facts": SIZE,
        "slowest_imports": imports,
        "runs": runs,
        "command": " ".join(Path(c).name if i == 0 else c for i, c in enumerate(graymatter_command())),
        "baseline_python_pass": base,
        "graymatter_recall": cold,
        "graymatter_recall_warm": hot,
        "median_overhead_ms": round(overhead * 1000, 2),
        "target_median_ms": TARGET_MEDIAN_MS,
        "met": met,
        "tables": [table],
    }


def _measure(
    directory: Path, runs: int, cold_env: dict[str, str], warm: WarmServer
) -> tuple[list[float], list[float], list[float]]:
    """``runs`` rounds of: ``python -c pass``, an in-process recall, a recall served by the warm server."""
    command = graymatter_command()
    queries = generate_queries(runs + 1, seed=11)
    recall = [*command, "--dir", str(directory), "--quiet", "recall", AGENT]
    _timed([sys.executable, "-c", "pass"], cold_env)  # warm the page cache for all three
    _timed([*recall, queries[-1]], cold_env)
    _timed([*recall, queries[-1]], warm.env)
    baseline: list[float] = []
    cold: list[float] = []
    served: list[float] = []
    for query in queries[:runs]:
        baseline.append(_timed([sys.executable, "-c", "pass"], cold_env))
        cold.append(_timed([*recall, query], cold_env))
        warm.ensure()  # still the one listening (a relay that found none would have launched another)
        served.append(_timed([*recall, query], warm.env))
    if warm.launches != 1:
        raise RuntimeError(f"the warm server was launched {warm.launches} times: warm rows are not warm")
    return baseline, cold, served
