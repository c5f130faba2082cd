"""``graymatter init`` and ``graymatter doctor``: wire graymatter into the clients, then check the wiring.

Both load :mod:`graymatter.faces.wiring` inside their handlers, so other commands never import it.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from graymatter.faces.cli.exit_codes import EXIT_FAILURE, EXIT_OK

CLIENT_CHOICES = ("claude-code", "codex", "opencode", "cursor", "gemini", "qwen", "windsurf", "vscode")


def cmd_init(args: argparse.Namespace) -> int:
    """Plan and apply (or show) the wiring of the selected clients."""
    from graymatter.faces.cli.render import emit_json
    from graymatter.faces.wiring.wire import InitRequest, describe, run_init

    request = InitRequest(
        clients=tuple(args.client or ()),
        all_clients=args.all,
        scope="global" if args.scope == "global" else "project",
        dir_override=args.dir,
        dry_run=args.dry_run,
        uninstall=args.uninstall,
        hooks=not args.no_hooks,
    )
    result = run_init(request)
    if args.json:
        emit_json(result.as_json())
    elif not args.quiet or args.dry_run:
        sys.stdout.write("".join(line + "\n" for line in describe(result, uninstall=args.uninstall)))
    return EXIT_OK


def cmd_doctor(args: argparse.Namespace) -> int:
    """Check the executable, the store and every client's wiring; exit 1 only on a hard failure."""
    from graymatter.faces.cli.render import emit_json
    from graymatter.faces.wiring.doctor import run_doctor

    report = run_doctor(dir_override=args.dir, scope="global" if args.scope == "global" else "project")
    if args.json:
        emit_json(report.as_json())
    else:
        sys.stdout.write("".join(line + "\n" for line in report.lines()))
    return EXIT_FAILURE if report.failed else EXIT_OK


def _shared(parser: argparse.ArgumentParser) -> None:
    suppress: dict[str, Any] = {"default": argparse.SUPPRESS}
    parser.add_argument("--dir", metavar="DIR", help="the store (default: the routed project's)", **suppress)
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON", **suppress)
    parser.add_argument("--quiet", action="store_true", help="print only requested data", **suppress)
    scope = parser.add_mutually_exclusive_group()
    scope.add_argument(
        "--project", dest="scope", action="store_const", const="project", help="project files (default)"
    )
    scope.add_argument(
        "--global", dest="scope", action="store_const", const="global", help="user-level files"
    )


def register(sub: Any) -> None:
    """Add ``init`` and ``doctor`` to the ``graymatter`` subparsers."""
    init = sub.add_parser(
        "init",
        help="wire graymatter into your MCP clients (config + instruction block)",
        description="Merge graymatter's MCP server entry and a managed instruction block into each client's "
        "own files, keeping every foreign entry and comment; a .graymatter.bak keeps the replaced bytes. "
        "Without --client, the installed clients are detected.",
    )
    init.add_argument(
        "--client", action="append", metavar="NAME", help=f"a client to wire ({', '.join(CLIENT_CHOICES)})"
    )
    init.add_argument("--all", action="store_true", help="every supported client, installed or not")
    init.add_argument("--dry-run", action="store_true", help="print the diff; write nothing")
    init.add_argument("--uninstall", action="store_true", help="remove exactly what init added")
    init.add_argument("--no-hooks", action="store_true", help="leave session hooks out")
    _shared(init)
    init.set_defaults(func=cmd_init, scope="project")
    doctor = sub.add_parser(
        "doctor",
        help="check the install, the store and each client's wiring (changes nothing)",
        description="Check the executable, the store, and each client's MCP entry, instruction block and "
        "hooks; each problem comes with the command that fixes it. Exit 1 only on a hard failure.",
    )
    _shared(doctor)
    doctor.set_defaults(func=cmd_doctor, scope="project")
