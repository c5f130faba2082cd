"""The trajectory file: one versioned JSON document per run, each turn also in its pending journal.

The pydantic models here are the only definition of the format (see docs/trajectory.md).
`TRAJECTORY_FORMAT`/`FORMAT_VERSION` identify it; `resume` holds the additive, versioned
metadata that `--resume` validates (canonical cwd, instruction mode and digest, tool-set digest).
A file without `resume` metadata (or with an unknown `resume.version`) is a log, not a checkpoint.

Loading and atomic saving live in `tinyagent.trajectory.files`; resume validation in `tinyagent.resume`.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from tinyagent.types import Message, ToolSpec

TRAJECTORY_FORMAT: Final = "tinyagent-trajectory"
FORMAT_VERSION = 1
RESUME_VERSION = 1


class ExitStatus(StrEnum):
    """How a run ended. `Running` marks a checkpoint saved mid-run (after a completed turn)."""

    RUNNING = "Running"
    SUBMITTED = "Submitted"
    STEP_LIMIT = "StepLimit"
    COST_LIMIT = "CostLimit"
    TIME_LIMIT = "TimeLimit"
    INTERRUPTED = "Interrupted"
    PROVIDER_ERROR = "ProviderError"
    TOOL_ERROR = "ToolError"
    SAVE_ERROR = "SaveError"
    REPEATED_FORMAT_ERROR = "RepeatedFormatError"  # 3 consecutive replies without a tool call


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Totals(_Model):
    """Cumulative accounting. `steps` counts model requests (each call to the provider)."""

    steps: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float = 0.0
    cost_known: bool = True  # False once any step used a model with no known price
    summary_requests: int = 0  # compaction requests (their tokens and cost are in the totals above)


class Limits(_Model):
    """Ceilings in force for the run that wrote the file. 0 means no limit."""

    step_limit: int = 0
    cost_limit: float = 0.0
    time_limit: float = 0.0
    tool_timeout: float = 60.0


class Compaction(_Model):
    """The compacted model view: system, task + `summary`, then `messages[through:]` (see loop/compaction)."""

    version: Literal[1] = 1
    summary: str
    through: int  # index of the first message kept verbatim: always an assistant turn
    count: int = 1  # compactions of this run so far


class JournalRef(_Model):
    """The run's pending journal (`tinyagent.trajectory.journal`): a file next to the trajectory."""

    name: str  # file name in the trajectory's directory (`<trajectory name>.pending`)
    run: str  # random id carried by every record; a journal of another run is refused


class ResumeMetadata(_Model):
    """What `--resume` needs to decide whether continuing is safe. Never holds credentials or env."""

    version: int = RESUME_VERSION
    cwd: str  # canonical (realpath) working directory of the run
    agents_md: Literal["auto", "off"]
    instructions_sha256: str  # digest of the effective system prompt incl. AGENTS.md text
    toolset_sha256: str  # digest of the canonical JSON of the offered tool specs
    compaction: Compaction | None = None  # the compacted model view, when the run was compacted
    tool_batch_pending: bool = False  # saved after a reply, before its tools ran: their outcome is unknown
    journal: JournalRef | None = None  # where a reply saved before its tools ran may be (not in this file)
    memory_context: str | None = None  # what --memory found before the first request (ends the prompt)


class ResumeProvenance(_Model):
    """One earlier invocation this run continues from (newest last)."""

    source_path: str
    source_sha256: str
    previous_status: ExitStatus
    previous_submission: str | None = None
    previous_detail: str | None = None  # the earlier run's exit_detail (one line, no transcript content)
    boundary_messages: int  # number of messages restored
    boundary_steps: int
    resumed_at: str  # RFC 3339 UTC

    @classmethod
    def continuing(
        cls, checkpoint: Trajectory, source_path: str, source_sha256: str, resumed_at: str
    ) -> ResumeProvenance:
        """The entry of a run that continues from `checkpoint`: its source, ending and restored boundary."""
        return cls(
            source_path=source_path,
            source_sha256=source_sha256,
            previous_status=checkpoint.exit_status,
            previous_submission=checkpoint.submission,
            previous_detail=checkpoint.exit_detail,
            boundary_messages=len(checkpoint.messages),
            boundary_steps=checkpoint.totals.steps,
            resumed_at=resumed_at,
        )


class Timing(_Model):
    started_at: str  # RFC 3339 UTC, this invocation
    ended_at: str | None = None
    elapsed_seconds: float = 0.0  # this invocation only (wall time restarts on resume)


class Trajectory(_Model):
    """A whole run: task, model, conversation, accounting, outcome and resume metadata."""

    format: Literal["tinyagent-trajectory"] = TRAJECTORY_FORMAT
    format_version: int = FORMAT_VERSION
    tinyagent_version: str
    task: str
    provider: str
    model: str
    system_prompt: str
    messages: list[Message]
    tools: list[ToolSpec]
    totals: Totals = Field(default_factory=Totals)
    limits: Limits = Field(default_factory=Limits)
    exit_status: ExitStatus = ExitStatus.RUNNING
    exit_detail: str | None = None  # one-line reason for non-success endings (no transcript content)
    submission: str | None = None
    timing: Timing
    warnings: list[str] = Field(default_factory=list)
    resume: ResumeMetadata | None = None
    resumed_from: list[ResumeProvenance] = Field(default_factory=list)
