"""Restored histories through every provider adapter's wire format (OpenAI-compatible Chat
Completions, Anthropic Messages, Responses), streamed and not, via the real CLI and the local stubs.

Each case makes a real checkpoint (two tool turns: two calls in the first, an id repeated in the
second, provider-native thinking/reasoning state where the wire has it), resumes it, and checks the
first resumed request body: complete restored context with every call paired to its result, the
provider state round-tripped, the continuation notice last, and no historical tool run again. The
stubs also reject any request a real provider would reject (pairing, alternation, id pattern)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from support.provider_stubs import ProviderStub
from support.resume_checkpoints import (
    SECRET,
    bash_call,
    cli_env,
    executed_markers,
    submit_call,
)
from support.tinyagent_cli import run_cli
from tinyagent.prompts import CONTINUATION_NOTICE

MODELS = {"openai": "gpt-4.1-mini", "anthropic": "claude-sonnet-4-5", "codex": "gpt-5-codex"}
WIRES = {"openai": "chat", "anthropic": "anthropic", "codex": "responses"}


def native_state(provider: str, n: int) -> dict[str, Any]:
    if provider == "anthropic":
        return {"thinking": {"thinking": f"plan {n}", "signature": f"sig-{n}-abc"}}
    if provider == "codex":
        return {"reasoning": {"summary": f"plan {n}", "encrypted_content": f"enc-{n}-xyz"}}
    return {}


def pairs(wire: str, body: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(call ids in order, result ids in order) as sent on the wire."""
    calls: list[str] = []
    results: list[str] = []
    if wire == "chat":
        for message in body["messages"]:
            calls += [call["id"] for call in message.get("tool_calls") or []]
            if message["role"] == "tool":
                results.append(message["tool_call_id"])
    elif wire == "anthropic":
        for message in body["messages"]:
            content = message["content"]
            for block in content if isinstance(content, list) else []:
                if block.get("type") == "tool_use":
                    calls.append(block["id"])
                elif block.get("type") == "tool_result":
                    results.append(block["tool_use_id"])
    else:
        for item in body["input"]:
            if item.get("type") == "function_call":
                calls.append(item["call_id"])
            elif item.get("type") == "function_call_output":
                results.append(item["call_id"])
    return calls, results


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("provider", ["openai", "anthropic", "codex"])
def test_restored_history_through_provider(tmp_path: Path, provider: str, stream: bool) -> None:
    project = tmp_path / "project"
    project.mkdir()
    env = cli_env(tmp_path)
    stream_flag = "--stream" if stream else "--no-stream"
    wire = WIRES[provider]
    with ProviderStub(
        [
            {
                "tool_calls": [bash_call("fresh-1", "call_a"), bash_call("fresh-2", "call_b")],
                **native_state(provider, 1),
            },
            {"tool_calls": [bash_call("fresh-3", "call_a")], **native_state(provider, 2)},
        ]
    ) as stub:
        base_url = stub.base_url(provider)
        fresh = run_cli([
            "-t", f"write markers {SECRET}", "--provider", provider, "-m", MODELS[provider],
            "--base-url", base_url, "--cwd", project, "--step-limit", "2", stream_flag, "-o", "run.json",
        ], env=env, cwd=tmp_path)  # fmt: skip
        assert fresh.returncode == 1, fresh.stderr
        source = tmp_path / "run.json"
        source_bytes = source.read_bytes()
        saved = json.loads(source_bytes)
        assert saved["exit_status"] == "StepLimit"
        assert [c["id"] for m in saved["messages"] for c in m["tool_calls"]] == ["call_a", "call_b", "call_a"]

        stub.requests.clear()
        stub.add(
            {"tool_calls": [bash_call("resumed-1", "call_a")]},
            {"tool_calls": [submit_call("resumed and done")]},
        )
        resumed = run_cli([
            "--resume", "run.json", "--cwd", project, "--base-url", base_url, "--step-limit", "4",
            stream_flag, "-o", "continued.json",
        ], env=env, cwd=tmp_path)  # fmt: skip
        assert resumed.returncode == 0, resumed.stderr
        assert resumed.stdout == "resumed and done\n"
        assert source.read_bytes() == source_bytes

        assert len(stub.requests) == 2
        first = stub.requests[0]
        assert first.wire == wire
        assert first.stream is stream
        body = first.body
        assert body["model"] == MODELS[provider]
        calls, results = pairs(wire, body)
        assert len(calls) == 3 and results == calls  # every historical call answered, in order
        text = json.dumps(body)
        for marker in ("fresh-1", "fresh-2", "fresh-3"):
            assert marker in text  # the recorded observations are restored
        assert CONTINUATION_NOTICE in text
        assert text.rindex(CONTINUATION_NOTICE) > text.rindex("fresh-3")  # the notice comes last
        if provider == "anthropic":
            assert "sig-1-abc" in text and "sig-2-abc" in text
        if provider == "codex":
            assert "enc-1-xyz" in text and "enc-2-xyz" in text

        second_calls, second_results = pairs(wire, stub.requests[1].body)
        assert len(second_calls) == 4 and second_results == second_calls

    assert executed_markers(project) == ["fresh-1", "fresh-2", "fresh-3", "resumed-1"]
    final = json.loads((tmp_path / "continued.json").read_bytes())
    assert final["exit_status"] == "Submitted"
    assert final["totals"]["steps"] == 4
    assert final["provider"] == provider
