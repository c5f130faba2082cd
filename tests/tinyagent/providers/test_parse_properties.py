"""Whatever JSON a server sends, the adapters return a Completion or raise a ProviderError."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tinyagent.providers.anthropic import AnthropicProvider
from tinyagent.providers.base import ProviderError
from tinyagent.providers.http.retry import StreamProgress
from tinyagent.providers.openai_chat import OpenAIChatProvider
from tinyagent.providers.responses import ResponsesProvider
from tinyagent.providers.sse import SSEEvent
from tinyagent.types import Completion

KEYS = [
    "choices", "message", "delta", "content", "tool_calls", "function", "name", "arguments", "id", "index",
    "usage", "finish_reason", "type", "text", "input", "output", "call_id", "status", "error", "response",
    "item", "output_index", "content_block", "partial_json", "stop_reason", "model", "thinking", "signature",
    "prompt_tokens", "input_tokens", "incomplete_details", "reason", "code",
]  # fmt: skip
TYPES = [
    "message", "function_call", "reasoning", "output_text", "text", "tool_use", "thinking", "text_delta",
    "input_json_delta", "message_start", "content_block_start", "content_block_delta", "content_block_stop",
    "message_delta", "message_stop", "error", "response.completed", "response.output_item.done",
    "response.output_text.delta", "response.failed", "completed", "incomplete", "failed",
]  # fmt: skip

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 5),
    st.floats(allow_nan=False),
    st.sampled_from(TYPES),
    st.text(max_size=6),
)
documents = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(KEYS), inner, max_size=5)
    ),
    max_leaves=25,
)


def _adapters() -> list[Any]:
    return [
        OpenAIChatProvider(model="m", base_url="http://127.0.0.1:9/v1", api_key="k"),
        AnthropicProvider(model="m", base_url="http://127.0.0.1:9", api_key="k"),
        ResponsesProvider(model="m", base_url="http://127.0.0.1:9/v1", api_key="k"),
    ]


@pytest.fixture(scope="module")
def adapters():
    made = _adapters()
    yield made
    for adapter in made:
        adapter.close()


def _check(call: Any) -> None:
    try:
        result = call()
    except ProviderError:
        return
    assert isinstance(result, Completion)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(document=documents)
def test_any_json_document_parses_or_is_a_provider_error(adapters, document):
    for adapter in adapters:
        _check(lambda a=adapter: a._parse(document))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    events=st.lists(
        st.tuples(st.one_of(st.none(), st.sampled_from(TYPES)), st.one_of(documents, st.just("[DONE]"))),
        max_size=8,
    )
)
def test_any_event_stream_parses_or_is_a_provider_error(adapters, events):
    stream = [
        SSEEvent(data=d if isinstance(d, str) and d == "[DONE]" else json.dumps(d), event=e)
        for e, d in events
    ]
    for adapter in adapters:
        _check(lambda a=adapter: a._consume(iter(stream), StreamProgress(), lambda _: None))
