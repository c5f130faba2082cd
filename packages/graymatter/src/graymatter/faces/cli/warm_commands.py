"""Short commands served by the warm server when it listens: the same command line, in a pre-imported child.

The warm server of ADR 0010 forks a child with everything imported, so a fresh ``graymatter recall`` pays
for its interpreter and not for pydantic, the engine and the store all over again.

Standard library only, and nothing is imported before the command line is known to be one of
:data:`WARM_COMMANDS`. The relay hands the child this process's stdin, stdout and stderr, argv, working
directory, umask and environment; the child runs the ordinary in-process command on them and reports its
exit code, which becomes this process's. No byte passes through this process, so output, errors and exit
codes are exactly those of in-process. When no warm server answers (absent, another code version, a stale
socket, ``GRAYMATTER_MCP_WARM=0``), the command runs in this process and a warm server is launched in the
background for the next one, as ``mcp serve`` and the hooks do.
"""

from __future__ import annotations

import os
import sys

from graymatter.faces.cli.global_flags import split_global_flags

WARM_COMMANDS = frozenset(
    {"remember", "recall", "revise", "forget", "pin", "unpin", "alias", "link", "list", "checkpoint"}
    | {"stats", "agents"}
)
"""Commands a warm child may run: short, bounded by one store operation, and never a server, an editor of
other programs' files or a long transfer (those keep their own process: a Ctrl-C reaches it directly)."""
_COMMAND_NAMES = frozenset({"graymatter", "__main__.py"})


def is_the_command(argv: list[str]) -> bool:
    """Whether this process is the ``graymatter`` command running ``argv`` (its stdio is the caller's)."""
    program = os.path.basename(sys.argv[0]) if sys.argv else ""
    return program in _COMMAND_NAMES and list(sys.argv[1:]) == list(argv)


def warm_enabled() -> bool:
    """``GRAYMATTER_MCP_WARM`` as ``warm_paths.warm_enabled`` reads it (a test holds the two together),
    without importing the relay (the CLI may not import the MCP face before it knows the command)."""
    return os.environ.get("GRAYMATTER_MCP_WARM", "1").strip().lower() not in {"0", "false", "no", "off"}


def run_warm(argv: list[str], *, in_warm_child: bool = False) -> int | None:
    """Run a :data:`WARM_COMMANDS` command line in a warm child; its exit code, or None when this process
    should run it (another command, not the ``graymatter`` process itself, already a warm child, or no
    warm server took it)."""
    if in_warm_child or not warm_enabled():
        return None
    words, _values, _switches = split_global_flags(argv)
    if not words or words[0] not in WARM_COMMANDS or not is_the_command(argv):
        return None
    try:
        from graymatter.faces.mcp_server.warm_relay import serve_warm

        return serve_warm(argv)
    except Exception:  # e.g. a source file vanished while the code key was computed: in-process
        return None
