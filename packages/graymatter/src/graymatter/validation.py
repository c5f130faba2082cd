"""Input validation shared by every face (library, CLI, MCP, REST). Failures raise ``InvalidInput``
before any effect, with a one-line message that never echoes the offending text."""

from __future__ import annotations

import json
import math
from typing import Any, cast

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from graymatter.constants import CONFIDENCE_LABELS, CONFIDENCE_LEVELS, Confidence
from graymatter.errors import InvalidInput
from graymatter.models import SESSION_MAX_CHARS, Provenance

_CONFIDENCE_CHOICES = ", ".join(f'"{label}"' for label in CONFIDENCE_LABELS[:-1])
_CONFIDENCE_ERROR = f'confidence must be {_CONFIDENCE_CHOICES} or "{CONFIDENCE_LABELS[-1]}"'


def agent_id(value: Any, max_chars: int = 1024) -> str:
    """A non-blank string, returned unchanged (``" a "`` and ``"a"`` are different agents)."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput("agent_id is required (a non-blank string)")
    if len(value) > max_chars:
        raise InvalidInput(f"agent_id is {len(value)} characters; the limit is {max_chars}")
    if "\x00" in value:
        raise InvalidInput("agent_id must not contain NUL characters")
    return value


def text(value: Any, max_bytes: int, field: str = "text") -> str:
    """Non-blank text within the byte limit (UTF-8)."""
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be a string")
    if not value.strip():
        raise InvalidInput(f"{field} is empty")
    try:  # one encoding: the size of valid text; a lone surrogate is measured as surrogatepass spells it
        size, valid = len(value) if value.isascii() else len(value.encode("utf-8")), True
    except UnicodeEncodeError:
        size, valid = len(value.encode("utf-8", errors="surrogatepass")), False
    if size > max_bytes:
        raise InvalidInput(f"{field} is {size} bytes; the limit is {max_bytes} bytes")
    if not valid:
        raise InvalidInput(f"{field} is not valid Unicode (lone surrogate)")
    return value


def query(value: Any, max_bytes: int) -> str:
    """A query string (may be empty: recency only) within the byte limit."""
    if not isinstance(value, str):
        raise InvalidInput("query must be a string")
    size = len(value.encode("utf-8", errors="surrogatepass"))
    if size > max_bytes:
        raise InvalidInput(f"query is {size} bytes; the limit is {max_bytes} bytes")
    return (
        value.encode("utf-8", errors="replace").decode("utf-8")
        if any(0xD800 <= ord(ch) <= 0xDFFF for ch in value)
        else value
    )


def confidence(value: Any) -> Confidence:
    """One of ``verified``, ``inferred``, ``unverified``."""
    if value not in CONFIDENCE_LEVELS:
        raise InvalidInput(_CONFIDENCE_ERROR)
    return cast(Confidence, value)


def _number_from_zero(value: Any, field: str, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidInput(f"{field} must be a finite number in [0, {high}]")
    if not 0 <= value <= high:
        raise InvalidInput(f"{field} must be in [0, {high}]")
    return float(value)


def confidence_weight(value: Any) -> float:
    """A finite number in [0, 0.5]."""
    return _number_from_zero(value, "confidence_weight", 0.5)


def min_relevance(value: Any) -> float:
    """A finite number in [0, 1]."""
    return _number_from_zero(value, "min_relevance", 1)


def top_k(value: Any) -> int:
    """A positive integer (at most 1000)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1000:
        raise InvalidInput("top_k must be an integer between 1 and 1000")
    return value


def provenance(value: Any) -> Provenance:
    """A ``Provenance`` (or a dict that validates as one); ``None`` = library."""
    if value is None:  # the defaults: what ``Provenance()`` builds, without building its schema
        return Provenance.model_construct()
    if isinstance(value, Provenance):
        return value
    try:
        return Provenance.model_validate(value)
    except Exception:
        raise InvalidInput(
            "provenance must have interface cli|mcp|rest|library and optional client, token_id, session"
        ) from None


def session(value: Any) -> str | None:
    """A session id: a non-blank string of at most ``SESSION_MAX_CHARS`` printable characters, or None."""
    if value is None:
        return None
    if (
        not isinstance(value, str)
        or not value.strip()
        or len(value) > SESSION_MAX_CHARS
        or not value.isprintable()
    ):
        raise InvalidInput(
            f"session must be a non-blank printable string of at most {SESSION_MAX_CHARS} characters"
        )
    return value


MAX_JSON_DEPTH = 100
"""How deeply arrays and objects may nest in any JSON we accept (request bodies, states, metadata)."""


def nesting(value: Any, field: str, limit: int = MAX_JSON_DEPTH) -> Any:
    """``value`` unchanged when its lists and dicts nest at most ``limit`` deep, else ``InvalidInput``.

    Iterative, so a value too deep for Python's recursion limit is refused rather than crashing.
    """
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        if depth > limit:
            raise InvalidInput(f"{field} nests more than {limit} levels deep")
        stack.extend((child, depth + 1) for child in children)
    return value


def json_object(value: Any, field: str, max_bytes: int) -> dict[str, Any]:
    """A JSON object: a dict, or a string holding one. Must serialise as strict JSON within the limit."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"{field} must be valid JSON: {exc.msg} at position {exc.pos}") from None
        except (ValueError, RecursionError) as exc:  # e.g. an integer longer than Python converts
            reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc).split(";")[0]
            raise InvalidInput(f"{field} must be valid JSON: {reason}") from None
    if not isinstance(value, dict):
        raise InvalidInput(f"{field} must be a JSON object")
    encoded = json_bytes(value, field)
    if len(encoded) > max_bytes:
        raise InvalidInput(f"{field} is {len(encoded)} bytes; the limit is {max_bytes} bytes")
    return value


def json_bytes(value: Any, field: str) -> bytes:
    """Strict JSON encoding (no NaN/Infinity, string keys, the nesting bound) or ``InvalidInput``."""
    nesting(value, field)
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"{field} is not JSON-serialisable ({exc})") from None
    except UnicodeEncodeError:
        raise InvalidInput(f"{field} contains invalid Unicode") from None


def label(value: Any, field: str) -> str:
    """A link endpoint or relation: trimmed, lower-cased, non-blank, at most 512 characters."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{field} is required (a non-blank string)")
    cleaned = value.strip().lower()
    if len(cleaned) > 512:
        raise InvalidInput(f"{field} is longer than 512 characters")
    return cleaned


def error_location(error: ErrorDetails) -> str:
    """The dotted location of one pydantic error (``""`` at the top level)."""
    return ".".join(str(part) for part in error["loc"])


def first_error(exc: ValidationError) -> tuple[str, str]:
    """``(dotted location, message)`` of the first error of a pydantic ``ValidationError``."""
    first = exc.errors()[0]
    return error_location(first), first["msg"]
