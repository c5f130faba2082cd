"""A JSON / JSONC reader that keeps byte positions: comments, trailing commas and spans for editing.

``parse`` turns text into a tree of :class:`Node` (objects, arrays, scalars), each with its span in the text
and its Python value, so an editor can splice a fragment in or out without re-serialising the file. With
``strict=True`` only RFC 8259 JSON is accepted (no comments, no trailing commas).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Final

from graymatter.errors import InvalidInput

MAX_DEPTH: Final = 128
"""Deeper nesting than this is refused (no config file of a client nests that deep)."""

_TOKEN = re.compile(
    r"""
    (?P<ws>[ \t\r\n]+)
  | (?P<line>//[^\r\n]*)
  | (?P<block>/\*.*?\*/)
  | (?P<string>"(?:[^"\\\r\n]|\\.)*")
  | (?P<punct>[{}\[\]:,])
  | (?P<literal>-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|true|false|null)
    """,
    re.VERBOSE | re.DOTALL,
)


@dataclass(frozen=True)
class Token:
    """One lexical token: its kind (``ws``, ``line``, ``block``, ``string``, ``punct``, ``literal``), span."""

    kind: str
    start: int
    end: int


@dataclass
class Entry:
    """A member of an object (``key`` set) or an item of an array (``key`` None), with its comma if any."""

    key: str | None
    start: int
    value: Node
    comma: int | None = None
    """Position of the comma that follows this entry, if there is one."""


@dataclass
class Node:
    """A value in the text: its kind (``object``, ``array``, ``scalar``), span, Python value and entries."""

    kind: str
    start: int
    end: int
    data: object = None
    entries: list[Entry] = field(default_factory=list)

    def member(self, key: str) -> Entry | None:
        """The member named ``key`` of this object; a duplicate name is refused."""
        found = [entry for entry in self.entries if entry.key == key]
        if len(found) > 1:
            raise InvalidInput(f'the key "{key}" appears {len(found)} times; remove the duplicates')
        return found[0] if found else None


def describe(text: str, position: int) -> str:
    """``line L column C`` of a position in ``text``."""
    line = text.count("\n", 0, position) + 1
    column = position - (text.rfind("\n", 0, position) + 1) + 1
    return f"line {line} column {column}"


def tokenize(text: str, *, strict: bool = False) -> list[Token]:
    """Every token of ``text``; a byte-order mark at the start is skipped. Unknown characters, an
    unterminated string or comment, and (when ``strict``) any comment raise ``InvalidInput``."""
    tokens: list[Token] = []
    position = 1 if text.startswith("\ufeff") else 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None:
            raise InvalidInput(f"not valid JSON at {describe(text, position)}")
        kind = match.lastgroup or ""
        if strict and kind in ("line", "block"):
            raise InvalidInput(f"comments are not allowed in this JSON file ({describe(text, position)})")
        tokens.append(Token(kind, match.start(), match.end()))
        position = match.end()
    return tokens


class _Parser:
    def __init__(self, text: str, strict: bool) -> None:
        self.text = text
        self.strict = strict
        self.tokens = [t for t in tokenize(text, strict=strict) if t.kind not in ("ws", "line", "block")]
        self.index = 0

    def peek(self) -> Token | None:
        return self.tokens[self.index] if self.index < len(self.tokens) else None

    def fail(self, what: str) -> InvalidInput:
        token = self.peek()
        where = describe(self.text, token.start) if token else "the end of the file"
        return InvalidInput(f"not valid JSON: {what} at {where}")

    def take(self, value: str) -> Token:
        token = self.peek()
        if token is None or self.text[token.start : token.end] != value:
            raise self.fail(f'expected "{value}"')
        self.index += 1
        return token

    def value(self, depth: int) -> Node:
        if depth > MAX_DEPTH:
            raise self.fail(f"nesting deeper than {MAX_DEPTH}")
        token = self.peek()
        if token is None:
            raise self.fail("expected a value")
        raw = self.text[token.start : token.end]
        if raw in ("{", "["):
            return self.container(depth, raw)
        if token.kind not in ("string", "literal"):
            raise self.fail("expected a value")
        self.index += 1
        return Node("scalar", token.start, token.end, _scalar(raw, self.text, token.start))

    def container(self, depth: int, opening: str) -> Node:
        closing = "}" if opening == "{" else "]"
        start = self.take(opening).start
        node = Node("object" if opening == "{" else "array", start, start)
        while True:
            token = self.peek()
            if token is not None and self.text[token.start : token.end] == closing:
                if node.entries and node.entries[-1].comma is not None and self.strict:
                    raise self.fail("trailing comma")
                break
            if node.entries and node.entries[-1].comma is None:
                raise self.fail(f'expected "," or "{closing}"')
            node.entries.append(self.entry(depth, opening == "{"))
            following = self.peek()
            if following is not None and self.text[following.start : following.end] == ",":
                node.entries[-1].comma = following.start
                self.index += 1
        node.end = self.take(closing).end
        if opening == "{":
            node.data = {entry.key: entry.value.data for entry in node.entries}
        else:
            node.data = [entry.value.data for entry in node.entries]
        return node

    def entry(self, depth: int, keyed: bool) -> Entry:
        if not keyed:
            item = self.value(depth + 1)
            return Entry(None, item.start, item)
        token = self.peek()
        if token is None or token.kind != "string":
            raise self.fail("expected a quoted key")
        self.index += 1
        key = _scalar(self.text[token.start : token.end], self.text, token.start)
        self.take(":")
        return Entry(str(key), token.start, self.value(depth + 1))


def _scalar(raw: str, text: str, position: int) -> object:
    try:
        return json.loads(raw)
    except ValueError:
        raise InvalidInput(f"not valid JSON: a bad string or number at {describe(text, position)}") from None


def parse(text: str, *, strict: bool = False) -> Node:
    """The tree of ``text``, which must hold exactly one JSON value (JSONC unless ``strict``)."""
    parser = _Parser(text, strict)
    root = parser.value(0)
    if parser.peek() is not None:
        raise parser.fail("unexpected text after the value")
    return root


def loads(text: str, *, strict: bool = False) -> object:
    """The Python value of JSON / JSONC ``text`` (comments and trailing commas ignored unless ``strict``)."""
    return parse(text, strict=strict).data
