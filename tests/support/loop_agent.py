"""An `Agent` over the in-process scripted model, wired as the loop tests need it."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from support.tinyagent_cli import call, reply
from tinyagent.config.settings import Settings
from tinyagent.loop.agent import Agent
from tinyagent.output import Reporter
from tinyagent.prompts import build_system_prompt
from tinyagent.providers.scripted import ScriptedProvider
from tinyagent.runner import new_trajectory
from tinyagent.tools.toolbox import Toolbox
from tinyagent.trajectory.files import load_trajectory, save_trajectory
from tinyagent.trajectory.models import Trajectory

NEVER_SUBMITS = reply(call("bash", command="true"), usage={"input_tokens": 10, "output_tokens": 2})


def make(
    tmp_path: Path,
    replies: list[dict[str, Any]],
    *,
    step_limit: int = 0,
    cost_limit: float = 0.0,
    time_limit: float = 0.0,
    save: Any = "file",
    stop_on_save_failure: bool = False,
    clock: Any = None,
    price: Any = None,
) -> tuple[Agent, Trajectory, ScriptedProvider, io.StringIO]:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    settings = Settings(
        provider="scripted",
        model="scripted",
        cwd=str(work.resolve()),
        step_limit=step_limit,
        cost_limit=cost_limit,
        time_limit=time_limit,
        tool_timeout=20,
    )
    trajectory = new_trajectory("do the task", settings, build_system_prompt(settings.cwd, "auto"))
    provider = ScriptedProvider(replies=replies)
    stderr = io.StringIO()
    out = tmp_path / "run.json"
    if save == "file":
        save = lambda traj: save_trajectory(traj, out)  # noqa: E731
    kwargs: dict[str, Any] = {}
    if clock is not None:
        kwargs["clock"] = clock
    if price is not None:
        kwargs["price"] = price
    agent = Agent(
        provider,
        Toolbox(work, timeout=20),
        stream=False,
        save=save,
        reporter=Reporter(stderr),
        stop_on_save_failure=stop_on_save_failure,
        **kwargs,
    )
    return agent, trajectory, provider, stderr


def saved(tmp_path: Path) -> Trajectory:
    return load_trajectory(tmp_path / "run.json")


def assert_paired(trajectory: Trajectory) -> None:
    """Every assistant tool call is answered, in order, by exactly one tool message right after it."""
    messages = trajectory.messages
    assert [m.role for m in messages[:2]] == ["system", "user"]
    index = 2
    while index < len(messages):
        message = messages[index]
        assert message.role in ("assistant", "user")
        index += 1
        if message.role == "assistant":
            for tool_call in message.tool_calls:
                result = messages[index]
                assert result.role == "tool"
                assert (result.tool_call_id, result.name) == (tool_call.id, tool_call.name)
                index += 1
