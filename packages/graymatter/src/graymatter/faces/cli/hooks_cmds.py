"""The hook commands: ``hook CLIENT EVENT`` (the runtime), ``hooks``, ``status`` and ``context-sync``.

The hook runtime imports nothing beyond the standard library until a store is known to exist; the other
commands load the engine or the wiring inside their handlers.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, BinaryIO, Literal

from graymatter.faces.cli.exit_codes import EXIT_FAILURE, EXIT_OK
from graymatter.faces.cli.hook_fast import HOOK_CLIENTS, HOOK_EVENTS

CONTEXT_FILES = ("AGENTS.md", "CLAUDE.md")


def cmd_hook(args: argparse.Namespace, payload: bytes | None = None) -> int:
    """Run one hook: payload on stdin (or ``payload``, already read from it), context JSON (or nothing) on
    stdout, exit 0 whatever happens."""
    import io

    from graymatter.faces.hooks.runtime import HookInvocation, run_hook

    invocation = HookInvocation(
        args.client,
        args.event,
        no_create=args.no_create,
        dir_override=args.dir,
        warm=bool(getattr(args, "warm", False)),
    )
    if payload is not None:
        stdin: BinaryIO | None = io.BytesIO(payload)
    else:
        stdin = sys.stdin.buffer if sys.stdin is not None else None
    output = run_hook(invocation, stdin)
    if output:
        sys.stdout.write(output + "\n")
    return EXIT_OK


def cmd_status(args: argparse.Namespace) -> int:
    """Per-agent counts and what the hooks injected recently."""
    from graymatter.faces.cli.options import open_memory, resolve_store_location
    from graymatter.faces.cli.render import emit_json
    from graymatter.faces.hooks.status import agent_rows, hook_summary, render_text

    location = resolve_store_location(args)
    with open_memory(args, existing=True) as memory:
        rows = agent_rows(memory)
        store_dir = memory.data_dir
    hooks = hook_summary(Path(store_dir) if store_dir is not None else None)
    if args.json:
        emit_json({"store": location, "agents": rows, "hooks": hooks})
    else:
        sys.stdout.write(render_text(location, rows, hooks))
    return EXIT_OK


def cmd_context_sync(args: argparse.Namespace) -> int:
    """Write the top facts into the managed context block of AGENTS.md / CLAUDE.md."""
    from graymatter.errors import CliUsageError
    from graymatter.faces.cli.options import open_memory
    from graymatter.faces.cli.render import emit_json
    from graymatter.faces.hooks import context_sync as sync
    from graymatter.faces.hooks.blocks import estimate_tokens
    from graymatter.routing import resolve_route

    if args.budget < sync.MIN_BUDGET:
        raise CliUsageError(f"--budget must be at least {sync.MIN_BUDGET} tokens")
    route = resolve_route(dir_override=args.dir, agent_override=args.agent)
    files = [route.root / f for f in (args.file or ())] or _default_files(route.root)
    sync.plan_sync(files, "", 0)  # a damaged or hand-edited block is refused before the store is read
    with open_memory(args, existing=True) as memory:
        facts = [h.text for h in memory.recall(route.agent_id, "", 50, scope="agent")]
        shared = [h.text for h in memory.recall_shared("", 20)]
    body, count = sync.render_body(route.agent_id, facts, shared, args.budget)
    planned = sync.plan_sync(files, body, count)
    tokens = estimate_tokens(body)
    if args.dry_run:
        results = [
            sync.SyncResult(p, "unchanged" if b == a else "would write", count, tokens) for p, b, a in planned
        ]
    else:
        results = sync.apply_sync(planned, tokens, count)
    if args.json:
        emit_json(
            [{"path": str(r.path), "action": r.action, "facts": r.facts, "tokens": r.tokens} for r in results]
        )
    elif not args.quiet:
        for r in results:
            sys.stdout.write(
                f"{r.action} {r.path} ({r.facts} fact{'' if r.facts == 1 else 's'}, ~{r.tokens} tokens)\n"
            )
    return EXIT_OK


def _default_files(root: Path) -> list[Path]:
    existing = [root / name for name in CONTEXT_FILES if (root / name).is_file()]
    return existing or [root / CONTEXT_FILES[0]]


def cmd_hooks(args: argparse.Namespace) -> int:
    """``hooks install|uninstall|doctor``."""
    from graymatter.faces.cli.render import emit_json
    from graymatter.faces.wiring import hooks_manage as manage

    scope: Literal["project", "global"] = "global" if args.global_scope else "project"
    contexts = manage.hook_contexts(tuple(args.client or ()), scope, dir_override=args.dir)
    if args.hooks_command == "doctor":
        checks = [c for ctx in contexts for c in manage.check_client(ctx)] + manage.check_store(contexts)
        if not contexts:
            checks = [manage.Check("warn", "hooks", "no client with hooks detected", "pass --client NAME")]
        if args.json:
            emit_json([c.as_json() for c in checks])
        else:
            for c in checks:
                fix = f" -> {c.fix}" if c.fix and c.status != "ok" else ""
                sys.stdout.write(f"{c.status:<4} {c.client}: {c.message}{fix}\n")
        return EXIT_FAILURE if any(c.status == "fail" for c in checks) else EXIT_OK
    plan = manage.plan_hooks(contexts, uninstall=args.hooks_command == "uninstall")
    done = plan.pending if args.dry_run else manage.apply_hooks(plan, contexts)
    if args.json:
        emit_json(
            [{"path": str(c.path), "action": c.action, "what": c.labels, "diff": c.diff()} for c in done]
        )
    elif not args.quiet:
        for change in done:
            verb = "would change" if args.dry_run else f"{change.action}d".replace("modifyd", "updated")
            sys.stdout.write(f"{verb} {change.path} ({'; '.join(change.labels)})\n")
            if args.dry_run:
                sys.stdout.write(change.diff())
        if not done:
            sys.stdout.write(
                "nothing to change\n" if contexts else "no client with hooks detected; use --client\n"
            )
    return EXIT_OK


def _register_hook(sub: Any) -> None:
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
        help="never create a store (user-wide hooks): do nothing where none is",
    )
    hook.set_defaults(func=cmd_hook)


def _register_hooks(sub: Any) -> None:
    from graymatter.faces.cli.command_groups import add_command_group

    commands = add_command_group(
        sub,
        "hooks",
        help="install, remove or check the session hooks of Claude Code, Codex, Gemini CLI and Qwen Code",
        description="Manage only the session-hook registrations (`graymatter init` installs them with "
        "the MCP entries). Project scope by default: .claude/settings.json, .codex/hooks.json, "
        ".gemini/settings.json, .qwen/settings.json; --global uses the user files and registers hooks "
        "that never create a store.",
    )
    for name, text in (
        ("install", "register the hooks (foreign hooks are kept; a second run changes nothing)"),
        ("uninstall", "remove exactly graymatter's hooks"),
        ("doctor", "check the registrations, the executable, the store and the hook log (reads only)"),
    ):
        action = commands.add_parser(name, help=text, description=text)
        action.add_argument("--client", action="append", choices=HOOK_CLIENTS, help="a client (repeatable)")
        action.add_argument("--global", dest="global_scope", action="store_true", help="the user-wide files")
        if name != "doctor":
            action.add_argument("--dry-run", action="store_true", help="print the diff, write nothing")
        action.set_defaults(func=cmd_hooks, dry_run=False)


def register(sub: Any) -> None:
    """Add ``hook``, ``hooks``, ``status`` and ``context-sync`` to the ``graymatter`` subparsers."""
    _register_hook(sub)
    _register_hooks(sub)
    status = sub.add_parser(
        "status",
        help="facts, recalls, checkpoints per agent; what the hooks injected recently",
        description="Facts, recalls and checkpoints per agent, their last activity, and the hook runs of "
        "the store's hooks.log (the last 24 hours and the newest runs, with estimated tokens). Reads only.",
    )
    status.set_defaults(func=cmd_status)
    sync = sub.add_parser(
        "context-sync",
        help="write the top facts into a managed block of AGENTS.md / CLAUDE.md (for clients without hooks)",
        description="Write the agent's and the shared namespace's top facts, within a token budget, into a "
        "managed block (<!-- graymatter:context:begin ... -->) of AGENTS.md and CLAUDE.md in the project "
        "root (those that exist; AGENTS.md when neither does). Other text is kept; a hand-edited block "
        "is refused.",
    )
    sync.add_argument(
        "--file", action="append", metavar="NAME", help="a file under the project root (repeatable)"
    )
    sync.add_argument("--agent", help="the agent id (default: the routed project's)")
    sync.add_argument(
        "--budget", type=int, default=512, metavar="TOKENS", help="estimated tokens (default 512)"
    )
    sync.add_argument("--dry-run", action="store_true", help="say what would change, write nothing")
    sync.set_defaults(func=cmd_context_sync)
