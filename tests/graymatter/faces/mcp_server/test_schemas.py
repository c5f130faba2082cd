"""What tools/list publishes: names, titles, descriptions, annotations, input and output schemas."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from jsonschema import Draft202012Validator
from mcp import Client

from graymatter.faces.mcp_server.schemas import (
    CheckpointResumeEmpty,
    CheckpointResumeResult,
    output_schema_of,
)
from graymatter.faces.mcp_server.server import build_server
from graymatter.faces.mcp_server.specs import INSTRUCTIONS, TOOL_SPECS, estimate_tokens

EXPECTED_TOOLS = [
    "memory_search",
    "memory_search_batch",
    "memory_add",
    "memory_alias",
    "checkpoint_save",
    "checkpoint_resume",
    "memory_reflect",
]
READ_ONLY = {"memory_search", "memory_search_batch", "checkpoint_resume"}
FREE_FORM_OBJECTS = {"state"}  # user JSON objects carried verbatim (checkpoint state)
SEED_ABSENCE_BRANCH = {
    "type": "object",
    "additionalProperties": False,
    "required": ["found", "agent_id"],
    "properties": {"found": {"type": "boolean", "enum": [False]}, "agent_id": {"type": "string"}},
}
VERBS = {
    "memory_search": "Search",
    "memory_search_batch": "Search",
    "memory_add": "Store",
    "memory_alias": "Declare",
    "checkpoint_save": "Persist",
    "checkpoint_resume": "Read",
    "memory_reflect": "Curate",
}
SIBLINGS = {
    "memory_search": "memory_add",
    "memory_search_batch": "memory_search",
    "memory_add": "memory_reflect",
    "memory_alias": "memory_search",
    "checkpoint_save": "checkpoint_resume",
    "checkpoint_resume": "checkpoint_save",
    "memory_reflect": "memory_add",
}


@pytest.fixture(scope="module")
def listed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from graymatter.engine.memory import Memory

    memory = Memory(tmp_path_factory.mktemp("schemas"))

    async def main() -> dict[str, Any]:
        async with Client(build_server(memory), mode="legacy") as client:
            result = await client.list_tools()
            return {
                "tools": {t.name: t.model_dump(by_alias=True, exclude_none=True) for t in result.tools},
                "order": [t.name for t in result.tools],
                "instructions": client.instructions,
            }

    try:
        return anyio.run(main)
    finally:
        memory.close()


def walk(node: Any, path: str = "$") -> Any:
    """Yield (path, dict) for every object node of a schema."""
    if isinstance(node, dict):
        yield path, node
        for key, value in node.items():
            yield from walk(value, f"{path}.{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from walk(value, f"{path}[{index}]")


def test_exactly_the_seven_tools(listed: dict[str, Any]) -> None:
    assert listed["order"] == EXPECTED_TOOLS


@pytest.mark.parametrize("name", EXPECTED_TOOLS)
def test_input_schema_is_flat(listed: dict[str, Any], name: str) -> None:
    schema = listed["tools"][name]["inputSchema"]
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    for path, node in walk(schema):
        assert not {"anyOf", "oneOf", "allOf", "$ref", "$defs"} & node.keys(), path
    Draft202012Validator.check_schema(schema)
    assert all(prop.get("description") for prop in schema["properties"].values()), "every parameter described"


@pytest.mark.parametrize("name", EXPECTED_TOOLS)
def test_output_schema_root_object_and_closed_shapes(listed: dict[str, Any], name: str) -> None:
    schema = listed["tools"][name]["outputSchema"]
    assert schema["type"] == "object"
    Draft202012Validator.check_schema(schema)
    for path, node in walk(schema):
        if node.get("type") != "object" or (path == "$" and "oneOf" in node):
            continue
        if path.rsplit(".", 1)[-1] in FREE_FORM_OBJECTS:
            continue
        assert node.get("additionalProperties") is False, f"{name} {path} is not closed"
        assert "$ref" not in node


def test_checkpoint_resume_output_is_a_two_branch_union(listed: dict[str, Any]) -> None:
    schema = listed["tools"]["checkpoint_resume"]["outputSchema"]
    assert set(schema) == {"type", "oneOf"}, "the union root declares nothing but its type and oneOf"
    success, absence = schema["oneOf"]
    assert success == output_schema_of(CheckpointResumeResult)  # generated from the model, never by hand
    assert set(success["properties"]) == {"id", "created_at", "state", "message_count"}
    assert not {"found", "agent_id"} & set(success["properties"])
    assert absence == SEED_ABSENCE_BRANCH
    validator = Draft202012Validator(schema)
    assert validator.is_valid({"found": False, "agent_id": "a"})
    assert validator.is_valid({"id": "01J", "created_at": "2026-01-01T00:00:00Z", "state": {}})
    for bad in (
        {"found": True, "agent_id": "a"},
        {"found": False},
        {"found": False, "agent_id": "a", "id": "x"},
        {"id": "01J", "created_at": "t", "state": {}, "found": False},
        {},
    ):
        assert not validator.is_valid(bad), bad
    assert CheckpointResumeEmpty(found=False, agent_id="a").model_dump() == {"found": False, "agent_id": "a"}


@pytest.mark.parametrize("name", EXPECTED_TOOLS)
def test_titles_descriptions_and_annotations(listed: dict[str, Any], name: str) -> None:
    tool = listed["tools"][name]
    assert len(tool["title"]) > len(name) and tool["title"] != name
    description = tool["description"]
    assert len(description) <= 800 and description.endswith(".")
    assert description.startswith(VERBS[name])
    assert "use" in description.lower()
    assert "Returns" in description or "Errors" in description
    assert SIBLINGS[name] in description
    hints = tool["annotations"]
    assert hints["readOnlyHint"] is (name in READ_ONLY)
    assert hints["idempotentHint"] is (name in READ_ONLY)
    assert hints["destructiveHint"] is False
    assert hints["openWorldHint"] is False


def test_reflect_schema_identity_and_action_order(listed: dict[str, Any]) -> None:
    schema = listed["tools"]["memory_reflect"]["inputSchema"]
    assert schema["required"] == ["action"]
    assert schema["properties"]["action"]["enum"] == ["add", "update", "forget", "link", "pin", "unpin"]
    assert (
        "agent_id" in schema["properties"]
        and "deprecated" in schema["properties"]["agent"]["description"].lower()
    )
    assert "__shared__" in listed["tools"]["memory_search"]["description"]
    assert listed["tools"]["memory_search"]["inputSchema"]["properties"]["top_k"]["default"] == 8
    resume = listed["tools"]["checkpoint_resume"]["inputSchema"]["properties"]["on_missing"]
    assert resume["enum"] == ["error", "empty"] and resume["default"] == "error"


def test_instructions_are_static_and_within_budget(listed: dict[str, Any]) -> None:
    assert listed["instructions"] == INSTRUCTIONS
    assert estimate_tokens(INSTRUCTIONS) <= 240
    for word in (
        "memory_search",
        "__shared__",
        "memory_add",
        "memory_reflect",
        "checkpoint_save",
        "checkpoint_resume",
        "memory_alias",
    ):
        assert word in INSTRUCTIONS


def test_specs_match_what_is_listed(listed: dict[str, Any]) -> None:
    for spec in TOOL_SPECS:
        assert listed["tools"][spec.name]["outputSchema"] == spec.output_schema
