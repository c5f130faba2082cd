"""`tinyagent --resume`: continue an unfinished run from a validated trajectory checkpoint.

`run_resume(args)` has `prepare_resume` check the checkpoint and the invocation, writes the validated
starting state (`start_trajectory`) to the new destination, then hands the restored trajectory to the
ordinary agent loop.

Every refusal happens before any provider is constructed or any tool runs. A refusal is raised as
`ResumeRefused`, which the CLI prints as exactly one line, `tinyagent: cannot resume: <category>: <what
to do>`, exiting with `EXIT_USAGE` (2). No refusal message ever contains transcript content.
"""

from __future__ import annotations

from typing import Any

from tinyagent.resume.plan import ResumePlan, prepare_resume
from tinyagent.trajectory.models import ExitStatus, Trajectory
from tinyagent.types import Message


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
    provenance = ResumeProvenance.continuing(checkpoint, plan.source_path, plan.source_sha256, now)
    messages = list(checkpoint.messages)  # restored messages are never mutated, only appended to
    metadata = checkpoint.resume
    if metadata is not None and metadata.tool_batch_pending:  # allowed by --resume-pending=mark-interrupted
        messages.extend(_interrupted_results(messages))
        metadata = metadata.model_copy(update={"tool_batch_pending": False})
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
            "resume": metadata,
        }
    )


def _interrupted_results(messages: list[Message]) -> list[Message]:
    """One "interrupted, outcome unknown, not re-run" result per unanswered call of the pending batch."""
    from tinyagent.prompts import PENDING_CALL_RESULT
    from tinyagent.resume.history import unanswered_tail

    return [
        Message(role="tool", content=PENDING_CALL_RESULT, tool_call_id=call_id, name=name, is_error=True)
        for call_id, name in unanswered_tail(messages)
    ]


def run_resume(args: Any) -> int:
    """`tinyagent --resume FILE ...`: validate, then continue the run; return the process exit code.

    Raises `ResumeRefused` for every refusal and `UsageError` for a provider-setup error (nothing
    written, nothing sent; both exit 2). Otherwise returns the ordinary run codes (0 Submitted and
    saved, 1 any other ending, including a failed save which stops the run at once).
    """
    plan = prepare_resume(args)

    from tinyagent.errors import UsageError
    from tinyagent.loop.agent import utc_now
    from tinyagent.output import Reporter, write_stderr
    from tinyagent.resume.plan import check_toolset
    from tinyagent.runner import SETUP_ERRORS, build_provider, execute, start_mcp

    settings = plan.settings
    try:
        provider = build_provider(settings, getattr(args, "base_url", None))
        hub, mcp_tools = start_mcp(settings)
    except SETUP_ERRORS as exc:
        raise UsageError(" ".join(str(exc).split())) from exc
    try:
        if hub is not None:
            check_toolset(plan.checkpoint, mcp_tools)
        trajectory = start_trajectory(plan, now=utc_now())
    except BaseException:
        if hub is not None:
            hub.close()
        raise
    checkpoint = plan.checkpoint
    reporter = Reporter(quiet=settings.quiet)
    write_stderr(
        f"tinyagent: resuming {plan.source_path} at its last saved boundary: "
        f"{len(checkpoint.messages)} messages and {checkpoint.totals.steps} steps restored, "
        f"previous status {checkpoint.exit_status.value}; writing {plan.output}"
    )
    for note in plan.notes:
        reporter.warning(note)
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
        trajectory,
        settings,
        provider,
        plan.output,
        reporter,
        stop_on_save_failure=True,
        create_new=True,
        hub=hub,
    )
