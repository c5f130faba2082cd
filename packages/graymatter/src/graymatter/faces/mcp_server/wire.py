"""A tool result on its way to the wire: handed to the SDK as a mapping, structuredContent walked once.

The SDK shapes every ``tools/call`` result for the negotiated protocol version: it validates the
result against that version's ``CallToolResult`` and dumps it (``serialize_server_result``), then the
JSON-RPC envelope is dumped once more when the line is written. For structuredContent, which that model
types as an open ``dict[str, Any]``, the first pass checks nothing and only copies: a walk over the whole
object (3-4 ms of a 1 MB checkpoint resume). So the ``tools/call`` handler hands the SDK the result with an
empty structuredContent (:func:`hold_back`), and :class:`StructuredContentPassThrough`, a middleware of the
SDK's own chain, puts the real object back into the SDK's finished result. The SDK still validates and
sieves everything else for the version; a version whose result had no structuredContent would drop the
key, and it would stay dropped (the SDK's surface keeps it for every version it speaks, 2024-11-05 on).
What is put back is JSON data already: a result model's ``model_dump(mode="json")`` plus the store's
state; each tool's outputSchema is generated from that model.

The text content (the structured content's compact JSON) is held back the same way. Over stdio, where
:class:`graymatter.faces.mcp_server.stdio.InlineStdout` writes the lines, neither is serialised again:
both go into the answer's line as the bytes of that text (:class:`Splices`), and a checkpoint's state
reaches the text as the store holds it (:class:`RawJSON`), never decoded by the server. Other transports
get the decoded objects.
"""

from __future__ import annotations

import json
import secrets
from collections import OrderedDict
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

STRUCTURED = "structuredContent"
MAX_PENDING_SPLICES = 8
"""Fragments kept for answers not written yet; older ones (an answer that was never sent) are dropped."""


@dataclass(frozen=True, slots=True)
class RawJSON:
    """A value that is JSON text already (a stored checkpoint state, checked by the store): put into the
    text as it is, decoded only for a transport that needs the object."""

    text: str


@dataclass(frozen=True, slots=True)
class Held:
    """What :func:`hold_back` took out of one result: its structured content and its text."""

    structured: dict[str, Any]
    text: str | None


class Splices:
    """Fragments of JSON put into an answer's line after the SDK dumped it: the SDK carries a placeholder
    string (a NUL, a per-process secret token and a counter: no client text can spell it) instead."""

    def __init__(self) -> None:
        self._token = secrets.token_hex(8)
        self._count = 0
        self._pending: OrderedDict[bytes, bytes] = OrderedDict()

    def fragment(self, data: bytes) -> str:
        """The placeholder string that :meth:`pieces` replaces (quotes included) with ``data``."""
        from pydantic_core import to_json

        self._count += 1
        marker = f"\x00graymatter-splice:{self._token}:{self._count}"
        self._pending[to_json(marker)] = data
        while len(self._pending) > MAX_PENDING_SPLICES:
            self._pending.popitem(last=False)
        return marker

    def pieces(self, line: bytes) -> list[bytes]:
        """``line`` with the placeholders it holds replaced by their fragments (each used once), as the
        pieces to write one after the other (no copy of a large fragment)."""
        found = sorted((line.find(needle), needle) for needle in self._pending if needle in line)
        pieces: list[bytes] = []
        start = 0
        for at, needle in found:
            pieces += [line[start:at], self._pending.pop(needle)]
            start = at + len(needle)
        pieces.append(line[start:])
        return pieces


HELD: ContextVar[list[Held] | None] = ContextVar("graymatter_held_structured_content", default=None)
"""What is held back while the SDK shapes the current ``tools/call`` result (set by
:class:`StructuredContentPassThrough`, filled by :func:`hold_back`, same task)."""
SPLICES: ContextVar[Splices | None] = ContextVar("graymatter_splices", default=None)
"""The splices of the stdio writer serving this session (set by the stdio face); ``None`` elsewhere."""


def json_text(structured: dict[str, Any]) -> str:
    """The compact JSON of ``structured``; :class:`RawJSON` values go in as their text."""
    from pydantic_core import to_json

    raws = {key: value.text for key, value in structured.items() if isinstance(value, RawJSON)}
    if not raws:
        return to_json(structured).decode()
    token = secrets.token_hex(8)
    marked = {key: f"\x00{token}:{key}" if key in raws else value for key, value in structured.items()}
    text = to_json(marked).decode()
    for key, raw in raws.items():
        text = text.replace(to_json(marked[key]).decode(), raw, 1)
    return text


def decoded(structured: dict[str, Any]) -> dict[str, Any]:
    """``structured`` with its :class:`RawJSON` values decoded (what a transport without splices gets)."""
    if not any(isinstance(value, RawJSON) for value in structured.values()):
        return structured
    return {k: json.loads(v.text) if isinstance(v, RawJSON) else v for k, v in structured.items()}


def wire_result(result: Any) -> Any:
    """A :class:`CallToolResult` as the wire mapping, its structuredContent passed as it is.

    The SDK dumps a returned model (a walk over the whole structured content) before it validates and
    dumps the mapping for the negotiated protocol version; a mapping skips that first walk. Failures
    (no structuredContent) are left to the SDK as they are.
    """
    from mcp_types import CallToolResult

    if type(result) is not CallToolResult or result.structured_content is None:
        return result
    wire: dict[str, Any] = result.model_dump(
        by_alias=True, mode="json", exclude_none=True, exclude={"structured_content"}
    )
    wire[STRUCTURED] = result.structured_content
    return wire


def _single_text(wire: dict[str, Any]) -> str | None:
    content = wire.get("content")
    if isinstance(content, list) and len(content) == 1 and isinstance(content[0], dict):
        text = content[0].get("text")
        return text if content[0].get("type") == "text" and isinstance(text, str) else None
    return None


def hold_back(wire: Any) -> Any:
    """``wire`` with its structuredContent replaced by ``{}`` (and its one text by ``""``), both kept for
    the middleware to put back.

    Outside :class:`StructuredContentPassThrough` (nothing to put it back) ``wire`` is returned with its
    structured content decoded.
    """
    if not isinstance(wire, dict) or STRUCTURED not in wire:
        return wire
    held = HELD.get()
    if held is None:
        return {**wire, STRUCTURED: decoded(wire[STRUCTURED])}
    text = _single_text(wire)
    held.append(Held(wire[STRUCTURED], text))
    if text is None:
        return {**wire, STRUCTURED: {}}
    return {**wire, STRUCTURED: {}, "content": [{**wire["content"][0], "text": ""}]}


def put_back(result: dict[str, Any], held: Held) -> None:
    """Restore what :func:`hold_back` took into the SDK's shaped ``result``: as splices over stdio when the
    text is exactly the structured content's JSON on one line, else as the objects."""
    from pydantic_core import to_json

    splices = SPLICES.get()
    content = result.get("content")
    text_slot = content[0] if held.text is not None and isinstance(content, list) and content else None
    if splices is not None and text_slot is not None and held.text is not None and _one_line(held.text):
        result[STRUCTURED] = splices.fragment(held.text.encode())
        text_slot["text"] = splices.fragment(to_json(held.text))
        return
    result[STRUCTURED] = decoded(held.structured)
    if text_slot is not None:
        text_slot["text"] = held.text


def _one_line(text: str) -> bool:
    return "\n" not in text and "\r" not in text


class StructuredContentPassThrough:
    """SDK middleware: around ``tools/call``, put the held-back structuredContent into the shaped result."""

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        """Run the rest of the chain; for a ``tools/call`` whose result kept the key, restore its value."""
        if ctx.method != "tools/call":
            return await call_next(ctx)
        held: list[Any] = []
        token = HELD.set(held)
        try:
            result = await call_next(ctx)
        finally:
            HELD.reset(token)
        if len(held) == 1 and isinstance(result, dict) and STRUCTURED in result:
            put_back(result, held[0])
        return result


__all__ = [
    "SPLICES",
    "RawJSON",
    "Splices",
    "StructuredContentPassThrough",
    "decoded",
    "hold_back",
    "json_text",
    "wire_result",
]
