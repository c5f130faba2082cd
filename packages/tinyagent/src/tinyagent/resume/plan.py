"""Checking a `--resume` invocation against its checkpoint: task, model, provider, cwd, output, instructions.

`prepare_resume(args)` reads and validates the checkpoint, checks the invocation against it and returns
a `ResumePlan`, or raises `ResumeRefused`. It writes nothing, constructs no provider and runs no tool.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tinyagent.resume.read import file_sha256, read_checkpoint
from tinyagent.resume.refusal import os_reason, refuse, shown
from tinyagent.resume.validate import check_checkpoint, parse_checkpoint, toolset_digest
from tinyagent.trajectory.models import ResumeMetadata, Trajectory

if TYPE_CHECKING:
    from tinyagent.config.settings import Settings
    from tinyagent.types import ToolSpec


@dataclass(frozen=True)
class ResumePlan:
    """Everything `run_resume` needs once every check passed (nothing has been written yet)."""

    source_path: str  # canonical path of the checkpoint (provenance)
    source_sha256: str
    checkpoint: Trajectory  # validated, as read (with the pending reply its journal held, if any)
    settings: Settings
    output: Path
    notes: tuple[str, ...] = ()  # printed as warnings (e.g. an incomplete journal record was ignored)


def prepare_resume(args: Any, environ: Mapping[str, str] | None = None) -> ResumePlan:
    """Check the invocation and the checkpoint; return the plan or raise `ResumeRefused`.

    Reads the checkpoint and the current configuration and instructions; writes nothing, constructs
    no provider and runs no tool.
    """
    output = _check_arguments(args)
    source = Path(os.fspath(args.resume)).expanduser()
    raw = read_checkpoint(source)
    checkpoint, notes = _checked(source, raw, getattr(args, "resume_pending", None) or "refuse")
    metadata = _metadata(checkpoint)
    cwd = _check_cwd(getattr(args, "cwd", None), metadata.cwd)
    _check_model_and_provider(args, checkpoint)
    output_path = _check_output(source, Path(os.fspath(output)).expanduser())
    _check_output_journal(source, checkpoint, output_path)
    settings = _resolve_settings(args, checkpoint, cwd, environ)
    _check_instructions(checkpoint, settings)
    if not settings.mcp_servers:  # with MCP servers: checked once they are connected (check_toolset)
        check_toolset(checkpoint, [])
    return ResumePlan(
        source_path=os.path.realpath(source),
        source_sha256=file_sha256(raw),
        checkpoint=checkpoint,
        settings=settings,
        output=output_path,
        notes=tuple(notes),
    )


def _checked(source: Path, raw: bytes, pending: str) -> tuple[Trajectory, list[str]]:
    """`validate_checkpoint` with the checkpoint's pending journal read next to it and folded in."""
    from tinyagent.resume.journal import fold_journal, read_journal

    checkpoint = parse_checkpoint(raw)
    notes: list[str] = []
    journal = read_journal(source, checkpoint)
    if journal is not None:
        checkpoint, notes = fold_journal(checkpoint, journal)
    return check_checkpoint(checkpoint, pending=pending), notes


def _check_output_journal(source: Path, checkpoint: Trajectory, output: Path) -> None:
    """Refuse an -o whose journal would be the checkpoint's own (the checkpoint is never modified)."""
    from tinyagent.resume.journal import journal_path
    from tinyagent.trajectory.journal import JOURNAL_SUFFIX

    ref = _metadata(checkpoint).journal
    if ref is None:
        return
    ours = os.path.realpath(output.parent / (output.name + JOURNAL_SUFFIX))
    if ours == os.path.realpath(journal_path(source, ref)):
        refuse(
            "output is the checkpoint",
            f"-o {output} would reuse the checkpoint's pending journal {ref.name}; choose another -o name",
        )


def _metadata(checkpoint: Trajectory) -> ResumeMetadata:
    assert checkpoint.resume is not None  # guaranteed by validate_checkpoint
    return checkpoint.resume


def _check_arguments(args: Any) -> str:
    """Refuse -t/--task and a missing -o; return the -o path."""
    if getattr(args, "task", None) is not None:
        refuse(
            "task conflict",
            "--resume continues the task saved in the checkpoint; drop -t/--task (to start a new task, "
            "run without --resume)",
        )
    output = getattr(args, "output", None)
    if not output:
        refuse(
            "missing output",
            "pass -o NEW.json: a resumed run is written to a new file and the checkpoint is never modified",
        )
    return str(output)


def _check_cwd(given: str | None, recorded_cwd: str) -> str:
    recorded = shown(recorded_cwd)
    if not given:
        refuse(
            "missing --cwd",
            f"pass --cwd with the run's working directory ({recorded}) so the run continues where it started",
        )
    resolved = os.path.realpath(os.path.expanduser(os.fspath(given)))
    if not os.path.isdir(resolved):
        refuse("cwd mismatch", f"--cwd {given} is not an existing directory; the run was in {recorded}")
    if resolved != recorded_cwd:
        refuse(
            "cwd mismatch",
            f"--cwd resolves to {resolved} but the checkpoint was recorded in {recorded}; "
            + _rerun_hint(recorded_cwd, recorded),
        )
    return resolved


def _rerun_hint(recorded_cwd: str, recorded: str) -> str:
    """Suggest the recorded directory only when it looks like a project: never ``/``, a top-level
    directory, the home directory or one above it (a forged checkpoint must not steer the agent there)."""
    home = os.path.realpath(os.path.expanduser("~"))
    path = Path(recorded_cwd)
    if len(path.parts) > 2 and path.is_dir() and not Path(home).is_relative_to(path):
        return f"rerun with --cwd {recorded}"
    return f"{recorded} is not a project directory: check where this checkpoint came from before resuming it"


def _check_model_and_provider(args: Any, checkpoint: Trajectory) -> None:
    model = getattr(args, "model", None)
    if model is not None and model != checkpoint.model:
        refuse(
            "model conflict",
            f"the checkpoint was made with model {shown(checkpoint.model)} but -m asks for {model}; "
            "drop -m (the saved model is used) or start a fresh task to switch models",
        )
    provider = getattr(args, "provider", None)
    if provider is not None and provider != checkpoint.provider:
        refuse(
            "provider conflict",
            f"the checkpoint was made with provider {shown(checkpoint.provider)} but --provider asks for "
            f"{provider}; drop --provider or start a fresh task to switch providers",
        )


def _check_output(source: Path, output: Path) -> Path:
    """Refuse an -o path that exists (file, symlink, dangling symlink) or is the checkpoint itself."""
    try:
        source_info = os.stat(source)
    except OSError as exc:
        refuse("unreadable file", f"cannot stat the checkpoint ({os_reason(exc)})")
    try:
        output_link: os.stat_result | None = os.lstat(output)
    except FileNotFoundError:
        output_link = None
    except OSError as exc:
        refuse("output path", f"cannot inspect -o {output} ({os_reason(exc)}); choose another path")
    same_target = os.path.realpath(output) == os.path.realpath(source)
    if output_link is not None:
        if same_target or _same_file(output, source_info):
            refuse(
                "output is the checkpoint",
                f"-o {output} is the checkpoint itself (same file, symlink or hard link); the checkpoint "
                "is never modified, choose a new -o path",
            )
        refuse("output exists", f"-o {output} already exists; resume never overwrites, choose a new path")
    if same_target:
        refuse(
            "output is the checkpoint",
            f"-o {output} resolves to the checkpoint; choose a new -o path",
        )
    return output


def _same_file(path: Path, info: os.stat_result) -> bool:
    """Whether `path` (followed) is the file `info` describes; False for a dangling symlink."""
    try:
        target = os.stat(path)
    except OSError:
        return False  # a dangling symlink still occupies the name
    return (target.st_dev, target.st_ino) == (info.st_dev, info.st_ino)


def _resolve_settings(
    args: Any, checkpoint: Trajectory, cwd: str, environ: Mapping[str, str] | None
) -> Settings:
    """Current settings with the saved provider and model (they win over env, config and defaults)."""
    from tinyagent.config.files import ConfigError
    from tinyagent.config.settings import resolve_settings

    effective = argparse.Namespace(**vars(args))
    effective.provider = checkpoint.provider
    effective.model = checkpoint.model
    effective.cwd = cwd
    if getattr(args, "agents_md", None) is None:
        effective.agents_md = _metadata(checkpoint).agents_md
    try:
        return resolve_settings(effective, environ)
    except ConfigError as exc:
        refuse("configuration", f"{exc}; fix the configuration and retry (nothing was sent)")


def _check_instructions(checkpoint: Trajectory, settings: Settings) -> None:
    from tinyagent.prompts import PromptError, build_system_prompt, instructions_sha256

    metadata = _metadata(checkpoint)
    recorded_mode = metadata.agents_md
    if settings.agents_md != recorded_mode:
        refuse(
            "instructions changed",
            f"the run used --agents-md {recorded_mode} but this invocation asks for {settings.agents_md}; "
            "drop --agents-md or start a fresh task",
        )
    if instructions_sha256(checkpoint.system_prompt) != metadata.instructions_sha256:
        refuse(
            "instructions changed",
            "the recorded system prompt does not match its recorded digest; the file was edited or damaged",
        )
    try:
        current = build_system_prompt(settings.cwd, recorded_mode, settings.instructions)
        current += metadata.memory_context or ""  # what --memory found before the first request
    except PromptError as exc:
        refuse("instructions changed", f"cannot rebuild the instructions ({exc}); start a fresh task")
    if instructions_sha256(current) != metadata.instructions_sha256:
        refuse(
            "instructions changed",
            "the effective instructions (system prompt, AGENTS.md or configured instructions) differ from "
            "the ones the run started with; restore them or start a fresh task",
        )


def check_toolset(checkpoint: Trajectory, mcp_tools: Sequence[ToolSpec]) -> None:
    """Refuse when the tools offered now (built-in plus `mcp_tools`) differ from the recorded ones.

    "tool set changed": this tinyagent's own tools differ; "mcp tools changed": the MCP servers offer
    other tools (or none are configured now), with the tool names added and removed.
    """
    from tinyagent.mcpclient.results import is_mcp_tool
    from tinyagent.tools.specs import TOOL_SPECS

    metadata = _metadata(checkpoint)
    if toolset_digest([*TOOL_SPECS, *mcp_tools]) == metadata.toolset_sha256:
        return
    recorded_own = [tool for tool in checkpoint.tools if not is_mcp_tool(tool.name)]
    if toolset_digest(recorded_own) != toolset_digest(TOOL_SPECS):
        refuse(
            "tool set changed",
            "this tinyagent offers different tools than the run started with; resume with the "
            "tinyagent version that wrote the checkpoint or start a fresh task",
        )
    before = {tool.name for tool in checkpoint.tools if is_mcp_tool(tool.name)}
    now = {tool.name for tool in mcp_tools}
    changes = [f"-{name}" for name in sorted(before - now)] + [f"+{name}" for name in sorted(now - before)]
    detail = shown(" ".join(changes)) if changes else "the same names with other descriptions or schemas"
    refuse(
        "mcp tools changed",
        f"the MCP servers offer other tools than the run started with ({detail}); configure the same "
        "servers (mcp_servers, --mcp, --memory) or start a fresh task",
    )
