"""Cold start of the short commands of both wings, each as a fresh process, against ``python -c pass``.

What a user (or a hook, or a client spawning a server) pays before any work: interpreter start, imports,
argument parsing, and for ``recall`` opening a 1k-fact store and answering. Every command runs ``RUNS``
times, interleaved round-robin so load drifts hit all rows alike; the table reports medians and the
ratio to ``python -c pass`` measured in the same rounds.

``BENCH_BASELINE_BIN=/path/to/other/venv/bin`` adds the same graymatter and tinyagent commands from another
install (for instance a checkout of an older commit), interleaved in the same rounds, with the ratio of
this tree to that one: a before/after comparison on one machine at one load. ``BENCH_BASELINE_LABEL``
names it in the table (say, the commit).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.cold_recall import AGENT, ensure_store
from benchmarks.harness import print_table, subprocess_env

STORE_FACTS = 1_000
RUNS_FULL = 20
RUNS_QUICK = 4
QUERY = "which database does the billing service use"


def _commands(bin_dir: Path, store: Path) -> dict[str, list[str]]:
    graymatter, tinyagent = str(bin_dir / "graymatter"), str(bin_dir / "tinyagent")
    return {
        "graymatter --version": [graymatter, "--version"],
        "graymatter --help": [graymatter, "--help"],
        "graymatter recall (1k facts)": [graymatter, "--dir", str(store), "--quiet", "recall", AGENT, QUERY],
        "tinyagent --version": [tinyagent, "--version"],
        "tinyagent --help": [tinyagent, "--help"],
    }


def _timed(command: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{command[0]} exited {done.returncode}: {done.stderr.decode()[-300:]}")
    return elapsed


def run(quick: bool) -> dict[str, Any]:
    """Median cold-start times of each command, with ratios to ``python -c pass`` (and to a baseline)."""
    runs = RUNS_QUICK if quick else RUNS_FULL
    # As a user runs them: the installed commands, no PYTHONPATH (which would put directories in front of
    # the standard library on every import), bytecode written and reused.
    env = {k: v for k, v in subprocess_env().items() if k not in ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE")}
    store = ensure_store(STORE_FACTS)
    rows_of: dict[str, list[str]] = {"python -c pass": [sys.executable, "-c", "pass"]}
    rows_of["python -c 'import mcp.types'"] = [sys.executable, "-c", "import mcp.types"]
    ours = _commands(Path(sys.executable).parent, store)
    rows_of.update({f"{name}": cmd for name, cmd in ours.items()})
    baseline_bin = os.environ.get("BENCH_BASELINE_BIN")
    label = os.environ.get("BENCH_BASELINE_LABEL") or baseline_bin or "none"
    if baseline_bin:
        theirs = _commands(Path(baseline_bin), store)
        rows_of.update({f"baseline: {name}": cmd for name, cmd in theirs.items()})
    for command in rows_of.values():  # warm the page cache and the bytecode of every command once
        _timed(command, env)
    samples: dict[str, list[float]] = {name: [] for name in rows_of}
    load_before = os.getloadavg()
    for _ in range(runs):
        for name, command in rows_of.items():
            samples[name].append(_timed(command, env))
    load_after = os.getloadavg()
    floor = statistics.median(samples["python -c pass"])
    medians = {name: statistics.median(values) for name, values in samples.items()}
    rows = []
    for name, median in medians.items():
        if name.startswith("baseline: "):
            continue
        base = medians.get(f"baseline: {name}")
        rows.append(
            [
                name,
                round(median * 1000, 1),
                round(median / floor, 1),
                round(base * 1000, 1) if base else "",
                f"{median / base:.2f}" if base else "",
            ]
        )
    load = f"{load_before[0]:.2f} -> {load_after[0]:.2f}"
    table = print_table(
        f"Cold start, median of {runs} interleaved runs (load {load})",
        ["command", "median ms", "x python -c pass", f"baseline ({label}) ms", "this / baseline"],
        rows,
    )
    return {
        "table": table,
        "runs": runs,
        "load_1m_before_after": [load_before[0], load_after[0]],
        "baseline": label,
        "medians_ms": {name: round(value * 1000, 2) for name, value in medians.items()},
    }
