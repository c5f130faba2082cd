"""The ``graymatter`` argument parser: global options, the built-in commands and the extension modules."""

from __future__ import annotations

import argparse
import importlib
from typing import Any, NoReturn

from graymatter.errors import CliUsageError
from graymatter.faces.cli.grammar import lift_global_flags, suggest_choice

CORE_MODULES = (
    "graymatter.faces.cli.memory_cmds",
    "graymatter.faces.cli.checkpoint_cmds",
    "graymatter.faces.cli.admin_cmds",
)
"""Modules that add subcommands through ``register(subparsers, common[, parser_class])``."""
EXTENSION_MODULES = (
    "graymatter.faces.cli.mcp_cmds",
    "graymatter.faces.cli.server_cmds",
    "graymatter.faces.cli.hooks_cmds",
    "graymatter.faces.cli.ui_cmds",
    "graymatter.faces.cli.wiring_cmds",
)
"""Modules that add subcommands through ``register(subparsers)``; a missing one is skipped."""

_MEMORY, _CHECKPOINT, _ADMIN = CORE_MODULES
_MCP, _SERVER, _HOOKS, _UI, _WIRING = EXTENSION_MODULES
COMMANDS: dict[str, str] = {
    **dict.fromkeys(
        ("remember", "recall", "revise", "forget", "pin", "unpin", "alias", "link", "list"), _MEMORY
    ),
    "checkpoint": _CHECKPOINT,
    **dict.fromkeys(("consolidate", "compact", "stats", "agents", "export", "import", "demo"), _ADMIN),
    "mcp": _MCP,
    **dict.fromkeys(("serve", "token", "migrate"), _SERVER),
    **dict.fromkeys(("hook", "hooks", "status", "context-sync"), _HOOKS),
    "ui": _UI,
    **dict.fromkeys(("init", "doctor"), _WIRING),
}
"""Every command and the module that registers it, in ``--help`` order: a command line naming one builds
only that command's parser (tests/graymatter/faces/cli/test_parser.py holds this table to the full parser)."""


class CliParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line (and JSON with --json) instead of usage + exit."""

    def error(self, message: str) -> NoReturn:
        raise CliUsageError(f"{suggest_choice(message)} (see: {self.prog} --help)")


def global_options(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    """Add ``--dir``, ``--store``, ``--json``, ``--quiet`` and ``--no-daemon`` (suppressed in subcommands, so
    an option given before the command is not reset by its default after it)."""
    default: dict[str, Any] = {"default": argparse.SUPPRESS} if suppress else {}
    flag: dict[str, Any] = {"default": argparse.SUPPRESS} if suppress else {"default": False}
    parser.add_argument(
        "--dir", metavar="DIR", help="data directory (default $GRAYMATTER_DIR or ./.graymatter)", **default
    )
    parser.add_argument(
        "--store",
        metavar="URL",
        help="store URL: a directory, sqlite:///DIR or postgresql://... "
        "(default $GRAYMATTER_DATABASE_URL, else --dir)",
        **default,
    )
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON", **flag)
    parser.add_argument("--quiet", action="store_true", help="print only requested data", **flag)
    parser.add_argument(
        "--no-daemon", action="store_true", help="accepted for compatibility (no daemon is used)", **flag
    )


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The full parser, including subcommands registered by extension modules; with ``only`` (a name in
    :data:`COMMANDS`), the top-level parser with just that command: what one command line needs."""
    parser = CliParser(prog="graymatter", description="Persistent memory and checkpoints for AI agents.")
    parser.add_argument("--version", action="version", version=_version())
    global_options(parser, suppress=False)
    common = CliParser(add_help=False)
    global_options(common, suppress=True)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=CliParser)
    sub.required = True
    modules = (COMMANDS[only],) if only is not None else (*CORE_MODULES, *EXTENSION_MODULES)
    target = sub if only is None else _OnlyCommand(sub, only)
    for name in modules:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name and name in EXTENSION_MODULES:
                continue
            raise
        if name == _CHECKPOINT:
            module.register(target, common, CliParser)
        elif name in CORE_MODULES:
            module.register(target, common)
        else:
            module.register(target)
    return parser


def parse_arguments(argv: list[str]) -> argparse.Namespace:
    """Parse ``argv``; the global options (accepted anywhere on the line) are always on the result."""
    flags, rest = lift_global_flags(argv)
    only = rest[0] if rest and rest[0] in COMMANDS else None  # anything else (help, a typo): every command
    args = build_parser(only).parse_args(rest)
    flags.apply(args)
    return args


class _OnlyCommand:
    """Subparsers that build one command's parser; the other commands a module adds cost nothing."""

    def __init__(self, subparsers: Any, command: str) -> None:
        self._subparsers, self._command = subparsers, command

    def add_parser(self, name: str, **kwargs: Any) -> Any:
        if name == self._command:
            return self._subparsers.add_parser(name, **kwargs)
        return _Skipped()


class _Skipped:
    """The parser of a command this command line does not name: every call on it is accepted and ignored."""

    def __getattr__(self, name: str) -> Any:
        return self._ignore

    def _ignore(self, *args: Any, **kwargs: Any) -> _Skipped:
        return self

    def __setattr__(self, name: str, value: Any) -> None:  # e.g. ``commands.required = True``
        pass


def _version() -> str:
    from graymatter import __version__

    return f"graymatter {__version__}"
