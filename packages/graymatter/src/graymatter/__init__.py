"""graymatter: persistent memory and checkpoints for AI agents.

>>> from graymatter import Memory
>>> with Memory("/tmp/store") as memory:
...     fact = memory.remember("agent", "The deploy target is eu-west-1")
...     hits = memory.recall("agent", "where do we deploy?")

Public names are loaded lazily so that ``graymatter`` command-line start-up stays fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.2.0"

_EXPORTS = {
    "Memory": "graymatter.engine.memory",
    "MemoryConfig": "graymatter.config",
    "open_store": "graymatter.store",
    "SHARED_AGENT_ID": "graymatter.constants",
    "Checkpoint": "graymatter.models",
    "Fact": "graymatter.models",
    "Link": "graymatter.models",
    "MemoryStats": "graymatter.models",
    "Provenance": "graymatter.models",
    "RecallExplanation": "graymatter.models",
    "RecallHit": "graymatter.models",
    "SignalWeights": "graymatter.models",
    "CorruptDatabase": "graymatter.errors",
    "CorruptRecord": "graymatter.errors",
    "GraymatterError": "graymatter.errors",
    "InvalidInput": "graymatter.errors",
    "NoCheckpoint": "graymatter.errors",
    "NotFound": "graymatter.errors",
    "SchemaTooNew": "graymatter.errors",
    "StorageError": "graymatter.errors",
    "StoreUnavailable": "graymatter.errors",
}

__all__ = [
    "SHARED_AGENT_ID",
    "Checkpoint",
    "CorruptDatabase",
    "CorruptRecord",
    "Fact",
    "GraymatterError",
    "InvalidInput",
    "Link",
    "Memory",
    "MemoryConfig",
    "MemoryStats",
    "NoCheckpoint",
    "NotFound",
    "Provenance",
    "RecallExplanation",
    "RecallHit",
    "SchemaTooNew",
    "SignalWeights",
    "StorageError",
    "StoreUnavailable",
    "open_store",
]

if TYPE_CHECKING:
    from graymatter.config import MemoryConfig
    from graymatter.constants import SHARED_AGENT_ID
    from graymatter.engine.memory import Memory
    from graymatter.errors import (
        CorruptDatabase,
        CorruptRecord,
        GraymatterError,
        InvalidInput,
        NoCheckpoint,
        NotFound,
        SchemaTooNew,
        StorageError,
        StoreUnavailable,
    )
    from graymatter.models import (
        Checkpoint,
        Fact,
        Link,
        MemoryStats,
        Provenance,
        RecallExplanation,
        RecallHit,
        SignalWeights,
    )
    from graymatter.store import open_store


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'graymatter' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
