"""Real failures stay prose-only errors in both on_missing modes; only genuine absence selects "empty".

The store is a real SQLite file damaged with sqlite3 directly: a checkpoint row that no longer decodes, a
missing checkpoints table (an uninitialised schema), and a closed store.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from graymatter.engine.memory import Memory
from graymatter.faces.mcp_server.server import build_server

MODES: list[dict[str, Any]] = [{}, {"on_missing": "error"}, {"on_missing": "empty"}]


def resume_results(memory: Memory, agent: str) -> list[Any]:
    async def main() -> list[Any]:
        async with Client(build_server(memory), mode="legacy") as client:
            return [await client.call_tool("checkpoint_resume", {"agent_id": agent, **m}) for m in MODES]

    return anyio.run(main)


def assert_prose_errors(results: list[Any], prefix: str) -> None:
    for mode, result in zip(MODES, results, strict=True):
        assert result.is_error, mode
        assert result.structured_content is None, mode
        text = result.content[0].text
        assert text.startswith(prefix), (mode, text)
        assert "found" not in text and "no checkpoint found" not in text
    assert len({r.content[0].text for r in results}) == 1, "every mode reports the same failure"


def damage(store_dir: Path, statement: str) -> None:
    with sqlite3.connect(store_dir / "graymatter.db") as conn:
        conn.execute(statement)


@pytest.mark.parametrize(
    ("statement", "prefix"),
    [
        ("UPDATE checkpoints SET state = '{not json'", "checkpoint resume error: checkpoint "),
        ("UPDATE checkpoints SET created_at = 'yesterday-ish'", "checkpoint resume error: checkpoint "),
        ("DROP TABLE checkpoints", "checkpoint resume error: database "),
    ],
)
def test_corrupt_or_uninitialised_storage_is_never_absence(
    memory: Memory, store_dir: Path, statement: str, prefix: str
) -> None:
    memory.checkpoint_save("victim", {"step": 1})
    damage(store_dir, statement)
    assert_prose_errors(resume_results(memory, "victim"), prefix)


def test_closed_store_is_a_storage_error_in_both_modes(store_dir: Path) -> None:
    memory = Memory(store_dir)
    memory.close()
    assert_prose_errors(resume_results(memory, "anyone"), "checkpoint resume error: the store is closed")


def test_other_agents_absence_is_still_absence_next_to_corruption(memory: Memory, store_dir: Path) -> None:
    memory.checkpoint_save("victim", {"step": 1})
    damage(store_dir, "UPDATE checkpoints SET state = 'garbage'")
    empty = resume_results(memory, "bystander")[2]
    assert not empty.is_error and empty.structured_content == {"found": False, "agent_id": "bystander"}


@pytest.mark.parametrize(
    ("tool", "arguments", "call"),
    [
        ("memory_add", {"agent_id": "a", "text": "x"}, lambda m: m.list("a")),
        ("checkpoint_save", {"agent_id": "a", "state": "{}"}, lambda m: m.checkpoint_list("a")),
    ],
)
def test_storage_failure_on_writes_is_a_text_error(
    store_dir: Path, tool: str, arguments: dict[str, Any], call: Callable[[Memory], Any]
) -> None:
    memory = Memory(store_dir)
    memory.close()

    async def main() -> Any:
        async with Client(build_server(memory), mode="legacy") as client:
            return await client.call_tool(tool, arguments)

    result = anyio.run(main)
    assert result.is_error and result.structured_content is None
    assert result.content[0].text == f"{tool.replace('_', ' ')} error: the store is closed"
    with Memory(store_dir) as reopened:
        assert call(reopened) == []
