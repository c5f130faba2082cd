"""Span edits of JSON / JSONC text: set or remove one member, append or remove array items, keeping the rest.

Every edit splices a rendered fragment into the original text at positions found by
:mod:`graymatter.faces.wiring.jsonc`, in the file's own indentation, newline style and trailing-comma
style; comments and foreign entries are never touched. After each edit the result is parsed again and
must hold exactly the expected data, else the edit is refused (nothing is written by the caller).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence

from graymatter.errors import InvalidInput
from graymatter.faces.wiring.jsonc import Entry, Node, loads, parse

Splice = tuple[int, int, str]
_INDENTED = re.compile(r"^([ \t]+)\S", re.MULTILINE)
_NEWLINE = re.compile(r"\r?\n|$")


def newline_of(text: str) -> str:
    """The file's newline: CRLF if it uses any, else LF."""
    return "\r\n" if "\r\n" in text else "\n"


def indent_unit(text: str) -> str:
    """The file's indentation step: the first indented line's leading whitespace, else two spaces."""
    match = _INDENTED.search(text)
    if match is None:
        return "  "
    found = match.group(1)
    return "\t" if found.startswith("\t") else " " * len(found)


def line_start(text: str, position: int) -> int:
    """The position of the first character of the line holding ``position``."""
    return text.rfind("\n", 0, position) + 1


def line_indent(text: str, position: int) -> str:
    """The leading whitespace of the line holding ``position``."""
    start = line_start(text, position)
    end = start
    while end < len(text) and text[end] in " \t":
        end += 1
    return text[start:end]


def end_of_line(text: str, position: int) -> int:
    """Past spaces and same-line comments after ``position``: the position of the line's newline (or of the
    end of the text), or ``position`` itself when other text follows on the same line."""
    cursor = position
    while True:
        while cursor < len(text) and text[cursor] in " \t":
            cursor += 1
        if text.startswith("//", cursor):
            cursor = _NEWLINE.search(text, cursor).start()  # type: ignore[union-attr]
            continue
        close = text.find("*/", cursor) if text.startswith("/*", cursor) else -1
        if close != -1 and "\n" not in text[cursor:close]:
            cursor = close + 2
            continue
        break
    return cursor if cursor >= len(text) or text[cursor] in "\r\n" else position


def render(value: object, unit: str, base: str, newline: str) -> str:
    """``value`` as JSON indented by ``unit`` under ``base``, in the file's newline style."""
    lines = json.dumps(value, indent=unit, ensure_ascii=False).split("\n")
    return (newline + base).join(lines)


def splice(text: str, edits: Sequence[Splice]) -> str:
    """``text`` with each ``(start, end, replacement)`` applied (non-overlapping spans)."""
    ordered = sorted(enumerate(edits), key=lambda pair: (pair[1][0], pair[0]), reverse=True)
    for _, (start, end, replacement) in ordered:  # at one position, the edit listed first comes first
        text = text[:start] + replacement + text[end:]
    return text


def _fragment(key: str | None, value: object, unit: str, base: str, newline: str) -> str:
    body = render(value, unit, base, newline)
    return body if key is None else f"{json.dumps(key, ensure_ascii=False)}: {body}"


def _insert(text: str, node: Node, key: str | None, value: object) -> str:
    """Add an entry at the end of the object or array ``node``."""
    newline, unit = newline_of(text), indent_unit(text)
    if not node.entries:
        base = line_indent(text, node.start)
        inner = text[node.start + 1 : node.end - 1]
        closing = node.end - 1
        fragment = _fragment(key, value, unit, base + unit, newline)
        if "\n" in inner and text[line_start(text, closing) : closing].strip() == "":
            at = line_start(text, closing)
            return splice(text, [(at, at, base + unit + fragment + newline)])
        return splice(text, [(closing, closing, newline + base + unit + fragment + newline + base)])
    last = node.entries[-1]
    multiline = "\n" in text[node.start : node.entries[0].start]
    if not multiline:
        compact = json.dumps(value, ensure_ascii=False)
        fragment = compact if key is None else f"{json.dumps(key, ensure_ascii=False)}: {compact}"
        if last.comma is not None:
            return splice(text, [(last.comma + 1, last.comma + 1, f" {fragment},")])
        return splice(text, [(last.value.end, last.value.end, f", {fragment}")])
    indent = line_indent(text, last.start)
    fragment = _fragment(key, value, unit, indent, newline)
    if last.comma is not None:
        at = end_of_line(text, last.comma + 1)
        return splice(text, [(at, at, newline + indent + fragment + ",")])
    at = end_of_line(text, last.value.end)
    return splice(text, [(last.value.end, last.value.end, ","), (at, at, newline + indent + fragment)])


def _remove(text: str, node: Node, index: int) -> str:
    """Remove entry ``index`` of the object or array ``node`` (for the last: the inverse of ``_insert``)."""
    entries = node.entries
    entry = entries[index]
    if len(entries) == 1:
        return _remove_only(text, node, entry)
    if index == len(entries) - 1:
        previous = entries[index - 1]
        assert previous.comma is not None
        trailing = entry.comma is not None
        end = entry.comma + 1 if entry.comma is not None else entry.value.end
        if "\n" not in text[previous.value.end : entry.start]:
            start = previous.comma + 1 if trailing else previous.value.end
            return splice(text, [(start, end, "")])
        start = end_of_line(text, previous.comma + 1)
        edits: list[Splice] = [(start, end, "")]
        if not trailing:
            edits.append((previous.comma, previous.comma + 1, ""))
        return splice(text, edits)
    following = entries[index + 1]
    assert entry.comma is not None
    between = text[entry.comma + 1 : following.start]
    if "\n" in text[entry.value.end : following.start] and between.strip() == "":
        return splice(text, [(line_start(text, entry.start), line_start(text, following.start), "")])
    return splice(text, [(entry.start, following.start if between.strip() == "" else entry.comma + 1, "")])


def _remove_only(text: str, node: Node, entry: Entry) -> str:
    end = entry.comma + 1 if entry.comma is not None else entry.value.end
    before, after = text[node.start + 1 : entry.start], text[end : node.end - 1]
    if not before.strip() and not after.strip():
        return splice(text, [(node.start + 1, node.end - 1, "")])
    start, stop = line_start(text, entry.start), end_of_line(text, end)
    at_newline = stop >= len(text) or text[stop] in "\r\n"
    if text[start : entry.start].strip() or not at_newline or text[end:stop].strip():
        return splice(text, [(entry.start, end, "")])
    newline = _NEWLINE.match(text, stop)
    return splice(text, [(start, newline.end() if newline else stop, "")])


def _checked(old: str, before: object, new: str, expected: object, strict: bool) -> str:
    """``new`` when it parses to exactly ``expected``; ``old`` when that is what ``old`` already held."""
    if before == expected:
        return old
    if loads(new, strict=strict) != expected:
        raise InvalidInput("refusing an edit that would change more than graymatter's entry")
    return new


def _walk(root: Node, path: Sequence[str]) -> tuple[Node, int]:
    """The deepest existing object along ``path`` and how many keys of ``path`` it consumed."""
    node = root
    for depth, key in enumerate(path):
        if node.kind != "object":
            raise InvalidInput(f'"{".".join(path[:depth])}" is not a JSON object; fix it by hand')
        entry = node.member(key)
        if entry is None:
            return node, depth
        node = entry.value
    return node, len(path)


def _nest(keys: Sequence[str], value: object) -> object:
    for key in reversed(keys):
        value = {key: value}
    return value


def _with(data: object, path: Sequence[str], value: object) -> object:
    if not path:
        return value
    copy = dict(data) if isinstance(data, dict) else {}
    copy[path[0]] = _with(copy.get(path[0]), path[1:], value)
    return copy


def new_document(path: Sequence[str], value: object) -> str:
    """A new file holding only ``value`` at ``path``."""
    return json.dumps(_nest(path, value), indent=2, ensure_ascii=False) + "\n"


def set_member(text: str, path: Sequence[str], value: object, *, strict: bool = False) -> str:
    """``text`` with the member at ``path`` set to ``value`` (created with its parents if missing)."""
    if not text.strip():
        return new_document(path, value)
    root = parse(text, strict=strict, focus=tuple(path[:-1]))
    if root.kind != "object":
        raise InvalidInput("the file does not hold a JSON object; fix it by hand")
    node, depth = _walk(root, path[:-1])
    expected = _with(root.data, path, value)
    if depth < len(path) - 1:
        new = _insert(text, node, path[depth], _nest(path[depth + 1 :], value))
        return _checked(text, root.data, new, expected, strict)
    if node.kind != "object":
        raise InvalidInput(f'"{".".join(path[:-1])}" is not a JSON object; fix it by hand')
    entry = node.member(path[-1])
    if entry is None:
        return _checked(text, root.data, _insert(text, node, path[-1], value), expected, strict)
    if entry.value.data == value:
        return text
    rendered = render(value, indent_unit(text), line_indent(text, entry.start), newline_of(text))
    new = splice(text, [(entry.value.start, entry.value.end, rendered)])
    return _checked(text, root.data, new, expected, strict)


def remove_member(text: str, path: Sequence[str], *, strict: bool = False, prune: bool = True) -> str:
    """``text`` without the member at ``path`` (unchanged if it is not there). With ``prune``, parents left
    empty by the removal go too (graymatter created them, unless the file had them empty before)."""
    new = _remove_member(text, path, strict=strict)
    for depth in range(len(path) - 1, 0, -1) if prune and new != text else ():
        if get_member(new, path[:depth], strict=strict) != {}:
            break
        new = _remove_member(new, path[:depth], strict=strict)
    return new


def _remove_member(text: str, path: Sequence[str], *, strict: bool) -> str:
    if not text.strip():
        return text
    root = parse(text, strict=strict, focus=tuple(path[:-1]))
    node, depth = _walk(root, path[:-1])
    if depth < len(path) - 1 or node.kind != "object" or node.member(path[-1]) is None:
        return text
    index = next(i for i, entry in enumerate(node.entries) if entry.key == path[-1])
    parent = dict(node.data) if isinstance(node.data, dict) else {}
    parent.pop(path[-1])
    return _checked(text, root.data, _remove(text, node, index), _with(root.data, path[:-1], parent), strict)


def get_member(text: str, path: Sequence[str], *, strict: bool = False) -> object:
    """The value at ``path`` in ``text``, or None when it (or the file) is absent."""
    if not text.strip():
        return None
    data = loads(text, strict=strict)
    for key in path:
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data


def upsert_item(
    text: str, path: Sequence[str], item: object, owns: Callable[[object], bool], *, strict: bool = False
) -> str:
    """``text`` where the array at ``path`` holds ``item`` once, and no other item that ``owns`` claims."""
    text = remove_items(text, path, lambda other: owns(other) and other != item, strict=strict)
    current = get_member(text, path, strict=strict)
    if isinstance(current, list) and item in current:
        return text
    if current is None:
        return set_member(text, path, [item], strict=strict)
    if not isinstance(current, list):
        raise InvalidInput(f'"{".".join(path)}" is not a JSON array; fix it by hand')
    root = parse(text, strict=strict, focus=tuple(path))
    node, _ = _walk(root, path)
    new = _insert(text, node, None, item)
    return _checked(text, root.data, new, _with(root.data, path, [*current, item]), strict)


def remove_items(
    text: str, path: Sequence[str], owns: Callable[[object], bool], *, strict: bool = False
) -> str:
    """``text`` without the items of the array at ``path`` that ``owns`` claims (the array is kept)."""
    while True:
        current = get_member(text, path, strict=strict)
        if not isinstance(current, list):
            return text
        index = next((i for i, item in enumerate(current) if owns(item)), None)
        if index is None:
            return text
        root = parse(text, strict=strict, focus=tuple(path))
        node, _ = _walk(root, path)
        remaining = [item for i, item in enumerate(current) if i != index]
        text = _checked(
            text, root.data, _remove(text, node, index), _with(root.data, path, remaining), strict
        )
