"""Pure validation of a checkpoint's bytes: envelope, schema, eligibility, counters and tool digest.

`validate_checkpoint(raw)` takes the checkpoint's bytes and returns the parsed `Trajectory` or raises
`ResumeRefused`; it touches no filesystem, network or environment.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from tinyagent.resume.history import check_history
from tinyagent.resume.read import MAX_CHECKPOINT_BYTES, oversized_advice
from tinyagent.resume.refusal import refuse, shown
from tinyagent.resume.schema_errors import first_error_location, first_error_type
from tinyagent.resume.strict_json import parse_strict_json
from tinyagent.trajectory.models import (
    FORMAT_VERSION,
    RESUME_VERSION,
    TRAJECTORY_FORMAT,
    ExitStatus,
    Trajectory,
)

MAX_COUNTER = 2**53
"""Upper bound of every integer counter (the largest integer JSON consumers represent exactly)."""

MAX_COST_USD = 1e9
"""Upper bound of a plausible cumulative cost; anything larger is treated as corruption."""


PENDING_POLICIES = ("refuse", "mark-interrupted")
"""What `--resume-pending` may ask for a checkpoint saved before its last tool batch ran."""


def validate_checkpoint(raw: bytes, *, pending: str = "refuse", journal: bytes | None = None) -> Trajectory:
    """Parse and validate a checkpoint's bytes; return the trajectory or raise `ResumeRefused`.

    Pure: no filesystem, network or environment access. Checks, in order: non-empty, size bound,
    UTF-8, strict JSON (no NaN/Infinity, no duplicate keys), format and format version, resume
    metadata presence and version, schema, eligibility (not a finished run), then the pending journal's
    bytes `journal` when the checkpoint names one (`tinyagent.resume.journal`), then counters, history
    structure, tool-call/result pairing, the compacted view (whole turns) and the tool-set digest.
    A checkpoint whose last tool batch was pending is refused ("pending tool calls") unless `pending`
    is "mark-interrupted".
    """
    trajectory = parse_checkpoint(raw)
    assert trajectory.resume is not None  # guaranteed by _check_envelope
    if journal is not None and trajectory.resume.journal is not None:
        from tinyagent.resume.journal import fold_journal

        trajectory, _notes = fold_journal(trajectory, journal)
    return check_checkpoint(trajectory, pending=pending)


def parse_checkpoint(raw: bytes) -> Trajectory:
    """The first half of `validate_checkpoint`: bytes, envelope, schema and eligibility."""
    text = _decode(raw)
    _check_envelope(parse_strict_json(text))
    trajectory = _parse_schema(text)
    _check_eligible(trajectory)
    return trajectory


def check_checkpoint(trajectory: Trajectory, *, pending: str = "refuse") -> Trajectory:
    """The second half of `validate_checkpoint` (after any journal was folded in): counters, history,
    the pending refusal, compaction and the tool digest. Returns `trajectory`."""
    _check_counters(trajectory)
    assert trajectory.resume is not None  # guaranteed by _check_envelope
    unanswered = check_history(
        trajectory.messages,
        system_prompt=trajectory.system_prompt,
        task=trajectory.task,
        pending_tail=trajectory.resume.tool_batch_pending,
    )
    if unanswered and pending != "mark-interrupted":
        refuse(
            "pending tool calls",
            f"the run was killed after the model asked for {len(unanswered)} tool call(s) and before their "
            "results were saved, so their outcome is unknown; inspect the workspace, then pass "
            "--resume-pending=mark-interrupted to record them as interrupted (not re-run) and continue",
        )
    _check_compaction(trajectory)
    _check_tool_digest(trajectory)
    return trajectory


def _check_compaction(trajectory: Trajectory) -> None:
    """A compacted view must keep whole turns: it restarts at an assistant message inside the history."""
    assert trajectory.resume is not None
    compaction = trajectory.resume.compaction
    if compaction is None:
        return
    messages = trajectory.messages
    if not 2 < compaction.through < len(messages) or messages[compaction.through].role != "assistant":
        refuse(
            "compaction",
            "resume.compaction.through does not point at an assistant turn of the history; the compacted "
            "view cannot be restored, the file was edited or damaged",
        )
    if not compaction.summary.strip() or compaction.count < 1:
        refuse("compaction", "resume.compaction has an empty summary or count; the file is damaged")


def _decode(raw: bytes) -> str:
    if not raw:
        refuse("empty file", "the checkpoint is empty (0 bytes); resume from an earlier saved trajectory")
    if len(raw) > MAX_CHECKPOINT_BYTES:
        refuse("oversized file", oversized_advice())
    try:
        return raw.decode("utf-8", errors="strict")
    except UnicodeDecodeError as exc:
        refuse(
            "not UTF-8",
            f"the checkpoint is not valid UTF-8 (byte offset {exc.start}); it is damaged, "
            "resume from an intact trajectory",
        )


def _parse_schema(text: str) -> Trajectory:
    try:
        return Trajectory.model_validate_json(text, strict=True)
    except ValueError as exc:  # pydantic.ValidationError is a ValueError
        if first_error_type(exc) == "json_invalid":  # e.g. an unpaired surrogate escape in a string
            refuse(
                "malformed JSON",
                "the checkpoint contains a string the trajectory parser rejects (such as an unpaired "
                "surrogate escape); it was not written by this tinyagent",
            )
        refuse("schema-invalid", f"{first_error_location(exc)}; the file was not written by this tinyagent")


def _check_envelope(document: Any) -> None:
    """Format identity, versions and resume metadata, checked before the full schema."""
    if not isinstance(document, dict):
        refuse("unsupported format", "the file is not a tinyagent trajectory (top level is not an object)")
    if document.get("format") != TRAJECTORY_FORMAT:
        refuse(
            "unsupported format",
            "the file is not a tinyagent trajectory "
            f'(missing or wrong "format"; expected {TRAJECTORY_FORMAT})',
        )
    _check_version(
        document.get("format_version"),
        FORMAT_VERSION,
        "format version",
        missing="the trajectory has no integer format_version; cannot resume",
        named="trajectory format_version",
    )
    resume = document.get("resume")
    if resume is None:
        refuse(
            "missing resume metadata",
            "the trajectory has no resume metadata (it predates resume support or is a log); "
            "it stays readable as a log, start a fresh task to continue the work",
        )
    if not isinstance(resume, dict):
        refuse("schema-invalid", "resume metadata is not an object; the file was not written by tinyagent")
    _check_version(
        resume.get("version"),
        RESUME_VERSION,
        "resume version",
        missing="resume metadata has no integer version; cannot resume it",
        named="resume metadata version",
    )


def _check_version(version: Any, supported: int, which: str, *, missing: str, named: str) -> None:
    """Refuse a version other than the integer `supported` (`missing`: the advice for a non-integer)."""
    if type(version) is not int:
        refuse(f"unsupported {which}", missing)
    if version != supported:
        refuse(
            f"unsupported {which}",
            f"{named} {shown(str(version), 20)} is not supported "
            f"(this tinyagent reads {supported}); use the tinyagent version that wrote it",
        )


def _check_eligible(trajectory: Trajectory) -> None:
    if trajectory.exit_status is ExitStatus.SUBMITTED:
        refuse(
            "finished run",
            "the checkpoint ended with Submitted (the task was completed); a finished run cannot be "
            "extended, start a new task",
        )
    if trajectory.submission is not None:
        refuse(
            "invalid counters",
            f"the checkpoint has a submission but status {trajectory.exit_status.value}; it is inconsistent",
        )


def _check_counters(trajectory: Trajectory) -> None:
    _check_totals(trajectory)
    _check_limits_and_timing(trajectory)
    _check_steps_against_history(trajectory)
    _check_provenance(trajectory)


def _check_totals(trajectory: Trajectory) -> None:
    totals = trajectory.totals
    for name in ("steps", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"):
        value = getattr(totals, name)
        if value < 0 or value > MAX_COUNTER:
            refuse("invalid counters", f"totals.{name} is out of range (0..2^53); the file is damaged")
    if not math.isfinite(totals.cost_usd) or totals.cost_usd < 0 or totals.cost_usd > MAX_COST_USD:
        refuse("invalid counters", "totals.cost_usd is negative, non-finite or implausibly large")


def _check_limits_and_timing(trajectory: Trajectory) -> None:
    limits = trajectory.limits
    if limits.step_limit < 0 or limits.step_limit > MAX_COUNTER:
        refuse("invalid counters", "limits.step_limit is out of range")
    for name in ("cost_limit", "time_limit", "tool_timeout"):
        value = getattr(limits, name)
        if not math.isfinite(value) or value < 0:
            refuse("invalid counters", f"limits.{name} is negative or non-finite")
    elapsed = trajectory.timing.elapsed_seconds
    if not math.isfinite(elapsed) or elapsed < 0:
        refuse("invalid counters", "timing.elapsed_seconds is negative or non-finite")


def _check_steps_against_history(trajectory: Trajectory) -> None:
    totals = trajectory.totals
    assistant_turns = sum(1 for message in trajectory.messages if message.role == "assistant")
    if totals.steps < assistant_turns:
        refuse(
            "invalid counters",
            f"totals.steps ({totals.steps}) is smaller than the number of assistant messages "
            f"({assistant_turns}); the file is inconsistent",
        )
    if totals.steps == 0 and (
        totals.input_tokens or totals.output_tokens or totals.cache_read_tokens or totals.cache_write_tokens
    ):
        refuse("invalid counters", "token totals are nonzero although no model step was recorded")


def _check_provenance(trajectory: Trajectory) -> None:
    steps, message_count = trajectory.totals.steps, len(trajectory.messages)
    previous_steps = 0
    for index, provenance in enumerate(trajectory.resumed_from):
        if not 0 <= provenance.boundary_steps <= steps or provenance.boundary_steps < previous_steps:
            refuse("invalid counters", f"resumed_from.{index}.boundary_steps is inconsistent with totals")
        if not 0 <= provenance.boundary_messages <= message_count:
            refuse("invalid counters", f"resumed_from.{index}.boundary_messages exceeds the message count")
        previous_steps = provenance.boundary_steps


def _check_tool_digest(trajectory: Trajectory) -> None:
    assert trajectory.resume is not None  # guaranteed by _check_envelope
    if toolset_digest(trajectory.tools) != trajectory.resume.toolset_sha256:
        refuse(
            "tool set changed",
            "the recorded tool list does not match its recorded digest; the file was edited or damaged",
        )


def toolset_digest(tools: Sequence[Any]) -> str:
    """SHA-256 of the canonical JSON of a tool list (delegates to the tools module's definition)."""
    from tinyagent.tools.specs import toolset_sha256

    return toolset_sha256(list(tools))
