"""Backend quirks the adapters absorb instead of failing the run."""

from __future__ import annotations

import pytest

from tinyagent.providers.history import distinct_call_ids
from tinyagent.types import Message, ToolCall

PROMPT = [Message(role="user", content="hi")]
PROVIDERS = ["openai", "anthropic", "codex"]


@pytest.mark.parametrize("name", PROVIDERS)
def test_json_answer_to_a_streaming_request_is_parsed(stub, make, name):
    stub.add(
        {
            "text": "plain json",
            "tool_calls": [{"name": "bash", "arguments": {"command": "ls"}}],
            "ignore_stream": True,
        }
    )
    completion = make(name).complete(PROMPT, [], stream=True, on_text=lambda _: None)
    assert stub.requests[0].stream is True
    assert completion.message.content == "plain json"
    assert [c.name for c in completion.message.tool_calls] == ["bash"]


@pytest.mark.parametrize("name", PROVIDERS)
@pytest.mark.parametrize("stream", [False, True])
def test_repeated_ids_within_one_reply_are_made_distinct(stub, make, name, stream):
    calls = [{"name": "bash", "arguments": {"command": c}, "id": "dup"} for c in ("a", "b", "c")]
    stub.add({"tool_calls": calls})
    completion = make(name).complete(PROMPT, [], stream=stream)
    assert [c.id for c in completion.message.tool_calls] == ["dup", "dup_2", "dup_3"]


def test_distinct_call_ids_keeps_good_ids_and_fills_empty_ones():
    calls = [
        ToolCall(id="", name="a"),
        ToolCall(id="x", name="b"),
        ToolCall(id="x", name="c"),
        ToolCall(id="x_2", name="d"),
    ]
    assert [c.id for c in distinct_call_ids(calls)] == ["call_0", "x", "x_2", "x_2_2"]
    good = [ToolCall(id="p", name="a"), ToolCall(id="q", name="b")]
    assert distinct_call_ids(good) == good


@pytest.mark.parametrize(("name", "fault_at"), [("openai", 3), ("openrouter", 3), ("codex", 6)])
def test_error_event_in_the_middle_of_a_stream_is_a_server_error(stub, make, name, fault_at):
    # OpenRouter-style `{"error": {...}}` chunk / Responses `error` event after text reached the caller.
    from tinyagent.providers.base import ProviderServerError

    stub.add({"text": "abcdefghi", "fault": "stream_error", "fault_at": fault_at}, {"text": "unused"})
    pieces: list[str] = []
    with pytest.raises(ProviderServerError, match="Overloaded"):
        make(name).complete(PROMPT, [], stream=True, on_text=pieces.append)
    assert pieces and len(stub.requests) == 1


@pytest.mark.parametrize("name", PROVIDERS)
@pytest.mark.parametrize("stream", [False, True])
def test_keep_alive_connection_is_reused_across_requests(stub, make, name, stream):
    # After a stream's terminal event the rest of the body is read, so the connection goes back to
    # the pool (an abandoned body would force a new TCP connection for every step).
    stub.add({"text": "one"}, {"text": "two"}, {"text": "three"})
    provider = make(name)
    for _ in range(3):
        provider.complete(PROMPT, [], stream=stream)
    assert len({r.client_port for r in stub.requests}) == 1


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", PROVIDERS)
def test_a_body_held_open_after_the_terminator_does_not_hang_the_reply(stub, make, name, monkeypatch):
    # Without the drain's cut-off this would block until the 300 s read timeout (and trip the
    # test timeout); with it the reply returns and the connection is not reused.
    from tinyagent.providers.http import streaming as http

    monkeypatch.setattr(http, "DRAIN_GRACE_S", 0.2)
    stub.add({"text": "complete", "linger": 120}, {"text": "next"})
    provider = make(name)
    assert provider.complete(PROMPT, [], stream=True).message.content == "complete"
    assert provider.complete(PROMPT, [], stream=True).message.content == "next"
    assert stub.requests[0].client_port != stub.requests[1].client_port
