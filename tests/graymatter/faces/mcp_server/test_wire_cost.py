"""The wire-cost measures keep the contract: one serialisation, the same bytes the SDK's own path would send.

* ``wire_result`` (a success handed to the SDK as a mapping, its structuredContent as it is) gives, after
  the SDK's per-version validation and dump, exactly what the SDK makes of the model, for any JSON state
  and every protocol version the SDK speaks; failures are left to the SDK.
* structuredContent held back while the SDK shapes the result and put back by the middleware: over a real
  ``mcp serve`` for each handshake protocol version, the answer is what the SDK makes of the model; a key
  the SDK dropped is not put back; outside the middleware nothing is held back.
  (A large state over a real ``mcp serve`` subprocess: ``test_stdio_e2e.py``.)
* Answer lines written from the event loop keep the SDK's stdout claim: stray fd-1 output goes to stderr.
* ``tune_collector`` freezes what lives after start-up and raises the collection thresholds.
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graymatter.faces.mcp_server.server import _success
from graymatter.faces.mcp_server.stdio import COLLECTOR_THRESHOLDS, tune_collector
from graymatter.faces.mcp_server.wire import (
    HELD,
    RawJSON,
    StructuredContentPassThrough,
    hold_back,
    wire_result,
)

pytestmark = pytest.mark.timeout(180)

JSON_SCALARS = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=20)
JSON_VALUES = st.recursive(
    JSON_SCALARS | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5),
    max_leaves=30,
)
VERSIONS = ("2025-06-18", "2025-11-25", "2026-07-28")


def _sdk_wire(result: Any, version: str) -> dict[str, Any]:
    from mcp_types import methods

    dumped = (
        result
        if isinstance(result, dict)
        else result.model_dump(by_alias=True, mode="json", exclude_none=True)
    )
    return methods.serialize_server_result("tools/call", version, dumped)


@settings(max_examples=60, deadline=None)
@given(state=st.dictionaries(st.text(max_size=8), JSON_VALUES, max_size=6))
def test_wire_result_is_what_the_sdk_makes_of_the_model(state: dict[str, Any]) -> None:
    from graymatter.faces.mcp_server.schemas import CheckpointResumeResult

    result = _success(CheckpointResumeResult(id="c1", created_at="2026-12-01T00:00:00Z", state=state))
    wire = wire_result(result)
    assert isinstance(wire, dict)
    assert wire["structuredContent"] is result.structured_content  # handed over, not walked
    for version in VERSIONS:
        assert _sdk_wire(wire, version) == _sdk_wire(result, version)
    assert json.loads(wire["content"][0]["text"]) == wire["structuredContent"]


def test_failures_are_left_to_the_sdk() -> None:
    from graymatter.faces.mcp_server.server import _failure

    failure = _failure("no checkpoint found")
    assert wire_result(failure) is failure
    assert "structuredContent" not in _sdk_wire(failure, "2025-11-25")


def test_outside_the_middleware_nothing_is_held_back_and_stored_json_is_decoded() -> None:
    wire = {"content": [], "structuredContent": {"a": 1, "state": RawJSON('{"b":[1,"ü"]}')}}
    assert hold_back(wire) == {"content": [], "structuredContent": {"a": 1, "state": {"b": [1, "ü"]}}}
    plain = {"content": [], "structuredContent": {"a": 1}}
    assert hold_back(plain)["structuredContent"] is plain["structuredContent"]
    assert HELD.get() is None


def test_the_middleware_puts_back_what_the_handler_held_back_and_leaves_a_dropped_key_dropped() -> None:
    structured = {"state": {"big": list(range(5))}}

    def shaped(drop: bool) -> Any:
        async def call_next(ctx: Any) -> dict[str, Any]:
            wire = hold_back({"content": [], "structuredContent": structured})
            assert wire["structuredContent"] == {}
            return {"content": []} if drop else dict(wire)

        return call_next

    class Ctx:
        method = "tools/call"

    async def main() -> None:
        kept = await StructuredContentPassThrough()(Ctx(), shaped(drop=False))
        assert kept["structuredContent"] is structured
        dropped = await StructuredContentPassThrough()(Ctx(), shaped(drop=True))
        assert dropped == {"content": []}

    import anyio

    anyio.run(main)
    assert HELD.get() is None


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", *VERSIONS[:2]])
def test_a_resume_over_stdio_is_what_the_sdk_makes_of_the_model(version: str, tmp_path: Any) -> None:
    from graymatter.engine.memory import Memory
    from graymatter.faces.mcp_server.results import resumed
    from graymatter.faces.mcp_server.schemas import CheckpointResumeResult
    from support.processes import graymatter_command, server_env

    state = {"turns": [{"n": i, "text": f'Schritt {i} ü "q"\n'} for i in range(50)], "ratio": 1.5e300}
    with Memory(tmp_path) as memory:
        memory.checkpoint_save("wire", state)
        stored = resumed(memory.checkpoint_latest_json("wire"))
    model = CheckpointResumeResult(id=stored.id, created_at=stored.created_at, state=state)
    expected = _sdk_wire(_success(model), version)
    lines = [
        {
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": version,
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        },
        {"method": "notifications/initialized"},
        {
            "id": 1,
            "method": "tools/call",
            "params": {"name": "checkpoint_resume", "arguments": {"agent_id": "wire"}},
        },
    ]
    wire_in = "".join(json.dumps({"jsonrpc": "2.0", **line}) + "\n" for line in lines).encode()
    done = subprocess.run(
        graymatter_command(tmp_path, "mcp", "serve"),
        input=wire_in,
        capture_output=True,
        env=server_env(),
        timeout=120,
    )
    answers = {message["id"]: message for message in map(json.loads, done.stdout.splitlines())}
    assert answers[0]["result"]["protocolVersion"] == version
    result = answers[1]["result"]
    text = result["content"][0].pop("text")
    assert json.loads(text) == json.loads(expected["content"][0].pop("text")) == result["structuredContent"]
    assert (
        result == expected
    )  # the same answer; its text is the state as stored (``1.5e+300``), not re-dumped
    assert result["structuredContent"]["state"] == state


def test_tune_collector_freezes_start_up_objects_and_raises_thresholds() -> None:
    thresholds = gc.get_threshold()
    try:
        tune_collector()
        assert gc.get_threshold() == COLLECTOR_THRESHOLDS
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)


CLAIM_SCRIPT = """
import os, anyio
from graymatter.faces.mcp_server.stdio import _claim_stdout
stdout, release = _claim_stdout()
os.write(1, b"stray\\n")  # what a handler or a child would write to fd 1 while serving
async def main():
    await stdout.write('{"jsonrpc":"2.0","id":1,"result":{}}\\n')
    await stdout.flush()
anyio.run(main)
stdout.close()
release()
os.write(1, b"after\\n")
"""


def test_inline_stdout_sends_the_bytes_of_the_sdk_dump_and_refuses_after_close(tmp_path: Any) -> None:
    import anyio
    from mcp.shared.message import SessionMessage
    from mcp_types import JSONRPCResponse

    from graymatter.faces.mcp_server.stdio import InlineStdout

    message = JSONRPCResponse(jsonrpc="2.0", id=7, result={"text": 'ü 漢字 "q" \\ \n', "n": 1.5e300})
    with open(tmp_path / "wire", "wb") as buffer:
        stdout = InlineStdout(buffer)

        async def main() -> None:
            await stdout.send(SessionMessage(message=message))
            await stdout.aclose()
            with pytest.raises(anyio.ClosedResourceError):
                await stdout.send(SessionMessage(message=message))

        anyio.run(main)
    sdk_line = message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
    assert (tmp_path / "wire").read_bytes() == sdk_line.encode()


def test_inline_stdout_keeps_the_sdk_claim_stray_output_goes_to_stderr() -> None:
    from support.processes import server_env

    done = subprocess.run(
        [sys.executable, "-c", CLAIM_SCRIPT], capture_output=True, env=server_env(), timeout=60, check=True
    )
    assert done.stdout == b'{"jsonrpc":"2.0","id":1,"result":{}}\nafter\n'
    assert done.stderr == b"stray\n"


@settings(max_examples=80, deadline=None)
@given(state=st.dictionaries(st.text(max_size=8), JSON_VALUES, max_size=6), other=st.text(max_size=30))
def test_a_spliced_line_is_the_line_the_sdk_would_write(state: dict[str, Any], other: str) -> None:
    from pydantic_core import to_json

    from graymatter.faces.mcp_server.wire import Splices, json_text

    stored = json.dumps(state, ensure_ascii=False, separators=(",", ":"))
    text = json_text({"id": other, "state": RawJSON(stored)})
    assert json.loads(text) == {"id": other, "state": state}
    splices = Splices()
    shaped = {"content": [{"type": "text", "text": splices.fragment(to_json(text))}]}
    shaped["structuredContent"] = splices.fragment(text.encode())  # type: ignore[assignment]
    line = _spliced(splices, to_json({"id": 1, "result": shaped, "note": other}))
    direct = {
        "id": 1,
        "result": {"content": [{"type": "text", "text": text}], "structuredContent": json.loads(text)},
    }
    assert json.loads(line) == {**direct, "note": other}
    assert _spliced(splices, line) == line  # each fragment is used once


def test_splices_leave_lookalike_text_alone_and_keep_few_pending() -> None:
    from pydantic_core import to_json

    from graymatter.faces.mcp_server.wire import MAX_PENDING_SPLICES, Splices

    splices = Splices()
    lookalike = "\x00graymatter-splice:0000000000000000:1"
    marker = splices.fragment(b'{"x":1}')
    assert marker != lookalike
    line = to_json({"a": lookalike, "b": marker})
    assert json.loads(_spliced(splices, line)) == {"a": lookalike, "b": {"x": 1}}
    markers = [splices.fragment(b"1") for _ in range(MAX_PENDING_SPLICES + 3)]
    kept = json.loads(_spliced(splices, to_json(markers)))
    assert kept[:3] == markers[:3] and kept[3:] == [1] * MAX_PENDING_SPLICES


def test_a_damaged_stored_state_is_a_tool_error_over_stdio_never_a_broken_line(tmp_path: Any) -> None:
    import sqlite3

    from graymatter.engine.memory import Memory
    from support.processes import graymatter_command, server_env

    with Memory(tmp_path) as memory:
        saved = memory.checkpoint_save("wire", {"ok": 1})
    with sqlite3.connect(tmp_path / "graymatter.db") as db:
        db.execute("UPDATE checkpoints SET state = ? WHERE id = ?", ('{"ok": 1', saved.id))
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    call = {"name": "checkpoint_resume", "arguments": {"agent_id": "wire"}}
    lines = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call},
    ]
    done = subprocess.run(
        graymatter_command(tmp_path, "mcp", "serve"),
        input="".join(json.dumps(line) + "\n" for line in lines).encode(),
        capture_output=True,
        env=server_env(),
        timeout=120,
    )
    answers = {message["id"]: message for message in map(json.loads, done.stdout.splitlines())}
    assert answers[1]["result"] == {
        "content": [
            {
                "type": "text",
                "text": f"checkpoint resume error: checkpoint {saved.id} of agent 'wire' cannot be decoded"
                " (ValueError)",
            }
        ],
        "isError": True,
    }


def _spliced(splices: Any, line: bytes) -> bytes:
    """The line as InlineStdout writes it: its pieces one after the other."""
    return b"".join(splices.pieces(line))
