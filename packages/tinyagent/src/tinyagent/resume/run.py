"""`tinyagent --resume`: continue an unfinished run from a validated trajectory checkpoint.

Two layers:

- `validate_checkpoint(raw)` is pure: it takes the checkpoint's bytes and returns the parsed
  `Trajectory` or raises `ResumeRefused`. It checks the file itself (encoding, JSON, format and
  resume versions, schema, counters, history structure, tool-call/result pairing, compaction state).
- `run_resume(args)` checks the invocation against the checkpoint (task/model/provider conflicts,
  working directory, output path, instructions and tool set), writes the validated starting state to
  the new destination, then hands the restored trajectory to the ordinary agent loop.

Every refusal happens before any provider is constructed or any tool runs. A refusal prints exactly
one line, `tinyagent: cannot resume: <category>: <what to do>`, and exits with `EXIT_REFUSED` (2).
No refusal message ever contains transcript content (messages, task, tool output).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from tinyagent.trajectory.models import (
    FORMAT_VERSION,
    RESUME_VERSION,
    TRAJECTORY_FORMAT,
    ExitStatus,
    Trajectory,
)
from tinyagent.types import Message

if TYPE_CHECKING:
    from tinyagent.config import Settings

EXIT_REFUSED = 2
"""Exit code of every refusal (the same code as any other usage error)."""

MAX_CHECKPOINT_BYTES = 64 * 1024 * 1024
"""Largest checkpoint `--resume` reads (64 MiB); larger files are refused unread."""

MAX_COUNTER = 2**53
"""Upper bound of every integer counter (the largest integer JSON consumers represent exactly)."""

MAX_COST_USD = 1e9
"""Upper bound of a plausible cumulative cost; anything larger is treated as corruption."""


class ResumeRefused(Exception):
    """The checkpoint or the invocation is not eligible for resume.

    `category` names the failed check (stable, documented in docs/resume.md); `advice` says what to
    do. Neither ever contains transcript content.
    """

    def __init__(self, category: str, advice: str) -> None:
        super().__init__(f"{category}: {advice}")
        self.category = category
        self.advice = advice

    def line(self) -> str:
        """The single stderr line printed for this refusal (control characters shown as '?')."""
        text = f"tinyagent: cannot resume: {self.category}: {self.advice}"
        return "".join("?" if (ord(char) < 32 or ord(char) == 127) else char for char in text)


def _refuse(category: str, advice: str) -> NoReturn:
    raise ResumeRefused(category, advice)


# --------------------------------------------------------------------------------------------------
# Reading the file (the only I/O of the file checks)


def read_checkpoint(path: Path) -> bytes:
    """Read a checkpoint's bytes, refusing missing, unreadable, non-regular, empty and oversized files.

    The file is opened read-only and never written; at most `MAX_CHECKPOINT_BYTES + 1` bytes are read.
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        _refuse("missing file", "the checkpoint given to --resume does not exist; check the path")
    except IsADirectoryError:
        _refuse("unreadable file", "the path given to --resume is a directory; pass the trajectory file")
    except OSError as exc:
        _refuse("unreadable file", f"cannot open the checkpoint ({_os_reason(exc)}); check its permissions")
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            _refuse("unreadable file", "the path given to --resume is a directory; pass the trajectory file")
        if not stat.S_ISREG(info.st_mode):
            _refuse("unreadable file", "the checkpoint is not a regular file; pass a saved trajectory file")
        if info.st_size > MAX_CHECKPOINT_BYTES:
            _refuse("oversized file", _oversized_advice())
        chunks: list[bytes] = []
        remaining = MAX_CHECKPOINT_BYTES + 1
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
    except OSError as exc:
        _refuse("unreadable file", f"cannot read the checkpoint ({_os_reason(exc)}); check the file")
    finally:
        os.close(fd)
    raw = b"".join(chunks)
    if len(raw) > MAX_CHECKPOINT_BYTES:
        _refuse("oversized file", _oversized_advice())
    return raw


def _oversized_advice() -> str:
    return (
        f"the checkpoint is larger than {MAX_CHECKPOINT_BYTES // (1024 * 1024)} MiB, the resume bound; "
        "start a fresh task instead"
    )


def _os_reason(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


# --------------------------------------------------------------------------------------------------
# Pure validation of the file's content


def validate_checkpoint(raw: bytes) -> Trajectory:
    """Parse and validate a checkpoint's bytes; return the trajectory or raise `ResumeRefused`.

    Pure: no filesystem, network or environment access. Checks, in order: non-empty, size bound,
    UTF-8, strict JSON (no NaN/Infinity, no duplicate keys), format and format version, resume
    metadata presence and version, compaction state, schema, eligibility (not a finished run),
    counters, history structure, tool-call/result pairing and the recorded tool-set digest.
    """
    if not raw:
        _refuse("empty file", "the checkpoint is empty (0 bytes); resume from an earlier saved trajectory")
    if len(raw) > MAX_CHECKPOINT_BYTES:
        _refuse("oversized file", _oversized_advice())
    try:
        text = raw.decode("utf-8", errors="strict")
    except UnicodeDecodeError as exc:
        _refuse(
            "not UTF-8",
            f"the checkpoint is not valid UTF-8 (byte offset {exc.start}); it is damaged, "
            "resume from an intact trajectory",
        )
    document = _parse_strict_json(text)
    _check_envelope(document)
    try:
        trajectory = Trajectory.model_validate_json(text, strict=True)
    except ValueError as exc:  # pydantic.ValidationError is a ValueError
        if _first_error_type(exc) == "json_invalid":  # e.g. an unpaired surrogate escape in a string
            _refuse(
                "malformed JSON",
                "the checkpoint contains a string the trajectory parser rejects (such as an unpaired "
                "surrogate escape); it was not written by this tinyagent",
            )
        _refuse("schema-invalid", f"{_first_error_location(exc)}; the file was not written by this tinyagent")
    _check_eligible(trajectory)
    _check_counters(trajectory)
    check_history(trajectory.messages, system_prompt=trajectory.system_prompt, task=trajectory.task)
    _check_tool_digest(trajectory)
    return trajectory


class _DuplicateKey(ValueError):
    pass


class _NonFinite(ValueError):
    pass


def _reject_constant(name: str) -> NoReturn:
    raise _NonFinite(f"non-finite number {name}")


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise _DuplicateKey("duplicate key")
    return obj


def _parse_strict_json(text: str) -> Any:
    try:
        return json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_no_duplicate_keys)
    except _DuplicateKey:
        _refuse("malformed JSON", "an object in the checkpoint repeats a key; the file is damaged")
    except json.JSONDecodeError as exc:
        _refuse(
            "malformed JSON",
            f"the checkpoint is not valid JSON (line {exc.lineno}, column {exc.colno}); it is damaged or "
            "truncated, resume from an intact trajectory",
        )
    except _NonFinite:
        _refuse("malformed JSON", "the checkpoint contains NaN or Infinity, which JSON does not allow")
    except ValueError:  # e.g. an integer literal beyond the interpreter's digit limit
        _refuse("malformed JSON", "the checkpoint contains a number that cannot be parsed; it is damaged")
    except RecursionError:
        _refuse("malformed JSON", "the checkpoint nests too deeply to be a trajectory; it is damaged")


def _check_envelope(document: Any) -> None:
    """Format identity, versions and resume metadata, checked before the full schema."""
    if not isinstance(document, dict):
        _refuse("unsupported format", "the file is not a tinyagent trajectory (top level is not an object)")
    if document.get("format") != TRAJECTORY_FORMAT:
        _refuse(
            "unsupported format",
            "the file is not a tinyagent trajectory "
            f'(missing or wrong "format"; expected {TRAJECTORY_FORMAT})',
        )
    version = document.get("format_version")
    if type(version) is not int:
        _refuse("unsupported format version", "the trajectory has no integer format_version; cannot resume")
    if version != FORMAT_VERSION:
        _refuse(
            "unsupported format version",
            f"trajectory format_version {_shown(str(version), 20)} is not supported "
            f"(this tinyagent reads {FORMAT_VERSION}); use the tinyagent version that wrote it",
        )
    resume = document.get("resume")
    if resume is None:
        _refuse(
            "missing resume metadata",
            "the trajectory has no resume metadata (it predates resume support or is a log); "
            "it stays readable as a log, start a fresh task to continue the work",
        )
    if not isinstance(resume, dict):
        _refuse("schema-invalid", "resume metadata is not an object; the file was not written by tinyagent")
    resume_version = resume.get("version")
    if type(resume_version) is not int:
        _refuse("unsupported resume version", "resume metadata has no integer version; cannot resume it")
    if resume_version != RESUME_VERSION:
        _refuse(
            "unsupported resume version",
            f"resume metadata version {_shown(str(resume_version), 20)} is not supported "
            f"(this tinyagent reads {RESUME_VERSION}); use the tinyagent version that wrote it",
        )
    if resume.get("compaction") is not None:
        _refuse(
            "compaction",
            "the checkpoint carries compacted-context state, which this tinyagent cannot restore; "
            "start a fresh task (nothing was sent to the model)",
        )


_KNOWN_FIELDS: frozenset[str] | None = None


def _known_field_names() -> frozenset[str]:
    """Every field name of the trajectory models: safe to print (never transcript content)."""
    global _KNOWN_FIELDS
    if _KNOWN_FIELDS is None:
        from pydantic import BaseModel

        names: set[str] = set()
        pending: list[type[BaseModel]] = [Trajectory]
        seen: set[type[BaseModel]] = set()
        while pending:
            model = pending.pop()
            if model in seen:
                continue
            seen.add(model)
            for name, field in model.model_fields.items():
                names.add(name)
                for candidate in _model_types(field.annotation):
                    pending.append(candidate)
        _KNOWN_FIELDS = frozenset(names)
    return _KNOWN_FIELDS


def _model_types(annotation: Any) -> list[Any]:
    from typing import get_args

    from pydantic import BaseModel

    found: list[Any] = []
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        found.append(annotation)
    for arg in get_args(annotation):
        found.extend(_model_types(arg))
    return found


def _first_error_type(exc: Exception) -> str | None:
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return None
    items = errors(include_url=False, include_input=False, include_context=False)
    return str(items[0].get("type")) if items else None


def _first_error_location(exc: Exception) -> str:
    """Describe where schema validation failed using field names and indexes only."""
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return "the trajectory does not match the schema"
    items = errors(include_url=False, include_input=False, include_context=False)
    if not items:
        return "the trajectory does not match the schema"
    known = _known_field_names()
    parts: list[str] = []
    for element in items[0].get("loc", ()):
        if isinstance(element, int) or element in known:
            parts.append(str(element))
        else:
            parts.append("<unknown field>")
    where = ".".join(parts) or "top level"
    kind = str(items[0].get("type", "invalid"))
    more = f" (and {len(items) - 1} more)" if len(items) > 1 else ""
    return f"field {where} is invalid ({kind}){more}"


def _check_eligible(trajectory: Trajectory) -> None:
    if trajectory.exit_status is ExitStatus.SUBMITTED:
        _refuse(
            "finished run",
            "the checkpoint ended with Submitted (the task was completed); a finished run cannot be "
            "extended, start a new task",
        )
    if trajectory.submission is not None:
        _refuse(
            "invalid counters",
            f"the checkpoint has a submission but status {trajectory.exit_status.value}; it is inconsistent",
        )


def _check_counters(trajectory: Trajectory) -> None:
    totals = trajectory.totals
    for name in ("steps", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"):
        value = getattr(totals, name)
        if value < 0 or value > MAX_COUNTER:
            _refuse("invalid counters", f"totals.{name} is out of range (0..2^53); the file is damaged")
    if not math.isfinite(totals.cost_usd) or totals.cost_usd < 0 or totals.cost_usd > MAX_COST_USD:
        _refuse("invalid counters", "totals.cost_usd is negative, non-finite or implausibly large")
    limits = trajectory.limits
    if limits.step_limit < 0 or limits.step_limit > MAX_COUNTER:
        _refuse("invalid counters", "limits.step_limit is out of range")
    for name in ("cost_limit", "time_limit", "tool_timeout"):
        value = getattr(limits, name)
        if not math.isfinite(value) or value < 0:
            _refuse("invalid counters", f"limits.{name} is negative or non-finite")
    elapsed = trajectory.timing.elapsed_seconds
    if not math.isfinite(elapsed) or elapsed < 0:
        _refuse("invalid counters", "timing.elapsed_seconds is negative or non-finite")
    assistant_turns = sum(1 for message in trajectory.messages if message.role == "assistant")
    if totals.steps < assistant_turns:
        _refuse(
            "invalid counters",
            f"totals.steps ({totals.steps}) is smaller than the number of assistant messages "
            f"({assistant_turns}); the file is inconsistent",
        )
    if totals.steps == 0 and (
        totals.input_tokens or totals.output_tokens or totals.cache_read_tokens or totals.cache_write_tokens
    ):
        _refuse("invalid counters", "token totals are nonzero although no model step was recorded")
    previous_steps = 0
    for index, provenance in enumerate(trajectory.resumed_from):
        if not 0 <= provenance.boundary_steps <= totals.steps or provenance.boundary_steps < previous_steps:
            _refuse("invalid counters", f"resumed_from.{index}.boundary_steps is inconsistent with totals")
        if not 0 <= provenance.boundary_messages <= len(trajectory.messages):
            _refuse("invalid counters", f"resumed_from.{index}.boundary_messages exceeds the message count")
        previous_steps = provenance.boundary_steps


def _check_tool_digest(trajectory: Trajectory) -> None:
    assert trajectory.resume is not None  # guaranteed by _check_envelope
    if toolset_digest(trajectory.tools) != trajectory.resume.toolset_sha256:
        _refuse(
            "tool set changed",
            "the recorded tool list does not match its recorded digest; the file was edited or damaged",
        )


def toolset_digest(tools: Sequence[Any]) -> str:
    """SHA-256 of the canonical JSON of a tool list (delegates to the tools module's definition)."""
    from tinyagent.tools.toolbox import toolset_sha256

    return toolset_sha256(list(tools))


# --------------------------------------------------------------------------------------------------
# History structure and tool-call/result pairing


def check_history(messages: Sequence[Message], *, system_prompt: str, task: str) -> None:
    """Refuse a history that is not a well-formed conversation ending at a model-query boundary.

    Rules: the first message is the system prompt, the second the task as a user message; system
    messages appear nowhere else; each assistant turn's tool calls have non-empty ids, unique within
    that turn, and are answered by exactly one tool result each, in call order, immediately after the
    turn (ids may repeat across different turns); a tool result outside such a batch is orphaned; a
    user message only appears at a turn boundary; the history ends at a boundary, never inside a
    tool batch.
    """
    if len(messages) < 2:
        _refuse("history", "the checkpoint has no system prompt and task messages; it is not resumable")
    first, second = messages[0], messages[1]
    if first.role != "system" or first.content != system_prompt:
        _refuse("history", "message 0 is not the recorded system prompt; the file is inconsistent")
    if second.role != "user" or second.content != task:
        _refuse("history", "message 1 is not the recorded task; the file is inconsistent")
    pending: list[tuple[str, str]] = []  # unanswered (id, name) of the current assistant turn, in order
    turn_ids: set[str] = set()
    answered: set[str] = set()
    turn_index = -1
    for index, message in enumerate(messages[2:], start=2):
        if message.role == "system":
            _refuse("history", f"message {index} is a system message after the start; unsupported structure")
        if message.role != "tool" and message.tool_call_id is not None:
            _refuse("history", f"message {index} ({message.role}) carries a tool_call_id; unsupported")
        if message.role == "tool":
            _check_tool_result(message, index, pending, turn_ids, answered, turn_index)
            pending.pop(0)
            continue
        if pending:
            _refuse(
                "tool results",
                f"the assistant turn at message {turn_index} has {len(pending)} tool call(s) without a "
                f"result before message {index}; the file was edited or damaged, resume from an intact "
                "trajectory",
            )
        if message.role == "user":
            if message.tool_calls or message.content is None:
                _refuse("history", f"message {index} is a user message without text or with tool calls")
            turn_ids = set()
            answered = set()
            continue
        # assistant
        turn_index = index
        turn_ids = set()
        answered = set()
        pending = []
        for call in message.tool_calls:
            if not call.id:
                _refuse("tool results", f"a tool call in message {index} has an empty id")
            if not call.name:
                _refuse("history", f"a tool call in message {index} has an empty tool name")
            if call.id in turn_ids:
                _refuse(
                    "tool results",
                    f"two tool calls in message {index} share one id; their results cannot be matched",
                )
            turn_ids.add(call.id)
            pending.append((call.id, call.name))
    if pending:
        _refuse(
            "tool results",
            f"the last assistant turn (message {turn_index}) has {len(pending)} tool call(s) without a "
            "result; the run stopped inside a tool batch and its effects are unrecorded, "
            "start a fresh task after inspecting the workspace",
        )


def _check_tool_result(
    message: Message,
    index: int,
    pending: list[tuple[str, str]],
    turn_ids: set[str],
    answered: set[str],
    turn_index: int,
) -> None:
    call_id = message.tool_call_id
    if message.content is None:
        _refuse("history", f"tool result at message {index} has no content")
    if message.tool_calls:
        _refuse("history", f"tool result at message {index} carries tool calls")
    if not call_id:
        _refuse("tool results", f"tool result at message {index} has no tool_call_id")
    if call_id in answered:
        _refuse(
            "tool results",
            f"tool result at message {index} duplicates an earlier result of the same assistant turn",
        )
    if call_id not in turn_ids or not pending:
        _refuse(
            "tool results",
            f"tool result at message {index} is orphaned: no tool call with its id in the assistant turn "
            "it follows",
        )
    expected_id, expected_name = pending[0]
    if call_id != expected_id:
        _refuse(
            "tool results",
            f"tool results of the assistant turn at message {turn_index} are out of call order "
            f"(message {index}); the file was edited or damaged",
        )
    if message.name is not None and message.name != expected_name:
        _refuse("tool results", f"tool result at message {index} names a different tool than its call")
    answered.add(call_id)


def file_sha256(raw: bytes) -> str:
    """Hex SHA-256 of the checkpoint bytes, recorded as resume provenance."""
    return hashlib.sha256(raw).hexdigest()


# --------------------------------------------------------------------------------------------------
# Checking the invocation against the checkpoint


@dataclass(frozen=True)
class ResumePlan:
    """Everything `run_resume` needs once every check passed (nothing has been written yet)."""

    source_path: str  # canonical path of the checkpoint (provenance)
    source_sha256: str
    checkpoint: Trajectory  # validated, exactly as read
    settings: Settings
    output: Path


def prepare_resume(args: Any, environ: Mapping[str, str] | None = None) -> ResumePlan:
    """Check the invocation and the checkpoint; return the plan or raise `ResumeRefused`.

    Reads the checkpoint and the current configuration and instructions; writes nothing, constructs
    no provider and runs no tool.
    """
    if getattr(args, "task", None) is not None:
        _refuse(
            "task conflict",
            "--resume continues the task saved in the checkpoint; drop -t/--task (to start a new task, "
            "run without --resume)",
        )
    output = getattr(args, "output", None)
    if not output:
        _refuse(
            "missing output",
            "pass -o NEW.json: a resumed run is written to a new file and the checkpoint is never modified",
        )
    source = Path(os.fspath(args.resume)).expanduser()
    raw = read_checkpoint(source)
    checkpoint = validate_checkpoint(raw)
    assert checkpoint.resume is not None  # guaranteed by validate_checkpoint
    cwd = _check_cwd(getattr(args, "cwd", None), checkpoint.resume.cwd)
    _check_model_and_provider(args, checkpoint)
    output_path = _check_output(source, Path(os.fspath(output)).expanduser())
    settings = _resolve_settings(args, checkpoint, cwd, environ)
    _check_instructions(args, checkpoint, settings)
    _check_toolset(checkpoint)
    return ResumePlan(
        source_path=os.path.realpath(source),
        source_sha256=file_sha256(raw),
        checkpoint=checkpoint,
        settings=settings,
        output=output_path,
    )


def _shown(value: str, limit: int = 200) -> str:
    """A value read from the checkpoint, shortened for a diagnostic line."""
    return value if len(value) <= limit else value[: limit - 3] + "..."


def _check_cwd(given: str | None, recorded_cwd: str) -> str:
    recorded = _shown(recorded_cwd)
    if not given:
        _refuse(
            "missing --cwd",
            f"pass --cwd with the run's working directory ({recorded}) so the run continues where it started",
        )
    resolved = os.path.realpath(os.path.expanduser(os.fspath(given)))
    if not os.path.isdir(resolved):
        _refuse("cwd mismatch", f"--cwd {given} is not an existing directory; the run was in {recorded}")
    if resolved != recorded_cwd:
        _refuse(
            "cwd mismatch",
            f"--cwd resolves to {resolved} but the checkpoint was recorded in {recorded}; "
            f"rerun with --cwd {recorded}",
        )
    return resolved


def _check_model_and_provider(args: Any, checkpoint: Trajectory) -> None:
    model = getattr(args, "model", None)
    if model is not None and model != checkpoint.model:
        _refuse(
            "model conflict",
            f"the checkpoint was made with model {_shown(checkpoint.model)} but -m asks for {model}; "
            "drop -m (the saved model is used) or start a fresh task to switch models",
        )
    provider = getattr(args, "provider", None)
    if provider is not None and provider != checkpoint.provider:
        _refuse(
            "provider conflict",
            f"the checkpoint was made with provider {_shown(checkpoint.provider)} but --provider asks for "
            f"{provider}; drop --provider or start a fresh task to switch providers",
        )


def _check_output(source: Path, output: Path) -> Path:
    try:
        source_info = os.stat(source)
    except OSError as exc:
        _refuse("unreadable file", f"cannot stat the checkpoint ({_os_reason(exc)})")
    try:
        output_link = os.lstat(output)
    except FileNotFoundError:
        output_link = None
    except OSError as exc:
        _refuse("output path", f"cannot inspect -o {output} ({_os_reason(exc)}); choose another path")
    same_target = os.path.realpath(output) == os.path.realpath(source)
    if output_link is not None:
        try:
            output_info: os.stat_result | None = os.stat(output)
        except OSError:
            output_info = None  # a dangling symlink still occupies the name
        if same_target or (
            output_info is not None
            and (output_info.st_dev, output_info.st_ino) == (source_info.st_dev, source_info.st_ino)
        ):
            _refuse(
                "output is the checkpoint",
                f"-o {output} is the checkpoint itself (same file, symlink or hard link); the checkpoint "
                "is never modified, choose a new -o path",
            )
        _refuse("output exists", f"-o {output} already exists; resume never overwrites, choose a new path")
    if same_target:
        _refuse(
            "output is the checkpoint",
            f"-o {output} resolves to the checkpoint; choose a new -o path",
        )
    return output


def _resolve_settings(
    args: Any, checkpoint: Trajectory, cwd: str, environ: Mapping[str, str] | None
) -> Settings:
    """Current settings with the saved provider and model (they win over env, config and defaults)."""
    from tinyagent.config import ConfigError, resolve_settings

    assert checkpoint.resume is not None
    effective = argparse.Namespace(**vars(args))
    effective.provider = checkpoint.provider
    effective.model = checkpoint.model
    effective.cwd = cwd
    if getattr(args, "agents_md", None) is None:
        effective.agents_md = checkpoint.resume.agents_md
    try:
        return resolve_settings(effective, environ)
    except ConfigError as exc:
        _refuse("configuration", f"{exc}; fix the configuration and retry (nothing was sent)")


def _check_instructions(args: Any, checkpoint: Trajectory, settings: Settings) -> None:
    from tinyagent.prompts import PromptError, build_system_prompt, instructions_sha256

    assert checkpoint.resume is not None
    recorded_mode = checkpoint.resume.agents_md
    if settings.agents_md != recorded_mode:
        _refuse(
            "instructions changed",
            f"the run used --agents-md {recorded_mode} but this invocation asks for {settings.agents_md}; "
            "drop --agents-md or start a fresh task",
        )
    if instructions_sha256(checkpoint.system_prompt) != checkpoint.resume.instructions_sha256:
        _refuse(
            "instructions changed",
            "the recorded system prompt does not match its recorded digest; the file was edited or damaged",
        )
    try:
        current = build_system_prompt(settings.cwd, recorded_mode, settings.instructions)
    except PromptError as exc:
        _refuse("instructions changed", f"cannot rebuild the instructions ({exc}); start a fresh task")
    if instructions_sha256(current) != checkpoint.resume.instructions_sha256:
        _refuse(
            "instructions changed",
            "the effective instructions (system prompt, AGENTS.md or configured instructions) differ from "
            "the ones the run started with; restore them or start a fresh task",
        )


def _check_toolset(checkpoint: Trajectory) -> None:
    from tinyagent.tools.toolbox import TOOL_SPECS

    assert checkpoint.resume is not None
    if toolset_digest(TOOL_SPECS) != checkpoint.resume.toolset_sha256:
        _refuse(
            "tool set changed",
            "this tinyagent offers different tools than the run started with; resume with the "
            "tinyagent version that wrote the checkpoint or start a fresh task",
        )


# --------------------------------------------------------------------------------------------------
# Continuing the run


def start_trajectory(plan: ResumePlan, *, now: str) -> Trajectory:
    """The validated starting state of the resumed run (the checkpoint itself is not modified).

    Restored history plus the continuation notice, cumulative totals carried over, status Running
    with submission/detail cleared, this invocation's limits and start time, and one more
    `resumed_from` provenance entry recording the source and its previous termination.
    """
    from tinyagent import __version__
    from tinyagent.prompts import CONTINUATION_NOTICE
    from tinyagent.runner import limits_from
    from tinyagent.trajectory.models import ResumeProvenance, Timing

    checkpoint = plan.checkpoint
    provenance = ResumeProvenance(
        source_path=plan.source_path,
        source_sha256=plan.source_sha256,
        previous_status=checkpoint.exit_status,
        previous_submission=checkpoint.submission,
        previous_detail=checkpoint.exit_detail,
        boundary_messages=len(checkpoint.messages),
        boundary_steps=checkpoint.totals.steps,
        resumed_at=now,
    )
    messages = list(checkpoint.messages)  # restored messages are never mutated, only appended to
    last = messages[-1]
    if not (last.role == "user" and last.content == CONTINUATION_NOTICE):
        messages.append(Message(role="user", content=CONTINUATION_NOTICE))
    return checkpoint.model_copy(
        update={
            "tinyagent_version": __version__,
            "messages": messages,
            "totals": checkpoint.totals.model_copy(),
            "limits": limits_from(plan.settings),
            "exit_status": ExitStatus.RUNNING,
            "exit_detail": None,
            "submission": None,
            "timing": Timing(started_at=now),
            "warnings": list(checkpoint.warnings),
            "resumed_from": [*checkpoint.resumed_from, provenance],
        }
    )


def run_resume(args: Any) -> int:
    """`tinyagent --resume FILE ...`: validate, then continue the run; return the process exit code.

    Exit codes: `EXIT_REFUSED` (2) for every refusal and for configuration/provider-setup errors
    (nothing written, nothing sent); otherwise the ordinary run codes (0 Submitted and saved,
    1 any other ending, including a failed save which stops the run at once).
    """
    try:
        plan = prepare_resume(args)
    except ResumeRefused as refused:
        _stderr(refused.line())
        return EXIT_REFUSED

    from tinyagent.config import ConfigError
    from tinyagent.loop.agent import utc_now
    from tinyagent.output import Reporter
    from tinyagent.prompts import PromptError
    from tinyagent.providers.base import ProviderError
    from tinyagent.providers.scripted import ScriptError
    from tinyagent.runner import build_provider, execute

    settings = plan.settings
    try:
        provider = build_provider(settings, getattr(args, "base_url", None))
    except (ConfigError, PromptError, ScriptError, ProviderError, ValueError) as exc:
        _stderr(f"tinyagent: error: {_one_line(str(exc))}")
        return EXIT_REFUSED
    trajectory = start_trajectory(plan, now=utc_now())
    checkpoint = plan.checkpoint
    reporter = Reporter(quiet=settings.quiet)
    _stderr(
        f"tinyagent: resuming {plan.source_path} at its last saved boundary: "
        f"{len(checkpoint.messages)} messages and {checkpoint.totals.steps} steps restored, "
        f"previous status {checkpoint.exit_status.value}; writing {plan.output}"
    )
    reporter.warning(
        "the workspace may have changed since that checkpoint was saved, and effects of commands after "
        "its last save are not recorded; no earlier tool call is run again and the model is asked to "
        "re-inspect before acting"
    )
    reporter.progress(
        f"provider {settings.provider}, model {settings.model}, cwd {settings.cwd}, "
        f"streaming {'on' if settings.stream else 'off'}"
    )
    return execute(
        trajectory, settings, provider, plan.output, reporter, stop_on_save_failure=True, create_new=True
    )


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _stderr(line: str) -> None:
    import sys

    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
