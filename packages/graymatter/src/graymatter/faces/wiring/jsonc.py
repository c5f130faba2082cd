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
    """A recursive-descent parser over positions. With a ``focus`` path only the containers along it are
    parsed entry by entry; other values are decoded whole by ``raw_decode`` when they hold no comment."""

    def __init__(self, text: str, strict: bool) -> None:
        self.text = text
        self.strict = strict
        self.position = 1 if text.startswith("\ufeff") else 0
        self.decoder = json.JSONDecoder(parse_constant=_no_constant)

    def peek(self) -> re.Match[str] | None:
        """The next significant token (comments and whitespace skipped), not consumed."""
        while self.position < len(self.text):
            match = _TOKEN.match(self.text, self.position)
            if match is None:
                raise InvalidInput(f"not valid JSON at {describe(self.text, self.position)}")
            kind = match.lastgroup
            if kind in ("line", "block") and self.strict:
                where = describe(self.text, self.position)
                raise InvalidInput(f"comments are not allowed in this JSON file ({where})")
            if kind not in ("ws", "line", "block"):
                return match
            self.position = match.end()
        return None

    def fail(self, what: str) -> InvalidInput:
        token = self.peek()
        where = describe(self.text, token.start()) if token else "the end of the file"
        return InvalidInput(f"not valid JSON: {what} at {where}")

    def take(self, value: str) -> int:
        token = self.peek()
        if token is None or token.group() != value:
            raise self.fail(f'expected "{value}"')
        self.position = token.end()
        return token.start()

    def value(self, depth: int, focus: tuple[str, ...] | None) -> Node:
        if depth > MAX_DEPTH:
            raise self.fail(f"nesting deeper than {MAX_DEPTH}")
        token = self.peek()
        if token is None:
            raise self.fail("expected a value")
        raw = token.group()
        if raw in ("{", "["):
            return self.container(depth, raw, focus)
        if token.lastgroup not in ("string", "literal"):
            raise self.fail("expected a value")
        self.position = token.end()
        return Node("scalar", token.start(), token.end(), _scalar(raw, self.text, token.start()))

    def skip(self, depth: int) -> Node:
        """A value off the focus path: decoded whole by ``json`` when it holds no comment, else parsed."""
        token = self.peek()
        if token is not None and token.group() in ("{", "["):
            try:
                data, end = self.decoder.raw_decode(self.text, token.start())
            except ValueError:
                return self.value(depth, None)
            self.position = end
            return Node("object" if token.group() == "{" else "array", token.start(), end, data)
        return self.value(depth, None)

    def container(self, depth: int, opening: str, focus: tuple[str, ...] | None) -> Node:
        closing = "}" if opening == "{" else "]"
        start = self.take(opening)
        node = Node("object" if opening == "{" else "array", start, start)
        while True:
            token = self.peek()
            if token is not None and token.group() == closing:
                if node.entries and node.entries[-1].comma is not None and self.strict:
                    raise self.fail("trailing comma")
                break
            if node.entries and node.entries[-1].comma is None:
                raise self.fail(f'expected "," or "{closing}"')
            node.entries.append(self.entry(depth, opening == "{", focus))
            following = self.peek()
            if following is not None and following.group() == ",":
                node.entries[-1].comma = following.start()
                self.position = following.end()
        node.end = self.take(closing) + 1
        if opening == "{":
            node.data = {entry.key: entry.value.data for entry in node.entries}
        else:
            node.data = [entry.value.data for entry in node.entries]
        return node

    def entry(self, depth: int, keyed: bool, focus: tuple[str, ...] | None) -> Entry:
        key, token = None, self.peek()
        if keyed:
            if token is None or token.lastgroup != "string":
                raise self.fail("expected a quoted key")
            self.position = token.end()
            key = str(_scalar(token.group(), self.text, token.start()))
            self.take(":")
        if focus is None:
            value = self.value(depth + 1, None)
        elif focus and key == focus[0]:
            value = self.value(depth + 1, focus[1:])
        else:
            value = self.skip(depth + 1)
        return Entry(key, token.start() if token is not None else value.start, value)


def _no_constant(name: str) -> object:
    raise ValueError(name)


def _scalar(raw: str, text: str, position: int) -> object:
    try:
        return json.loads(raw)
    except ValueError:
        raise InvalidInput(f"not valid JSON: a bad string or number at {describe(text, position)}") from None


def parse(text: str, *, strict: bool = False, focus: tuple[str, ...] | None = None) -> Node:
    """The tree of ``text``, which must hold exactly one JSON value (JSONC unless ``strict``). With ``focus``,
    only the containers along that key path have entries; other values are whole (data and span only)."""
    parser = _Parser(text, strict)
    root = parser.value(0, focus)
    if parser.peek() is not None:
        raise parser.fail("unexpected text after the value")
    return root


def loads(text: str, *, strict: bool = False) -> object:
    """The Python value of JSON / JSONC ``text`` (comments and trailing commas ignored unless ``strict``);
    plain JSON is decoded by :mod:`json` directly."""
    try:
        return json.loads(text.removeprefix("\ufeff"), parse_constant=_no_constant)
    except ValueError:
        return parse(text, strict=strict, focus=()).data
