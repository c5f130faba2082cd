"""The `tinyagent` command line.

Kept import-light: `--help` and `--version` load only argparse; pydantic, providers and HTTP clients
are imported once a run actually starts. `--resume FILE` dispatches to `tinyagent.resume.run.run_resume`
before any provider setup. Every `TinyAgentError` that reaches `main` is printed as one line and mapped
to its exit code by `EXIT_CODES`.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from tinyagent import __version__
from tinyagent.defaults import EXIT_FAILURE, EXIT_USAGE
from tinyagent.errors import TinyAgentError, UsageError

EXIT_CODES: tuple[tuple[type[TinyAgentError], int], ...] = (
    (UsageError, EXIT_USAGE),  # refused before the run started: flags, settings, set-up, --resume
    (TinyAgentError, EXIT_FAILURE),
)
"""Error class -> process exit code, most specific first (the one place that maps errors to exit codes)."""

DESCRIPTION = """\
Run one coding task to completion (or to a limit) with a model provider, using the tools bash,
read_file, write_file, edit_file and submit in the working directory. The final answer goes to
stdout; progress, warnings and a closing summary go to stderr. The trajectory is saved (atomically,
mode 0600) before the first request, after every turn and at the end."""

EPILOG = """\
examples:
  tinyagent -t "create hello.txt containing hi" --provider openai -m gpt-4.1-mini
  tinyagent -t "fix the failing test" --cwd ~/src/project --step-limit 20 -o run.json
  tinyagent -t "add type hints to util.py" --provider anthropic --cost-limit 0.50
  tinyagent -t "explain main.c" --provider ollama -m qwen2.5-coder:7b --no-stream
  tinyagent -t "refactor db.py" --provider openrouter -m anthropic/claude-sonnet-4.5
  tinyagent -t "write a changelog" --provider codex -m gpt-5-codex --time-limit 600
  tinyagent --resume run.json --cwd ~/src/project --step-limit 40 -o continued.json

configuration (highest precedence first): flags, environment (TINYAGENT_MODEL, TINYAGENT_PROVIDER,
TINYAGENT_STEP_LIMIT, ...; endpoints OPENAI_BASE_URL, ANTHROPIC_BASE_URL, OLLAMA_HOST,
OPENROUTER_BASE_URL; keys OPENAI_API_KEY, OPENROUTER_API_KEY, ANTHROPIC_API_KEY), project config
./.tinyagent.yaml, user config ~/.config/tinyagent/config.yaml, defaults. --config FILE replaces
both config files.

exit codes: 0 the task was submitted (and saved); 1 any other ending (limit, interruption,
provider or tool error, failed save); 2 usage or configuration error, or a refused --resume.
"""


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one stderr line and exit code 2 (no usage block)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see: {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (all value defaults are None so callers can tell 'given' from 'default')."""
    parser = OneLineParser(
        prog="tinyagent",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-t", "--task", help="the task to do ('-' reads it from stdin)")
    parser.add_argument("-m", "--model", help="model name (default depends on the provider)")
    parser.add_argument(
        "--provider",
        choices=("openai", "openrouter", "ollama", "anthropic", "codex", "scripted"),
        help="model provider (default openai)",
    )
    parser.add_argument(
        "--base-url", metavar="URL", help="provider endpoint (overrides environment and config)"
    )
    parser.add_argument(
        "--cwd", metavar="DIR", help="working directory of the run (default: current directory)"
    )
    parser.add_argument(
        "--step-limit", type=int, metavar="N", help="maximum model requests, cumulative (0 = none)"
    )
    parser.add_argument(
        "--cost-limit", type=float, metavar="USD", help="maximum cost in USD, cumulative (0 = none)"
    )
    parser.add_argument(
        "--time-limit", type=float, metavar="SECONDS", help="wall time of this invocation (0 = none)"
    )
    parser.add_argument(
        "--tool-timeout", type=float, metavar="SECONDS", help="timeout per bash command (default 60)"
    )
    parser.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="trajectory file (default under $XDG_STATE_HOME/tinyagent/runs)",
    )
    parser.add_argument(
        "--config", metavar="FILE", help="YAML config file used instead of the user/project files"
    )
    parser.add_argument(
        "--stream",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="stream model replies (default on)",
    )
    parser.add_argument(
        "--agents-md", choices=("auto", "off"), help="load ./AGENTS.md into the instructions (default auto)"
    )
    parser.add_argument(
        "-q", "--quiet", action="store_true", default=None, help="no progress lines (summary still shown)"
    )
    _add_extension_arguments(parser)
    _add_resume_arguments(parser)
    parser.add_argument("--version", action="version", version=f"tinyagent {__version__}")
    return parser


def _add_extension_arguments(parser: argparse.ArgumentParser) -> None:
    """Extended thinking, MCP servers and memory."""
    parser.add_argument(
        "--thinking-budget",
        type=int,
        metavar="TOKENS",
        help="Anthropic extended thinking: token budget per reply (>= 1024; other providers ignore it)",
    )
    parser.add_argument(
        "--context-window",
        type=int,
        metavar="TOKENS",
        help="the model's context window (default: the model table); older turns are compacted near it",
    )
    parser.add_argument(
        "--mcp",
        action="append",
        metavar="NAME=COMMAND",
        help="also offer the tools of this stdio MCP server as mcp__NAME__TOOL (repeatable)",
    )
    parser.add_argument(
        "--memory",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="remember across runs with graymatter (graymatter mcp serve for the project; default off)",
    )
    parser.add_argument("--memory-dir", metavar="DIR", help="the graymatter store to use with --memory")


def _add_resume_arguments(parser: argparse.ArgumentParser) -> None:
    """--resume FILE and --resume-pending."""
    parser.add_argument(
        "--resume", metavar="FILE", help="continue an unfinished run from its trajectory (see README)"
    )
    parser.add_argument(
        "--resume-pending",
        choices=("refuse", "mark-interrupted"),
        help="with --resume, a checkpoint saved while tool calls were pending: refuse (default), or "
        "record them as interrupted, outcome unknown, not re-run, and continue",
    )


def exit_code_for(error: TinyAgentError) -> int:
    """The process exit code of `error` (see `EXIT_CODES`)."""
    return next(code for kind, code in EXIT_CODES if isinstance(error, kind))


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `tinyagent` console script; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    from tinyagent.keys import withdraw_keys

    withdraw_keys()  # before anything runs: no command the agent starts can read a provider key
    try:
        if args.resume_pending is not None and args.resume is None:
            raise UsageError("--resume-pending only applies with --resume FILE")
        if args.resume is not None:
            from tinyagent.resume.run import run_resume

            return run_resume(args)
        return run_fresh(args)
    except KeyboardInterrupt:  # only before the run installs its own handlers: nothing was saved yet
        print("tinyagent: interrupted before the run started; nothing was saved", file=sys.stderr)
        return EXIT_FAILURE
    except TinyAgentError as error:
        from tinyagent.output import write_stderr

        write_stderr(error.line())
        return exit_code_for(error)


def run_fresh(args: argparse.Namespace) -> int:
    """Start a new run from parsed arguments; a refusal before the run starts raises `UsageError`."""
    task = args.task
    if task == "-":
        task = sys.stdin.read()
    if task is None or not task.strip():
        raise UsageError("a task is required: pass -t TASK (or --resume FILE to continue a run)")
    try:
        task.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError("the task is not valid UTF-8 text") from None

    from tinyagent.config.settings import resolve_settings
    from tinyagent.output import Reporter
    from tinyagent.prompts import build_system_prompt
    from tinyagent.runner import (
        SETUP_ERRORS,
        build_provider,
        default_output_path,
        execute,
        new_trajectory,
        start_mcp,
    )

    try:
        settings = resolve_settings(args)
        system_prompt = build_system_prompt(settings.cwd, settings.agents_md, settings.instructions)
        output = settings.output or os.fspath(default_output_path())
        _check_output_path(output)
        provider = build_provider(settings, args.base_url)
        hub, mcp_tools = start_mcp(settings)  # after every other check: it starts programs
    except SETUP_ERRORS as exc:
        raise UsageError(str(exc)) from exc

    reporter = Reporter(quiet=settings.quiet)
    reporter.progress(
        f"provider {settings.provider}, model {settings.model}, cwd {settings.cwd}, "
        f"streaming {'on' if settings.stream else 'off'}"
    )
    try:
        memory_context = None
        if hub is not None and settings.memory:
            from tinyagent.mcpclient.memory import recall_context

            memory_context = recall_context(hub, task)
        trajectory = new_trajectory(task, settings, system_prompt, mcp_tools, memory_context)
    except BaseException:
        if hub is not None:
            hub.close()
        raise
    return execute(trajectory, settings, provider, output, reporter, hub=hub)


def _check_output_path(output: str) -> None:
    """Refuse output paths that can never be saved to (a directory or a symlink)."""
    from tinyagent.config.files import ConfigError

    if os.path.islink(output):
        raise ConfigError(f"refusing to write the trajectory through a symlink: {output}")
    if os.path.isdir(output):
        raise ConfigError(f"output path is a directory: {output}")


if __name__ == "__main__":
    sys.exit(main())
