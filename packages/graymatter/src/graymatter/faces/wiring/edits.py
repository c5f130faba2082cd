"""What ``init`` changes in a file, as data: JSON members or array items, TOML tables, instruction blocks.

Each edit is a pure function of the file's text, both ways (:func:`install_text`, :func:`uninstall_text`).
Besides the MCP entry and the instruction block every client gets, modules named ``hooks_*.py`` in this
package may contribute edits: each defines ``wiring_edits(context: WiringContext) -> list[Edit]`` and is
discovered lazily by :func:`extension_edits` (an absent or empty one contributes nothing).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from graymatter.faces.wiring import blocks, jsonedit, tomledit
from graymatter.faces.wiring.clients import ClientSpec, Homes, Launch, Scope


@dataclass(frozen=True)
class WiringContext:
    """Everything an edit provider needs: the client, the scope, the homes, the project, the server."""

    client: ClientSpec
    scope: Scope
    homes: Homes
    root: Path
    store_dir: Path | None
    launch: Launch
    requested_scope: Scope | None = None
    """The scope the user asked for (``scope`` is the client's effective one: Codex has no project config)."""


@dataclass(frozen=True)
class JsonEdit:
    """Set the member at ``key`` to ``value``; with ``append``, keep ``value`` once in the array at ``key``
    and drop the other items ``owns`` claims (an older graymatter entry). Uninstall removes them all."""

    path: Path
    key: tuple[str, ...]
    value: object
    label: str
    append: bool = False
    owns: Callable[[object], bool] | None = field(default=None, compare=False)
    strict: bool = False


@dataclass(frozen=True)
class TomlEdit:
    """Make the table at ``key`` hold exactly ``value``; uninstall removes it."""

    path: Path
    key: tuple[str, ...]
    value: dict[str, object]
    label: str


@dataclass(frozen=True)
class BlockEdit:
    """Keep the current managed instruction block in a Markdown file (``prefix`` starts a new file)."""

    path: Path
    label: str = "instruction block"
    prefix: str = ""


Edit = JsonEdit | TomlEdit | BlockEdit


def _claims(edit: JsonEdit) -> Callable[[object], bool]:
    owns = edit.owns
    return (lambda item: item == edit.value or owns(item)) if owns else (lambda item: item == edit.value)


def install_text(edit: Edit, text: str | None) -> str:
    """The file's text with ``edit`` applied (``text`` None: the file does not exist yet)."""
    if isinstance(edit, BlockEdit):
        return blocks.upsert(text, edit.prefix)
    if isinstance(edit, TomlEdit):
        return tomledit.set_table(text or "", edit.key, edit.value)
    if edit.append:
        return jsonedit.upsert_item(text or "", edit.key, edit.value, _claims(edit), strict=edit.strict)
    return jsonedit.set_member(text or "", edit.key, edit.value, strict=edit.strict)


def uninstall_text(edit: Edit, text: str) -> str | None:
    """The file's text without what ``edit`` adds; None when nothing but graymatter's part was left."""
    if isinstance(edit, BlockEdit):
        return blocks.remove(text, edit.prefix)
    if isinstance(edit, TomlEdit):
        new = tomledit.remove_table(text, edit.key)
        return None if not new.strip() else new
    if edit.append:
        new = jsonedit.remove_items(text, edit.key, _claims(edit), strict=edit.strict)
        if jsonedit.get_member(new, edit.key, strict=edit.strict) == []:
            new = jsonedit.remove_member(new, edit.key, strict=edit.strict)
    else:
        new = jsonedit.remove_member(text, edit.key, strict=edit.strict)
    return None if jsonedit.get_member(new, (), strict=edit.strict) == {} and new != text else new


def is_installed(edit: Edit, text: str | None) -> bool:
    """Whether ``text`` already holds what ``edit`` adds."""
    return text is not None and install_text(edit, text) == text


def present(edit: Edit, text: str | None) -> object:
    """What ``text`` holds where ``edit`` writes (a value, the block state), None when nothing."""
    if text is None:
        return None
    if isinstance(edit, BlockEdit):
        return None if blocks.state(text) == "absent" else blocks.state(text)
    if isinstance(edit, TomlEdit):
        return tomledit.get_table(text, edit.key)
    return jsonedit.get_member(text, edit.key, strict=edit.strict)


def extension_edits(context: WiringContext) -> list[Edit]:
    """The edits that ``hooks_*`` modules of this package contribute for ``context``."""
    import graymatter.faces.wiring as package

    found: list[Edit] = []
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda module: module.name):
        if info.name.startswith("hooks_"):
            module = importlib.import_module(f"{package.__name__}.{info.name}")
            provider = getattr(module, "wiring_edits", None)
            if provider is not None:
                found.extend(provider(context))
    return found
