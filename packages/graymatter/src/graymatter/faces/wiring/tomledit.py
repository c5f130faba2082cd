"""Span edits of TOML text (Codex's ``config.toml``): one owned table appended, replaced or cut out.

The owned table is written as a block of lines, ``[a.b]`` then its keys, then each sub-table as
``[a.b.env]`` (never inline), at the end of the file in the file's newline style; every other byte is kept.
Each edit is checked by parsing the result with :mod:`tomllib`: it must hold the old data plus (or minus)
exactly the owned table, else the edit is refused. A table of that name in a shape graymatter did not
write (an inline table, dotted keys) therefore fails the check and is left to the user.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Mapping, Sequence
from typing import Any

from graymatter.errors import InvalidInput

_BARE = re.compile(r"^[A-Za-z0-9_-]+$")
_HEADER = re.compile(r"^[ \t]*\[")


def loads(text: str) -> dict[str, Any]:
    """The Python value of TOML ``text``; a parse error is one line of ``InvalidInput``."""
    try:
        return tomllib.loads(text.removeprefix("\ufeff"))
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInput(f"not valid TOML: {exc}") from None


def get_table(text: str, path: Sequence[str]) -> object:
    """The value at ``path``, or None when it (or the file) is absent."""
    data: object = loads(text) if text.strip() else {}
    for key in path:
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data


def _key(key: str) -> str:
    return key if _BARE.match(key) else json.dumps(key)


def _value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(item) for item in value) + "]"
    raise InvalidInput(f"cannot write a {type(value).__name__} value to TOML")


def render_table(path: Sequence[str], value: Mapping[str, object], newline: str = "\n") -> str:
    """The lines of the table at ``path``: its plain keys, then each sub-table under its own header."""
    lines = ["[" + ".".join(_key(key) for key in path) + "]"]
    lines += [f"{_key(k)} = {_value(v)}" for k, v in value.items() if not isinstance(v, Mapping)]
    text = newline.join(lines) + newline
    for key, item in value.items():
        if isinstance(item, Mapping):
            text += newline + render_table([*path, key], item, newline)
    return text


def _with(data: dict[str, Any], path: Sequence[str], value: object | None) -> dict[str, Any]:
    copy = dict(data)
    if len(path) == 1:
        if value is None:
            copy.pop(path[0], None)
        else:
            copy[path[0]] = value
        return copy
    inner = copy.get(path[0])
    copy[path[0]] = _with(inner if isinstance(inner, dict) else {}, path[1:], value)
    if value is None and not copy[path[0]]:
        copy.pop(path[0])
    return copy


def _block(lines: list[str], path: Sequence[str]) -> tuple[int, int] | None:
    """The line range ``[first, stop)`` of the owned table and its sub-tables, trailing blank and comment
    lines excluded (they belong to what follows)."""
    own = "[" + ".".join(_key(key) for key in path)
    first = next((i for i, line in enumerate(lines) if line.strip() == own + "]"), None)
    if first is None:
        return None
    stop = first + 1
    while stop < len(lines):
        line = lines[stop].strip()
        if _HEADER.match(line) and not (line == own + "]" or line.startswith(own + ".")):
            break
        stop += 1
    while stop > first + 1 and (not lines[stop - 1].strip() or lines[stop - 1].lstrip().startswith("#")):
        stop -= 1
    return first, stop


def _checked(new: str, expected: dict[str, Any]) -> str:
    try:
        data = loads(new)
    except InvalidInput:
        data = None
    if data != expected:
        raise InvalidInput("refusing a TOML edit that changes more than graymatter's table; edit it by hand")
    return new


def set_table(text: str, path: Sequence[str], value: Mapping[str, object]) -> str:
    """``text`` with the table at ``path`` holding exactly ``value`` (unchanged if it already does)."""
    old = loads(text) if text.strip() else {}
    current = get_table(text, path)
    if current == value:
        return text
    newline = "\r\n" if "\r\n" in text else "\n"
    if current is not None:
        text = remove_table(text, path)
    body = render_table(path, value, newline)
    if text.strip():
        if not text.endswith(("\n", "\r")):
            text += newline
        text += newline  # one blank line before the table, always: remove_table takes exactly one away
    else:
        text = text.removesuffix(text.lstrip("\ufeff"))  # keep a byte-order mark, drop blank lines
    return _checked(text + body, _with(old, path, dict(value)))


def remove_table(text: str, path: Sequence[str]) -> str:
    """``text`` without the owned table at ``path`` and the blank line graymatter put before it."""
    old = loads(text) if text.strip() else {}
    if get_table(text, path) is None:
        return text
    lines = text.splitlines(keepends=True)
    span = _block(lines, path)
    if span is None:
        raise InvalidInput(f"[{'.'.join(path)}] is not written as a table; remove it by hand")
    first, stop = span
    if first > 0 and not lines[first - 1].strip() and (stop == len(lines)):
        first -= 1
    if stop == len(lines) and first > 0 and not lines[first - 1].endswith(("\n", "\r")):
        lines[first - 1] += "\r\n" if "\r\n" in text else "\n"
    new = "".join(lines[:first] + lines[stop:])
    return _checked(new, _with(old, path, None))
