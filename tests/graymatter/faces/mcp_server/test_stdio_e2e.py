"""End to end over a real ``graymatter mcp serve`` stdio subprocess.

* The six cases of the checkpoint_resume decision record's table, in one session, with the SDK client.
* The negative control: a transparent recorder changes only ``found`` false -> true and the SDK client's
  output-schema validation rejects the result (the same recorder without the flip passes).
* Raw JSON-RPC bytes: ``"found":false`` is on the wire, errors carry no ``structuredContent`` key, the
  initialize answer carries the static instructions, late cancellations are ignored, pipelined calls run
  concurrently and each is answered once; a large nested state resumes as structuredContent that equals
  the saved state, validates against the published outputSchema and is, as compact JSON, the text.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from jsonschema import Draft202012Validator

from graymatter.faces.mcp_server.specs import INSTRUCTIONS, TOOL_NAMES
from support.processes import graymatter_command, server_env

pytestmark = pytest.mark.timeout(180)

RECORDER = Path(__file__).resolve().parents[3] / "gate" / "stdio_recorder.py"
SERVER_ENV = server_env()  # the Ollama probe aims at a closed port: no embedding provider is reachable


def stdio_params(command: list[str]) -> Any:
    from mcp.client.stdio import StdioServerParameters

    return StdioServerParameters(command=command[0], args=command[1:], env=SERVER_ENV)


async def _call(client: Any, name: str, arguments: dict[str, Any]) -> Any:
    return await client.call_tool(name, arguments)


def test_seed_table_in_one_session(store_dir: Path) -> None:
    from mcp import Client

    agent, missing = "seed-agent", "seed-missing"
    state = {"synthetic": True, "step": 7, "todo": ["resume", "verify"]}
    missing_text = f'no checkpoint found for agent "{missing}": no checkpoints for agent "{missing}"'

    async def main() -> None:
        async with Client(
            stdio_params(graymatter_command(store_dir, "mcp", "serve")), mode="legacy"
        ) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert sorted(tools) == sorted(TOOL_NAMES)
            validator = Draft202012Validator(tools["checkpoint_resume"].output_schema)

            # 1. missing checkpoint, on_missing "empty": success, found false
            r1 = await _call(client, "checkpoint_resume", {"agent_id": agent, "on_missing": "empty"})
            assert not r1.is_error and r1.structured_content == {"found": False, "agent_id": agent}
            assert r1.content[0].text == f'{{"found":false,"agent_id":"{agent}"}}'
            validator.validate(r1.structured_content)
            # 2. save a synthetic checkpoint
            r2 = await _call(client, "checkpoint_save", {"agent_id": agent, "state": json.dumps(state)})
            assert not r2.is_error
            saved = r2.structured_content
            # 3. resume it with on_missing "empty": the saved id, creation time and exact state
            r3 = await _call(client, "checkpoint_resume", {"agent_id": agent, "on_missing": "empty"})
            expected = {"id": saved["checkpoint_id"], "created_at": saved["created_at"], "state": state}
            assert not r3.is_error and r3.structured_content == expected
            validator.validate(r3.structured_content)
            # 4. missing checkpoint, parameter omitted: text-only error
            r4 = await _call(client, "checkpoint_resume", {"agent_id": missing})
            assert r4.is_error and r4.structured_content is None and r4.content[0].text == missing_text
            # 5. missing checkpoint, explicit "error": the same error
            r5 = await _call(client, "checkpoint_resume", {"agent_id": missing, "on_missing": "error"})
            assert r5.model_dump() == r4.model_dump()
            # 6. resume the saved checkpoint, parameter omitted: the same payload
            r6 = await _call(client, "checkpoint_resume", {"agent_id": agent})
            assert not r6.is_error and r6.structured_content == expected
            assert r6.content[0].text == r3.content[0].text

    anyio.run(main)


def _recorded(store_dir: Path, log: Path, *, flip: bool) -> list[str]:
    recorder = [sys.executable, str(RECORDER), "--log", str(log), *(["--flip-found"] if flip else []), "--"]
    return recorder + graymatter_command(store_dir, "mcp", "serve")


def test_negative_control_flipped_found_is_rejected_by_the_client(store_dir: Path, tmp_path: Path) -> None:
    from mcp import Client

    arguments = {"agent_id": "nobody", "on_missing": "empty"}

    async def main() -> None:
        # Control: the recorder is transparent without the flip.
        async with Client(stdio_params(_recorded(store_dir, tmp_path / "valid.jsonl", flip=False))) as client:
            result = await _call(client, "checkpoint_resume", arguments)
            assert result.structured_content == {"found": False, "agent_id": "nobody"}
        # Negative control: only `found` changes, and the client's validation rejects the result.
        async with Client(
            stdio_params(_recorded(store_dir, tmp_path / "invalid.jsonl", flip=True))
        ) as client:
            with pytest.raises(
                RuntimeError, match="Invalid structured content returned by tool checkpoint_resume"
            ):
                await _call(client, "checkpoint_resume", arguments)

    anyio.run(main)
    altered = [json.loads(line) for line in (tmp_path / "invalid.jsonl").read_text().splitlines()]
    flipped = [entry for entry in altered if entry["altered"]]
    assert len(flipped) == 1
    assert flipped[0]["msg"]["result"]["structuredContent"] == {"found": False, "agent_id": "nobody"}


class RawStdio:
    """Line-delimited JSON-RPC over a real server subprocess, keeping every raw line the server wrote."""

    def __init__(self, store_dir: Path) -> None:
        self.process = subprocess.Popen(
            graymatter_command(store_dir, "mcp", "serve"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=SERVER_ENV,
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in iter(self.process.stdout.readline, b""):
            self.lines.put(line)

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write((json.dumps({"jsonrpc": "2.0", **message}) + "\n").encode())
        self.process.stdin.flush()

    def receive(self, timeout: float = 30) -> tuple[bytes, dict[str, Any]]:
        raw = self.lines.get(timeout=timeout)
        return raw, json.loads(raw)

    def initialize(self) -> dict[str, Any]:
        self.send(
            {
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"roots": {}},
                    "clientInfo": {"name": "raw-test", "version": "1.0"},
                },
            }
        )
        _, answer = self.receive()
        self.send({"method": "notifications/initialized"})
        return answer

    def call(self, request_id: int, name: str, arguments: dict[str, Any]) -> None:
        self.send(
            {"id": request_id, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
        )

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@pytest.fixture
def raw(store_dir: Path) -> Any:
    session = RawStdio(store_dir)
    try:
        yield session
    finally:
        session.close()


def test_initialize_carries_static_instructions(raw: RawStdio) -> None:
    answer = raw.initialize()["result"]
    assert answer["protocolVersion"] == "2025-11-25"
    assert answer["serverInfo"]["name"] == "graymatter"
    assert answer["instructions"] == INSTRUCTIONS


def test_wire_bytes_of_absence_and_errors(raw: RawStdio) -> None:
    raw.initialize()
    raw.call(1, "checkpoint_resume", {"agent_id": "wire", "on_missing": "empty"})
    line, message = raw.receive()
    assert b'"found":false' in line.replace(b" ", b"")
    assert message["result"]["structuredContent"] == {"found": False, "agent_id": "wire"}
    assert message["result"].get("isError") in (None, False)
    failing_calls = [
        ("checkpoint_resume", {"agent_id": "wire"}),
        ("checkpoint_resume", {"agent_id": "wire", "on_missing": "error"}),
        ("checkpoint_resume", {"agent_id": "wire", "on_missing": ""}),
        ("checkpoint_resume", {"agent_id": "wire", "on_missing": None}),
        ("checkpoint_resume", {"agent_id": ""}),
        ("memory_search", {"agent_id": " ", "query": "q"}),
        ("memory_search_batch", {"agent_id": "wire", "queries": ["", " "]}),
        ("memory_add", {"agent_id": "wire", "text": ""}),
        ("memory_alias", {"agent_id": "wire", "term": "t", "equivalents": "not a list"}),
        ("checkpoint_save", {"agent_id": "wire", "state": "[]"}),
        ("memory_reflect", {"action": "add", "text": "no identity"}),
        ("memory_reflect", {"action": "pin", "agent_id": "wire", "target": "no such fact"}),
    ]
    for request_id, (name, arguments) in enumerate(failing_calls, start=2):
        raw.call(request_id, name, arguments)
        line, message = raw.receive()
        assert message["id"] == request_id
        assert b"structuredContent" not in line, name
        assert message["result"]["isError"] is True
        assert [block["type"] for block in message["result"]["content"]] == ["text"]
    raw.call(99, "no_such_tool", {})  # not a tool's failure: a protocol error (MCP "Error Handling")
    _, message = raw.receive()
    assert message["error"] == {
        "code": -32602,
        "message": "Unknown tool: no_such_tool",
        "data": {"name": "no_such_tool"},
    }


def test_late_cancellation_for_a_finished_call_is_ignored(raw: RawStdio) -> None:
    raw.initialize()
    raw.call(1, "memory_add", {"agent_id": "cancel", "text": "Cancellation arrives after the answer."})
    _, first = raw.receive()
    assert first["id"] == 1 and first["result"]["structuredContent"]["stored"] is True
    # What OpenCode sends after every answered call:
    raw.send(
        {
            "method": "notifications/cancelled",
            "params": {"requestId": 1, "reason": "AbortError: The operation was aborted."},
        }
    )
    raw.call(2, "memory_search", {"agent_id": "cancel", "query": "cancellation answer"})
    _, second = raw.receive()
    assert second["id"] == 2
    assert second["result"]["structuredContent"]["count"] == 1


def test_pipelined_calls_are_each_answered_once(raw: RawStdio) -> None:
    raw.initialize()
    total = 30
    for i in range(total):
        if i % 3 == 2:
            raw.call(100 + i, "memory_search", {"agent_id": "pipe", "query": "pipelined fact"})
        else:
            raw.call(100 + i, "memory_add", {"agent_id": "pipe", "text": f"Pipelined fact {i}."})
    answers: dict[int, dict[str, Any]] = {}
    for _ in range(total):
        _, message = raw.receive()
        assert message["id"] not in answers
        answers[message["id"]] = message
    assert sorted(answers) == list(range(100, 100 + total))
    assert all(not a["result"].get("isError") for a in answers.values())
    raw.call(999, "memory_search", {"agent_id": "pipe", "query": "pipelined fact", "top_k": 50})
    _, final = raw.receive()
    assert final["result"]["structuredContent"]["count"] == 20


def test_store_flags_after_serve_select_the_store(tmp_path: Path) -> None:
    from mcp import Client

    store = tmp_path / "after-serve"
    command = [sys.executable, "-m", "graymatter", "mcp", "serve", "--no-daemon", "--dir", str(store)]

    async def main() -> None:
        async with Client(stdio_params(command), mode="legacy") as client:
            result = await client.call_tool(
                "memory_add", {"agent_id": "flags", "text": "Flags after serve work."}
            )
            assert not result.is_error

    anyio.run(main)
    from graymatter.engine.memory import Memory

    with Memory(store) as memory:
        assert [fact.text for fact in memory.list("flags")] == ["Flags after serve work."]


def _large_state() -> dict[str, Any]:
    turns = [
        {
            "turn": i,
            "content": f'Schritt {i}: "quoted" \\ back\nslash ü 漢字 🙂',
            "ratio": i / 7,
            "done": i % 2 == 0,
            "note": None,
            "calls": [{"name": "read", "args": {"path": f"src/m{i}.py", "line": [i, i + 1]}}],
        }
        for i in range(3000)
    ]
    return {"task": "wire", "progress": {"done": 1.5e300, "todo": -0.0}, "turns": turns}


def test_large_state_resumes_as_validating_structured_content_and_equal_text(raw: RawStdio) -> None:
    state = _large_state()
    raw.initialize()
    raw.send({"id": 1, "method": "tools/list"})
    _, listed = raw.receive()
    schemas = {tool["name"]: tool["outputSchema"] for tool in listed["result"]["tools"]}
    raw.call(2, "checkpoint_save", {"agent_id": "wire", "state": json.dumps(state)})
    _, saved = raw.receive()
    checkpoint_id = saved["result"]["structuredContent"]["checkpoint_id"]
    raw.call(3, "checkpoint_resume", {"agent_id": "wire"})
    line, answer = raw.receive()
    result = answer["result"]
    assert sorted(result) == ["content", "isError", "structuredContent"]
    assert result["isError"] is False
    structured = result["structuredContent"]
    assert structured["id"] == checkpoint_id and structured["state"] == state
    Draft202012Validator(schemas["checkpoint_resume"]).validate(structured)
    assert [block["type"] for block in result["content"]] == ["text"]
    assert json.loads(result["content"][0]["text"]) == structured
    assert line.endswith(b"\n") and line.count(b"\n") == 1  # one JSON line, whatever the content holds
