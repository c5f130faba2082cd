"""A checkpoint's pending journal at `--resume`: read it (bounded), check it, fold its last reply back in.

A checkpoint that names a journal (`resume.journal`) is a trajectory plus, possibly, one reply saved in
the journal before its tools ran and after the last full save (ADR 0017). `read_journal` finds the
journal next to the checkpoint; `fold_journal` is pure: every complete line must be a record of this run
with increasing positions; the last one is either already in the checkpoint (identical message, nothing
to do) or the reply right after its last message, which is appended and marked pending, so the usual
`pending tool calls` refusal and `--resume-pending=mark-interrupted` apply. Text after the last newline
is a record whose write never finished: the run starts a batch only after the whole line is durable, so
its calls never ran and it is ignored (with a note). Everything else is refused, never guessed.
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
    """The checkpoint with the journal's unfolded reply (if any) appended and marked pending, and notes.

    Pure. Refuses a damaged journal, one of another run, and one that does not continue this file.
    """
    assert checkpoint.resume is not None and checkpoint.resume.journal is not None
    ref = checkpoint.resume.journal
    complete, _, torn = data.rpartition(b"\n")
    notes = [TORN_NOTE] if torn else []
    last: JournalRecord | None = None
    for number, line in enumerate(complete.split(b"\n") if complete else [], start=1):
        record = _record(line, number)
        if record.run != ref.run:
            refuse(
                MISMATCH,
                f"the pending journal {ref.name} belongs to another run than the checkpoint; "
                "remove it only if that run is not the one you are resuming",
            )
        if last is not None and record.index <= last.index:
            refuse(DAMAGED, f"line {number} of the pending journal {ref.name} goes back in the history")
        last = record
    if last is None:
        return checkpoint, notes
    messages = checkpoint.messages
    if last.index < len(messages):
        if messages[last.index] != last.message:
            refuse(MISMATCH, f"the pending journal {ref.name} records a reply this checkpoint does not have")
        return checkpoint, notes  # folded: the full save after it landed
    if last.index > len(messages) or checkpoint.exit_status is not ExitStatus.RUNNING:
        refuse(
            MISMATCH,
            f"the pending journal {ref.name} is ahead of the checkpoint (an older copy of the trajectory?); "
            "resume the file the run was writing",
        )
    return _with_pending_reply(checkpoint, last), notes


def _record(line: bytes, number: int) -> JournalRecord:
    """One complete journal line as a record (strict JSON, strict schema), or a refusal naming the line."""
    advice = f"line {number} of the pending journal is not a valid record; the journal is damaged"
    try:
        text = line.decode("utf-8")
        parse_strict_json(text)
        return JournalRecord.model_validate_json(text, strict=True)
    except (UnicodeDecodeError, ResumeRefused, ValueError):  # pydantic.ValidationError is a ValueError
        refuse(DAMAGED, advice)


def _with_pending_reply(checkpoint: Trajectory, record: JournalRecord) -> Trajectory:
    """The state the run had when it saved `record`: the reply appended, its tool batch pending."""
    assert checkpoint.resume is not None
    reply = record.message
    if checkpoint.resume.tool_batch_pending or reply.role != "assistant" or not reply.tool_calls:
        refuse(MISMATCH, "the pending journal's last record does not continue this checkpoint")
    if record.totals.steps < checkpoint.totals.steps:
        refuse(MISMATCH, "the pending journal's last record counts fewer steps than the checkpoint")
    return checkpoint.model_copy(
        update={
            "messages": [*checkpoint.messages, reply],
            "totals": record.totals,
            "warnings": list(record.warnings),
            "timing": checkpoint.timing.model_copy(update={"elapsed_seconds": record.elapsed_seconds}),
            "resume": checkpoint.resume.model_copy(update={"tool_batch_pending": True}),
        }
    )


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
