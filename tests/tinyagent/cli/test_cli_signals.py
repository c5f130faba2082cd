"""The real `tinyagent` CLI process under signals: SIGINT/SIGTERM during a tool or a model request,
and SIGKILL mid-batch, each leaving a valid trajectory (and no process left behind)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from support.env import hermetic_env
from support.tinyagent_cli import call, reply, scripted_argv, start_cli, write_script
from tinyagent.resume.journal import load_with_journal
from tinyagent.trajectory.files import load_trajectory

SUBMIT = reply(call("submit", answer="all done"))
BUSY = reply(call("bash", command="true"), cost_usd=0.4)


def _wait_for_line(proc: subprocess.Popen, needle: str, timeout: float = 30) -> list[str]:
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        seen.append(line)
        if needle in line:
            return seen
    raise AssertionError(f"never saw {needle!r}; got {seen!r}")


def _pid_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_during_a_tool_kills_it_and_saves_interrupted(tmp_path: Path, work: Path, signum: int) -> None:
    script = write_script(
        tmp_path / "s.json",
        [
            reply(
                call("bash", "long", command="echo $$ > pid.txt; exec sleep 60"),
                call("bash", "next", command="true"),
            )
        ],
    )
    out = tmp_path / "run.json"
    proc = start_cli(scripted_argv(script, work, out), cwd=tmp_path, env=hermetic_env(tmp_path))
    try:
        _wait_for_line(proc, "step 1: bash: echo $$ > pid.txt")
        deadline = time.monotonic() + 10
        while not (work / "pid.txt").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        sleeper = int((work / "pid.txt").read_text())
        proc.send_signal(signum)
        stdout, stderr = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 1
    assert stdout == ""
    assert "finished: status Interrupted" in stderr
    trajectory = load_trajectory(out)
    assert trajectory.exit_status.value == "Interrupted"
    assert trajectory.exit_detail == f"interrupted by {signal.Signals(signum).name}"
    results = [m for m in trajectory.messages if m.role == "tool"]
    assert [m.tool_call_id for m in results] == ["long", "next"]
    assert results[0].content.startswith("error: command interrupted; process group killed")
    assert results[1].content == "error: not executed: the run was interrupted"
    assert not _pid_alive(sleeper)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_during_a_model_request_stops_cleanly(tmp_path: Path, work: Path, signum: int) -> None:
    record = tmp_path / "requests.jsonl"
    script = write_script(tmp_path / "s.json", [BUSY, {"sleep": 60, **SUBMIT}], record=str(record))
    out = tmp_path / "run.json"
    proc = start_cli(scripted_argv(script, work, out), cwd=tmp_path, env=hermetic_env(tmp_path))
    try:
        _wait_for_line(proc, "step 2/100: querying the model")
        deadline = time.monotonic() + 10  # wait until the second request is in flight
        while time.monotonic() < deadline and (
            not record.exists() or len(record.read_text().splitlines()) < 2
        ):
            time.sleep(0.02)
        proc.send_signal(signum)
        _stdout, stderr = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 1
    assert "Traceback" not in stderr
    trajectory = load_trajectory(out)
    assert trajectory.exit_status.value == "Interrupted"
    assert trajectory.totals.steps == 2
    assert [m.role for m in trajectory.messages] == ["system", "user", "assistant", "tool"]


def test_sigkill_during_a_tool_batch_leaves_the_reply_saved_as_pending(tmp_path: Path, work: Path) -> None:
    script = write_script(
        tmp_path / "s.json",
        [
            reply(call("write_file", "first", path="a.txt", content="1")),
            reply(call("bash", "slow", command="echo $$ > pid.txt; exec sleep 60")),
        ],
    )
    out = tmp_path / "run.json"
    proc = start_cli(scripted_argv(script, work, out), cwd=tmp_path, env=hermetic_env(tmp_path))
    sleeper = None
    try:
        deadline = time.monotonic() + 20
        while not (work / "pid.txt").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        sleeper = int((work / "pid.txt").read_text())
        proc.kill()
        proc.communicate(timeout=30)
    finally:
        proc.kill()
        if sleeper is not None:
            os.killpg(sleeper, signal.SIGKILL)  # a hard kill leaves the command's own group behind
    trajectory = load_with_journal(out)  # the reply went to the pending journal before the tool ran
    assert trajectory.exit_status.value == "Running"
    assert trajectory.totals.steps == 2
    assert [m.role for m in trajectory.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert trajectory.messages[3].tool_call_id == "first"
    assert [c.id for c in trajectory.messages[-1].tool_calls] == ["slow"]  # saved before it ran
    assert trajectory.resume is not None and trajectory.resume.tool_batch_pending
