"""The pending journal file (real files): private, preallocated, grown, erased after a fold, removed; and
folding its records back into a checkpoint (hypothesis: torn tails are ignored, damaged lines refused)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from support.resume_checkpoints import make_checkpoint
from tinyagent.resume.journal import DAMAGED, TORN_NOTE, fold_journal
from tinyagent.resume.refusal import ResumeRefused
from tinyagent.resume.validate import check_checkpoint
from tinyagent.trajectory.atomic import SaveError
from tinyagent.trajectory.journal import (
    PREALLOCATE_BYTES,
    ROTATE_BYTES,
    PendingJournal,
    encode_record,
    journal_ref_for,
)
from tinyagent.trajectory.models import ExitStatus, Trajectory
from tinyagent.types import Message, ToolCall


def _records(path: Path) -> bytes:
    records, _, zeros = path.read_bytes().partition(b"\0")
    assert zeros.strip(b"\0") == b""
    return records


def test_a_journal_is_private_preallocated_and_removed_at_the_end(tmp_path: Path) -> None:
    stale = tmp_path / "run.json.pending"
    stale.write_bytes(b"an earlier run's records\n")
    journal = PendingJournal(tmp_path / "run.json", journal_ref_for(tmp_path / "run.json"))
    journal.open()
    assert stat.S_IMODE(stale.stat().st_mode) == 0o600
    assert stale.read_bytes() == bytes(PREALLOCATE_BYTES)  # emptied, then zeros
    journal.append(b'{"a": 1}\n')
    journal.append(b'{"b": 2}\n')
    assert _records(stale) == b'{"a": 1}\n{"b": 2}\n'
    journal.close(remove=True)
    assert not stale.exists()


def test_a_journal_never_writes_through_a_symlink(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_bytes(b"keep")
    (tmp_path / "run.json.pending").symlink_to(target)
    journal = PendingJournal(tmp_path / "run.json", journal_ref_for(tmp_path / "run.json"))
    with pytest.raises(SaveError):
        journal.open()
    assert target.read_bytes() == b"keep"


def test_a_record_larger_than_the_preallocation_grows_the_file(tmp_path: Path) -> None:
    journal = PendingJournal(tmp_path / "run.json", journal_ref_for(tmp_path / "run.json"))
    journal.open()
    big = b'{"x": "' + b"y" * (PREALLOCATE_BYTES + 10) + b'"}\n'
    journal.append(b"{}\n")
    journal.append(big)
    assert _records(journal.path) == b"{}\n" + big
    assert journal.path.stat().st_size >= PREALLOCATE_BYTES + len(big)


def test_erasing_zeroes_every_record_and_restarts_at_the_beginning(tmp_path: Path) -> None:
    journal = PendingJournal(tmp_path / "run.json", journal_ref_for(tmp_path / "run.json"))
    journal.open()
    line = b'{"x": "' + b"y" * 4000 + b'"}\n'
    journal.append(line)
    journal.erase()
    assert _records(journal.path) == b""
    journal.append(line)
    assert _records(journal.path) == line
    for _ in range(ROTATE_BYTES // len(line) + 1):
        journal.append(line, sync=False)
    assert journal.used > ROTATE_BYTES
    journal.erase()
    assert _records(journal.path) == b""
    journal.append(b"{}\n")
    assert _records(journal.path) == b"{}\n"  # the next record starts at the beginning, nothing after it


def test_a_failed_append_breaks_the_journal_for_good(tmp_path: Path) -> None:
    journal = PendingJournal(tmp_path / "run.json", journal_ref_for(tmp_path / "run.json"))
    with pytest.raises(SaveError):
        journal.append(b"{}\n")  # not opened
    journal.open()
    assert journal._fd is not None
    read_only = os.open(os.devnull, os.O_RDONLY)
    os.dup2(read_only, journal._fd)  # its descriptor now refuses writes
    os.close(read_only)
    with pytest.raises(SaveError):
        journal.append(b"{}\n")
    assert journal.broken
    journal.close(remove=True)


def test_an_overlapped_sync_is_waited_for_before_the_journal_is_used_again(tmp_path: Path) -> None:
    journal = PendingJournal(tmp_path / "run.json", journal_ref_for(tmp_path / "run.json"))
    journal.open()
    wait = journal.append(b'{"a": 1}\n', overlap=True)
    assert wait is not None and journal.append(b'{"b": 2}\n', sync=False) is None  # settles the first
    wait()  # already settled: nothing left to wait for
    assert _records(journal.path) == b'{"a": 1}\n{"b": 2}\n'
    assert journal.append(b"{}\n", overlap=False) is None  # a synchronous sync returns no wait
    journal.close(remove=True)


def test_a_failed_overlapped_sync_breaks_the_journal_for_good(tmp_path: Path) -> None:
    journal = PendingJournal(tmp_path / "run.json", journal_ref_for(tmp_path / "run.json"))
    journal.open()
    assert journal._fd is not None
    read_end, write_end = os.pipe()
    real_fd = journal._fd
    journal._fd = read_end  # a pipe cannot be fdatasynced (EINVAL): the sync thread's call fails
    from tinyagent.trajectory.syncer import Syncer

    journal._inflight = Syncer().submit(read_end)
    with pytest.raises(SaveError, match="cannot append to the pending journal"):
        journal.settle()
    assert journal.broken
    with pytest.raises(SaveError):
        journal.append(b"{}\n")
    journal._fd = real_fd
    os.close(read_end)
    os.close(write_end)
    journal.close(remove=True)


# folding -------------------------------------------------------------------------------------


def _pending_pair() -> tuple[Trajectory, bytes]:
    """A Running checkpoint naming a journal, and that journal with the reply right after it."""
    checkpoint = make_checkpoint(status=ExitStatus.RUNNING)
    ref = journal_ref_for("/tmp/run.json")
    assert checkpoint.resume is not None
    checkpoint.resume = checkpoint.resume.model_copy(update={"journal": ref})
    reply = Message(
        role="assistant", tool_calls=[ToolCall(id="call_9", name="bash", arguments='{"command": "x"}')]
    )
    state = checkpoint.model_copy(deep=True)
    state.messages.append(reply)
    state.totals.steps += 1
    state.timing.elapsed_seconds = 61.5
    return checkpoint, encode_record(ref, state, len(checkpoint.messages), pending=True, compaction=None)


def test_an_unfolded_reply_is_restored_as_pending_and_passes_every_check() -> None:
    checkpoint, record = _pending_pair()
    folded, notes = fold_journal(checkpoint, record + bytes(64))
    assert notes == []
    assert folded.messages[-1].tool_calls[0].id == "call_9"
    assert folded.totals.steps == checkpoint.totals.steps + 1
    assert folded.timing.elapsed_seconds == 61.5
    assert folded.resume is not None and folded.resume.tool_batch_pending
    check_checkpoint(folded, pending="mark-interrupted")
    with pytest.raises(ResumeRefused) as refused:
        check_checkpoint(folded)
    assert refused.value.category == "pending tool calls"


def test_a_folded_reply_changes_nothing() -> None:
    checkpoint, record = _pending_pair()
    restored, _ = fold_journal(checkpoint, record)
    later = restored.model_copy(update={"resume": checkpoint.resume})  # the full save after the batch
    assert fold_journal(later, record) == (later, [])


@settings(max_examples=200, deadline=None)
@given(
    torn=st.binary(max_size=300).filter(lambda b: b"\n" not in b and b"\0" not in b),
    hole=st.binary(max_size=64),
)
def test_a_torn_tail_is_ignored_whatever_it_holds(torn: bytes, hole: bytes) -> None:
    checkpoint, record = _pending_pair()
    clean, _ = fold_journal(checkpoint, record)
    folded, notes = fold_journal(checkpoint, record + torn + b"\0" + hole + bytes(8))
    assert folded == clean
    assert notes == ([TORN_NOTE] if torn or hole.strip(b"\0") else [])


@settings(max_examples=200, deadline=None)
@given(line=st.binary(min_size=0, max_size=200).filter(lambda b: b"\n" not in b and b"\0" not in b))
def test_a_damaged_complete_line_is_refused(line: bytes) -> None:
    checkpoint, record = _pending_pair()
    with pytest.raises(ResumeRefused) as refused:
        fold_journal(checkpoint, line + b"\n" + record)
    assert refused.value.category == DAMAGED


def test_records_replay_in_order_with_the_compacted_view_they_carry() -> None:
    """Two turns after the checkpoint: the results of the first, then a reply (pending) made after a
    compaction; the replayed state has both turns, the last record's totals and the compaction."""
    from tinyagent.trajectory.models import Compaction

    checkpoint, first = _pending_pair()
    assert checkpoint.resume is not None and checkpoint.resume.journal is not None
    ref = checkpoint.resume.journal
    state, _ = fold_journal(checkpoint, first)
    state.messages.append(Message(role="tool", content="ok", tool_call_id="call_9", name="bash"))
    results = encode_record(ref, state, len(state.messages) - 1, pending=False, compaction=None)
    compaction = Compaction(summary="the story so far", through=4)
    state.messages.append(
        Message(role="assistant", tool_calls=[ToolCall(id="c2", name="bash", arguments="{}")])
    )
    state.totals.steps += 2
    reply = encode_record(ref, state, len(state.messages) - 1, pending=True, compaction=compaction)
    folded, notes = fold_journal(checkpoint, first + results + reply)
    assert notes == []
    assert [m.role for m in folded.messages[len(checkpoint.messages) :]] == ["assistant", "tool", "assistant"]
    assert folded.totals.steps == state.totals.steps
    assert folded.resume is not None and folded.resume.tool_batch_pending
    assert folded.resume.compaction == compaction
    not_pending, _ = fold_journal(checkpoint, first + results)
    assert not_pending.resume is not None and not not_pending.resume.tool_batch_pending
    assert not_pending.resume.compaction is None


def test_a_long_journal_is_erased_once_a_full_save_holds_it(tmp_path: Path) -> None:
    """A real run (resume-mode saves: each full save lands before the next reply) whose records pass
    ROTATE_BYTES: the next reply's record starts an erased journal; the run ends with every turn saved."""
    from support.loop_agent import make
    from support.tinyagent_cli import call, reply
    from tinyagent.trajectory.files import TrajectoryFile, load_trajectory

    big = "x" * (ROTATE_BYTES // 3 + 1000)
    replies = [reply(call("write_file", path=f"f{n}.txt", content=big)) for n in range(3)]
    replies.append(reply(call("bash", command="cp ../run.json.pending snapshot.bin")))
    replies.append(reply(call("submit", answer="done")))
    save = TrajectoryFile(tmp_path / "run.json", journal=True)
    agent, traj, _, stderr = make(tmp_path, replies, save=save, stop_on_save_failure=True)
    assert traj.resume is not None
    traj.resume = traj.resume.model_copy(update={"journal": save.journal_ref})
    agent.run(traj)
    assert traj.exit_status is ExitStatus.SUBMITTED, stderr.getvalue()
    records = _records(tmp_path / "work" / "snapshot.bin").split(b"\n")
    assert len(records) == 2 and records[1] == b""  # erased, then only the copying reply's record
    snapshot_index = len(traj.messages) - 4  # ... reply(cp), its result, reply(submit), its result
    assert json_index(records[0]) == snapshot_index
    assert not (tmp_path / "run.json.pending").exists()
    assert len(load_trajectory(tmp_path / "run.json").messages) == len(traj.messages)


def json_index(line: bytes) -> int:
    import json

    return int(json.loads(line)["index"])


def test_a_record_overlapping_a_full_pending_save_continues_it_and_must_match_it() -> None:
    """The reply was saved in full, marked pending (the journal was not usable yet); the next record
    holds that reply and its result: the overlap must be the file's own reply, the result is added."""
    checkpoint, record = _pending_pair()
    pending_file, _ = fold_journal(checkpoint, record)  # what the full pending save holds
    assert pending_file.resume is not None and pending_file.resume.journal is not None
    ref = pending_file.resume.journal
    state = pending_file.model_copy(deep=True)
    state.messages.append(Message(role="tool", content="ok", tool_call_id="call_9", name="bash"))
    results = encode_record(ref, state, len(state.messages) - 2, pending=False, compaction=None)
    folded, _ = fold_journal(pending_file, results)
    assert folded.messages == state.messages
    assert folded.resume is not None and not folded.resume.tool_batch_pending
    other = state.model_copy(deep=True)
    other.messages[-2] = Message(role="assistant", tool_calls=[ToolCall(id="x", name="bash", arguments="{}")])
    with pytest.raises(ResumeRefused) as refused:
        fold_journal(
            pending_file, encode_record(ref, other, len(other.messages) - 2, pending=False, compaction=None)
        )
    assert refused.value.category == "pending journal mismatch"
