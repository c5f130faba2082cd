"""Chat Completions adapter (openai, openrouter, ollama) against the stub: requests, replies, usage."""

from __future__ import annotations

import json

import pytest

from tinyagent.providers.base import ProviderConnectionError, ProviderRequestError
from tinyagent.providers.openai_chat import chat_usage
from tinyagent.types import Message, ToolCall, Usage

CHAT = ("openai", "openrouter", "ollama")
REPLY = {
    "text": "Creating it now.",
    "tool_calls": [
        {"name": "write_file", "arguments": {"path": "hello.txt", "content": "hi"}, "id": "call_w"},
        {"name": "bash", "arguments": {"command": "cat hello.txt"}, "id": "call_c"},
    ],
    "usage": {"input": 90, "output": 12, "cache_read": 30},
}


@pytest.mark.parametrize("name", CHAT)
@pytest.mark.parametrize("stream", [False, True])
def test_full_history_is_translated_exactly(stub, make, history, tools, name, stream):
    stub.add({"text": "done"})
    make(name).complete(history, tools, stream=stream)
    [request] = stub.requests
    assert request.path == "/v1/chat/completions"
    body = request.body
    assert body["model"] == "test-model"
    assert body["stream"] is stream
    assert ("stream_options" in body) is stream
    if stream:
        assert body["stream_options"] == {"include_usage": True}
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "bash",
                "description": tools[0].description,
                "parameters": tools[0].parameters,
            },
        }
    ]
    assert body["messages"] == [
        {"role": "system", "content": "You are a test agent."},
        {"role": "user", "content": "create hello.txt"},
        {
            "role": "assistant",
            "content": "I will look first.",
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "bash", "arguments": '{"command": "ls"}'},
                },
                {
                    "id": "call_b",
                    "type": "function",
                    "function": {"name": "bash", "arguments": '{"command": "pwd"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": "README.md"},
        {"role": "tool", "tool_call_id": "call_b", "content": "boom"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "bash", "arguments": '{"command": "echo hi > hello.txt"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": ""},
    ]


@pytest.mark.parametrize("name", CHAT)
@pytest.mark.parametrize("stream", [False, True])
def test_reply_with_text_and_multiple_tool_calls(stub, make, history, tools, name, stream):
    stub.add(REPLY)
    pieces: list[str] = []
    completion = make(name).complete(history, tools, stream=stream, on_text=pieces.append)
    message = completion.message
    assert message.role == "assistant"
    assert message.content == "Creating it now."
    assert [(c.id, c.name, json.loads(c.arguments)) for c in message.tool_calls] == [
        ("call_w", "write_file", {"path": "hello.txt", "content": "hi"}),
        ("call_c", "bash", {"command": "cat hello.txt"}),
    ]
    assert completion.finish_reason == "tool_calls"
    assert completion.usage == Usage(input_tokens=90, output_tokens=12, cache_read_tokens=30)
    assert completion.response_id == "chatcmpl-stub1"
    assert "".join(pieces) == ("Creating it now." if stream else "")


@pytest.mark.parametrize("split", [1, 2, 7])
def test_streamed_tool_call_fragments_are_merged_by_index(stub, make, history, split):
    arguments = {"path": "a b/c.txt", "content": 'x"y\\z\n' * 5}
    calls = [
        {"name": "write_file", "arguments": arguments},
        {"name": "bash", "arguments": {"command": "true"}},
    ]
    stub.add({"tool_calls": calls, "split": split})
    completion = make("openai").complete(history, [], stream=True)
    assert [json.loads(c.arguments) for c in completion.message.tool_calls] == [
        arguments,
        {"command": "true"},
    ]
    assert [c.id for c in completion.message.tool_calls] == ["call_1_0", "call_1_1"]
    assert completion.message.content is None


@pytest.mark.parametrize("mode", ["empty", "null", "absent"])
def test_usage_only_final_chunk_in_every_shape(stub, make, history, mode):
    stub.add({"text": "ok", "usage": {"input": 7, "output": 3, "cache_read": 2}, "usage_chunk": mode})
    completion = make("openai").complete(history, [], stream=True)
    assert completion.usage == Usage(input_tokens=7, output_tokens=3, cache_read_tokens=2)


def test_stream_without_usage_chunk_gives_zero_usage(stub, make, history):
    stub.add({"text": "ok", "usage_chunk": "none"})
    assert make("openai").complete(history, [], stream=True).usage == Usage()


@pytest.mark.parametrize("stream", [False, True])
def test_openrouter_reported_cost_and_cache_writes(stub, make, history, stream):
    stub.add(
        {
            "text": "ok",
            "usage": {"input": 100, "output": 20, "cache_read": 50, "cache_write": 25, "cost": 0.0042},
        }
    )
    completion = make("openrouter").complete(history, [], stream=stream)
    assert completion.usage == Usage(
        input_tokens=100, output_tokens=20, cache_read_tokens=50, cache_write_tokens=25, cost_usd=0.0042
    )
    assert stub.requests[0].headers["x-title"] == "tinyagent"


def test_chat_usage_normalisation_edge_cases():
    assert chat_usage(None) == Usage()
    assert chat_usage({"prompt_tokens": 10, "completion_tokens": 2}) == Usage(
        input_tokens=10, output_tokens=2
    )
    # cached is a subset of prompt; never negative even if a backend over-reports it
    raw = {"prompt_tokens": 5, "completion_tokens": 1, "prompt_tokens_details": {"cached_tokens": 9}}
    assert chat_usage(raw) == Usage(input_tokens=0, output_tokens=1, cache_read_tokens=9)
    assert chat_usage({"prompt_tokens": None, "cost": "1"}).cost_usd is None


@pytest.mark.parametrize("stream", [False, True])
def test_length_finish_reason_is_reported(stub, make, history, stream):
    stub.add({"text": "truncat", "finish": "length"})
    assert make("openai").complete(history, [], stream=stream).finish_reason == "length"


def test_ollama_sends_no_authorization_without_a_key(stub, sleeps):
    from tinyagent.providers import get_provider

    stub.add({"text": "ok"})
    provider = get_provider(
        "ollama", model="llama3.2", base_url=stub.base_url("ollama") + "/v1", env={}, sleep=sleeps
    )
    assert provider.complete([Message(role="user", content="hi")], [], stream=True).message.content == "ok"
    assert "authorization" not in stub.requests[0].headers
    provider.close()


def test_unpaired_history_is_refused_before_any_request(stub, make):
    broken = [
        Message(role="user", content="x"),
        Message(role="assistant", tool_calls=[ToolCall(id="c1", name="bash", arguments="{}")]),
        Message(role="user", content="never answered"),
    ]
    with pytest.raises(ProviderRequestError, match="'c1' have no result"):
        make("openai").complete(broken, [], stream=False)
    assert stub.requests == []


@pytest.mark.parametrize(("name", "fault_at"), [("openai", 3), ("anthropic", 5), ("codex", 6)])
def test_stream_ending_early_without_terminator_is_a_connection_error(stub, make, history, name, fault_at):
    # The body ends cleanly (no transport error) but before [DONE] / message_stop / response.completed.
    stub.add({"text": "partial text", "fault": "truncate", "fault_at": fault_at})
    pieces: list[str] = []
    with pytest.raises(ProviderConnectionError, match="ended before"):
        make(name).complete(history, [], stream=True, on_text=pieces.append)
    assert pieces and len(stub.requests) == 1


def test_reasoning_state_round_trips_only_to_the_same_provider(stub, make):
    stub.add({"text": "ok"}, {"text": "ok"})
    state = {
        "openai_chat": {"provider": "openrouter", "reasoning": "thought", "reasoning_details": [{"x": 1}]}
    }
    history = [
        Message(role="user", content="q"),
        Message(role="assistant", content="a", provider_state=state),
        Message(role="user", content="q2"),
    ]
    make("openrouter").complete(history, [], stream=False)
    make("openai").complete(history, [], stream=False)
    sent_openrouter = stub.requests[0].body["messages"][1]
    sent_openai = stub.requests[1].body["messages"][1]
    assert sent_openrouter["reasoning"] == "thought"
    assert sent_openrouter["reasoning_details"] == [{"x": 1}]
    assert "reasoning" not in sent_openai and "reasoning_details" not in sent_openai


@pytest.mark.parametrize("stream", [False, True])
def test_reasoning_text_is_captured_as_provider_state(stub, make, history, stream):
    stub.add({"reasoning": {"summary": "first think, then act"}, "text": "acting"})
    completion = make("openrouter").complete(history, [], stream=stream)
    assert completion.message.content == "acting"
    assert completion.message.provider_state == {
        "openai_chat": {"provider": "openrouter", "reasoning": "first think, then act"}
    }


def test_broken_arguments_in_history_are_sent_as_a_valid_object(stub, make):
    # Ollama and vLLM parse old arguments; valid ones must stay byte-exact (prompt caching).
    stub.add({"text": "ok"})
    history = [
        Message(role="user", content="task"),
        Message(
            role="assistant",
            tool_calls=[
                ToolCall(id="a", name="bash", arguments='{"command": '),
                ToolCall(id="b", name="bash", arguments='{"command":"ls",  "x": 1}'),
            ],
        ),
        Message(role="tool", tool_call_id="a", content="error: arguments are not valid JSON", is_error=True),
        Message(role="tool", tool_call_id="b", content="ok"),
    ]
    make("ollama").complete(history, [], stream=False)
    sent = [c["function"]["arguments"] for c in stub.requests[0].body["messages"][1]["tool_calls"]]
    assert json.loads(sent[0]) == {"invalid_json_arguments": '{"command": '}
    assert sent[1] == '{"command":"ls",  "x": 1}'
