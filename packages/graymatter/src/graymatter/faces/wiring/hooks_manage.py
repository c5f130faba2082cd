"""``graymatter hooks install|uninstall|doctor``: the hook registrations alone, without the MCP entries.

Install and uninstall build the same kind of plan as ``init`` (every file read, parsed and edited in memory
before any is written; atomic writes with a ``.graymatter.bak`` backup) from the edits of
:mod:`graymatter.faces.wiring.hooks_settings` only. Doctor reads and never writes: for each client, are
the four hooks registered exactly, stale (another graymatter path or options) or missing; does the
registered executable exist; is there a store for the hooks, and did the hook log record failures.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graymatter.errors import InvalidInput
from graymatter.faces.wiring.clients import Homes, Scope, client, launch_for
from graymatter.faces.wiring.edits import JsonEdit, WiringContext, install_text, present, uninstall_text
from graymatter.faces.wiring.hooks_settings import FORMATS, handler_words, is_graymatter_group, wiring_edits
from graymatter.faces.wiring.plan import FileChange, Plan, apply, read_text


@dataclass(frozen=True)
class Check:
    """One doctor finding: ``ok``, ``warn`` or ``fail``, what it says, and the command that fixes it."""

    status: str
    client: str
    message: str
    fix: str = ""

    def as_json(self) -> dict[str, str]:
        """The ``--json`` form."""
        return {"status": self.status, "client": self.client, "message": self.message, "fix": self.fix}


def hook_contexts(
    names: Sequence[str],
    scope: Scope,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    dir_override: str | None = None,
) -> list[WiringContext]:
    """One context per client with hooks: the named ones, else those installed here or with a project file."""
    from graymatter.routing import resolve_route

    env = os.environ if env is None else env
    unknown = [n for n in names if n not in FORMATS]
    if unknown:
        raise InvalidInput(f"no hooks for client {unknown[0]!r}; choose from {', '.join(FORMATS)}")
    homes = Homes.from_env(env)
    route = resolve_route(env=env, cwd=cwd, dir_override=dir_override)
    chosen = list(dict.fromkeys(names)) or [
        n for n, f in FORMATS.items() if client(n).installed(homes) or (route.root / f.project_file).is_file()
    ]
    explicit = route.store_source != "project"
    store = route.store_dir if scope == "project" or explicit else None
    launch = launch_for(store)
    specs = [
        client(n) for n in chosen
    ]  # a client without project files (Codex) is wired user-wide, as by init
    return [WiringContext(s, s.effective_scope(scope), homes, route.root, store, launch) for s in specs]


def _edits(contexts: Sequence[WiringContext]) -> dict[Path, list[JsonEdit]]:
    grouped: dict[Path, list[JsonEdit]] = {}
    for context in contexts:
        for edit in wiring_edits(context):
            assert isinstance(edit, JsonEdit)
            grouped.setdefault(edit.path, []).append(edit)
    return grouped


def _change(path: Path, edits: list[JsonEdit], uninstall: bool) -> FileChange:
    before = read_text(path)
    text: str | None = before
    labels = []
    for edit in edits:
        if text is None and uninstall:
            break
        new = uninstall_text(edit, text) if uninstall and text is not None else install_text(edit, text)
        if new != text:
            labels.append(edit.label)
        text = new
    return FileChange(path, before, text, labels)


def plan_hooks(contexts: Sequence[WiringContext], *, uninstall: bool = False) -> Plan:
    """Every hook file's old and new text; ``InvalidInput`` (nothing written) on an unparsable file."""
    changes = []
    for path, edits in _edits(contexts).items():
        try:
            changes.append(_change(path, edits, uninstall))
        except InvalidInput as exc:
            raise InvalidInput(f"{path}: {exc}; nothing was changed") from None
    return Plan(changes, [])


def apply_hooks(plan: Plan, contexts: Sequence[WiringContext]) -> list[FileChange]:
    """Write the plan; the project root and the homes are never removed when a file empties."""
    stops = {c.root for c in contexts} | {c.homes.home for c in contexts}
    return apply(plan, stops)


def _registered(edit: JsonEdit, text: str) -> list[dict[str, Any]]:
    found = present(edit, text)
    return [g for g in found if is_graymatter_group(g)] if isinstance(found, list) else []


def _executable_problem(groups: list[dict[str, Any]]) -> str | None:
    for group in groups:
        for handler in group.get("hooks", []):
            words = handler_words(handler) if isinstance(handler, dict) else []
            command = words[0] if words else ""
            if os.path.isabs(command) and not os.access(command, os.X_OK):
                return f"the registered executable {command} does not exist"
    return None


def check_client(context: WiringContext) -> list[Check]:
    """The doctor's findings for one client's hooks (reads only)."""
    name = context.client.name
    fix = f"graymatter hooks install --client {name}" + (" --global" if context.scope == "global" else "")
    edits = [e for e in wiring_edits(context) if isinstance(e, JsonEdit)]
    path = edits[0].path
    try:
        text = read_text(path)
    except InvalidInput as exc:
        return [Check("fail", name, f"{path}: {exc}", "fix the file by hand")]
    if text is None:
        return [Check("warn", name, f"no hooks registered ({path} does not exist)", fix)]
    try:
        exact = sum(1 for e in edits if install_text(e, text) == text)
        ours = [g for e in edits for g in _registered(e, text)]
    except InvalidInput as exc:
        return [Check("fail", name, f"{path}: {exc}", "fix the file by hand")]
    checks = []
    if exact == len(edits):
        checks.append(Check("ok", name, f"{exact} hooks registered in {path}"))
    elif ours:
        checks.append(
            Check(
                "warn", name, f"hooks in {path} differ from this install ({exact}/{len(edits)} current)", fix
            )
        )
    else:
        checks.append(Check("warn", name, f"no hooks registered in {path}", fix))
    problem = _executable_problem(ours)
    if problem:
        checks.append(Check("fail", name, problem, fix))
    return checks


def check_store(contexts: Sequence[WiringContext]) -> list[Check]:
    """The store the project's hooks use, and the hook log's failures of the last 24 hours."""
    from graymatter.faces.hooks.status import hook_summary

    if not contexts or contexts[0].store_dir is None:
        return []
    store = contexts[0].store_dir
    if not store.is_dir():
        return [
            Check("warn", "store", f"no store at {store} yet (the first remember: or checkpoint creates it)")
        ]
    summary = hook_summary(store)
    errors = summary["last_24h"]["errors"]
    if errors:
        failed = [r for r in summary["recent"] if r.get("outcome") == "error"]
        last = failed[-1].get("error") if failed else "see the log"
        return [
            Check(
                "warn", "store", f"{errors} hook runs failed in the last 24 h ({last}); see {summary['log']}"
            )
        ]
    return [Check("ok", "store", f"store {store}; hook log {summary['log']}")]
