"""Composition of one invocation: provider, toolbox, agent, saving, summary and exit code.

These building blocks are shared by fresh runs (`tinyagent.cli`) and `--resume` (`tinyagent.resume.run`):

- `build_provider(settings, flag_base_url)`: the provider with its endpoint/key resolved from the flag,
  the environment and config (never from a trajectory);
- `new_trajectory(task, settings, system_prompt)`: the initial trajectory of a fresh run, resume
  metadata included;
- `execute(trajectory, settings, provider, output_path, reporter, stop_on_save_failure)`: run the
  agent, print the summary on stderr and the final answer on stdout, return the exit code.

Exit codes (`tinyagent.defaults`): `EXIT_OK` = Submitted and every save succeeded; `EXIT_FAILURE` = any
other ending or a failed save. A failed set-up (`SETUP_ERRORS`) is raised before the run starts and the CLI
reports it as a usage error (`EXIT_USAGE`).
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tinyagent import __version__
from tinyagent.defaults import EXIT_FAILURE, EXIT_OK
from tinyagent.errors import TinyAgentError
from tinyagent.output import Reporter

if TYPE_CHECKING:
    from tinyagent.config.settings import Settings
    from tinyagent.mcpclient.hub import McpHub
    from tinyagent.providers.base import Provider
    from tinyagent.trajectory.files import TrajectoryFile
    from tinyagent.trajectory.models import Limits, Trajectory
    from tinyagent.types import ToolSpec

SETUP_ERRORS: tuple[type[Exception], ...] = (TinyAgentError, ValueError)
"""What a failed set-up raises (settings, instructions, output path, provider): reported as a usage error."""


def default_output_path(environ: Mapping[str, str] | None = None) -> Path:
    """`$XDG_STATE_HOME/tinyagent/runs/run-<UTC time>-<pid>.json` (default ~/.local/state)."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_STATE_HOME") or os.path.join(
        env.get("HOME") or os.path.expanduser("~"), ".local", "state"
    )
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return Path(base) / "tinyagent" / "runs" / f"run-{stamp}-{os.getpid()}.json"


def build_provider(
    settings: Settings, flag_base_url: str | None = None, environ: Mapping[str, str] | None = None
) -> Provider:
    """Construct the configured provider. Endpoint: flag > provider env var > config > default.

    `environ` defaults to the environment plus the provider keys withdrawn at start-up (`tinyagent.keys`).
    """
    from tinyagent.keys import provider_environ, remember

    env = provider_environ() if environ is None else environ
    if settings.provider == "scripted":
        from tinyagent.providers.scripted import SCRIPT_ENV, ScriptedProvider

        script = flag_base_url or env.get(SCRIPT_ENV) or settings.base_url
        if not script:
            from tinyagent.config.files import ConfigError

            raise ConfigError(f"--provider scripted needs a script: pass --base-url FILE or set {SCRIPT_ENV}")
        return ScriptedProvider.from_file(script, model=settings.model)

    from tinyagent.providers import get_provider, resolve_api_key, resolve_endpoint

    base_url = resolve_endpoint(settings.provider, flag_base_url, settings.base_url, env)
    api_key = resolve_api_key(settings.provider, env, settings.api_key)
    remember(api_key)
    remember(settings.api_key)
    options: dict[str, Any] = {}
    if settings.provider == "anthropic":
        options["thinking_budget"] = settings.thinking_budget
    return get_provider(
        settings.provider,
        model=settings.model,
        base_url=base_url,
        api_key=api_key,
        timeout=settings.request_timeout,
        **options,
    )


def start_mcp(settings: Settings) -> tuple[McpHub | None, list[ToolSpec]]:
    """Connect the configured MCP servers (none: no hub, and the SDK is never imported)."""
    if not settings.mcp_servers:
        return None, []
    from tinyagent.keys import provider_environ, remember
    from tinyagent.mcpclient.hub import McpHub

    environ = provider_environ()
    for _name, server in settings.mcp_servers:
        if server.bearer_token_env:
            remember(environ.get(server.bearer_token_env))
    hub = McpHub(
        settings.mcp_servers,
        cwd=settings.cwd,
        timeout=settings.tool_timeout,
        output_cap=settings.output_cap,
        environ=environ,
    )
    return hub, hub.start()


def new_trajectory(
    task: str,
    settings: Settings,
    system_prompt: str,
    mcp_tools: Sequence[ToolSpec] = (),
    memory_context: str | None = None,
) -> Trajectory:
    """The initial trajectory of a fresh run: system prompt and task, limits, tool set, resume metadata.

    `mcp_tools` follow the built-in tools; `memory_context` (what --memory found) ends the system prompt.
    """
    from tinyagent.loop.agent import utc_now
    from tinyagent.prompts import instructions_sha256
    from tinyagent.tools.specs import TOOL_SPECS, toolset_sha256
    from tinyagent.trajectory.models import ResumeMetadata, Timing, Trajectory
    from tinyagent.types import Message

    tools = [*TOOL_SPECS, *mcp_tools]
    system_prompt += memory_context or ""
    return Trajectory(
        tinyagent_version=__version__,
        task=task,
        provider=settings.provider,
        model=settings.model,
        system_prompt=system_prompt,
        messages=[Message(role="system", content=system_prompt), Message(role="user", content=task)],
        tools=tools,
        limits=limits_from(settings),
        timing=Timing(started_at=utc_now()),
        resume=ResumeMetadata(
            cwd=settings.cwd,
            agents_md=settings.agents_md,
            instructions_sha256=instructions_sha256(system_prompt),
            toolset_sha256=toolset_sha256(tools),
            memory_context=memory_context,
        ),
    )


def _save_memory(hub: McpHub, trajectory: Trajectory, reporter: Reporter) -> None:
    """The closing memory checkpoint (every ending); a failure is a warning, not a failed run."""
    from tinyagent.mcpclient.memory import save_checkpoint

    problem = save_checkpoint(hub, trajectory)
    if problem is None:
        reporter.progress("memory: checkpoint saved to graymatter")
    else:
        reporter.warning(f"memory: the closing checkpoint was not saved ({problem})")


def limits_from(settings: Settings) -> Limits:
    """The `Limits` record of this invocation: each field read from the setting of the same name."""
    from tinyagent.trajectory.models import Limits

    return Limits.model_validate(settings, from_attributes=True)


def _trajectory_file(trajectory: Trajectory, path: str, create_new: bool) -> TrajectoryFile:
    """The run's output file with its pending journal, named in the trajectory's resume metadata (a
    resumed run gets its own journal, never its source's)."""
    from tinyagent.trajectory.files import TrajectoryFile

    save = TrajectoryFile(path, create_new=create_new, journal=True)
    if trajectory.resume is not None:
        trajectory.resume = trajectory.resume.model_copy(update={"journal": save.journal_ref})
    return save


def _print_answer(submission: str) -> None:
    """The final answer on stdout (a closed stdout is not an error of the run)."""
    try:
        sys.stdout.write(submission + ("" if submission.endswith("\n") else "\n"))
        sys.stdout.flush()
    except OSError:
        pass


def execute(
    trajectory: Trajectory,
    settings: Settings,
    provider: Provider,
    output_path: str | os.PathLike[str],
    reporter: Reporter,
    *,
    stop_on_save_failure: bool = False,
    create_new: bool = False,
    hub: McpHub | None = None,
) -> int:
    """Run `trajectory` to its end saving to `output_path`; print summary and answer; return the exit code.

    `create_new`: the first save creates `output_path` and fails rather than replace a file that appeared
    since start-up (resume's "never overwrite the destination" rule, without a check-then-write race).
    """
    from tinyagent.loop.agent import Agent
    from tinyagent.tools.toolbox import Toolbox
    from tinyagent.trajectory.models import ExitStatus
    from tinyagent.windows import context_window

    path = os.fspath(output_path)
    toolbox = Toolbox(
        settings.cwd,
        timeout=settings.tool_timeout,
        output_cap=settings.output_cap,
        specs=trajectory.tools,
        external=hub,
    )
    agent = Agent(
        provider,
        toolbox,
        stream=settings.stream,
        save=_trajectory_file(trajectory, path, create_new),
        reporter=reporter,
        stop_on_save_failure=stop_on_save_failure,
        window=context_window(settings.model, settings.context_window),
    )
    gc.freeze()  # what start-up allocated lives for the run: the cyclic collector stops rescanning it
    try:
        agent.run(trajectory)
        if hub is not None and settings.memory:
            _save_memory(hub, trajectory, reporter)
    finally:
        try:
            provider.close()
        except Exception:
            pass
        if hub is not None:
            hub.close()
    reporter.summary(trajectory, path, save_failed=agent.save_failed)
    if trajectory.exit_status is ExitStatus.SUBMITTED and trajectory.submission is not None:
        _print_answer(trajectory.submission)
    if trajectory.exit_status is ExitStatus.SUBMITTED and not agent.save_failed:
        return EXIT_OK
    return EXIT_FAILURE
