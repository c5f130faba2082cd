"""Process exit codes, default limits and size caps shared across tinyagent (stdlib only)."""

from __future__ import annotations

EXIT_OK = 0
"""The task was submitted and every save succeeded."""
EXIT_FAILURE = 1
"""Any other ending: a limit, an interruption, a provider or tool error, a failed save."""
EXIT_USAGE = 2
"""A usage or configuration error, or a refused --resume (nothing was run)."""

DEFAULT_STEP_LIMIT = 100
DEFAULT_COST_LIMIT = 0.0
DEFAULT_TIME_LIMIT = 0.0
DEFAULT_TOOL_TIMEOUT = 60.0
DEFAULT_OUTPUT_CAP = 20_000  # bytes of tool output shown to the model
DEFAULT_REQUEST_TIMEOUT = 600.0

MAX_CONFIG_BYTES = 256 * 1024
MAX_TRAJECTORY_BYTES = 64 * 1024 * 1024

DEFAULT_PROVIDER_TIMEOUT = 300.0
"""Seconds a provider connection may take to read, when its caller names no timeout."""
DEFAULT_MAX_RETRIES = 3
"""Extra attempts after a failed provider request (3 -> 4 attempts), when its caller names no count."""
