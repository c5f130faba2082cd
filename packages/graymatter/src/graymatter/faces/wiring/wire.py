"""``graymatter init``: choose the clients, build the plan for the routed project, show it or apply it."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from graymatter.errors import InvalidInput
from graymatter.faces.wiring.clients import (
    CLIENT_NAMES,
    CLIENTS,
    ClientSpec,
    Homes,
    Scope,
    client,
    launch_for,
)
from graymatter.faces.wiring.plan import Plan, apply, build, contexts


@dataclass(frozen=True)
class InitRequest:
    """What the user asked ``init`` for."""

    clients: tuple[str, ...] = ()
    all_clients: bool = False
    scope: Scope = "project"
    dir_override: str | None = None
    dry_run: bool = False
    uninstall: bool = False
    hooks: bool = True


@dataclass(frozen=True)
class InitResult:
    """What ``init`` did (or, with ``--dry-run``, would do)."""

    clients: tuple[str, ...]
    scope: Scope
    root: Path
    store_dir: Path | None
    plan: Plan
    applied: bool

    def as_json(self) -> dict[str, object]:
        """The ``--json`` form."""
        return {
            "clients": list(self.clients),
            "scope": self.scope,
            "root": str(self.root),
            "store": str(self.store_dir) if self.store_dir else None,
            "dry_run": not self.applied,
            "changes": [
                {"path": str(c.path), "action": c.action, "what": c.labels, "diff": c.diff()}
                for c in self.plan.pending
            ],
            "notes": self.plan.notes,
        }


def select(request: InitRequest, homes: Homes) -> list[ClientSpec]:
    """The clients named, all of them with ``--all``, else the installed ones."""
    unknown = [name for name in request.clients if name not in CLIENT_NAMES]
    if unknown:
        raise InvalidInput(f"unknown client {unknown[0]!r}; choose from {', '.join(CLIENT_NAMES)}")
    if request.all_clients:
        return list(CLIENTS)
    if request.clients:
        return [client(name) for name in dict.fromkeys(request.clients)]
    return [spec for spec in CLIENTS if spec.installed(homes)]


def _store(request: InitRequest, env: Mapping[str, str], cwd: Path) -> tuple[Path, Path | None]:
    from graymatter.routing import resolve_route

    route = resolve_route(env=env, cwd=cwd, dir_override=request.dir_override)
    explicit = route.store_source != "project"
    if request.scope == "global" and not explicit:
        return route.root, None  # global entries leave the store to routing at run time
    return route.root, route.store_dir


def run_init(
    request: InitRequest,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    executable: Sequence[str] | None = None,
) -> InitResult:
    """Plan ``request`` and, unless it is a dry run, apply it. Raises ``InvalidInput`` before writing
    anything when a client is unknown or a file cannot be read or parsed."""
    env = os.environ if env is None else env
    here = Path(os.getcwd() if cwd is None else cwd)
    homes = Homes.from_env(env)
    specs = select(request, homes)
    root, store = _store(request, env, here)
    launch = launch_for(store, list(executable) if executable else None)
    selected = contexts(specs, request.scope, homes, root, store, launch)
    plan = build(selected, uninstall=request.uninstall, hooks=request.hooks)
    if not request.dry_run:
        apply(plan, stops={root, homes.home, homes.xdg_config, homes.codex.parent, homes.claude.parent})
    return InitResult(tuple(s.name for s in specs), request.scope, root, store, plan, not request.dry_run)


def describe(result: InitResult, *, uninstall: bool) -> list[str]:
    """The text report of a run: one line per file, the diff with ``--dry-run``, then the notes."""
    lines: list[str] = []
    if not result.clients:
        lines.append(f"no client detected; name one with --client ({', '.join(CLIENT_NAMES)}) or use --all")
    verb = {"create": "create", "modify": "update", "delete": "remove"}
    for change in result.plan.pending:
        what = f" ({'; '.join(change.labels)})" if change.labels else ""
        if result.applied:
            lines.append(f"{verb[change.action]}d {change.path}{what}")
        else:
            lines.append(f"would {verb[change.action]} {change.path}{what}")
            lines.append(change.diff().rstrip("\n"))
    if result.clients and not result.plan.pending:
        lines.append("nothing to change" + (" (graymatter is not wired here)" if uninstall else ""))
    lines.extend(f"note: {note}" for note in result.plan.notes)
    return lines
