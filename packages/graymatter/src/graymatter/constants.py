"""The shared vocabulary of graymatter (namespaces, confidence labels), standard library only."""

from __future__ import annotations

from typing import Final, Literal, get_args

SHARED_AGENT_ID: Final = "__shared__"
"""The project-wide namespace."""

SUPERSEDED_BY_AGENT: Final = "agent"
"""``superseded_by`` value of a fact retired without a replacement (forget)."""

Confidence = Literal["verified", "inferred", "unverified"]
"""How sure the writer is of a fact."""

CONFIDENCE_LABELS: Final[tuple[Confidence, ...]] = get_args(Confidence)
"""Every confidence label, highest first."""

CONFIDENCE_LEVELS: Final[dict[str, int]] = {"unverified": -1, "inferred": 0, "verified": 1}
"""Numeric value ``c`` of each label, used by the confidence factor ``1 + w·c`` and by filters."""

DEFAULT_DATA_DIR: Final = ".graymatter"
"""The embedded store's directory when neither ``--dir`` nor ``$GRAYMATTER_DIR`` is given."""

DATA_DIR_ENV: Final = "GRAYMATTER_DIR"
"""The environment variable naming the embedded store's directory."""

DEFAULT_RELATION: Final = "agent_link"
"""The relation of a link when the caller names none."""
