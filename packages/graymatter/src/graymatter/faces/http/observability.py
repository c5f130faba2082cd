"""What the HTTP service tells operators: Prometheus metrics, the JSON access log, structured JSON logging."""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
import uuid
from datetime import UTC, datetime

from graymatter.engine.access import Principal
from graymatter.faces.http.asgi import Scope

log = logging.getLogger("graymatter.rest")

_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class Metrics:
    """A tiny thread-safe Prometheus registry (labels come from fixed sets: routes, methods, statuses)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests: dict[tuple[str, str, str], int] = {}
        self.durations: dict[str, list[int]] = {}
        self.duration_sum: dict[str, float] = {}
        self.in_flight = 0
        self.rate_limited = 0
        self.started = time.time()

    def observe(self, route: str, method: str, status: int, seconds: float) -> None:
        """Count one finished request and its latency."""
        with self._lock:
            key = (route, method, str(status))
            self.requests[key] = self.requests.get(key, 0) + 1
            buckets = self.durations.setdefault(route, [0] * (len(_BUCKETS) + 1))
            for i, bound in enumerate(_BUCKETS):
                if seconds <= bound:
                    buckets[i] += 1
            buckets[-1] += 1
            self.duration_sum[route] = self.duration_sum.get(route, 0.0) + seconds

    def render(self) -> str:
        """The text exposition format 0.0.4."""
        with self._lock:
            lines = self._request_lines() + self._duration_lines() + self._gauge_lines()
        return "\n".join(lines) + "\n"

    def _request_lines(self) -> list[str]:
        lines = [
            "# HELP graymatter_http_requests_total HTTP requests by route, method and status.",
            "# TYPE graymatter_http_requests_total counter",
        ]
        for (route, method, status), count in sorted(self.requests.items()):
            lines.append(
                f'graymatter_http_requests_total{{route="{route}",method="{method}",status="{status}"}}'
                f" {count}"
            )
        return lines

    def _duration_lines(self) -> list[str]:
        lines = [
            "# HELP graymatter_http_request_duration_seconds Request latency by route.",
            "# TYPE graymatter_http_request_duration_seconds histogram",
        ]
        for route, buckets in sorted(self.durations.items()):
            for bound, count in zip(_BUCKETS, buckets, strict=False):
                lines.append(
                    f'graymatter_http_request_duration_seconds_bucket{{route="{route}",le="{bound}"}} {count}'
                )
            lines.append(
                f'graymatter_http_request_duration_seconds_bucket{{route="{route}",le="+Inf"}} {buckets[-1]}'
            )
            lines.append(
                f'graymatter_http_request_duration_seconds_sum{{route="{route}"}}'
                f" {self.duration_sum[route]:.6f}"
            )
            lines.append(f'graymatter_http_request_duration_seconds_count{{route="{route}"}} {buckets[-1]}')
        return lines

    def _gauge_lines(self) -> list[str]:
        return [
            "# HELP graymatter_http_requests_in_flight Requests being served now.",
            "# TYPE graymatter_http_requests_in_flight gauge",
            f"graymatter_http_requests_in_flight {self.in_flight}",
            "# HELP graymatter_rate_limited_total Requests refused with 429.",
            "# TYPE graymatter_rate_limited_total counter",
            f"graymatter_rate_limited_total {self.rate_limited}",
            "# HELP graymatter_process_start_time_seconds Start time of this server process.",
            "# TYPE graymatter_process_start_time_seconds gauge",
            f"graymatter_process_start_time_seconds {self.started:.3f}",
        ]


def access_log(scope: Scope, route: str, status: int, seconds: float, principal: Principal | None) -> None:
    """One JSON line per request on ``graymatter.rest`` (never bodies or tokens)."""
    if not log.isEnabledFor(logging.INFO):
        return
    record = {
        "ts": datetime.now(UTC).isoformat(timespec="milliseconds"),
        "level": "info",
        "event": "http_request",
        "request_id": uuid.uuid4().hex[:16],
        "method": scope.get("method"),
        "route": route,
        "status": status,
        "duration_ms": round(seconds * 1000, 3),
        "token_id": principal.token_id if principal is not None else None,
        "client": (scope.get("client") or ("-",))[0],
    }
    log.info(json.dumps(record, separators=(",", ":")))


class JsonLogFormatter(logging.Formatter):
    """One JSON object per line; request records are already JSON and pass through unchanged."""

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        if message.startswith("{") and record.name == "graymatter.rest" and record.levelno == logging.INFO:
            return message
        payload = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": message.splitlines()[0] if message else "",
        }
        if record.exc_info and record.exc_info[0] is not None:
            payload["exception"] = record.exc_info[0].__name__
        return json.dumps(payload, separators=(",", ":"))


def configure_logging(level: int = logging.INFO) -> None:
    """Structured JSON logs on stderr for the service (idempotent)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonLogFormatter())
    for name in ("graymatter", "uvicorn.error"):
        logger = logging.getLogger(name)
        logger.handlers = [handler]
        logger.setLevel(level)
        logger.propagate = False
    root = logging.getLogger()  # everything else (the MCP SDK, starlette): JSON too, warnings and up
    root.handlers = [handler]  # set before the SDK's basicConfig, which then leaves it alone
    root.setLevel(logging.WARNING)
    logging.getLogger("uvicorn.access").disabled = True
