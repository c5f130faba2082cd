"""`ResumeRefused`, the one error of every resume check, and the helpers that phrase its advice."""

from __future__ import annotations

from typing import NoReturn

from tinyagent.errors import UsageError


class ResumeRefused(UsageError):
    """The checkpoint or the invocation is not eligible for resume.

    `category` names the failed check (stable, documented in docs/resume.md); `advice` says what to
    do. Neither ever contains transcript content.
    """

    def __init__(self, category: str, advice: str) -> None:
        super().__init__(f"{category}: {advice}")
        self.category = category
        self.advice = advice

    def line(self) -> str:
        """The single stderr line printed for this refusal (control characters shown as '?')."""
        text = f"tinyagent: cannot resume: {self.category}: {self.advice}"
        return "".join("?" if (ord(char) < 32 or ord(char) == 127) else char for char in text)


def refuse(category: str, advice: str) -> NoReturn:
    """Raise `ResumeRefused(category, advice)`."""
    raise ResumeRefused(category, advice)


def shown(value: str, limit: int = 200) -> str:
    """A value read from the checkpoint, shortened for a diagnostic line."""
    return value if len(value) <= limit else value[: limit - 3] + "..."


def os_reason(exc: OSError) -> str:
    """The short reason of an OS error (its strerror, else its class name)."""
    return exc.strerror or type(exc).__name__
