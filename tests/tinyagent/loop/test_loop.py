"""The agent loop with the scripted in-process model: endings, limits, accounting (saves: test_loop_saves)."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.loop_agent import NEVER_SUBMITS, assert_paired, make, saved
from support.tinyagent_cli import call, reply
from tinyagent.prompts import FORMAT_ERROR_NUDGE
from tinyagent.trajectory.models import ExitStatus


def test_submitted_run_records_every_result_in_order(tmp_path: Path) -> None:
    agent, traj, provider, _ = make(
        tmp_path,
        [
            reply(
                call("write_file", "a", path="hello.txt", content="hi\n"),
                call("bash", "b", command="cat hello.txt"),
                content="working",
                usage={
                    "input_tokens": 100,
                    "output_tokens": 10,
                    "cache_read_tokens": 5,
                    "cache_write_tokens": 7,
                },
                cost_usd=0.25,
            ),
            reply(call("submit", "c", answer="created hello.txt"), cost_usd=0.5),
        ],
    )
    agent.run(traj)
    assert traj.exit_status is ExitStatus.SUBMITTED
    assert traj.submission == "created hello.txt"
    assert (tmp_path / "work/hello.txt").read_text() == "hi\n"
    assert [m.role for m in traj.messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
        "tool",
    ]
    assert traj.messages[4].content == "exit code: 0\nhi\n"
    assert_paired(traj)
    totals = traj.totals
    assert (totals.steps, totals.input_tokens, totals.output_tokens) == (2, 100, 10)
    assert (totals.cache_read_tokens, totals.cache_write_tokens) == (5, 7)
    assert totals.cost_usd == pytest.approx(0.75)
    assert totals.cost_known
    # initial save + the reply before its batch runs + one checkpoint after it + the final save
    # (a batch of only `submit` is not saved as pending)
    assert agent.saves == 4
    on_disk = saved(tmp_path)
    assert on_disk == traj
    assert on_disk.timing.ended_at is not None
    # the model saw the first batch's results on its second request
    assert [m.role for m in provider.requests[1]][-3:] == ["assistant", "tool", "tool"]


def test_calls_after_submit_in_the_same_turn_are_not_executed(tmp_path: Path) -> None:
    agent, traj, _, _ = make(
        tmp_path, [reply(call("submit", "s", answer="done"), call("write_file", "w", path="x", content="x"))]
    )
    agent.run(traj)
    assert traj.exit_status is ExitStatus.SUBMITTED
    assert not (tmp_path / "work/x").exists()
    last = traj.messages[-1]
    assert (last.tool_call_id, last.is_error) == ("w", True)
    assert last.content == "error: not executed: an earlier submit in this reply ended the run"
    assert_paired(traj)


def test_step_limit_counts_requests_and_stops_before_the_next(tmp_path: Path) -> None:
    agent, traj, provider, _ = make(tmp_path, [NEVER_SUBMITS] * 5, step_limit=3)
    agent.run(traj)
    assert traj.exit_status is ExitStatus.STEP_LIMIT
    assert len(provider.requests) == 3
    assert traj.totals.steps == 3
    assert traj.exit_detail == "step limit 3 reached (3 steps)"
    assert saved(tmp_path) == traj
    assert_paired(traj)


def test_exhausted_step_ceiling_makes_no_request(tmp_path: Path) -> None:
    agent, traj, provider, _ = make(tmp_path, [NEVER_SUBMITS], step_limit=2)
    traj.totals.steps = 2
    agent.run(traj)
    assert traj.exit_status is ExitStatus.STEP_LIMIT
    assert provider.requests == []


def test_cost_limit_is_cumulative_and_checked_before_each_request(tmp_path: Path) -> None:
    pricey = reply(call("bash", command="true"), cost_usd=0.6)
    agent, traj, provider, _ = make(tmp_path, [pricey] * 5, cost_limit=1.0)
    agent.run(traj)
    assert traj.exit_status is ExitStatus.COST_LIMIT
    assert len(provider.requests) == 2  # 0.6 < 1.0 allows a second request, which overshoots
    assert traj.totals.cost_usd == pytest.approx(1.2)
    assert saved(tmp_path).exit_status is ExitStatus.COST_LIMIT


def test_exhausted_cost_ceiling_makes_no_request(tmp_path: Path) -> None:
    agent, traj, provider, _ = make(tmp_path, [NEVER_SUBMITS], cost_limit=1.0)
    traj.totals.cost_usd = 1.0
    agent.run(traj)
    assert traj.exit_status is ExitStatus.COST_LIMIT
    assert provider.requests == []


def test_time_limit_is_checked_before_each_request(tmp_path: Path) -> None:
    ticks = iter(range(0, 1000, 10))  # every clock read advances 10 s
    agent, traj, provider, _ = make(
        tmp_path, [NEVER_SUBMITS] * 50, time_limit=25, clock=lambda: float(next(ticks))
    )
    agent.run(traj)
    assert traj.exit_status is ExitStatus.TIME_LIMIT
    assert 1 <= len(provider.requests) < 50
    assert traj.exit_detail == "time limit 25 s reached"


def test_time_limit_aborts_a_request_in_flight(tmp_path: Path) -> None:
    agent, traj, _provider, _ = make(tmp_path, [{"sleep": 30, **NEVER_SUBMITS}], time_limit=0.5)
    agent.run(traj)
    assert traj.exit_status is ExitStatus.TIME_LIMIT
    assert traj.exit_detail == "time limit reached during a model request"
    assert traj.totals.steps == 1
    assert traj.messages[-1].role == "user"  # nothing half-recorded
    assert saved(tmp_path) == traj


def test_provider_error_ends_the_run_with_a_safe_detail(tmp_path: Path) -> None:
    agent, traj, _provider, _ = make(
        tmp_path, [NEVER_SUBMITS, {"raise": "server", "message": "upstream overloaded (HTTP 503)"}]
    )
    agent.run(traj)
    assert traj.exit_status is ExitStatus.PROVIDER_ERROR
    assert traj.exit_detail == "ProviderServerError: upstream overloaded (HTTP 503)"
    assert traj.totals.steps == 2  # the failed request counts as a step
    assert_paired(traj)
    assert saved(tmp_path) == traj


def test_harness_tool_failure_ends_with_tool_error_and_answers_every_call(tmp_path: Path) -> None:
    agent, traj, _, _ = make(
        tmp_path,
        [
            reply(call("bash", "rm", command='rm -rf "$PWD"')),
            reply(call("bash", "ls", command="ls"), call("read_file", "rd", path="x")),
        ],
    )
    agent.run(traj)
    assert traj.exit_status is ExitStatus.TOOL_ERROR
    assert traj.exit_detail.startswith("working directory is no longer available")
    assert [m.tool_call_id for m in traj.messages if m.role == "tool"] == ["rm", "ls", "rd"]
    assert traj.messages[-1].content == "error: not executed: an earlier tool call failed in the harness"
    assert_paired(traj)
    assert saved(tmp_path) == traj


def test_replies_without_tool_calls_are_nudged_then_stop(tmp_path: Path) -> None:
    text_only = {"content": "I think we are done."}
    agent, traj, provider, _ = make(tmp_path, [text_only, NEVER_SUBMITS, text_only, text_only, text_only])
    agent.run(traj)
    assert traj.exit_status is ExitStatus.REPEATED_FORMAT_ERROR
    assert len(provider.requests) == 5  # the tool call in between reset the counter
    assert traj.messages[-1].role == "user"
    assert traj.messages[-1].content == FORMAT_ERROR_NUDGE
    assert sum(1 for m in traj.messages if m.content == FORMAT_ERROR_NUDGE) == 4


def test_script_exhaustion_is_a_provider_error(tmp_path: Path) -> None:
    agent, traj, _, _ = make(tmp_path, [NEVER_SUBMITS])
    agent.run(traj)
    assert traj.exit_status is ExitStatus.PROVIDER_ERROR
    assert "script exhausted" in traj.exit_detail


def test_unknown_price_warns_once_and_marks_cost_unknown(tmp_path: Path) -> None:
    agent, traj, _, stderr = make(
        tmp_path, [NEVER_SUBMITS, NEVER_SUBMITS, reply(call("submit", answer="ok"))], price=lambda m, u: None
    )
    agent.run(traj)
    assert traj.exit_status is ExitStatus.SUBMITTED
    assert traj.totals.cost_known is False
    assert traj.warnings == ["unknown price for model 'scripted': its cost is not counted"]
    assert stderr.getvalue().count("unknown price") == 1


def test_default_price_prefers_reported_cost_then_table_and_treats_ollama_as_free() -> None:
    from tinyagent.loop.accounting import default_price
    from tinyagent.types import Usage

    usage = Usage(input_tokens=1_000_000, output_tokens=0)
    assert default_price("openrouter")("anything", usage.model_copy(update={"cost_usd": 0.123})) == 0.123
    assert default_price("ollama")("qwen2.5-coder:7b", usage) == 0.0
    assert default_price("openai")("no-such-model-xyz", usage) is None
    known = default_price("openai")("gpt-4.1-mini", usage)
    assert known is not None and known > 0


def test_replies_with_lone_surrogates_are_made_saveable(tmp_path: Path) -> None:
    bad = "\ud800"
    agent, traj, _, _ = make(
        tmp_path,
        [
            {
                "content": f"odd {bad} text",
                "tool_calls": [{"id": "c", "name": "bash", "arguments": '{"command": "echo ' + bad + '"}'}],
            },
            reply(call("submit", answer="ok")),
        ],
    )
    agent.run(traj)
    assert not agent.save_failed
    assert traj.exit_status is ExitStatus.SUBMITTED
    on_disk = saved(tmp_path)
    assert on_disk.messages[2].content == "odd \ufffd text"
    assert on_disk.messages[2].tool_calls[0].arguments == '{"command": "echo \ufffd"}'
