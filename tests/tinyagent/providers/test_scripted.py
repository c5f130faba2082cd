"""The ScriptedProvider used by the loop tests and demos: replies, errors, sleeps, recording, validation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tinyagent.providers import base
from tinyagent.providers.scripted import ScriptedProvider, ScriptError
from tinyagent.types import Message, ToolSpec

HISTORY = [Message(role="system", content="s"), Message(role="user", content="t")]
TOOLS = [ToolSpec(name="bash", description="d", parameters={"type": "object"})]


def test_replies_in_order_with_generated_ids_usage_and_default_zero_cost() -> None:
    provider = ScriptedProvider.from_script(
        [
            {
                "content": "hi",
                "tool_calls": [{"name": "bash", "arguments": {"command": "ls"}}],
                "usage": {"input_tokens": 7, "output_tokens": 3},
            },
            {"tool_calls": [{"id": "mine", "name": "bash", "arguments": "{broken"}], "cost_usd": 0.5},
        ],
        model="m1",
    )
    first = provider.complete(HISTORY, TOOLS, stream=False)
    assert first.message.content == "hi"
    assert [(c.id, c.name, c.arguments) for c in first.message.tool_calls] == [
        ("call_1_0", "bash", '{"command": "ls"}')
    ]
    assert (first.usage.input_tokens, first.usage.output_tokens, first.usage.cost_usd) == (7, 3, 0.0)
    assert (first.model, first.finish_reason) == ("m1", "tool_calls")
    second = provider.complete(HISTORY, TOOLS, stream=True)
    assert second.message.tool_calls[0].id == "mine"
    assert second.message.tool_calls[0].arguments == "{broken"
    assert second.usage.cost_usd == 0.5
    with pytest.raises(base.ProviderRequestError, match="script exhausted after 2 replies"):
        provider.complete(HISTORY, TOOLS, stream=False)
    assert len(provider.requests) == 3


@pytest.mark.parametrize(
    ("kind", "error"),
    [
        ("auth", base.ProviderAuthError),
        ("model", base.ProviderModelNotFound),
        ("server", base.ProviderServerError),
        ("rate_limit", base.ProviderRateLimited),
        ("connection", base.ProviderConnectionError),
        ("protocol", base.ProviderProtocolError),
        ("request", base.ProviderRequestError),
    ],
)
def test_scripted_errors(kind: str, error: type[base.ProviderError]) -> None:
    provider = ScriptedProvider.from_script([{"raise": kind, "message": "boom", "status": 503}])
    with pytest.raises(error, match="boom") as info:
        provider.complete(HISTORY, TOOLS, stream=False)
    assert info.value.status == 503


def test_streaming_text_callback_and_recording(tmp_path: Path) -> None:
    record = tmp_path / "requests.jsonl"
    provider = ScriptedProvider.from_script({"replies": [{"content": "streamed"}], "record": str(record)})
    chunks: list[str] = []
    provider.complete(HISTORY, TOOLS, stream=True, on_text=chunks.append)
    assert chunks == ["streamed"]
    entry = json.loads(record.read_text())
    assert entry["step"] == 1
    assert entry["stream"] is True
    assert entry["tools"] == ["bash"]
    assert entry["messages"] == [{"role": "system", "content": "s"}, {"role": "user", "content": "t"}]


@pytest.mark.parametrize(
    ("script", "message"),
    [
        ({"nope": []}, "a script must be an object with a 'replies' list"),
        ([1], "reply 0 must be an object"),
        ([{"tool_calls": [{"arguments": {}}]}], "reply 0: every tool call needs a 'name'"),
        ([{"raise": "meteor"}], "reply 0: unknown raise kind 'meteor'"),
    ],
)
def test_invalid_scripts_are_rejected(script: object, message: str) -> None:
    with pytest.raises(ScriptError, match=message):
        ScriptedProvider.from_script(script)  # type: ignore[arg-type]


def test_from_file_accepts_paths_and_file_urls(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps([{"content": "x"}]))
    assert ScriptedProvider.from_file(path).replies == [{"content": "x"}]
    assert ScriptedProvider.from_file(f"file://{path}").replies == [{"content": "x"}]
    with pytest.raises(ScriptError, match="cannot read script"):
        ScriptedProvider.from_file(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(ScriptError, match="is not valid JSON"):
        ScriptedProvider.from_file(tmp_path / "bad.json")
