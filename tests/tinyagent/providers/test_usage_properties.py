"""Usage normalisation never raises on odd provider values and keeps token classes disjoint."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tinyagent.providers.anthropic import anthropic_usage
from tinyagent.providers.openai_chat import chat_usage
from tinyagent.providers.responses import responses_usage

odd = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-10, 10**9),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=5),
    st.lists(st.integers(), max_size=2),
)
counts = st.integers(min_value=0, max_value=10**8)


@given(st.dictionaries(st.sampled_from(["prompt_tokens", "completion_tokens", "cost", "x"]), odd), odd)
def test_chat_usage_tolerates_anything(raw, cached):
    raw = dict(raw, prompt_tokens_details={"cached_tokens": cached, "cache_write_tokens": cached})
    usage = chat_usage(raw)
    assert (
        min(usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens) >= 0
    )


@given(fresh=counts, read=counts, write=counts, out=counts)
def test_total_prompt_is_preserved_for_every_wire(fresh, read, write, out):
    chat = chat_usage(
        {
            "prompt_tokens": fresh + read + write,
            "completion_tokens": out,
            "prompt_tokens_details": {"cached_tokens": read, "cache_write_tokens": write},
        }
    )
    anthropic = anthropic_usage(
        {
            "input_tokens": fresh,
            "output_tokens": out,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": write,
        }
    )
    responses = responses_usage(
        {"input_tokens": fresh + read, "input_tokens_details": {"cached_tokens": read}, "output_tokens": out}
    )
    for usage, written in ((chat, write), (anthropic, write), (responses, 0)):
        assert (usage.input_tokens, usage.cache_read_tokens, usage.cache_write_tokens) == (
            fresh,
            read,
            written,
        )
        assert usage.output_tokens == out


@given(st.dictionaries(st.text(max_size=30), odd))
def test_anthropic_and_responses_usage_tolerate_anything(raw):
    for usage in (anthropic_usage(raw), responses_usage(raw)):
        assert usage.input_tokens >= 0 and usage.output_tokens >= 0


def test_costs_must_be_finite_and_non_negative():
    assert chat_usage({"cost": float("nan")}).cost_usd is None
    assert chat_usage({"cost": float("inf")}).cost_usd is None
    assert chat_usage({"cost": -1}).cost_usd is None
    assert chat_usage({"cost": True}).cost_usd is None
    assert chat_usage({"cost": 0}).cost_usd == 0.0
    assert chat_usage({"cost": 0.25}).cost_usd == 0.25


@given(odd)
def test_reported_cost_is_none_or_a_sane_number(value):
    cost = chat_usage({"cost": value}).cost_usd
    assert cost is None or (cost >= 0 and cost == cost and cost != float("inf"))
