"""The hook payload: one JSON object on stdin, bounded, BOM-tolerant, unknown fields ignored."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import BinaryIO, Final

MAX_PAYLOAD_BYTES: Final = 1024 * 1024
"""The largest payload read from stdin; a longer one is refused (the hook then prints nothing)."""

MAX_FIELD_CHARS: Final = 4096
"""Identifiers (session id, cwd, source, ...) longer than this are treated as absent."""

_BOM: Final = b"\xef\xbb\xbf"


class PayloadError(ValueError):
    """The payload is not one JSON object within the size bound (the message never quotes it)."""

    code = "hook_payload"


@dataclass(frozen=True)
class HookPayload:
    """The fields of a client's payload the hooks use; every one may be missing (``None``)."""

    session_id: str | None = None
    cwd: str | None = None
    event_name: str | None = None
    source: str | None = None
    prompt: str | None = None
    trigger: str | None = None
    reason: str | None = None


def _field(data: dict[str, object], name: str, limit: int | None = MAX_FIELD_CHARS) -> str | None:
    value = data.get(name)
    if not isinstance(value, str) or not value.strip():
        return None
    if limit is not None and len(value) > limit:
        return None
    return value


def parse_payload(raw: bytes) -> HookPayload:
    """Decode ``raw`` (UTF-8, optional BOM; empty or blank means no fields); raise ``PayloadError``."""
    if len(raw) > MAX_PAYLOAD_BYTES:
        raise PayloadError(f"payload is over {MAX_PAYLOAD_BYTES} bytes")
    if raw.startswith(_BOM):
        raw = raw[len(_BOM) :]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise PayloadError("payload is not UTF-8") from None
    if not text.strip():
        return HookPayload()
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        raise PayloadError("payload is not valid JSON") from None
    if not isinstance(data, dict):
        raise PayloadError("payload is not a JSON object")
    event = _field(data, "hook_event_name") or _field(data, "hookEventName")
    return HookPayload(
        session_id=_field(data, "session_id") or _field(data, "sessionId"),
        cwd=_field(data, "cwd"),
        event_name=event,
        source=_field(data, "source"),
        prompt=_field(data, "prompt", limit=None),
        trigger=_field(data, "trigger"),
        reason=_field(data, "reason"),
    )


def read_payload(stream: BinaryIO) -> HookPayload:
    """Read at most one byte over the bound from ``stream`` and parse it."""
    return parse_payload(stream.read(MAX_PAYLOAD_BYTES + 1))
