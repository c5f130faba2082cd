"""A step's accounting: its tokens and cost added to the run's totals, and the pricing rule."""

from __future__ import annotations

from collections.abc import Callable

from tinyagent.output import Reporter
from tinyagent.trajectory.models import Trajectory
from tinyagent.types import Usage

__all__ = ["PriceFn", "account", "default_price"]

PriceFn = Callable[[str, Usage], "float | None"]


def default_price(provider_name: str) -> PriceFn:
    """Price a step: the provider's own reported cost wins; Ollama is free; else the pricing table."""

    def price(model: str, usage: Usage) -> float | None:
        if usage.cost_usd is not None:
            return usage.cost_usd
        from tinyagent.pricing import cost_for

        return cost_for(model, usage, provider=provider_name)

    return price


def account(traj: Trajectory, usage: Usage, price: PriceFn, reporter: Reporter) -> None:
    """Add one model call's tokens and cost to `traj.totals` (an unknown price is warned about once)."""
    totals = traj.totals
    totals.input_tokens += usage.input_tokens
    totals.output_tokens += usage.output_tokens
    totals.cache_read_tokens += usage.cache_read_tokens
    totals.cache_write_tokens += usage.cache_write_tokens
    try:
        cost = price(traj.model, usage)
    except Exception:
        cost = None
    if cost is None:
        totals.cost_known = False
        message = f"unknown price for model {traj.model!r}: its cost is not counted"
        if message not in traj.warnings:
            traj.warnings.append(message)
        reporter.warning(message, once_key="price")
        if traj.limits.cost_limit > 0:
            reporter.warning("the cost limit only counts steps with a known price", once_key="price-limit")
    else:
        totals.cost_usd += cost
