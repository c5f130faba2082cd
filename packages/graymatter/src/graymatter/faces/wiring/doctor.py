"""``graymatter doctor``: the executable, the store, and each client's wiring, read-only.

Every check reads; none creates, opens for writing or migrates what it inspects (the store is read through
a read-only SQLite connection, and only when it exists). Problems come with the one command that fixes
them; only a hard failure (an unreadable store or config file, a store newer than this graymatter)
makes the exit status 1.
"""

from __future__ import annotations

import os
import shlex
import sqlite3
from collections.abc import Mapping
from pathlib import Path

from graymatter.errors import GraymatterError
from graymatter.faces.wiring import blocks
from graymatter.faces.wiring.checks import Check, Report, Status, extension_checks
from graymatter.faces.wiring.clients import CLIENTS, Homes, Scope, launch_for, running_executable
from graymatter.faces.wiring.edits import BlockEdit, Edit, WiringContext, install_text, present
from graymatter.faces.wiring.plan import client_edits, contexts, read_text


def _executable() -> Check:
    from graymatter import __version__

    argv = running_executable()
    return Check("executable", "ok", f"graymatter {__version__} at {shlex.join(argv)}")


def _settings(env: Mapping[str, str]) -> Check:
    from graymatter.config import MemoryConfig

    try:
        config = MemoryConfig.from_env(dict(env))
    except GraymatterError as exc:
        return Check("settings", "fail", str(exc), "fix or unset that variable")
    return Check("settings", "ok", f"embeddings: {config.embedding} (GRAYMATTER_EMBEDDINGS)")


def _store(store_dir: Path, env: Mapping[str, str]) -> list[Check]:
    from graymatter.store.sqlite.schema import DB_FILENAME, SCHEMA_VERSION

    if env.get("GRAYMATTER_DATABASE_URL"):
        return [Check("store", "info", "a PostgreSQL store is configured; doctor checks local stores only")]
    database = store_dir / DB_FILENAME
    if not database.is_file():
        return [Check("store", "info", f"{store_dir} does not exist yet; it is created on the first write")]
    try:
        # No write-ahead log: everything is in the main file, read it as immutable (SQLite then creates no
        # -wal/-shm files). With a log a writer may be live: an ordinary read-only connection.
        wal = database.with_name(database.name + "-wal").exists()
        uri = f"{database.resolve().as_uri()}?{'mode=ro' if wal else 'immutable=1'}"
        connection = sqlite3.connect(uri, uri=True)
        try:
            version = connection.execute("PRAGMA user_version").fetchone()[0]
            facts = connection.execute("SELECT count(*) FROM facts").fetchone()[0]
            pending = connection.execute("SELECT count(*) FROM facts WHERE embed_state = 1").fetchone()[0]
            model = connection.execute("SELECT value FROM meta WHERE key = 'embedding_model'").fetchone()
        finally:
            connection.close()
    except sqlite3.Error as exc:
        return [
            Check("store", "fail", f"cannot read {database}: {exc}", "move the file away or restore a backup")
        ]
    if version > SCHEMA_VERSION:
        return [Check("store", "fail", f"schema v{version} is newer than this graymatter (v{SCHEMA_VERSION})",
                      "pip install --upgrade graymatter")]  # fmt: skip
    checks = [Check("store", "ok", f"{store_dir}: {facts} facts, schema v{version}")]
    if version < SCHEMA_VERSION:
        checks.append(
            Check("schema", "info", f"v{version} is migrated to v{SCHEMA_VERSION} on the next write")
        )
    embedder = model[0] if model else "none (keyword recall)"
    state: Status = "warn" if pending else "ok"
    checks.append(Check("embedder", state, f"{embedder}; {pending} facts wait for a vector"))
    return checks


def _fix(name: str, scope: Scope, store: Path | None, explicit: bool) -> str:
    parts = ["graymatter"]
    if explicit and store is not None:
        parts += ["--dir", str(store)]
    parts += ["init", "--client", name]
    if scope == "global":
        parts.append("--global")
    return shlex.join(parts)


def _entry_problem(expected: object, found: object, required: tuple[str, ...]) -> str:
    if not isinstance(found, dict):
        return "the entry is not an object"
    command = found.get("command")
    first = command[0] if isinstance(command, list) and command else command
    if isinstance(first, str) and not Path(first).exists():
        return f"stale path: {first} does not exist"
    missing = [key for key in required if key not in found]
    if missing:
        return f"missing {', '.join(missing)} (the client may start without graymatter)"
    return "differs from what init writes (another executable or store)"


def _edit_check(context: WiringContext, edit: Edit, fix: str) -> Check | None:
    name = f"{context.client.name}: {edit.label}"
    try:
        text = read_text(edit.path)
        if isinstance(edit, BlockEdit):
            state = blocks.state(text)
            return (
                Check(name, "ok", str(edit.path))
                if state == "current"
                else _block_check(name, edit, text, fix)
            )
        if text is not None and install_text(edit, text) == text:
            return Check(name, "ok", str(edit.path))
        found = present(edit, text)
    except GraymatterError as exc:
        return Check(name, "fail", f"{edit.path}: {exc}", f"fix the file by hand, then: {fix}")
    if found is None:
        return Check(name, "warn", f"missing in {edit.path}", fix)
    expected = getattr(edit, "value", None)
    required = context.client.required_keys if edit.label == "MCP server" else ()
    return Check(name, "warn", f"{edit.path}: {_entry_problem(expected, found, required)}", fix)


def _block_check(name: str, edit: BlockEdit, text: str | None, fix: str) -> Check:
    state = blocks.state(text)
    if state == "edited":
        message = f"{edit.path}: the block was edited by hand (drift from the shipped text)"
        return Check(name, "warn", message, f"delete the block from {edit.path}, then: {fix}")
    if state == "broken":
        return Check(
            name, "warn", f"{edit.path}: unpaired graymatter markers", f"fix them by hand, then: {fix}"
        )
    what = "no instruction block" if state == "absent" else "an older instruction block"
    return Check(name, "warn", f"{edit.path}: {what}", fix)


def _client_checks(context: WiringContext, explicit: bool) -> list[Check]:
    edits = client_edits(context, hooks=True)
    fix = _fix(context.client.name, context.scope, context.store_dir, explicit)
    try:
        wired = present(edits[0], read_text(edits[0].path)) is not None
    except GraymatterError:
        wired = True  # unreadable: report it below
    if not wired and not context.client.installed(context.homes):
        return []
    if not wired:
        return [Check(context.client.name, "warn", f"installed but not wired ({edits[0].path})", fix)]
    checks = [check for edit in edits if (check := _edit_check(context, edit, fix)) is not None]
    return checks + extension_checks(context)


def run_doctor(
    *, dir_override: str | None = None, scope: Scope = "project", env: Mapping[str, str] | None = None
) -> Report:
    """Every check, for the routed project (or ``--dir``) in ``scope``."""
    from graymatter.routing import resolve_route

    env = os.environ if env is None else env
    checks = [_executable()]
    try:
        route = resolve_route(env=env, dir_override=dir_override)
    except GraymatterError as exc:
        return Report((*checks, Check("routing", "fail", str(exc), "unset the variable or fix its path")))
    explicit = route.store_source != "project"
    checks.append(Check("project", "ok", f"{route.root} (from {route.source}); agent id {route.agent_id}"))
    checks.append(_settings(env))
    checks.extend(_store(route.store_dir, env))
    homes = Homes.from_env(env)
    store = route.store_dir if scope == "project" or explicit else None
    launch = launch_for(store)
    for context in contexts(CLIENTS, scope, homes, route.root, store, launch):
        checks.extend(_client_checks(context, explicit))
    if not any(check.name.endswith("MCP server") for check in checks):
        checks.append(Check("clients", "warn", "no client is wired", "graymatter init"))
    return Report(tuple(checks))
