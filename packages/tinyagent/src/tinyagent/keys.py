"""Provider keys kept away from the commands the agent runs: withdrawn from the process, redacted from output.

At the start of a run `withdraw_keys()` moves every provider key variable out of the process environment
(`os.environ` and the C `environ` array) and overwrites its bytes in the process's initial environment block,
the memory `/proc/<pid>/environ` shows, so a command reading `/proc/$PPID/environ` finds nothing. The
process is also marked non-dumpable (`prctl(PR_SET_DUMPABLE, 0)`): a same-user, non-root process can then
read neither `/proc/<pid>/environ` nor `/proc/<pid>/mem`. The keys stay in memory only, and are handed to
the provider from `provider_environ()`. Every known key value (environment, config file, MCP bearer tokens)
is registered with `remember`, and `redact` replaces it in tool output before it is recorded or sent.

Out of reach: a root command can read any process's memory, and a key the user exported in their own shell
is visible in that shell's environment to every process of the user.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

__all__ = ["KEY_VARIABLES", "REDACTED", "provider_environ", "redact", "remember", "withdraw_keys"]

KEY_VARIABLES = (
    "OPENAI_API_KEY",
    "OPENROUTER_API_KEY",
    "ANTHROPIC_API_KEY",
    "CODEX_API_KEY",
    "OLLAMA_API_KEY",
)
"""The environment variables that hold provider keys (withdrawn at start-up)."""

REDACTED = "[redacted]"
MIN_SECRET_CHARS = 8
"""Shorter values are not redacted (they would match ordinary text)."""

_PR_SET_DUMPABLE = 4
_ENV_START_FIELD = 47  # /proc/self/stat field 50 (env_start), counted after the ")" of the command name

_withdrawn: dict[str, str] = {}
_secrets: set[str] = set()


def remember(value: str | None) -> None:
    """Register a secret value so that `redact` removes it from tool output."""
    if value and len(value) >= MIN_SECRET_CHARS:
        _secrets.add(value)


def redact(text: str) -> str:
    """`text` with every registered secret value replaced by `REDACTED` (longest first)."""
    if not _secrets:
        return text
    for secret in sorted(_secrets, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


def provider_environ() -> dict[str, str]:
    """The environment as providers resolve it: the current environment plus the withdrawn keys."""
    return {**os.environ, **_withdrawn}


def withdrawn() -> Mapping[str, str]:
    """The keys withdrawn so far (name -> value), read-only view."""
    return dict(_withdrawn)


def withdraw_keys() -> list[str]:
    """Move the provider keys out of this process's environment; return the names withdrawn.

    Safe to call more than once. Also marks the process non-dumpable (Linux) even when no key was set,
    because a key may come from a config file.
    """
    names = [name for name in KEY_VARIABLES if name in os.environ]
    values = {}
    for name in names:
        value = os.environ.pop(name)  # also unsetenv(): the C environ array forgets it
        _withdrawn[name] = values[name] = value
        remember(value)
    if values:
        _wipe_initial_environment(values)
    _set_not_dumpable()
    return names


def _set_not_dumpable() -> None:
    """`prctl(PR_SET_DUMPABLE, 0)`: same-user processes cannot read our /proc files or attach to us."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: nothing to do
        pass


def _wipe_initial_environment(values: Mapping[str, str]) -> None:
    """Overwrite `NAME=value` of each withdrawn key with NUL bytes in the initial environment block."""
    try:
        with open("/proc/self/stat", "rb") as handle:
            fields = handle.read(4096).rpartition(b")")[2].split()
        start, end = int(fields[_ENV_START_FIELD]), int(fields[_ENV_START_FIELD + 1])
    except (OSError, IndexError, ValueError):
        return
    if not 0 < start < end or end - start > 1 << 24:
        return
    import ctypes

    block = ctypes.string_at(start, end - start)
    for name, value in values.items():
        entry = os.fsencode(name) + b"=" + os.fsencode(value)
        offset = 0
        while (found := block.find(entry, offset)) >= 0:
            after = found + len(entry)
            if (found == 0 or block[found - 1] == 0) and (after == len(block) or block[after] == 0):
                ctypes.memset(start + found, 0, len(entry))
            offset = found + len(entry)
