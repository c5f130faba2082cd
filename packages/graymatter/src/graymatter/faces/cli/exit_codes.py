"""The CLI's process exit codes and the one table that maps the error family to them."""

from __future__ import annotations

from typing import Final

from graymatter.errors import CliUsageError, Conflict, InvalidInput, NotFound, for_error

EXIT_OK: Final = 0
EXIT_FAILURE: Final = 1  # storage or provider failure, or a bug
EXIT_USAGE: Final = 2  # invalid input or usage
EXIT_NOT_FOUND: Final = 3  # including "no checkpoint"
EXIT_CONFLICT: Final = 4  # a concurrent writer changed the target first; nothing was changed
EXIT_INTERRUPTED: Final = 130

EXIT_CODES: Final[dict[type[BaseException], int]] = {
    CliUsageError: EXIT_USAGE,
    InvalidInput: EXIT_USAGE,
    NotFound: EXIT_NOT_FOUND,
    Conflict: EXIT_CONFLICT,
}
"""Error class -> exit code; an error takes the entry of its nearest listed class, else ``EXIT_FAILURE``."""


def exit_code(exc: BaseException) -> int:
    """The exit code for a command that failed with ``exc``."""
    return for_error(EXIT_CODES, exc, EXIT_FAILURE)
