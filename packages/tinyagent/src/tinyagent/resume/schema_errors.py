"""Describing a schema validation failure by field names and indexes only (never the file's content)."""

from __future__ import annotations

from typing import Any, get_args

from tinyagent.trajectory.models import Trajectory

_KNOWN_FIELDS: frozenset[str] | None = None


def _known_field_names() -> frozenset[str]:
    """Every field name of the trajectory models: safe to print (never transcript content)."""
    global _KNOWN_FIELDS
    if _KNOWN_FIELDS is None:
        from pydantic import BaseModel

        names: set[str] = set()
        pending: list[type[BaseModel]] = [Trajectory]
        seen: set[type[BaseModel]] = set()
        while pending:
            model = pending.pop()
            if model in seen:
                continue
            seen.add(model)
            for name, field in model.model_fields.items():
                names.add(name)
                pending.extend(_model_types(field.annotation))
        _KNOWN_FIELDS = frozenset(names)
    return _KNOWN_FIELDS


def _model_types(annotation: Any) -> list[Any]:
    from pydantic import BaseModel

    found: list[Any] = []
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        found.append(annotation)
    for arg in get_args(annotation):
        found.extend(_model_types(arg))
    return found


def _error_items(exc: Exception) -> list[dict[str, Any]] | None:
    """The validation errors of `exc` without input values, or None when it is not a ValidationError."""
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return None
    items: list[dict[str, Any]] = errors(include_url=False, include_input=False, include_context=False)
    return items


def first_error_type(exc: Exception) -> str | None:
    """The pydantic error type of the first validation error (such as "json_invalid"), if any."""
    items = _error_items(exc)
    return str(items[0].get("type")) if items else None


def first_error_location(exc: Exception) -> str:
    """Describe where schema validation failed using field names and indexes only."""
    items = _error_items(exc)
    if not items:
        return "the trajectory does not match the schema"
    known = _known_field_names()
    parts: list[str] = []
    for element in items[0].get("loc", ()):
        if isinstance(element, int) or element in known:
            parts.append(str(element))
        else:
            parts.append("<unknown field>")
    where = ".".join(parts) or "top level"
    kind = str(items[0].get("type", "invalid"))
    more = f" (and {len(items) - 1} more)" if len(items) > 1 else ""
    return f"field {where} is invalid ({kind}){more}"
