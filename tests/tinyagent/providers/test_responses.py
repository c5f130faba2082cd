"""Responses API adapter (codex) against the stub: items, call_id pairing, reasoning round-trip, events."""

from __future__ import annotations

import json

import pytest

from tinyagent.providers.base import ProviderRequestError, ProviderServerError
from tinyagent.providers.http.retry import RetryPolicy
from tinyagent.providers.responses import is_reasoning_model, responses_usage
from tinyagent.types import Message, ToolCall, Usage


@pytest.mark.parametrize("stream", [False, True])
def test_full_history_is_translated_exactly(stub, make, history, tools, stream):
    stub.add({"text": "done"})
    make("codex", model="gpt-4.1").complete(history, tools, stream=stream)
    [request] = stub.requests
    assert request.path == "/v1/responses"
    assert request.headers["authorization"] == "Bearer sk-test-secret-key"
    body = request.body
    assert body["model"] == "gpt-4.1"
    assert body["stream"] is stream
    assert body["store"] is False
    assert "include" not in body  # not a reasoning model
    assert body["instructions"] == "You are a test agent."
    assert body["tools"] == [
        {
            "type": "function",
            "name": "bash",
            "description": tools[0].description,
            "parameters": tools[0].parameters,
        }
    ]
    assert body["input"] == [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "create hello.txt"}]},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "I will look first."}],
        },
        {"type": "function_call", "call_id": "call_a", "name": "bash", "arguments": '{"command": "ls"}'},
        {"type": "function_call", "call_id": "call_b", "name": "bash", "arguments": '{"command": "pwd"}'},
        {"type": "function_call_output", "call_id": "call_a", "output": "README.md"},
        {"type": "function_call_output", "call_id": "call_b", "output": "boom"},
        {
            "type": "function_call",
            "call_id": "call_a_2",
            "name": "bash",
            "arguments": '{"command": "echo hi > hello.txt"}',
        },
        {"type": "function_call_output", "call_id": "call_a_2", "output": ""},
    ]


@pytest.mark.parametrize("stream", [False, True])
def test_reply_with_reasoning_text_and_calls(stub, make, history, stream):
    stub.add(
        {
            "reasoning": {"summary": "plan", "encrypted_content": "gAAAA-enc"},
            "text": "On it.",
            "tool_calls": [
                {"name": "write_file", "arguments": {"path": "hello.txt", "content": "hi"}, "id": "call_x"},
                {"name": "bash", "arguments": {"command": "ls"}, "id": "call_y"},
            ],
            "usage": {"input": 70, "output": 9, "cache_read": 1024},
        }
    )
    pieces: list[str] = []
    completion = make("codex", model="gpt-5-codex").complete(
        history, [], stream=stream, on_text=pieces.append
    )
    assert stub.requests[0].body["include"] == ["reasoning.encrypted_content"]
    message = completion.message
    assert message.content == "On it."
    assert [(c.id, c.name, json.loads(c.arguments)) for c in message.tool_calls] == [
        ("call_x", "write_file", {"path": "hello.txt", "content": "hi"}),
        ("call_y", "bash", {"command": "ls"}),
    ]
    [item] = message.provider_state["responses"]["reasoning"]
    assert item["type"] == "reasoning" and item["encrypted_content"] == "gAAAA-enc"
    assert completion.finish_reason == "tool_calls"
    assert completion.usage == Usage(input_tokens=70, output_tokens=9, cache_read_tokens=1024)
    assert completion.response_id == "resp_stub1"
    assert "".join(pieces) == ("On it." if stream else "")


@pytest.mark.parametrize("stream", [False, True])
def test_reasoning_items_round_trip_before_their_calls(stub, make, stream):
    kept = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "enc-1"}
    sealed = {"type": "reasoning", "id": "rs_2", "summary": []}  # no content: unusable with store=false
    history = [
        Message(role="user", content="task"),
        Message(
            role="assistant",
            tool_calls=[ToolCall(id="c1", name="bash", arguments="{}")],
            provider_state={"responses": {"reasoning": [kept, sealed]}},
        ),
        Message(role="tool", tool_call_id="c1", content="ok"),
    ]
    stub.add({"text": "done"})
    make("codex", model="o4-mini").complete(history, [], stream=stream)
    items = stub.requests[0].body["input"]
    assert items[1] == kept
    assert [i["type"] for i in items] == ["message", "reasoning", "function_call", "function_call_output"]


@pytest.mark.parametrize("stream", [False, True])
def test_incomplete_status_maps_to_length(stub, make, history, stream):
    stub.add({"text": "partial", "finish": "length"})
    completion = make("codex").complete(history, [], stream=stream)
    assert completion.finish_reason == "length"
    assert completion.message.content == "partial"


def test_failed_response_is_an_error(stub, make, history):
    stub.add(
        {
            "fault": "status",
            "status": 200,
            "error": {"status": "failed", "output": [], "error": {"code": "server_error", "message": "boom"}},
        },
        {
            "fault": "status",
            "status": 200,
            "error": {"status": "failed", "output": [], "error": {"code": "invalid_prompt", "message": "no"}},
        },
    )
    provider = make("codex", retry=RetryPolicy(max_retries=0))
    with pytest.raises(ProviderServerError, match="boom"):
        provider.complete(history, [], stream=False)
    with pytest.raises(ProviderRequestError, match="no"):
        provider.complete(history, [], stream=False)


def test_orphan_output_is_refused_locally(stub, make):
    history = [
        Message(role="user", content="task"),
        Message(role="assistant", content="no calls here"),
        Message(role="tool", tool_call_id="c9", content="stray"),
    ]
    with pytest.raises(ProviderRequestError, match="'c9' has no matching call"):
        make("codex").complete(history, [], stream=True)
    assert stub.requests == []


def test_reasoning_model_detection_and_override():
    assert (
        is_reasoning_model("gpt-5-codex")
        and is_reasoning_model("o3")
        and is_reasoning_model("openai/o4-mini")
    )
    assert not is_reasoning_model("gpt-4.1") and not is_reasoning_model("test-model")


def test_usage_normalisation():
    raw = {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 60}, "output_tokens": 5}
    assert responses_usage(raw) == Usage(input_tokens=40, output_tokens=5, cache_read_tokens=60)
    assert responses_usage(None) == Usage()
