"""A bash command's process: its environment, reading its output until it exits, ending all of it.

Every command's environment carries ``TINYAGENT_COMMAND=<toolbox mark>:<n>``. Killing the process group
ends what stays in the group; :func:`sweep` then ends every process that still carries the mark, which
reaches what left the group and the session (``setsid cmd &``, daemons). A per-toolbox watchdog process
(:func:`start_watchdog`) sweeps the whole toolbox's mark when tinyagent itself dies, even by SIGKILL.
On Linux the toolbox makes tinyagent a child subreaper, so orphans stay in its tree and the per-command
sweep walks only that tree (``sweeper.sweep_tree``: microseconds, not a scan of every process).
Limit: a process that both leaves the session and drops the variable from its environment (``env -i``)
is not found; on Linux the sweep reads ``/proc/<pid>/environ``, elsewhere only the group is killed.
"""

from __future__ import annotations

import math
import os
import select
import signal
import subprocess
import sys
import time
from typing import Any

from tinyagent.tools import sweeper
from tinyagent.tools.capping import CappedOutput
from tinyagent.tools.sweeper import COMMAND_MARK, sweep

__all__ = [
    "COMMAND_MARK",
    "EXTRA_ENV",
    "LINGER_GRACE_S",
    "SCRUBBED_ENV",
    "collect",
    "command_environment",
    "kill_group",
    "marked_environment",
    "start_watchdog",
    "sweep",
]

SCRUBBED_ENV = (
    "OPENAI_API_KEY",
    "OPENROUTER_API_KEY",
    "ANTHROPIC_API_KEY",
    "CODEX_API_KEY",
    "OLLAMA_API_KEY",
)
EXTRA_ENV = {
    "PAGER": "cat",
    "MANPAGER": "cat",
    "GIT_PAGER": "cat",
    "PIP_PROGRESS_BAR": "off",
    "TQDM_DISABLE": "1",
}
LINGER_GRACE_S = 2.0  # how long output may stay open after the command exited (background children)

_SCRUBBED_ENV_B = frozenset(os.fsencode(name) for name in SCRUBBED_ENV)
_EXTRA_ENV_B = {os.fsencode(k): os.fsencode(v) for k, v in EXTRA_ENV.items()}


def command_environment() -> dict[Any, Any]:
    """This process's environment minus provider credentials, plus EXTRA_ENV, read now.

    Taken as bytes where the platform keeps them (no decode here, no re-encode in Popen).
    """
    if os.supports_bytes_environ:
        env: dict[Any, Any] = {k: v for k, v in os.environb.items() if k not in _SCRUBBED_ENV_B}
        env.update(_EXTRA_ENV_B)
        return env
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED_ENV}
    env.update(EXTRA_ENV)
    return env


def marked_environment(mark: str) -> dict[Any, Any]:
    """:func:`command_environment` with ``TINYAGENT_COMMAND=mark`` (how :func:`sweep` finds the command)."""
    env = command_environment()
    if os.supports_bytes_environ:
        env[os.fsencode(COMMAND_MARK)] = os.fsencode(mark)
    else:
        env[COMMAND_MARK] = mark
    return env


def start_watchdog(mark: str) -> subprocess.Popen[bytes] | None:
    """A process that outlives tinyagent just long enough to sweep ``mark:*`` when tinyagent ends.

    It waits for end of file on a pipe only tinyagent holds, so it wakes on any ending, SIGKILL included.
    """
    if not os.path.isdir("/proc"):
        return None
    env = {k: v for k, v in os.environ.items() if k != COMMAND_MARK}
    try:
        return subprocess.Popen(
            [sys.executable, "-I", sweeper.__file__, f"{mark}:"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
            close_fds=True,
        )
    except OSError:
        return None


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the process group of `proc` (started with start_new_session); gone already is fine."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def collect(proc: subprocess.Popen[bytes], output: CappedOutput, timeout: float) -> tuple[bool, bool]:
    """Read `proc`'s output and wait for it to exit, in this thread; returns (timed_out, lingering).

    One poll loop watches the output pipe and (on Linux) a pidfd, so there is no reader thread and
    no polling delay. The command must exit within `timeout` seconds (<= 0: no limit), else its
    process group is killed. Output still held open LINGER_GRACE_S after the exit (background
    children) gets the group killed too (`lingering`), and at most one more grace period to end.
    """
    watch = _Watch(proc, output, timeout)
    try:
        while not (watch.eof and watch.exited):
            now = time.monotonic()
            if not watch.exited:
                if watch.deadline is not None and now >= watch.deadline:
                    watch.timed_out = True
                    kill_group(proc)
                    proc.wait()
                    watch.exited = True
                    continue
                wait_until = watch.deadline
            else:
                grace = watch.grace_after_exit(now)
                if grace is None:
                    break
                wait_until = grace
            watch.poll(now, wait_until)
    finally:
        if watch.pidfd is not None:
            os.close(watch.pidfd)
    return watch.timed_out, watch.lingering


class _Watch:
    """The state of one `collect` loop: the poller over the output pipe and the pidfd."""

    def __init__(self, proc: subprocess.Popen[bytes], output: CappedOutput, timeout: float) -> None:
        assert proc.stdout is not None
        self.proc = proc
        self.output = output
        self.fd = proc.stdout.fileno()
        self.poller = select.poll()
        self.poller.register(self.fd, select.POLLIN)
        try:
            self.pidfd: int | None = os.pidfd_open(proc.pid)
        except (AttributeError, OSError):
            self.pidfd = None
        if self.pidfd is not None:
            self.poller.register(self.pidfd, select.POLLIN)
        self.deadline = time.monotonic() + timeout if timeout > 0 else None
        self.grace: float | None = None
        self.timed_out = self.lingering = self.eof = self.exited = False

    def grace_after_exit(self, now: float) -> float | None:
        """Until when to wait for the output to close after the exit; None: stop waiting.

        When the first grace period runs out, background children still hold the pipe: their
        group is killed (`lingering`) and they get one more period.
        """
        if self.grace is None:
            self.grace = now + LINGER_GRACE_S
        if now >= self.grace:
            if self.lingering:
                return None
            self.lingering = True
            kill_group(self.proc)
            self.grace = now + LINGER_GRACE_S
        return self.grace

    def poll(self, now: float, wait_until: float | None) -> None:
        """Wait until output, the exit or `wait_until` (None: no limit), and take what arrived."""
        wait_ms = -1 if wait_until is None else max(1, math.ceil((wait_until - now) * 1000))
        if self.pidfd is None and not self.exited:
            wait_ms = 50 if wait_ms < 0 else min(wait_ms, 50)  # no pidfd: check the exit now and then
        for ready, _event in self.poller.poll(wait_ms):
            if ready == self.fd:
                self._read()
            elif ready == self.pidfd and not self.exited:
                self.proc.wait()
                self.exited = True
                self.poller.unregister(ready)
        if self.pidfd is None and not self.exited and self.proc.poll() is not None:
            self.exited = True

    def _read(self) -> None:
        chunk = os.read(self.fd, 65536)
        if chunk:
            self.output.feed(chunk)
            return
        self.eof = True
        self.poller.unregister(self.fd)
        if not self.exited and self.proc.poll() is not None:  # usually gone already: skip a poll
            self.exited = True
            if self.pidfd is not None:
                self.poller.unregister(self.pidfd)
