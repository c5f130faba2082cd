"""The pending journal through the real CLI: a SIGKILL the instant a reply's record is durable (before its
tools run), then `--resume` refuses with the pending category and `--resume-pending=mark-interrupted`
continues without running anything again; a torn or damaged record; a journal of another run; a missing
journal; and the journal's life (private while the run lasts, removed at its end)."""

from __future__ import annotations

import json
import os
import signal
import stat
from pathlib import Path

from support.resume_checkpoints import assert_refused, bash_call, executed_markers, submit_call
from support.resume_workspace import MODEL, TASK, Workspace, load, usage
from tinyagent.prompts import CONTINUATION_NOTICE, PENDING_CALL_RESULT
from tinyagent.resume.journal import TORN_NOTE
from tinyagent.trajectory.files import KILL_ENV


def _killed_at_the_second_record(ws: Workspace, output: str = "run.json") -> Path:
    """A fresh run whose first batch runs and which is SIGKILLed once the second reply's record is durable."""
    ws.stub.add(
        {"tool_calls": [bash_call("fresh-1", "call_a")], "usage": usage()},
        {"tool_calls": [bash_call("fresh-2", "call_b"), bash_call("fresh-3", "call_c")], "usage": usage()},
    )
    result = ws.run(
        "-t", TASK, "--provider", "openai", "-m", MODEL, "--base-url", ws.stub.base_url("openai"),
        "--cwd", ws.project, "--no-stream", "-o", output, env={**ws.env, KILL_ENV: "2"},
    )  # fmt: skip
    assert result.returncode == -signal.SIGKILL, result.stderr
    ws.stub.requests.clear()
    return ws.root / output


def _journal(source: Path) -> Path:
    return source.with_name(source.name + ".pending")


def test_a_kill_once_the_record_is_durable_refuses_then_mark_interrupted_never_reruns(ws: Workspace) -> None:
    source = _killed_at_the_second_record(ws)
    assert executed_markers(ws.project) == ["fresh-1"]  # killed before the second batch ran
    on_disk = load(source)  # the last full save: the first turn, nothing pending
    assert [m["role"] for m in on_disk["messages"]] == ["system", "user", "assistant", "tool"]
    assert on_disk["resume"]["tool_batch_pending"] is False
    journal = _journal(source)
    assert on_disk["resume"]["journal"]["name"] == journal.name
    assert stat.S_IMODE(journal.stat().st_mode) == 0o600
    lines = journal.read_bytes().split(b"\n")
    assert len(lines) == 3 and lines[2] == b""  # two complete records, each ending with its newline
    assert [json.loads(line)["index"] for line in lines[:2]] == [2, 4]
    source_bytes, journal_bytes = source.read_bytes(), journal.read_bytes()

    result = ws.resume(source, "continued.json", "--step-limit", "9")
    line = assert_refused(
        result,
        "pending tool calls",
        source=source,
        source_bytes=source_bytes,
        output=ws.root / "continued.json",
    )
    assert "2 tool call(s)" in line and "--resume-pending=mark-interrupted" in line
    assert ws.stub.requests == []
    assert journal.read_bytes() == journal_bytes

    ws.stub.add({"tool_calls": [submit_call()], "usage": usage()})
    result = ws.resume(source, "continued.json", "--step-limit", "9", "--resume-pending=mark-interrupted")
    assert result.returncode == 0, result.stderr
    [request] = ws.stub.requests
    messages = request.body["messages"]
    assert [c["id"] for c in messages[4]["tool_calls"]] == ["call_b", "call_c"]  # the journaled reply
    results = [(m["tool_call_id"], m["content"]) for m in messages if m["role"] == "tool"]
    assert results[1:] == [("call_b", PENDING_CALL_RESULT), ("call_c", PENDING_CALL_RESULT)]
    assert messages[-1]["content"] == CONTINUATION_NOTICE
    assert executed_markers(ws.project) == ["fresh-1"]  # neither journaled call ran, before or after
    continued = load(ws.root / "continued.json")
    assert continued["exit_status"] == "Submitted" and continued["totals"]["steps"] == 3
    assert continued["resume"]["tool_batch_pending"] is False
    assert not _journal(ws.root / "continued.json").exists()  # removed after the final save
    assert (source.read_bytes(), journal.read_bytes()) == (source_bytes, journal_bytes)


def test_a_torn_last_record_was_never_acknowledged_and_is_ignored(ws: Workspace) -> None:
    """The second reply's record without its newline: its write never finished, so its tools never ran
    (they start only after the whole line is durable); resume continues from the last full save."""
    source = _killed_at_the_second_record(ws)
    journal = _journal(source)
    first, second, _ = journal.read_bytes().split(b"\n")
    journal.write_bytes(first + b"\n" + second[: len(second) // 2])
    ws.stub.add({"tool_calls": [submit_call()], "usage": usage()})
    result = ws.resume(source, "continued.json", "--step-limit", "9")
    assert result.returncode == 0, result.stderr
    assert TORN_NOTE in result.stderr
    [request] = ws.stub.requests
    messages = request.body["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "user"]
    assert messages[-1]["content"] == CONTINUATION_NOTICE
    assert executed_markers(ws.project) == ["fresh-1"]


def test_a_torn_line_after_a_complete_pending_record_still_refuses(ws: Workspace) -> None:
    source = _killed_at_the_second_record(ws)
    journal = _journal(source)
    journal.write_bytes(journal.read_bytes() + b'{"run": "')
    result = ws.resume(source, "continued.json")
    assert_refused(result, "pending tool calls", output=ws.root / "continued.json")


def test_a_damaged_complete_record_is_refused(ws: Workspace) -> None:
    source = _killed_at_the_second_record(ws)
    journal = _journal(source)
    first, second, _ = journal.read_bytes().split(b"\n")
    for damaged in (b"{not json}", first.replace(b'"index": 2', b'"index": "2"'), first + b" x"):
        journal.write_bytes(damaged + b"\n" + second + b"\n")
        result = ws.resume(source, "continued.json", "--resume-pending=mark-interrupted")
        line = assert_refused(result, "pending journal damaged", output=ws.root / "continued.json")
        assert "line 1" in line
    journal.write_bytes(second + b"\n" + first + b"\n")  # positions must increase
    result = ws.resume(source, "continued.json", "--resume-pending=mark-interrupted")
    assert_refused(result, "pending journal damaged", output=ws.root / "continued.json")
    assert ws.stub.requests == []


def test_a_journal_of_another_run_is_refused(ws: Workspace) -> None:
    source = _killed_at_the_second_record(ws)
    other = _killed_at_the_second_record(ws, "other.json")
    _journal(source).write_bytes(_journal(other).read_bytes())
    result = ws.resume(source, "continued.json", "--resume-pending=mark-interrupted")
    line = assert_refused(result, "pending journal mismatch", output=ws.root / "continued.json")
    assert "another run" in line
    assert executed_markers(ws.project) == ["fresh-1", "fresh-1"]


def test_an_older_copy_of_the_trajectory_is_refused(ws: Workspace) -> None:
    """A journal ahead of its checkpoint (the trajectory was replaced by an earlier copy) is refused."""
    source = _killed_at_the_second_record(ws)
    document = load(source)
    document["messages"] = document["messages"][:2]
    document["totals"]["steps"] = 0
    document["totals"].update(input_tokens=0, output_tokens=0, cache_read_tokens=0, cost_usd=0.0)
    source.write_text(json.dumps(document, indent=1), encoding="utf-8")
    result = ws.resume(source, "continued.json", "--resume-pending=mark-interrupted")
    assert_refused(result, "pending journal mismatch", output=ws.root / "continued.json")


def test_a_missing_journal_of_a_killed_run_is_refused(ws: Workspace) -> None:
    source = _killed_at_the_second_record(ws)
    _journal(source).unlink()
    result = ws.resume(source, "continued.json", "--resume-pending=mark-interrupted")
    line = assert_refused(result, "pending journal missing", output=ws.root / "continued.json")
    assert "run.json.pending" in line
    assert ws.stub.requests == []


def test_a_run_that_ends_removes_its_journal_and_a_resume_of_it_needs_none(ws: Workspace) -> None:
    source = ws.fresh(
        [{"tool_calls": [bash_call("fresh-1", "call_a")], "usage": usage()}] * 2,
        "run.json",
        "--step-limit",
        "2",
    )
    assert load(source)["exit_status"] == "StepLimit"
    assert not _journal(source).exists()
    assert sorted(p.name for p in ws.root.iterdir() if p.is_file()) == ["run.json"]
    ws.stub.requests.clear()
    ws.stub.add({"tool_calls": [submit_call()], "usage": usage()})
    result = ws.resume(source, "continued.json", "--step-limit", "9")
    assert result.returncode == 0, result.stderr
    assert executed_markers(ws.project) == ["fresh-1", "fresh-1"]


def test_an_output_that_would_reuse_the_checkpoints_journal_is_refused(ws: Workspace) -> None:
    source = _killed_at_the_second_record(ws)
    moved = ws.root / "moved.json"
    os.rename(source, moved)  # the checkpoint still names run.json.pending, next to it
    result = ws.resume(moved, "run.json", "--resume-pending=mark-interrupted")
    assert_refused(result, "output is the checkpoint", output=ws.root / "run.json")
