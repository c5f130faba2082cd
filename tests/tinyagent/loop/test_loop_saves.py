"""The agent loop's saves with the scripted in-process model: save failures in fresh and resume mode,
checkpoints at query boundaries, continuing a trajectory, complete checkpoints and in-process SIGINT."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from support.loop_agent import NEVER_SUBMITS, assert_paired, make, saved
from support.tinyagent_cli import call, reply
from tinyagent.trajectory.atomic import SaveError
from tinyagent.trajectory.files import load_trajectory, save_trajectory
from tinyagent.trajectory.models import ExitStatus, Trajectory


def test_fresh_mode_save_failure_is_reported_and_the_run_continues(tmp_path: Path) -> None:
    calls = {"n": 0}

    def flaky(traj: Trajectory) -> None:
        calls["n"] += 1
        if calls["n"] == 2:
            raise SaveError("disk full")

    agent, traj, provider, stderr = make(
        tmp_path, [NEVER_SUBMITS, reply(call("submit", answer="ok"))], save=flaky
    )
    agent.run(traj)
    assert traj.exit_status is ExitStatus.SUBMITTED
    assert agent.save_failed
    assert len(provider.requests) == 2
    assert "error: could not save the trajectory: disk full" in stderr.getvalue()


@pytest.mark.parametrize(("failing_save", "expected_requests"), [(1, 0), (2, 1)])
def test_resume_mode_save_failure_stops_all_further_work(
    tmp_path: Path, failing_save: int, expected_requests: int
) -> None:
    out = tmp_path / "run.json"
    calls = {"n": 0}

    def failing(traj: Trajectory) -> None:
        calls["n"] += 1
        if calls["n"] >= failing_save:
            raise SaveError("injected")
        save_trajectory(traj, out)

    agent, traj, provider, _ = make(
        tmp_path,
        [reply(call("write_file", path="a", content="1")), reply(call("write_file", path="b", content="2"))],
        save=failing,
        stop_on_save_failure=True,
    )
    agent.run(traj)
    assert traj.exit_status is ExitStatus.SAVE_ERROR
    assert len(provider.requests) == expected_requests
    assert not (tmp_path / "work/b").exists()
    if failing_save == 2:  # the last valid checkpoint is the initial one, still readable
        on_disk = load_trajectory(out)
        assert on_disk.exit_status is ExitStatus.RUNNING
        assert len(on_disk.messages) == 2


def test_running_checkpoints_end_at_a_query_boundary(tmp_path: Path) -> None:
    snapshots: list[dict[str, Any]] = []
    agent, traj, _, _ = make(
        tmp_path,
        [
            reply(call("bash", command="true"), call("bash", command="true")),
            {"content": "thinking"},
            reply(call("submit", answer="ok")),
        ],
        save=lambda t: snapshots.append(json.loads(t.model_dump_json())),
    )
    agent.run(traj)
    running = [s for s in snapshots if s["exit_status"] == "Running"]
    # initial, the reply before its tool batch (pending), after the batch, after the nudge
    assert [s["resume"]["tool_batch_pending"] for s in running] == [False, True, False, False]
    for snap in running:
        last = snap["messages"][-1]
        if snap["resume"]["tool_batch_pending"]:
            assert last["role"] == "assistant" and len(last["tool_calls"]) == 2
            continue
        assert last["role"] in ("user", "tool")
        restored = Trajectory.model_validate(snap)
        assert_paired(restored)


def test_agent_continues_an_existing_trajectory_with_cumulative_totals(tmp_path: Path) -> None:
    first, traj, _, _ = make(tmp_path, [NEVER_SUBMITS] * 3, step_limit=2)
    first.run(traj)
    assert traj.exit_status is ExitStatus.STEP_LIMIT
    restored = load_trajectory(tmp_path / "run.json")
    restored.limits.step_limit = 4
    second, _, provider, _ = make(tmp_path, [NEVER_SUBMITS, reply(call("submit", answer="finally"))])
    second.run(restored)
    assert restored.exit_status is ExitStatus.SUBMITTED
    assert restored.totals.steps == 4
    assert restored.totals.input_tokens == 30
    assert len(provider.requests) == 2
    assert len(provider.requests[0]) == len(traj.messages)  # the whole restored history was sent


@pytest.mark.parametrize("resume_mode", [False, True], ids=["fresh-overlapped", "resume-synchronous"])
def test_a_checkpoint_is_complete_before_any_later_tool_or_save(tmp_path: Path, resume_mode: bool) -> None:
    import threading
    import time

    events: list[str] = []
    lock = threading.Lock()

    def slow_save(traj: Trajectory) -> None:
        with lock:
            events.append(f"save-start {len(traj.messages)}")
        time.sleep(0.05)
        with lock:
            events.append(f"save-end {len(traj.messages)}")

    agent, traj, provider, _ = make(
        tmp_path,
        [NEVER_SUBMITS, NEVER_SUBMITS, reply(call("submit", answer="ok"))],
        save=slow_save,
        stop_on_save_failure=resume_mode,
    )
    original_complete = provider.complete

    def recording_complete(*args, **kwargs):
        with lock:
            events.append("request")
        return original_complete(*args, **kwargs)

    provider.complete = recording_complete  # type: ignore[method-assign]
    original_run = agent.toolbox.run

    def recording_run(tool_call):
        with lock:
            events.append("tool")
        return original_run(tool_call)

    agent.toolbox.run = recording_run  # type: ignore[method-assign]
    agent.run(traj)
    assert traj.exit_status is ExitStatus.SUBMITTED
    open_saves = 0
    for event in events:
        if event.startswith("save-start"):
            assert open_saves == 0  # never two saves at once
            open_saves += 1
        elif event.startswith("save-end"):
            open_saves -= 1
        elif event == "tool":
            assert open_saves == 0  # no tool runs while a checkpoint is still being written
        elif event == "request" and resume_mode:
            assert open_saves == 0  # resume mode: saves are synchronous
    assert open_saves == 0
    # initial, 2 turns (each saved before its tools run and after them), final
    assert [e.split()[0] for e in events].count("save-start") == 6


def test_sigint_in_process_abandons_the_request_and_saves(tmp_path: Path) -> None:
    import os
    import signal
    import threading

    agent, traj, provider, _ = make(tmp_path, [NEVER_SUBMITS, {"sleep": 30, **NEVER_SUBMITS}])
    original = provider.complete
    fired: list[bool] = []

    def complete_then_signal(*args, **kwargs):
        if len(provider.requests) == 1:  # the second request: interrupt it while it sleeps
            timer = threading.Timer(0.2, lambda: (fired.append(True), os.kill(os.getpid(), signal.SIGINT)))
            timer.start()
        return original(*args, **kwargs)

    provider.complete = complete_then_signal  # type: ignore[method-assign]
    previous = signal.getsignal(signal.SIGINT)
    agent.run(traj)
    assert fired == [True]
    assert signal.getsignal(signal.SIGINT) is previous  # handlers restored
    assert traj.exit_status is ExitStatus.INTERRUPTED
    assert traj.exit_detail == "interrupted by SIGINT"
    assert traj.totals.steps == 2
    assert_paired(traj)
    assert saved(tmp_path) == traj
