"""Shared helpers for tests of the warm MCP server: a private runtime directory, its lock pids, probes."""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path

from benchmarks.warm_server import alive, connects


def private_runtime(prefix: str) -> Iterator[Path]:
    """A private, short XDG_RUNTIME_DIR (socket paths are short); the warm servers that listened in it
    are ended afterwards. Use as the body of a fixture: ``yield from private_runtime("gmw-")``."""
    directory = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    yield directory
    for lock in (directory / "graymatter").glob("mcp-*.lock"):
        pid = lock_pid(lock)
        if pid is not None and alive(pid):
            os.kill(pid, signal.SIGTERM)
    shutil.rmtree(directory, ignore_errors=True)


def lock_pid(lock: Path) -> int | None:
    """The pid a warm server wrote into its lock file, or None."""
    text = lock.read_text().strip()
    return int(text) if text.isdigit() else None


def warm_socket(runtime: Path) -> Path:
    """The warm server's socket for the code as it is now, under the runtime directory ``runtime``."""
    from benchmarks.warm_server import WarmServer

    return WarmServer(runtime, {}).socket_path()


def warm_server_pid(runtime: Path, env: dict[str, str]) -> int:
    """A warm server listening for the code as it is now; its pid (launched here if none is up).

    The key follows every source file, so while files change (a shared working tree) a warm server may
    retire and another one start: this waits for one that listens under the key of the code as it is now.
    """
    from benchmarks.warm_server import WarmServer

    server = WarmServer(runtime, env)
    server.ensure()
    pid = server.pid()
    assert pid is not None
    return pid


__all__ = ["alive", "connects", "lock_pid", "private_runtime", "warm_server_pid", "warm_socket"]
