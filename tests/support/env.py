"""The one hermetic environment for the subprocesses the tests start (graymatter and tinyagent alike)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

_PRODUCT_PREFIXES = ("GRAYMATTER_", "TINYAGENT_")
_PROVIDER_SUFFIXES = ("_API_KEY", "_BASE_URL")
_PROVIDER_VARIABLES = ("OLLAMA_HOST",)


def _is_scrubbed(name: str) -> bool:
    return (
        name.startswith(_PRODUCT_PREFIXES) or name.endswith(_PROVIDER_SUFFIXES) or name in _PROVIDER_VARIABLES
    )


def hermetic_env(
    state_root: Path | None = None, extra: Mapping[str, str] | None = None, **variables: str
) -> dict[str, str]:
    """The current environment without product settings, provider keys or endpoints, unbuffered.

    With ``state_root`` the XDG config and state directories point inside it (no user config is read);
    ``extra`` and then ``variables`` are added last.
    """
    env = {name: value for name, value in os.environ.items() if not _is_scrubbed(name)}
    if state_root is not None:
        env["XDG_CONFIG_HOME"] = str(state_root / "xdg-config")
        env["XDG_STATE_HOME"] = str(state_root / "xdg-state")
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra or {})
    env.update(variables)
    return env
