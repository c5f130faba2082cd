"""The hook commands: ``hook CLIENT EVENT`` (the runtime), ``hooks``, ``status`` and ``context-sync``.

The hook runtime imports nothing beyond the standard library until a store is known to exist; the other
commands load the engine or the wiring inside their handlers.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from graymatter.faces.cli.exit_codes import EXIT_OK

HOOK_CLIENTS = ("claude-code", "codex", "gemini", "qwen")
HOOK_EVENTS = ("session-start", "user-prompt", "pre-compact", "session-end")


def cmd_hook(args: argparse.Namespace) -> int:
    """Run one hook: payload on stdin, context JSON (or nothing) on stdout, exit 0 whatever happens."""
    from graymatter.faces.hooks.runtime import HookInvocation, run_hook

    invocation = HookInvocation(args.client, args.event, no_create=args.no_create, dir_override=args.dir)
    output = run_hook(invocation, sys.stdin.buffer if sys.stdin is not None else None)
    if output:
        sys.stdout.write(output + "\n")
    return EXIT_OK


def register(sub: Any) -> None:
    """Add ``hook``, ``hooks``, ``status`` and ``context-sync`` to the ``graymatter`` subparsers."""
    hook = sub.add_parser(
        "hook",
        help="run a session hook (what clients call; reads the payload on stdin, always exits 0)",
        description="Run one session hook as a client calls it: the JSON payload on stdin, the context to "
        "inject (or nothing) on stdout, exit 0 even on failure (see the store's hooks.log). "
        f"Clients: {', '.join(HOOK_CLIENTS)}. Events: {', '.join(HOOK_EVENTS)}.",
    )
    hook.add_argument("client", metavar="CLIENT", help=" | ".join(HOOK_CLIENTS))
    hook.add_argument("event", metavar="EVENT", help=" | ".join(HOOK_EVENTS))
    hook.add_argument(
        "--no-create",
        action="store_true",
        help="never create a store (global hooks): do nothing where no store exists",
    )
    hook.set_defaults(func=cmd_hook)
