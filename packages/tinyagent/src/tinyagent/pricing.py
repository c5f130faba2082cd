"""Model prices and the cost of one model call.

`cost_for(model, usage, provider=...)` returns USD, or None when the price is unknown (the caller
warns once and marks the run's cost as incomplete). Order of precedence:

1. the provider's own reported cost (`Usage.cost_usd`, e.g. OpenRouter `usage.cost`);
2. local providers are free (Ollama -> 0.0, never "unknown");
3. this table (or caller-supplied overrides), per million tokens, with separate cache-read and
   cache-write prices. Token classes are disjoint (see `tinyagent.types.Usage`), so
   cost = input*in + cache_read*read + cache_write*write + output*out.

Model names match exactly, after dropping a routing prefix (`anthropic/`, `openai/`), turning
OpenRouter-style dots into dashes for Claude ids (`claude-sonnet-4.5` -> `claude-sonnet-4-5`), and
allowing a date or `-latest` suffix (`claude-sonnet-4-5-20250929`, `gpt-4o-2024-08-06`). A longer
unknown name (e.g. `gpt-5-pro`) is unknown, never priced as its shorter cousin.

PRICES_AS_OF / PRICE_SOURCES document where the figures come from. They are list prices for the
standard tier (no batch discount, no long-context surcharge, 5-minute cache writes). They were
compiled for this table on the date below from the providers' pricing pages as mirrored in public
references; they were not fetched live by tinyagent. Re-check before relying on them for billing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from tinyagent.types import Usage

__all__ = ["FREE_PROVIDERS", "PRICES", "PRICES_AS_OF", "PRICE_SOURCES", "Price", "cost_for", "price_for"]

PRICES_AS_OF = "2026-11-30"
PRICE_SOURCES = (
    "https://platform.claude.com/docs/en/about-claude/pricing",
    "https://openai.com/api/pricing",
)
FREE_PROVIDERS = frozenset({"ollama"})


@dataclass(frozen=True)
class Price:
    """USD per million tokens."""

    input: float
    output: float
    cache_read: float
    cache_write: float


def _anthropic(input_price: float, output: float, cache_read: float | None = None) -> Price:
    # Anthropic: 5-minute cache writes cost 1.25x input; cache hits 0.1x unless stated.
    read = input_price * 0.1 if cache_read is None else cache_read
    return Price(input_price, output, round(read, 6), round(input_price * 1.25, 6))


def _openai(input_price: float, output: float, cache_read: float) -> Price:
    # OpenAI caching is automatic: no write surcharge, cache writes bill as input.
    return Price(input_price, output, cache_read, input_price)


PRICES: dict[str, Price] = {
    # Anthropic
    "claude-fable-5-1": _anthropic(10.0, 50.0, 0.25),
    "claude-fable-5": _anthropic(10.0, 50.0, 1.0),
    "claude-opus-5": _anthropic(5.0, 25.0),
    "claude-opus-4-8": _anthropic(5.0, 25.0),
    "claude-opus-4-7": _anthropic(5.0, 25.0),
    "claude-opus-4-6": _anthropic(5.0, 25.0),
    "claude-opus-4-5": _anthropic(5.0, 25.0),
    "claude-opus-4-1": _anthropic(15.0, 75.0),
    "claude-opus-4-0": _anthropic(15.0, 75.0),
    "claude-opus-4": _anthropic(15.0, 75.0),
    "claude-3-opus": _anthropic(15.0, 75.0),
    "claude-sonnet-5": _anthropic(2.0, 10.0),
    "claude-sonnet-4-6": _anthropic(3.0, 15.0),
    "claude-sonnet-4-5": _anthropic(3.0, 15.0),
    "claude-sonnet-4-0": _anthropic(3.0, 15.0),
    "claude-sonnet-4": _anthropic(3.0, 15.0),
    "claude-3-7-sonnet": _anthropic(3.0, 15.0),
    "claude-3-5-sonnet": _anthropic(3.0, 15.0),
    "claude-haiku-4-5": _anthropic(1.0, 5.0),
    "claude-3-5-haiku": _anthropic(0.8, 4.0),
    "claude-3-haiku": _anthropic(0.25, 1.25, 0.03),
    # OpenAI
    "gpt-5.5": _openai(5.0, 30.0, 0.5),
    "gpt-5.4": _openai(2.5, 15.0, 0.25),
    "gpt-5.4-mini": _openai(0.75, 4.5, 0.075),
    "gpt-5.4-nano": _openai(0.2, 1.25, 0.02),
    "gpt-5.1": _openai(1.25, 10.0, 0.125),
    "gpt-5.1-codex": _openai(1.25, 10.0, 0.125),
    "gpt-5": _openai(1.25, 10.0, 0.125),
    "gpt-5-codex": _openai(1.25, 10.0, 0.125),
    "gpt-5-mini": _openai(0.25, 2.0, 0.025),
    "gpt-5-nano": _openai(0.05, 0.4, 0.005),
    "gpt-4.1": _openai(2.0, 8.0, 0.5),
    "gpt-4.1-mini": _openai(0.4, 1.6, 0.1),
    "gpt-4.1-nano": _openai(0.1, 0.4, 0.025),
    "gpt-4o": _openai(2.5, 10.0, 1.25),
    "gpt-4o-mini": _openai(0.15, 0.6, 0.075),
    "o3": _openai(2.0, 8.0, 0.5),
    "o3-mini": _openai(1.1, 4.4, 0.55),
    "o4-mini": _openai(1.1, 4.4, 0.275),
    "codex-mini-latest": _openai(1.5, 6.0, 0.375),
}

_SUFFIX = re.compile(r"-(?:\d{4}-\d{2}-\d{2}|\d{8}|latest)$")
_PREFIX = re.compile(r"^(?:openai|anthropic|openrouter)/")


def _candidates(model: str) -> list[str]:
    name = _PREFIX.sub("", model.strip().lower())
    names = [name]
    if name.startswith("claude-"):
        names.append(name.replace(".", "-"))
    stripped = [_SUFFIX.sub("", n) for n in names]
    return list(dict.fromkeys(names + stripped))


def price_for(model: str, overrides: Mapping[str, Price] | None = None) -> Price | None:
    """The price of `model`, or None when it is not in the table (or the overrides)."""
    table = {**PRICES, **{k.lower(): v for k, v in (overrides or {}).items()}}
    for name in _candidates(model):
        if name in table:
            return table[name]
    return None


def cost_for(
    model: str,
    usage: Usage,
    *,
    provider: str | None = None,
    overrides: Mapping[str, Price] | None = None,
) -> float | None:
    """USD cost of one call: provider-reported cost, else free for local providers, else the table."""
    if usage.cost_usd is not None:
        return usage.cost_usd
    if provider in FREE_PROVIDERS:
        return 0.0
    price = price_for(model, overrides)
    if price is None:
        return None
    return (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_read_tokens * price.cache_read
        + usage.cache_write_tokens * price.cache_write
    ) / 1_000_000
