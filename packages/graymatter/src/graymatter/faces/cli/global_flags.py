"""The global flags of every command line, split off before anything else is imported (standard library).

``grammar.lift_global_flags`` builds on this split; the hook and warm-command fast paths use it directly,
so recognising a command line that a warm server will run imports nothing.
"""

from __future__ import annotations

VALUE_FLAGS = ("--dir", "--store")
"""Global options that take a value (``--dir D`` or ``--dir=D``)."""
SWITCH_FLAGS = ("--json", "--quiet", "--no-daemon")
"""Global options without a value."""


def split_global_flags(argv: list[str]) -> tuple[list[str], dict[str, str], set[str]]:
    """``argv`` without its global flags (order kept), the value flags and the switches found; a later
    repeat of a value flag wins, a value flag at the very end without its value is left in place, and
    everything after a bare ``--`` is left alone."""
    rest: list[str] = []
    values: dict[str, str] = {}
    switches: set[str] = set()
    i = 0
    while i < len(argv):
        token = argv[i]
        if token == "--":
            rest.extend(argv[i:])
            break
        name, has_inline, inline = token.partition("=")
        if name in VALUE_FLAGS and has_inline:
            values[name] = inline
        elif token in VALUE_FLAGS and i + 1 < len(argv):
            values[token] = argv[i + 1]
            i += 1
        elif token in SWITCH_FLAGS:
            switches.add(token)
        else:
            rest.append(token)
        i += 1
    return rest, values, switches
