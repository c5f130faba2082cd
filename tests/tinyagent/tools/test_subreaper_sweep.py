"""The cheap sweep: as a child subreaper, tinyagent finds what a command left behind in its own process tree.

Orphans of a command (``setsid … &``, a double-forked daemon) are re-parented to tinyagent, so the sweep
walks tinyagent's descendants instead of every process on the machine; it ends the marked ones, reaps
them (no zombie stays behind), and leaves tinyagent's other children (an MCP server, say) alone.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tinyagent.tools.sweeper import become_subreaper, sweep_tree
from tinyagent.tools.toolbox import Toolbox
from tinyagent.types import ToolCall

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl and /proc are Linux")

DAEMON = "(setsid sh -c 'echo $$ > {pidfile}; exec sleep 300' < /dev/null > /dev/null 2>&1 &) ;"


def _wait_for(pidfile: Path) -> int:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if pidfile.exists() and pidfile.read_text().strip():
            return int(pidfile.read_text())
        time.sleep(0.01)
    raise AssertionError("the daemon never wrote its pid")


def _state(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return None


def test_a_double_forked_daemon_is_adopted_killed_and_reaped(tmp_path: Path) -> None:
    box = Toolbox(tmp_path, timeout=20)
    pidfile = tmp_path / "daemon.pid"
    command = DAEMON.format(pidfile=pidfile) + f" while [ ! -s {pidfile} ]; do sleep 0.01; done"
    result = box.run(ToolCall(id="c", name="bash", arguments=json.dumps({"command": command})))
    assert result.content.startswith("exit code: 0")
    pid = _wait_for(pidfile)
    assert _state(pid) is None, "the daemon survived its command, or stayed a zombie of tinyagent"


def test_the_tree_sweep_leaves_unmarked_children_alone() -> None:
    assert become_subreaper()
    bystander = subprocess.Popen(["sleep", "300"], env={k: v for k, v in os.environ.items()})
    try:
        assert sweep_tree("no-such-command:1") == 0
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()


def test_a_marked_child_is_found_in_the_tree_and_reaped() -> None:
    assert become_subreaper()
    marked = subprocess.Popen(["sleep", "300"], env={**os.environ, "TINYAGENT_COMMAND": "m:7"})
    assert sweep_tree("m:7") == 1
    assert _state(marked.pid) is None  # killed and already reaped: not even a zombie
    marked.wait()  # Popen learns the child is gone (ECHILD is reported as exit status 0)


def test_a_skipped_child_and_its_tree_are_never_read_or_killed() -> None:
    assert become_subreaper()
    env = {**os.environ, "TINYAGENT_COMMAND": "m:8"}
    helper = subprocess.Popen(["bash", "-c", "sleep 300 & wait"], env=env)  # marked, with a marked child
    try:
        deadline = time.monotonic() + 10
        while not _descendants_of(helper.pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert sweep_tree("m:8", skip=frozenset({helper.pid})) == 0
        child = int(_descendants_of(helper.pid)[0])
        assert helper.poll() is None and _state(child) is not None
        assert sweep_tree("m:8") >= 2  # without the skip, both are found (a dying one may be seen twice)
        helper.wait(timeout=10)
        deadline = time.monotonic() + 10
        while _state(child) not in (None, "Z") and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _state(child) in (None, "Z")  # killed; an orphan zombie of this (subreaper) process
        if _state(child) == "Z":
            os.waitpid(child, 0)  # reparented to this process: reap it, as tinyagent's next sweep would
    finally:
        helper.kill()
        helper.wait()


def _descendants_of(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children", "rb") as handle:
            return handle.read().split()
    except OSError:
        return []
