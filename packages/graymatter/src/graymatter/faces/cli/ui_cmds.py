"""``graymatter ui``: the web dashboard on the local store, on 127.0.0.1, with a one-time login link.

Only argparse and the standard library load at import time; the engine, starlette and uvicorn load when
the command runs.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

UI_TEXT = (
    "Serve the web dashboard of the store on 127.0.0.1 (a free port unless --port), print its URL with a "
    "one-time login link and open it in the browser (unless --no-open). Stop with Ctrl-C."
)
"""``graymatter ui --help``."""


def register(subparsers: Any) -> None:
    """Add ``ui`` to the graymatter CLI."""
    ui = subparsers.add_parser("ui", help="open the web dashboard on the local store", description=UI_TEXT)
    ui.add_argument("--dir", metavar="DIR", default=argparse.SUPPRESS, help="data directory")
    ui.add_argument(
        "--store", metavar="URL", default=argparse.SUPPRESS, help="store URL: a directory or postgresql://..."
    )
    ui.add_argument(
        "--port", type=int, default=0, metavar="P", help="port on 127.0.0.1 (default: a free one)"
    )
    ui.add_argument("--no-open", action="store_true", help="print the login link without opening a browser")
    ui.set_defaults(func=run_ui)


def run_ui(args: argparse.Namespace) -> int:
    """Entry point of ``graymatter ui``."""
    from graymatter.engine.access import Principal, TokenService
    from graymatter.engine.memory import Memory
    from graymatter.errors import InvalidInput
    from graymatter.faces.cli.options import resolve_store_location
    from graymatter.faces.dashboard.sessions import SessionStore
    from graymatter.faces.http.app import ServiceConfig, build_app
    from graymatter.faces.http.serve import bind_socket, run_server
    from graymatter.store import open_store

    if not 0 <= args.port <= 65535:
        raise InvalidInput("--port must be between 0 and 65535")
    location = resolve_store_location(args)
    sock = bind_socket("127.0.0.1", args.port, f"127.0.0.1:{args.port}")
    try:
        port = sock.getsockname()[1]
        memory = Memory(store=open_store(location))
        sessions = SessionStore()
        config = ServiceConfig(port=port, mcp=False, rate_limit=0.0, dashboard_sessions=sessions)
        try:
            app = build_app(memory, TokenService(memory.store.token_store()), config, close_memory=True)
        except BaseException:
            memory.close()
            raise
    except BaseException:
        sock.close()
        raise
    link = f"http://127.0.0.1:{port}/ui/login?code={sessions.issue_login_code(Principal.default(None))}"
    print(f"graymatter dashboard on http://127.0.0.1:{port}/ui/", file=sys.stderr)
    print(f"one-time login link (valid 10 minutes): {link}", file=sys.stderr)
    sys.stderr.flush()
    if not args.no_open:
        import webbrowser

        webbrowser.open(link)
    run_server(app, sock, log_level="warning", access_log=False, server_header=False, log_config=None)
    return 0
