"""The MCP wire contract of memory_reflect (every action, identity rules), run in-process and over
streamable HTTP on a real uvicorn server, with the same schema checks as test_contract.py."""

from __future__ import annotations

import json
from typing import Any

import pytest

from support.mcp_session import Session, run

pytestmark = pytest.mark.timeout(120)


def test_reflect_every_action(connect: Any, agent: str) -> None:
    async def body(s: Session) -> None:
        added, text = await s.ok(
            "memory_reflect", {"action": "add", "agent_id": agent, "text": "CI uses 2 cores."}
        )
        assert added["action"] == "add" and added["agent"] == agent and added["ok"] is True
        assert added["fact_id"] and added["affected_ids"] == []
        assert text == json.dumps(added, separators=(",", ":"))  # the text is the structured result

        updated, _ = await s.ok(
            "memory_reflect",
            {
                "action": "update",
                "agent_id": agent,
                "target": "CI uses 2 cores.",
                "text": "CI uses 4 cores.",
                "confidence": "verified",
            },
        )
        assert updated["affected_ids"] == [added["fact_id"]] and updated["confidence"] == "verified"
        search, _ = await s.ok("memory_search", {"agent_id": agent, "query": "CI cores"})
        assert [f["text"] for f in search["facts"]] == ["CI uses 4 cores."]

        pinned, text = await s.ok(
            "memory_reflect", {"action": "pin", "agent_id": agent, "target": "CI uses 4 cores."}
        )
        assert pinned["affected_ids"] == [updated["fact_id"]]
        search, _ = await s.ok("memory_search", {"agent_id": agent, "query": "CI cores"})
        assert search["facts"][0]["pinned"] is True
        unpinned, _ = await s.ok(
            "memory_reflect", {"action": "unpin", "agent_id": agent, "text": "CI uses 4 cores."}
        )
        assert unpinned["affected_ids"] == [updated["fact_id"]]

        linked, text = await s.ok(
            "memory_reflect",
            {
                "action": "link",
                "agent_id": agent,
                "text": "Deploy.sh ",
                "target": "CHANGELOG",
                "relation": "updates",
            },
        )
        assert linked["link"]["relation"] == "updates"
        assert linked["link"]["source"] == "deploy.sh" and linked["link"]["target"] == "changelog"

        forgotten, text = await s.ok(
            "memory_reflect", {"action": "forget", "agent_id": agent, "target": "CI uses 4 cores."}
        )
        assert forgotten["affected_ids"] == [updated["fact_id"]]
        search, _ = await s.ok("memory_search", {"agent_id": agent, "query": "CI cores"})
        assert search["count"] == 0

        missing = await s.error("memory_reflect", {"action": "forget", "agent_id": agent, "target": "nope"})
        assert missing == 'target fact not found: "nope"'

    run(connect, body)


def test_reflect_identity_rules(connect: Any, agent: str) -> None:
    other = agent + "-other"

    async def body(s: Session) -> None:
        via_alias, _ = await s.ok(
            "memory_reflect", {"action": "add", "agent": agent, "text": "alias identity"}
        )
        assert via_alias["agent"] == agent
        both, _ = await s.ok(
            "memory_reflect", {"action": "add", "agent_id": agent, "agent": other, "text": "agent_id wins"}
        )
        assert both["agent"] == agent
        spaced, _ = await s.ok(
            "memory_reflect", {"action": "add", "agent_id": f" {agent} ", "text": "spaced"}
        )
        assert spaced["agent"] == f" {agent} "

        refusals = [
            ({"action": "add", "text": "x"}, "agent_id is required"),
            ({"action": "add", "agent_id": "", "text": "x"}, "agent_id must be a non-blank string"),
            (
                {"action": "add", "agent_id": "  ", "agent": other, "text": "x"},
                "agent_id must be a non-blank string",
            ),
            (
                {"action": "add", "agent_id": None, "agent": other, "text": "x"},
                "agent_id must be a non-blank string",
            ),
            (
                {"action": "add", "agent_id": 7, "agent": other, "text": "x"},
                "agent_id must be a non-blank string",
            ),
            (
                {"action": "add", "agent_id": other, "agent": "", "text": "x"},
                "agent must be a non-blank string",
            ),
            (
                {"action": "add", "agent_id": other, "agent": None, "text": "x"},
                "agent must be a non-blank string",
            ),
            (
                {"action": "add", "agent_id": other, "agent": ["a"], "text": "x"},
                "agent must be a non-blank string",
            ),
            (
                {"action": "delete", "agent_id": other, "text": "x"},
                "invalid arguments for memory_reflect: action:",
            ),
            (
                {"action": "forget", "agent_id": other, "confidence": "verified", "text": "x"},
                'confidence is not supported by memory_reflect action "forget"',
            ),
            (
                {"action": "add", "agent_id": other, "confidence": "sure", "text": "x"},
                "invalid arguments for memory_reflect: confidence:",
            ),
            (
                {"action": "update", "agent_id": other, "text": "x"},
                "target is required for memory_reflect action",
            ),
        ]
        for arguments, expected in refusals:
            text = await s.error("memory_reflect", arguments)
            assert text.startswith(expected), (arguments, text)
        # nothing reached the store for the other namespace
        found, _ = await s.ok("memory_search", {"agent_id": other, "query": "x agent wins alias identity"})
        assert found["count"] == 0
        mine, _ = await s.ok("memory_search", {"agent_id": agent, "query": "alias identity agent_id wins"})
        assert {"alias identity", "agent_id wins"} <= {f["text"] for f in mine["facts"]}

    run(connect, body)
