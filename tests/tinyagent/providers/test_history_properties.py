"""Property tests: any well-paired history translates into a request each provider's rules accept;
any broken pairing is refused locally, before a request exists."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support.provider_stubs import VALIDATORS
from tinyagent.providers.anthropic import AnthropicProvider
from tinyagent.providers.base import ProviderRequestError
from tinyagent.providers.history import ANTHROPIC_ID_PATTERN, WireIds, check_pairing
from tinyagent.providers.openai_chat import OpenAIChatProvider
from tinyagent.providers.responses import ResponsesProvider
from tinyagent.types import Message, ToolCall, ToolSpec

TOOLS = [ToolSpec(name="bash", description="d", parameters={"type": "object", "properties": {}})]
# Ids as other providers (or a hand-edited file) may produce them, including ones Anthropic rejects.
ids = st.one_of(
    st.sampled_from(["call_1", "call_2", "toolu_01A", "functions.bash:0", "call:abc.def", "x y", "c-1"]),
    st.text(alphabet="abcXYZ019_-.:/ ", min_size=1, max_size=12),
)
texts = st.one_of(st.none(), st.just(""), st.just(" \n"), st.text(max_size=20))
arguments = st.one_of(st.just("{}"), st.just('{"command": "ls"}'), st.just('{"command": '), st.just("[1]"))


@st.composite
def paired_histories(draw: Any) -> list[Message]:
    history = [Message(role="system", content="sys"), Message(role="user", content="task")]
    for _ in range(draw(st.integers(min_value=0, max_value=5))):
        call_ids = draw(st.lists(ids, min_size=0, max_size=3, unique=True))
        state = None
        if draw(st.booleans()):
            state = {
                "anthropic": {"thinking": [{"type": "thinking", "thinking": "t", "signature": "s"}]},
                "responses": {
                    "reasoning": [
                        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "e"}
                    ]
                },
            }
        content = draw(texts)
        if not call_ids and not content:
            content = "plain answer"
        history.append(
            Message(
                role="assistant",
                content=content,
                tool_calls=[ToolCall(id=i, name="bash", arguments=draw(arguments)) for i in call_ids],
                provider_state=state,
            )
        )
        results = draw(st.permutations(call_ids))  # any order within the turn
        for call_id in results:
            history.append(
                Message(role="tool", tool_call_id=call_id, content=draw(texts), is_error=draw(st.booleans()))
            )
        if draw(st.booleans()) or not call_ids:
            history.append(Message(role="user", content=draw(st.sampled_from(["go on", " ", "\t"]))))
    return history


def _adapters() -> list[tuple[str, Any]]:
    return [
        ("chat", OpenAIChatProvider(model="m", base_url="http://127.0.0.1:9/v1", api_key="k")),
        ("anthropic", AnthropicProvider(model="m", base_url="http://127.0.0.1:9", api_key="k")),
        ("responses", ResponsesProvider(model="o4-mini", base_url="http://127.0.0.1:9/v1", api_key="k")),
    ]


@pytest.fixture(scope="module")
def adapters():
    made = _adapters()
    yield made
    for _, adapter in made:
        adapter.close()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=paired_histories(), stream=st.booleans())
def test_every_paired_history_yields_a_request_the_provider_accepts(adapters, history, stream):
    headers = {"anthropic-version": "2023-06-01"}
    for wire, adapter in adapters:
        body = adapter.build_request(history, TOOLS, stream=stream)
        problem = VALIDATORS[wire](body, headers)
        assert problem is None, f"{wire}: {problem}"


@settings(max_examples=150, deadline=None)
@given(history=paired_histories())
def test_wire_ids_are_symmetric_unique_and_anthropic_safe(history):
    from tinyagent.providers.history import anthropic_safe_id

    check_pairing(history, "p")
    wire = WireIds(history, transform=anthropic_safe_id, unique=True)
    seen: set[str] = set()
    for index, message in enumerate(history):
        if message.role == "assistant" and message.tool_calls:
            mapped = wire.calls(index)
            assert len(mapped) == len(message.tool_calls)
            assert not seen & set(mapped)
            seen |= set(mapped)
            assert all(ANTHROPIC_ID_PATTERN.match(m) for m in mapped)
            by_id = dict(zip((c.id for c in message.tool_calls), mapped, strict=True))
            follow = index + 1
            while follow < len(history) and history[follow].role == "tool":
                assert wire.result(follow) == by_id[history[follow].tool_call_id]
                follow += 1


@st.composite
def broken_histories(draw: Any) -> list[Message]:
    history = draw(paired_histories().filter(lambda h: any(m.role == "tool" for m in h)))
    tool_positions = [i for i, m in enumerate(history) if m.role == "tool"]
    position = draw(st.sampled_from(tool_positions))
    mutation = draw(st.sampled_from(["drop_result", "duplicate_result", "orphan_result", "drop_call"]))
    history = list(history)
    if mutation == "drop_result":
        del history[position]
    elif mutation == "duplicate_result":
        history.insert(position, history[position])
    elif mutation == "orphan_result":
        history[position] = history[position].model_copy(update={"tool_call_id": "never-called"})
    else:
        call_id = history[position].tool_call_id
        owner = max(i for i in range(position) if history[i].role == "assistant")
        calls = [c for c in history[owner].tool_calls if c.id != call_id]
        history[owner] = history[owner].model_copy(update={"tool_calls": calls})
    return history


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=broken_histories())
def test_every_broken_pairing_is_refused_by_every_adapter(adapters, history):
    for _, adapter in adapters:
        with pytest.raises(ProviderRequestError, match="conversation history is invalid"):
            adapter.build_request(history, TOOLS, stream=False)
    # The chat adapter's incremental check refuses it with check_pairing's exact message, also
    # after a valid prefix of it was encoded (and the cache is reused).
    chat = next(adapter for wire, adapter in adapters if wire == "chat")
    with pytest.raises(ProviderRequestError) as expected:
        check_pairing(history, chat.name)
    for cut in (0, len(history) // 2, len(history)):
        if _paired(history[:cut]):
            chat.request_payload(history[:cut], TOOLS, stream=False)
        with pytest.raises(ProviderRequestError) as refused:
            chat.request_payload(history, TOOLS, stream=False)
        assert str(refused.value) == str(expected.value)


def _paired(history: list[Message]) -> bool:
    try:
        check_pairing(history, "p")
    except ProviderRequestError:
        return False
    return True


@settings(max_examples=150, deadline=None)
@given(history=paired_histories(), stream=st.booleans(), cut=st.integers(min_value=0, max_value=40))
def test_chat_encoded_payload_equals_the_request_body_also_when_reused(history, stream, cut):
    # request_payload reuses the JSON of messages already encoded; whatever was encoded before (a
    # prefix of this history, or another history), the bytes must decode to build_request's body.
    import json

    adapter = OpenAIChatProvider(model="m", base_url="http://127.0.0.1:9/v1", api_key="k")
    try:
        prefix = history[: min(cut, len(history))]
        if _paired(prefix):
            adapter.request_payload(prefix, TOOLS, stream=not stream)
        adapter.request_payload([Message(role="user", content="other")], [], stream=stream)
        if _paired(prefix):
            adapter.request_payload(prefix, [], stream=stream)
        for _ in range(2):
            payload = adapter.request_payload(history, TOOLS, stream=stream)
            assert json.loads(payload) == adapter.build_request(history, TOOLS, stream=stream)
    finally:
        adapter.close()
