"""A command's whole process tree ends with the command, at its timeout and when tinyagent is killed
(issue 16, defect 8) - also the processes that left its group and session with ``setsid ... &``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tinyagent.tools.toolbox import Toolbox
from tinyagent.types import ToolCall

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc"), reason="the sweep reads /proc (Linux)")

ESCAPE = "setsid sh -c 'echo $$ > {pidfile}; exec sleep 300' > /dev/null 2>&1 < /dev/null &"


def _bash(box: Toolbox, command: str) -> str:
    return box.run(ToolCall(id="c", name="bash", arguments=json.dumps({"command": command}))).content


def _running(pid: int) -> bool:
    """Alive and not a zombie (a killed orphan may wait for a reaper that never comes)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


def _pid_in(pidfile: Path, wait_s: float = 30) -> int:
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if pidfile.exists() and pidfile.read_text().strip():
            return int(pidfile.read_text())
        time.sleep(0.02)
    raise AssertionError(f"{pidfile} never written")


def _gone(pid: int, wait_s: float = 10) -> bool:
    deadline = time.monotonic() + wait_s
    while _running(pid):
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)  # never leave the sleeper behind, even when the test fails
            return False
        time.sleep(0.02)
    return True


def test_a_setsid_background_process_ends_with_its_command(tmp_path: Path) -> None:
    box = Toolbox(tmp_path, timeout=20)
    pidfile = tmp_path / "escaped.pid"
    out = _bash(box, ESCAPE.format(pidfile=pidfile) + f" while [ ! -s {pidfile} ]; do sleep 0.01; done")
    assert out.startswith("exit code: 0")
    assert _gone(_pid_in(pidfile))


def test_a_setsid_process_ends_at_the_command_timeout(tmp_path: Path) -> None:
    box = Toolbox(tmp_path, timeout=1)
    pidfile = tmp_path / "escaped.pid"
    out = _bash(box, ESCAPE.format(pidfile=pidfile) + " sleep 100")
    assert "timed out" in out
    assert _gone(_pid_in(pidfile))


def test_commands_of_a_sigkilled_tinyagent_are_ended_by_its_watchdog(tmp_path: Path) -> None:
    pidfile = tmp_path / "foreground.pid"
    escaped = tmp_path / "escaped.pid"
    command = ESCAPE.format(pidfile=escaped) + f" sh -c 'echo $$ > {pidfile}; exec sleep 300'"
    host = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import json, sys\n"
            "from tinyagent.tools.toolbox import Toolbox\n"
            "from tinyagent.types import ToolCall\n"
            "box = Toolbox(sys.argv[1], timeout=600)\n"
            "box.run(ToolCall(id='c', name='bash', arguments=json.dumps({'command': sys.argv[2]})))\n",
            str(tmp_path),
            command,
        ]
    )
    try:
        foreground, background = _pid_in(pidfile), _pid_in(escaped)
        host.send_signal(signal.SIGKILL)  # no handler, no finally: only the watchdog can clean up
        host.wait(30)
        assert _gone(foreground)
        assert _gone(background)
    finally:
        if host.poll() is None:
            host.kill()
