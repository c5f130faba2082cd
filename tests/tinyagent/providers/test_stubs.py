"""The stub servers reject what the real providers reject, so adapter tests can actually fail."""

from __future__ import annotations

import httpx
import pytest

from support.provider_stubs import StubProcess

UNANSWERED = [
    {"role": "user", "content": "x"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}],
    },
    {"role": "user", "content": "y"},
]


def post(url, body, **headers):
    return httpx.post(url, json=body, headers=headers, timeout=10)


def test_chat_orphan_call_gets_the_real_error(stub):
    response = post(stub.base_url("openai") + "/chat/completions", {"model": "m", "messages": UNANSWERED})
    assert response.status_code == 400
    assert "did not have response messages: c1" in response.json()["error"]["message"]


def test_anthropic_rules(stub):
    url = stub.url + "/v1/messages"
    version = {"anthropic-version": "2023-06-01"}
    base = {"model": "m", "max_tokens": 5}
    orphan_result = [
        {"role": "user", "content": "x"},
        {"role": "assistant", "content": "no tools"},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "r"}]},
    ]
    bad_id = [
        {"role": "user", "content": "x"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "a.b", "name": "bash", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a.b"}]},
    ]
    text_first = [
        {"role": "user", "content": "x"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "bash", "input": {}}]},
        {
            "role": "user",
            "content": [{"type": "text", "text": "hi"}, {"type": "tool_result", "tool_use_id": "t1"}],
        },
    ]
    cases = {
        "unexpected `tool_use_id`": orphan_result,
        "String should match pattern": bad_id,
        "tool_result blocks must come before": text_first,
        "roles must alternate": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}],
    }
    for expected, messages in cases.items():
        response = post(url, {**base, "messages": messages}, **version)
        assert response.status_code == 400, expected
        assert expected in response.json()["error"]["message"]
    assert (
        post(url, {**base, "messages": [{"role": "user", "content": "a"}]}).status_code == 400
    )  # no version


def test_responses_pairing(stub):
    url = stub.base_url("codex") + "/responses"
    missing = [{"type": "function_call", "call_id": "c1", "name": "bash", "arguments": "{}"}]
    stray = [{"type": "function_call_output", "call_id": "c2", "output": "x"}]
    assert "No tool output found for function call c1" in post(url, {"model": "m", "input": missing}).text
    assert (
        "No tool call found for function call output with call_id c2"
        in post(url, {"model": "m", "input": stray}).text
    )


def test_script_exhaustion_is_a_400(stub):
    response = post(
        stub.base_url("openai") + "/chat/completions",
        {"model": "m", "messages": [{"role": "user", "content": "x"}]},
    )
    assert response.status_code == 400
    assert "script exhausted" in response.text


def test_standalone_process_serves_and_records(tmp_path):
    with StubProcess([{"text": "from a process"}], workdir=tmp_path) as proc:
        body = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
        response = post(proc.base_url("openai") + "/chat/completions", body, authorization="Bearer k")
        assert response.json()["choices"][0]["message"]["content"] == "from a process"
        [recorded] = proc.requests(expected=1)
    assert recorded["body"] == body
    assert recorded["headers"]["authorization"] == "Bearer k"


@pytest.mark.parametrize("provider", ["openai", "openrouter", "codex", "anthropic", "ollama"])
def test_base_url_helper(stub, provider):
    expected = stub.url if provider in ("anthropic", "ollama") else stub.url + "/v1"
    assert stub.base_url(provider) == expected
