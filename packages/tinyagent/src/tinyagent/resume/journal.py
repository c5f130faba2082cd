"""A checkpoint's pending journal at `--resume`: read it (bounded), check it, replay its turns after it.

A checkpoint that names a journal (`resume.journal`) is the last full save that landed plus the turns
its journal recorded after it (ADR 0017). `read_journal` finds the journal next to the checkpoint;
`fold_journal` is pure: every complete line must be a record of this run, contiguous with the previous
one; records the checkpoint already holds must match it, the others are replayed in order. When the
last one is a reply whose tools were about to run, the state is marked pending, so the usual
`pending tool calls` refusal and `--resume-pending=mark-interrupted` apply. The records end at the first
NUL byte (the file is preallocated with zeros). Text after the last newline, or bytes after a hole of
zeros, are a record whose write never finished: the run starts a batch only after the whole line is
durable, so its calls never ran and it is ignored (with a note). Everything else is refused, never
guessed.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from tinyagent.resume.read import MAX_CHECKPOINT_BYTES
from tinyagent.resume.refusal import ResumeRefused, os_reason, refuse
from tinyagent.resume.strict_json import parse_strict_json
from tinyagent.trajectory.journal import JournalRecord
from tinyagent.trajectory.models import ExitStatus, JournalRef, Trajectory

DAMAGED = "pending journal damaged"
MISMATCH = "pending journal mismatch"
MISSING = "pending journal missing"
TORN_NOTE = (
    "the pending journal ends with an incomplete record (a write that never finished, so its tool "
    "calls never ran); it was ignored"
)


def journal_path(source: Path, ref: JournalRef) -> Path:
    """Where the journal `ref` names is: next to the checkpoint (its real path). Refuses a forged name."""
    name = ref.name
    if not name.endswith(".pending") or "/" in name or "\0" in name or name.startswith(".."):
        refuse(DAMAGED, "resume.journal names no journal file of this directory; the file was edited")
    return Path(os.path.realpath(source)).parent / name


def read_journal(source: Path, checkpoint: Trajectory) -> bytes | None:
    """The bytes of the checkpoint's journal; None when it names none, or ended and its journal is gone.

    A checkpoint saved mid-run (status Running) whose journal is missing is refused: the journal may
    hold a reply whose tools ran, and resuming without it would ask the model again.
    """
    assert checkpoint.resume is not None
    ref = checkpoint.resume.journal
    if ref is None:
        return None
    path = journal_path(source, ref)
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        if checkpoint.exit_status is ExitStatus.RUNNING:
            refuse(
                MISSING,
                f"the run was stopped mid-run and its pending journal {ref.name} is not next to the "
                "checkpoint; put it back (it may hold a reply whose tools ran), resume never guesses",
            )
        return None
    except OSError as exc:
        refuse(DAMAGED, f"cannot open the pending journal {ref.name} ({os_reason(exc)})")
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_CHECKPOINT_BYTES:
            refuse(DAMAGED, f"the pending journal {ref.name} is not a regular file within the resume bound")
        chunks, total = [], 0
        while chunk := os.read(fd, 1 << 20):
            total += len(chunk)
            if total > MAX_CHECKPOINT_BYTES:
                refuse(DAMAGED, f"the pending journal {ref.name} is larger than the resume bound")
            chunks.append(chunk)
    except OSError as exc:
        refuse(DAMAGED, f"cannot read the pending journal {ref.name} ({os_reason(exc)})")
    finally:
        os.close(fd)
    return b"".join(chunks)


def fold_journal(checkpoint: Trajectory, data: bytes) -> tuple[Trajectory, list[str]]:
    """The checkpoint with the journal's records after its last message replayed, and notes.

    Pure. Every complete line must be a record of this run, each starting where the previous ended.
    A record already in the checkpoint must hold the same messages; the first one beyond it must
    start exactly at its end. Refuses a damaged journal, one of another run, and one that does not
    continue this file (ahead of it, or overlapping it with other messages).
    """
    assert checkpoint.resume is not None and checkpoint.resume.journal is not None
    ref = checkpoint.resume.journal
    records, _, rest = data.partition(b"\0")  # the preallocated zeros after the last record
    complete, _, torn = records.rpartition(b"\n")
    notes = [TORN_NOTE] if torn or rest.strip(b"\0") else []
    state, end = checkpoint, -1
    for number, line in enumerate(complete.split(b"\n") if complete else [], start=1):
        record = _record(line, number)
        if record.run != ref.run:
            refuse(
                MISMATCH,
                f"the pending journal {ref.name} belongs to another run than the checkpoint; "
                "remove it only if that run is not the one you are resuming",
            )
        if end >= 0 and record.index != end:
            refuse(
                DAMAGED,
                f"line {number} of the pending journal {ref.name} does not continue line {number - 1}",
            )
        end = record.index + len(record.messages)
        state = _replayed(checkpoint, state, record)
    return state, notes


def _replayed(checkpoint: Trajectory, state: Trajectory, record: JournalRecord) -> Trajectory:
    """`state` after `record`: unchanged when the checkpoint already holds it, else its new messages appended.

    A record may overlap the checkpoint's end (a reply saved in full, marked pending, when the journal
    could not be used yet, then journaled with its results): the overlap must match the checkpoint.
    """
    have = len(checkpoint.messages)
    name = checkpoint.resume.journal.name if checkpoint.resume and checkpoint.resume.journal else ""
    end = record.index + len(record.messages)
    overlap = max(0, min(end, have) - record.index)
    if checkpoint.messages[record.index : record.index + overlap] != record.messages[:overlap]:
        refuse(MISMATCH, f"the pending journal {name} records messages this checkpoint does not have")
    if end <= have:  # folded: a full save after it landed
        return state
    if record.index + overlap != len(state.messages):
        refuse(
            MISMATCH,
            f"the pending journal {name} does not continue the checkpoint (an older copy of the "
            "trajectory?); resume the file the run was writing",
        )
    assert state.resume is not None and checkpoint.resume is not None
    if checkpoint.exit_status is not ExitStatus.RUNNING or (
        checkpoint.resume.tool_batch_pending and not overlap
    ):
        refuse(MISMATCH, f"the pending journal {name} continues a checkpoint that cannot have been continued")
    if record.totals.steps < state.totals.steps:
        refuse(MISMATCH, f"the pending journal {name} counts fewer steps than the state it continues")
    resume = state.resume.model_copy(update={"tool_batch_pending": record.pending})
    if record.compaction is not None:
        resume = resume.model_copy(update={"compaction": record.compaction})
    return state.model_copy(
        update={
            "messages": [*state.messages, *record.messages[overlap:]],
            "totals": record.totals,
            "warnings": list(record.warnings),
            "timing": state.timing.model_copy(update={"elapsed_seconds": record.elapsed_seconds}),
            "resume": resume,
        }
    )


def _record(line: bytes, number: int) -> JournalRecord:
    """One complete journal line as a record (strict JSON, strict schema), or a refusal naming the line."""
    advice = f"line {number} of the pending journal is not a valid record; the journal is damaged"
    try:
        text = line.decode("utf-8")
        parse_strict_json(text)
        return JournalRecord.model_validate_json(text, strict=True)
    except (UnicodeDecodeError, ResumeRefused, ValueError):  # pydantic.ValidationError is a ValueError
        refuse(DAMAGED, advice)


def load_with_journal(path: str | os.PathLike[str]) -> Trajectory:
    """A saved trajectory with its pending journal folded in: the state `--resume` starts from.

    For inspecting a run that was killed (the trajectory's own checks are `load_trajectory`'s); raises
    `LoadError` for the trajectory and `ResumeRefused` for its journal.
    """
    from tinyagent.trajectory.files import load_trajectory

    trajectory = load_trajectory(path)
    if trajectory.resume is None:
        return trajectory
    journal = read_journal(Path(path), trajectory)
    return trajectory if journal is None else fold_journal(trajectory, journal)[0]
