"""Provider registry: names, endpoint and key resolution precedence, lazy imports."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tinyagent.providers import (
    InvalidEndpointError,
    UnknownProviderError,
    get_provider,
    provider_names,
    resolve_api_key,
    resolve_endpoint,
)
from tinyagent.providers.anthropic import AnthropicProvider
from tinyagent.providers.base import ProviderAuthError
from tinyagent.providers.openai_chat import OpenAIChatProvider
from tinyagent.providers.responses import ResponsesProvider
from tinyagent.types import Message

DEFAULTS = {
    "openai": "https://api.openai.com/v1",
    "openrouter": "https://openrouter.ai/api/v1",
    "ollama": "http://localhost:11434/v1",
    "anthropic": "https://api.anthropic.com",
    "codex": "https://api.openai.com/v1",
}
ENV_VARS = {
    "openai": "OPENAI_BASE_URL",
    "openrouter": "OPENROUTER_BASE_URL",
    "anthropic": "ANTHROPIC_BASE_URL",
    "codex": "OPENAI_BASE_URL",
}


def test_names():
    assert provider_names() == ["openai", "openrouter", "ollama", "anthropic", "codex", "scripted"]


def test_unknown_provider_lists_valid_ones():
    with pytest.raises(UnknownProviderError) as info:
        get_provider("gemini", model="m")
    message = str(info.value)
    assert "'gemini'" in message
    for name in provider_names():
        assert name in message
    with pytest.raises(UnknownProviderError):
        resolve_endpoint("nope")


@pytest.mark.parametrize("name", list(DEFAULTS))
def test_public_default_when_nothing_is_set(name):
    assert resolve_endpoint(name, None, None, env={}) == DEFAULTS[name]


@pytest.mark.parametrize("name", list(ENV_VARS))
def test_precedence_flag_then_env_then_config_then_default(name):
    env = {ENV_VARS[name]: "http://env.example:1/v1/"}
    assert (
        resolve_endpoint(name, "http://flag.example/v1", "http://cfg.example/v1", env=env)
        == "http://flag.example/v1"
    )
    assert resolve_endpoint(name, None, "http://cfg.example/v1", env=env) == "http://env.example:1/v1"
    assert resolve_endpoint(name, None, "http://cfg.example/v1", env={}) == "http://cfg.example/v1"


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("localhost", "http://localhost:11434/v1"),
        ("0.0.0.0:8080", "http://0.0.0.0:8080/v1"),
        ("http://gpu-box:11434", "http://gpu-box:11434/v1"),
        ("https://ollama.example.com/", "https://ollama.example.com/v1"),
        ("http://127.0.0.1:9/v1", "http://127.0.0.1:9/v1"),
        ("[::1]", "http://[::1]:11434/v1"),
    ],
)
def test_ollama_host_forms(host, expected):
    assert resolve_endpoint("ollama", None, "http://cfg:1/v1", env={"OLLAMA_HOST": host}) == expected


def test_ollama_bare_host_flag_or_config_gets_v1():
    assert resolve_endpoint("ollama", "http://127.0.0.1:5", None, env={}) == "http://127.0.0.1:5/v1"
    assert resolve_endpoint("ollama", None, "http://box:7/", env={}) == "http://box:7/v1"
    assert resolve_endpoint("ollama", None, "http://box:7/proxy/v1", env={}) == "http://box:7/proxy/v1"


@pytest.mark.parametrize(
    ("flag", "env"),
    [
        ("ftp://x/v1", {}),
        ("not a url", {}),
        ("http://host:notaport/v1", {}),
        (None, {"OPENAI_BASE_URL": "api.openai.com/v1"}),
    ],
)
def test_invalid_endpoints_are_rejected_with_their_source(flag, env):
    with pytest.raises(InvalidEndpointError) as info:
        resolve_endpoint("openai", flag, None, env=env)
    assert ("--base-url" if flag else "OPENAI_BASE_URL") in str(info.value)


def test_api_keys():
    env = {"OPENAI_API_KEY": "o", "OPENROUTER_API_KEY": "r", "ANTHROPIC_API_KEY": "a", "CODEX_API_KEY": "c"}
    assert resolve_api_key("openai", env) == "o"
    assert resolve_api_key("openrouter", env) == "r"
    assert resolve_api_key("anthropic", env) == "a"
    assert resolve_api_key("codex", env) == "o"
    assert resolve_api_key("codex", {"CODEX_API_KEY": "c"}) == "c"
    assert resolve_api_key("ollama", {}) is None
    assert resolve_api_key("openai", {}, config_value="from-config") == "from-config"
    assert resolve_api_key("openai", {"OPENAI_API_KEY": ""}) is None


@pytest.mark.parametrize(
    ("name", "variable"), [("openai", "OPENAI_API_KEY"), ("anthropic", "ANTHROPIC_API_KEY")]
)
def test_missing_key_is_a_clear_auth_error(name, variable):
    with pytest.raises(ProviderAuthError, match=variable):
        get_provider(name, model="m", env={})


@pytest.mark.parametrize(
    ("name", "cls"),
    [
        ("openai", OpenAIChatProvider),
        ("openrouter", OpenAIChatProvider),
        ("ollama", OpenAIChatProvider),
        ("anthropic", AnthropicProvider),
        ("codex", ResponsesProvider),
    ],
)
def test_get_provider_builds_the_right_adapter(name, cls):
    provider = get_provider(
        name,
        model="some-model",
        env={"OPENAI_API_KEY": "k", "OPENROUTER_API_KEY": "k", "ANTHROPIC_API_KEY": "k"},
    )
    try:
        assert isinstance(provider, cls)
        assert provider.name == name
        assert provider.model == "some-model"
        assert provider.url.startswith(DEFAULTS[name])
    finally:
        provider.close()


def test_importing_the_registry_does_not_import_httpx_or_adapters():
    code = (
        "import sys, tinyagent.providers, tinyagent.pricing; "
        "heavy = ('httpx', 'tinyagent.providers.http.client', 'tinyagent.providers.anthropic'); "
        "bad = [m for m in heavy if m in sys.modules]; "
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_https_endpoints_verify_certificates_and_plain_http_skips_tls_setup(stub):
    import ssl

    secure = get_provider("openai", model="m", env={"OPENAI_API_KEY": "k"})
    local = get_provider("openai", model="m", base_url=stub.base_url("openai"), api_key="k")
    try:
        context = secure._http.tls_context()
        assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
        stub.add({"text": "ok"})
        assert local.complete([Message(role="user", content="hi")], [], stream=False).message.content == "ok"
        assert local._http._tls is None  # a plain http:// endpoint never builds a TLS context
    finally:
        secure.close()
        local.close()
