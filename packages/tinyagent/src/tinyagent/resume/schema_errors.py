"""Describing a schema validation failure by field names and indexes only (never the file's content)."""

from __future__ import annotations

from typing import Any, get_args

from tinyagent.trajectory.models import Trajectory
from tinyagent.validation import first_error

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


def first_error_type(exc: Exception) -> str | None:
    """The pydantic error type of the first validation error (such as "json_invalid"), if any."""
    first = first_error(exc)
    return first.type if first.count else None


def first_error_location(exc: Exception) -> str:
    """Describe where schema validation failed using field names and indexes only."""
    first = first_error(exc)
    if not first.count:
        return "the trajectory does not match the schema"
    known = _known_field_names()

    def shown(element: int | str) -> str:
        return str(element) if isinstance(element, int) or element in known else "<unknown field>"

    more = f" (and {first.count - 1} more)" if first.count > 1 else ""
    return f"field {first.where('top level', shown)} is invalid ({first.type}){more}"
