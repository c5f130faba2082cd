"""Anthropic Messages adapter against the stub: translation rules, thinking round-trip, streaming."""

from __future__ import annotations

import json

import pytest

from tinyagent.providers.anthropic import anthropic_usage
from tinyagent.providers.base import ProviderServerError
from tinyagent.providers.history import anthropic_safe_id
from tinyagent.types import Message, ToolCall, Usage

CACHE = {"type": "ephemeral"}


@pytest.mark.parametrize("stream", [False, True])
def test_full_history_is_translated_exactly(stub, make, history, tools, stream):
    stub.add({"text": "done"})
    make("anthropic").complete(history, tools, stream=stream)
    [request] = stub.requests
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == "sk-test-secret-key"
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in request.headers
    body = request.body
    assert body.get("stream", False) is stream
    assert body["max_tokens"] == 8192
    assert body["system"] == [{"type": "text", "text": "You are a test agent.", "cache_control": CACHE}]
    assert body["tools"] == [
        {"name": "bash", "description": tools[0].description, "input_schema": tools[0].parameters}
    ]
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "create hello.txt"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "I will look first."},
                {"type": "tool_use", "id": "call_a", "name": "bash", "input": {"command": "ls"}},
                {"type": "tool_use", "id": "call_b", "name": "bash", "input": {"command": "pwd"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "call_a", "content": "README.md"},
                {"type": "tool_result", "tool_use_id": "call_b", "content": "boom", "is_error": True},
            ],
        },
        {
            "role": "assistant",
            # the id reused from an earlier turn is made unique, identically for call and result
            "content": [
                {
                    "type": "tool_use",
                    "id": "call_a_2",
                    "name": "bash",
                    "input": {"command": "echo hi > hello.txt"},
                }
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "call_a_2", "cache_control": CACHE}],
        },
    ]


def test_tool_results_come_first_and_same_role_messages_merge(stub, make):
    stub.add({"text": "ok"})
    history = [
        Message(role="system", content="s1"),
        Message(role="system", content="s2"),
        Message(role="user", content="task"),
        Message(role="user", content="more detail"),
        Message(
            role="assistant", content="calling", tool_calls=[ToolCall(id="t1", name="bash", arguments="{}")]
        ),
        Message(role="tool", tool_call_id="t1", content="out"),
        Message(role="user", content="continuation notice"),
    ]
    make("anthropic", prompt_cache=False).complete(history, [], stream=False)
    body = stub.requests[0].body
    assert body["system"] == [{"type": "text", "text": "s1\n\ns2"}]
    assert body["messages"] == [
        {
            "role": "user",
            "content": [{"type": "text", "text": "task"}, {"type": "text", "text": "more detail"}],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "calling"},
                {"type": "tool_use", "id": "t1", "name": "bash", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "out"},
                {"type": "text", "text": "continuation notice"},
            ],
        },
    ]


def test_ids_invalid_for_anthropic_are_sanitised_symmetrically(stub, make):
    stub.add({"text": "ok"})
    odd = ["functions.Bash:0", "call:abc.def", "call_abc_def"]
    history = [
        Message(role="user", content="task"),
        Message(role="assistant", tool_calls=[ToolCall(id=i, name="bash", arguments="{}") for i in odd]),
        *[Message(role="tool", tool_call_id=i, content=f"r{n}") for n, i in enumerate(odd)],
    ]
    make("anthropic").complete(history, [], stream=False)
    messages = stub.requests[0].body["messages"]
    use_ids = [b["id"] for b in messages[1]["content"]]
    result_ids = [b["tool_use_id"] for b in messages[2]["content"]]
    assert use_ids == result_ids
    assert len(set(use_ids)) == 3
    assert use_ids[2] == "call_abc_def"
    assert use_ids[0] == anthropic_safe_id("functions.Bash:0")
    assert all(c.isalnum() or c in "_-" for i in use_ids for c in i)


def test_invalid_json_arguments_are_preserved_as_an_object(stub, make):
    stub.add({"text": "ok"})
    history = [
        Message(role="user", content="task"),
        Message(role="assistant", tool_calls=[ToolCall(id="t1", name="bash", arguments='{"command": ')]),
        Message(role="tool", tool_call_id="t1", content="invalid JSON arguments", is_error=True),
    ]
    make("anthropic").complete(history, [], stream=False)
    block = stub.requests[0].body["messages"][1]["content"][0]
    assert block["input"] == {"invalid_json_arguments": '{"command": '}


@pytest.mark.parametrize("stream", [False, True])
def test_reply_with_thinking_text_and_tool_calls(stub, make, history, stream):
    stub.add(
        {
            "thinking": {"thinking": "Let me think about it.", "signature": "c2lnbmF0dXJl"},
            "text": "Writing.",
            "tool_calls": [
                {"name": "write_file", "arguments": {"path": "hello.txt", "content": "hi"}},
                {"name": "submit", "arguments": {}},
            ],
            "usage": {"input": 40, "output": 15, "cache_read": 300, "cache_write": 60},
        }
    )
    pieces: list[str] = []
    completion = make("anthropic").complete(history, [], stream=stream, on_text=pieces.append)
    message = completion.message
    assert message.content == "Writing."
    assert [(c.id, c.name, json.loads(c.arguments)) for c in message.tool_calls] == [
        ("toolu_1_0", "write_file", {"path": "hello.txt", "content": "hi"}),
        ("toolu_1_1", "submit", {}),
    ]
    assert message.provider_state == {
        "anthropic": {
            "thinking": [
                {"type": "thinking", "thinking": "Let me think about it.", "signature": "c2lnbmF0dXJl"}
            ]
        }
    }
    assert completion.finish_reason == "tool_calls"
    assert completion.usage == Usage(
        input_tokens=40, output_tokens=15, cache_read_tokens=300, cache_write_tokens=60
    )
    assert "".join(pieces) == ("Writing." if stream else "")


@pytest.mark.parametrize("stream", [False, True])
def test_thinking_blocks_round_trip_unchanged_and_first(stub, make, stream):
    thinking = {"type": "thinking", "thinking": "deep thought", "signature": "sig=="}
    redacted = {"type": "redacted_thinking", "data": "opaque"}
    stub.add({"text": "next"})
    history = [
        Message(role="user", content="task"),
        Message(
            role="assistant",
            content="calling",
            tool_calls=[ToolCall(id="t1", name="bash", arguments='{"command": "ls"}')],
            provider_state={"anthropic": {"thinking": [thinking, redacted]}},
        ),
        Message(role="tool", tool_call_id="t1", content="x"),
    ]
    make("anthropic").complete(history, [], stream=stream)
    assistant = stub.requests[0].body["messages"][1]["content"]
    assert assistant[:2] == [thinking, redacted]
    assert [b["type"] for b in assistant[2:]] == ["text", "tool_use"]


def test_ping_events_are_ignored_and_comments_tolerated(stub, make, history):
    stub.add({"text": "fine", "crlf": True})
    assert make("anthropic").complete(history, [], stream=True).message.content == "fine"


def test_error_event_before_any_text_is_retried(stub, make, history, sleeps):
    stub.add({"text": "x", "fault": "stream_error", "fault_at": 2}, {"text": "recovered"})
    completion = make("anthropic").complete(history, [], stream=True, on_text=lambda _: None)
    assert completion.message.content == "recovered"
    assert len(stub.requests) == 2 and len(sleeps) == 1


def test_error_event_mid_stream_after_text_raises_overloaded(stub, make, history):
    stub.add({"text": "abcdefghi", "fault": "stream_error", "fault_at": 5}, {"text": "unused"})
    with pytest.raises(ProviderServerError, match="Overloaded"):
        make("anthropic").complete(history, [], stream=True, on_text=lambda _: None)
    assert len(stub.requests) == 1


@pytest.mark.parametrize("stream", [False, True])
def test_max_tokens_stop_reason(stub, make, history, stream):
    stub.add({"text": "cut", "finish": "length"})
    assert make("anthropic").complete(history, [], stream=stream).finish_reason == "length"


def test_thinking_budget_and_legacy_output_cap(stub, make, history):
    stub.add({"text": "a"}, {"text": "b"})
    make("anthropic", model="claude-3-haiku-20240307").complete(history, [], stream=False)
    make("anthropic", model="claude-sonnet-4-5", thinking_budget=10_000).complete(history, [], stream=False)
    assert stub.requests[0].body["max_tokens"] == 4096
    second = stub.requests[1].body
    assert second["thinking"] == {"type": "enabled", "budget_tokens": 10_000}
    assert second["max_tokens"] > 10_000


def test_base_url_with_v1_is_accepted(stub, sleeps):
    from tinyagent.providers import get_provider

    stub.add({"text": "ok"})
    provider = get_provider("anthropic", model="m", base_url=stub.url + "/v1", api_key="k", sleep=sleeps)
    provider.complete([Message(role="user", content="hi")], [], stream=False)
    assert stub.requests[0].path == "/v1/messages"
    provider.close()


def test_usage_normalisation():
    raw = {
        "input_tokens": 3,
        "output_tokens": 4,
        "cache_read_input_tokens": 5,
        "cache_creation_input_tokens": 6,
    }
    assert anthropic_usage(raw) == Usage(
        input_tokens=3, output_tokens=4, cache_read_tokens=5, cache_write_tokens=6
    )
    assert anthropic_usage({"input_tokens": None}) == Usage()
