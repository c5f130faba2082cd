"""The managed instruction block: a short, versioned memory protocol between begin/end markers.

The block goes into the files the wired clients read (CLAUDE.md, AGENTS.md, GEMINI.md, QWEN.md, Cursor and
Windsurf rules, Copilot instructions). Its begin marker records the version and the SHA-256 of the body as
written, so a later run can tell a stale block (update it in place) from a hand-edited one (report it,
leave it alone). Markers inside fenced code are not markers. Newlines follow the file (CRLF kept).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Final, Literal

BLOCK_VERSION: Final = 1
"""Bumped whenever the shipped protocol text changes."""

BEGIN: Final = "<!-- graymatter:instructions:begin"
END: Final = "<!-- graymatter:instructions:end -->"

PROTOCOL: Final = """\
## Memory (graymatter)

This project has persistent memory: the `graymatter` MCP server. Follow this protocol in every session.

1. At the start, call `checkpoint_resume` with `on_missing: "empty"` to pick up where the last session
   stopped.
2. Before answering about this project (its decisions, conventions, history), call `memory_search` first,
   and again with `agent_id: "__shared__"` for project-wide memory.
3. Store each durable fact you learn (a decision, a convention, a fix, a preference) as one sentence with
   `memory_add`. Never store secrets or transcripts. Correct outdated facts with `memory_reflect`.
4. Before you stop, and now and then in long sessions, call `checkpoint_save` with where you are and what
   comes next.
"""
"""The shipped body of the block (LF newlines)."""

_BEGIN_LINE = re.compile(r"<!-- graymatter:instructions:begin v(\d+) sha256=([0-9a-f]{64}) -->")
_FENCE = re.compile(r"^[ \t]*(```|~~~)")

BlockState = Literal["absent", "current", "stale", "edited", "broken"]


@dataclass(frozen=True)
class Block:
    """Where the block sits in a text: character span, recorded version and hash, and its body."""

    start: int
    end: int
    version: int
    recorded: str
    body: str


def digest(body: str) -> str:
    """SHA-256 of a body, newlines normalised to LF."""
    return hashlib.sha256(body.replace("\r\n", "\n").encode("utf-8")).hexdigest()


def render(newline: str = "\n", body: str = PROTOCOL) -> str:
    """The whole block, markers included, ending with a newline."""
    begin = f"{BEGIN} v{BLOCK_VERSION} sha256={digest(body)} -->"
    text = f"{begin}\n{body}{END}\n"
    return text.replace("\n", newline)


def _marker_lines(text: str) -> list[tuple[int, int, str]]:
    """Each line outside fenced code that holds a marker: (start, end incl. newline, stripped line)."""
    found: list[tuple[int, int, str]] = []
    fenced, position = False, 0
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced and (stripped.startswith(BEGIN) or stripped == END):
            found.append((position, position + len(line), stripped))
        position += len(line)
    return found


def find(text: str) -> Block | Literal["broken"] | None:
    """The block in ``text``; None when there is none; ``"broken"`` for unpaired, repeated or malformed
    markers (fixed by hand)."""
    markers = _marker_lines(text)
    if not markers:
        return None
    if len(markers) != 2 or not markers[0][2].startswith(BEGIN) or markers[1][2] != END:
        return "broken"
    match = _BEGIN_LINE.fullmatch(markers[0][2])
    if match is None:
        return "broken"
    body = text[markers[0][1] : markers[1][0]]
    return Block(markers[0][0], markers[1][1], int(match.group(1)), match.group(2), body)


def state(text: str | None) -> BlockState:
    """``absent``, ``current`` (the shipped text), ``stale`` (an older shipped text, safe to replace),
    ``edited`` (changed by hand: reported, never overwritten) or ``broken`` (markers out of order)."""
    block = find(text or "")
    if block is None:
        return "absent"
    if block == "broken":
        return "broken"
    if digest(block.body) != block.recorded:
        return "edited"
    return "current" if block.version == BLOCK_VERSION and digest(block.body) == digest(PROTOCOL) else "stale"


def upsert(text: str | None, prefix: str = "") -> str:
    """``text`` with the current block: appended after a blank line when absent (a new file gets
    ``prefix`` first), replaced in place when stale. Edited or broken blocks, and files that end inside an
    open code fence (the block would be code), are returned unchanged."""
    if text is None or not text.strip():
        return prefix + render("\n")
    newline = "\r\n" if "\r\n" in text else "\n"
    block = find(text)
    if block == "broken" or (block is not None and state(text) != "stale"):
        return text
    if block is not None:
        return text[: block.start] + render(newline) + text[block.end :]
    appended = text + ("" if text.endswith("\n") else newline) + newline + render(newline)
    return appended if isinstance(find(appended), Block) else text  # an unclosed code fence swallows it


def remove(text: str, prefix: str = "") -> str | None:
    """``text`` without the block and the blank line put before it; None when nothing else is left (the
    file was graymatter's alone). An edited or broken block is left for the user."""
    block = find(text)
    if block is None or block == "broken" or state(text) == "edited":
        return text
    before, after = text[: block.start], text[block.end :]
    if not after.strip():
        for blank in ("\r\n\r\n", "\n\n"):
            if before.endswith(blank):
                before = before[: -len(blank) // 2]
                break
    rest = before + after
    return None if rest.strip() in ("", prefix.strip()) else rest
