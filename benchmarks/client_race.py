"""Client race: under two busy processes, does a client's first model request offer graymatter's tools?

Claude Code 2.1.197 in ``-p`` mode connects MCP servers in the background by default, and Codex 0.171.0
sends its first model request about 1 s after start without waiting for a server whose entry lacks
``required = true`` (issue 12). This benchmark keeps both cores busy (``python -c "while 1: pass"`` x2)
and runs each client N times (10; 2 with ``--quick``), interleaved, with the real-client gate's harness
(tests/gate: pinned npm installs, fresh HOME, loopback-only network namespace, scripted model): Claude
Code with a project ``.mcp.json`` at default settings, Codex with an entry WITHOUT ``required = true``,
and, as the control, Codex with ``required = true``. It counts the runs whose first model request offered
all seven tools, and reports the median time from client start to that request. A benchmark, not a test:
the outcome depends on timing. Needs root (``unshare -n``), npm and the network for the first install.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.harness import REPO_ROOT, print_table

VARIANTS = (
    ("claude-code", "Claude Code -p, .mcp.json, defaults", False),
    ("codex", "Codex exec, entry without required", False),
    ("codex", "Codex exec, required = true (control)", True),
)


def _gate_modules() -> Any:
    sys.path.insert(0, str(REPO_ROOT / "tests"))
    from gate import clients, session

    return clients, session


def _busy_processes(count: int = 2) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, "-c", "while 1: pass"]) for _ in range(count)]


def _one_run(name: str, required: bool, root: Path) -> dict[str, Any]:
    clients, session = _gate_modules()
    client = clients.CLIENTS[name]
    layout = clients.Layout(root)
    layout.make()
    client.seed(layout)
    session.wire_by_hand(client, layout, session.server_command(layout), required=required)
    started = time.time()
    run = session.run_client(client, layout, [], timeout=120, tag="race")
    main = run.main_requests()
    first = main[0]["time"] - started if main else None
    return {
        "offered": run.offered(0) == sorted(clients.TOOLS),
        "first_request_s": first,
        "rc": run.returncode,
    }


def run(quick: bool) -> dict[str, Any]:
    """Run every variant ``runs`` times, interleaved, with both cores kept busy."""
    runs = 2 if quick else 10
    clients, _ = _gate_modules()
    for name in {variant[0] for variant in VARIANTS}:
        clients.CLIENTS[name].ensure()
    load_before = os.getloadavg()
    outcomes: dict[str, list[dict[str, Any]]] = {label: [] for _, label, _ in VARIANTS}
    busy = _busy_processes()
    try:
        time.sleep(2)  # let the busy loops settle on the cores
        load_busy = os.getloadavg()
        for _ in range(runs):
            for name, label, required in VARIANTS:
                with tempfile.TemporaryDirectory(prefix="client-race-") as tmp:
                    outcomes[label].append(_one_run(name, required, Path(tmp)))
        load_after = os.getloadavg()
    finally:
        for process in busy:
            process.kill()
            process.wait()
    rows = []
    for _, label, _ in VARIANTS:
        results = outcomes[label]
        hits = sum(1 for r in results if r["offered"])
        times = [r["first_request_s"] for r in results if r["first_request_s"] is not None]
        median = statistics.median(times) if times else float("nan")
        rows.append(
            [label, f"{hits}/{len(results)}", round(median, 2), sum(1 for r in results if r["rc"] != 0)]
        )
    headers = [
        "Client and entry",
        "First request offers the 7 tools",
        "Median s to 1st request",
        "Nonzero exits",
    ]
    table = print_table("Client race under two busy processes", headers, rows)
    loads = {"before": load_before, "busy": load_busy, "after": load_after}
    print(f"\nload average (1, 5, 15 min): {loads}")
    return {"runs": runs, "table": table, "outcomes": outcomes, "loadavg": loads}
