"""The tinyagent error family: every error tinyagent raises on purpose derives from `TinyAgentError`."""

from __future__ import annotations


class TinyAgentError(Exception):
    """Root of every error tinyagent raises deliberately (a bug surfaces as any other exception)."""

    def line(self) -> str:
        """The single stderr line the CLI prints for this error."""
        return f"tinyagent: error: {self}"


class UsageError(TinyAgentError):
    """A refusal before the run starts (bad flags, settings or input); the CLI exits with `EXIT_USAGE`."""
