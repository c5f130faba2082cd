"""The MCP wire contract, run in-process and over streamable HTTP on a real uvicorn server.

Every success path's structuredContent is validated against the advertised output schema with a JSON
Schema 2020-12 validator; every error path is text-only ``isError`` with no structuredContent
(memory_reflect: test_contract_reflect.py).
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from graymatter.faces.mcp_server.arguments import ON_MISSING_ERROR
from graymatter.faces.mcp_server.specs import TOOL_NAMES
from support.mcp_session import Session, run

pytestmark = pytest.mark.timeout(120)


def test_tools_list_exactly_seven_flat_inputs_object_outputs(connect: Any) -> None:
    async def body(s: Session) -> None:
        assert sorted(s.tools) == sorted(TOOL_NAMES)
        assert len(TOOL_NAMES) == 7
        for tool in s.tools.values():
            assert tool.input_schema["type"] == "object"
            assert tool.output_schema["type"] == "object"
            assert tool.annotations.open_world_hint is False
            assert tool.annotations.destructive_hint is False

    run(connect, body)


def test_search_add_alias_batch_success_paths(connect: Any, agent: str) -> None:
    async def body(s: Session) -> None:
        empty, text = await s.ok("memory_search", {"agent_id": agent, "query": "deploy script"})
        assert empty["count"] == 0 and empty["facts"] == []
        assert text == json.dumps(empty, separators=(",", ":"), ensure_ascii=False)  # compact, same order

        added, text = await s.ok(
            "memory_add", {"agent_id": agent, "text": "The deploy script is tools/deploy.sh."}
        )
        assert added["stored"] is True and added["agent_id"] == agent and added["confidence"] == "inferred"
        verified, _ = await s.ok(
            "memory_add", {"agent_id": agent, "text": "Releases ship on Fridays.", "confidence": "verified"}
        )
        assert verified["confidence"] == "verified"

        hits, text = await s.ok("memory_search", {"agent_id": agent, "query": "deploy script", "top_k": 3})
        assert hits["count"] == len(hits["facts"]) >= 1
        assert hits["facts"][0]["id"] == added["fact_id"]
        assert hits["facts"][0]["text"] == "The deploy script is tools/deploy.sh."

        explained, text = await s.ok(
            "memory_search", {"agent_id": agent, "query": "deploy script", "explain": True}
        )
        receipt = explained["explained"][0]
        assert receipt["fact_id"] == explained["facts"][0]["id"]
        assert receipt["ranks"]["keyword_rank"] >= 1
        assert receipt["interface"] == "mcp" and receipt["client"]  # provenance: the handshake's clientInfo

        batch, text = await s.ok(
            "memory_search_batch", {"agent_id": agent, "queries": ["deploy script", "  ", "releases Fridays"]}
        )
        assert [q["query"] for q in batch["per_query"]] == ["deploy script", "releases Fridays"]
        merged_ids = [f["id"] for f in batch["merged"]]
        assert len(merged_ids) == len(set(merged_ids)) == batch["count"]
        assert {added["fact_id"], verified["fact_id"]} <= set(merged_ids)

        alias, text = await s.ok(
            "memory_alias", {"agent_id": agent, "term": "deploy", "equivalents": ["ship", "rollout"]}
        )
        assert alias == {
            "agent_id": agent,
            "term": "deploy",
            "equivalents": ["ship", "rollout"],
            "stored": True,
            "fact_id": alias["fact_id"],
        }
        after, _ = await s.ok("memory_search", {"agent_id": agent, "query": "deploy ship rollout"})
        assert alias["fact_id"] not in [f["id"] for f in after["facts"]]

    run(connect, body)


def test_checkpoint_save_and_resume_found_and_empty(connect: Any, agent: str) -> None:
    state = {"task": "contract", "step": 2, "nested": {"ok": True, "items": [1, 2.5, None, "é"]}}

    async def body(s: Session) -> None:
        absent, text = await s.ok("checkpoint_resume", {"agent_id": agent, "on_missing": "empty"})
        assert absent == {"found": False, "agent_id": agent}
        assert text == f'{{"found":false,"agent_id":{json.dumps(agent)}}}'

        saved, text = await s.ok("checkpoint_save", {"agent_id": agent, "state": json.dumps(state)})
        assert saved["agent_id"] == agent and saved["created_at"].endswith("Z")

        for arguments in (
            {"agent_id": agent},
            {"agent_id": agent, "on_missing": "empty"},
            {"agent_id": agent, "on_missing": "error"},
        ):
            resumed, text = await s.ok("checkpoint_resume", arguments)
            assert resumed == {
                "id": saved["checkpoint_id"],
                "created_at": saved["created_at"],
                "state": state,
            }
            assert '"é"' in text  # UTF-8, not escaped

        default_state, _ = await s.ok("checkpoint_save", {"agent_id": agent})
        latest, _ = await s.ok("checkpoint_resume", {"agent_id": agent})
        assert latest["id"] == default_state["checkpoint_id"] and latest["state"] == {}

    run(connect, body)


def test_missing_checkpoint_default_and_error_are_identical_text_errors(connect: Any, agent: str) -> None:
    expected = f'no checkpoint found for agent "{agent}": no checkpoints for agent "{agent}"'

    async def body(s: Session) -> None:
        assert await s.error("checkpoint_resume", {"agent_id": agent}) == expected
        assert await s.error("checkpoint_resume", {"agent_id": agent, "on_missing": "error"}) == expected

    run(connect, body)


INVALID_ON_MISSING = [
    "",
    "EMPTY",
    "Empty",
    "Error",
    " empty",
    "empty ",
    "none",
    None,
    0,
    1,
    True,
    False,
    1.5,
    {},
    {"value": "empty"},
    [],
    ["empty"],
]


def test_invalid_on_missing_is_refused_without_effect(connect: Any, agent: str) -> None:
    async def body(s: Session) -> None:
        for value in INVALID_ON_MISSING:
            text = await s.error("checkpoint_resume", {"agent_id": agent, "on_missing": value})
            assert text == ON_MISSING_ERROR, value
        # the refusals changed nothing: still no checkpoint, and a saved one is still the latest
        assert (await s.ok("checkpoint_resume", {"agent_id": agent, "on_missing": "empty"}))[0][
            "found"
        ] is False
        saved, _ = await s.ok("checkpoint_save", {"agent_id": agent, "state": "{}"})
        for value in INVALID_ON_MISSING:
            assert (
                await s.error("checkpoint_resume", {"agent_id": agent, "on_missing": value})
                == ON_MISSING_ERROR
            )
        assert (await s.ok("checkpoint_resume", {"agent_id": agent}))[0]["id"] == saved["checkpoint_id"]

    run(connect, body)


def test_argument_validation_errors_are_text_only(connect: Any, agent: str) -> None:
    cases = [
        ("memory_search", {"query": "x"}, "agent_id is required"),
        ("memory_search", {"agent_id": "  ", "query": "x"}, "agent_id is required"),
        (
            "memory_search",
            {"agent_id": agent, "query": "x", "top_k": 0},
            "invalid arguments for memory_search: top_k",
        ),
        (
            "memory_search",
            {"agent_id": agent, "query": "x", "top_k": "5"},
            "invalid arguments for memory_search: top_k",
        ),
        (
            "memory_search",
            {"agent_id": agent, "query": "x", "min_confidence": "high"},
            "invalid arguments for memory_search: min_confidence",
        ),
        (
            "memory_search",
            {"agent_id": agent, "query": "x", "confidence_weight": 0.9},
            "invalid arguments for memory_search: confidence_weight",
        ),
        (
            "memory_search",
            {"agent_id": agent, "query": "x", "bogus": 1},
            "invalid arguments for memory_search: bogus",
        ),
        ("memory_search", {"agent_id": agent, "query": "   "}, "query must not be blank"),
        (
            "memory_search_batch",
            {"agent_id": agent, "queries": []},
            "invalid arguments for memory_search_batch",
        ),
        ("memory_search_batch", {"agent_id": agent, "queries": [" ", ""]}, "queries must contain"),
        ("memory_add", {"agent_id": agent, "text": ""}, ""),
        (
            "memory_add",
            {"agent_id": agent, "text": "x", "confidence": None},
            "invalid arguments for memory_add",
        ),
        (
            "memory_alias",
            {"agent_id": agent, "term": "a", "equivalents": []},
            "invalid arguments for memory_alias",
        ),
        ("checkpoint_save", {"agent_id": agent, "state": "[1, 2]"}, "state must be valid JSON"),
        ("checkpoint_save", {"agent_id": agent, "state": "{not json"}, "state must be valid JSON"),
        (
            "checkpoint_save",
            {"agent_id": agent, "state": {"a": 1}},
            "invalid arguments for checkpoint_save: state",
        ),
        ("checkpoint_resume", {"agent_id": None}, "agent_id is required"),
    ]

    async def body(s: Session) -> None:
        for name, arguments, prefix in cases:
            text = await s.error(name, arguments)
            assert text.startswith(prefix), (name, arguments, text)
            assert "\n" not in text
        found, _ = await s.ok("memory_search", {"agent_id": agent, "query": "a x"})
        assert found["count"] == 0
        assert (await s.ok("checkpoint_resume", {"agent_id": agent, "on_missing": "empty"}))[0][
            "found"
        ] is False

    run(connect, body)


def test_concurrent_tool_calls(connect: Any, agent: str) -> None:
    async def body(s: Session) -> None:
        results: list[dict[str, Any]] = []

        async def add(i: int) -> None:
            content, _ = await s.ok(
                "memory_add", {"agent_id": agent, "text": f"Concurrent fact number {i} about lamps."}
            )
            results.append(content)

        async with anyio.create_task_group() as group:
            for i in range(24):
                group.start_soon(add, i)
        assert len({r["fact_id"] for r in results}) == 24
        found, _ = await s.ok("memory_search", {"agent_id": agent, "query": "concurrent lamps", "top_k": 50})
        assert found["count"] == 24

    run(connect, body)
