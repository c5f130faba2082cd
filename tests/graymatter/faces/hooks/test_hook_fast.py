"""The hook fast path's own command-line reading agrees with the grammar, and its constants with the runtime.

``faces/cli/hook_fast.py`` recognises a hook command line before it relays it to the warm server, without
importing the grammar (and ``dataclasses``); these tests hold its reading to ``lift_global_flags`` plus
the hook words check, and its copies of the client, event and payload-bound constants to their sources.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from graymatter.faces.cli import grammar, hook_fast
from graymatter.faces.hooks.clients import CLIENTS, EVENTS
from graymatter.faces.hooks.payload import MAX_PAYLOAD_BYTES

TOKENS = [
    "hook", "claude-code", "codex", "gemini", "qwen", "session-start", "user-prompt", "pre-compact",
    "session-end", "--no-create", "--dir", "--dir=/s", "--store", "--store=x", "--json", "--quiet",
    "--no-daemon", "--", "/a/store", "remember", "agent", "mcp", "serve", "--dir=", "hooks", "",
]  # fmt: skip


def by_grammar(argv: list[str]) -> tuple[str, str, bool, str | None] | None:
    """What the in-process path decides: lift the global flags, then check the three hook words."""
    flags, rest = grammar.lift_global_flags(argv)
    no_create = "--no-create" in rest
    words = [w for w in rest if w != "--no-create"]
    if len(words) != 3 or words[0] != "hook" or words[1] not in CLIENTS or words[2] not in EVENTS:
        return None
    return words[1], words[2], no_create, flags.values.get("--dir")


@given(st.lists(st.sampled_from(TOKENS) | st.text(max_size=6), max_size=9))
def test_the_fast_reading_of_a_command_line_is_the_grammars(argv: list[str]) -> None:
    assert hook_fast.hook_words(argv) == by_grammar(argv)


def test_installed_hook_command_lines_are_recognised() -> None:
    argv = ["--no-daemon", "--dir", "/p/.graymatter", "hook", "claude-code", "session-start"]
    assert hook_fast.hook_words(argv) == ("claude-code", "session-start", False, "/p/.graymatter")
    assert hook_fast.hook_words(["hook", "qwen", "user-prompt", "--no-create"]) == (
        "qwen",
        "user-prompt",
        True,
        None,
    )
    assert hook_fast.hook_words(["remember", "a", "hook"]) is None
    assert hook_fast.hook_words(["hook", "claude-code", "session-start", "--", "x"]) is None


def test_the_copied_constants_match_their_sources() -> None:
    assert tuple(CLIENTS) == hook_fast.HOOK_CLIENTS
    assert hook_fast.HOOK_EVENTS == EVENTS
    assert hook_fast.PAYLOAD_LIMIT == MAX_PAYLOAD_BYTES
