"""Text that can always be encoded as UTF-8: lone surrogates from JSON escapes replaced."""

from __future__ import annotations

import re
from typing import Any

__all__ = ["clean_json_value", "clean_text"]

_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_text(text: str) -> str:
    """`text` with lone surrogates (decoded from JSON escapes like \\ud800) replaced by U+FFFD.

    Such code points cannot be encoded as UTF-8, so they could neither be saved in the trajectory
    nor passed to the OS as a path or command.
    """
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)


def clean_json_value(value: Any) -> Any:
    """Apply `clean_text` to every string (keys included) of a decoded JSON value."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, list):
        return [clean_json_value(item) for item in value]
    if isinstance(value, dict):
        return {clean_json_value(key): clean_json_value(item) for key, item in value.items()}
    return value
