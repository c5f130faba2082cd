"""Shared benchmark plumbing: timing statistics, tables, machine facts and atomic result files.

Every benchmark module exposes ``run(quick: bool) -> dict``; it prints its own table(s) with
:func:`print_table` and returns JSON-able results. The runner (``python -m benchmarks``) adds the
machine facts and writes the file, so modules never touch ``benchmarks/results/`` themselves.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

BENCH_ROOT = Path(__file__).resolve().parent
REPO_ROOT = BENCH_ROOT.parent
RESULTS_DIR_ENV = "GRAYMATTER_BENCH_RESULTS"


class MissingBenchmarkData(FileNotFoundError):
    """A benchmark's external data set is not on this machine: the run skips it and says where to point."""


CACHE_DIR_ENV = "GRAYMATTER_BENCH_CACHE"


def percentile(values: Sequence[float], pct: float) -> float:
    """Return the ``pct`` percentile (0-100) of ``values`` by linear interpolation (numpy's default)."""
    if not values:
        raise ValueError("percentile of an empty sequence")
    ordered = sorted(values)
    if len(ordered) == 1:
        return float(ordered[0])
    position = (len(ordered) - 1) * pct / 100.0
    low = math.floor(position)
    high = math.ceil(position)
    fraction = position - low
    return float(ordered[low] + (ordered[high] - ordered[low]) * fraction)


def latency_summary(seconds: Sequence[float]) -> dict[str, float]:
    """Summarise latencies given in seconds as milliseconds: n, p50, p90, p99, mean, max."""
    millis = [s * 1000.0 for s in seconds]
    return {
        "n": len(millis),
        "p50_ms": round(percentile(millis, 50), 3),
        "p90_ms": round(percentile(millis, 90), 3),
        "p99_ms": round(percentile(millis, 99), 3),
        "mean_ms": round(sum(millis) / len(millis), 3),
        "max_ms": round(max(millis), 3),
    }


def time_calls(fn: Callable[[], object], repeats: int) -> list[float]:
    """Call ``fn`` ``repeats`` times and return each call's wall time in seconds."""
    timings: list[float] = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        timings.append(time.perf_counter() - start)
    return timings


def wilson_interval(hits: int, total: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (95 % by default)."""
    if total == 0:
        return (0.0, 0.0)
    p = hits / total
    denom = 1 + z * z / total
    centre = (p + z * z / (2 * total)) / denom
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def estimate_tokens(text: str) -> int:
    """Token estimate used by the Go original's benchmarks: words x 1.33, rounded."""
    return round(len(text.split()) * 1.33)


def format_cell(value: object) -> str:
    """Render one table cell: floats get a sensible precision, everything else ``str``."""
    if isinstance(value, float):
        if value == 0:
            return "0"
        if abs(value) >= 100:
            return f"{value:,.0f}"
        if abs(value) >= 1:
            return f"{value:.2f}"
        return f"{value:.3f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def render_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Render a GitHub-flavoured markdown table with aligned columns."""
    cells = [[format_cell(c) for c in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
    lines = [
        "| " + " | ".join(h.ljust(widths[i]) for i, h in enumerate(headers)) + " |",
        "|" + "|".join("-" * (w + 2) for w in widths) + "|",
    ]
    lines.extend("| " + " | ".join(c.ljust(widths[i]) for i, c in enumerate(row)) + " |" for row in cells)
    return "\n".join(lines)


def print_table(title: str, headers: Sequence[str], rows: Sequence[Sequence[object]]) -> dict[str, Any]:
    """Print a titled markdown table and return it as a JSON-able dict (title, headers, rows)."""
    print(f"\n### {title}\n")
    print(render_table(headers, rows))
    sys.stdout.flush()
    return {"title": title, "headers": list(headers), "rows": [[format_cell(c) for c in r] for r in rows]}


def machine_info() -> dict[str, Any]:
    """Facts about the machine and checkout that a reader needs to judge the figures."""
    info: dict[str, Any] = {
        "nproc": os.cpu_count(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "machine": platform.machine(),
    }
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        info["git_commit"] = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
    with contextlib.suppress(OSError, ValueError):
        load1, load5, _ = os.getloadavg()
        info["loadavg_1m_5m"] = [round(load1, 2), round(load5, 2)]
    return info


def results_dir() -> Path:
    """Where result files go: ``$GRAYMATTER_BENCH_RESULTS`` or ``benchmarks/results``."""
    override = os.environ.get(RESULTS_DIR_ENV)
    return Path(override) if override else BENCH_ROOT / "results"


def write_json_atomic(path: Path, payload: object) -> None:
    """Write ``payload`` as JSON to ``path`` atomically (exclusive temp file, fsync, rename), mode 0600."""
    from graymatter.fsutil import atomic_write

    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, (json.dumps(payload, indent=2, sort_keys=False) + "\n").encode())


_CACHE_DIR: Path | None = None


def cache_dir() -> Path:
    """A private temp directory shared by all benchmarks of one run (stores are built once and reused).

    Honors ``$GRAYMATTER_BENCH_CACHE`` when set (the directory is then kept); otherwise a fresh
    ``tempfile.mkdtemp`` directory that :func:`cleanup_cache_dir` removes at the end of the run.
    """
    global _CACHE_DIR
    if _CACHE_DIR is None:
        override = os.environ.get(CACHE_DIR_ENV)
        if override:
            _CACHE_DIR = Path(override)
            _CACHE_DIR.mkdir(mode=0o700, parents=True, exist_ok=True)
        else:
            _CACHE_DIR = Path(tempfile.mkdtemp(prefix="graymatter-bench-"))
    return _CACHE_DIR


def cleanup_cache_dir() -> None:
    """Remove the run's temp directory unless the user chose it with ``$GRAYMATTER_BENCH_CACHE``."""
    global _CACHE_DIR
    if _CACHE_DIR is not None and not os.environ.get(CACHE_DIR_ENV):
        shutil.rmtree(_CACHE_DIR, ignore_errors=True)
    _CACHE_DIR = None


@contextlib.contextmanager
def stopwatch() -> Iterator[Callable[[], float]]:
    """Context manager yielding a function that returns the seconds elapsed since entry."""
    start = time.perf_counter()
    yield lambda: time.perf_counter() - start


def subprocess_env(**extra: str) -> dict[str, str]:
    """Environment for benchmark child processes: the current one, the repo on PYTHONPATH, plus ``extra``."""
    env = dict(os.environ)
    paths = [
        str(REPO_ROOT),
        *(str(REPO_ROOT / "packages" / wing / "src") for wing in ("graymatter", "tinyagent")),
    ]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env.update(extra)
    return env
