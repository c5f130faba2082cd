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
