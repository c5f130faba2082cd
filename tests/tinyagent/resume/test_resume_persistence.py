"""`tinyagent --resume` persistence through the real CLI process: save-fault injection, privacy,
source preservation, interruption and re-resume."""

from __future__ import annotations

import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

from support.resume_checkpoints import API_KEY, bash_call, executed_markers, submit_call
from support.resume_workspace import Workspace, load, usage
from tinyagent.prompts import CONTINUATION_NOTICE

# ------------------------------------------------------------------------------------------------
# Persistence: fault injection, privacy, source preservation


def test_initial_save_failure_stops_before_any_request(ws: Workspace, checkpoint: Path) -> None:
    source_bytes = checkpoint.read_bytes()
    ws.stub.add({"tool_calls": [bash_call("never")], "usage": usage()})
    result = ws.resume(
        checkpoint, "continued.json", "--step-limit", "5", env={**ws.env, "TINYAGENT_TEST_FAIL_SAVE": "1"}
    )
    assert result.returncode == 1
    assert ws.stub.requests == []
    assert "could not save" in result.stderr
    assert not (ws.root / "continued.json").exists()
    assert checkpoint.read_bytes() == source_bytes
    assert executed_markers(ws.project) == ["fresh-1", "fresh-2", "fresh-3"]


def test_turn_save_failure_stops_further_work_and_keeps_the_last_valid_file(
    ws: Workspace, checkpoint: Path
) -> None:
    source_bytes = checkpoint.read_bytes()
    ws.stub.add(
        {"tool_calls": [bash_call("turn-1")], "usage": usage()},
        {"tool_calls": [bash_call("turn-2")], "usage": usage()},
    )
    result = ws.resume(
        checkpoint, "continued.json", "--step-limit", "9", env={**ws.env, "TINYAGENT_TEST_FAIL_SAVE": "2"}
    )
    assert result.returncode == 1
    assert len(ws.stub.requests) == 1  # no request after the failed save
    # the failed save is the one before the reply's tools run: not even turn-1 runs
    assert executed_markers(ws.project) == ["fresh-1", "fresh-2", "fresh-3"]
    assert checkpoint.read_bytes() == source_bytes
    last_valid = load(ws.root / "continued.json")  # the initial state written before the first request
    assert last_valid["exit_status"] == "Running"
    assert last_valid["messages"][-1]["content"] == CONTINUATION_NOTICE
    # ... and it is itself resumable
    ws.stub.add({"tool_calls": [submit_call()], "usage": usage()})
    again = ws.resume(ws.root / "continued.json", "recovered.json", "--step-limit", "9")
    assert again.returncode == 0, again.stderr
    assert "previous status Running" in again.stderr


def test_output_is_private_and_holds_no_credentials(ws: Workspace, checkpoint: Path) -> None:
    ws.stub.add({"tool_calls": [submit_call()], "usage": usage()})
    result = ws.resume(checkpoint, "continued.json", "--step-limit", "5")
    assert result.returncode == 0, result.stderr
    out = ws.root / "continued.json"
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    text = out.read_text()
    assert API_KEY not in text and ws.stub.url not in text
    assert str(ws.root / "home") not in text
    assert not [p.name for p in ws.root.iterdir() if p.name.endswith(".tmp")]


def test_interrupted_resume_can_itself_be_resumed(ws: Workspace, checkpoint: Path) -> None:
    # one completed turn, then a reply slow enough to interrupt while the request is in flight
    ws.stub.add({"tool_calls": [bash_call("r1")], "usage": usage()}, {"delay": 3, "text": "late"})
    cmd = [
        sys.executable, "-m", "tinyagent", "--resume", str(checkpoint), "--cwd", str(ws.project),
        "--base-url", ws.stub.base_url("openai"), "--no-stream", "-o", "first.json", "--step-limit", "9",
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, cwd=ws.root, env=ws.env, stderr=subprocess.PIPE, text=True)
    for _ in range(2000):  # bounded wait until the slow request reached the stub
        if len(ws.stub.requests) >= 2 or proc.poll() is not None:
            break
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 1, stderr
    interrupted = load(ws.root / "first.json")
    assert interrupted["exit_status"] == "Interrupted"
    assert interrupted["totals"]["steps"] == 4

    ws.stub.add({"tool_calls": [submit_call()], "usage": usage()})
    ws.stub.requests.clear()
    result = ws.resume(ws.root / "first.json", "second.json", "--step-limit", "9")
    assert result.returncode == 0, result.stderr
    final = load(ws.root / "second.json")
    assert [p["previous_status"] for p in final["resumed_from"]] == ["StepLimit", "Interrupted"]
    assert executed_markers(ws.project) == ["fresh-1", "fresh-2", "fresh-3", "r1"]
    notices = [m for m in ws.stub.requests[0].body["messages"] if m.get("content") == CONTINUATION_NOTICE]
    assert len(notices) == 2  # one per resume boundary


def test_a_failed_background_sync_whose_full_save_fails_too_runs_nothing(
    ws: Workspace, checkpoint: Path
) -> None:
    from tinyagent.trajectory.files import SYNC_FAULT_ENV

    source_bytes = checkpoint.read_bytes()
    ws.stub.add({"tool_calls": [bash_call("turn-1")], "usage": usage()})
    # save 1: the initial state; 2: the reply's journal record, whose background sync (the 1st) fails;
    # 3: the full save that stands in for it fails too: the command behind the gate must never run
    env = {**ws.env, SYNC_FAULT_ENV: "1", "TINYAGENT_TEST_FAIL_SAVE": "3"}
    result = ws.resume(checkpoint, "continued.json", "--step-limit", "9", env=env)
    assert result.returncode == 1
    assert "the pending journal failed (injected sync failure" in result.stderr
    assert len(ws.stub.requests) == 1
    assert executed_markers(ws.project) == ["fresh-1", "fresh-2", "fresh-3"]  # turn-1 never ran
    assert checkpoint.read_bytes() == source_bytes
