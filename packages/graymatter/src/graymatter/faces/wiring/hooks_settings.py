"""Session-hook registrations ``init`` merges for Claude Code, Codex, Gemini CLI and Qwen Code.

One matcher group per event, appended to the client's own array (foreign groups are kept, an older
graymatter group is replaced, uninstall removes exactly graymatter's). The command is the absolute
graymatter that ran ``init`` with ``hook CLIENT EVENT``: no version in it, so Codex, which trusts a hook
by the hash of its definition, keeps trusting it across upgrades. Hooks wired to a store (project scope,
or any scope with an explicit ``--dir``: the command carries ``--dir STORE``) may create that store to save;
user-wide registrations without a store carry ``--no-create``, so projects without a store are left alone.
A client whose config is user-wide only (Codex, as ``init`` wires its MCP entry) gets user-wide hooks.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

from graymatter.faces.wiring.edits import JsonEdit

if TYPE_CHECKING:
    from graymatter.faces.wiring.edits import Edit, WiringContext

HOOK_WORD: Final = "hook"
"""The subcommand every registered hook runs (``graymatter hook CLIENT EVENT``)."""


@dataclass(frozen=True)
class HookEvent:
    """One registration: graymatter's event, the client's name for it, its matcher and timeout."""

    event: str
    native: str
    matcher: str | None
    timeout: int


@dataclass(frozen=True)
class HookFormat:
    """Where a client keeps hooks and how a handler is spelled (exec form or a shell string)."""

    client: str
    project_file: str
    global_file: str  # relative to the client's home
    exec_form: bool
    timeout_ms: bool
    events: tuple[HookEvent, ...]
    strict: bool = False


def _events(
    native: dict[str, str], session_matcher: str | None, scale: int, *, compact: bool = True, end_s: int = 10
) -> tuple[HookEvent, ...]:
    events = [
        HookEvent("session-start", native["session-start"], session_matcher, 10 * scale),
        HookEvent("user-prompt", native["user-prompt"], None, 10 * scale),
        HookEvent("pre-compact", native["pre-compact"], None, 30 * scale),
        HookEvent("session-end", native["session-end"], None, end_s * scale),
    ]
    return tuple(e for e in events if compact or e.event != "pre-compact")


_CLAUDE_NAMES: Final = {
    "session-start": "SessionStart",
    "user-prompt": "UserPromptSubmit",
    "pre-compact": "PreCompact",
    "session-end": "SessionEnd",
}
_GEMINI_NAMES: Final = {
    "session-start": "SessionStart",
    "user-prompt": "BeforeAgent",
    "pre-compact": "PreCompress",
    "session-end": "SessionEnd",
}

FORMATS: Final[dict[str, HookFormat]] = {
    "claude-code": HookFormat(
        "claude-code", ".claude/settings.json", "settings.json", True, False,
        _events(_CLAUDE_NAMES, "startup|resume|clear|compact", 1), strict=True,
    ),
    "codex": HookFormat(
        "codex", ".codex/hooks.json", "hooks.json", False, False,
        _events(_CLAUDE_NAMES, "startup|resume|clear", 1, end_s=3), strict=True,
    ),
    "gemini": HookFormat(
        "gemini", ".gemini/settings.json", "settings.json", False, True,
        _events(_GEMINI_NAMES, None, 1000, compact=False),
    ),
    "qwen": HookFormat(
        "qwen", ".qwen/settings.json", "settings.json", False, True,
        _events(_CLAUDE_NAMES, None, 1000),
    ),
}  # fmt: skip
"""The clients with hooks, and how each registers them (timeouts in seconds, or ms for Gemini and Qwen).

Matchers: Claude Code reads ``a|b`` as alternatives and Codex as a regex; Gemini CLI and Qwen Code compare a
lifecycle matcher to the source by exact equality, so they get none (every source). Gemini fires
``PreCompress`` before every turn, not only before a compression, so it gets no pre-compact hook. Codex
clamps a ``SessionEnd`` timeout to 3 s, so it is given 3."""


def _global_dir(context: WiringContext) -> Path:
    homes = context.homes
    return {
        "claude-code": homes.claude,
        "codex": homes.codex,
        "gemini": homes.home / ".gemini",
        "qwen": homes.home / ".qwen",
    }[context.client.name]


def settings_path(context: WiringContext, fmt: HookFormat) -> Path:
    """The file the hooks go into for the context's scope."""
    if context.scope == "project":
        return context.root / fmt.project_file
    return _global_dir(context) / fmt.global_file


def hook_argv(context: WiringContext, client: str, event: str) -> list[str]:
    """``<graymatter> [--dir STORE] hook CLIENT EVENT [--no-create]`` for this context."""
    launch = context.launch
    prefix = [launch.command, *launch.args[:-2]]  # the server command without its trailing `mcp serve`
    tail = [] if context.store_dir is not None else ["--no-create"]  # wired to a store, or routed per session
    return [*prefix, HOOK_WORD, client, event, *tail]


def handler(context: WiringContext, fmt: HookFormat, spec: HookEvent) -> dict[str, object]:
    """One hook handler in the client's own spelling."""
    argv = hook_argv(context, fmt.client, spec.event)
    if fmt.exec_form:
        return {"type": "command", "command": argv[0], "args": argv[1:], "timeout": spec.timeout}
    entry: dict[str, object] = {"type": "command", "command": shlex.join(argv), "timeout": spec.timeout}
    if fmt.timeout_ms:
        entry = {"name": f"graymatter-{spec.event}", **entry}
    return entry


def group(context: WiringContext, fmt: HookFormat, spec: HookEvent) -> dict[str, object]:
    """The matcher group registered for one event."""
    body: dict[str, object] = {"hooks": [handler(context, fmt, spec)]}
    return {"matcher": spec.matcher, **body} if spec.matcher is not None else body


def handler_words(entry: dict[object, object]) -> list[str]:
    """A handler's command line as words (exec form, or a shell string split like a shell would)."""
    args = entry.get("args")
    command = entry.get("command")
    if isinstance(args, list) and isinstance(command, str):
        return [command, *(a for a in args if isinstance(a, str))]
    if isinstance(command, str):
        try:
            return shlex.split(command)
        except ValueError:
            return command.split()
    return []


def is_graymatter_handler(entry: object) -> bool:
    """A handler that runs ``graymatter ... hook CLIENT EVENT`` (any install path, any release)."""
    if not isinstance(entry, dict):
        return False
    words = handler_words(entry)
    if HOOK_WORD not in words[1:]:
        return False
    at = words.index(HOOK_WORD, 1)
    runs_graymatter = any(Path(w).name.startswith("graymatter") or w == "graymatter" for w in words[:at])
    return runs_graymatter and len(words) > at + 2 and words[at + 1] in FORMATS


def is_graymatter_group(item: object) -> bool:
    """A matcher group whose every handler is graymatter's (a mixed group stays: it is not ours alone)."""
    if not isinstance(item, dict):
        return False
    hooks = item.get("hooks")
    return isinstance(hooks, list) and bool(hooks) and all(is_graymatter_handler(h) for h in hooks)


def wiring_edits(context: WiringContext) -> list[Edit]:
    """The hook registrations for ``context``'s client (none for a client without hooks)."""
    fmt = FORMATS.get(context.client.name)
    if fmt is None:
        return []
    path = settings_path(context, fmt)
    return [
        JsonEdit(
            path=path,
            key=("hooks", spec.native),
            value=group(context, fmt, spec),
            label=f"hook {spec.native}",
            append=True,
            owns=is_graymatter_group,
            strict=fmt.strict,
        )
        for spec in fmt.events
    ]
