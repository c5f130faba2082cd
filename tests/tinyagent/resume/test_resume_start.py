"""In-process tests of `tinyagent.resume.run.start_trajectory`: the starting state written before the
first request of a resumed run."""

from __future__ import annotations

from pathlib import Path

from support.resume_checkpoints import checkpoint_bytes, make_checkpoint
from tinyagent.config.settings import Settings
from tinyagent.prompts import CONTINUATION_NOTICE
from tinyagent.resume.plan import ResumePlan
from tinyagent.resume.read import file_sha256
from tinyagent.resume.run import start_trajectory
from tinyagent.resume.validate import validate_checkpoint
from tinyagent.trajectory.models import ExitStatus
from tinyagent.types import Message


def plan_for(raw: bytes, **settings: object) -> ResumePlan:
    checkpoint = validate_checkpoint(raw)
    return ResumePlan(
        source_path="/tmp/run.json",
        source_sha256=file_sha256(raw),
        checkpoint=checkpoint,
        settings=Settings(
            provider=checkpoint.provider, model=checkpoint.model, cwd="/tmp/project", **settings
        ),
        output=Path("/tmp/out.json"),
    )


def test_starting_state_restores_history_and_resets_the_active_status() -> None:
    raw = checkpoint_bytes(make_checkpoint(status=ExitStatus.TIME_LIMIT))
    plan = plan_for(raw, step_limit=40, cost_limit=2.5, time_limit=30.0, tool_timeout=5.0)
    before = plan.checkpoint.model_dump()
    start = start_trajectory(plan, now="2026-11-30T01:00:00.000Z")

    assert start.exit_status is ExitStatus.RUNNING
    assert start.exit_detail is None and start.submission is None
    assert start.messages[:-1] == plan.checkpoint.messages
    assert start.messages[-1] == Message(role="user", content=CONTINUATION_NOTICE)
    assert start.totals == plan.checkpoint.totals
    assert (start.limits.step_limit, start.limits.cost_limit, start.limits.time_limit) == (40, 2.5, 30.0)
    assert start.limits.tool_timeout == 5.0
    assert start.timing.started_at == "2026-11-30T01:00:00.000Z"
    assert start.timing.elapsed_seconds == 0.0 and start.timing.ended_at is None
    assert start.resume == plan.checkpoint.resume
    [provenance] = start.resumed_from
    assert provenance.previous_status is ExitStatus.TIME_LIMIT
    assert provenance.source_sha256 == file_sha256(raw)
    assert provenance.boundary_messages == len(plan.checkpoint.messages)
    assert provenance.boundary_steps == plan.checkpoint.totals.steps

    # the loop mutates the new state in place; the validated checkpoint must not change with it
    start.totals.steps += 5
    start.messages.append(Message(role="user", content="x"))
    assert plan.checkpoint.model_dump() == before


def test_a_trailing_notice_is_not_repeated() -> None:
    first = start_trajectory(plan_for(checkpoint_bytes(make_checkpoint())), now="2026-11-30T01:00:00Z")
    first.exit_status = ExitStatus.STEP_LIMIT  # a resume that stopped before any request
    second = start_trajectory(plan_for(checkpoint_bytes(first)), now="2026-11-30T02:00:00Z")
    assert [m.content for m in second.messages].count(CONTINUATION_NOTICE) == 1
    assert [p.previous_status for p in second.resumed_from] == [ExitStatus.STEP_LIMIT, ExitStatus.STEP_LIMIT]
