"""Each client's hook dialect: its event names, the variable naming its project root, its output JSON."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Final

EVENTS: Final = ("session-start", "user-prompt", "pre-compact", "session-end")
"""graymatter's hook events, the same four for every client."""

CONTEXT_EVENTS: Final = frozenset({"session-start", "user-prompt"})
"""Events whose output the client adds to the model's context."""


@dataclass(frozen=True)
class ClientDialect:
    """How one client names the events, which environment variable holds its project root."""

    name: str
    native_events: dict[str, str]
    project_env: str | None

    def native(self, event: str) -> str:
        """The client's own name of ``event`` (what ``hookEventName`` must say)."""
        return self.native_events[event]


_CLAUDE_EVENTS: Final = {
    "session-start": "SessionStart",
    "user-prompt": "UserPromptSubmit",
    "pre-compact": "PreCompact",
    "session-end": "SessionEnd",
}

CLIENTS: Final[dict[str, ClientDialect]] = {
    "claude-code": ClientDialect("claude-code", _CLAUDE_EVENTS, "CLAUDE_PROJECT_DIR"),
    "codex": ClientDialect("codex", _CLAUDE_EVENTS, None),
    "gemini": ClientDialect(
        "gemini",
        {
            "session-start": "SessionStart",
            "user-prompt": "BeforeAgent",
            "pre-compact": "PreCompress",
            "session-end": "SessionEnd",
        },
        "GEMINI_PROJECT_DIR",
    ),
    "qwen": ClientDialect("qwen", _CLAUDE_EVENTS, "QWEN_PROJECT_DIR"),
}
"""Every client with hooks, by the name ``graymatter hook`` and ``init --client`` use."""


def context_output(dialect: ClientDialect, event: str, context: str, notice: str | None = None) -> str:
    """The stdout JSON that adds ``context`` to the model's context (and shows ``notice`` to the user)."""
    body: dict[str, object] = {
        "hookSpecificOutput": {"hookEventName": dialect.native(event), "additionalContext": context}
    }
    if notice:
        body["systemMessage"] = notice
    return json.dumps(body, ensure_ascii=False)
