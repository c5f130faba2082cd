"""LLM summarisers for consolidation (off unless ``GRAYMATTER_CONSOLIDATE_LLM`` names a provider).

Each provider *proposes* a summary; nothing is applied here. The answer must be a JSON object
``{"summary": "..."}`` with non-empty text within the fact size limit, otherwise ``ProviderError``.
"""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

from graymatter.config import MemoryConfig
from graymatter.errors import ProviderError

_PROMPT = (
    "You consolidate an AI agent's long-term memory. Merge the facts below into one concise summary that "
    "keeps every specific name, number, date and decision. Do not add anything that is not stated. "
    'Answer with only a JSON object: {"summary": "<text>"}.\n\nFacts:\n'
)
_TIMEOUT_S = 60.0


def build_prompt(texts: Sequence[str]) -> str:
    """The summarisation prompt for ``texts`` (one numbered line each)."""
    return _PROMPT + "\n".join(f"{i}. {' '.join(t.split())}" for i, t in enumerate(texts, 1))


def parse_summary(answer: str, max_bytes: int) -> str:
    """Extract and validate the summary text from a model answer."""
    match = re.search(r"\{.*\}", answer, re.DOTALL)
    if not match:
        raise ProviderError("the model did not answer with a JSON object")
    try:
        payload = json.loads(match.group(0))
    except ValueError:
        raise ProviderError("the model answered with invalid JSON") from None
    summary = payload.get("summary") if isinstance(payload, dict) else None
    if not isinstance(summary, str) or not summary.strip():
        raise ProviderError('the model answer has no non-empty "summary" string')
    summary = summary.strip()
    if len(summary.encode("utf-8")) > max_bytes:
        raise ProviderError("the proposed summary exceeds the fact size limit")
    return summary


def _post(url: str, payload: dict[str, Any], headers: dict[str, str], provider: str) -> Any:
    import httpx

    try:
        response = httpx.post(url, json=payload, headers=headers, timeout=_TIMEOUT_S)
    except httpx.HTTPError as exc:
        raise ProviderError(f"{provider} request failed: {type(exc).__name__}") from None
    if response.status_code != 200:
        raise ProviderError(f"{provider} answered HTTP {response.status_code}")
    try:
        return response.json()
    except ValueError:
        raise ProviderError(f"{provider} returned invalid JSON") from None


class OllamaSummariser:
    """Ollama ``POST /api/generate`` (non-streaming)."""

    def __init__(self, url: str, model: str) -> None:
        self.url, self.model, self.name = url.rstrip("/"), model, f"ollama:{model}"

    def summarise(self, texts: Sequence[str], max_bytes: int) -> str:
        data = _post(
            f"{self.url}/api/generate",
            {"model": self.model, "prompt": build_prompt(texts), "stream": False, "format": "json"},
            {},
            "ollama",
        )
        answer = data.get("response") if isinstance(data, dict) else None
        if not isinstance(answer, str):
            raise ProviderError("ollama returned no response text")
        return parse_summary(answer, max_bytes)


class _HostedSummariser(ABC):
    """A chat-style summariser behind an API key, named ``provider:model``.

    Subclasses give the endpoint ``path``, the request ``_headers`` and ``_body``, and read the ``_answer``.
    """

    provider: ClassVar[str]
    path: ClassVar[str]

    def __init__(self, base_url: str, api_key: str, model: str) -> None:
        self.base_url, self._api_key, self.model = base_url.rstrip("/"), api_key, model
        self.name = f"{self.provider}:{model}"

    def summarise(self, texts: Sequence[str], max_bytes: int) -> str:
        """Ask the model for one summary of ``texts``."""
        data = _post(f"{self.base_url}{self.path}", self._body(texts), self._headers(), self.provider)
        return parse_summary(self._answer(data), max_bytes)

    @abstractmethod
    def _headers(self) -> dict[str, str]:
        """The request headers (credentials)."""

    @abstractmethod
    def _body(self, texts: Sequence[str]) -> dict[str, Any]:
        """The JSON request body."""

    @abstractmethod
    def _answer(self, data: Any) -> str:
        """The answer text of a response body."""


class OpenAISummariser(_HostedSummariser):
    """An OpenAI-compatible ``POST /chat/completions``."""

    provider = "openai"
    path = "/chat/completions"

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._api_key}"}

    def _body(self, texts: Sequence[str]) -> dict[str, Any]:
        prompt = [{"role": "user", "content": build_prompt(texts)}]
        return {"model": self.model, "messages": prompt, "max_tokens": 512}

    def _answer(self, data: Any) -> str:
        try:
            answer = data["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise ProviderError("openai returned an unexpected payload") from None
        return str(answer)


class AnthropicSummariser(_HostedSummariser):
    """Anthropic ``POST /v1/messages``."""

    provider = "anthropic"
    path = "/v1/messages"

    def _headers(self) -> dict[str, str]:
        return {"x-api-key": self._api_key, "anthropic-version": "2023-06-01"}

    def _body(self, texts: Sequence[str]) -> dict[str, Any]:
        prompt = [{"role": "user", "content": build_prompt(texts)}]
        return {"model": self.model, "max_tokens": 512, "messages": prompt}

    def _answer(self, data: Any) -> str:
        try:
            return "".join(block.get("text", "") for block in data["content"] if block.get("type") == "text")
        except (KeyError, TypeError, AttributeError):
            raise ProviderError("anthropic returned an unexpected payload") from None


def resolve_summariser(
    config: MemoryConfig,
) -> OllamaSummariser | OpenAISummariser | AnthropicSummariser | None:
    """The summariser named by ``config.summariser`` (``None`` = summarisation off)."""
    name = config.summariser
    if name is None:
        return None
    if name == "ollama":
        return OllamaSummariser(config.ollama_url, config.summariser_model or config.ollama_consolidate_model)
    hosted: type[OpenAISummariser] | type[AnthropicSummariser]
    if name == "openai":
        hosted, key, base_url = OpenAISummariser, config.openai_api_key, config.openai_base_url
        model = "gpt-4o-mini"
    else:
        hosted, key, base_url = AnthropicSummariser, config.anthropic_api_key, config.anthropic_base_url
        model = "claude-haiku-4-5-20251001"
    if key is None:
        raise ProviderError(f"GRAYMATTER_CONSOLIDATE_LLM={name} needs {name.upper()}_API_KEY")
    return hosted(base_url, key.get_secret_value(), config.summariser_model or model)
