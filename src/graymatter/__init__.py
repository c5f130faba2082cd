"""graymatter: persistent memory and checkpoints for AI agents.

>>> from graymatter import Memory
>>> with Memory("/tmp/store") as memory:
...     memory.remember("agent", "The deploy target is eu-west-1")
...     memory.recall("agent", "where do we deploy?")
"""

from .errors import (
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
from .memory import Memory
from .models import (
    SHARED_AGENT_ID,
    Checkpoint,
    Fact,
    Link,
    MemoryStats,
    Provenance,
    RecallExplanation,
    RecallHit,
    SignalWeights,
)

__version__ = "0.1.0"

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
]
