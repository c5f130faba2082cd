"""Provider-neutral conversation types shared by the loop, the providers and the trajectory.

These pydantic models are the single source of the trajectory's message schema. Providers
translate them to and from their own wire formats; nothing else knows a wire format.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Role = Literal["system", "user", "assistant", "tool"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ToolCall(_Strict):
    """One tool call requested by the model. `arguments` is the raw JSON text the model produced."""

    id: str
    name: str
    arguments: str = "{}"


class Message(_Strict):
    """One conversation message.

    - system/user: `content`.
    - assistant: `content` (may be None) and `tool_calls`.
    - tool: `content` (the observation), `tool_call_id`, `name`, `is_error`.
    `provider_state` carries opaque provider-native data that must round-trip unchanged
    (Anthropic thinking blocks with signatures, Responses reasoning items); it is keyed by
    provider name, e.g. {"anthropic": {...}}.
    """

    role: Role
    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False
    provider_state: dict[str, Any] | None = None


class ToolSpec(_Strict):
    """A tool offered to the model: name, description and a JSON Schema for its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]


class Usage(_Strict):
    """Token usage of one model call, normalised across providers.

    `input_tokens` counts fresh (uncached) prompt tokens only; cache reads and writes are separate,
    so the total prompt is input + cache_read + cache_write for every provider.
    `cost_usd` is the provider's own reported cost when it gives one (OpenRouter), else None.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = None


class Completion(_Strict):
    """The result of one model call: the assistant message plus accounting."""

    message: Message
    usage: Usage = Field(default_factory=Usage)
    finish_reason: str = "stop"
    model: str = ""
    response_id: str | None = None
