"""One hook run, start to end: payload, route, store, handler, dedupe, output and the log line.

The contract every client relies on: the hook always exits 0; on any failure its stdout is empty and the
hook log gets one line naming the error's class and code. A store is opened only where one exists,
except that a *wired* hook (registered in the project's own settings, so without ``--no-create``) may
create the routed store to save a ``remember:`` note or a checkpoint. Reads never create anything.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Final

from graymatter.faces.hooks import log
from graymatter.faces.hooks.clients import CLIENTS, CONTEXT_EVENTS, EVENTS, ClientDialect, context_output
from graymatter.faces.hooks.payload import HookPayload, PayloadError, parse_payload, read_payload

if TYPE_CHECKING:
    from graymatter.faces.hooks.events import HookOutcome, HookRequest
    from graymatter.routing import ProjectRoute

DATABASE_URL_ENV: Final = "GRAYMATTER_DATABASE_URL"
CLOSE_WAIT_S: Final = 1.0
"""How long a hook waits for a background consolidation it triggered before it exits."""


class UnknownHook(ValueError):
    """The hook command names a client or an event graymatter does not have."""

    code = "hook_unknown"


class WarmChildLost(RuntimeError):
    """The warm server's child that took a relayed hook ended before it reported (nothing was printed)."""

    code = "hook_warm_lost"


@dataclass(frozen=True)
class HookInvocation:
    """The command line of one hook: client, event, ``--no-create``, an explicit ``--dir``, and whether a
    child of the warm server runs it (the log line then says ``"served": "warm"``)."""

    client: str
    event: str
    no_create: bool = False
    dir_override: str | None = None
    warm: bool = False


def client_env(env: Mapping[str, str], dialect: ClientDialect) -> dict[str, str]:
    """``env`` where only this client's project-root variable counts (another client's is ignored)."""
    from graymatter.routing import PROJECT_DIR_ENVS

    return {k: v for k, v in env.items() if k not in PROJECT_DIR_ENVS or k == dialect.project_env}


def _read(stdin: BinaryIO | None) -> tuple[HookPayload, PayloadError | None]:
    if stdin is None or stdin.isatty():
        return HookPayload(), None
    try:
        return read_payload(stdin), None
    except PayloadError as exc:
        return HookPayload(), exc


def _store_location(store_dir: Path, env: Mapping[str, str]) -> tuple[str, bool]:
    """The store to open and whether it exists already."""
    url = env.get(DATABASE_URL_ENV, "").strip()
    if url:
        return url, True
    from graymatter.store.sqlite.schema import DB_FILENAME

    return str(store_dir), (store_dir / DB_FILENAME).is_file()


def _route(invocation: HookInvocation, payload: HookPayload, env: Mapping[str, str]) -> ProjectRoute:
    from graymatter.routing import resolve_route

    dialect = CLIENTS[invocation.client]
    return resolve_route(
        env=client_env(env, dialect), payload_cwd=payload.cwd, dir_override=invocation.dir_override
    )


def _handle(
    invocation: HookInvocation, payload: HookPayload, env: Mapping[str, str], route: ProjectRoute
) -> Any:
    from graymatter.faces.hooks.events import HookOutcome, HookRequest, writes

    location, exists = _store_location(route.store_dir, env)
    request = HookRequest(CLIENTS[invocation.client], invocation.event, payload, route.agent_id)
    if not exists and (invocation.no_create or not writes(invocation.event, payload)):
        return HookOutcome("no-store")
    return _with_memory(location, request)


def _with_memory(location: str, request: HookRequest) -> HookOutcome:
    from graymatter.engine.memory import Memory
    from graymatter.faces.hooks.events import HANDLERS
    from graymatter.store import open_store

    memory = Memory(store=open_store(location))
    memory.close_timeout_s = CLOSE_WAIT_S
    with memory:
        return HANDLERS[request.event](memory, request)


def _dedupe(store_dir: Path, invocation: HookInvocation, payload: HookPayload, outcome: HookOutcome) -> None:
    from graymatter.faces.hooks.state import SessionState, block_digest

    session = payload.session_id
    if session is None or not store_dir.is_dir():
        return
    state = SessionState(store_dir)
    if invocation.event == "session-start":
        if payload.source != "resume":  # a new, cleared or compacted context holds no earlier block
            state.reset(session)
        return
    if outcome.outcome != "injected":
        return
    digest = block_digest(outcome.context)
    if state.seen(session, digest):
        outcome.outcome, outcome.context = "repeated", ""
    else:
        state.record(session, digest)


def run_hook(invocation: HookInvocation, stdin: BinaryIO | None, env: Mapping[str, str] | None = None) -> str:
    """Run one hook and return its stdout (possibly empty); never raises."""
    started = time.perf_counter()
    env = os.environ if env is None else env
    record: dict[str, Any] = {"client": invocation.client, "event": invocation.event}
    if invocation.warm:
        record["served"] = "warm"
    store_dir: Path | None = None
    output = ""
    try:
        if invocation.client not in CLIENTS or invocation.event not in EVENTS:
            raise UnknownHook("no such hook client or event")
        payload, problem = _read(stdin)
        record["session"] = (payload.session_id or "")[:64] or None
        route = _route(invocation, payload, env)  # an unreadable payload routes by the process cwd
        store_dir = route.store_dir
        record["agent_id"] = route.agent_id
        if problem is not None:
            raise problem
        outcome = _handle(invocation, payload, env, route)
        _dedupe(store_dir, invocation, payload, outcome)
        if outcome.context and invocation.event in CONTEXT_EVENTS:
            output = context_output(
                CLIENTS[invocation.client], invocation.event, outcome.context, outcome.notice
            )
        record.update(outcome=outcome.outcome, **outcome.details)
        record.update(chars=len(outcome.context), tokens=_tokens(outcome.context))
    except BaseException as exc:  # the contract: exit 0, print nothing, log the class and code
        output = ""
        record.update(outcome="error", error=type(exc).__name__, code=str(getattr(exc, "code", "") or ""))
        if store_dir is None:
            store_dir = _fallback_dir(invocation, env)
    record["ms"] = round((time.perf_counter() - started) * 1000, 1)
    import resource

    used = resource.getrusage(resource.RUSAGE_SELF)  # this process's CPU (a warm child's own, from its fork)
    record["cpu_ms"] = round((used.ru_utime + used.ru_stime) * 1000, 1)
    _log(store_dir, record)
    return output


def log_failure(invocation: HookInvocation, payload: bytes, exc: BaseException) -> None:
    """Log one failed run of ``invocation`` whose payload was ``payload`` (routed as the run would have
    been); never raises."""
    record: dict[str, Any] = {"client": invocation.client, "event": invocation.event}
    record.update(outcome="error", error=type(exc).__name__, code=str(getattr(exc, "code", "") or ""))
    store_dir: Path | None = None
    try:
        parsed = HookPayload()
        with contextlib.suppress(PayloadError):
            parsed = parse_payload(payload)
        record["session"] = (parsed.session_id or "")[:64] or None
        route = _route(invocation, parsed, os.environ)
        store_dir, record["agent_id"] = route.store_dir, route.agent_id
    except Exception:
        store_dir = _fallback_dir(invocation, os.environ)
    _log(store_dir, record)


def _tokens(text: str) -> int:
    from graymatter.faces.hooks.blocks import estimate_tokens

    return estimate_tokens(text)


def _fallback_dir(invocation: HookInvocation, env: Mapping[str, str]) -> Path | None:
    """Where to log a failure that happened before routing finished: the explicit store, if any."""
    explicit = invocation.dir_override or env.get("GRAYMATTER_DIR")
    return Path(explicit) if explicit else None


def _log(store_dir: Path | None, record: dict[str, Any]) -> None:
    try:
        written = store_dir is not None and log.write_line(store_dir, record)
    except OSError:
        written = False
    if not written and record.get("outcome") == "error":
        sys.stderr.write(f"graymatter hook: {record['event']} failed ({record['error']}); nothing injected\n")
