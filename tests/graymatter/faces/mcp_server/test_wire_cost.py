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
from graymatter.faces.mcp_server.wire import HELD, StructuredContentPassThrough, hold_back, wire_result

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


def test_outside_the_middleware_nothing_is_held_back() -> None:
    wire = {"content": [], "structuredContent": {"a": 1}}
    assert hold_back(wire) is wire
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
    from support.processes import graymatter_command, server_env

    state = {"turns": [{"n": i, "text": f'Schritt {i} ü "q"'} for i in range(50)], "ratio": 1.5e300}
    with Memory(tmp_path) as memory:
        memory.checkpoint_save("wire", state)
        expected = _sdk_wire(_success(resumed(memory.checkpoint_latest("wire"))), version)
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
    assert answers[1]["result"] == expected
    assert answers[1]["result"]["structuredContent"]["state"] == state


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
