"""Child process of the write-throughput benchmark: ``python -m benchmarks.write_worker ...``.

``write`` mode stores ``--count`` facts (one ``remember`` = one transaction each) for ``--agent``;
``recall`` mode recalls in a loop until ``--stop-file`` exists. Both open the store, report ready
(``<start-file>.ready.<pid>``), wait for ``--start-file`` so all processes begin together, and print
one JSON line with their timings and error count.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path


def fact_text(agent: str, index: int) -> str:
    """The text written by ``agent`` as its ``index``-th fact (unique, verifiable afterwards)."""
    return f"{agent} note {index}: the payment service deploy checklist item {index % 17} was reviewed"


def _wait(path: Path, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"start signal {path} never appeared")
        time.sleep(0.002)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.write_worker")
    parser.add_argument("mode", choices=("write", "recall"))
    parser.add_argument("--dir", required=True)
    parser.add_argument("--agent", required=True)
    parser.add_argument("--count", type=int, default=0)
    parser.add_argument("--start-file", required=True)
    parser.add_argument("--stop-file", default="")
    args = parser.parse_args(argv)

    from graymatter import Memory

    memory = Memory(args.dir, embedder=None)
    latencies: list[float] = []
    errors: list[str] = []
    try:
        Path(f"{args.start_file}.ready.{os.getpid()}").touch()
        _wait(Path(args.start_file))
        began = time.time()
        if args.mode == "write":
            for index in range(args.count):
                start = time.perf_counter()
                try:
                    memory.remember(args.agent, fact_text(args.agent, index))
                except Exception as exc:  # counted and reported, never hidden
                    errors.append(f"{type(exc).__name__}: {exc}")
                latencies.append(time.perf_counter() - start)
        else:
            from benchmarks.corpus import generate_queries

            queries = generate_queries(50, seed=3)
            stop = Path(args.stop_file)
            while not stop.exists():
                start = time.perf_counter()
                try:
                    memory.recall(args.agent, queries[len(latencies) % len(queries)], top_k=8)
                except Exception as exc:
                    errors.append(f"{type(exc).__name__}: {exc}")
                latencies.append(time.perf_counter() - start)
        ended = time.time()
    finally:
        memory.close()
    print(json.dumps({"began": began, "ended": ended, "latencies": latencies, "errors": errors[:20],
                      "error_count": len(errors)}))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
