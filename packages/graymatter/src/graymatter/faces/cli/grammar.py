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

VALUE_FLAGS = ("--dir", "--store")
"""Global options that take a value (``--dir D`` or ``--dir=D``)."""
SWITCH_FLAGS = ("--json", "--quiet", "--no-daemon")
"""Global options without a value."""

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
    found = GlobalFlags()
    rest: list[str] = []
    i = 0
    while i < len(argv):
        token = argv[i]
        if token == "--":
            rest.extend(argv[i:])
            break
        name, has_inline, inline = token.partition("=")
        if name in VALUE_FLAGS and has_inline:
            found.values[name] = inline
        elif token in VALUE_FLAGS and i + 1 < len(argv):
            found.values[token] = argv[i + 1]
            i += 1
        elif token in SWITCH_FLAGS:
            found.switches.add(token)
        else:
            rest.append(token)
        i += 1
    return found, rest


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
