"""Fixtures for the provider adapter tests: a stub server per test and adapters pointed at it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from support.provider_stubs import ProviderStub
from tinyagent.providers import get_provider
from tinyagent.providers.http.retry import RetryPolicy
from tinyagent.types import Message, ToolCall, ToolSpec

PROVIDER_NAMES = ("openai", "openrouter", "ollama", "anthropic", "codex")

BASH = ToolSpec(
    name="bash",
    description="Run a shell command.",
    parameters={"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
)


class Sleeps(list[float]):
    """A `sleep` replacement that records the requested delays instead of waiting."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture
def stub() -> Iterator[ProviderStub]:
    with ProviderStub() as server:
        yield server


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def make(stub: ProviderStub, sleeps: Sleeps) -> Iterator[Callable[..., Any]]:
    """make(name, **options) -> adapter talking to `stub`, with recorded (not real) backoff sleeps."""
    made: list[Any] = []

    def factory(name: str, *, model: str = "test-model", **options: Any) -> Any:
        options.setdefault("retry", RetryPolicy(max_retries=3, base_delay=0.01, max_delay=0.05))
        provider = get_provider(
            name,
            model=model,
            base_url=stub.base_url(name),
            api_key="sk-test-secret-key",
            sleep=sleeps,
            **options,
        )
        made.append(provider)
        return provider

    yield factory
    for provider in made:
        provider.close()


@pytest.fixture
def tools() -> list[ToolSpec]:
    return [BASH]


@pytest.fixture
def history() -> list[Message]:
    """System, task, two tool calls in one turn, then a later turn reusing an id (legal across turns)."""
    return [
        Message(role="system", content="You are a test agent."),
        Message(role="user", content="create hello.txt"),
        Message(
            role="assistant",
            content="I will look first.",
            tool_calls=[
                ToolCall(id="call_a", name="bash", arguments='{"command": "ls"}'),
                ToolCall(id="call_b", name="bash", arguments='{"command": "pwd"}'),
            ],
        ),
        Message(role="tool", tool_call_id="call_a", name="bash", content="README.md"),
        Message(role="tool", tool_call_id="call_b", name="bash", content="boom", is_error=True),
        Message(
            role="assistant",
            content=None,
            tool_calls=[ToolCall(id="call_a", name="bash", arguments='{"command": "echo hi > hello.txt"}')],
        ),
        Message(role="tool", tool_call_id="call_a", name="bash", content=""),
    ]
