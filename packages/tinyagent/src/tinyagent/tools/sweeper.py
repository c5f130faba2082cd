"""Ending a command's escaped processes: SIGKILL every process whose environment carries its mark.

Standard library only, and runnable as a script (``python -I sweeper.py MARK``): the watchdog that
sweeps a toolbox's commands after tinyagent itself has ended runs this file without importing tinyagent.
"""

from __future__ import annotations

import os
import signal
import sys

COMMAND_MARK = "TINYAGENT_COMMAND"
"""The environment variable that marks every process of a command (``<toolbox mark>:<n>``)."""


def sweep(mark: str, *, prefix: bool = False) -> int:
    """SIGKILL every readable process carrying ``mark`` (``prefix``: any mark starting with it); how many.

    Scans repeat until one finds nobody, so a process forking during a scan is caught by the next.
    Without ``/proc`` (not Linux) nothing is found.
    """
    if not os.path.isdir("/proc"):
        return 0
    needle = f"{COMMAND_MARK}={mark}".encode()
    found = 0
    for _ in range(8):
        hits = sum(_kill(int(entry)) for entry in os.listdir("/proc") if _carries(entry, needle, prefix))
        found += hits
        if not hits:
            break
    return found


def _carries(entry: str, needle: bytes, prefix: bool) -> bool:
    if not entry.isdigit() or int(entry) == os.getpid():
        return False
    try:
        with open(f"/proc/{entry}/environ", "rb") as handle:
            items = handle.read().split(b"\0")
    except OSError:
        return False
    return any(item == needle or (prefix and item.startswith(needle)) for item in items)


def _kill(pid: int) -> int:
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        return 0
    return 1


def watch(mark: str) -> None:
    """Wait for end of file on stdin (a pipe only tinyagent holds), then sweep ``mark``'s commands."""
    sys.stdin.buffer.read()
    sweep(mark, prefix=True)


if __name__ == "__main__":
    watch(sys.argv[1])
