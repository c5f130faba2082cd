"""Defensive readers for provider JSON: whatever shape a server sends, adapters get sane values.

A value of the wrong type reads as empty (or a default) instead of raising TypeError deep inside a
parser; the adapters then decide whether what is left is a usable reply or a ProviderProtocolError.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["cost_field", "index_field", "mapping", "sequence", "text_field", "token_field"]


def mapping(value: Any) -> Mapping[str, Any]:
    """`value` if it is a JSON object, else an empty one."""
    return value if isinstance(value, Mapping) else {}


def sequence(value: Any) -> list[Any]:
    """`value` if it is a JSON array, else an empty one."""
    return value if isinstance(value, list) else []


def text_field(value: Any) -> str | None:
    """A string field (ids, names, reasons): strings as they are, numbers as text, else None."""
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return None


def index_field(value: Any, default: int) -> int:
    """A position (`index`, `output_index`): a non-negative int, else `default`."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else default


def token_field(value: Any) -> int:
    """A token count: finite, positive numbers (floored); anything else (None, bool, text, NaN, inf,
    negative) counts as 0, so a misbehaving server can never corrupt the run's totals."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    if not math.isfinite(value) or value <= 0:
        return 0
    return int(value)


def cost_field(value: Any) -> float | None:
    """A provider-reported cost in USD, or None when absent or not a finite, non-negative number."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not math.isfinite(value) or value < 0:
        return None
    return float(value)
