"""``graymatter serve``, ``graymatter token create|list|revoke`` and ``graymatter migrate``.

Only argparse, the standard library and the CLI's argparse helper are imported at module level; uvicorn,
starlette, psycopg and the engine load when a command runs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graymatter.faces.cli.command_groups import add_command_group

if TYPE_CHECKING:
    from graymatter.engine.access import TokenService
    from graymatter.store import Store

DEFAULT_BIND = "127.0.0.1:8080"
SERVE_TEXT = (
    "Serve the REST API and MCP over streamable HTTP (at /mcp) on one port. Every route except "
    "/healthz and /openapi.json needs a bearer token: the default token (--token, else "
    "$GRAYMATTER_HTTP_TOKEN, else <dir>/graymatter.http-token) may use every namespace; tokens made "
    "with `graymatter token create` are limited to their agents. Several servers may share one "
    "PostgreSQL database behind a load balancer."
)
"""``graymatter serve --help``."""
MIGRATE_TEXT = (
    "Copy every fact, checkpoint, link and token from --from into the empty store --to, then verify "
    "counts and SHA-256 checksums of every record kind. Exit 1 if verification fails."
)
"""``graymatter migrate --help``."""
TOKEN_TEXT = "Create, list and revoke tokens scoped to agent namespaces (stored hashed)."
"""``graymatter token --help``."""


def _store_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dir", metavar="DIR", default=argparse.SUPPRESS, help="data directory")
    parser.add_argument(
        "--store",
        metavar="URL",
        default=argparse.SUPPRESS,
        help="store URL: a directory, sqlite:///DIR or postgresql://... (default $GRAYMATTER_DATABASE_URL)",
    )


def register(subparsers: Any) -> None:
    """Add ``serve``, ``token`` and ``migrate`` to the graymatter CLI."""
    _register_serve(subparsers)
    _register_token(subparsers)
    _register_migrate(subparsers)


def _register_serve(subparsers: Any) -> None:
    serve = subparsers.add_parser(
        "serve",
        help="run the HTTP service: REST API + MCP (streamable HTTP) on one port",
        description=SERVE_TEXT,
    )
    _store_options(serve)
    serve.add_argument(
        "--http", metavar="HOST:PORT", default=DEFAULT_BIND, help=f"bind address ({DEFAULT_BIND})"
    )
    serve.add_argument("--workers", type=int, default=1, metavar="N", help="worker processes (default 1)")
    serve.add_argument("--token", help="default bearer token (at least 16 characters)")
    serve.add_argument(
        "--no-auth", action="store_true", help="no token needed; refused unless HOST is loopback"
    )
    serve.add_argument(
        "--rate-limit", type=float, default=200.0, metavar="R", help="requests per second per token (0 = off)"
    )
    serve.add_argument("--rate-burst", type=int, default=400, metavar="B", help="burst size per token")
    serve.add_argument(
        "--max-body-bytes", type=int, default=1024 * 1024, metavar="N", help="largest request body (1 MiB)"
    )
    serve.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="extra Host header value to accept (e.g. the load balancer's name); repeatable",
    )
    serve.add_argument(
        "--graceful-timeout",
        type=float,
        default=30.0,
        metavar="S",
        help="seconds to finish in-flight requests",
    )
    _limit_options(serve)
    serve.set_defaults(func=run_serve)


def _limit_options(serve: argparse.ArgumentParser) -> None:
    """Slow-client and connection limits, and the PostgreSQL pool (docs/limits.md, docs/postgres.md)."""
    for flag, default, what in (
        ("--read-timeout", 30.0, "seconds a client has to send one whole request (30)"),
        ("--idle-timeout", 5.0, "seconds an idle keep-alive connection stays open (5)"),
        ("--pool-timeout", 30.0, "seconds a request waits for a busy PostgreSQL pool (30)"),
    ):
        serve.add_argument(flag, type=float, default=default, metavar="S", help=what)
    for flag, count, what in (
        ("--max-connections", 1000, "open connections per server process (1000)"),
        ("--pool-min", 1, "PostgreSQL connections each process keeps open (1)"),
        ("--pool-max", 8, "PostgreSQL connections each process may open (8)"),
    ):
        serve.add_argument(flag, type=int, default=count, metavar="N", help=what)


def _register_token(subparsers: Any) -> None:
    token_commands = add_command_group(
        subparsers, "token", help="manage scoped access tokens", description=TOKEN_TEXT
    )
    create = token_commands.add_parser("create", help="create a token (shown once)")
    _store_options(create)
    create.add_argument("--agents", required=True, help="comma-separated agent ids, or * for every namespace")
    create.add_argument("--read-only", action="store_true", help="may read but not write")
    create.add_argument("--label", default="", help="a note shown by `token list`")
    create.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="JSON output")
    create.set_defaults(func=run_token_create)
    listing = token_commands.add_parser("list", help="list tokens (never shows secrets)")
    _store_options(listing)
    listing.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="JSON output")
    listing.set_defaults(func=run_token_list)
    revoke = token_commands.add_parser("revoke", help="revoke a token by id")
    _store_options(revoke)
    revoke.add_argument("token_id", help="the token id shown by `token list`")
    revoke.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="JSON output")
    revoke.set_defaults(func=run_token_revoke)


def _register_migrate(subparsers: Any) -> None:
    migrate = subparsers.add_parser(
        "migrate",
        help="copy a store to another backend (SQLite <-> PostgreSQL), verified",
        description=MIGRATE_TEXT,
    )
    migrate.add_argument("--from", dest="source", required=True, metavar="URL", help="source store")
    migrate.add_argument("--to", dest="target", required=True, metavar="URL", help="target store (empty)")
    migrate.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="JSON output")
    migrate.set_defaults(func=run_migrate)


# --------------------------------------------------------------------------------------------- token


def _open_tokens(args: argparse.Namespace) -> tuple[Store, TokenService]:
    from graymatter.engine.access import TokenService
    from graymatter.faces.cli.options import resolve_store_location
    from graymatter.store import open_store

    store = open_store(resolve_store_location(args))
    return store, TokenService(store.token_store())


def run_token_create(args: argparse.Namespace) -> int:
    from graymatter.engine.access import parse_agents

    agents = parse_agents(args.agents)  # InvalidToken is an InvalidInput: exit 2, code invalid_input
    store, service = _open_tokens(args)
    try:
        token, record = service.create(agents, read_only=args.read_only, label=args.label)
    finally:
        store.close()
    if getattr(args, "json", False):
        print(json.dumps({"token": token, **record.model_dump(mode="json")}))
    else:
        print(token)
        print(
            f"token {record.id}: {record.access} on {', '.join(record.agents)} (shown once; store it safely)",
            file=sys.stderr,
        )
    return 0


def run_token_list(args: argparse.Namespace) -> int:
    store, service = _open_tokens(args)
    try:
        records = service.list()
    finally:
        store.close()
    if getattr(args, "json", False):
        print(json.dumps({"tokens": [r.model_dump(mode="json") for r in records]}))
        return 0
    if not records:
        print("no tokens (the default token of `graymatter serve` may use every namespace)")
    for r in records:
        state = f"revoked {r.revoked_at:%Y-%m-%d %H:%M}" if r.revoked_at else "active"
        label = f"  {r.label}" if r.label else ""
        print(f"{r.id}  {r.access:<10}  {','.join(r.agents)}  {state}{label}")
    return 0


def run_token_revoke(args: argparse.Namespace) -> int:
    from graymatter.errors import NotFound

    store, service = _open_tokens(args)
    try:
        revoked = service.revoke(args.token_id)
    finally:
        store.close()
    if not revoked:
        raise NotFound(f"no active token {args.token_id!r} (see `graymatter token list`)")
    if getattr(args, "json", False):
        print(json.dumps({"revoked": args.token_id}))
    else:
        print(f"revoked {args.token_id}")
    return 0


# --------------------------------------------------------------------------------------------- migrate


def run_migrate(args: argparse.Namespace) -> int:
    from graymatter.engine.migrate import migrate
    from graymatter.faces.cli.options import require_existing_store

    require_existing_store(args.source)  # never create the source by copying from it

    def progress(message: str) -> None:
        if not getattr(args, "json", False):
            print(f"migrate: {message}", file=sys.stderr)

    report = migrate(args.source, args.target, progress=progress)
    if getattr(args, "json", False):
        print(report.model_dump_json())
    else:
        for kind in report.kinds:
            mark = "ok" if kind.ok else "MISMATCH"
            print(
                f"{kind.kind:<12} {kind.source_count:>9} -> {kind.target_count:<9} "
                f"sha256 {kind.target_sha256[:16]}  {mark}"
            )
        print("verified" if report.verified else "verification FAILED", file=sys.stderr)
    return 0 if report.verified else 1


# --------------------------------------------------------------------------------------------- serve


def _checked_bind(args: argparse.Namespace) -> tuple[str, int]:
    """The bind address, once every numeric flag of ``serve`` is known to be usable."""
    from graymatter.errors import InvalidInput
    from graymatter.faces.http.security import parse_bind

    host, port = parse_bind(args.http)
    if args.workers < 1 or args.workers > 64:
        raise InvalidInput("--workers must be between 1 and 64")
    if args.workers > 1 and port == 0:
        raise InvalidInput("--workers > 1 needs an explicit port")
    if args.rate_limit < 0 or args.rate_burst < 1:
        raise InvalidInput("--rate-limit must be >= 0 and --rate-burst >= 1")
    if not 1024 <= args.max_body_bytes <= 64 * 1024 * 1024:
        raise InvalidInput("--max-body-bytes must be between 1024 and 67108864")
    if not (args.read_timeout > 0 and args.idle_timeout > 0 and args.pool_timeout > 0):
        raise InvalidInput("--read-timeout, --idle-timeout and --pool-timeout must be positive")
    if args.max_connections < 1 or not 1 <= args.pool_min <= args.pool_max:
        raise InvalidInput("--max-connections must be >= 1 and 1 <= --pool-min <= --pool-max")
    return host, port


def _default_token(args: argparse.Namespace) -> str | None:
    """``--token``, ``$GRAYMATTER_HTTP_TOKEN`` or the token file; None with ``--no-auth``."""
    from graymatter.errors import InvalidInput
    from graymatter.faces.cli.options import resolve_data_dir
    from graymatter.faces.http.security import resolve_token

    if not args.no_auth:
        return resolve_token(Path(resolve_data_dir(args)), args.token)
    if args.token:
        raise InvalidInput("--token and --no-auth cannot be combined")
    return None


def _banner(args: argparse.Namespace, url: str, workers: int) -> None:
    """The start-up line on stderr: text, or one JSON object with ``--json`` (like the log lines after it)."""
    if getattr(args, "json", False):
        banner = {"event": "listening", "url": url, "mcp": f"{url}/mcp", "workers": workers}
        print(json.dumps(banner), file=sys.stderr)
        return
    suffix = f" ({workers} workers)" if workers > 1 else ""
    print(f"graymatter serving REST + MCP on {url}{suffix}", file=sys.stderr)


def run_serve(args: argparse.Namespace) -> int:
    """Entry point of ``graymatter serve``."""
    from graymatter.faces.cli.options import resolve_store_location
    from graymatter.faces.http.observability import configure_logging
    from graymatter.faces.http.serve import (
        ServeSettings,
        bind_socket,
        build_service,
        run_server,
        run_workers,
        shown_host,
    )

    host, port = _checked_bind(args)
    location = resolve_store_location(args)
    settings = ServeSettings(
        store=location,
        host=host,
        port=port,
        token=_default_token(args),
        no_auth=bool(args.no_auth),
        rate_limit=args.rate_limit,
        rate_burst=args.rate_burst,
        extra_hosts=list(args.allow_host),
        max_body_bytes=args.max_body_bytes,
        read_timeout_s=args.read_timeout,
        max_connections=args.max_connections,
        pool=(args.pool_min, args.pool_max, args.pool_timeout),
    )
    configure_logging()
    common: dict[str, Any] = {
        "log_level": "info",
        "access_log": False,
        "timeout_graceful_shutdown": args.graceful_timeout,
        "timeout_keep_alive": args.idle_timeout,
        "server_header": False,
        "log_config": None,
    }
    if args.workers > 1:
        _banner(args, f"http://{shown_host(host)}:{port}", args.workers)
        run_workers(settings, args.workers, **common)
        return 0
    sock = bind_socket(host, port, args.http)
    try:
        bound = sock.getsockname()[1]
        app = build_service(settings, port=bound)
    except BaseException:
        sock.close()
        raise
    _banner(args, f"http://{shown_host(host)}:{bound}", 1)
    sys.stderr.flush()
    run_server(app, sock, settings, **common)
    return 0
