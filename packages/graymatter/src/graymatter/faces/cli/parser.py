"""The ``graymatter`` argument parser: global options, the built-in commands and the extension modules."""

from __future__ import annotations

import argparse
import importlib
from typing import Any, NoReturn

from graymatter.errors import CliUsageError
from graymatter.faces.cli import admin_cmds, checkpoint_cmds, memory_cmds
from graymatter.faces.cli.grammar import lift_global_flags, suggest_choice

EXTENSION_MODULES = (
    "graymatter.faces.cli.mcp_cmds",
    "graymatter.faces.cli.server_cmds",
    "graymatter.faces.cli.hooks_cmds",
    "graymatter.faces.cli.ui_cmds",
    "graymatter.faces.cli.wiring_cmds",
)
"""Modules that add subcommands through ``register(subparsers)``; a missing one is skipped."""


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


def build_parser() -> argparse.ArgumentParser:
    """The full parser, including subcommands registered by extension modules."""
    parser = CliParser(prog="graymatter", description="Persistent memory and checkpoints for AI agents.")
    parser.add_argument("--version", action="version", version=_version())
    global_options(parser, suppress=False)
    common = CliParser(add_help=False)
    global_options(common, suppress=True)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=CliParser)
    sub.required = True
    memory_cmds.register(sub, common)
    checkpoint_cmds.register(sub, common, CliParser)
    admin_cmds.register(sub, common)
    for name in EXTENSION_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue
            raise
        module.register(sub)
    return parser


def parse_arguments(argv: list[str]) -> argparse.Namespace:
    """Parse ``argv``; the global options (accepted anywhere on the line) are always on the result."""
    flags, rest = lift_global_flags(argv)
    args = build_parser().parse_args(rest)
    flags.apply(args)
    return args


def _version() -> str:
    from graymatter import __version__

    return f"graymatter {__version__}"
