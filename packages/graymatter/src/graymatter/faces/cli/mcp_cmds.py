"""``graymatter mcp serve``: the MCP server over stdio (default) or streamable HTTP (``--http HOST:PORT``).

Only argparse and the CLI's argparse helper are imported at module level; the MCP SDK, uvicorn and the
engine load when the command runs.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graymatter.faces.cli.command_groups import add_command_group

if TYPE_CHECKING:
    from graymatter.engine.memory import Memory

MCP_TEXT = "Serve graymatter's seven memory tools over the Model Context Protocol."
"""``graymatter mcp --help``."""
SERVE_TEXT = (
    "Run the MCP server. Without --http it speaks MCP over stdin/stdout (what MCP clients\n"
    "spawn). With --http it serves streamable HTTP at http://HOST:PORT/mcp behind a bearer\n"
    "token: --token, else $GRAYMATTER_HTTP_TOKEN, else <dir>/graymatter.http-token\n"
    "(created once, mode 0600). The global --no-daemon flag is accepted and changes\n"
    "nothing: the store needs no daemon."
)
"""``graymatter mcp serve --help`` (line breaks kept)."""


def register(subparsers: Any) -> None:
    """Add ``mcp serve`` to the graymatter CLI."""
    mcp_commands = add_command_group(
        subparsers,
        "mcp",
        help="serve graymatter to MCP clients (Claude Code, OpenCode, Codex, Cursor, ...)",
        description=MCP_TEXT,
    )
    serve = mcp_commands.add_parser(
        "serve",
        help="run the MCP server (stdio unless --http is given)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=SERVE_TEXT,
    )
    serve.add_argument(
        "--http",
        metavar="HOST:PORT",
        help="serve streamable HTTP on this address (e.g. 127.0.0.1:8765; port 0 picks a free port)",
    )
    serve.add_argument("--token", help="bearer token HTTP clients must present (at least 16 characters)")
    serve.add_argument(
        "--no-auth",
        action="store_true",
        help="serve HTTP without a token; refused unless HOST is a loopback address",
    )
    # The global store flags are also accepted after ``serve`` (client configs often put them last).
    # SUPPRESS keeps an omitted flag from overwriting a value given before ``mcp``.
    serve.add_argument("--dir", metavar="DIR", default=argparse.SUPPRESS, help="data directory (global flag)")
    serve.add_argument("--store", metavar="URL", default=argparse.SUPPRESS, help="store URL (global flag)")
    serve.add_argument(
        "--no-daemon", action="store_true", default=argparse.SUPPRESS, help="accepted; no daemon is used"
    )
    serve.set_defaults(func=run_serve)


def _data_dir(args: argparse.Namespace) -> Path:
    """The data directory (``--dir``, ``$GRAYMATTER_DIR``, ``./.graymatter``): home of the token file."""
    from graymatter.faces.cli.options import resolve_data_dir

    return Path(resolve_data_dir(args))


def run_serve(args: argparse.Namespace) -> int:
    """Entry point of ``graymatter mcp serve``."""
    from graymatter.errors import InvalidInput

    if args.http is None and (args.token is not None or args.no_auth):
        raise InvalidInput("--token and --no-auth only apply to --http")
    if args.http is None and not _IN_WARM_CHILD and _invoked_from_command_line():
        from graymatter.faces.mcp_server.warm_relay import serve_warm

        code = serve_warm(sys.argv[1:])
        if code is not None:
            return code
    from graymatter.faces.cli.options import open_memory

    memory = open_memory(args)
    try:
        if args.http is None:
            return _serve_stdio(memory)
        return _serve_http(args, memory)
    finally:
        memory.close()


_IN_WARM_CHILD = False
"""True in a process forked by the warm server: it serves in-process (never relays again)."""


def _invoked_from_command_line() -> bool:
    """Whether this process is the ``graymatter`` command itself (so ``sys.argv`` holds its arguments)."""
    program = Path(sys.argv[0]).name if sys.argv else ""
    return program in {"graymatter", "__main__.py"}


def _serve_in_child(argv: list[str]) -> int:
    """How a child of the warm server runs: the ordinary command line (``mcp serve``, a relayed ``hook`` or
    a relayed short command of ``warm_commands``), in-process."""
    global _IN_WARM_CHILD
    _IN_WARM_CHILD = True
    from graymatter.faces.cli.main import main

    return main(argv, in_warm_child=True)


def _preload() -> None:
    """What the warm server does before it listens: import everything a stdio session needs, then run one
    session's start (parse, open a throwaway store, build the server, initialize, tools/list) so that the
    lazy work of a first session (schema builds, serializers) is done once here, not in every child.

    Leaves no thread behind (``fork`` copies only the calling thread), checked by the caller.
    """
    import tempfile

    import anyio
    from mcp import Client

    from graymatter.faces.cli.options import open_memory
    from graymatter.faces.cli.parser import build_parser, parse_arguments
    from graymatter.faces.mcp_server.server import build_server

    build_parser()  # imports every command's module: relayed command lines (warm_commands) find them loaded

    async def handshake(server: Any) -> None:
        async with Client(server, mode="legacy") as client:
            await client.list_tools()

    with tempfile.TemporaryDirectory() as tmp:
        memory = open_memory(parse_arguments(["--no-daemon", "--dir", tmp, "mcp", "serve"]))
        try:
            anyio.run(handshake, build_server(memory))
        finally:
            memory.close()
    _preload_hooks()
    import gc

    gc.collect()
    gc.freeze()  # what the children inherit is never scanned by their collector (nor copied on write by it)


def _preload_hooks() -> None:
    """Run each hook event once on a throwaway store, so relayed hooks (a child per prompt) find the
    engine, the store and the hook modules imported and their first-use work done."""
    import io
    import json
    import tempfile

    from graymatter.faces.hooks.runtime import HookInvocation, run_hook

    with tempfile.TemporaryDirectory() as tmp:
        env = {"GRAYMATTER_DIR": tmp, "GRAYMATTER_AGENT_ID": "warm-preload", "HOME": tmp}
        runs = (
            ("user-prompt", "remember: the warm server preloads the hooks"),  # creates the store
            ("pre-compact", ""),  # and a checkpoint for session-start to show
            ("session-start", ""),
            ("user-prompt", "what does the warm server preload?"),
        )
        for event, prompt in runs:
            payload = {"session_id": "warm-preload", "cwd": tmp, "prompt": prompt, "source": "startup"}
            run_hook(HookInvocation("claude-code", event), io.BytesIO(json.dumps(payload).encode()), env)


def run_warm_server() -> None:
    """Entry point of the warm server process (started by the relay in ``run_serve``)."""
    from graymatter.faces.mcp_server.warm_server import run

    sys.exit(run(_serve_in_child, _preload))


def _serve_stdio(memory: Memory) -> int:
    from graymatter.faces.mcp_server.server import build_server
    from graymatter.faces.mcp_server.stdio import configure_stderr_logging, run_stdio

    configure_stderr_logging()
    try:
        run_stdio(build_server(memory))
    except KeyboardInterrupt:
        pass
    return 0


def _serve_http(args: argparse.Namespace, memory: Memory) -> int:
    """MCP alone over streamable HTTP, from the service's one app factory, behind one static token."""
    from graymatter.engine.access import StaticToken
    from graymatter.faces.http.app import ServiceConfig, build_app
    from graymatter.faces.http.observability import configure_logging
    from graymatter.faces.http.rest import MCP_PATH
    from graymatter.faces.http.security import parse_bind, require_loopback_for_no_auth, resolve_token
    from graymatter.faces.http.serve import bind_socket, run_server, shown_host

    host, port = parse_bind(args.http)
    token = None if args.no_auth else resolve_token(_data_dir(args), args.token)
    if args.no_auth:
        require_loopback_for_no_auth(host)
    configure_logging(logging.WARNING)  # one JSON line per event on stderr, like ``graymatter serve``
    sock = bind_socket(host, port, args.http)  # the address printed below is usable at once
    try:
        bound_port = sock.getsockname()[1]  # the Host/Origin allow-list needs the real port
        config = ServiceConfig(
            host=host, port=bound_port, no_auth=args.no_auth, rate_limit=0, rest=False, mcp_stateless=False
        )
        app = build_app(memory, None if token is None else StaticToken(token, token_id=None), config)
    except BaseException:
        sock.close()
        raise
    auth = "no auth (loopback only)" if args.no_auth else "bearer token required"
    print(
        f"graymatter MCP listening on http://{shown_host(host)}:{bound_port}{MCP_PATH} ({auth})",
        file=sys.stderr,
    )
    sys.stderr.flush()
    run_server(
        app,
        sock,
        log_level="warning",
        timeout_graceful_shutdown=10,
        h11_max_incomplete_event_size=64 * 1024,
        server_header=False,
        log_config=None,
    )
    return 0
