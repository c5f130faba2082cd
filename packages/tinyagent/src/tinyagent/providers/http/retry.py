"""How hard the HTTP client tries: the retry policy, server-requested delays, stream progress."""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass

from tinyagent.defaults import DEFAULT_MAX_RETRIES
from tinyagent.providers.base import ProviderError

__all__ = ["RetryPolicy", "StreamProgress", "attempts_note", "parse_retry_after"]


@dataclass(frozen=True)
class RetryPolicy:
    """How hard to try. `max_retries` extra attempts after the first (default 3 -> 4 attempts)."""

    max_retries: int = DEFAULT_MAX_RETRIES
    base_delay: float = 0.5
    max_delay: float = 8.0
    max_total_wait: float = 60.0
    retry_after_cap: float = 30.0

    def backoff(self, retry_number: int, rng: random.Random) -> float:
        """Exponential backoff with jitter for the n-th retry (1-based): uniform in [c/2, c]."""
        ceiling = min(self.max_delay, self.base_delay * (2 ** (retry_number - 1)))
        return rng.uniform(ceiling / 2, ceiling)


@dataclass
class StreamProgress:
    """Set `handed_out` once any streamed data reached the caller; no retry after that."""

    handed_out: bool = False


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Seconds to wait from `retry-after-ms`, or `Retry-After` as seconds or an HTTP date."""
    lowered = {k.lower(): v for k, v in headers.items()}
    ms = lowered.get("retry-after-ms")
    if ms is not None:
        try:
            value = float(ms) / 1000.0
            if value >= 0 and value == value:
                return value
        except ValueError:
            pass
    raw = lowered.get("retry-after")
    if raw is None:
        return None
    raw = raw.strip()
    try:
        value = float(raw)
    except ValueError:
        try:
            parsed = email.utils.parsedate_to_datetime(raw)  # raises on an invalid date (3.10+)
        except (TypeError, ValueError, IndexError):
            return None
        current = time.time() if now is None else now
        return max(0.0, parsed.timestamp() - current)
    if value != value or value < 0 or value == float("inf"):
        return None
    return value


def attempts_note(error: ProviderError, retries: int) -> ProviderError:
    """`error` with its message saying how many retries preceded it (unchanged when none did)."""
    if retries:
        error.args = (f"{error.args[0]} (after {retries} retr{'y' if retries == 1 else 'ies'})",)
    return error
