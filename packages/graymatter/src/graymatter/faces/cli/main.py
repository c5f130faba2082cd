"""The ``graymatter`` command line: run one command and turn its outcome into an exit code.

Only the standard library is imported at module level; the engine loads inside each command, so short
commands start fast. The parser lives in :mod:`graymatter.faces.cli.parser`, the commands in
``memory_cmds``, ``checkpoint_cmds`` and ``admin_cmds`` (plus the extension modules it names), the exit
codes in :mod:`graymatter.faces.cli.exit_codes`: 0 success, 1 storage or provider failure, 2 invalid input
or usage, 3 not found (including "no checkpoint").
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence


def report_error(exc: BaseException, json_mode: bool) -> int:
    """Print ``exc`` as one line (a JSON error object with ``--json``); return its exit code."""
    from graymatter.faces.cli.exit_codes import exit_code
    from graymatter.faces.cli.render import emit_json

    code = getattr(exc, "code", "error")
    message = " ".join(str(exc).split()) or type(exc).__name__
    if json_mode:
        emit_json({"error": {"code": code, "message": message}})
    else:
        sys.stderr.write(f"graymatter: error: {message}\n")
    return exit_code(exc)


def main(argv: Sequence[str] | None = None, *, in_warm_child: bool = False) -> int:
    """Run the CLI; returns the process exit code. ``in_warm_child``: this is a child of the warm server
    running a relayed command line (a hook then runs here, never relays again)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    json_mode = "--json" in argv
    try:
        if argv == ["--version"]:  # no parser to build for the commonest probe of an installation
            from graymatter import __version__

            sys.stdout.write(f"graymatter {__version__}\n")
            return 0
        if "hook" in argv:  # the common case pays nothing for the check
            from graymatter.faces.cli.hook_fast import run_hook_fast

            hooked = run_hook_fast(argv, in_warm_child=in_warm_child)
            if hooked is not None:
                return hooked
        from graymatter.faces.cli.warm_commands import run_warm

        relayed = run_warm(argv, in_warm_child=in_warm_child)
        if relayed is not None:
            return relayed
        from graymatter.faces.cli.parser import parse_arguments

        args = parse_arguments(argv)
        json_mode = bool(args.json)
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        from graymatter.faces.cli.exit_codes import EXIT_INTERRUPTED

        sys.stderr.write("graymatter: interrupted\n")
        return EXIT_INTERRUPTED
    except Exception as exc:
        return _failed(exc, json_mode)


def _failed(exc: Exception, json_mode: bool) -> int:
    """The exit code (and the one line) of a command that raised ``exc``; called while it is handled.

    The error classes load here, not at start-up: most runs never fail.
    """
    from graymatter.errors import GraymatterError
    from graymatter.faces.cli.exit_codes import EXIT_FAILURE

    if isinstance(exc, GraymatterError):
        return report_error(exc, json_mode)
    if isinstance(exc, BrokenPipeError):
        return EXIT_FAILURE
    if isinstance(exc, OSError):  # a file the user named (export target, import source, state file) failed
        where = f" {exc.filename}" if exc.filename else ""
        return report_error(RuntimeError(f"cannot access{where}: {exc.strerror or exc}"), json_mode)
    if os.environ.get("GRAYMATTER_DEBUG"):
        raise exc
    return report_error(RuntimeError(f"internal error ({type(exc).__name__}): {exc}"), json_mode)


if __name__ == "__main__":
    sys.exit(main())
