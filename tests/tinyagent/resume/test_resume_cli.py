"""`tinyagent --resume` through the real CLI process: continuation, accounting and ceilings, crash
boundaries and time limits (refusals: test_resume_refusals.py; persistence: test_resume_persistence.py).

Checkpoints are produced by real fresh runs (against the local OpenAI-compatible stub, or the
in-package scripted provider where a deterministic cost or a long sleep is needed)."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from support.resume_checkpoints import SECRET, bash_call, executed_markers, submit_call
from support.resume_workspace import MODEL, TASK, Workspace, load, rewrite, scripted, scripted_requests, usage
from tinyagent.prompts import CONTINUATION_NOTICE, PENDING_CALL_RESULT
from tinyagent.resume.journal import load_with_journal

# ------------------------------------------------------------------------------------------------
# Acceptance: continuation


def test_resume_sends_restored_context_plus_notice_and_never_replays_tools(
    ws: Workspace, checkpoint: Path
) -> None:
    source_bytes = checkpoint.read_bytes()
    before = load(checkpoint)
    ws.stub.add(
        {"tool_calls": [bash_call("resumed-1", "call_a")], "usage": usage(200)},
        {"tool_calls": [submit_call("finished it")], "usage": usage(300)},
    )
    result = ws.resume(checkpoint, "continued.json", "--step-limit", "4")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "finished it\n"
    assert checkpoint.read_bytes() == source_bytes
    # only the new call ran: no historical tool call was dispatched again
    assert executed_markers(ws.project) == ["fresh-1", "fresh-2", "fresh-3", "resumed-1"]

    first = ws.stub.requests[0].body
    assert first["model"] == MODEL
    sent = first["messages"]
    restored = before["messages"]
    assert len(sent) == len(restored) + 1
    assert sent[-1] == {"role": "user", "content": CONTINUATION_NOTICE}
    assert [m["role"] for m in sent[:-1]] == [m["role"] for m in restored]
    assert sent[0]["content"] == before["system_prompt"]
    tool_ids = [m["tool_call_id"] for m in sent if m["role"] == "tool"]
    assert tool_ids == ["call_a", "call_b", "call_a"]
    for wire, saved in zip(sent, restored, strict=False):
        if saved["role"] == "tool":
            assert wire["content"] == saved["content"]

    after = load(ws.root / "continued.json")
    assert after["exit_status"] == "Submitted"
    assert after["submission"] == "finished it"
    assert after["totals"]["steps"] == before["totals"]["steps"] + 2
    assert after["totals"]["input_tokens"] == before["totals"]["input_tokens"] + 500
    assert after["totals"]["cache_read_tokens"] == before["totals"]["cache_read_tokens"] + 10
    assert after["totals"]["cost_usd"] > before["totals"]["cost_usd"]
    assert after["messages"][: len(restored)] == restored
    assert after["messages"][len(restored)] == {
        **after["messages"][len(restored)],
        "content": CONTINUATION_NOTICE,
    }
    [provenance] = after["resumed_from"]
    assert provenance["source_path"] == str(checkpoint.resolve())
    assert provenance["source_sha256"] == hashlib.sha256(source_bytes).hexdigest()
    assert provenance["previous_status"] == "StepLimit"
    assert provenance["previous_detail"] == before["exit_detail"] and "step limit" in before["exit_detail"]
    assert provenance["boundary_messages"] == len(restored)
    assert provenance["boundary_steps"] == before["totals"]["steps"]
    assert after["limits"]["step_limit"] == 4
    journal = {"name": "continued.json.pending", "run": after["resume"]["journal"]["run"]}
    assert after["resume"] == {**before["resume"], "journal": journal}  # its own journal, not the source's
    assert journal["run"] != before["resume"]["journal"]["run"]

    # stderr: boundary and previous status, stale-workspace warning, summary with cumulative totals
    assert "previous status StepLimit" in result.stderr
    assert f"{len(restored)} messages and 2 steps restored" in result.stderr
    assert "workspace may have changed" in result.stderr and "not recorded" in result.stderr
    assert "steps 4," in result.stderr
    # nothing from the restored transcript is echoed (new steps show their own progress as usual)
    assert SECRET not in result.stderr.split("step 3/4")[0]
    assert "fresh-1" not in result.stderr and TASK not in result.stderr


def test_step_20_checkpoint_resumed_with_ceiling_40(ws: Workspace) -> None:
    replies = [{"tool_calls": [bash_call(f"f{i}", "call_x")], "usage": usage()} for i in range(20)]
    source = ws.fresh(replies, "run.json", "--step-limit", "20")
    assert load(source)["totals"]["steps"] == 20
    ws.stub.requests.clear()
    ws.stub.add({"tool_calls": [submit_call()], "usage": usage()})
    result = ws.resume(source, "continued.json", "--step-limit", "40")
    assert result.returncode == 0, result.stderr
    assert len(ws.stub.requests) == 1
    body = ws.stub.requests[0].body
    assert sum(1 for m in body["messages"] if m["role"] == "tool") == 20
    assert body["messages"][-1]["content"] == CONTINUATION_NOTICE
    assert executed_markers(ws.project) == [f"f{i}" for i in range(20)]
    assert load(ws.root / "continued.json")["totals"]["steps"] == 21


def test_exhausted_step_ceiling_makes_zero_requests(ws: Workspace, checkpoint: Path) -> None:
    result = ws.resume(checkpoint, "same-limit.json", "--step-limit", "2")
    assert result.returncode == 1, result.stderr
    assert ws.stub.requests == []
    saved = load(ws.root / "same-limit.json")
    assert saved["exit_status"] == "StepLimit"
    assert saved["totals"] == load(checkpoint)["totals"]
    assert saved["resumed_from"][0]["previous_status"] == "StepLimit"
    assert executed_markers(ws.project) == ["fresh-1", "fresh-2", "fresh-3"]
    # raising the ceiling permits continuation, even from that zero-request output
    ws.stub.add({"tool_calls": [submit_call()], "usage": usage()})
    again = ws.resume(ws.root / "same-limit.json", "raised.json", "--step-limit", "3")
    assert again.returncode == 0, again.stderr
    body = ws.stub.requests[0].body
    assert sum(1 for m in body["messages"] if m.get("content") == CONTINUATION_NOTICE) == 1
    assert len(load(ws.root / "raised.json")["resumed_from"]) == 2


def test_exhausted_cost_ceiling_makes_zero_requests_and_raising_it_continues(ws: Workspace) -> None:
    call = {"tool_calls": [bash_call("c")], "cost_usd": 0.5}
    script = scripted(ws, "fresh.json", [call, call, call])
    fresh = ws.run(
        "-t", TASK, "--provider", "scripted", "--base-url", script, "--cwd", ws.project,
        "--cost-limit", "1.0", "-o", "run.json",
    )  # fmt: skip
    assert fresh.returncode == 1, fresh.stderr
    saved = load(ws.root / "run.json")
    assert saved["exit_status"] == "CostLimit" and saved["totals"]["cost_usd"] == 1.0

    again = scripted(ws, "again.json", [call])
    same = ws.run(
        "--resume",
        "run.json",
        "--base-url",
        again,
        "--cwd",
        ws.project,
        "--cost-limit",
        "1.0",
        "-o",
        "a.json",
    )
    assert same.returncode == 1
    assert load(ws.root / "a.json")["exit_status"] == "CostLimit"
    assert scripted_requests(ws, "again.json") == []

    more = scripted(ws, "more.json", [{"tool_calls": [submit_call()], "cost_usd": 0.25}])
    raised = ws.run(
        "--resume", "run.json", "--base-url", more, "--cwd", ws.project, "--cost-limit", "2", "-o", "b.json"
    )
    assert raised.returncode == 0, raised.stderr
    assert load(ws.root / "b.json")["totals"]["cost_usd"] == 1.25
    assert len(scripted_requests(ws, "more.json")) == 1


def test_saved_model_wins_over_environment_and_config(ws: Workspace, checkpoint: Path) -> None:
    (ws.project / ".tinyagent.yaml").write_text("model: config-model\nprovider: anthropic\n")
    env = {**ws.env, "TINYAGENT_MODEL": "env-model", "TINYAGENT_PROVIDER": "anthropic"}
    ws.stub.add({"tool_calls": [submit_call()], "usage": usage()})
    result = ws.resume(checkpoint, "continued.json", "--step-limit", "5", env=env)
    assert result.returncode == 0, result.stderr
    assert ws.stub.requests[0].body["model"] == MODEL
    assert ws.stub.requests[0].wire == "chat"
    assert load(ws.root / "continued.json")["model"] == MODEL


def test_explicit_same_model_and_provider_are_accepted(ws: Workspace, checkpoint: Path) -> None:
    ws.stub.add({"tool_calls": [submit_call()], "usage": usage()})
    result = ws.resume(checkpoint, "continued.json", "-m", MODEL, "--provider", "openai", "--step-limit", "5")
    assert result.returncode == 0, result.stderr


def test_wall_time_restarts_for_the_new_invocation(ws: Workspace, checkpoint: Path) -> None:
    document = load(checkpoint)
    document["timing"]["elapsed_seconds"] = 10_000.0
    document["limits"]["time_limit"] = 5.0
    stale = ws.root / "stale-time.json"
    rewrite(stale, document)
    ws.stub.add({"tool_calls": [submit_call()], "usage": usage()})
    result = ws.resume(stale, "continued.json", "--step-limit", "5", "--time-limit", "60")
    assert result.returncode == 0, result.stderr
    after = load(ws.root / "continued.json")
    assert after["timing"]["elapsed_seconds"] < 10_000.0
    assert after["timing"]["started_at"] != document["timing"]["started_at"]
    assert after["limits"]["time_limit"] == 60.0


def test_provider_error_checkpoint_is_resumable(ws: Workspace) -> None:
    script = scripted(
        ws, "fresh.json", [{"tool_calls": [bash_call("p1")]}, {"raise": "auth", "message": "bad key"}]
    )
    fresh = ws.run(
        "-t", TASK, "--provider", "scripted", "--base-url", script, "--cwd", ws.project, "-o", "r.json"
    )
    assert fresh.returncode == 1
    assert load(ws.root / "r.json")["exit_status"] == "ProviderError"
    done = scripted(ws, "done.json", [{"tool_calls": [submit_call()]}])
    result = ws.run("--resume", "r.json", "--base-url", done, "--cwd", ws.project, "-o", "c.json")
    assert result.returncode == 0, result.stderr
    assert "previous status ProviderError" in result.stderr
    assert executed_markers(ws.project) == ["p1"]


def _kill_during_a_batch(ws: Workspace, second_batch: list[dict]) -> Path:
    """A fresh run SIGKILLed while its second tool batch blocks on a fifo; returns the saved file.

    The blocked command appends "started" to calls.log first, then waits on the fifo: the test kills
    the agent once the marker is there, then releases the orphaned command by opening the fifo.
    """
    fifo = ws.root / "gate.fifo"
    os.mkfifo(fifo)
    ws.stub.add(
        {"tool_calls": [bash_call("fresh-1", "call_a")], "usage": usage()},
        {"tool_calls": second_batch, "usage": usage()},
    )
    cmd = [
        sys.executable, "-m", "tinyagent", "-t", TASK, "--provider", "openai", "-m", MODEL,
        "--base-url", ws.stub.base_url("openai"), "--cwd", str(ws.project), "--no-stream", "-o", "run.json",
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, cwd=ws.root, env=ws.env, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        for _ in range(3000):  # bounded wait until the second batch is running (blocked on the fifo)
            if "started" in executed_markers(ws.project) or proc.poll() is not None:
                break
            time.sleep(0.01)
        assert executed_markers(ws.project) == ["fresh-1", "started"]
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        try:  # the orphaned `cat` reads EOF and exits (no reader: the command never started)
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass
    return ws.root / "run.json"


BLOCKING = {
    "id": "call_b",
    "name": "bash",
    "arguments": {"command": "echo started >> calls.log; cat ../gate.fifo"},
}
AFTER = {"id": "call_c", "name": "bash", "arguments": {"command": "echo after >> calls.log"}}


def test_hard_kill_during_a_tool_batch_leaves_the_reply_saved_as_pending(ws: Workspace) -> None:
    """The crash window is closed: the reply was saved, marked pending, before its tools ran; a plain
    --resume refuses it with its own category, sending nothing and running nothing."""
    source = _kill_during_a_batch(ws, [BLOCKING, AFTER])
    on_disk = load(source)  # the last full rewrite that landed; the later turns are in the journal
    assert on_disk["resume"]["tool_batch_pending"] is False
    assert [c["id"] for m in on_disk["messages"] for c in m["tool_calls"]] in ([], ["call_a"])
    saved = json.loads(load_with_journal(source).model_dump_json())
    assert saved["exit_status"] == "Running"
    assert saved["resume"]["tool_batch_pending"] is True
    assert [c["id"] for m in saved["messages"] for c in m["tool_calls"]] == ["call_a", "call_b", "call_c"]
    assert saved["messages"][-1]["role"] == "assistant"
    assert not [p.name for p in ws.root.iterdir() if p.name.endswith(".tmp")]

    ws.stub.requests.clear()
    result = ws.resume(source, "continued.json", "--step-limit", "9")
    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    assert line.startswith(
        "tinyagent: cannot resume: pending tool calls: the run was killed after the model "
    )
    assert "--resume-pending=mark-interrupted" in line
    assert ws.stub.requests == []
    assert not (ws.root / "continued.json").exists()
    assert executed_markers(ws.project) == ["fresh-1", "started"]


def test_mark_interrupted_records_unknown_outcomes_and_never_reruns(ws: Workspace) -> None:
    source = _kill_during_a_batch(ws, [BLOCKING, AFTER])
    ws.stub.requests.clear()
    ws.stub.add({"tool_calls": [submit_call()], "usage": usage()})
    result = ws.resume(source, "continued.json", "--step-limit", "9", "--resume-pending=mark-interrupted")
    assert result.returncode == 0, result.stderr
    [request] = ws.stub.requests
    messages = request.body["messages"]
    results = [(m["tool_call_id"], m["content"]) for m in messages if m["role"] == "tool"]
    assert results[1:] == [("call_b", PENDING_CALL_RESULT), ("call_c", PENDING_CALL_RESULT)]
    assert messages[-1]["content"] == CONTINUATION_NOTICE
    assert executed_markers(ws.project) == ["fresh-1", "started"]  # neither call_b nor call_c re-run
    continued = load(ws.root / "continued.json")
    assert continued["resume"]["tool_batch_pending"] is False
    assert continued["exit_status"] == "Submitted"
    assert [m["is_error"] for m in continued["messages"] if m["role"] == "tool"] == [False, True, True, False]


def test_resume_pending_without_resume_is_a_usage_error(ws: Workspace) -> None:
    result = ws.run("-t", "x", "--resume-pending", "mark-interrupted")
    assert result.returncode == 2
    assert result.stderr.strip() == "tinyagent: error: --resume-pending only applies with --resume FILE"


def test_time_limited_run_resumes_with_the_same_time_limit(ws: Workspace) -> None:
    """Wall time is per invocation: a run stopped by --time-limit 1 continues under --time-limit 1."""
    script = scripted(ws, "slow.json", [{"tool_calls": [bash_call("t1")]}, {"sleep": 30}])
    fresh = ws.run(
        "-t", TASK, "--provider", "scripted", "--base-url", script, "--cwd", ws.project,
        "--time-limit", "1", "-o", "run.json",
    )  # fmt: skip
    assert fresh.returncode == 1, fresh.stderr
    stopped = load(ws.root / "run.json")
    assert stopped["exit_status"] == "TimeLimit"
    assert stopped["timing"]["elapsed_seconds"] >= 1.0

    done = scripted(ws, "done.json", [{"tool_calls": [submit_call()]}])
    result = ws.run(
        "--resume", "run.json", "--base-url", done, "--cwd", ws.project, "--time-limit", "1", "-o", "c.json"
    )
    assert result.returncode == 0, result.stderr
    assert "previous status TimeLimit" in result.stderr
    assert len(scripted_requests(ws, "done.json")) == 1
    assert executed_markers(ws.project) == ["t1"]


def test_repeated_format_error_checkpoint_is_resumable(ws: Workspace) -> None:
    script = scripted(ws, "chatty.json", [{"content": "thinking"}] * 3)
    fresh = ws.run(
        "-t", TASK, "--provider", "scripted", "--base-url", script, "--cwd", ws.project, "-o", "r.json"
    )
    assert fresh.returncode == 1
    stopped = load(ws.root / "r.json")
    assert stopped["exit_status"] == "RepeatedFormatError"
    assert stopped["messages"][-1]["role"] == "user"  # the harness's nudge: a query boundary

    done = scripted(ws, "done.json", [{"tool_calls": [submit_call("ok")]}])
    result = ws.run("--resume", "r.json", "--base-url", done, "--cwd", ws.project, "-o", "c.json")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "ok\n"
    [request] = scripted_requests(ws, "done.json")
    assert request["messages"][-1]["content"] == CONTINUATION_NOTICE
    assert request["messages"][-2]["content"] == stopped["messages"][-1]["content"]


def test_provider_setup_failure_after_validation_writes_nothing(ws: Workspace) -> None:
    script = scripted(ws, "fresh.json", [{"tool_calls": [bash_call("s1")]}])
    fresh = ws.run(
        "-t", TASK, "--provider", "scripted", "--base-url", script, "--cwd", ws.project,
        "--step-limit", "1", "-o", "r.json",
    )  # fmt: skip
    assert fresh.returncode == 1
    source = ws.root / "r.json"
    data = source.read_bytes()
    result = ws.run("--resume", "r.json", "--cwd", ws.project, "-o", "c.json")  # no script for the model
    assert result.returncode == 2
    assert result.stderr.startswith("tinyagent: error: ") and len(result.stderr.splitlines()) == 1
    assert not (ws.root / "c.json").exists()
    assert source.read_bytes() == data
    assert executed_markers(ws.project) == ["s1"]
