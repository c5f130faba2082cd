"""Cold start of ``graymatter mcp serve`` to the ``initialize`` and the first ``tools/list`` answer.

Median of interleaved runs (each round starts every contender once, in rotating order), on a quiet machine
and again with two busy processes spinning on the two cores, against:

* ``python -c pass`` and ``python -c "import mcp.types"`` (process start to a printed ``ready``);
* the MCP reference server, npm ``@modelcontextprotocol/server-memory`` on Node (installed with npm into
  the benchmark cache on first use).

graymatter is measured in four states of its warm server (docs/decisions/0010-mcp-fast-start.md): running
(the relay hands its stdio to a pre-imported process), absent (first start: served in-process while a warm
server is launched for the next client), crashed (a stale socket nobody listens on: the same fallback), and
switched off (``GRAYMATTER_MCP_WARM=0``, in-process only). A warm server of another graymatter version has
another socket name, so that case is "absent". Every contender is a real process driven with raw
line-delimited JSON-RPC. The 1 MB checkpoint and 10k-fact search round trips are in ``mcp_roundtrip``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from benchmarks.harness import cache_dir, print_table, subprocess_env
from benchmarks.mcp_roundtrip import StdioServer

REFERENCE_PACKAGE = "@modelcontextprotocol/server-memory"
REFERENCE_VERSION = "2026.8.31"


def _reference_server() -> Path | None:
    """The reference server's entry script, installed with npm into the cache; None without npm/node."""
    root = cache_dir() / "mcp-reference-server"
    script = root / "node_modules" / "@modelcontextprotocol" / "server-memory" / "dist" / "index.js"
    if script.exists():
        return script
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        return None
    root.mkdir(parents=True, exist_ok=True)
    (root / "package.json").write_text(json.dumps({"private": True}) + "\n")
    done = subprocess.run(
        [
            npm,
            "install",
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
            f"{REFERENCE_PACKAGE}@{REFERENCE_VERSION}",
        ],
        cwd=root,
        capture_output=True,
        timeout=600,
    )
    return script if done.returncode == 0 and script.exists() else None


def _process_ready(code: str) -> tuple[float, float]:
    """Seconds from process start until ``code`` has run (both columns: there is no protocol)."""
    start = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-c", f"{code}\nprint('ready', flush=True)"],
        stdout=subprocess.PIPE,
        env=subprocess_env(),
    )
    assert child.stdout is not None
    if child.stdout.readline().strip() != b"ready":
        raise RuntimeError(f"benchmark child failed: {code}")
    elapsed = time.perf_counter() - start
    child.wait()
    return elapsed, elapsed


def _handshake(command: list[str] | None, store: Path, **env: str) -> tuple[float, float]:
    warm = env.pop("GRAYMATTER_MCP_WARM", "1") == "1"
    server = StdioServer(store, command=command, warm=warm, env=env)
    try:
        initialized, listed, tools = server.handshake_and_list()
    finally:
        server.close()
    if tools < 1:
        raise RuntimeError("tools/list returned no tools")
    return initialized, listed


class WarmRuntime:
    """A private XDG_RUNTIME_DIR for graymatter's warm server; ends every warm server started in it."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="gmb-", dir="/tmp"))
        self.env = {"XDG_RUNTIME_DIR": str(self.root)}

    def _socket(self) -> Path:
        from graymatter.faces.mcp_server.warm_paths import code_fingerprint, package_dir

        return self.root / "graymatter" / f"mcp-{code_fingerprint(package_dir())}.sock"

    def _listening(self) -> bool:
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            probe.connect(str(self._socket()))
        except OSError:
            return False
        finally:
            probe.close()
        return True

    def ensure_running(self) -> None:
        """A warm server for the code as it is now, listening (started and waited for when needed)."""
        from graymatter.faces.mcp_server.warm_relay import WARM_SERVER_CODE

        deadline = time.monotonic() + 60
        while not self._listening():
            if not self._socket().with_suffix(".lock").exists() or not self._holder_alive():
                subprocess.Popen(
                    [sys.executable, "-c", WARM_SERVER_CODE],
                    env=subprocess_env(**self.env),
                    start_new_session=True,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                time.sleep(0.2)
            if time.monotonic() > deadline:
                raise RuntimeError("the warm server did not start")
            time.sleep(0.05)

    def _holder_alive(self) -> bool:
        pid = self._pid(self._socket().with_suffix(".lock"))
        return pid is not None and Path(f"/proc/{pid}").exists()

    @staticmethod
    def _pid(lock: Path) -> int | None:
        try:
            text = lock.read_text().strip()
        except OSError:
            return None
        return int(text) if text.isdigit() else None

    def stop_all(self) -> None:
        """End every warm server of this runtime directory and forget its files."""
        for lock in (self.root / "graymatter").glob("mcp-*.lock"):
            pid = self._pid(lock)
            if pid is not None:
                try:
                    os.kill(pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + 10
        while any(self._pid(x) and Path(f"/proc/{self._pid(x)}").exists() for x in self._locks()):
            if time.monotonic() > deadline:
                break
            time.sleep(0.05)
        shutil.rmtree(self.root / "graymatter", ignore_errors=True)

    def _locks(self) -> list[Path]:
        return list((self.root / "graymatter").glob("mcp-*.lock"))

    def plant_stale_socket(self) -> None:
        """The socket file a killed warm server leaves behind: present, nobody listening."""
        path = self._socket()
        path.parent.mkdir(mode=0o700, exist_ok=True)
        stale = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        stale.bind(str(path))
        stale.close()


Contender = tuple[str, Callable[[], tuple[float, float]]]


def _contenders(store: Path, runtime: WarmRuntime, reference: Path | None, tmp: Path) -> list[Contender]:
    console = Path(sys.executable).with_name("graymatter")
    command = [str(console), "--no-daemon", "--dir", str(store), "mcp", "serve"]

    def warm() -> tuple[float, float]:
        runtime.ensure_running()
        return _handshake(command, store, **runtime.env)

    def absent() -> tuple[float, float]:
        runtime.stop_all()
        try:
            return _handshake(command, store, **runtime.env)
        finally:
            runtime.stop_all()  # the warm server this start launched

    def crashed() -> tuple[float, float]:
        runtime.stop_all()
        runtime.plant_stale_socket()
        try:
            return _handshake(command, store, **runtime.env)
        finally:
            runtime.stop_all()

    contenders: list[Contender] = [
        ("python -c pass", lambda: _process_ready("pass")),
        ('python -c "import mcp.types"', lambda: _process_ready("import mcp.types")),
        ("graymatter mcp serve, warm server running", warm),
        ("graymatter mcp serve, warm server absent (first start)", absent),
        ("graymatter mcp serve, warm server crashed (stale socket)", crashed),
        (
            "graymatter mcp serve, GRAYMATTER_MCP_WARM=0",
            lambda: _handshake(command, store, GRAYMATTER_MCP_WARM="0"),
        ),
    ]
    if reference is not None:
        node = ["node", str(reference)]
        memory_file = str(tmp / "reference-memory.jsonl")
        contenders.append(
            (f"Node reference server ({REFERENCE_PACKAGE} {REFERENCE_VERSION})",
             lambda: _handshake(node, store, MEMORY_FILE_PATH=memory_file))
        )  # fmt: skip
    return contenders


def _rounds(contenders: list[Contender], rounds: int) -> dict[str, list[tuple[float, float]]]:
    """``rounds`` interleaved rounds, each starting every contender once, in rotating order."""
    timings: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in contenders}
    for i in range(rounds):
        order = contenders[i % len(contenders) :] + contenders[: i % len(contenders)]
        for name, run in order:
            timings[name].append(run())
    return timings


@contextmanager
def _busy_cores(count: int) -> Iterator[None]:
    """``count`` processes spinning on the CPU for the duration."""
    spinners = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], stdout=subprocess.DEVNULL)
        for _ in range(count)
    ]
    try:
        time.sleep(1.0)
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


def _median_ms(values: list[float]) -> float:
    return round(statistics.median(values) * 1000, 1)


def _table(
    title: str, timings: dict[str, list[tuple[float, float]]]
) -> tuple[dict[str, Any], dict[str, Any]]:
    rows, figures = [], {}
    for name, runs in timings.items():
        init, listed = _median_ms([r[0] for r in runs]), _median_ms([r[1] for r in runs])
        rows.append([name, init, listed, len(runs)])
        figures[name] = {
            "initialize_ms": init,
            "tools_list_ms": listed,
            "runs_ms": [round(r[1] * 1000, 1) for r in runs],
        }
    return print_table(
        title, ["process", "initialize median ms", "tools/list median ms", "runs"], rows
    ), figures


def run(quick: bool) -> dict[str, Any]:
    """Run the start-up benchmark, quiet and under load, and print its tables."""
    rounds = 3 if quick else 10
    reference = _reference_server()
    runtime = WarmRuntime()
    results: dict[str, Any] = {"rounds": rounds, "reference_server": reference is not None, "tables": []}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            store = Path(tmp) / "store"
            contenders = _contenders(store, runtime, reference, Path(tmp))
            _rounds(contenders, 1)  # warm the page cache and the store
            for phase, spinners in (("quiet", 0), ("two busy processes", 2)):
                with _busy_cores(spinners) if spinners else _nothing():
                    before = os.getloadavg()[0]
                    timings = _rounds(contenders, rounds)
                    after = os.getloadavg()[0]
                title = (
                    f"MCP server start-up, {phase}: median of {rounds} interleaved runs "
                    f"(load average {before:.2f} -> {after:.2f})"
                )
                table, figures = _table(title, timings)
                results["tables"].append(table)
                results[phase] = {"load_average": [before, after], "figures": figures}
    finally:
        runtime.stop_all()
        shutil.rmtree(runtime.root, ignore_errors=True)
    return results


@contextmanager
def _nothing() -> Iterator[None]:
    yield
