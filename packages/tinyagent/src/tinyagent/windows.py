"""Context windows of known models (prompt tokens), the threshold that triggers compaction, and overrides.

`context_window(model, override)` is the configured `context_window` when set, else this table's figure for
the model (same name matching as the price table: a routing prefix dropped, a date or `-latest` suffix
allowed), else None: an unknown model is never compacted unless a window is configured.
"""

from __future__ import annotations

import re

__all__ = ["COMPACT_AT", "CONTEXT_WINDOWS", "context_window"]

COMPACT_AT = 0.8
"""Compaction starts once the next prompt is estimated above this share of the window."""

CONTEXT_WINDOWS: dict[str, int] = {
    "gpt-4.1": 1_047_576,
    "gpt-4.1-mini": 1_047_576,
    "gpt-4.1-nano": 1_047_576,
    "gpt-4o": 128_000,
    "gpt-4o-mini": 128_000,
    "gpt-5": 400_000,
    "gpt-5-mini": 400_000,
    "gpt-5-codex": 400_000,
    "o3": 200_000,
    "o4-mini": 200_000,
    "claude-sonnet-4-5": 200_000,
    "claude-sonnet-4": 200_000,
    "claude-opus-4-1": 200_000,
    "claude-opus-4-5": 200_000,
    "claude-haiku-4-5": 200_000,
    "qwen2.5-coder:7b": 32_768,
}
_SUFFIX = re.compile(r"(-\d{8}|-\d{4}-\d{2}-\d{2}|-latest)$")


def context_window(model: str, override: int | None = None) -> int | None:
    """The prompt-token window of `model` (the override wins), or None when unknown."""
    if override is not None:
        return override
    name = model.rsplit("/", 1)[-1]
    if name.startswith("claude-"):
        name = name.replace(".", "-")
    return CONTEXT_WINDOWS.get(name) or CONTEXT_WINDOWS.get(_SUFFIX.sub("", name))
