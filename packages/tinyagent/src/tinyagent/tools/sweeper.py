"""Ending a command's escaped processes: SIGKILL every process whose environment carries its mark.

Standard library only, and runnable as a script (``python -I sweeper.py MARK``): the watchdog that
sweeps a toolbox's commands after tinyagent itself has ended runs this file without importing tinyagent.
"""

from __future__ import annotations

import os
import signal
import sys
import time

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


PR_SET_CHILD_SUBREAPER = 36
"""prctl option: orphaned descendants are re-parented to this process instead of init (Linux >= 3.4)."""


def become_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants; True when it now is (Linux only).

    Then every process a command leaves behind (``setsid cmd &``, a double-forked daemon) stays in this
    process's tree, so :func:`sweep_tree` can find it by walking that tree instead of all of ``/proc``.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return (
            bool(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
            and _children_of(os.getpid()) is not None
        )
    except (OSError, AttributeError):
        return False


def sweep_tree(mark: str, *, skip: frozenset[int] = frozenset()) -> int:
    """SIGKILL every descendant of this process carrying ``mark``, and reap the killed direct children.

    Only valid in a subreaper (:func:`become_subreaper`): then nothing a command started can leave this
    process's tree. The cost is one ``/proc`` read per descendant, not per process on the machine.
    ``skip``: children of this process that run no command (the watchdog), neither read nor descended.
    """
    needle = f"{COMMAND_MARK}={mark}".encode()
    found = 0
    for _ in range(8):
        descendants = _descendants(skip)
        killed = [(pid, parent) for pid, parent in descendants if _carries(str(pid), needle, False)]
        for pid, parent in killed:
            if _kill(pid) and parent == os.getpid():
                _reap(pid)
        found += len(killed)
        if not killed:
            break
    return found


def _descendants(skip: frozenset[int] = frozenset()) -> list[tuple[int, int]]:
    """(pid, parent pid) of every descendant of this process, from ``/proc/<pid>/task/*/children``,
    leaving out the ``skip`` pids and their trees."""
    found: list[tuple[int, int]] = []
    stack = [os.getpid()]
    seen = set(stack) | skip
    while stack:
        parent = stack.pop()
        for child in _children_of(parent) or ():
            if child not in seen:
                seen.add(child)
                found.append((child, parent))
                stack.append(child)
    return found


def _children_of(pid: int) -> list[int] | None:
    """The children of ``pid`` (all its threads'); None when the kernel has no ``children`` files."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    children: list[int] = []
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children", "rb") as handle:
                children.extend(int(word) for word in handle.read().split())
        except FileNotFoundError:
            if pid == os.getpid():
                return None  # CONFIG_PROC_CHILDREN is off: the tree cannot be walked
        except OSError:
            continue
    return children


def _reap(pid: int) -> None:
    """Collect a SIGKILLed adopted child so it does not stay a zombie (bounded: at most ~0.2 s)."""
    for _ in range(200):
        try:
            done, _status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return
        if done:
            return
        time.sleep(0.001)


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
