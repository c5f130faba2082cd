"""The price table and cost_for: provider cost wins, Ollama free, exact names with date suffixes."""

from __future__ import annotations

import pytest

from tinyagent.pricing import PRICES, PRICES_AS_OF, Price, cost_for, price_for
from tinyagent.types import Usage

USAGE = Usage(
    input_tokens=1_000_000, output_tokens=1_000_000, cache_read_tokens=1_000_000, cache_write_tokens=1_000_000
)


def test_cost_adds_every_token_class_at_its_own_price():
    usage = Usage(input_tokens=1000, output_tokens=200, cache_read_tokens=5000, cache_write_tokens=300)
    # claude-sonnet-4-5: $3 in, $15 out, $0.30 cache read, $3.75 cache write per million
    expected = (1000 * 3 + 200 * 15 + 5000 * 0.3 + 300 * 3.75) / 1_000_000
    assert cost_for("claude-sonnet-4-5", usage) == pytest.approx(expected)


def test_openai_cached_tokens_are_discounted():
    usage = Usage(input_tokens=0, cache_read_tokens=1_000_000)
    assert cost_for("gpt-4.1", usage) == pytest.approx(0.5)
    assert cost_for("gpt-4.1", Usage(input_tokens=1_000_000)) == pytest.approx(2.0)


def test_provider_reported_cost_wins():
    assert cost_for("claude-sonnet-4-5", USAGE.model_copy(update={"cost_usd": 0.0123})) == 0.0123
    assert cost_for("unknown-model", Usage(cost_usd=0.5), provider="openrouter") == 0.5
    assert cost_for("anything", Usage(cost_usd=0.0)) == 0.0


def test_ollama_is_free_not_unknown():
    assert cost_for("llama3.2:latest", USAGE, provider="ollama") == 0.0


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
        ("anthropic/claude-sonnet-4.5", "claude-sonnet-4-5"),
        ("claude-3-5-haiku-latest", "claude-3-5-haiku"),
        ("gpt-4o-2024-08-06", "gpt-4o"),
        ("openai/gpt-4o-mini", "gpt-4o-mini"),
        ("GPT-5", "gpt-5"),
        ("claude-opus-4-1-20250805", "claude-opus-4-1"),
    ],
)
def test_name_normalisation(name, key):
    assert price_for(name) == PRICES[key]


@pytest.mark.parametrize(
    "name", ["gpt-5-pro", "gpt-4o-mini-tts", "claude-sonnet-4-5-turbo", "test-model", "", "o3-pro"]
)
def test_unknown_or_longer_cousin_names_are_unknown(name):
    assert price_for(name) is None
    assert cost_for(name, USAGE) is None


def test_overrides_price_unknown_models():
    overrides = {"My-Local-Model": Price(input=1.0, output=2.0, cache_read=0.1, cache_write=1.0)}
    assert (
        cost_for("my-local-model", Usage(input_tokens=500_000, output_tokens=250_000), overrides=overrides)
        == 1.0
    )


def test_table_is_sane():
    assert PRICES_AS_OF
    for name, price in PRICES.items():
        assert name == name.lower()
        assert price.input > 0 and price.output >= price.input
        assert 0 < price.cache_read < price.input
        assert price.cache_write >= price.input
