"""Shared helpers for tests of the warm MCP server: a private runtime directory, its lock pids, probes."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path


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


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not count)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


def connects(path: Path) -> bool:
    """Whether something accepts connections on the warm server's socket at ``path``."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        probe.connect(str(path))
    except OSError:
        return False
    finally:
        probe.close()
    return True


def warm_socket(runtime: Path) -> Path:
    """The warm server's socket for the code as it is now, under the runtime directory ``runtime``."""
    from graymatter.faces.mcp_server.warm_paths import code_fingerprint, package_dir, socket_path

    path = socket_path(runtime / "graymatter", code_fingerprint(package_dir()))
    assert path is not None
    return path


def warm_server_pid(runtime: Path, env: dict[str, str], limit_s: float = 120.0) -> int:
    """A warm server listening for the code as it is now; its pid (launched here if none is up).

    The key follows every source file, so while files change (a shared working tree) a warm server may
    retire and another one start: wait for one that listens under the key of the code as it is now.
    """
    import subprocess
    import sys
    import time

    from graymatter.faces.mcp_server.warm_relay import WARM_SERVER_CODE

    deadline = time.monotonic() + limit_s
    launched: set[str] = set()
    while time.monotonic() < deadline:
        sock = warm_socket(runtime)
        lock = sock.with_suffix(".lock")
        pid = lock_pid(lock) if lock.exists() else None
        if pid is not None and alive(pid) and connects(sock):
            return pid
        if sock.name not in launched and (pid is None or not alive(pid)):
            subprocess.Popen([sys.executable, "-c", WARM_SERVER_CODE], env=env, start_new_session=True)
            launched.add(sock.name)
        time.sleep(0.05)
    raise AssertionError("no warm server came up")
