"""Provider registry: names -> adapters (imported lazily), endpoint and API-key resolution.

name        wire format           base URL env         default base URL              key env
openai      Chat Completions      OPENAI_BASE_URL      https://api.openai.com/v1     OPENAI_API_KEY
openrouter  Chat Completions      OPENROUTER_BASE_URL  https://openrouter.ai/api/v1  OPENROUTER_API_KEY
ollama      Chat Completions /v1  OLLAMA_HOST (+/v1)   http://localhost:11434/v1     none (OLLAMA_API_KEY)
anthropic   Messages              ANTHROPIC_BASE_URL   https://api.anthropic.com     ANTHROPIC_API_KEY
codex       Responses             OPENAI_BASE_URL      https://api.openai.com/v1     OPENAI_API_KEY, then
                                                                                        CODEX_API_KEY
scripted    in-process (tests)    -                    -                             -

Endpoint precedence: --base-url, then the provider's environment variable, then the config value,
then the public default. Keys come only from the environment (or a config value the caller passes).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from tinyagent.defaults import DEFAULT_MAX_RETRIES, DEFAULT_PROVIDER_TIMEOUT
from tinyagent.providers.base import Provider, ProviderAuthError, ProviderError

__all__ = [
    "PROVIDERS",
    "InvalidEndpointError",
    "ProviderInfo",
    "UnknownProviderError",
    "get_provider",
    "provider_names",
    "resolve_api_key",
    "resolve_endpoint",
]


@dataclass(frozen=True)
class ProviderInfo:
    """Static facts about one provider name."""

    name: str
    target: str  # "module:Class", imported on first use
    wire: str  # chat | anthropic | responses | scripted
    base_url_env: str | None
    default_base_url: str | None
    key_envs: tuple[str, ...]
    key_required: bool = True


PROVIDERS: dict[str, ProviderInfo] = {
    info.name: info
    for info in (
        ProviderInfo(
            "openai",
            "tinyagent.providers.openai_chat:OpenAIChatProvider",
            "chat",
            "OPENAI_BASE_URL",
            "https://api.openai.com/v1",
            ("OPENAI_API_KEY",),
        ),
        ProviderInfo(
            "openrouter",
            "tinyagent.providers.openai_chat:OpenAIChatProvider",
            "chat",
            "OPENROUTER_BASE_URL",
            "https://openrouter.ai/api/v1",
            ("OPENROUTER_API_KEY",),
        ),
        ProviderInfo(
            "ollama",
            "tinyagent.providers.openai_chat:OpenAIChatProvider",
            "chat",
            "OLLAMA_HOST",
            "http://localhost:11434/v1",
            ("OLLAMA_API_KEY",),
            key_required=False,
        ),
        ProviderInfo(
            "anthropic",
            "tinyagent.providers.anthropic:AnthropicProvider",
            "anthropic",
            "ANTHROPIC_BASE_URL",
            "https://api.anthropic.com",
            ("ANTHROPIC_API_KEY",),
        ),
        ProviderInfo(
            "codex",
            "tinyagent.providers.responses:ResponsesProvider",
            "responses",
            "OPENAI_BASE_URL",
            "https://api.openai.com/v1",
            ("OPENAI_API_KEY", "CODEX_API_KEY"),
        ),
        ProviderInfo(
            "scripted",
            "tinyagent.providers.scripted:ScriptedProvider",
            "scripted",
            None,
            None,
            (),
            key_required=False,
        ),
    )
}


class UnknownProviderError(ProviderError):
    """The provider name is not one tinyagent knows."""


class InvalidEndpointError(ProviderError):
    """A base URL that is not an absolute http(s) URL."""


def _checked(url: str, source: str) -> str:
    value = url.strip().rstrip("/")
    parts = urlsplit(value)
    try:
        parts.port  # noqa: B018 - raises on a malformed port
    except ValueError:
        raise InvalidEndpointError(f"{source} has an invalid port: {value!r}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidEndpointError(f"{source} must be an absolute http(s) URL, got {value!r}")
    return value


def provider_names() -> list[str]:
    """Valid provider names, in documentation order."""
    return list(PROVIDERS)


def _info(name: str) -> ProviderInfo:
    try:
        return PROVIDERS[name]
    except KeyError:
        raise UnknownProviderError(
            f"unknown provider {name!r}; valid providers: {', '.join(provider_names())}"
        ) from None


def _ollama_base(host: str) -> str:
    """OLLAMA_HOST -> base URL with /v1, following Ollama's own rules.

    Without a scheme it is `host[:port]` over http with port 11434 by default; with an explicit
    scheme the URL's own default port applies (80/443), exactly as the ollama CLI reads it.
    """
    value = host.strip().rstrip("/")
    if "://" not in value:
        value = "http://" + value
        parts = urlsplit(value)
        try:
            port = parts.port
        except ValueError:
            raise InvalidEndpointError(f"OLLAMA_HOST is not a valid host[:port]: {host!r}") from None
        if port is None:
            value = f"http://{parts.netloc}:11434{parts.path}"
    parts = urlsplit(value)
    path = parts.path.rstrip("/")
    if not path.endswith("/v1"):
        path += "/v1"
    return f"{parts.scheme}://{parts.netloc}{path}"


def resolve_endpoint(
    provider: str,
    flag_base_url: str | None = None,
    config_value: str | None = None,
    env: Mapping[str, str] | None = None,
) -> str | None:
    """Base URL: --base-url, else the provider's env var, else config, else the public default."""
    info = _info(provider)
    environ = os.environ if env is None else env
    if flag_base_url:
        return _with_ollama_path(provider, _checked(flag_base_url, "--base-url"))
    if info.base_url_env and environ.get(info.base_url_env):
        if provider == "ollama":
            return _checked(_ollama_base(environ["OLLAMA_HOST"]), "OLLAMA_HOST")
        return _checked(environ[info.base_url_env], info.base_url_env)
    if config_value:
        return _with_ollama_path(provider, _checked(config_value, "the configured base_url"))
    return info.default_base_url


def _with_ollama_path(provider: str, url: str) -> str:
    """Ollama serves the OpenAI-compatible API under /v1: a bare host URL gets it appended."""
    if provider == "ollama" and urlsplit(url).path in ("", "/"):
        return url.rstrip("/") + "/v1"
    return url


def resolve_api_key(
    provider: str, env: Mapping[str, str] | None = None, config_value: str | None = None
) -> str | None:
    """The API key from the provider's env vars (first set wins), else the config value, else None."""
    info = _info(provider)
    environ = os.environ if env is None else env
    for name in info.key_envs:
        if environ.get(name):
            return environ[name]
    return config_value or None


def get_provider(
    name: str,
    *,
    model: str,
    base_url: str | None = None,
    api_key: str | None = None,
    timeout: float = DEFAULT_PROVIDER_TIMEOUT,
    max_retries: int = DEFAULT_MAX_RETRIES,
    env: Mapping[str, str] | None = None,
    **options: Any,
) -> Provider:
    """Construct the provider `name` for `model`.

    `base_url`/`api_key` default to `resolve_endpoint`/`resolve_api_key` over `env` (os.environ).
    A provider that needs a key and has none raises ProviderAuthError naming the variable to set.
    Extra `options` go to the adapter (e.g. max_tokens/thinking_budget for anthropic).
    """
    info = _info(name)
    module_name, _, class_name = info.target.partition(":")
    cls: Callable[..., Provider] = getattr(importlib.import_module(module_name), class_name)
    if info.wire == "scripted":
        return cls(model=model, **options)
    base = _with_ollama_path(name, base_url) if base_url else resolve_endpoint(name, env=env)
    key = api_key or resolve_api_key(name, env)
    if info.key_required and not key:
        raise ProviderAuthError(f"{name}: no API key; set {' or '.join(info.key_envs)}")
    kwargs: dict[str, Any] = {
        "model": model,
        "base_url": base,
        "api_key": key,
        "name": name,
        "timeout": timeout,
        "max_retries": max_retries,
        "key_hint": " or ".join(info.key_envs) or None,
    }
    if name == "openrouter":
        kwargs["extra_headers"] = {"X-Title": "tinyagent", **options.pop("extra_headers", {})}
    kwargs.update(options)
    return cls(**kwargs)
