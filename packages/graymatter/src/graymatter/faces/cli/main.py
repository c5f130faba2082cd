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

from graymatter.errors import GraymatterError
from graymatter.faces.cli.exit_codes import EXIT_FAILURE, EXIT_INTERRUPTED, exit_code
from graymatter.faces.cli.render import emit_json


def report_error(exc: BaseException, json_mode: bool) -> int:
    """Print ``exc`` as one line (a JSON error object with ``--json``); return its exit code."""
    code = getattr(exc, "code", "error")
    message = " ".join(str(exc).split()) or type(exc).__name__
    if json_mode:
        emit_json({"error": {"code": code, "message": message}})
    else:
        sys.stderr.write(f"graymatter: error: {message}\n")
    return exit_code(exc)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the process exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    json_mode = "--json" in argv
    try:
        if argv == ["--version"]:  # no parser to build for the commonest probe of an installation
            from graymatter import __version__

            sys.stdout.write(f"graymatter {__version__}\n")
            return 0
        hooked = run_hook_fast(argv)
        if hooked is not None:
            return hooked
        from graymatter.faces.cli.parser import parse_arguments

        args = parse_arguments(argv)
        json_mode = bool(args.json)
        return int(args.func(args) or 0)
    except GraymatterError as exc:
        return report_error(exc, json_mode)
    except KeyboardInterrupt:
        sys.stderr.write("graymatter: interrupted\n")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return EXIT_FAILURE
    except OSError as exc:  # a file the user named (export target, import source, state file) failed
        where = f" {exc.filename}" if exc.filename else ""
        return report_error(RuntimeError(f"cannot access{where}: {exc.strerror or exc}"), json_mode)
    except Exception as exc:
        if os.environ.get("GRAYMATTER_DEBUG"):
            raise
        return report_error(RuntimeError(f"internal error ({type(exc).__name__}): {exc}"), json_mode)


def run_hook_fast(argv: list[str]) -> int | None:
    """Run ``hook CLIENT EVENT [--no-create]`` without building the whole parser (hooks run on every
    prompt, so the 30 ms the parser and its command modules cost matter); None for any other command line,
    which then goes through the parser (and its error messages) as usual."""
    if "hook" not in argv:  # the common case pays nothing for the check
        return None
    import argparse

    from graymatter.faces.cli.grammar import lift_global_flags
    from graymatter.faces.cli.hooks_cmds import HOOK_CLIENTS, HOOK_EVENTS, cmd_hook

    flags, rest = lift_global_flags(argv)
    no_create = "--no-create" in rest
    words = [word for word in rest if word != "--no-create"]
    if len(words) != 3 or words[0] != "hook" or words[1] not in HOOK_CLIENTS or words[2] not in HOOK_EVENTS:
        return None
    args = argparse.Namespace(client=words[1], event=words[2], no_create=no_create)
    flags.apply(args)
    # A hook is a short-lived process with a bounded payload and bounded work (the client kills it at
    # its timeout): the cyclic collector only costs it time (about 10 ms of the imports), never memory.
    import gc

    gc.disable()
    return cmd_hook(args)


if __name__ == "__main__":
    sys.exit(main())
