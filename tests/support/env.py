"""Hermetic environments for the subprocesses the tests start."""

from __future__ import annotations

import os

_PROVIDER_VARS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "VOYAGE_API_KEY")


def hermetic_env(**extra: str) -> dict[str, str]:
    """The current environment without graymatter settings or provider keys, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAYMATTER_") and k not in _PROVIDER_VARS}
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env
