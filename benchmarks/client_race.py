"""Client race: under two busy processes, does a client's first model request offer graymatter's tools?

Claude Code 2.1.197 in ``-p`` mode connects MCP servers in the background by default, and Codex 0.171.0
sends its first model request about 1 s after start without waiting for a server whose entry lacks
``required = true`` (issue 12). This benchmark keeps both cores busy (``python -c "while 1: pass"`` x2)
and runs each variant N times (10; 2 with ``--quick``), interleaved, with the real-client gate's harness
(tests/gate: pinned npm installs, fresh HOME, loopback-only network namespace, scripted model). The
variants: Claude Code with a hand-written project ``.mcp.json`` at default settings and Codex with an
entry WITHOUT ``required = true``, each with graymatter's per-user warm MCP server off
(``GRAYMATTER_MCP_WARM=0``: the server as it was before the warm server existed), cold (none running yet:
the first ``mcp serve`` starts one in the background and serves in-process) and warm (already running, as
after an earlier session); and both wired by ``graymatter init``
(Claude Code's ``MCP_CONNECTION_NONBLOCKING=0``, Codex's ``required = true``), cold. It counts the runs
whose first model request offered all seven tools and reports the median time from client start to that
request. A benchmark, not a test: the outcome depends on timing. Needs root (``unshare -n``) and npm.

The hand-wired servers run graymatter from a copy of its source taken when the run starts
(``PYTHONPATH`` set in the entry's command, since Codex passes a server only a few variables): the warm
server's key covers every source file's size and mtime, so in a working tree that others edit during the
run, "warm" would otherwise often meet a new key, that is a cold start (the third run of the previous
session saw 4 keys). An installed graymatter does not change under its users. The init-wired variants run
the installed command that ``init`` records. The result reports how many keys were seen (1 expected).
"""

from __future__ import annotations

import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from benchmarks.harness import REPO_ROOT, print_table


@dataclass(frozen=True)
class Variant:
    """One way of wiring one client."""

    label: str
    client: str
    wiring: str  # "hand" (no required, no hooks) or "init"
    server: str  # "cold" (no warm server yet), "warm" (warm server running) or "off" (GRAYMATTER_MCP_WARM=0)


VARIANTS = (
    Variant("Claude Code -p, .mcp.json by hand, defaults, warm off", "claude-code", "hand", "off"),
    Variant("Claude Code -p, .mcp.json by hand, defaults, cold", "claude-code", "hand", "cold"),
    Variant("Claude Code -p, .mcp.json by hand, defaults, warm server", "claude-code", "hand", "warm"),
    Variant("Claude Code -p, wired by graymatter init, cold", "claude-code", "init", "cold"),
    Variant("Codex exec, entry without required, warm off", "codex", "hand", "off"),
    Variant("Codex exec, entry without required, cold", "codex", "hand", "cold"),
    Variant("Codex exec, entry without required, warm server", "codex", "hand", "warm"),
    Variant("Codex exec, wired by graymatter init (required), cold", "codex", "init", "cold"),
)


def _gate() -> Any:
    sys.path.insert(0, str(REPO_ROOT / "tests"))
    from gate import clients, session

    return clients, session


def _freeze_source(shared_tmp: Path) -> Path:
    """A copy of graymatter's source for this run's hand-wired servers (see the module docstring)."""
    frozen = shared_tmp / "graymatter-src"
    source = REPO_ROOT / "packages" / "graymatter" / "src"
    shutil.copytree(source, frozen, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    return frozen


def _start_warm_server(shared_tmp: Path, frozen: Path) -> None:
    """Start graymatter's warm MCP server for ``TMPDIR=shared_tmp``: one short ``mcp serve`` launches it."""
    _, session = _gate()
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(shared_tmp),
        "TMPDIR": str(shared_tmp),
        "PYTHONPATH": str(frozen),
    }
    store = shared_tmp / "prime-store"
    subprocess.run(
        [session.GRAYMATTER, "--dir", str(store), "mcp", "serve"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env=env,
        timeout=120,
    )
    for _ in range(300):  # the warm server imports everything before it listens
        if list(shared_tmp.glob(f"graymatter-{os.getuid()}/mcp-*.sock")):
            return
        time.sleep(0.1)
    raise RuntimeError("graymatter's warm MCP server did not start")


def _stop_warm_servers(shared_tmp: Path) -> None:
    """End the warm servers this benchmark started (found by their TMPDIR)."""
    marker = f"TMPDIR={shared_tmp}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if (
                b"run_warm_server" in (entry / "cmdline").read_bytes()
                and marker in (entry / "environ").read_bytes()
            ):
                os.kill(int(entry.name), signal.SIGKILL)
        except (OSError, ProcessLookupError):
            continue


def _one_run(variant: Variant, root: Path, shared_tmp: Path, frozen: Path) -> dict[str, Any]:
    clients, session = _gate()
    client = clients.CLIENTS[variant.client]
    if variant.server == "warm":  # both clients pass TMPDIR to the server: the warm server's socket is there
        base = client.env
        client = replace(client, env=lambda layout: {**base(layout), "TMPDIR": str(shared_tmp)})
    layout = clients.Layout(root)
    layout.make()
    client.seed(layout)
    if variant.wiring == "init":
        session.wire_with_init(client, layout)
    else:
        settings = [f"PYTHONPATH={frozen}"]
        if variant.server == "off":  # how every server started before the warm server existed
            settings.append("GRAYMATTER_MCP_WARM=0")
        command = ["/usr/bin/env", *settings, *session.server_command(layout)]
        session.wire_by_hand(client, layout, command, required=False)
    started = time.time()
    run = session.run_client(client, layout, [], timeout=120, tag="race")
    main = run.main_requests()
    return {
        "offered": run.offered(0) == sorted(clients.TOOLS),
        "first_request_s": main[0]["time"] - started if main else None,
        "rc": run.returncode,
    }


def _row(variant: Variant, results: list[dict[str, Any]]) -> list[object]:
    hits = sum(1 for r in results if r["offered"])
    times = [r["first_request_s"] for r in results if r["first_request_s"] is not None]
    median = round(statistics.median(times), 2) if times else "-"
    return [variant.label, f"{hits}/{len(results)}", median, sum(1 for r in results if r["rc"] != 0)]


def run(quick: bool) -> dict[str, Any]:
    """Run every variant ``runs`` times, interleaved, with both cores kept busy."""
    runs = 2 if quick else 10
    clients, _ = _gate()
    for name in {variant.client for variant in VARIANTS}:
        clients.CLIENTS[name].ensure()
    outcomes: dict[str, list[dict[str, Any]]] = {variant.label: [] for variant in VARIANTS}
    loads: dict[str, tuple[float, float, float]] = {"before": os.getloadavg()}
    with tempfile.TemporaryDirectory(prefix="race-") as shared:
        shared_tmp = Path(shared)
        frozen = _freeze_source(shared_tmp)
        busy = [subprocess.Popen([sys.executable, "-c", "while 1: pass"]) for _ in range(2)]
        try:
            _start_warm_server(shared_tmp, frozen)
            time.sleep(2)  # let the busy loops settle on the cores
            loads["busy"] = os.getloadavg()
            for _ in range(runs):
                for variant in VARIANTS:
                    with tempfile.TemporaryDirectory(prefix="client-race-") as tmp:
                        outcomes[variant.label].append(_one_run(variant, Path(tmp), shared_tmp, frozen))
            loads["after"] = os.getloadavg()
            # one socket per code fingerprint: more than one would mean the frozen copy changed mid-run
            warm_keys = len(list(shared_tmp.glob(f"graymatter-{os.getuid()}/mcp-*.sock")))
        finally:
            for process in busy:
                process.kill()
                process.wait()
            _stop_warm_servers(shared_tmp)
    rows = [_row(variant, outcomes[variant.label]) for variant in VARIANTS]
    headers = ["Client and wiring", "1st request offers the 7 tools", "Median s to 1st request", "Exits != 0"]
    table = print_table("Client race under two busy processes (2 cores)", headers, rows)
    print(f"\nload average (1, 5, 15 min): {loads}; warm-server code fingerprints seen: {warm_keys}")
    return {"runs": runs, "table": table, "outcomes": outcomes, "loadavg": loads, "warm_keys": warm_keys}
