"""The gate's scripted model, over real HTTP: each dialect answers turn N with step N, then with text.

These run in the ordinary suite (no client needed), so a change to the scripted model cannot silently turn
the gate into one that passes because the model stopped calling tools.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gate.wire_models import FINAL_TEXT, ModelServer, ScriptedModel, Step

STEPS = [Step("tool_a", {"x": 1}, "ns", "call_1"), Step("tool_b", {"y": "two"}, None, "call_2")]


@pytest.fixture(scope="module")
def server() -> Iterator[ModelServer]:
    with ModelServer(ScriptedModel(steps=STEPS)) as running:
        yield running


def post(server: ModelServer, path: str, body: dict[str, Any]) -> tuple[str, bytes]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{server.port}{path}",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.headers["Content-Type"], response.read()


def sse_data(raw: bytes) -> list[Any]:
    return [
        json.loads(line[6:])
        for line in raw.decode().splitlines()
        if line.startswith("data: ") and line != "data: [DONE]"
    ]


TOOLS = [{"name": "t"}]


def anthropic(turns: int) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for _ in range(turns):
        messages += [{"role": "assistant", "content": []}, {"role": "user", "content": []}]
    return {"model": "m", "messages": messages, "tools": TOOLS, "stream": True}


def test_anthropic_stream_calls_each_step_then_ends_the_turn(server: ModelServer) -> None:
    kind, raw = post(server, "/v1/messages?beta=true", anthropic(0))
    events = sse_data(raw)
    assert kind == "text/event-stream"
    assert [e["type"] for e in events] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert events[1]["content_block"] == {"type": "tool_use", "id": "call_1", "name": "tool_a", "input": {}}
    assert json.loads(events[2]["delta"]["partial_json"]) == {"x": 1}
    assert events[4]["delta"]["stop_reason"] == "tool_use"
    final = sse_data(post(server, "/v1/messages", anthropic(2))[1])
    assert final[2]["delta"] == {"type": "text_delta", "text": FINAL_TEXT}
    assert final[4]["delta"]["stop_reason"] == "end_turn"


def test_anthropic_count_tokens_and_requests_without_tools(server: ModelServer) -> None:
    assert json.loads(post(server, "/v1/messages/count_tokens", {"messages": []})[1]) == {"input_tokens": 10}
    body = {**anthropic(0), "stream": False, "tools": []}
    message = json.loads(post(server, "/v1/messages", body)[1])
    assert message["content"] == [{"type": "text", "text": FINAL_TEXT}]


def test_responses_calls_carry_the_namespace(server: ModelServer) -> None:
    body = {"model": "m", "input": [{"type": "message"}], "tools": TOOLS, "stream": True}
    events = sse_data(post(server, "/v1/responses", body)[1])
    item = events[-1]["response"]["output"][0]
    assert (item["type"], item["name"], item["namespace"], item["call_id"]) == (
        "function_call",
        "tool_a",
        "ns",
        "call_1",
    )
    body["input"] = [{"type": "function_call"}, {"type": "function_call_output"}]
    item = sse_data(post(server, "/v1/responses", body)[1])[-1]["response"]["output"][0]
    assert (item["name"], "namespace" in item) == ("tool_b", False)


def test_gemini_function_calls_and_the_next_speaker_check(server: ModelServer) -> None:
    body: dict[str, Any] = {"contents": [{"role": "user", "parts": [{"text": "go"}]}]}
    body["tools"] = [{"functionDeclarations": TOOLS}]
    chunk = sse_data(post(server, "/v1beta/models/m:streamGenerateContent?alt=sse", body)[1])[0]
    assert chunk["candidates"][0]["content"]["parts"] == [
        {"functionCall": {"name": "tool_a", "args": {"x": 1}}}
    ]
    check = {"contents": body["contents"], "generationConfig": {"responseMimeType": "application/json"}}
    answer = json.loads(post(server, "/v1beta/models/m:generateContent", check)[1])
    assert json.loads(answer["candidates"][0]["content"]["parts"][0]["text"])["next_speaker"] == "user"


@settings(max_examples=25, deadline=None)
@given(turns=st.integers(min_value=0, max_value=6))
def test_chat_turn_n_is_step_n_then_text(turns: int) -> None:
    model = ScriptedModel(steps=STEPS)
    with ModelServer(model) as running:
        messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
        for index in range(turns):
            messages.append({"role": "assistant", "content": "", "tool_calls": [{"id": f"c{index}"}]})
            messages.append({"role": "tool", "tool_call_id": f"c{index}", "content": "ok"})
        body = {"model": "m", "messages": messages, "tools": TOOLS, "stream": False}
        reply = json.loads(post(running, "/v1/chat/completions", body)[1])["choices"][0]
    if turns < len(STEPS):
        assert reply["finish_reason"] == "tool_calls"
        assert reply["message"]["tool_calls"][0]["function"]["name"] == STEPS[turns].name
    else:
        assert (reply["finish_reason"], reply["message"]["content"]) == ("stop", FINAL_TEXT)
    assert model.requests[-1]["body"] == body
