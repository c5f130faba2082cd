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
from tinyagent.trajectory.journal import PREALLOCATE_BYTES


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


def _records(journal: Path) -> bytes:
    """The journal's records: what precedes the preallocated zeros."""
    data = journal.read_bytes()
    records, _, zeros = data.partition(b"\0")
    assert zeros.strip(b"\0") == b""
    return records


def test_a_kill_once_the_record_is_durable_refuses_then_mark_interrupted_never_reruns(ws: Workspace) -> None:
    source = _killed_at_the_second_record(ws)
    assert executed_markers(ws.project) == ["fresh-1"]  # killed before the second batch ran
    on_disk = load(source)  # the last full save that landed: the initial one or the one after the first turn
    assert len(on_disk["messages"]) in (2, 4) and on_disk["resume"]["tool_batch_pending"] is False
    journal = _journal(source)
    assert on_disk["resume"]["journal"]["name"] == journal.name
    assert stat.S_IMODE(journal.stat().st_mode) == 0o600
    assert journal.stat().st_size >= PREALLOCATE_BYTES  # records overwrite preallocated zeros
    lines = _records(journal).split(b"\n")
    assert lines[-1] == b""  # every record ends with its newline
    records = [json.loads(line) for line in lines[:-1]]
    # the first reply (pending), its result, the second reply (pending): the kill came right after it
    assert [(r["index"], len(r["messages"]), r["pending"]) for r in records] == [
        (2, 1, True),
        (3, 1, False),
        (4, 1, True),
    ]
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
    *complete, last, _ = _records(journal).split(b"\n")
    journal.write_bytes(b"".join(line + b"\n" for line in complete) + last[: len(last) // 2] + bytes(4096))
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
    journal.write_bytes(_records(journal) + b'{"run": "' + bytes(100))
    result = ws.resume(source, "continued.json")
    assert_refused(result, "pending tool calls", output=ws.root / "continued.json")


def test_a_damaged_complete_record_is_refused(ws: Workspace) -> None:
    source = _killed_at_the_second_record(ws)
    journal = _journal(source)
    first, *rest, _ = _records(journal).split(b"\n")
    tail = b"".join(line + b"\n" for line in rest)
    for damaged in (b"{not json}", first.replace(b'"index": 2', b'"index": "2"'), first + b" x"):
        journal.write_bytes(damaged + b"\n" + tail)
        result = ws.resume(source, "continued.json", "--resume-pending=mark-interrupted")
        line = assert_refused(result, "pending journal damaged", output=ws.root / "continued.json")
        assert "line 1" in line
    journal.write_bytes(first + b"\n" + first + b"\n" + tail)  # each record starts where the previous ended
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


def test_the_journal_replays_every_turn_after_the_last_full_save_but_never_across_a_gap(
    ws: Workspace,
) -> None:
    """The full rewrites are not waited for: the journal alone carries the turns after the last one that
    landed (here: the initial save). A journal that does not start where that file ends is refused."""
    source = _killed_at_the_second_record(ws)
    document = load(source)
    document["messages"] = document["messages"][:2]  # as if only the initial save had landed
    document["totals"].update(steps=0, input_tokens=0, output_tokens=0, cache_read_tokens=0, cost_usd=0.0)
    source.write_text(json.dumps(document, indent=1), encoding="utf-8")
    result = ws.resume(source, "continued.json")
    assert_refused(result, "pending tool calls", output=ws.root / "continued.json")  # both turns replayed

    journal = _journal(source)
    _first, *rest = _records(journal).split(b"\n")
    journal.write_bytes(b"\n".join(rest))  # the first turn's record is gone: a gap after the file
    result = ws.resume(source, "continued.json", "--resume-pending=mark-interrupted")
    line = assert_refused(result, "pending journal mismatch", output=ws.root / "continued.json")
    assert "does not continue the checkpoint" in line


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


def test_a_journal_that_cannot_be_created_is_not_named_and_the_reply_is_saved_in_full(ws: Workspace) -> None:
    """Something else (a directory) holds the journal's name: the run saves each reply in full, marked
    pending, and its files name no journal, so a kill during a batch still resumes as pending."""
    (ws.root / "run.json.pending").mkdir()
    ws.stub.add({"tool_calls": [bash_call("fresh-1", "call_a")], "usage": usage()})
    ws.stub.add({"tool_calls": [submit_call()], "usage": usage()})
    result = ws.run(
        "-t", TASK, "--provider", "openai", "-m", MODEL, "--base-url", ws.stub.base_url("openai"),
        "--cwd", ws.project, "--no-stream", "-o", "run.json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "the pending journal failed" in result.stderr
    saved = load(ws.root / "run.json")
    assert saved["exit_status"] == "Submitted" and saved["resume"]["journal"] is None
    assert (ws.root / "run.json.pending").is_dir()  # left alone


def test_a_failed_background_sync_falls_back_to_a_full_save_before_the_command_runs(ws: Workspace) -> None:
    from tinyagent.trajectory.files import SYNC_FAULT_ENV

    ws.stub.add(
        {"tool_calls": [bash_call("fresh-1", "call_a")], "usage": usage()},
        {"tool_calls": [bash_call("fresh-2", "call_b")], "usage": usage()},
        {"tool_calls": [submit_call()], "usage": usage()},
    )
    result = ws.run(
        "-t", TASK, "--provider", "openai", "-m", MODEL, "--base-url", ws.stub.base_url("openai"),
        "--cwd", ws.project, "--no-stream", "-o", "run.json", env={**ws.env, SYNC_FAULT_ENV: "2"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("the pending journal failed (injected sync failure") == 1
    assert executed_markers(ws.project) == ["fresh-1", "fresh-2"]  # each command ran exactly once
    saved = load(ws.root / "run.json")
    assert saved["exit_status"] == "Submitted" and saved["resume"]["journal"] is None
    assert not _journal(ws.root / "run.json").exists()
