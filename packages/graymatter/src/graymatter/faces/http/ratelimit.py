"""Per-caller rate limiting for the HTTP service: token buckets keyed by token id or client address."""

from __future__ import annotations

import threading
import time


class RateLimiter:
    """Token buckets per caller identity: ``rate`` requests per second, bursts up to ``burst``."""

    def __init__(self, rate: float, burst: int) -> None:
        self.rate = rate
        self.burst = max(1, burst)
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def take(self, key: str) -> float:
        """0 when allowed, else the seconds to wait before the next request can pass."""
        if self.rate <= 0:
            return 0.0
        now = time.monotonic()
        with self._lock:
            tokens, last = self._buckets.get(key, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - last) * self.rate)
            if tokens >= 1.0:
                self._buckets[key] = (tokens - 1.0, now)
                if len(self._buckets) > 10_000:  # forget idle callers
                    self._buckets = {k: v for k, v in self._buckets.items() if now - v[1] < 60}
                return 0.0
            self._buckets[key] = (tokens, now)
            return (1.0 - tokens) / self.rate
