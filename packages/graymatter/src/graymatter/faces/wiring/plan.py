"""``init`` as a plan: every file's old and new text computed (and validated) before any file is written.

A plan is built for install or uninstall from the selected clients' edits; an unreadable or unparsable
file fails the whole plan, so nothing is written. Applying a plan writes each changed file atomically,
keeps the replaced bytes in ``<file>.graymatter.bak``, and removes files (and the empty directories) that
held nothing but graymatter's part. Uninstall restores the backup byte for byte when the file is exactly
what ``init`` made of it.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from graymatter.errors import InvalidInput
from graymatter.faces.wiring.clients import ClientSpec, Homes, Launch, Scope
from graymatter.faces.wiring.edits import (
    BlockEdit,
    Edit,
    JsonEdit,
    TomlEdit,
    WiringContext,
    extension_edits,
    install_text,
    uninstall_text,
)

MAX_CONFIG_BYTES: Final = 64 * 1024 * 1024
"""The largest config or instruction file read (``~/.claude.json`` grows with history)."""

BACKUP_SUFFIX: Final = ".graymatter.bak"


@dataclass
class FileChange:
    """One file of a plan: its text before (None: absent) and after (None: removed), and what changed."""

    path: Path
    before: str | None
    after: str | None
    labels: list[str] = field(default_factory=list)
    restore_backup: bool = False

    @property
    def action(self) -> str:
        """``create``, ``modify``, ``delete`` or ``none``."""
        if self.before == self.after:
            return "none"
        if self.before is None:
            return "create"
        return "delete" if self.after is None else "modify"

    def diff(self) -> str:
        """A unified diff of the change."""
        old = (self.before or "").splitlines(keepends=True)
        new = (self.after or "").splitlines(keepends=True)
        lines = difflib.unified_diff(old, new, f"a{self.path}", f"b{self.path}")
        return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


@dataclass
class Plan:
    """The files a run of ``init`` changes, and notes on what it leaves alone."""

    changes: list[FileChange]
    notes: list[str]

    @property
    def pending(self) -> list[FileChange]:
        """The changes that change something."""
        return [change for change in self.changes if change.action != "none"]


def read_text(path: Path) -> str | None:
    """The UTF-8 text of ``path`` (None when absent), read within :data:`MAX_CONFIG_BYTES`."""
    if not path.exists() and not path.is_symlink():
        return None
    if not path.is_file():
        raise InvalidInput(f"{path} is not a regular file; move it away, then rerun")
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise InvalidInput(f"{path} is larger than {MAX_CONFIG_BYTES // (1024 * 1024)} MiB; not edited")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInput(f"{path} is not UTF-8 text; not edited") from None


def client_edits(context: WiringContext, *, hooks: bool = True) -> list[Edit]:
    """The edits of one client: its MCP entry, its instruction block, then contributed (hook) edits."""
    spec, homes, root = context.client, context.homes, context.root
    config = spec.config_path(context.scope, homes, root)
    key = (*spec.key, "graymatter")
    entry = spec.entry(context.launch)
    edits: list[Edit] = []
    if spec.fmt == "toml":
        edits.append(TomlEdit(config, key, entry, "MCP server"))
    else:
        edits.append(JsonEdit(config, key, entry, "MCP server", strict=spec.strict))
    instructions = spec.instructions_path(context.requested_scope or context.scope, homes, root)
    if instructions is not None:
        edits.append(BlockEdit(instructions, prefix=spec.instruction_prefix))
    if spec.name == "claude-code":
        settings = (
            root / ".claude" / "settings.json"
            if context.scope == "project"
            else homes.claude / "settings.json"
        )
        edits.append(
            JsonEdit(
                settings, ("env", "MCP_CONNECTION_NONBLOCKING"), "0", "wait for MCP servers", strict=True
            )
        )
    if hooks:
        edits.extend(extension_edits(context))
    return edits


def contexts(
    specs: Iterable[ClientSpec], scope: Scope, homes: Homes, root: Path, store: Path | None, launch: Launch
) -> list[WiringContext]:
    """One context per client, in the client's effective scope."""
    return [
        WiringContext(spec, spec.effective_scope(scope), homes, root, store, launch, scope) for spec in specs
    ]


def _grouped(edits: Iterable[tuple[str, Edit]]) -> dict[Path, list[tuple[str, Edit]]]:
    grouped: dict[Path, list[tuple[str, Edit]]] = {}
    for owner, edit in edits:
        grouped.setdefault(edit.path, []).append((owner, edit))
    return grouped


def _install_change(path: Path, edits: list[tuple[str, Edit]]) -> FileChange:
    before = read_text(path)
    text: str | None = before
    labels = []
    for owner, edit in edits:
        new = install_text(edit, text)
        if new != text:
            labels.append(f"{owner}: {edit.label}")
        text = new
    return FileChange(path, before, text, labels)


def _uninstall_change(path: Path, edits: list[tuple[str, Edit]]) -> FileChange:
    before = read_text(path)
    if before is None:
        return FileChange(path, None, None)
    made_from_nothing: str | None = None
    for _, edit in edits:
        made_from_nothing = install_text(edit, made_from_nothing)
    labels = [f"{owner}: {edit.label}" for owner, edit in edits]
    if made_from_nothing == before:
        return FileChange(path, before, None, labels)
    backup = read_text(path.with_name(path.name + BACKUP_SUFFIX))
    if backup is not None and _pristine(backup, edits) and _installed(backup, edits) == before:
        return FileChange(path, before, backup, labels, restore_backup=True)
    text: str | None = before
    for _, edit in reversed(edits):
        text = uninstall_text(edit, text) if text is not None else None
    return FileChange(path, before, text, labels if text != before else [])


def _pristine(text: str, edits: list[tuple[str, Edit]]) -> bool:
    try:
        return all(uninstall_text(edit, text) == text for _, edit in edits)
    except InvalidInput:
        return False


def _installed(text: str, edits: list[tuple[str, Edit]]) -> str | None:
    try:
        result: str | None = text
        for _, edit in edits:
            result = install_text(edit, result)
        return result
    except InvalidInput:
        return None


def build(selected: list[WiringContext], *, uninstall: bool = False, hooks: bool = True) -> Plan:
    """The plan for ``selected``: every file read and every edit computed; raises ``InvalidInput`` naming
    the file on the first unreadable or unparsable one (so nothing is written)."""
    pairs = [
        (context.client.name, edit) for context in selected for edit in client_edits(context, hooks=hooks)
    ]
    changes, notes = [], []
    for path, edits in _grouped(pairs).items():
        try:
            change = _uninstall_change(path, edits) if uninstall else _install_change(path, edits)
        except InvalidInput as exc:
            raise InvalidInput(f"{path}: {exc}; nothing was changed") from None
        changes.append(change)
        notes.extend(_block_notes(change, edits))
        notes.extend(_replaced_notes(change, edits) if not uninstall else [])
    return Plan(changes, notes)


def _replaced_notes(change: FileChange, edits: list[tuple[str, Edit]]) -> list[str]:
    """A note for each MCP entry that pointed elsewhere (another executable or store) and is replaced."""
    from graymatter.faces.wiring.edits import present

    notes = []
    for owner, edit in edits:
        if edit.label == "MCP server" and change.before is not None:
            old = present(edit, change.before)
            if old is not None and old != getattr(edit, "value", None):
                notes.append(f"{change.path}: replaced {owner}'s graymatter entry ({_launch_of(old)})")
    return notes


def _launch_of(entry: object) -> str:
    import shlex

    if not isinstance(entry, dict):
        return "not an object"
    command = entry.get("command")
    argv = [*command] if isinstance(command, list) else [command, *(entry.get("args") or [])]
    return "was: " + shlex.join(str(part) for part in argv)


def _block_notes(change: FileChange, edits: list[tuple[str, Edit]]) -> list[str]:
    from graymatter.faces.wiring import blocks

    if not any(isinstance(edit, BlockEdit) for _, edit in edits) or change.before is None:
        return []
    state = blocks.state(change.before)
    if state == "edited":
        return [f"{change.path}: the instruction block was edited by hand; left as it is"]
    if state == "broken":
        return [f"{change.path}: unpaired graymatter instruction markers; fix them by hand"]
    if state == "absent" and change.after == change.before:
        return [f"{change.path}: ends inside an open code fence; close it, then rerun"]
    return []


def _write(path: Path, text: str) -> None:
    from graymatter.fsutil import DIR_MODE, atomic_write

    target = path.resolve() if path.is_symlink() else path
    target.parent.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    mode = target.stat().st_mode & 0o777 if target.exists() else None
    atomic_write(target, text.encode("utf-8"))
    if mode is not None:
        os.chmod(target, mode)


def _prune_dirs(directory: Path, stops: set[Path]) -> None:
    while directory not in stops and directory.parent != directory:
        try:
            directory.rmdir()  # only succeeds when empty
        except OSError:
            return
        directory = directory.parent


def apply(plan: Plan, stops: set[Path]) -> list[FileChange]:
    """Write every pending change of ``plan``; ``stops`` are directories never removed. Returns them.

    A file that changed since the plan read it (a client rewriting its own config meanwhile) stops the run
    before anything is written."""
    for change in plan.pending:
        if read_text(change.path) != change.before:
            raise InvalidInput(f"{change.path} changed while init was running; nothing was changed, rerun")
    done = []
    for change in plan.pending:
        backup = change.path.with_name(change.path.name + BACKUP_SUFFIX)
        if change.after is None:
            change.path.unlink()
            backup.unlink(missing_ok=True)
            _prune_dirs(change.path.parent, stops)
        elif change.restore_backup:
            _write(change.path, change.after)
            backup.unlink()
        else:
            if change.before is not None:
                _write(backup, change.before)
            _write(change.path, change.after)
        done.append(change)
    return done
