"""A command whose subcommands are required (``graymatter mcp serve``, ``graymatter token create``)."""

from __future__ import annotations

from typing import Any


def add_command_group(subparsers: Any, name: str, *, help: str, description: str) -> Any:
    """Add the command ``name`` and return its subparsers; one of them must be given (``<name>_command``)."""
    group = subparsers.add_parser(name, help=help, description=description)
    commands = group.add_subparsers(dest=f"{name}_command", metavar="COMMAND")
    commands.required = True
    return commands
