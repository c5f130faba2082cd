"""Deep nesting, huge arrays and odd text in MCP tool arguments are tool errors, never internal errors
(issue 16, defect 3). Runs in-process and over streamable HTTP against a real server (``connect``)."""

from __future__ import annotations

from typing import Any

from graymatter.validation import MAX_JSON_DEPTH
from support.mcp_session import Session, run

DEEP_STATE = '{"k": ' * 100_000 + "1" + "}" * 100_000


def _nested(containers: int) -> Any:
    value: Any = "leaf"
    for _ in range(containers):
        value = [value]
    return value


def test_a_state_nested_100k_deep_is_a_tool_error(connect: Any, agent: str) -> None:
    async def body(session: Session) -> None:
        text = await session.error("checkpoint_save", {"agent_id": agent, "state": DEEP_STATE})
        assert text == f"state must be valid JSON: it nests more than {MAX_JSON_DEPTH} levels deep"
        missing = await session.error("checkpoint_resume", {"agent_id": agent})
        assert "no checkpoint" in missing  # nothing was saved

    run(connect, body)


def test_a_state_at_the_bound_is_saved(connect: Any, agent: str) -> None:
    state = '{"k": ' * (MAX_JSON_DEPTH - 1) + "1" + "}" * (MAX_JSON_DEPTH - 1)

    async def body(session: Session) -> None:
        await session.ok("checkpoint_save", {"agent_id": agent, "state": state})

    run(connect, body)


def test_deeply_nested_and_huge_arguments_are_tool_errors(connect: Any, agent: str) -> None:
    cases: list[dict[str, Any]] = [
        {"agent_id": agent, "text": _nested(MAX_JSON_DEPTH + 5)},
        {"agent_id": agent, "text": "t", "confidence": _nested(150)},
        {"agent_id": agent, "text": ["x"] * 200_000},
        {"agent_id": _nested(120), "text": "t"},
    ]

    async def body(session: Session) -> None:
        for arguments in cases:
            text = await session.error("memory_add", arguments)
            assert text.startswith("invalid arguments for memory_add: "), text
        huge = await session.error("memory_search_batch", {"agent_id": agent, "queries": ["q"] * 200_000})
        assert huge.startswith("invalid arguments for memory_search_batch: "), huge
        deep = await session.error("memory_search", {"agent_id": agent, "query": _nested(150)})
        assert deep == (
            f"invalid arguments for memory_search: arguments nests more than {MAX_JSON_DEPTH} levels deep"
        )

    run(connect, body)


def test_nul_and_noncharacters_are_tool_errors_or_stored_never_internal(connect: Any, agent: str) -> None:
    async def body(session: Session) -> None:
        for text in ("nul \x00 inside", "\ufffe\uffff", "\u202e reversed"):
            result = await session.client.call_tool("memory_add", {"agent_id": agent, "text": text})
            shown = "".join(block.text for block in result.content if block.type == "text")
            assert "internal error" not in shown, shown

    run(connect, body)
