"""The MCP contract's argument rules: checks whose texts are part of the contract, then the strict models."""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from graymatter.errors import InvalidInput, ToolFailure
from graymatter.faces.mcp_server.schemas import ArgumentsModel
from graymatter.validation import MAX_JSON_DEPTH, error_location, nesting

ON_MISSING_ERROR = 'on_missing must be "error" or "empty"'


def validate_arguments(tool: str, model: type[ArgumentsModel], arguments: dict[str, Any]) -> ArgumentsModel:
    """Apply the contract's argument rules, then the strict argument model; raise ToolFailure on misuse.

    The checks whose texts are part of the contract (``on_missing``, reflect identity, ``agent_id``) run
    first, so a caller never sees a generic validation message for them.
    """
    try:
        nesting(arguments, "arguments")
    except InvalidInput as exc:
        raise ToolFailure(f"invalid arguments for {tool}: {exc}") from None
    if tool == "checkpoint_resume" and "on_missing" in arguments:
        value = arguments["on_missing"]
        if not (isinstance(value, str) and value in ("error", "empty")):
            raise ToolFailure(ON_MISSING_ERROR)
    if tool == "memory_reflect":
        _reflect_identity(arguments)
    else:
        agent_id = arguments.get("agent_id")
        if agent_id is None or (isinstance(agent_id, str) and not agent_id.strip()):
            raise ToolFailure("agent_id is required")
    try:
        return model.model_validate(arguments)
    except ValidationError as exc:
        raise ToolFailure(_validation_message(tool, exc)) from exc


def _reflect_identity(arguments: dict[str, Any]) -> None:
    """ADR-014 identity rules, checked before anything else touches the store."""
    given = [key for key in ("agent_id", "agent") if key in arguments]
    if not given:
        raise ToolFailure("agent_id is required")
    for key in given:
        value = arguments[key]
        if not isinstance(value, str) or not value.strip():
            raise ToolFailure(f"{key} must be a non-blank string")


def _validation_message(tool: str, exc: ValidationError) -> str:
    parts = []
    for error in exc.errors(include_url=False, include_input=False):
        where = error_location(error)
        message = error["msg"].removeprefix("Value error, ")
        parts.append(f"{where}: {message}" if where else message)
    return f"invalid arguments for {tool}: " + "; ".join(parts)


def require_agent_id(value: str) -> str:
    """A non-blank agent id."""
    if not value.strip():
        raise ToolFailure("agent_id is required")
    return value


def non_blank(value: str, name: str) -> str:
    """``value``, refused when blank."""
    if not value.strip():
        raise ToolFailure(f"{name} must not be blank")
    return value


def required(value: str | None, name: str, action: str) -> str:
    """An argument that ``memory_reflect`` needs for ``action``."""
    if value is None or not value.strip():
        raise ToolFailure(f'{name} is required for memory_reflect action "{action}"')
    return value


def parse_state(raw: str | None) -> dict[str, Any]:
    """The checkpoint state: a JSON object (``{}`` when absent); NaN and Infinity are refused."""
    if raw is None:
        return {}
    try:
        state = nesting(json.loads(raw, parse_constant=_reject_constant), "state")
    except (RecursionError, InvalidInput):
        raise ToolFailure(
            f"state must be valid JSON: it nests more than {MAX_JSON_DEPTH} levels deep"
        ) from None
    except ValueError as exc:
        raise ToolFailure(f"state must be valid JSON: {exc}") from exc
    if not isinstance(state, dict):
        raise ToolFailure(f"state must be valid JSON: a JSON object is required, got {type(state).__name__}")
    return state


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not valid JSON")
