"""One grammar for every command: global flags anywhere on the line, and "did you mean" for typos.

The global flags (``--dir``, ``--store``, ``--json``, ``--quiet``, ``--no-daemon``) mean the same thing
before and after any command, including the commands that extension modules add. They are lifted out of
the argument list before argparse sees it and set on the parsed namespace afterwards, so no subcommand
has to declare them (and none can shadow them). Everything after a bare ``--`` is left alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from graymatter.faces.cli.global_flags import SWITCH_FLAGS, VALUE_FLAGS, split_global_flags

_INVALID_CHOICE = re.compile(
    r"argument (?P<argument>[^:]+): invalid choice: '(?P<given>[^']*)' \(choose from (?P<choices>.*)\)"
)


@dataclass
class GlobalFlags:
    """The global flags found on the command line (``None`` / ``False`` when absent)."""

    values: dict[str, str] = field(default_factory=dict)
    switches: set[str] = field(default_factory=set)

    def apply(self, namespace: Any) -> None:
        """Set every global on ``namespace`` (found ones win; absent ones get their default)."""
        for flag in VALUE_FLAGS:
            name = _dest(flag)
            if flag in self.values:
                setattr(namespace, name, self.values[flag])
            elif not hasattr(namespace, name):
                setattr(namespace, name, None)
        for flag in SWITCH_FLAGS:
            name = _dest(flag)
            setattr(namespace, name, flag in self.switches or bool(getattr(namespace, name, False)))


def lift_global_flags(argv: list[str]) -> tuple[GlobalFlags, list[str]]:
    """Split ``argv`` into its global flags and the rest (order kept); a later repeat of a flag wins.

    A value flag at the very end without its value is left in place, so argparse reports it.
    """
    rest, values, switches = split_global_flags(argv)
    return GlobalFlags(values, switches), rest


def suggest_choice(message: str) -> str:
    """argparse's invalid-choice ``message`` made readable, with "did you mean" when a choice is near."""
    match = _INVALID_CHOICE.search(message)
    if not match:
        return message
    import difflib  # only a mistyped command line pays for it

    choices = re.findall(r"'([^']*)'", match.group("choices"))
    near = difflib.get_close_matches(match.group("given"), choices, n=1, cutoff=0.6)
    given, argument = match.group("given"), match.group("argument")
    what = "unknown command" if argument in ("COMMAND", "ACTION") else f"argument {argument}: invalid choice"
    if not near:
        return f"{what} '{given}' (choose from {match.group('choices')})"
    return f"{what} '{given}' (did you mean '{near[0]}'?)"


def _dest(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")
