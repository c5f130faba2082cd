"""The single benchmark runner: ``python -m benchmarks [NAME ...] [--quick] [--list]``.

Registry contract (for every helper adding a benchmark): add the module's name to ``REGISTRY`` below
and put a module ``benchmarks/<name>.py`` next to this file that exposes

    def run(quick: bool) -> dict: ...

``run`` prints its own table(s) (use :func:`benchmarks.harness.print_table`) and returns JSON-able
results. The runner adds machine facts and timings and writes ``benchmarks/results/<name>.json``
(``<name>.quick.json`` for ``--quick``). A registered module that does not exist yet is skipped
with a note; a module that raises is reported and makes the exit status non-zero, the others
still run.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
import time
import traceback
from datetime import UTC, datetime
from typing import Any

from benchmarks.harness import (
    MissingBenchmarkData,
    cleanup_cache_dir,
    machine_info,
    results_dir,
    write_json_atomic,
)

# Run order: cheap and engine-only first; other helpers' modules after.
REGISTRY: tuple[str, ...] = (
    "recall_latency",
    "cold_recall",
    "write_throughput",
    "token_reduction",
    "synthetic_quality",
    "locomo",
    "recall_scale",  # cost at scale beside FTS5 (issue 13)
    "storage_layout",  # the SQLite layout's own share of a bulk write, and a redesign's (issue 13)
    "mcp_roundtrip",  # gm-mcp
    "mcp_startup",  # cold start of mcp serve to initialize / tools/list, warm server states, Node reference
    "agent_overhead",  # ta-providers
    "trajectory_save",  # ta-core
    "resume_validate",  # ta-resume
    "postgres_scale",  # gm-postgres
    "startup",  # cold start of the short commands of both wings
    "hook_latency",  # session hooks as fresh processes at 10k facts
    "client_race",  # real clients vs a busy machine: are the tools in the first request?
    "dashboard_pages",  # the web dashboard: list and search pages at 100k facts, server and browser
)

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


def module_exists(name: str) -> bool:
    """True when ``benchmarks/<name>.py`` (or a package of that name) is present."""
    return importlib.util.find_spec(f"benchmarks.{name}") is not None


def run_one(name: str, quick: bool) -> dict[str, Any]:
    """Import and run one benchmark, save its JSON and return a status record for the summary."""
    started = datetime.now(UTC)
    t0 = time.perf_counter()
    module = importlib.import_module(f"benchmarks.{name}")
    results = module.run(quick=quick)
    elapsed = time.perf_counter() - t0
    payload = {
        "benchmark": name,
        "quick": quick,
        "started_at": started.isoformat(timespec="seconds"),
        "elapsed_s": round(elapsed, 2),
        "machine": machine_info(),
        "command": "python -m benchmarks " + name + (" --quick" if quick else ""),
        "results": results,
    }
    path = results_dir() / (f"{name}.quick.json" if quick else f"{name}.json")
    write_json_atomic(path, payload)
    return {"name": name, "status": "ok", "elapsed_s": elapsed, "path": str(path)}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="Run the graymatter/tinyagent benchmarks; tables are printed and saved as JSON.",
    )
    parser.add_argument("names", nargs="*", metavar="NAME", help="benchmarks to run (default: all)")
    parser.add_argument("--quick", action="store_true", help="small, fast smoke version of each benchmark")
    parser.add_argument("--list", action="store_true", help="list registered benchmarks and exit")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.list:
        for name in REGISTRY:
            print(f"{name}\t{'present' if module_exists(name) else 'not present yet'}")
        return EXIT_OK
    unknown = [n for n in args.names if n not in REGISTRY]
    if unknown:
        print(
            f"error: unknown benchmark(s) {', '.join(unknown)}; registered: {', '.join(REGISTRY)}",
            file=sys.stderr,
        )
        return EXIT_USAGE
    selected = args.names or list(REGISTRY)
    summary: list[dict[str, Any]] = []
    try:
        for name in selected:
            if not module_exists(name):
                print(f"\n== {name}: skipped (benchmarks/{name}.py not present)")
                summary.append({"name": name, "status": "skipped", "elapsed_s": 0.0, "path": ""})
                continue
            print(f"\n== {name}{' (quick)' if args.quick else ''}")
            sys.stdout.flush()
            try:
                summary.append(run_one(name, args.quick))
            except MissingBenchmarkData as exc:  # data not on this machine: not a failure of the code
                print(f"== {name}: skipped ({exc})")
                summary.append({"name": name, "status": "skipped", "elapsed_s": 0.0, "path": ""})
            except Exception as exc:  # one failing benchmark must not hide the others
                traceback.print_exc()
                print(f"== {name}: FAILED: {type(exc).__name__}: {exc}", file=sys.stderr)
                summary.append({"name": name, "status": "failed", "elapsed_s": 0.0, "path": ""})
    finally:
        cleanup_cache_dir()
    print("\n== summary")
    for record in summary:
        where = f" -> {record['path']}" if record["path"] else ""
        print(f"{record['name']:<20} {record['status']:<8} {record['elapsed_s']:8.1f} s{where}")
    return EXIT_FAILED if any(r["status"] == "failed" for r in summary) else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
