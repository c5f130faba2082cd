"""The tools offered to the model (bash, read_file, write_file, edit_file, submit) and their hash."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from tinyagent.types import ToolSpec

__all__ = ["TOOL_SPECS", "toolset_sha256"]


def _object_schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """A JSON Schema object of exactly these properties (no others allowed)."""
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


TOOL_SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="bash",
        description=(
            "Run a bash command in the working directory and return its exit code and combined "
            "stdout/stderr. Each call runs in a fresh shell: `cd` and exported variables do not "
            "persist between calls. Long output is truncated in the middle. Commands are killed "
            "after the tool timeout."
        ),
        parameters=_object_schema(
            {"command": {"type": "string", "description": "The bash command to run."}},
            ["command"],
        ),
    ),
    ToolSpec(
        name="read_file",
        description=(
            "Read a UTF-8 text file (path relative to the working directory). Optionally give a "
            "1-based start line and a maximum number of lines."
        ),
        parameters=_object_schema(
            {
                "path": {"type": "string"},
                "offset": {"type": "integer", "minimum": 1, "description": "First line (1-based)."},
                "limit": {"type": "integer", "minimum": 1, "description": "Maximum number of lines."},
            },
            ["path"],
        ),
    ),
    ToolSpec(
        name="write_file",
        description=(
            "Create or overwrite a text file with the given content (path relative to the working "
            "directory). Missing parent directories are created."
        ),
        parameters=_object_schema(
            {"path": {"type": "string"}, "content": {"type": "string"}},
            ["path", "content"],
        ),
    ),
    ToolSpec(
        name="edit_file",
        description=(
            "Replace exactly one occurrence of old_text with new_text in a file. Fails without "
            "changing the file if old_text is absent or occurs more than once; include more "
            "surrounding context to make it unique."
        ),
        parameters=_object_schema(
            {
                "path": {"type": "string"},
                "old_text": {"type": "string", "description": "Exact text to replace (non-empty)."},
                "new_text": {"type": "string"},
            },
            ["path", "old_text", "new_text"],
        ),
    ),
    ToolSpec(
        name="submit",
        description=(
            "Finish the task and hand back the final answer. Call it once the task is done; the run "
            "ends and tool calls after it in the same turn are not executed."
        ),
        parameters=_object_schema(
            {"answer": {"type": "string", "description": "The final answer for the user."}},
            ["answer"],
        ),
    ),
)


def toolset_sha256(specs: Sequence[ToolSpec]) -> str:
    """SHA-256 of the canonical JSON (sorted keys, no whitespace) of the tool specs, in order."""
    canonical = json.dumps(
        [spec.model_dump(mode="json") for spec in specs],
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()
